/* SPDX-License-Identifier: Apache-2.0
 * Converts folded / lines collapsed stacks into an encoded pprof Profile. */
#include "pyroscope/pyro_folded.h"

enum pg_err pg_pyro_folded_to_pprof(struct pg_arena *a, const uint8_t *text, size_t len,
                                    enum pg_pyro_text_format fmt,
                                    const struct pg_pyro_folded_opts *o, uint8_t **out,
                                    size_t *out_len, struct pg_status *st)
{
    (void)a, (void)text, (void)len, (void)fmt, (void)o, (void)out, (void)out_len;
    return pg_status_set(st, PG_ERR_INTERNAL, "folded converter not built yet");
}
