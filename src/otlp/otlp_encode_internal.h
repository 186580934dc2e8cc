/* SPDX-License-Identifier: Apache-2.0
 * The encoder's field primitives (private to the otlp_encode*.c files): the
 * size cache (struct enc) and, per protobuf field kind, the static inline pair
 * that sizes it and writes it, with protobuf-c 1.4's rules for what is
 * skipped, and the one-byte patched lengths; inline because they run per
 * sample. Then what each encoder file offers the one above it: the request
 * (otlp_encode.c) -> dictionary (otlp_encode_dict.c) -> common messages
 * (otlp_encode_common.c) -> buffers (otlp_encode_buf.c). One thread per encode. */
#ifndef PG_OTLP_OTLP_ENCODE_INTERNAL_H
#define PG_OTLP_OTLP_ENCODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "core/pb_wire.h"
#include "core/vec.h"
#include "otlp/otlp.h"
#include "otlp/otlp_lazy.h"

struct enc {
    uint32_t *sz; /* malloc'd size cache, pre-order */
    size_t n, cap, rd;
    bool nomem, too_big;
    /* Samples encoded during the sizing pass (malloc'd, freed with the cache); the writing
     * pass copies each profile's block. Off once it would pass SCRATCH_MAX. */
    uint8_t *scr;
    size_t scr_len, scr_cap;
    bool scr_off;
};

/* int32 is sign-extended to 64 bits on the wire (10 bytes when negative). */
static inline size_t i32len(int32_t v)
{
    return pg_pb_varint_len((uint64_t)(int64_t)v);
}

/* Tag byte(s) for field @f (all fields here are < 16: one byte). */
#define TAG(f, wt) ((uint8_t)((f) << 3 | (wt)))

/* Length of an embedded field body of @s bytes, tag included. */
static inline size_t emb(size_t s)
{
    return 1 + pg_pb_varint_len(s) + s;
}

static inline size_t reserve(struct enc *e)
{
    if (e->n == e->cap && !e->nomem && !PG_VEC_GROW(NULL, e->sz, e->cap, e->n, 1024, 0)) {
        e->nomem = true;
    }
    return e->n++;
}

static inline size_t fill(struct enc *e, size_t slot, size_t n)
{
    if (n > UINT32_MAX) {
        e->too_big = true;
    }
    if (slot < e->cap) {
        e->sz[slot] = (uint32_t)n;
    }
    return n;
}

/* Length-delimited header for the next cached size. */
static inline uint8_t *hdr(struct enc *e, uint8_t *p, unsigned field)
{
    *p++ = TAG(field, PG_PB_LEN);
    return pg_pb_put_varint(p, e->sz[e->rd++]);
}

static inline size_t unk_size(const ProtobufCMessage *b)
{
    size_t n = 0;

    for (unsigned i = 0; i < b->n_unknown_fields; i++) {
        if (b->unknown_fields[i].wire_type != PG_OTLP_LAZY_MARK) { /* written in place */
            n += pg_pb_varint_len((uint64_t)b->unknown_fields[i].tag << 3) +
                 b->unknown_fields[i].len;
        }
    }
    return n;
}

static inline uint8_t *unk_write(const ProtobufCMessage *b, uint8_t *p)
{
    for (unsigned i = 0; i < b->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &b->unknown_fields[i];
        if (u->wire_type == PG_OTLP_LAZY_MARK) {
            continue;
        }
        p = pg_pb_put_varint(p, (uint64_t)u->tag << 3 | u->wire_type);
        if (u->len > 0) {
            memcpy(p, u->data, u->len);
        }
        p += u->len;
    }
    return p;
}

#define UNK_SIZE(m) ((m)->base.n_unknown_fields ? unk_size(&(m)->base) : 0)
#define UNK_WRITE(m, p) ((m)->base.n_unknown_fields ? unk_write(&(m)->base, p) : (p))

/* Non-oneof proto3 string: skipped when NULL or empty. */
static inline size_t str_size(const char *s)
{
    size_t n;

    if (s == NULL || s[0] == '\0') {
        return 0;
    }
    n = strlen(s);
    return 1 + pg_pb_varint_len(n) + n;
}

