/* SPDX-License-Identifier: Apache-2.0
 * What the pprof decoder's files share (private to pprof_decode.c,
 * pprof_samples.c, pprof_error.c): the error messages and the static inline
 * field readers of the hot paths. Calls go pprof_decode.c, pprof_samples.c
 * -> pprof_error.c. */
#ifndef PG_PPROF_PPROF_DECODE_INTERNAL_H
#define PG_PPROF_PPROF_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/err.h"
#include "core/pb_wire.h"
#include "pprof/pprof_decode.h"

/* ---- pprof_error.c ---- */
enum pg_err pg_pprof_err_bad(struct pg_status *st, const char *what, const struct pg_pprof *p,
                             const uint8_t *at);
enum pg_err pg_pprof_err_wrong_wt(struct pg_status *st, const char *msg, const char *field,
                                  uint32_t wt);
enum pg_err pg_pprof_err_over(struct pg_status *st, const char *what, size_t have,
                              const char *limit, size_t max);
enum pg_err pg_pprof_err_bad_str(struct pg_status *st, const struct pg_pprof *p,
                                 const char *where, int64_t idx);

/* ---- inline readers ---- */

static inline bool str_ok(const struct pg_pprof *p, int64_t idx)
{
    return idx >= 0 && (uint64_t)idx < p->n_strings;
}

/* Reads a message whose known fields 1..@n are all varints into v[1..n]
 * (zeroed first; the last occurrence wins; unknown fields are skipped).
 * @what names the message in "malformed" errors, @msg and @names in
 * wire-type errors. Inlined into each caller: with @n constant the zeroing and the
 * field checks fold, and the call's cost goes (~44 calls per SDK push). */
static inline __attribute__((always_inline)) enum pg_err
decode_varints(const struct pg_pprof *p, struct pg_pb r, const char *what, const char *msg,
               const char *const *names, uint32_t n, uint64_t *v, struct pg_status *st)
{
    memset(v, 0, (n + 1) * sizeof(*v));
    while (r.p < r.end) {
        uint32_t f, wt;
        const uint8_t *at = r.p;
        /* The usual field: a one-byte tag of a known varint field (the last occurrence
         * wins either way). */
        if (r.p[0] < 0x80 && (r.p[0] & 7) == PG_PB_VARINT && r.p[0] >= 8 &&
            (uint32_t)(r.p[0] >> 3) <= n) {
            f = r.p[0] >> 3;
            r.p++;
            if (r.p < r.end && r.p[0] < 0x80) {
                v[f] = *r.p++;
            } else if (!pg_pb_varint(&r, &v[f])) {
                return pg_pprof_err_bad(st, what, p, at);
            }
            continue;
        }
        if (!pg_pb_tag(&r, &f, &wt)) {
            return pg_pprof_err_bad(st, what, p, at);
        }
        if (f < 1 || f > n) {
            if (!pg_pb_skip(&r, wt)) {
                return pg_pprof_err_bad(st, what, p, at);
            }
            continue;
        }
        if (wt != PG_PB_VARINT) {
            return pg_pprof_err_wrong_wt(st, msg, names[f], wt);
        }
        if (!pg_pb_varint(&r, &v[f])) {
            return pg_pprof_err_bad(st, what, p, at);
        }
    }
    return PG_ERR_OK;
}

/* A field at @q with tag byte @tag and a one-byte length (its bounds not checked). */
static inline bool short_tag(const uint8_t *q, uint8_t tag)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t h; /* both bytes in one load */
    memcpy(&h, q, 2);
    return (h & 0x80ff) == tag;
#else
    return q[0] == tag && q[1] < 0x80;
#endif
}

#endif
