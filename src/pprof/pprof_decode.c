/* SPDX-License-Identifier: Apache-2.0
 * pprof decoder: a counting pass sizes every array exactly (limits are
 * checked before anything is allocated), a filling pass decodes the small
 * tables, then ids are indexed and every cross-reference and string index is
 * validated. Samples stay encoded and are streamed by pg_pprof_next_sample(). */
#include "pprof/pprof_decode.h"

#include <string.h>

static const char *const k_profile_fields[16] = {
    NULL,          "sample_type", "sample",         "mapping",     "location", "function",
    "string_table", "drop_frames", "keep_frames",   "time_nanos",  "duration_nanos",
    "period_type", "period",      "comment",        "default_sample_type", "doc_url"};

static enum pg_err bad(struct pg_status *st, const char *what, const struct pg_pprof *p,
                       const uint8_t *at)
{
    return pg_status_set(st, PG_ERR_MALFORMED, "pprof: malformed %s at byte %zu", what,
                         (size_t)(at - p->buf));
}

static enum pg_err wrong_wt(struct pg_status *st, const char *msg, const char *field, uint32_t wt)
{
    return pg_status_set(st, PG_ERR_MALFORMED,
                         "pprof: field %s.%s has wire type %u, which does not match its type", msg,
                         field, wt);
}

static enum pg_err over(struct pg_status *st, const char *what, size_t have, const char *limit,
                        size_t max)
{
    return pg_status_set(st, PG_ERR_LIMIT, "pprof: %zu %s exceed the limit %s (%zu)", have, what,
                         limit, max);
}

static inline bool str_ok(const struct pg_pprof *p, int64_t idx)
{
    return idx >= 0 && (uint64_t)idx < p->n_strings;
}

static enum pg_err bad_str(struct pg_status *st, const struct pg_pprof *p, const char *where,
                           int64_t idx)
{
    return pg_status_set(st, PG_ERR_MALFORMED,
                         "pprof: %s: string index %lld out of range (string_table has %zu "
                         "entries)",
                         where, (long long)idx, p->n_strings);
}

/* ---- small messages ------------------------------------------------------ */

static enum pg_err decode_value_type(const struct pg_pprof *p, struct pg_pb r, const char *field,
                                     struct pg_pprof_vt *vt, struct pg_status *st)
{
    while (r.p < r.end) {
        uint32_t f, wt;
        uint64_t v;
        const uint8_t *at = r.p;
        if (!pg_pb_tag(&r, &f, &wt)) {
            return bad(st, field, p, at);
        }
        if (f == 1 || f == 2) {
            if (wt != PG_PB_VARINT) {
                return wrong_wt(st, "ValueType", f == 1 ? "type" : "unit", wt);
            }
            if (!pg_pb_varint(&r, &v)) {
                return bad(st, field, p, at);
            }
            if (f == 1) {
                vt->type = (int64_t)v;
            } else {
                vt->unit = (int64_t)v;
            }
        } else if (!pg_pb_skip(&r, wt)) {
            return bad(st, field, p, at);
        }
    }
    return PG_ERR_OK;
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
                return bad(st, what, p, at);
            }
            continue;
        }
        if (!pg_pb_tag(&r, &f, &wt)) {
            return bad(st, what, p, at);
        }
        if (f < 1 || f > n) {
            if (!pg_pb_skip(&r, wt)) {
                return bad(st, what, p, at);
            }
            continue;
        }
        if (wt != PG_PB_VARINT) {
            return wrong_wt(st, msg, names[f], wt);
        }
        if (!pg_pb_varint(&r, &v[f])) {
            return bad(st, what, p, at);
        }
    }
    return PG_ERR_OK;
}

static enum pg_err decode_mapping(const struct pg_pprof *p, struct pg_pb r,
                                  struct pg_pprof_mapping *m, struct pg_status *st)
{
    static const char *const names[11] = {NULL,        "id",          "memory_start",
                                          "memory_limit", "file_offset", "filename",
                                          "build_id",  "has_functions", "has_filenames",
                                          "has_line_numbers", "has_inline_frames"};
    uint64_t v[11];
    enum pg_err err = decode_varints(p, r, "mapping", "Mapping", names, 10, v, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    memset(m, 0, sizeof(*m));
    m->id = v[1];
    m->memory_start = v[2];
    m->memory_limit = v[3];
    m->file_offset = v[4];
    m->filename = (int64_t)v[5];
    m->build_id = (int64_t)v[6];
    for (uint32_t f = 7; f <= 10; f++) {
        if (v[f] != 0) {
            m->flags |= 1u << (f - 7);
        }
    }
    return PG_ERR_OK;
}

static enum pg_err decode_function(const struct pg_pprof *p, struct pg_pb r,
                                   struct pg_pprof_function *fn, struct pg_status *st)
{
    static const char *const names[6] = {NULL, "id", "name", "system_name", "filename",
                                         "start_line"};
    uint64_t v[6];
    enum pg_err err = decode_varints(p, r, "function", "Function", names, 5, v, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    memset(fn, 0, sizeof(*fn));
    fn->id = v[1];
    fn->name = (int64_t)v[2];
    fn->system_name = (int64_t)v[3];
    fn->filename = (int64_t)v[4];
    fn->start_line = (int64_t)v[5];
    return PG_ERR_OK;
}

static enum pg_err decode_line(const struct pg_pprof *p, struct pg_pb r, struct pg_pprof_line *ln,
                               struct pg_status *st)
{
    static const char *const names[4] = {NULL, "function_id", "line", "column"};
    uint64_t v[4];
    enum pg_err err = decode_varints(p, r, "line", "Line", names, 3, v, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    memset(ln, 0, sizeof(*ln));
    ln->function_id = v[1];
    ln->line = (int64_t)v[2];
    ln->column = (int64_t)v[3];
    return PG_ERR_OK;
}

static enum pg_err decode_location_counted(struct pg_arena *a, const struct pg_pprof *p,
                                           struct pg_pb r, struct pg_pprof_location *l,
                                           struct pg_status *st)
{
    static const char *const names[6] = {NULL, "id", "mapping_id", "address", "line",
                                         "is_folded"};
    struct pg_pb scan = r;
    size_t n_lines = 0, li = 0;
    enum pg_err err;

