/* SPDX-License-Identifier: Apache-2.0
 * A tiny protobuf writer for building pprof test inputs byte by byte: any
 * field order, packed or unpacked repeated fields, wrong wire types and
 * truncations on purpose. Header-only, for tests, tools and fuzz seeds. */
#ifndef PG_TEST_PPROF_WRITER_H
#define PG_TEST_PPROF_WRITER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pw {
    uint8_t *b;
    size_t n, cap;
};

static inline void pw_raw(struct pw *w, const void *p, size_t n)
{
    if (w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->n + n) {
            cap *= 2;
        }
        w->b = realloc(w->b, cap);
        if (w->b == NULL) {
            abort();
        }
        w->cap = cap;
    }
    if (n > 0) {
        memcpy(w->b + w->n, p, n);
    }
    w->n += n;
}

static inline void pw_varint(struct pw *w, uint64_t v)
{
    uint8_t buf[10];
    size_t n = 0;
    do {
        buf[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v != 0);
    pw_raw(w, buf, n);
}

static inline void pw_tag(struct pw *w, uint32_t field, uint32_t wt)
{
    pw_varint(w, (uint64_t)field << 3 | wt);
}

/* varint field, always written (even 0) */
static inline void pw_u(struct pw *w, uint32_t field, uint64_t v)
{
    pw_tag(w, field, 0);
    pw_varint(w, v);
}

static inline void pw_bytes(struct pw *w, uint32_t field, const void *p, size_t n)
{
    pw_tag(w, field, 2);
    pw_varint(w, n);
    pw_raw(w, p, n);
}

static inline void pw_str(struct pw *w, uint32_t field, const char *s)
{
    pw_bytes(w, field, s, strlen(s));
}

/* Appends @sub as a length-delimited field and frees it. */
static inline void pw_msg(struct pw *w, uint32_t field, struct pw *sub)
{
    pw_bytes(w, field, sub->b, sub->n);
    free(sub->b);
    memset(sub, 0, sizeof(*sub));
}

static inline void pw_packed(struct pw *w, uint32_t field, const uint64_t *v, size_t n)
{
    struct pw sub = {0};
    for (size_t i = 0; i < n; i++) {
        pw_varint(&sub, v[i]);
    }
    pw_tag(w, field, 2);
    pw_varint(w, sub.n);
    pw_raw(w, sub.b, sub.n);
    free(sub.b);
}

static inline void pw_free(struct pw *w)
{
    free(w->b);
    memset(w, 0, sizeof(*w));
}

/* ---- a pprof builder on top: strings interned, tables appended ---------- */

#define PPB_MAX_STRINGS 4096

struct ppb {
    struct pw out;                  /* everything but the string table */
    const char *strs[PPB_MAX_STRINGS];
    size_t nstr;
    int strings_first;              /* emit string_table before the rest */
};

static inline void ppb_init(struct ppb *b)
{
    memset(b, 0, sizeof(*b));
    b->strs[0] = "";
    b->nstr = 1;
}

/* String index of @s (static or long-lived storage), interned. */
static inline int64_t ppb_s(struct ppb *b, const char *s)
{
    for (size_t i = 0; i < b->nstr; i++) {
        if (strcmp(b->strs[i], s) == 0) {
            return (int64_t)i;
        }
    }
    if (b->nstr >= PPB_MAX_STRINGS) {
        abort();
    }
    b->strs[b->nstr] = s;
    return (int64_t)b->nstr++;
}

static inline void ppb_value_type(struct ppb *b, uint32_t field, const char *type, const char *unit)
{
    struct pw vt = {0};
    pw_u(&vt, 1, (uint64_t)ppb_s(b, type));
    pw_u(&vt, 2, (uint64_t)ppb_s(b, unit));
    pw_msg(&b->out, field, &vt);
}

static inline void ppb_function(struct ppb *b, uint64_t id, const char *name, const char *file,
                                int64_t start_line)
{
    struct pw f = {0};
    pw_u(&f, 1, id);
    pw_u(&f, 2, (uint64_t)ppb_s(b, name));
    pw_u(&f, 3, (uint64_t)ppb_s(b, name));
    pw_u(&f, 4, (uint64_t)ppb_s(b, file));
    pw_u(&f, 5, (uint64_t)start_line);
    pw_msg(&b->out, 5, &f);
}

static inline void ppb_mapping(struct ppb *b, uint64_t id, uint64_t start, uint64_t limit,
                               const char *file, const char *build_id, unsigned flags)
{
    struct pw m = {0};
    pw_u(&m, 1, id);
    pw_u(&m, 2, start);
    pw_u(&m, 3, limit);
    pw_u(&m, 5, (uint64_t)ppb_s(b, file));
    pw_u(&m, 6, (uint64_t)ppb_s(b, build_id));
    for (unsigned i = 0; i < 4; i++) {
        if (flags & (1u << i)) {
            pw_u(&m, 7 + i, 1);
        }
    }
    pw_msg(&b->out, 3, &m);
}

/* Location with @n lines given as (function_id, line) pairs. */
static inline void ppb_location(struct ppb *b, uint64_t id, uint64_t mapping_id, uint64_t address,
                                const uint64_t *fn_line_pairs, size_t n, int folded)
{
    struct pw l = {0};
    pw_u(&l, 1, id);
    if (mapping_id) {
        pw_u(&l, 2, mapping_id);
    }
    pw_u(&l, 3, address);
    for (size_t i = 0; i < n; i++) {
        struct pw ln = {0};
        pw_u(&ln, 1, fn_line_pairs[2 * i]);
        pw_u(&ln, 2, fn_line_pairs[2 * i + 1]);
        pw_msg(&l, 4, &ln);
    }
    if (folded) {
        pw_u(&l, 5, 1);
    }
    pw_msg(&b->out, 4, &l);
}

struct ppb_label {
    const char *key, *str; /* str NULL => numeric */
    int64_t num;
    const char *unit;      /* NULL => none */
};

static inline void ppb_sample(struct ppb *b, const uint64_t *locs, size_t nl, const int64_t *vals,
                              size_t nv, const struct ppb_label *labels, size_t nlab, int packed)
{
    struct pw s = {0};
    if (packed) {
        pw_packed(&s, 1, locs, nl);
        pw_packed(&s, 2, (const uint64_t *)vals, nv);
    } else {
        for (size_t i = 0; i < nl; i++) {
            pw_u(&s, 1, locs[i]);
        }
        for (size_t i = 0; i < nv; i++) {
            pw_u(&s, 2, (uint64_t)vals[i]);
        }
    }
    for (size_t i = 0; i < nlab; i++) {
        struct pw l = {0};
        pw_u(&l, 1, (uint64_t)ppb_s(b, labels[i].key));
        if (labels[i].str != NULL) {
            pw_u(&l, 2, (uint64_t)ppb_s(b, labels[i].str));
        } else {
            pw_u(&l, 3, (uint64_t)labels[i].num);
            if (labels[i].unit != NULL) {
                pw_u(&l, 4, (uint64_t)ppb_s(b, labels[i].unit));
            }
        }
        pw_msg(&s, 3, &l);
    }
    pw_msg(&b->out, 2, &s);
}

/* The final bytes (malloc'd, caller frees); resets the builder's buffer. */
static inline uint8_t *ppb_finish(struct ppb *b, size_t *len)
{
    struct pw all = {0};
    struct pw strs = {0};
    for (size_t i = 0; i < b->nstr; i++) {
        pw_str(&strs, 6, b->strs[i]);
    }
    if (b->strings_first) {
        pw_raw(&all, strs.b, strs.n);
        pw_raw(&all, b->out.b, b->out.n);
    } else {
        pw_raw(&all, b->out.b, b->out.n);
        pw_raw(&all, strs.b, strs.n);
    }
    pw_free(&strs);
    pw_free(&b->out);
    *len = all.n;
    return all.b;
}

#endif
