/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_core's include path only: the spool and the storage
 * registry are a room above core, so this include must fail (the layering
 * test expects the error). */
#include "storage/spool.h"

int pg_layer_probe(void);

int pg_layer_probe(void)
{
    return 0;
}