    memset(l, 0, sizeof(*l));
    l->mapping_pos = PG_PPROF_NONE;
    /* Count lines first so they get one exact allocation. */
    while (scan.p < scan.end) {
        uint32_t f, wt;
        const uint8_t *at = scan.p;
        if (!pg_pb_tag(&scan, &f, &wt) || !pg_pb_skip(&scan, wt)) {
            return bad(st, "location", p, at);
        }
        if (f == 4) {
            if (wt != PG_PB_LEN) {
                return wrong_wt(st, "Location", "line", wt);
            }
            n_lines++;
        }
    }
    if (n_lines > p->limits->max_stack_depth) {
        return over(st, "lines in one location", n_lines, "max_stack_depth",
                    p->limits->max_stack_depth);
    }
    if (n_lines > 0) {
        l->lines = pg_arena_alloc(a, n_lines * sizeof(*l->lines)); /* decode_line fills each */
        if (l->lines == NULL) {
            return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                                 "pprof: no memory for location lines");
        }
    }
    while (r.p < r.end) {
        uint32_t f, wt;
        uint64_t v;
        struct pg_pb sub;
        const uint8_t *at = r.p;
        if (!pg_pb_tag(&r, &f, &wt)) {
            return bad(st, "location", p, at);
        }
        if (f < 1 || f > 5) {
            if (!pg_pb_skip(&r, wt)) {
                return bad(st, "location", p, at);
            }
            continue;
        }
        if (f == 4) {
            if (!pg_pb_len(&r, &sub)) {
                return bad(st, "location", p, at);
            }
            if ((err = decode_line(p, sub, &l->lines[li++], st)) != PG_ERR_OK) {
                return err;
            }
            continue;
        }
        if (wt != PG_PB_VARINT) {
            return wrong_wt(st, "Location", names[f], wt);
        }
        if (!pg_pb_varint(&r, &v)) {
            return bad(st, "location", p, at);
        }
        switch (f) {
        case 1: l->id = v; break;
        case 2: l->mapping_id = v; break;
        case 3: l->address = v; break;
        default: l->is_folded = v != 0; break;
        }
    }
    l->n_lines = (uint32_t)n_lines;
    return PG_ERR_OK;
}

/* Most locations hold a few lines: one pass decodes them into a small buffer, then they
 * get their exact allocation. Anything else (more lines, any error) goes through the
 * counting decoder from the start, which gives every limit and error message. */
static enum pg_err decode_location(struct pg_arena *a, const struct pg_pprof *p, struct pg_pb r,
                                   struct pg_pprof_location *l, struct pg_status *st)
{
    struct pg_pprof_line buf[8];
    struct pg_pb q = r;
    size_t n = 0;

    memset(l, 0, sizeof(*l));
    l->mapping_pos = PG_PPROF_NONE;
    while (q.p < q.end) {
        uint32_t f, wt;
        uint64_t v;
        struct pg_pb sub;
        if (!pg_pb_tag(&q, &f, &wt)) {
            goto counted;
        }
        if (f == 4) {
            if (wt != PG_PB_LEN || n == sizeof(buf) / sizeof(buf[0]) || !pg_pb_len(&q, &sub) ||
                decode_line(p, sub, &buf[n++], NULL) != PG_ERR_OK) {
                goto counted;
            }
            continue;
        }
        if (f < 1 || f > 5) {
            if (!pg_pb_skip(&q, wt)) {
                goto counted;
            }
            continue;
        }
        if (wt != PG_PB_VARINT || !pg_pb_varint(&q, &v)) {
            goto counted;
        }
        switch (f) {
        case 1: l->id = v; break;
        case 2: l->mapping_id = v; break;
        case 3: l->address = v; break;
        default: l->is_folded = v != 0; break;
        }
    }
    if (n > p->limits->max_stack_depth) {
        goto counted;
    }
    if (n > 0) {
        l->lines = pg_arena_alloc(a, n * sizeof(*l->lines));
        if (l->lines == NULL) {
            goto counted;
        }
        memcpy(l->lines, buf, n * sizeof(*l->lines));
    }
    l->n_lines = (uint32_t)n;
    return PG_ERR_OK;
counted:
    return decode_location_counted(a, p, r, l, st);
}

/* ---- id maps -------------------------------------------------------------- */

static inline uint64_t mix_id(uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return id;
}

static enum pg_err idmap_build(struct pg_arena *a, struct pg_pprof_idmap *m, const void *base,
                               size_t stride, size_t n, const char *what, struct pg_status *st)
{
    uint64_t max_id = 0;

    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < n; i++) {
        uint64_t id;
        memcpy(&id, (const uint8_t *)base + i * stride, sizeof(id));
        if (id == 0) {
            return pg_status_set(st, PG_ERR_MALFORMED, "pprof: %s #%zu has the reserved id 0",
                                 what, i);
        }
        max_id = id > max_id ? id : max_id;
    }
    if (n == 0) {
        return PG_ERR_OK;
    }
    if (max_id <= 2 * (uint64_t)n + 1024) {
        m->direct_n = (size_t)max_id + 1;
        m->direct = pg_arena_calloc(a, m->direct_n, sizeof(uint32_t));
        if (m->direct == NULL) {
            goto nomem;
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t id;
            memcpy(&id, (const uint8_t *)base + i * stride, sizeof(id));
            if (m->direct[id] != 0) {
                return pg_status_set(st, PG_ERR_MALFORMED, "pprof: duplicate %s id %llu", what,
                                     (unsigned long long)id);
            }
            m->direct[id] = (uint32_t)i + 1;
        }
        return PG_ERR_OK;
    }
    {
        size_t slots = 16;
        while (slots < 2 * n) {
            slots *= 2;
        }
        m->keys = pg_arena_alloc(a, slots * sizeof(uint64_t));
        m->vals = pg_arena_calloc(a, slots, sizeof(uint32_t));
        if (m->keys == NULL || m->vals == NULL) {
            goto nomem;
        }
        m->mask = slots - 1;
        for (size_t i = 0; i < n; i++) {
            uint64_t id;
            size_t pos;
            memcpy(&id, (const uint8_t *)base + i * stride, sizeof(id));
            pos = (size_t)mix_id(id) & m->mask;
            while (m->vals[pos] != 0) {
                if (m->keys[pos] == id) {
                    return pg_status_set(st, PG_ERR_MALFORMED, "pprof: duplicate %s id %llu",
                                         what, (unsigned long long)id);
                }
                pos = (pos + 1) & m->mask;
            }
            m->keys[pos] = id;
            m->vals[pos] = (uint32_t)i + 1;
        }
    }
    return PG_ERR_OK;
nomem:
    return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                         "pprof: no memory to index %zu %s ids", n, what);
}