static inline uint8_t *str_write(uint8_t *p, unsigned field, const char *s)
{
    size_t n;

    if (s == NULL || s[0] == '\0') {
        return p;
    }
    n = strlen(s);
    *p++ = TAG(field, PG_PB_LEN);
    p = pg_pb_put_varint(p, n);
    memcpy(p, s, n);
    return p + n;
}

/* Repeated string element: always written, NULL as "". */
static inline size_t rstr_size(const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;
    return 1 + pg_pb_varint_len(n) + n;
}

static inline uint8_t *rstr_write(uint8_t *p, unsigned field, const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;

    *p++ = TAG(field, PG_PB_LEN);
    p = pg_pb_put_varint(p, n);
    if (n > 0) {
        memcpy(p, s, n);
    }
    return p + n;
}

static inline size_t bytes_size(const ProtobufCBinaryData *b)
{
    return b->len == 0 ? 0 : 1 + pg_pb_varint_len(b->len) + b->len;
}

static inline uint8_t *bytes_write(uint8_t *p, unsigned field, const ProtobufCBinaryData *b)
{
    if (b->len == 0) {
        return p;
    }
    *p++ = TAG(field, PG_PB_LEN);
    p = pg_pb_put_varint(p, b->len);
    memcpy(p, b->data, b->len);
    return p + b->len;
}

static inline size_t i32f_size(int32_t v)
{
    return v != 0 ? 1 + i32len(v) : 0;
}

static inline uint8_t *i32f_write(uint8_t *p, unsigned field, int32_t v)
{
    if (v != 0) {
        *p++ = TAG(field, PG_PB_VARINT);
        p = pg_pb_put_varint(p, (uint64_t)(int64_t)v);
    }
    return p;
}

static inline size_t u64f_size(uint64_t v)
{
    return v != 0 ? 1 + pg_pb_varint_len(v) : 0;
}

static inline uint8_t *u64f_write(uint8_t *p, unsigned field, uint64_t v)
{
    if (v != 0) {
        *p++ = TAG(field, PG_PB_VARINT);
        p = pg_pb_put_varint(p, v);
    }
    return p;
}

/* Packed repeated int32 (a Sample's packed fields are written by bp_pi*_write). A short array is
 * measured again when written instead of taking a cache slot; longer ones cache their
 * payload length. Both passes decide on n alone, so they stay in step. */
#define PACKED_RECOUNT 8

static inline size_t pi32_len(const int32_t *v, size_t n)
{
    size_t len = 0;

    for (size_t i = 0; i < n; i++) {
        len += i32len(v[i]);
    }
    return len;
}

static inline size_t pi64_len(const int64_t *v, size_t n)
{
    size_t len = 0;

    for (size_t i = 0; i < n; i++) {
        len += pg_pb_varint_len((uint64_t)v[i]);
    }
    return len;
}

static inline size_t pi32_size(struct enc *e, const int32_t *v, size_t n)
{
    size_t slot;

    if (n <= PACKED_RECOUNT) {
        return n == 0 ? 0 : emb(pi32_len(v, n));
    }
    slot = reserve(e);
    return emb(fill(e, slot, pi32_len(v, n)));
}

static inline uint8_t *pi32_write(struct enc *e, uint8_t *p, unsigned field, const int32_t *v,
                                  size_t n)
{
    if (n == 0) {
        return p;
    }
    if (n <= PACKED_RECOUNT) {
        *p++ = TAG(field, PG_PB_LEN);
        p = pg_pb_put_varint(p, pi32_len(v, n));
    } else {
        p = hdr(e, p, field);
    }
    for (size_t i = 0; i < n; i++) {
        p = pg_pb_put_varint(p, (uint64_t)(int64_t)v[i]);
    }
    return p;
}

/* Packed fixed64: the length is known, nothing cached. */
static inline size_t pf64_size(size_t n)
{
    return n == 0 ? 0 : emb(8 * n);
}

static inline uint8_t *pf64_write(uint8_t *p, unsigned field, const uint64_t *v, size_t n)
{
    if (n == 0) {
        return p;
    }
    *p++ = TAG(field, PG_PB_LEN);
    p = pg_pb_put_varint(p, 8 * n);
    for (size_t i = 0; i < n; i++) {
        p = pg_pb_put_fixed64(p, v[i]);
    }
    return p;
}

