/* SPDX-License-Identifier: Apache-2.0
 * pprof decoder: a counting pass sizes every array exactly (limits are
 * checked before anything is allocated), a filling pass decodes the small
 * tables, then ids are indexed and every cross-reference and string index is
 * validated. Samples stay encoded and are streamed by pg_pprof_next_sample(). */
#include "pprof/pprof_decode.h"
#include "pprof/pprof_decode_internal.h"

#include <string.h>

static const char *const k_profile_fields[16] = {
    NULL,          "sample_type", "sample",         "mapping",     "location", "function",
    "string_table", "drop_frames", "keep_frames",   "time_nanos",  "duration_nanos",
    "period_type", "period",      "comment",        "default_sample_type", "doc_url"};

/* ---- small messages ------------------------------------------------------ */

static enum pg_err decode_value_type(const struct pg_pprof *p, struct pg_pb r, const char *field,
                                     struct pg_pprof_vt *vt, struct pg_status *st)
{
    while (r.p < r.end) {
        uint32_t f, wt;
        uint64_t v;
        const uint8_t *at = r.p;
        if (!pg_pb_tag(&r, &f, &wt)) {
            return pg_pprof_err_bad(st, field, p, at);
        }
        if (f == 1 || f == 2) {
            if (wt != PG_PB_VARINT) {
                return pg_pprof_err_wrong_wt(st, "ValueType", f == 1 ? "type" : "unit", wt);
            }
            if (!pg_pb_varint(&r, &v)) {
                return pg_pprof_err_bad(st, field, p, at);
            }
            if (f == 1) {
                vt->type = (int64_t)v;
            } else {
                vt->unit = (int64_t)v;
            }
        } else if (!pg_pb_skip(&r, wt)) {
            return pg_pprof_err_bad(st, field, p, at);
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
            return pg_pprof_err_bad(st, "location", p, at);
        }
        if (f == 4) {
            if (wt != PG_PB_LEN) {
                return pg_pprof_err_wrong_wt(st, "Location", "line", wt);
            }
            n_lines++;
        }
    }
    if (n_lines > p->limits->max_stack_depth) {
        return pg_pprof_err_over(st, "lines in one location", n_lines, "max_stack_depth",
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
            return pg_pprof_err_bad(st, "location", p, at);
        }
        if (f < 1 || f > 5) {
            if (!pg_pb_skip(&r, wt)) {
                return pg_pprof_err_bad(st, "location", p, at);
            }
            continue;
        }
        if (f == 4) {
            if (!pg_pb_len(&r, &sub)) {
                return pg_pprof_err_bad(st, "location", p, at);
            }
            if ((err = decode_line(p, sub, &l->lines[li++], st)) != PG_ERR_OK) {
                return err;
            }
            continue;
        }
        if (wt != PG_PB_VARINT) {
            return pg_pprof_err_wrong_wt(st, "Location", names[f], wt);
        }
        if (!pg_pb_varint(&r, &v)) {
            return pg_pprof_err_bad(st, "location", p, at);
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
            return pg_pprof_err_bad(st, "field tag", p, at);
        }
        if (f >= 1 && f <= 15) {
            bool len_field = (f >= 1 && f <= 6) || f == 11;
            if (f == 13) {
                if (wt != PG_PB_VARINT && wt != PG_PB_LEN) {
                    return pg_pprof_err_wrong_wt(st, "Profile", k_profile_fields[f], wt);
                }
            } else if (len_field ? wt != PG_PB_LEN : wt != PG_PB_VARINT) {
                return pg_pprof_err_wrong_wt(st, "Profile", k_profile_fields[f], wt);
            }
        }
        if (wt == PG_PB_LEN) {
            if (!pg_pb_len(&r, &sub)) {
                return pg_pprof_err_bad(st, f <= 15 && f >= 1 ? k_profile_fields[f] : "field", p,
                                        at);
            }
        } else if (!pg_pb_skip(&r, wt)) {
            return pg_pprof_err_bad(st, f <= 15 && f >= 1 ? k_profile_fields[f] : "field", p, at);
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
                    return pg_pprof_err_bad(st, "packed comment", p, at);
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
        return pg_pprof_err_over(st, "sample types", c->sample_types, "max_sample_types",
                                 l->max_sample_types);
    }
    if (c->samples > l->max_samples) {
        return pg_pprof_err_over(st, "samples", c->samples, "max_samples", l->max_samples);
    }
    if (c->sample_types > 0 && c->samples > l->max_samples / c->sample_types) {
        return pg_status_set(st, PG_ERR_LIMIT,
                             "pprof: %zu samples x %zu sample types exceed the limit max_samples "
                             "(%zu sample records)",
                             c->samples, c->sample_types, l->max_samples);
    }
    if (c->mappings > l->max_mappings) {
        return pg_pprof_err_over(st, "mappings", c->mappings, "max_mappings", l->max_mappings);
    }
    if (c->locations > l->max_locations) {
        return pg_pprof_err_over(st, "locations", c->locations, "max_locations", l->max_locations);
    }
    if (c->functions > l->max_functions) {
        return pg_pprof_err_over(st, "functions", c->functions, "max_functions", l->max_functions);
    }
    if (c->strings > l->max_strings) {
        return pg_pprof_err_over(st, "strings", c->strings, "max_strings", l->max_strings);
    }
    if (c->string_bytes > l->max_string_bytes) {
        return pg_pprof_err_over(st, "string bytes", c->string_bytes, "max_string_bytes",
                                 l->max_string_bytes);
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
                sp[k].off = (uint32_t)(q + 2 - p->buf);
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
                    sp->off = (uint32_t)(r.p + 2 - p->buf);
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
            return pg_pprof_err_bad(st, "field tag", p, at);
        }
        if (wt == PG_PB_LEN) {
            if (!pg_pb_len(&r, &sub)) {
                return pg_pprof_err_bad(st, "field", p, at);
            }
        } else if (wt == PG_PB_VARINT) {
            if (!pg_pb_varint(&r, &v)) {
                return pg_pprof_err_bad(st, "field", p, at);
            }
        } else if (!pg_pb_skip(&r, wt)) {
            return pg_pprof_err_bad(st, "field", p, at);
        }
        switch (f) {
        case 1:
            err = decode_value_type(p, sub, "sample_type", &p->sample_types[it++], st);
            break;
        case 3: err = decode_mapping(p, sub, &p->mappings[im++], st); break;
        case 4: err = decode_location(a, p, sub, &p->locations[il++], st); break;
        case 5: err = decode_function(p, sub, &p->functions[ifn++], st); break;
        case 6:
            p->strings[is].off = (uint32_t)(sub.p - p->buf);
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
                        return pg_pprof_err_bad(st, "packed comment", p, sub.p);
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
            return pg_pprof_err_bad_str(st, p, "sample_type.type", p->sample_types[i].type);
        }
        if (!str_ok(p, p->sample_types[i].unit)) {
            return pg_pprof_err_bad_str(st, p, "sample_type.unit", p->sample_types[i].unit);
        }
    }
    if (!str_ok(p, p->period_type.type)) {
        return pg_pprof_err_bad_str(st, p, "period_type.type", p->period_type.type);
    }
    if (!str_ok(p, p->period_type.unit)) {
        return pg_pprof_err_bad_str(st, p, "period_type.unit", p->period_type.unit);
    }
    if (!str_ok(p, p->drop_frames)) {
        return pg_pprof_err_bad_str(st, p, "drop_frames", p->drop_frames);
    }
    if (!str_ok(p, p->keep_frames)) {
        return pg_pprof_err_bad_str(st, p, "keep_frames", p->keep_frames);
    }
    if (!str_ok(p, p->doc_url)) {
        return pg_pprof_err_bad_str(st, p, "doc_url", p->doc_url);
    }
    if (!str_ok(p, p->default_sample_type)) {
        return pg_pprof_err_bad_str(st, p, "default_sample_type", p->default_sample_type);
    }
    for (size_t i = 0; i < p->n_comments; i++) {
        if (!str_ok(p, p->comments[i])) {
            return pg_pprof_err_bad_str(st, p, "comment", p->comments[i]);
        }
    }
    for (size_t i = 0; i < p->n_mappings; i++) {
        if (!str_ok(p, p->mappings[i].filename)) {
            return pg_pprof_err_bad_str(st, p, "mapping.filename", p->mappings[i].filename);
        }
        if (!str_ok(p, p->mappings[i].build_id)) {
            return pg_pprof_err_bad_str(st, p, "mapping.build_id", p->mappings[i].build_id);
        }
    }
    for (size_t i = 0; i < p->n_functions; i++) {
        const struct pg_pprof_function *f = &p->functions[i];
        if (!str_ok(p, f->name)) {
            return pg_pprof_err_bad_str(st, p, "function.name", f->name);
        }
        if (!str_ok(p, f->system_name)) {
            return pg_pprof_err_bad_str(st, p, "function.system_name", f->system_name);
        }
        if (!str_ok(p, f->filename)) {
            return pg_pprof_err_bad_str(st, p, "function.filename", f->filename);
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
    if (len > UINT32_MAX) { /* string offsets are 32 bits */
        return pg_status_set(st, PG_ERR_LIMIT, "pprof: %zu bytes, more than 4 GiB", len);
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
