/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_pyroscope's include path only: the Pyroscope parsers sit below the
 * receiver that calls them, so this include must fail (the layering test expects it). */
#include "receiver/pprof_internal.h"

int pg_layer_probe_pyroscope_receiver(void);

int pg_layer_probe_pyroscope_receiver(void)
{
    return 0;
}
