/* SPDX-License-Identifier: Apache-2.0
 * Hand-written streaming decoder for pprof (perftools.profiles.Profile).
 * pg_pprof_decode() indexes the whole message in two cheap passes (count,
 * then fill), decodes every mapping / location / function, validates ids,
 * references and string indexes (google/pprof CheckValid rules), and leaves
 * samples in the buffer: pg_pprof_next_sample() decodes them one at a time
 * so nothing per-sample is materialised twice. Strings are not copied. */
#ifndef PG_PPROF_PPROF_DECODE_H
#define PG_PPROF_PPROF_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "core/pb_wire.h"
#include "pprof/translate.h"

#define PG_PPROF_NONE UINT32_MAX

/* A string of the table: its bytes at buf + off (not NUL-terminated; pg_pprof_str_p). Eight
 * bytes, not a pointer and a length: a large profile holds ~100 000 of them at the peak. */
struct pg_pprof_str {
    uint32_t off, len;
};

struct pg_pprof_vt {
    int64_t type, unit; /* string indexes */
};

#define PG_PPROF_HAS_FUNCTIONS 1u
#define PG_PPROF_HAS_FILENAMES 2u
#define PG_PPROF_HAS_LINE_NUMBERS 4u
#define PG_PPROF_HAS_INLINE_FRAMES 8u

struct pg_pprof_mapping {
    uint64_t id, memory_start, memory_limit, file_offset;
    int64_t filename, build_id;
    uint32_t flags; /* PG_PPROF_HAS_* */
};

struct pg_pprof_line {
    uint64_t function_id;
    int64_t line, column;
    uint32_t function_pos; /* index into functions[], resolved by decode */
};

struct pg_pprof_location {
    uint64_t id, mapping_id, address;
    struct pg_pprof_line *lines;
    uint32_t n_lines;
    uint32_t mapping_pos; /* index into mappings[] or PG_PPROF_NONE */
    bool is_folded;
};

struct pg_pprof_function {
    uint64_t id;
    int64_t name, system_name, filename, start_line;
};

/* id -> array position, either a direct table or an open-addressing hash. */
struct pg_pprof_idmap {
    uint32_t *direct; /* pos + 1 by id, when ids are dense */
    size_t direct_n;
    uint64_t *keys; /* hashed: ids */
    uint32_t *vals; /* hashed: pos + 1 (0 = empty) */
    size_t mask;
};

struct pg_pprof {
    const uint8_t *buf; /* the uncompressed pprof; owned by the caller */
    size_t len;
    struct pg_pprof_vt *sample_types;
    size_t n_sample_types;
    size_t n_samples;
    struct pg_pprof_mapping *mappings;
    size_t n_mappings;
    struct pg_pprof_location *locations;
    size_t n_locations;
    struct pg_pprof_function *functions;
    size_t n_functions;
    struct pg_pprof_str *strings;
    size_t n_strings;
    int64_t *comments;
    size_t n_comments;
    struct pg_pprof_vt period_type;
    int64_t drop_frames, keep_frames, time_nanos, duration_nanos, period, default_sample_type,
        doc_url;
    struct pg_pprof_idmap location_ids;
    const struct pg_pprof_limits *limits;
    /* The first run of samples pg_pprof_decode framed whole (tag and a one-byte length each,
     * all inside the buffer); empty (both buf) when none. */
    const uint8_t *sample_run, *sample_run_end;
};

struct pg_pprof_label {
    int64_t key, str, num, num_unit;
};

/* One decoded sample; the buffers are owned by the iterator. */
struct pg_pprof_sample {
    uint64_t *location_ids;
    size_t n_locations;
    /* With it->lazy_locations: when the ids came as one packed field, its undecoded bytes
     * (n_locations is then 0 until pg_pprof_sample_locations()); else NULL. Equal bytes mean
     * equal ids, so a caller may cache per-stack work on them. */
    const uint8_t *loc_packed;
    size_t loc_packed_len;
    int64_t *values; /* exactly n_sample_types on success */
    struct pg_pprof_label *labels;
    size_t n_labels;
    /* With it->lazy_locations: the labels' bytes equal the previous sample's, so are the
     * labels (left in place, not decoded again): a caller may reuse its work on them. */
    bool labels_same;
};

struct pg_pprof_sample_iter {
    struct pg_pb r;  /* top-level reader */
    size_t index;    /* samples returned so far */
    struct pg_pprof_sample s;
    size_t cap_locations, cap_labels;
    bool lazy_locations; /* set after init: see pg_pprof_sample.loc_packed */
    const uint8_t *prev_labels; /* the last sample's label bytes, when it->s.labels holds them */
    size_t prev_labels_len;
    /* The last decoded fast-path values and their packed bytes, 1..8 of them (len 0: none),
     * as a masked word. The caller leaves the values it got untouched afterwards. */
    const int64_t *prev_values;
    uint64_t prev_values_word, prev_values_mask;
    size_t prev_values_len;
};

static inline const char *pg_pprof_str_p(const struct pg_pprof *p, const struct pg_pprof_str *s)
{
    return (const char *)p->buf + s->off;
}

/* Decodes and validates @buf (uncompressed pprof) into @p; index arrays live in @scratch.
 * MALFORMED with a precise reason, LIMIT naming the limit, NOMEM. */
enum pg_err pg_pprof_decode(struct pg_arena *scratch, const uint8_t *buf, size_t len,
                            const struct pg_pprof_limits *limits, struct pg_pprof *p,
                            struct pg_status *st);

/* Position of location @id in p->locations, or PG_PPROF_NONE. */
uint32_t pg_pprof_location_pos(const struct pg_pprof *p, uint64_t id);

enum pg_err pg_pprof_sample_iter_init(struct pg_arena *scratch, const struct pg_pprof *p,
                                      struct pg_pprof_sample_iter *it, struct pg_status *st);
/* Decodes the next sample into it->s, values written to @values (n_sample_types slots;
 * they may be copied from an earlier call's @values, which must still hold what it got).
 * Returns OK with *@done = true at the end. Validates the value count, label string
 * indexes and the stack-depth / label limits (location ids are checked by the caller). */
enum pg_err pg_pprof_next_sample(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                 int64_t *values, bool *done, struct pg_status *st);
/* Decodes the pending packed location ids of the sample just returned (lazy mode) into
 * it->s.location_ids, with the stack-depth limit; a no-op when nothing is pending. */
enum pg_err pg_pprof_sample_locations(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                      struct pg_status *st);

#endif
