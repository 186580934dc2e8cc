/* SPDX-License-Identifier: Apache-2.0
 * The pprof decoder's error messages (malformed bytes, wire types, limits,
 * string indexes), shared by the profile and the sample decoding; out of
 * line: only a refused profile reaches them. */
#include "pprof/pprof_decode_internal.h"

enum pg_err pg_pprof_err_bad(struct pg_status *st, const char *what, const struct pg_pprof *p,
                             const uint8_t *at)
{
    return pg_status_set(st, PG_ERR_MALFORMED, "pprof: malformed %s at byte %zu", what,
                         (size_t)(at - p->buf));
}

enum pg_err pg_pprof_err_wrong_wt(struct pg_status *st, const char *msg, const char *field,
                                  uint32_t wt)
{
    return pg_status_set(st, PG_ERR_MALFORMED,
                         "pprof: field %s.%s has wire type %u, which does not match its type", msg,
                         field, wt);
}

enum pg_err pg_pprof_err_over(struct pg_status *st, const char *what, size_t have,
                              const char *limit, size_t max)
{
    return pg_status_set(st, PG_ERR_LIMIT, "pprof: %zu %s exceed the limit %s (%zu)", have, what,
                         limit, max);
}

enum pg_err pg_pprof_err_bad_str(struct pg_status *st, const struct pg_pprof *p,
                                 const char *where, int64_t idx)
{
    return pg_status_set(st, PG_ERR_MALFORMED,
                         "pprof: %s: string index %lld out of range (string_table has %zu "
                         "entries)",
                         where, (long long)idx, p->n_strings);
}
