/* SPDX-License-Identifier: Apache-2.0
 * An ExportProfilesServiceRequest from the wire, made safe to forward: the
 * protobuf bytes (or OTLP/JSON, otlp/otlp_json.h) are unpacked into the
 * request's arena, then pg_otlp_validate checks what a backend or a Go peer
 * downstream would trip over. The rule (docs/otlp-receiver.md): a request
 * with a dangling index, a missing zero entry, a duplicate attribute key in
 * one list or a table past a limit is refused whole, naming the first
 * violation (400 / INVALID_ARGUMENT); strings that are not valid UTF-8 (or
 * hold NUL) are repaired in place to U+FFFD, as on the push path, and
 * counted. Nothing invalid is ever forwarded. Runs on any thread; the
 * request and everything it points to live in the caller's arena. */
#ifndef PG_OTLP_OTLP_DECODE_H
#define PG_OTLP_OTLP_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "otlp/otlp.h"

/* Caps on one request (0 = no cap of that kind). The receiver fills them
 * from its `limits:` keys (the same names as the pprof receiver's). */
struct pg_otlp_limits {
    size_t max_samples;          /* over every profile */
    size_t max_profiles;
    size_t max_locations, max_functions, max_mappings, max_strings, max_stacks,
        max_attributes, max_links; /* dictionary tables */
    size_t max_string_bytes;     /* one string */
    size_t max_stack_depth;      /* locations of one stack */
    size_t max_attrs_per_sample; /* attribute_indices of one sample */
    size_t max_sample_values;    /* values of one sample */
    size_t max_anyvalue_depth;   /* nesting of array/kvlist AnyValues; 0 = 16 */
};

/* Which layout the bytes were written in. OTLP has no version negotiation:
 * v1.9 (Collector <= v0.147) numbers Sample fields differently, so the same
 * bytes mean different things; the decoder tells them apart by wire types. */
enum pg_otlp_wire_version {
    PG_OTLP_WIRE_CURRENT = 0, /* v1.10 / v1.11 */
    PG_OTLP_WIRE_V1_9,        /* Sample 2=values, 3=attribute_indices, 4=link_index */
    PG_OTLP_WIRE_V1_8,        /* also Profile 7=comment_strindices, 8..12 shifted */
    PG_OTLP_WIRE_OLDER,       /* v1.7 or before (repeated sample_type, no Stack) */
};
const char *pg_otlp_wire_version_name(enum pg_otlp_wire_version v); /* "v1.9", ... */

struct pg_otlp_decode_stats {
    enum pg_otlp_wire_version version;
    size_t resource_profiles, profiles, samples;
    size_t utf8_repaired;        /* strings made valid UTF-8 (U+FFFD) */
};

struct pg_otlp_decode_opts {
    const struct pg_otlp_limits *limits; /* NULL = none */
    /* Accept a v1.9 layout by converting it to the current one (else it is
     * refused naming the version). */
    bool convert_v1_9;
    /* A profile with this many samples or more keeps them in wire form when they are
     * canonical (otlp_lazy.h): 0 never. Only for a pipeline whose every component reads
     * samples through the lazy-aware helpers (pg_component_ops.lazy_samples). */
    size_t lazy_min_samples;
};

/* Unpacks @buf (protobuf) into @arena and validates it (pg_otlp_validate).
 * *@out lives in @arena. Errors: MALFORMED (not an
 * ExportProfilesServiceRequest, an older layout, an invalid reference:
 * the message names the field path, e.g.
 * "resource_profiles[0].scope_profiles[0].profiles[1].samples[7].stack_index 12
 *  is past stack_table (10 entries)"), LIMIT (a cap), NOMEM / LIMIT from the
 * arena. */
PG_MUST_CHECK
enum pg_err pg_otlp_decode(struct pg_arena *arena, const uint8_t *buf, size_t len,
                           const struct pg_otlp_decode_opts *opts,
                           struct pg_otlp_request **out, struct pg_otlp_decode_stats *stats,
                           struct pg_status *st);

/* The checks alone, for a request built another way (OTLP/JSON): indices,
 * zero entries, caps, and the UTF-8 repair (in place; strings in @arena).
 * Resource and scope attributes given by reference (KeyValue.key_strindex,
 * AnyValue.string_value_strindex, as the Collector's otlphttp exporter writes
 * them) are resolved to plain key / string_value, as the Collector's
 * ProtoUnmarshaler does (docs/otlp-validation.md). */
PG_MUST_CHECK
enum pg_err pg_otlp_validate(struct pg_arena *arena, struct pg_otlp_request *req,
                             const struct pg_otlp_limits *limits,
                             struct pg_otlp_decode_stats *stats, struct pg_status *st);

/* The layout @buf was written in, from a walk of its wire types only (no
 * allocation): what pg_otlp_decode checks first. */
enum pg_otlp_wire_version pg_otlp_wire_version_detect(const uint8_t *buf, size_t len);

#endif
