/* SPDX-License-Identifier: Apache-2.0
 * pprof -> OTLP Profiles translation: one pprof body (plain or gzip'd, gzip
 * layers nested up to a limit) becomes one ExportProfilesServiceRequest with
 * one Profile per sample type and one deduplicated, deterministic dictionary.
 * Everything is allocated in the caller's per-request arena. */
#ifndef PG_PPROF_TRANSLATE_H
#define PG_PPROF_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "core/otlp.h"

/* Caps that keep a hostile profile from exhausting memory. Exceeding one is
 * PG_ERR_LIMIT (413) and the message names the limit. Defaults (see
 * pg_translate_opts_default): 20 MiB per inflated layer, 4 gzip layers,
 * 2 M samples, 1 M locations/functions, 64 Ki mappings, 4 M strings,
 * 64 MiB of string bytes, stack depth 4096, 256 labels per sample, 64 sample types. */
struct pg_pprof_limits {
    size_t max_inflated_bytes; /* per gzip layer */
    size_t max_gzip_layers;
    size_t max_samples, max_locations, max_functions, max_mappings, max_strings, max_string_bytes,
        max_stack_depth, max_labels_per_sample, max_sample_types;
};

struct pg_translate_opts {
    const char *trace_id_label;    /* "trace_id" */
    const char *span_id_label;     /* "span_id"  */
    bool include_original_payload; /* false */
    const char *scope_name;        /* "pprofgate" */
    const char *scope_version;     /* build version: PG_VERSION macro */
    struct pg_pprof_limits limits;
};

void pg_translate_opts_default(struct pg_translate_opts *o);

struct pg_translate_stats {
    size_t samples;        /* pprof samples */
    size_t sample_records; /* OTLP samples over all profiles */
    size_t profiles, links, inflated_bytes, raw_pprof_bytes;
};

/* @body is the HTTP body after Content-Encoding was removed; gzip magic layers inside are
 * inflated here (gzip in gzip too, each layer capped). Builds a complete
 * ExportProfilesServiceRequest in @arena (1 ResourceProfiles, no resource attributes — the
 * pipeline adds them — 1 ScopeProfiles, N profiles, one dictionary). *@out is owned by @arena.
 * @stats may be NULL. Errors: MALFORMED (400) with a precise one-line reason, LIMIT (413)
 * naming the limit, NOMEM. */
enum pg_err pg_pprof_translate(struct pg_arena *arena, const uint8_t *body, size_t len,
                               const struct pg_translate_opts *opts,
                               struct pg_otlp_request **out, struct pg_translate_stats *stats,
                               struct pg_status *st);

#endif