static inline uint32_t idmap_get(const struct pg_pprof_idmap *m, uint64_t id)
{
    if (m->direct != NULL) {
        return id < m->direct_n ? m->direct[id] - 1 : PG_PPROF_NONE;
    }
    if (m->vals == NULL) {
        return PG_PPROF_NONE;
    }
    for (size_t pos = (size_t)mix_id(id) & m->mask; m->vals[pos] != 0;
         pos = (pos + 1) & m->mask) {
        if (m->keys[pos] == id) {
            return m->vals[pos] - 1;
        }
    }
    return PG_PPROF_NONE;
}

uint32_t pg_pprof_location_pos(const struct pg_pprof *p, uint64_t id)
{
    return idmap_get(&p->location_ids, id);
}

/* ---- the profile -------------------------------------------------------- */

struct counts {
    size_t sample_types, samples, mappings, locations, functions, strings, comments;
    size_t string_bytes;
    /* The first run of samples the fast path framed: the filling pass jumps over it. */
    const uint8_t *sample_run, *sample_run_end;
    /* The first run of strings it framed and their number: the filling pass walks it
     * without checking tags or bounds again. */
    const uint8_t *string_run;
    size_t string_run_n;
};

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

/* Pass 1: frame every top-level field, check wire types, count. */
static enum pg_err count_fields(struct pg_pprof *p, struct counts *c, struct pg_status *st)
{
    struct pg_pb r = {p->buf, p->buf + p->len};
    /* Before it, any field with a one-byte length fits (2 + 127 bytes): runs check no bounds. */
    const uint8_t *const safe = p->len > 129 ? r.end - 129 : r.p;

    memset(c, 0, sizeof(*c));
    while (r.p < r.end) {
        uint32_t f, wt;
        const uint8_t *at = r.p;
        struct pg_pb sub = {r.p, r.p};

        /* The bulk of a profile: samples, locations, functions and strings with one-byte
         * tags and lengths. Same counts as below, without the general checks' cost. */
        if (r.end - r.p >= 2 && r.p[1] < 0x80 && r.p[1] <= r.end - r.p - 2) {
            /* Fields of one kind come in runs (all samples, then all locations ...): each
             * case stays in a tight loop while the next field has the same tag. */
            const uint8_t tag = r.p[0];
#define COUNT_RUN(counter, extra)                                                                  \
    do {                                                                                           \
        (counter)++;                                                                               \
        extra;                                                                                     \
        r.p += 2 + r.p[1];                                                                         \
    } while (r.p < safe ? short_tag(r.p, tag)                                                      \
                        : r.end - r.p >= 2 && short_tag(r.p, tag) && r.p[1] <= r.end - r.p - 2)
            switch (tag) {
            case 0x12:
                if (c->sample_run == NULL) {
                    c->sample_run = r.p;
                    COUNT_RUN(c->samples, (void)0);
                    c->sample_run_end = r.p;
                } else {
                    COUNT_RUN(c->samples, (void)0);
                }
                continue;
            case 0x22: COUNT_RUN(c->locations, (void)0); continue;
            case 0x2a: COUNT_RUN(c->functions, (void)0); continue;
            case 0x32: {
                /* string bytes = the run's span minus two framing bytes per string */
                const uint8_t *const run = r.p;
                const size_t n0 = c->strings;
                COUNT_RUN(c->strings, (void)0);
                c->string_bytes += (size_t)(r.p - run) - 2 * (c->strings - n0);
                if (c->string_run == NULL) {
                    c->string_run = run;
                    c->string_run_n = c->strings - n0;
                }
                continue;
            }
            default: break;
            }
#undef COUNT_RUN
        }

        if (!pg_pb_tag(&r, &f, &wt)) {
            return bad(st, "field tag", p, at);
        }
        if (f >= 1 && f <= 15) {
            bool len_field = (f >= 1 && f <= 6) || f == 11;
            if (f == 13) {
                if (wt != PG_PB_VARINT && wt != PG_PB_LEN) {
                    return wrong_wt(st, "Profile", k_profile_fields[f], wt);
                }
            } else if (len_field ? wt != PG_PB_LEN : wt != PG_PB_VARINT) {
                return wrong_wt(st, "Profile", k_profile_fields[f], wt);
            }
        }
        if (wt == PG_PB_LEN) {
            if (!pg_pb_len(&r, &sub)) {
                return bad(st, f <= 15 && f >= 1 ? k_profile_fields[f] : "field", p, at);
            }
        } else if (!pg_pb_skip(&r, wt)) {
            return bad(st, f <= 15 && f >= 1 ? k_profile_fields[f] : "field", p, at);
        }
        switch (f) {
        case 1: c->sample_types++; break;
        case 2: c->samples++; break;
        case 3: c->mappings++; break;
        case 4: c->locations++; break;
        case 5: c->functions++; break;
        case 6:
            c->strings++;
            c->string_bytes += (size_t)(sub.end - sub.p);
            break;
        case 13:
            if (wt == PG_PB_LEN) {
                if (sub.p < sub.end && sub.end[-1] >= 0x80) {
                    return bad(st, "packed comment", p, at);
                }
                c->comments += pg_pb_count_varints(sub.p, sub.end);
            } else {
                c->comments++;
            }
            break;
        default: break;
        }
    }
    return PG_ERR_OK;
}

