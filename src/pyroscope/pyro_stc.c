/* SPDX-License-Identifier: Apache-2.0
 * Parses the sample_type_config JSON part. */
#include "pyroscope/pyro_stc.h"

enum pg_err pg_pyro_stc_parse(struct pg_arena *a, const uint8_t *json, size_t len,
                              struct pg_pyro_stc_entry **out, size_t *n, struct pg_status *st)
{
    (void)a, (void)json, (void)len, (void)out, (void)n;
    return pg_status_set(st, PG_ERR_INTERNAL, "sample_type_config parser not built yet");
}
