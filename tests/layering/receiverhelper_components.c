/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_receiverhelper's include path only: the receivers'
 * shared helpers sit below the components and cannot reach a receiver, so
 * this include must fail (the layering test expects the error). */
#include "receiver/pprof_internal.h"

int pg_layer_probe_receiverhelper_components(void);

int pg_layer_probe_receiverhelper_components(void)
{
    return 0;
}
