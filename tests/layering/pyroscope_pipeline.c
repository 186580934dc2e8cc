/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_pyroscope's include path only: the Pyroscope parsers know nothing of
 * batches or the service graph, so this include must fail (the layering test expects it). */
#include "pipeline/batch.h"

int pg_layer_probe_pyroscope_pipeline(void);

int pg_layer_probe_pyroscope_pipeline(void)
{
    return 0;
}
