/* SPDX-License-Identifier: Apache-2.0
 * pprof -> OTLP Profiles translation (work in progress: API in place). */
#include "pprof/translate.h"

#include <string.h>

void pg_translate_opts_default(struct pg_translate_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->trace_id_label = "trace_id";
    o->span_id_label = "span_id";
    o->scope_name = "pprofgate";
    o->scope_version = PG_VERSION;
}

enum pg_err pg_pprof_translate(struct pg_arena *arena, const uint8_t *body, size_t len,
                               const struct pg_translate_opts *opts,
                               struct pg_otlp_request **out, struct pg_translate_stats *stats,
                               struct pg_status *st)
{
    (void)arena; (void)body; (void)len; (void)opts; (void)stats;
    *out = NULL;
    return pg_status_set(st, PG_ERR_INTERNAL, "pprof translation not implemented yet");
}