static enum pg_err check_limits(const struct pg_pprof_limits *l, const struct counts *c,
                                struct pg_status *st)
{
    if (c->sample_types > l->max_sample_types) {
        return over(st, "sample types", c->sample_types, "max_sample_types", l->max_sample_types);
    }
    if (c->samples > l->max_samples) {
        return over(st, "samples", c->samples, "max_samples", l->max_samples);
    }
    if (c->sample_types > 0 && c->samples > l->max_samples / c->sample_types) {
        return pg_status_set(st, PG_ERR_LIMIT,
                             "pprof: %zu samples x %zu sample types exceed the limit max_samples "
                             "(%zu sample records)",
                             c->samples, c->sample_types, l->max_samples);
    }
    if (c->mappings > l->max_mappings) {
        return over(st, "mappings", c->mappings, "max_mappings", l->max_mappings);
    }
    if (c->locations > l->max_locations) {
        return over(st, "locations", c->locations, "max_locations", l->max_locations);
    }
    if (c->functions > l->max_functions) {
        return over(st, "functions", c->functions, "max_functions", l->max_functions);
    }
    if (c->strings > l->max_strings) {
        return over(st, "strings", c->strings, "max_strings", l->max_strings);
    }
    if (c->string_bytes > l->max_string_bytes) {
        return over(st, "string bytes", c->string_bytes, "max_string_bytes", l->max_string_bytes);
    }
    if (c->strings >= UINT32_MAX || c->locations >= UINT32_MAX || c->functions >= UINT32_MAX ||
        c->mappings >= UINT32_MAX) {
        return pg_status_set(st, PG_ERR_LIMIT, "pprof: table larger than 2^32 entries");
    }
    return PG_ERR_OK;
}

/* @ptr = @n entries from the arena, zeroed when @zero (arrays the filling pass writes
 * whole need not be). Counts are capped (check_limits), so n * size cannot overflow. */
#define ALLOC_ARRAY_Z(ptr, n, zero)                                                                \
    do {                                                                                           \
        if ((n) > 0) {                                                                             \
            (ptr) = (zero) ? pg_arena_calloc(a, (n), sizeof(*(ptr)))                               \
                           : pg_arena_alloc(a, (n) * sizeof(*(ptr)));                              \
            if ((ptr) == NULL) {                                                                   \
                return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,        \
                                     "pprof: no memory for %zu table entries", (size_t)(n));       \
            }                                                                                      \
        }                                                                                          \
    } while (0)
#define ALLOC_ARRAY(ptr, n) ALLOC_ARRAY_Z(ptr, n, true)
#define ALLOC_ARRAY_RAW(ptr, n) ALLOC_ARRAY_Z(ptr, n, false)

/* Pass 2: decode everything but samples. Framing was checked by pass 1. */
static enum pg_err fill_fields(struct pg_arena *a, struct pg_pprof *p, const struct counts *c,
                               struct pg_status *st)
{
    struct pg_pb r = {p->buf, p->buf + p->len};
    const uint8_t *const safe = p->len > 129 ? r.end - 129 : r.p; /* as in count_fields */
    size_t it = 0, im = 0, il = 0, ifn = 0, is = 0, ic = 0;
    enum pg_err err = PG_ERR_OK;

    while (r.p < r.end) {
        uint32_t f, wt;
        uint64_t v = 0;
        struct pg_pb sub = {NULL, NULL};
        const uint8_t *at = r.p;

        /* Strings and samples with one-byte lengths (framing was checked by pass 1), in
         * runs as pass 1 counts them. */
        if (r.p == c->sample_run) {
            r.p = c->sample_run_end;
            continue;
        }
        if (r.p == c->string_run) {
            struct pg_pprof_str *sp = p->strings + is;
            const uint8_t *q = r.p;
            for (size_t k = 0; k < c->string_run_n; k++) {
                sp[k].p = (const char *)q + 2;
                sp[k].len = q[1];
                q += 2 + q[1];
            }
            is += c->string_run_n;
            r.p = q;
            continue;
        }
        if (r.end - r.p >= 2 && r.p[1] < 0x80) {
            if (r.p[0] == 0x32) {
                struct pg_pprof_str *sp = p->strings + is;
                do {
                    sp->p = (const char *)r.p + 2;
                    sp->len = r.p[1];
                    sp++;
                    r.p += 2 + r.p[1];
                } while ((r.p < safe || r.end - r.p >= 2) && short_tag(r.p, 0x32));
                is = (size_t)(sp - p->strings);
                continue;
            }
            if (r.p[0] == 0x12) {
                do {
                    r.p += 2 + r.p[1];
                } while (r.end - r.p >= 2 && r.p[0] == 0x12 && r.p[1] < 0x80);
                continue;
            }
        }
        if (!pg_pb_tag(&r, &f, &wt)) {
            return bad(st, "field tag", p, at);
        }
        if (wt == PG_PB_LEN) {
            if (!pg_pb_len(&r, &sub)) {
                return bad(st, "field", p, at);
            }
        } else if (wt == PG_PB_VARINT) {
            if (!pg_pb_varint(&r, &v)) {
                return bad(st, "field", p, at);
            }
        } else if (!pg_pb_skip(&r, wt)) {
            return bad(st, "field", p, at);
        }
        switch (f) {
        case 1:
            err = decode_value_type(p, sub, "sample_type", &p->sample_types[it++], st);
            break;
        case 3: err = decode_mapping(p, sub, &p->mappings[im++], st); break;
        case 4: err = decode_location(a, p, sub, &p->locations[il++], st); break;
        case 5: err = decode_function(p, sub, &p->functions[ifn++], st); break;
        case 6:
            p->strings[is].p = (const char *)sub.p;
            p->strings[is].len = (uint32_t)(sub.end - sub.p);
            is++;
            break;
        case 7: p->drop_frames = (int64_t)v; break;
        case 8: p->keep_frames = (int64_t)v; break;
        case 9: p->time_nanos = (int64_t)v; break;
        case 10: p->duration_nanos = (int64_t)v; break;
        case 11: err = decode_value_type(p, sub, "period_type", &p->period_type, st); break;
        case 12: p->period = (int64_t)v; break;
        case 13:
            if (wt == PG_PB_VARINT) {
                p->comments[ic++] = (int64_t)v;
            } else {
                while (sub.p < sub.end) {
                    if (!pg_pb_varint(&sub, &v)) {
                        return bad(st, "packed comment", p, sub.p);
                    }
                    p->comments[ic++] = (int64_t)v;
                }
            }
            break;
        case 14: p->default_sample_type = (int64_t)v; break;
        case 15: p->doc_url = (int64_t)v; break;
        default: break;
        }
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    return PG_ERR_OK;
}

static enum pg_err validate(struct pg_arena *a, struct pg_pprof *p, struct pg_status *st)
{
    struct pg_pprof_idmap map_ids, fn_ids;
    enum pg_err err;

