/* SPDX-License-Identifier: Apache-2.0
 * Parses the Pyroscope `name` query value into application, type suffix and labels. */
#include "pyroscope/pyro_name.h"

enum pg_err pg_pyro_name_parse(struct pg_arena *a, const char *s, size_t len,
                               struct pg_pyro_name *out, struct pg_status *st)
{
    (void)a, (void)s, (void)len, (void)out;
    return pg_status_set(st, PG_ERR_INTERNAL, "pyroscope name parser not built yet");
}

bool pg_pyro_name_is_type_suffix(const char *suffix)
{
    (void)suffix;
    return false;
}

bool pg_pyro_label_name_valid(const char *s, size_t n)
{
    (void)s, (void)n;
    return false;
}
