/* SPDX-License-Identifier: Apache-2.0
 * The encoder's ProfilesDictionary: its tables (mappings, locations and their
 * lines, functions, links, strings, attributes, stacks), sized and written
 * as pairs over the size cache, and the once-per-request path that writes a
 * small request's dictionary straight into the scratch while sizing. */
#include <stdbool.h>
#include <string.h>

#include "otlp/otlp_encode_internal.h"

static size_t sz_mapping(struct enc *e, const struct pg_otlp_mapping *m)
{
    size_t slot = reserve(e);
    size_t n = u64f_size(m->memory_start) + u64f_size(m->memory_limit) +
               u64f_size(m->file_offset) + i32f_size(m->filename_strindex) +
               pi32_size(e, m->attribute_indices, m->n_attribute_indices);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_mapping(struct enc *e, uint8_t *p, const struct pg_otlp_mapping *m)
{
    p = u64f_write(p, 1, m->memory_start);
    p = u64f_write(p, 2, m->memory_limit);
    p = u64f_write(p, 3, m->file_offset);
    p = i32f_write(p, 4, m->filename_strindex);
    p = pi32_write(e, p, 5, m->attribute_indices, m->n_attribute_indices);
    return UNK_WRITE(m, p);
}

static size_t sz_line(struct enc *e, const struct pg_otlp_line *m)
{
    size_t slot = reserve(e);
    size_t n = i32f_size(m->function_index) + u64f_size((uint64_t)m->line) +
               u64f_size((uint64_t)m->column);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_line(uint8_t *p, const struct pg_otlp_line *m)
{
    p = i32f_write(p, 1, m->function_index);
    p = u64f_write(p, 2, (uint64_t)m->line);
    p = u64f_write(p, 3, (uint64_t)m->column);
    return UNK_WRITE(m, p);
}

static size_t sz_location(struct enc *e, const struct pg_otlp_location *m)
{
    size_t slot = reserve(e);
    size_t n = i32f_size(m->mapping_index) + u64f_size(m->address);

    for (size_t i = 0; i < m->n_lines; i++) {
        n += emb(sz_line(e, m->lines[i]));
    }
    n += pi32_size(e, m->attribute_indices, m->n_attribute_indices);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_location(struct enc *e, uint8_t *p, const struct pg_otlp_location *m)
{
    p = i32f_write(p, 1, m->mapping_index);
    p = u64f_write(p, 2, m->address);
    for (size_t i = 0; i < m->n_lines; i++) {
        p = hdr(e, p, 3);
        p = wr_line(p, m->lines[i]);
    }
    p = pi32_write(e, p, 4, m->attribute_indices, m->n_attribute_indices);
    return UNK_WRITE(m, p);
}

static size_t sz_function(struct enc *e, const struct pg_otlp_function *m)
{
    size_t slot = reserve(e);
    size_t n = i32f_size(m->name_strindex) + i32f_size(m->system_name_strindex) +
               i32f_size(m->filename_strindex) + u64f_size((uint64_t)m->start_line);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_function(uint8_t *p, const struct pg_otlp_function *m)
{
    p = i32f_write(p, 1, m->name_strindex);
    p = i32f_write(p, 2, m->system_name_strindex);
    p = i32f_write(p, 3, m->filename_strindex);
    p = u64f_write(p, 4, (uint64_t)m->start_line);
    return UNK_WRITE(m, p);
}

static size_t sz_link(struct enc *e, const struct pg_otlp_link *m)
{
    size_t slot = reserve(e);
    return fill(e, slot, bytes_size(&m->trace_id) + bytes_size(&m->span_id) + UNK_SIZE(m));
}

static uint8_t *wr_link(uint8_t *p, const struct pg_otlp_link *m)
{
    p = bytes_write(p, 1, &m->trace_id);
    p = bytes_write(p, 2, &m->span_id);
    return UNK_WRITE(m, p);
}

static size_t sz_stack(struct enc *e, const struct pg_otlp_stack *m)
{
    size_t slot = reserve(e);
    size_t n = pi32_size(e, m->location_indices, m->n_location_indices);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_stack(struct enc *e, uint8_t *p, const struct pg_otlp_stack *m)
{
    p = pi32_write(e, p, 1, m->location_indices, m->n_location_indices);
    return UNK_WRITE(m, p);
}

size_t pg_enc_dict_size(struct enc *e, const struct pg_otlp_dict *m)
{
    size_t slot = reserve(e), n = 0;
    const struct pg_otlp_lazy *lz;

    for (size_t i = 0; i < m->n_mapping_table; i++) {
        n += emb(sz_mapping(e, m->mapping_table[i]));
    }
    for (size_t i = 0; i < m->n_location_table; i++) {
        n += emb(sz_location(e, m->location_table[i]));
    }
    for (size_t i = 0; i < m->n_function_table; i++) {
        n += emb(sz_function(e, m->function_table[i]));
    }
    for (size_t i = 0; i < m->n_link_table; i++) {
        n += emb(sz_link(e, m->link_table[i]));
    }
    if (m->base.n_unknown_fields != 0 && (lz = pg_otlp_lazy_find(&m->base)) != NULL) {
        n += lz->len; /* links kept in wire form: written verbatim */
    }
    for (size_t i = 0; i < m->n_string_table; i++) {
        n += rstr_size(m->string_table[i]);
    }
    for (size_t i = 0; i < m->n_attribute_table; i++) {
        n += emb(pg_enc_kvu_size(e, m->attribute_table[i]));
    }
    for (size_t i = 0; i < m->n_stack_table; i++) {
        n += emb(sz_stack(e, m->stack_table[i]));
    }
    return fill(e, slot, n + UNK_SIZE(m));
}

uint8_t *pg_enc_dict_write(struct enc *e, uint8_t *p, const struct pg_otlp_dict *m)
{
    const struct pg_otlp_lazy *lz;

    for (size_t i = 0; i < m->n_mapping_table; i++) {
        p = hdr(e, p, 1);
        p = wr_mapping(e, p, m->mapping_table[i]);
    }
    for (size_t i = 0; i < m->n_location_table; i++) {
        p = hdr(e, p, 2);
        p = wr_location(e, p, m->location_table[i]);
    }
    for (size_t i = 0; i < m->n_function_table; i++) {
        p = hdr(e, p, 3);
        p = wr_function(p, m->function_table[i]);
    }
    for (size_t i = 0; i < m->n_link_table; i++) {
        p = hdr(e, p, 4);
        p = wr_link(p, m->link_table[i]);
    }
    if (m->base.n_unknown_fields != 0 && (lz = pg_otlp_lazy_find(&m->base)) != NULL) {
        memcpy(p, lz->wire, lz->len);
        p += lz->len;
    }
    for (size_t i = 0; i < m->n_string_table; i++) {
        p = rstr_write(p, 5, m->string_table[i]);
    }
    for (size_t i = 0; i < m->n_attribute_table; i++) {
        p = hdr(e, p, 6);
        p = pg_enc_kvu_write(e, p, m->attribute_table[i]);
    }
    for (size_t i = 0; i < m->n_stack_table; i++) {
        p = hdr(e, p, 7);
        p = wr_stack(e, p, m->stack_table[i]);
    }
    return UNK_WRITE(m, p);
}

/* Like the Samples, a small request's dictionary is written while sizing, into the scratch
 * block after the samples: each table entry behind a one-byte length patched afterwards
 * (an attribute, whose value may nest, is sized on the spot with cache slots it gives
 * back). Each entry first makes room for the most it can take. */

static inline uint8_t *bp_mapping(uint8_t *p, const struct pg_otlp_mapping *m)
{
    uint8_t *lenp = p + 1;

    *p = TAG(1, PG_PB_LEN);
    p += 2;
    p = u64f_write(p, 1, m->memory_start);
    p = u64f_write(p, 2, m->memory_limit);
    p = u64f_write(p, 3, m->file_offset);
    p = i32f_write(p, 4, m->filename_strindex);
    p = bp_pi32_write(p, 5, m->attribute_indices, m->n_attribute_indices);
    p = UNK_WRITE(m, p);
    return patch_len(lenp, p);
}

static inline uint8_t *bp_location(uint8_t *p, const struct pg_otlp_location *m)
{
    uint8_t *lenp = p + 1;

    *p = TAG(2, PG_PB_LEN);
    p += 2;
    p = i32f_write(p, 1, m->mapping_index);
    p = u64f_write(p, 2, m->address);
    for (size_t i = 0; i < m->n_lines; i++) {
        uint8_t *llen = p + 1;
        *p = TAG(3, PG_PB_LEN);
        p = patch_len(llen, wr_line(p + 2, m->lines[i]));
    }
    p = bp_pi32_write(p, 4, m->attribute_indices, m->n_attribute_indices);
    p = UNK_WRITE(m, p);
    return patch_len(lenp, p);
}

static inline size_t location_bound(const struct pg_otlp_location *m)
{
    size_t b = 55 + 10 * m->n_attribute_indices + UNK_SIZE(m);

    for (size_t i = 0; i < m->n_lines; i++) {
        b += 44 + UNK_SIZE(m->lines[i]);
    }
    return b;
}

bool pg_enc_dict_to_scratch(struct enc *e, const struct pg_otlp_dict *m, size_t *len)
{
    size_t start = e->scr_len, n0 = e->n;
    bool nomem0 = e->nomem, too_big0 = e->too_big;
    uint8_t *q, *lim;
    const struct pg_otlp_lazy *lz;

#define ROOM(bound)                                                                                \
    do {                                                                                           \
        size_t b_ = (bound);                                                                       \
        if ((size_t)(lim - q) < b_) {                                                              \
            e->scr_len = (size_t)(q - e->scr);                                                     \
            if (!scratch_room(e, b_)) {                                                            \
                goto off;                                                                          \
            }                                                                                      \
            q = e->scr + e->scr_len;                                                               \
            lim = e->scr + e->scr_cap;                                                             \
        }                                                                                          \
    } while (0)
#define BP(field, q, body)                                                                         \
    do {                                                                                           \
        uint8_t *lenp_ = (q) + 1;                                                                  \
        *(q) = TAG(field, PG_PB_LEN);                                                              \
        (q) = patch_len(lenp_, body);                                                              \
    } while (0)

    if (e->scr_off || (e->scr == NULL && !scratch_room(e, 0))) {
        return false;
    }
    q = e->scr + start;
    lim = e->scr + e->scr_cap;
    for (size_t i = 0; i < m->n_mapping_table; i++) {
        const struct pg_otlp_mapping *mp = m->mapping_table[i];
        ROOM(66 + 10 * mp->n_attribute_indices + UNK_SIZE(mp));
        q = bp_mapping(q, mp);
    }
    for (size_t i = 0; i < m->n_location_table; i++) {
        ROOM(location_bound(m->location_table[i]));
        q = bp_location(q, m->location_table[i]);
    }
    for (size_t i = 0; i < m->n_function_table; i++) {
        const struct pg_otlp_function *fn = m->function_table[i];
        ROOM(55 + UNK_SIZE(fn));
        BP(3, q, wr_function(q + 2, fn));
    }
    for (size_t i = 0; i < m->n_link_table; i++) {
        const struct pg_otlp_link *lk = m->link_table[i];
        ROOM(33 + lk->trace_id.len + lk->span_id.len + UNK_SIZE(lk));
        if (lk->trace_id.len == 16 && lk->span_id.len == 8 && lk->base.n_unknown_fields == 0) {
            /* the only shape translation writes: fixed bytes, fixed-size copies */
            q[0] = TAG(4, PG_PB_LEN);
            q[1] = 28;
            q[2] = TAG(1, PG_PB_LEN);
            q[3] = 16;
            memcpy(q + 4, lk->trace_id.data, 16);
            q[20] = TAG(2, PG_PB_LEN);
            q[21] = 8;
            memcpy(q + 22, lk->span_id.data, 8);
            q += 30;
            continue;
        }
        BP(4, q, wr_link(q + 2, lk));
    }
    if (m->base.n_unknown_fields != 0 && (lz = pg_otlp_lazy_find(&m->base)) != NULL) {
        ROOM(lz->len);
        memcpy(q, lz->wire, lz->len);
        q += lz->len;
    }
    for (size_t i = 0; i < m->n_string_table; i++) {
        const char *str = m->string_table[i];
        size_t sl = str != NULL ? strlen(str) : 0;
        ROOM(11 + sl);
        *q++ = TAG(5, PG_PB_LEN);
        q = pg_pb_put_varint(q, sl);
        if (sl > 0) {
            memcpy(q, str, sl);
        }
        q += sl;
    }
    for (size_t i = 0; i < m->n_attribute_table; i++) {
        size_t s0 = e->n, sz = pg_enc_kvu_size(e, m->attribute_table[i]);
        if (e->nomem || e->too_big) {
            goto off;
        }
        ROOM(11 + sz);
        e->rd = s0;
        q = hdr(e, q, 6);
        q = pg_enc_kvu_write(e, q, m->attribute_table[i]);
        e->n = s0;
    }
    for (size_t i = 0; i < m->n_stack_table; i++) {
        const struct pg_otlp_stack *sk = m->stack_table[i];
        ROOM(22 + 10 * sk->n_location_indices + UNK_SIZE(sk));
        BP(7, q, UNK_WRITE(sk, bp_pi32_write(q + 2, 1, sk->location_indices,
                                                sk->n_location_indices)));
    }
    ROOM(UNK_SIZE(m));
    q = UNK_WRITE(m, q);
    e->scr_len = (size_t)(q - e->scr);
    e->rd = 0;
    *len = e->scr_len - start;
    return true;
off:
    e->scr_off = true;
    e->scr_len = start;
    e->n = n0;
    e->rd = 0;
    e->nomem = nomem0; /* sized again by the caller, which tells a real failure */
    e->too_big = too_big0;
    return false;
#undef ROOM
#undef BP
}
