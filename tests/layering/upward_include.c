/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_core's include path only: core sits below the OTLP
 * model, so this include must fail (the layering test expects the error). */
#include "otlp/otlp.h"

int pg_layer_probe(void);

int pg_layer_probe(void)
{
    return 0;
}