    if (p->n_strings == 0 || p->strings[0].len != 0) {
        return pg_status_set(st, PG_ERR_MALFORMED, "pprof: string_table[0] must be \"\"");
    }
    if (p->n_samples > 0 && p->n_sample_types == 0) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "pprof: profile has %zu samples but no sample types", p->n_samples);
    }
    for (size_t i = 0; i < p->n_sample_types; i++) {
        if (!str_ok(p, p->sample_types[i].type)) {
            return bad_str(st, p, "sample_type.type", p->sample_types[i].type);
        }
        if (!str_ok(p, p->sample_types[i].unit)) {
            return bad_str(st, p, "sample_type.unit", p->sample_types[i].unit);
        }
    }
    if (!str_ok(p, p->period_type.type)) {
        return bad_str(st, p, "period_type.type", p->period_type.type);
    }
    if (!str_ok(p, p->period_type.unit)) {
        return bad_str(st, p, "period_type.unit", p->period_type.unit);
    }
    if (!str_ok(p, p->drop_frames)) {
        return bad_str(st, p, "drop_frames", p->drop_frames);
    }
    if (!str_ok(p, p->keep_frames)) {
        return bad_str(st, p, "keep_frames", p->keep_frames);
    }
    if (!str_ok(p, p->doc_url)) {
        return bad_str(st, p, "doc_url", p->doc_url);
    }
    if (!str_ok(p, p->default_sample_type)) {
        return bad_str(st, p, "default_sample_type", p->default_sample_type);
    }
    for (size_t i = 0; i < p->n_comments; i++) {
        if (!str_ok(p, p->comments[i])) {
            return bad_str(st, p, "comment", p->comments[i]);
        }
    }
    for (size_t i = 0; i < p->n_mappings; i++) {
        if (!str_ok(p, p->mappings[i].filename)) {
            return bad_str(st, p, "mapping.filename", p->mappings[i].filename);
        }
        if (!str_ok(p, p->mappings[i].build_id)) {
            return bad_str(st, p, "mapping.build_id", p->mappings[i].build_id);
        }
    }
    for (size_t i = 0; i < p->n_functions; i++) {
        const struct pg_pprof_function *f = &p->functions[i];
        if (!str_ok(p, f->name)) {
            return bad_str(st, p, "function.name", f->name);
        }
        if (!str_ok(p, f->system_name)) {
            return bad_str(st, p, "function.system_name", f->system_name);
        }
        if (!str_ok(p, f->filename)) {
            return bad_str(st, p, "function.filename", f->filename);
        }
    }
    if ((err = idmap_build(a, &map_ids, p->mappings, sizeof(*p->mappings), p->n_mappings,
                           "mapping", st)) != PG_ERR_OK ||
        (err = idmap_build(a, &fn_ids, p->functions, sizeof(*p->functions), p->n_functions,
                           "function", st)) != PG_ERR_OK ||
        (err = idmap_build(a, &p->location_ids, p->locations, sizeof(*p->locations),
                           p->n_locations, "location", st)) != PG_ERR_OK) {
        return err;
    }
    for (size_t i = 0; i < p->n_locations; i++) {
        struct pg_pprof_location *l = &p->locations[i];
        if (l->mapping_id != 0) {
            l->mapping_pos = idmap_get(&map_ids, l->mapping_id);
            if (l->mapping_pos == PG_PPROF_NONE) {
                return pg_status_set(st, PG_ERR_MALFORMED,
                                     "pprof: location id %llu references missing mapping id %llu",
                                     (unsigned long long)l->id,
                                     (unsigned long long)l->mapping_id);
            }
        }
        for (uint32_t j = 0; j < l->n_lines; j++) {
            struct pg_pprof_line *ln = &l->lines[j];
            ln->function_pos = ln->function_id != 0 ? idmap_get(&fn_ids, ln->function_id)
                                                    : PG_PPROF_NONE;
            if (ln->function_pos == PG_PPROF_NONE) {
                return pg_status_set(st, PG_ERR_MALFORMED,
                                     "pprof: location id %llu has a line with missing function "
                                     "id %llu",
                                     (unsigned long long)l->id,
                                     (unsigned long long)ln->function_id);
            }
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_pprof_decode(struct pg_arena *a, const uint8_t *buf, size_t len,
                            const struct pg_pprof_limits *limits, struct pg_pprof *p,
                            struct pg_status *st)
{
    struct counts c;
    enum pg_err err;

    memset(p, 0, sizeof(*p));
    p->buf = buf;
    p->len = len;
    p->limits = limits;
    if (len == 0) {
        return pg_status_set(st, PG_ERR_MALFORMED, "pprof: empty profile (0 bytes)");
    }
    if ((err = count_fields(p, &c, st)) != PG_ERR_OK ||
        (err = check_limits(limits, &c, st)) != PG_ERR_OK) {
        return err;
    }
    ALLOC_ARRAY(p->sample_types, c.sample_types);
    /* Every mapping, location, function and string slot is written whole by the filling
     * pass (decode_* zero their entry first): no need to zero the arrays. */
    ALLOC_ARRAY_RAW(p->mappings, c.mappings);
    ALLOC_ARRAY_RAW(p->locations, c.locations);
    ALLOC_ARRAY_RAW(p->functions, c.functions);
    ALLOC_ARRAY_RAW(p->strings, c.strings);
    ALLOC_ARRAY(p->comments, c.comments);
    p->n_sample_types = c.sample_types;
    p->n_samples = c.samples;
    p->n_mappings = c.mappings;
    p->n_locations = c.locations;
    p->n_functions = c.functions;
    p->n_strings = c.strings;
    p->n_comments = c.comments;
    /* none: an empty range in the buffer, so the iterator compares pointers into one object */
    p->sample_run = c.sample_run != NULL ? c.sample_run : buf;
    p->sample_run_end = c.sample_run != NULL ? c.sample_run_end : buf;
    if ((err = fill_fields(a, p, &c, st)) != PG_ERR_OK) {
        return err;
    }
    return validate(a, p, st);
}

/* ---- samples ------------------------------------------------------------ */

enum pg_err pg_pprof_sample_iter_init(struct pg_arena *a, const struct pg_pprof *p,
                                      struct pg_pprof_sample_iter *it, struct pg_status *st)
{
    size_t max_ids = p->limits->max_stack_depth, max_labels = p->limits->max_labels_per_sample;

    memset(it, 0, sizeof(*it));
    it->r.p = p->buf;
    it->r.end = p->buf + p->len;
    /* Every id takes at least one byte, every label at least two: never
     * allocate more than the input could fill. One extra slot lets the
     * decoder notice "over the limit" without a special case. */
    if (max_ids > p->len) {
        max_ids = p->len;
    }
    if (max_labels > p->len / 2) {
        max_labels = p->len / 2;
    }
    it->cap_locations = max_ids;
    it->cap_labels = max_labels;
    it->s.location_ids = pg_arena_alloc(a, (max_ids + 1) * sizeof(uint64_t));
    it->s.labels = pg_arena_alloc(a, (max_labels + 1) * sizeof(struct pg_pprof_label));
    if (it->s.location_ids == NULL || it->s.labels == NULL) {
        return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "pprof: no memory for the sample decoder");
    }
    return PG_ERR_OK;
}

static enum pg_err too_deep(const struct pg_pprof *p, size_t si, struct pg_status *st);

/* Appends the packed ids in @sub to s->location_ids. */
static enum pg_err decode_packed_locations(const struct pg_pprof *p,
                                           struct pg_pprof_sample_iter *it, struct pg_pb sub,
                                           size_t si, struct pg_status *st)
{
    struct pg_pprof_sample *s = &it->s;
    uint64_t v;

    while (sub.p < sub.end) {
        if (!pg_pb_varint(&sub, &v)) {
            return bad(st, "packed sample.location_id", p, sub.p);
        }
        if (s->n_locations >= it->cap_locations) {
            return too_deep(p, si, st);
        }
        s->location_ids[s->n_locations++] = v;
    }
    return PG_ERR_OK;
}

/* Lazy mode: decodes the packed field held back by pg_pprof_next_sample. */
static enum pg_err flush_pending(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                 size_t si, struct pg_status *st)
{
    struct pg_pprof_sample *s = &it->s;
    struct pg_pb sub;

    if (s->loc_packed == NULL) {
        return PG_ERR_OK;
    }
    sub.p = s->loc_packed;
    sub.end = s->loc_packed + s->loc_packed_len;
    s->loc_packed = NULL;
    s->loc_packed_len = 0;
    return decode_packed_locations(p, it, sub, si, st);
}

enum pg_err pg_pprof_sample_locations(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                      struct pg_status *st)
{
    return flush_pending(p, it, it->index > 0 ? it->index - 1 : 0, st);
}

/* Labels are the hottest message (several per sample): decoded inline
 * rather than through decode_varints(). */
static enum pg_err decode_label(const struct pg_pprof *p, struct pg_pb r, size_t si,
                                struct pg_pprof_label *l, struct pg_status *st)
{
    static const char *const names[5] = {NULL, "key", "str", "num", "num_unit"};
    memset(l, 0, sizeof(*l));
    if (r.end - r.p >= 4 && r.p[0] == 0x08) {
        /* Fast path for the usual shape, {key, str} with 1-2 byte varints
         * (trace and span ids sit past string 127): same result as the loop. */
        struct pg_pb q = {r.p + 1, r.end};
        uint64_t k, v;
        if (pg_pb_varint(&q, &k) && q.p < q.end && q.p[0] == 0x10) {
            q.p++;
            if (pg_pb_varint(&q, &v) && q.p == q.end) {
                l->key = (int64_t)k;
                l->str = (int64_t)v;
                r.p = r.end;
            }
        }
    }
    while (r.p < r.end) {
        uint32_t f, wt;
        uint64_t v;
        const uint8_t *at = r.p;
        if (!pg_pb_tag(&r, &f, &wt)) {
            return bad(st, "label", p, at);
        }
        if (f < 1 || f > 4) {
            if (!pg_pb_skip(&r, wt)) {
                return bad(st, "label", p, at);
            }
            continue;
        }
        if (wt != PG_PB_VARINT) {
            return wrong_wt(st, "Label", names[f], wt);
        }
        if (!pg_pb_varint(&r, &v)) {
            return bad(st, "label", p, at);
        }
        switch (f) {
        case 1: l->key = (int64_t)v; break;
        case 2: l->str = (int64_t)v; break;
        case 3: l->num = (int64_t)v; break;
        default: l->num_unit = (int64_t)v; break;
        }
    }
    if (!str_ok(p, l->key) || !str_ok(p, l->str) || !str_ok(p, l->num_unit)) {
        int64_t idx = !str_ok(p, l->key) ? l->key : !str_ok(p, l->str) ? l->str : l->num_unit;
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "pprof: sample #%zu: label string index %lld out of range "
                             "(string_table has %zu entries)",
                             si, (long long)idx, p->n_strings);
    }
    return PG_ERR_OK;
}

