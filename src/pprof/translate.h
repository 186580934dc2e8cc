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
#include "otlp/otlp.h"

/* Schema URL written on the ResourceProfiles and ScopeProfiles (upstream parity). */
#define PG_SEMCONV_SCHEMA_URL "https://opentelemetry.io/schemas/1.39.0"

/* Caps that keep a hostile profile from exhausting memory. Exceeding one is
 * PG_ERR_LIMIT (413) and the message names the limit. Defaults (see
 * pg_translate_opts_default): max_inflated_bytes 20 MiB per gzip layer, 4 gzip layers,
 * max_samples 2 Mi OTLP sample records (pprof samples x sample types), 1 Mi locations,
 * 1 Mi functions, 64 Ki mappings, 4 Mi strings, 64 MiB of string bytes, stack depth
 * 4096 (locations per sample and lines per location), 256 labels per sample, 64 sample
 * types. The request arena's own cap bounds the total on top of these. */
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
    size_t scratch_bytes; /* footprint of the temporary arena (inflated pprof, indexes, hash
                           * tables), released before the Sample structs are allocated */
    size_t peak_bytes;    /* most memory this call held at once: request arena + scratch +
                           * the compact per-sample records (what one request costs) */
    size_t released_bytes; /* sample bytes given back to core/bufpool during the sample pass
                            * (a large gzip'd body only; 0 otherwise) */
};

/* @body is the HTTP body after Content-Encoding was removed; gzip magic layers inside are
 * inflated here (gzip in gzip too, each layer capped). Builds a complete
 * ExportProfilesServiceRequest in @arena (1 ResourceProfiles, no resource attributes — the
 * pipeline adds them — 1 ScopeProfiles, N profiles, one dictionary). *@out is owned by @arena.
 * Sharing: Sample.attribute_indices arrays are interned and shared between samples and profiles,
 * and all profiles share one period_type: treat them as immutable (replace the pointer to edit).
 * @stats may be NULL. Errors: MALFORMED (400) with a precise one-line reason, LIMIT (413)
 * naming the limit, NOMEM. */
enum pg_err pg_pprof_translate(struct pg_arena *arena, const uint8_t *body, size_t len,
                               const struct pg_translate_opts *opts,
                               struct pg_otlp_request **out, struct pg_translate_stats *stats,
                               struct pg_status *st);

/* The same, for a caller whose @body lives alone in *@body_arena: this call owns that arena
 * and destroys it (setting *@body_arena to NULL) as soon as the body is dead, i.e. once its
 * gzip layer is inflated, or for a plain pprof once the dictionary is final and before the
 * Sample structs are allocated; at the latest before returning, on success or failure. So
 * the body and the finished request never occupy memory together. */
enum pg_err pg_pprof_translate_owned(struct pg_arena *arena, struct pg_arena **body_arena,
                                     const uint8_t *body, size_t len,
                                     const struct pg_translate_opts *opts,
                                     struct pg_otlp_request **out,
                                     struct pg_translate_stats *stats, struct pg_status *st);

#endif
