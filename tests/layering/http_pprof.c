/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_http's include path only: the HTTP layer decodes
 * Content-Encoding through the codec layer and does not sit on the pprof
 * translator, so this include must fail (the layering test expects it). */
#include "pprof/translate.h"

int pg_layer_probe_http(void);

int pg_layer_probe_http(void)
{
    return 0;
}