static enum pg_err too_deep(const struct pg_pprof *p, size_t si, struct pg_status *st)
{
    return pg_status_set(st, PG_ERR_LIMIT,
                         "pprof: sample #%zu has more than %zu locations (limit max_stack_depth)",
                         si, p->limits->max_stack_depth);
}

/* One- or two-byte varint at *@q (before @end); false for anything longer or truncated. */
static inline bool small_varint(const uint8_t **q, const uint8_t *end, uint64_t *v)
{
    const uint8_t *c = *q;

    if (c < end && c[0] < 0x80) {
        *v = c[0];
        *q = c + 1;
        return true;
    }
    if (end - c >= 2 && c[1] < 0x80) {
        *v = (uint64_t)(c[0] & 0x7f) | (uint64_t)c[1] << 7;
        *q = c + 2;
        return true;
    }
    return false;
}

/* A varint of up to eight bytes that must end before @end, by one 8-byte load at *@q (the
 * caller guarantees *@q + 8 <= @readable: bytes past @end are masked off, never used).
 * Sample values (nanoseconds, bytes) are 3-5 byte varints, which the bytewise loop in
 * pg_pb_varint decodes at ~70 instructions. False when longer or past @end. */
static inline bool varint_word(const uint8_t **q, const uint8_t *end, uint64_t *v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w, m, x;
    size_t n;

    memcpy(&w, *q, 8);
    m = ~w & 0x8080808080808080ull; /* the stop bit of each byte that ends a varint */
    if (m == 0) {
        return false;
    }
    n = ((size_t)__builtin_ctzll(m) + 1) >> 3;
    if (n > (size_t)(end - *q)) {
        return false;
    }
    /* keep the bytes up to the first stop, then squeeze out every byte's top bit */
    x = w & (m ^ (m - 1)) & 0x7f7f7f7f7f7f7f7full;
    x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
    x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
    x = (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
    *q += n;
    *v = x;
    return true;
#else
    (void)q;
    (void)end;
    (void)v;
    return false;
#endif
}

/* memcmp(a, b, n) == 0 for the short runs compared per sample (a sample's label bytes,
 * under 128), eight bytes per step, inline: the libc call cost more than the compare. */
static inline bool same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint64_t d = 0, x, y;
    size_t i = 0;

    for (; n - i >= 8; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        d |= x ^ y;
        if (d != 0) {
            return false;
        }
    }
    if (i < n) {
        if (n >= 8) { /* the last eight bytes, overlapping what was compared */
            memcpy(&x, a + n - 8, 8);
            memcpy(&y, b + n - 8, 8);
            d = x ^ y;
        } else {
            for (; i < n; i++) {
                d |= (uint64_t)(a[i] ^ b[i]);
            }
        }
    }
    return d == 0;
}