/* A small request's samples and dictionary are encoded once, while sizing, and copied when
 * writing (the copy is cheaper than sizing them); the scratch grows up to SCRATCH_MAX. */
#define SCRATCH_MAX ((size_t)256 << 10)
#define SCRATCH_MIN ((size_t)16 << 10)

/* Grows the scratch so @need more bytes fit; false past SCRATCH_MAX or out of memory. Not
 * inline (rare), but static: each file's copy lets the sample loop keep its registers. */
static __attribute__((noinline, unused)) bool scratch_room(struct enc *e, size_t need)
{
    size_t cap = e->scr_cap ? e->scr_cap : SCRATCH_MIN;
    uint8_t *nb;

    while (cap - e->scr_len < need) {
        cap *= 2;
        if (cap > SCRATCH_MAX) {
            return false;
        }
    }
    nb = realloc(e->scr, cap);
    if (nb == NULL) {
        return false;
    }
    e->scr = nb;
    e->scr_cap = cap;
    return true;
}

/* ---- otlp_encode_buf.c: the size cache and scratch of one encode */

/* Starts @e with this thread's kept buffers, if any. */
void pg_enc_take(struct enc *e);
/* Keeps @e's buffers for the next request on this thread when they are small, else frees. */
void pg_enc_give(struct enc *e);

/* ---- one-byte lengths: a body of under 128 bytes (every SDK sample) is written behind a
 * one-byte length patched afterwards; a longer one is moved up by patch_len_slow. */

/* The body written at @body (one byte after @lenp) is @len bytes long: store the length at
 * @lenp, moving the body up when it needs more than one byte. Returns the byte after it. */
static __attribute__((noinline, unused)) uint8_t *patch_len_slow(uint8_t *lenp, uint8_t *body, size_t len)
{
    size_t vl = pg_pb_varint_len(len);

    memmove(lenp + vl, body, len);
    pg_pb_put_varint(lenp, len);
    return lenp + vl + len;
}

static inline uint8_t *patch_len(uint8_t *lenp, uint8_t *end)
{
    size_t len = (size_t)(end - lenp - 1);

    if (__builtin_expect(len < 0x80, 1)) {
        *lenp = (uint8_t)len;
        return end;
    }
    return patch_len_slow(lenp, lenp + 1, len);
}

static inline uint8_t *bp_pi32_write(uint8_t *p, unsigned field, const int32_t *v, size_t n)
{
    uint8_t *lenp;

    if (n == 0) {
        return p;
    }
    *p = TAG(field, PG_PB_LEN);
    lenp = p + 1;
    p += 2;
    for (size_t i = 0; i < n; i++) {
        p = pg_pb_put_varint(p, (uint64_t)(int64_t)v[i]);
    }
    return patch_len(lenp, p);
}

/* ---- otlp_encode_common.c: Resource, InstrumentationScope, KeyValueAndUnit (their AnyValues) */

size_t pg_enc_resource_size(struct enc *e, const struct pg_otlp_resource *m);
uint8_t *pg_enc_resource_write(struct enc *e, uint8_t *p, const struct pg_otlp_resource *m);
size_t pg_enc_scope_size(struct enc *e, const struct pg_otlp_scope *m);
uint8_t *pg_enc_scope_write(struct enc *e, uint8_t *p, const struct pg_otlp_scope *m);
size_t pg_enc_kvu_size(struct enc *e, const struct pg_otlp_kvu *m);
uint8_t *pg_enc_kvu_write(struct enc *e, uint8_t *p, const struct pg_otlp_kvu *m);

/* ---- otlp_encode_dict.c: the ProfilesDictionary */

/* Sizes the dictionary into the cache (written by pg_enc_dict_write); returns its length. */
size_t pg_enc_dict_size(struct enc *e, const struct pg_otlp_dict *m);
uint8_t *pg_enc_dict_write(struct enc *e, uint8_t *p, const struct pg_otlp_dict *m);
/* Writes a small request's dictionary once into the scratch (length in *@len); false when it
 * does not fit (the caller sizes it instead; nothing of it is left in the cache). */
bool pg_enc_dict_to_scratch(struct enc *e, const struct pg_otlp_dict *m, size_t *len);

#endif
