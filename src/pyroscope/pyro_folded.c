/* SPDX-License-Identifier: Apache-2.0
 * Converts Pyroscope's text uploads, `folded` ("a;b;c 42" per line) and `lines` (one stack
 * per line, each counting 1), into an encoded pprof Profile: one Function + Location per
 * distinct frame name, one Sample per distinct stack (leaf first) with the summed count.
 * Reads the text once, then sizes and writes the message exactly; all in the caller's arena. */
#include "pyroscope/pyro_folded.h"

#include <stdbool.h>
#include <string.h>

#include "core/pb_wire.h"
#include "core/vec.h"

struct frame {
    const uint8_t *p; /* the name, in the text */
    uint32_t len;
    uint64_t hash;
};

struct stack {
    size_t off;     /* first location id (root first) in cv.locs */
    uint32_t depth;
    int64_t value;
    uint64_t hash;
};

struct conv {
    struct pg_arena *a;
    PG_VEC(struct frame) frames;   /* id - 1 -> frame */
    uint32_t *frame_tab;           /* open addressing: id, 0 empty */
    size_t frame_mask;
    PG_VEC(uint32_t) locs;         /* every stack's ids, root first */
    PG_VEC(struct stack) stacks;
    uint32_t *stack_tab;           /* open addressing: stack index + 1, 0 empty */
    size_t stack_mask;
    size_t line;                   /* 1-based, blank lines counted, for messages */
    struct pg_status *st;
};