/* Length-delimited field with a one-byte tag @tag and a one-byte length at *@q. */
static inline bool short_len(const uint8_t **q, const uint8_t *end, uint8_t tag,
                             struct pg_pb *sub)
{
    const uint8_t *c = *q;

    if (end - c < 2 || !short_tag(c, tag) || c[1] > end - c - 2) {
        return false;
    }
    sub->p = c + 2;
    sub->end = sub->p + c[1];
    *q = sub->end;
    return true;
}

/* @l becomes the string label @k = @v (indexes into the string table). */
static inline void string_label(struct pg_pprof_label *l, uint64_t k, uint64_t v)
{
    l->key = (int64_t)k;
    l->str = (int64_t)v;
    l->num = 0;
    l->num_unit = 0;
}

/* The shape every SDK and Go's runtime/pprof write, in lazy-locations mode: one packed
 * location_id field, one packed value field holding exactly n_sample_types values, then
 * labels of the form {key, str} with one- or two-byte varints, all with one-byte lengths.
 * Fills it->s exactly as the general loop would; returns false without a trace for
 * anything else (including every malformed input), which the general loop then decodes
 * from the start and reports. */
static bool sample_fast(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                        struct pg_pb r, int64_t *values)
{
    struct pg_pprof_sample *s = &it->s;
    const size_t nt = p->n_sample_types;
    const uint8_t *buf_end = p->buf + p->len; /* readable, for varint_word's whole word */
    struct pg_pb sub;
    size_t nv = 0, nl = 0;
    uint64_t v;
    const uint8_t *lab0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint8_t *vb;
    size_t vlen;
#endif

    if (!short_len(&r.p, r.end, 0x0a, &sub)) {
        return false;
    }
    s->loc_packed = sub.p;
    s->loc_packed_len = (size_t)(sub.end - sub.p);
    if (!short_len(&r.p, r.end, 0x12, &sub)) {
        return false;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Equal bytes are equal values, and samples often repeat theirs (an SDK's count of 1 and
     * its period): up to eight bytes compare in one load and mask against the last decoded
     * ones, whose values are then copied instead of decoded. */
    vb = sub.p;
    vlen = (size_t)(sub.end - sub.p);
    if (vlen == it->prev_values_len && vlen != 0 && buf_end - sub.p >= 8) {
        uint64_t w;
        memcpy(&w, sub.p, 8);
        if ((w & it->prev_values_mask) == it->prev_values_word) {
            const int64_t *pv = it->prev_values;
            for (size_t k = 0; k < nt; k++) { /* a few values: a libc call would cost more */
                values[k] = pv[k];
            }
            goto values_done;
        }
    }
#endif
    while (sub.p < sub.end) {
        if (nv >= nt) {
            return false;
        }
        if (sub.p[0] < 0x80) {
            v = *sub.p++;
        } else if ((size_t)(buf_end - sub.p) < 8 || !varint_word(&sub.p, sub.end, &v)) {
            if (!pg_pb_varint(&sub, &v)) {
                return false;
            }
        }
        values[nv++] = (int64_t)v;
    }
    if (nv != nt) {
        return false;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    it->prev_values_len = 0;
    if (vlen <= 8 && buf_end - vb >= 8) {
        uint64_t w;
        memcpy(&w, vb, 8);
        it->prev_values = values;
        it->prev_values_mask = vlen == 8 ? ~0ull : (1ull << (8 * vlen)) - 1;
        it->prev_values_word = w & it->prev_values_mask;
        it->prev_values_len = vlen;
    }
values_done:
#endif
    /* Samples of one span often follow each other with the same labels: the decoded ones
     * are still in s->labels. */
    if (it->prev_labels != NULL && (size_t)(r.end - r.p) == it->prev_labels_len &&
        same_bytes(r.p, it->prev_labels, it->prev_labels_len)) {
        s->n_labels = it->s.n_labels;
        s->labels_same = true;
        return true;
    }
    it->prev_labels = NULL;
    it->prev_labels_len = (size_t)(r.end - r.p);
    lab0 = r.p;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* The two label encodings SDKs write, 1a 04 08 k 10 v and 1a 05 08 k 10 v0 v1 (a string
     * index past 127), each matched whole by one 8-byte load. Checked once for the run: every
     * load stays readable and at most (bytes / 6) labels fit under the cap; a label running
     * past the sample's end shows as the end overshot. */
    if (buf_end - r.end >= 8 && (size_t)(r.end - r.p) / 6 <= it->cap_labels) {
        const uint64_t ns = p->n_strings;
        struct pg_pprof_label *l = s->labels;
        const uint8_t *q = r.p;
        while (q < r.end) {
            uint64_t w, k;
            memcpy(&w, q, 8);
            k = (w >> 24) & 0xff;
            if ((w & 0x000080ff80ffffffull) == 0x000000100008041aull) {
                v = (w >> 40) & 0xff;
                q += 6;
            } else if ((w & 0x008080ff80ffffffull) == 0x000080100008051aull) {
                v = ((w >> 40) & 0x7f) | ((w >> 48) & 0xff) << 7;
                q += 7;
            } else {
                break;
            }
            if (k >= ns || v >= ns) {
                return false;
            }
            string_label(l, k, v);
            l++;
        }
        if (q > r.end) {
            return false;
        }
        r.p = q;
        nl = (size_t)(l - s->labels);
    }
#endif
    /* Anything else of the usual shape, one field at a time with every bound checked. */
    while (r.p < r.end) {
        struct pg_pprof_label *l = &s->labels[nl];
        uint64_t k;
        const uint8_t *q;
        if (nl >= it->cap_labels || !short_len(&r.p, r.end, 0x1a, &sub)) {
            return false;
        }
        q = sub.p;
        if (q >= sub.end || *q++ != 0x08 || !small_varint(&q, sub.end, &k) || q >= sub.end ||
            *q++ != 0x10 || !small_varint(&q, sub.end, &v) || q != sub.end ||
            k >= p->n_strings || v >= p->n_strings) {
            return false;
        }
        string_label(l, k, v);
        nl++;
    }
    s->n_labels = nl;
    it->prev_labels = lab0;
    return true;
}

static enum pg_err sample_general(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                  struct pg_pb r, int64_t *values, struct pg_status *st);

enum pg_err pg_pprof_next_sample(const struct pg_pprof *p, struct pg_pprof_sample_iter *it,
                                 int64_t *values, bool *done, struct pg_status *st)
{
    struct pg_pprof_sample *s = &it->s;
    struct pg_pb r;

    *done = false;
    if (it->r.p >= p->sample_run && it->r.p < p->sample_run_end) {
        /* inside the run the count pass framed: every field is a sample that fits */
        r.p = it->r.p + 2;
        r.end = r.p + it->r.p[1];
        it->r.p = r.end;
        goto found;
    }
    /* Find the next sample field (framing was validated by the count pass). */
    for (;;) {
        uint32_t f, wt;
        const uint8_t *at = it->r.p;
        if (short_len(&it->r.p, it->r.end, 0x12, &r)) {
            break; /* field 2 (sample) with a one-byte length: the usual case */
        }
        if (it->r.p >= it->r.end) {
            *done = true;
            return PG_ERR_OK;
        }
        if (!pg_pb_tag(&it->r, &f, &wt)) {
            return bad(st, "field tag", p, at);
        }
        if (f == 2 && wt == PG_PB_LEN) {
            if (!pg_pb_len(&it->r, &r)) {
                return bad(st, "sample", p, at);
            }
            break;
        }
        if (!pg_pb_skip(&it->r, wt)) {
            return bad(st, "field", p, at);
        }
    }
found:
    s->n_locations = 0;
    s->values = values;
    s->labels_same = false;
    if (it->lazy_locations && sample_fast(p, it, r, values)) {
        it->index++;
        return PG_ERR_OK;
    }
    return sample_general(p, it, r, values, st);
}

/* Any sample shape, with every check and error message; out of line so the fast path's
 * caller stays small. */
__attribute__((noinline)) static enum pg_err sample_general(const struct pg_pprof *p,
                                                            struct pg_pprof_sample_iter *it,
                                                            struct pg_pb r, int64_t *values,
                                                            struct pg_status *st)
{
    struct pg_pprof_sample *s = &it->s;
    const size_t nt = p->n_sample_types;
    size_t nv = 0, si = it->index;
    enum pg_err err;

    it->prev_labels = NULL; /* the general loop overwrites s->labels */
    it->prev_values_len = 0;
    s->n_labels = 0;
    s->loc_packed = NULL;
    s->loc_packed_len = 0;
    while (r.p < r.end) {
        uint32_t f, wt;
        uint64_t v;
        struct pg_pb sub;
        const uint8_t *at = r.p;

        if (!pg_pb_tag(&r, &f, &wt)) {
            return bad(st, "sample", p, at);
        }
        if (f == 1) {
            if (wt == PG_PB_VARINT) {
                if ((err = flush_pending(p, it, si, st)) != PG_ERR_OK) {
                    return err;
                }
                if (!pg_pb_varint(&r, &v)) {
                    return bad(st, "sample.location_id", p, at);
                }
                if (s->n_locations >= it->cap_locations) {
                    return too_deep(p, si, st);
                }
                s->location_ids[s->n_locations++] = v;
            } else if (wt == PG_PB_LEN) {
                if (!pg_pb_len(&r, &sub)) {
                    return bad(st, "sample.location_id", p, at);
                }
                if (it->lazy_locations && s->n_locations == 0 && s->loc_packed == NULL) {
                    s->loc_packed = sub.p; /* decoded on demand: the caller may know it */
                    s->loc_packed_len = (size_t)(sub.end - sub.p);
                    continue;
                }
                if ((err = flush_pending(p, it, si, st)) != PG_ERR_OK ||
                    (err = decode_packed_locations(p, it, sub, si, st)) != PG_ERR_OK) {
                    return err;
                }
            } else {
                return wrong_wt(st, "Sample", "location_id", wt);
            }
        } else if (f == 2) {
            if (wt == PG_PB_VARINT) {
                if (!pg_pb_varint(&r, &v)) {
                    return bad(st, "sample.value", p, at);
                }
                if (nv < nt) {
                    values[nv] = (int64_t)v;
                }
                nv++;
            } else if (wt == PG_PB_LEN) {
                if (!pg_pb_len(&r, &sub)) {
                    return bad(st, "sample.value", p, at);
                }
                while (sub.p < sub.end) {
                    if (!pg_pb_varint(&sub, &v)) {
                        return bad(st, "packed sample.value", p, sub.p);
                    }
                    if (nv < nt) {
                        values[nv] = (int64_t)v;
                    }
                    nv++;
                }
            } else {
                return wrong_wt(st, "Sample", "value", wt);
            }
        } else if (f == 3) {
            if (wt != PG_PB_LEN) {
                return wrong_wt(st, "Sample", "label", wt);
            }
            if (!pg_pb_len(&r, &sub)) {
                return bad(st, "sample.label", p, at);
            }
            if (s->n_labels >= it->cap_labels) {
                return pg_status_set(st, PG_ERR_LIMIT,
                                     "pprof: sample #%zu has more than %zu labels (limit "
                                     "max_labels_per_sample)",
                                     si, p->limits->max_labels_per_sample);
            }
            if ((err = decode_label(p, sub, si, &s->labels[s->n_labels], st)) != PG_ERR_OK) {
                return err;
            }
            s->n_labels++;
        } else if (!pg_pb_skip(&r, wt)) {
            return bad(st, "sample", p, at);
        }
    }
    if (nv != nt) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "pprof: sample #%zu has %zu values, want %zu (one per sample type)",
                             si, nv, nt);
    }
    it->index++;
    return PG_ERR_OK;
}