static enum pg_err out_of_memory(struct conv *cv)
{
    if (pg_arena_hit_cap(cv->a)) {
        return pg_status_set(cv->st, PG_ERR_LIMIT,
                             "folded: the request's memory cap was reached at line %zu",
                             cv->line);
    }
    return pg_status_set(cv->st, PG_ERR_NOMEM, "folded: out of memory at line %zu", cv->line);
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static uint64_t hash_ids(const uint32_t *ids, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ ids[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

/* A new table of 2 * @need slots rounded up to a power of two, zeroed. */
static uint32_t *table_new(struct pg_arena *a, size_t need, size_t *mask)
{
    size_t cap = 64;
    while (cap < need * 2) {
        cap *= 2;
    }
    *mask = cap - 1;
    return pg_arena_calloc(a, cap, sizeof(uint32_t));
}

/* The id of frame @p[0..n), added when new. 0 on out of memory. */
static uint32_t frame_id(struct conv *cv, const uint8_t *p, size_t n)
{
    uint64_t h = hash_bytes(p, n);

    for (size_t i = h & cv->frame_mask;; i = (i + 1) & cv->frame_mask) {
        uint32_t id = cv->frame_tab[i];
        if (id == 0) {
            break;
        }
        const struct frame *f = &cv->frames.v[id - 1];
        if (f->hash == h && f->len == n && memcmp(f->p, p, n) == 0) {
            return id;
        }
    }
    if (cv->frames.n >= UINT32_MAX - 1 ||
        !PG_VEC_GROW(cv->a, cv->frames.v, cv->frames.cap, cv->frames.n, 256, 0)) {
        return 0;
    }
    cv->frames.v[cv->frames.n] = (struct frame){p, (uint32_t)n, h};
    uint32_t id = (uint32_t)++cv->frames.n;
    if (cv->frames.n * 2 > cv->frame_mask) {
        size_t mask;
        uint32_t *t = table_new(cv->a, cv->frames.n, &mask);
        if (t == NULL) {
            return 0;
        }
        for (size_t k = 0; k < cv->frames.n; k++) {
            size_t i = cv->frames.v[k].hash & mask;
            while (t[i] != 0) {
                i = (i + 1) & mask;
            }
            t[i] = (uint32_t)(k + 1);
        }
        cv->frame_tab = t;
        cv->frame_mask = mask;
        return id;
    }
    size_t i = h & cv->frame_mask;
    while (cv->frame_tab[i] != 0) {
        i = (i + 1) & cv->frame_mask;
    }
    cv->frame_tab[i] = id;
    return id;
}

/* Files the stack of ids cv->locs[off..] with @value: summed into an equal stack seen before
 * (its ids dropped again), else a new Sample. */
static enum pg_err add_stack(struct conv *cv, size_t off, int64_t value)
{
    uint32_t depth = (uint32_t)(cv->locs.n - off);
    const uint32_t *ids = cv->locs.v + off;
    uint64_t h = hash_ids(ids, depth);

    for (size_t i = h & cv->stack_mask;; i = (i + 1) & cv->stack_mask) {
        uint32_t s = cv->stack_tab[i];
        if (s == 0) {
            break;
        }
        struct stack *k = &cv->stacks.v[s - 1];
        if (k->hash == h && k->depth == depth &&
            memcmp(cv->locs.v + k->off, ids, depth * sizeof(*ids)) == 0) {
            if (k->value > INT64_MAX - value) {
                return pg_status_set(cv->st, PG_ERR_MALFORMED,
                                     "folded: line %zu: the counts of one stack add up past "
                                     "the int64 range", cv->line);
            }
            k->value += value;
            cv->locs.n = off;
            return PG_ERR_OK;
        }
    }
    if (cv->stacks.n >= UINT32_MAX - 1 ||
        !PG_VEC_GROW(cv->a, cv->stacks.v, cv->stacks.cap, cv->stacks.n, 256, 0)) {
        return out_of_memory(cv);
    }
    cv->stacks.v[cv->stacks.n++] = (struct stack){off, depth, value, h};
    if (cv->stacks.n * 2 > cv->stack_mask) {
        size_t mask;
        uint32_t *t = table_new(cv->a, cv->stacks.n, &mask);
        if (t == NULL) {
            return out_of_memory(cv);
        }
        for (size_t k = 0; k < cv->stacks.n; k++) {
            size_t i = cv->stacks.v[k].hash & mask;
            while (t[i] != 0) {
                i = (i + 1) & mask;
            }
            t[i] = (uint32_t)(k + 1);
        }
        cv->stack_tab = t;
        cv->stack_mask = mask;
        return PG_ERR_OK;
    }
    size_t i = h & cv->stack_mask;
    while (cv->stack_tab[i] != 0) {
        i = (i + 1) & cv->stack_mask;
    }
    cv->stack_tab[i] = (uint32_t)cv->stacks.n;
    return PG_ERR_OK;
}

/* The count after a folded line's last space: digits only, within int64. */
static enum pg_err parse_count(struct conv *cv, const uint8_t *p, const uint8_t *e, int64_t *out)
{
    int64_t v = 0;

    if (p == e) {
        return pg_status_set(cv->st, PG_ERR_MALFORMED,
                             "folded: line %zu: no count after the last space (want \"a;b;c 42\")",
                             cv->line);
    }
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') {
            return pg_status_set(cv->st, PG_ERR_MALFORMED,
                                 "folded: line %zu: the count is not a non-negative integer "
                                 "(byte 0x%02x)", cv->line, (unsigned)*p);
        }
        int d = *p - '0';
        if (v > (INT64_MAX - d) / 10) {
            return pg_status_set(cv->st, PG_ERR_MALFORMED,
                                 "folded: line %zu: the count does not fit int64", cv->line);
        }
        v = v * 10 + d;
    }
    *out = v;
    return PG_ERR_OK;
}

/* One non-blank line [b, e) (line end, trailing CR and blanks already cut). */
static enum pg_err add_line(struct conv *cv, const uint8_t *b, const uint8_t *e,
                            enum pg_pyro_text_format fmt, const struct pg_pyro_folded_opts *o,
                            size_t max_depth, size_t max_frame)
{
    const uint8_t *stack_end = e;
    int64_t count = 1;
    enum pg_err err;

    if (fmt == PG_PYRO_FOLDED) {
        const uint8_t *sp = e;
        while (sp > b && sp[-1] != ' ') {
            sp--;
        }
        if (sp == b) {
            return pg_status_set(cv->st, PG_ERR_MALFORMED,
                                 "folded: line %zu has no count (want \"a;b;c 42\")", cv->line);
        }
        if ((err = parse_count(cv, sp, e, &count)) != PG_ERR_OK) {
            return err;
        }
        stack_end = sp - 1;
    }
    if (o->scale > 1) {
        if (count > INT64_MAX / o->scale) {
            return pg_status_set(cv->st, PG_ERR_MALFORMED,
                                 "folded: line %zu: the count times %lld does not fit int64",
                                 cv->line, (long long)o->scale);
        }
        count *= o->scale;
    }
    size_t off = cv->locs.n, depth = 0;
    const uint8_t *fb = b;
    for (const uint8_t *p = b;; p++) {
        if (p < stack_end && *p != ';') {
            continue;
        }
        size_t n = (size_t)(p - fb);
        if (n == 0) {
            return pg_status_set(cv->st, PG_ERR_MALFORMED,
                                 "folded: line %zu: empty frame name at byte %zu of the line",
                                 cv->line, (size_t)(fb - b) + 1);
        }
        if (n > max_frame) {
            return pg_status_set(cv->st, PG_ERR_LIMIT,
                                 "folded: line %zu: a frame name of %zu bytes, over the cap of %zu",
                                 cv->line, n, max_frame);
        }
        if (++depth > max_depth) {
            return pg_status_set(cv->st, PG_ERR_LIMIT,
                                 "folded: line %zu: more than %zu frames in one stack", cv->line,
                                 max_depth);
        }
        uint32_t id = frame_id(cv, fb, n);
        if (id == 0 || !PG_VEC_GROW(cv->a, cv->locs.v, cv->locs.cap, cv->locs.n, 1024, 0)) {
            return out_of_memory(cv);
        }
        cv->locs.v[cv->locs.n++] = id;
        if (p >= stack_end) {
            break;
        }
        fb = p + 1;
    }
    if (count == 0) {
        cv->locs.n = off; /* a zero count carries nothing: no Sample */
        return PG_ERR_OK;
    }
    return add_stack(cv, off, count);
}

/* ---- encoding: sizes first, then one exact buffer ---- */

static size_t vlen(uint64_t v)
{
    return pg_pb_varint_len(v);
}

/* A varint field, skipped when 0 (proto3 default). */
static size_t size_vfield(uint64_t v)
{
    return v != 0 ? 1 + vlen(v) : 0;
}

static uint8_t *put_vfield(uint8_t *p, uint32_t field, uint64_t v)
{
    if (v == 0) {
        return p;
    }
    p = pg_pb_put_varint(p, pg_pb_key(field, PG_PB_VARINT));
    return pg_pb_put_varint(p, v);
}

static uint8_t *put_lenhdr(uint8_t *p, uint32_t field, size_t len)
{
    p = pg_pb_put_varint(p, pg_pb_key(field, PG_PB_LEN));
    return pg_pb_put_varint(p, len);
}

static size_t size_msg(size_t body)
{
    return 1 + vlen(body) + body;
}

static uint8_t *put_bytes(uint8_t *p, uint32_t field, const void *s, size_t n)
{
    p = put_lenhdr(p, field, n);
    memcpy(p, s, n);
    return p + n;
}

/* String-table indexes of the fixed strings: "" is 0, then the ones given. */
struct strs {
    const char *s[4];
    size_t n;
    int64_t st_type, st_unit, pt_type, pt_unit;
};

static int64_t add_str(struct strs *t, const char *s)
{
    if (s == NULL || s[0] == '\0') {
        return 0;
    }
    t->s[t->n] = s;
    return (int64_t)++t->n;
}

static size_t vt_body(int64_t type, int64_t unit)
{
    return size_vfield((uint64_t)type) + size_vfield((uint64_t)unit);
}

static uint8_t *put_vt(uint8_t *p, uint32_t field, int64_t type, int64_t unit)
{
    p = put_lenhdr(p, field, vt_body(type, unit));
    p = put_vfield(p, 1, (uint64_t)type);
    return put_vfield(p, 2, (uint64_t)unit);
}

static size_t sample_locs_len(const struct conv *cv, const struct stack *k)
{
    size_t n = 0;
    for (uint32_t j = 0; j < k->depth; j++) {
        n += vlen(cv->locs.v[k->off + j]);
    }
    return n;
}

static size_t sample_body(const struct conv *cv, const struct stack *k, size_t *locs_len)
{
    *locs_len = sample_locs_len(cv, k);
    return size_msg(*locs_len) + size_msg(vlen((uint64_t)k->value));
}

static size_t location_body(uint32_t id)
{
    return size_vfield(id) + size_msg(size_vfield(id));
}

static size_t function_body(uint32_t id, int64_t name)
{
    return size_vfield(id) + 2 * size_vfield((uint64_t)name);
}

static enum pg_err encode(struct conv *cv, const struct pg_pyro_folded_opts *o, uint8_t **out,
                          size_t *out_len)
{
    struct strs t = {0};
    bool period_type = o->period_type != NULL && o->period_unit != NULL;

    t.st_type = add_str(&t, o->sample_type != NULL ? o->sample_type : "samples");
    t.st_unit = add_str(&t, o->sample_unit != NULL ? o->sample_unit : "count");
    if (period_type) {
        t.pt_type = add_str(&t, o->period_type);
        t.pt_unit = add_str(&t, o->period_unit);
    }
    int64_t name0 = (int64_t)t.n + 1; /* frame id i is named by string name0 + i - 1 */

    size_t total = size_msg(vt_body(t.st_type, t.st_unit));
    for (size_t i = 0; i < cv->stacks.n; i++) {
        size_t ll;
        total += size_msg(sample_body(cv, &cv->stacks.v[i], &ll));
    }
    for (uint32_t id = 1; id <= cv->frames.n; id++) {
        total += size_msg(location_body(id)) +
                 size_msg(function_body(id, name0 + id - 1)) +
                 size_msg(cv->frames.v[id - 1].len);
    }
    total += size_msg(0);
    for (size_t i = 0; i < t.n; i++) {
        total += size_msg(strlen(t.s[i]));
    }
    total += size_vfield((uint64_t)o->time_nanos) + size_vfield((uint64_t)o->duration_nanos);
    if (period_type) {
        total += size_msg(vt_body(t.pt_type, t.pt_unit));
    }
    total += size_vfield((uint64_t)o->period);

    uint8_t *buf = pg_arena_alloc(cv->a, total ? total : 1), *p = buf;
    if (buf == NULL) {
        return out_of_memory(cv);
    }
    p = put_vt(p, 1, t.st_type, t.st_unit);
    for (size_t i = 0; i < cv->stacks.n; i++) {
        const struct stack *k = &cv->stacks.v[i];
        size_t ll, body = sample_body(cv, k, &ll);
        p = put_lenhdr(p, 2, body);
        p = put_lenhdr(p, 1, ll);
        for (uint32_t j = k->depth; j-- > 0;) { /* leaf first */
            p = pg_pb_put_varint(p, cv->locs.v[k->off + j]);
        }
        p = put_lenhdr(p, 2, vlen((uint64_t)k->value));
        p = pg_pb_put_varint(p, (uint64_t)k->value);
    }
    for (uint32_t id = 1; id <= cv->frames.n; id++) {
        p = put_lenhdr(p, 4, location_body(id));
        p = put_vfield(p, 1, id);
        p = put_lenhdr(p, 4, size_vfield(id));
        p = put_vfield(p, 1, id); /* Line.function_id */
    }
    for (uint32_t id = 1; id <= cv->frames.n; id++) {
        int64_t name = name0 + id - 1;
        p = put_lenhdr(p, 5, function_body(id, name));
        p = put_vfield(p, 1, id);
        p = put_vfield(p, 2, (uint64_t)name);
        p = put_vfield(p, 3, (uint64_t)name); /* system_name, as Pyroscope writes it */
    }
    p = put_lenhdr(p, 6, 0);
    for (size_t i = 0; i < t.n; i++) {
        p = put_bytes(p, 6, t.s[i], strlen(t.s[i]));
    }
    for (uint32_t id = 1; id <= cv->frames.n; id++) {
        p = put_bytes(p, 6, cv->frames.v[id - 1].p, cv->frames.v[id - 1].len);
    }
    p = put_vfield(p, 9, (uint64_t)o->time_nanos);
    p = put_vfield(p, 10, (uint64_t)o->duration_nanos);
    if (period_type) {
        p = put_vt(p, 11, t.pt_type, t.pt_unit);
    }
    p = put_vfield(p, 12, (uint64_t)o->period);
    if ((size_t)(p - buf) != total) {
        return pg_status_set(cv->st, PG_ERR_INTERNAL, "folded: encoded %zu bytes, sized %zu",
                             (size_t)(p - buf), total);
    }
    *out = buf;
    *out_len = total;
    return PG_ERR_OK;
}

enum pg_err pg_pyro_folded_to_pprof(struct pg_arena *a, const uint8_t *text, size_t len,
                                    enum pg_pyro_text_format fmt,
                                    const struct pg_pyro_folded_opts *o, uint8_t **out,
                                    size_t *out_len, struct pg_status *st)
{
    struct conv cv = {.a = a, .st = st};
    size_t max_lines = o->max_lines ? o->max_lines : PG_PYRO_FOLDED_MAX_LINES;
    size_t max_depth = o->max_depth ? o->max_depth : PG_PYRO_FOLDED_MAX_DEPTH;
    size_t max_frame = o->max_frame_bytes ? o->max_frame_bytes : PG_PYRO_FOLDED_MAX_FRAME;
    size_t n_lines = 0;
    const uint8_t *p = text, *end = text + len;

    *out = NULL;
    *out_len = 0;
    if (o->scale < 0 || o->period < 0 || o->time_nanos < 0 || o->duration_nanos < 0) {
        return pg_status_set(st, PG_ERR_INTERNAL, "folded: negative option");
    }
    cv.frame_tab = table_new(a, 32, &cv.frame_mask);
    cv.stack_tab = table_new(a, 32, &cv.stack_mask);
    if (cv.frame_tab == NULL || cv.stack_tab == NULL) {
        return out_of_memory(&cv);
    }
    while (text != NULL && p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *e = nl != NULL ? nl : end;
        cv.line++;
        if (e > p && e[-1] == '\r') {
            e--;
        }
        while (e > p && (e[-1] == ' ' || e[-1] == '\t')) {
            e--;
        }
        if (e > p) {
            if (++n_lines > max_lines) {
                return pg_status_set(st, PG_ERR_LIMIT, "folded: more than %zu stacks (line %zu)",
                                     max_lines, cv.line);
            }
            enum pg_err err = add_line(&cv, p, e, fmt, o, max_depth, max_frame);
            if (err != PG_ERR_OK) {
                return err;
            }
        }
        p = nl != NULL ? nl + 1 : end;
    }
    return encode(&cv, o, out, out_len);
}
