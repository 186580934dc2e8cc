/* SPDX-License-Identifier: Apache-2.0
 * The one protobuf wire-format reader and writer, for the hand-written codecs
 * (pprof decoding, the OTLP encoder, the heap profile writer, gRPC status
 * details, the spool's sample count). Reading: varint, tag, length-delimited,
 * skip and whole-field helpers over a bounded byte range; every reader checks
 * bounds and returns false on truncation or an overlong varint. Writing:
 * varint and fixed64 into a buffer the caller sized (pg_pb_varint_len). All
 * static inline so the hot loops see through them; no state, thread-safe. */
#ifndef PG_CORE_PB_WIRE_H
#define PG_CORE_PB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pg_pb_wt { PG_PB_VARINT = 0, PG_PB_I64 = 1, PG_PB_LEN = 2, PG_PB_SGROUP = 3,
                PG_PB_EGROUP = 4, PG_PB_I32 = 5 };

struct pg_pb {
    const uint8_t *p;   /* next byte */
    const uint8_t *end; /* one past the last byte */
};

/* Slow path: byte at a time with full bounds checks. At most 10 bytes; the
 * tenth may only carry the top bit of a 64-bit value. */
static inline bool pg_pb_varint_slow(struct pg_pb *r, uint64_t *out)
{
    uint64_t v = 0;
    const uint8_t *p = r->p;

    for (unsigned shift = 0; shift < 70; shift += 7) {
        uint8_t b;
        if (p >= r->end) {
            return false;
        }
        b = *p++;
        if (shift == 63 && b > 1) {
            return false;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            r->p = p;
            *out = v;
            return true;
        }
    }
    return false;
}

static inline bool pg_pb_varint(struct pg_pb *r, uint64_t *out)
{
    const uint8_t *p = r->p;

    if (p < r->end && p[0] < 0x80) {
        *out = p[0];
        r->p = p + 1;
        return true;
    }
    if (r->end - p >= 2 && p[1] < 0x80) {
        *out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        r->p = p + 2;
        return true;
    }
    return pg_pb_varint_slow(r, out);
}

/* Reads a tag; field number 0 or > 2^29-1 is malformed. */
static inline bool pg_pb_tag(struct pg_pb *r, uint32_t *field, uint32_t *wt)
{
    uint64_t t;

    if (!pg_pb_varint(r, &t) || (t >> 3) == 0 || (t >> 3) > 0x1fffffff) {
        return false;
    }
    *field = (uint32_t)(t >> 3);
    *wt = (uint32_t)(t & 7);
    return true;
}

/* Reads a length prefix and carves out the sub-range. */
static inline bool pg_pb_len(struct pg_pb *r, struct pg_pb *sub)
{
    uint64_t n;

    if (!pg_pb_varint(r, &n) || n > (uint64_t)(r->end - r->p)) {
        return false;
    }
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return true;
}

/* Skips one field value of wire type @wt; groups are not supported (no
 * message read here uses them) and count as malformed. */
static inline bool pg_pb_skip(struct pg_pb *r, uint32_t wt)
{
    uint64_t v;
    struct pg_pb sub;

    switch (wt) {
    case PG_PB_VARINT:
        return pg_pb_varint(r, &v);
    case PG_PB_I64:
        if (r->end - r->p < 8) {
            return false;
        }
        r->p += 8;
        return true;
    case PG_PB_LEN:
        return pg_pb_len(r, &sub);
    case PG_PB_I32:
        if (r->end - r->p < 4) {
            return false;
        }
        r->p += 4;
        return true;
    default:
        return false;
    }
}

/* Number of varints in a packed range (count of bytes < 0x80); the range is
 * well-formed only if its last byte terminates a varint. */
static inline size_t pg_pb_count_varints(const uint8_t *p, const uint8_t *end)
{
    size_t n = 0;

    for (; p < end; p++) {
        n += *p < 0x80;
    }
    return n;
}

/* Reads one whole field: its tag, then a VARINT value into @val, a LEN body
 * into @sub (left untouched for other types); I64 and I32 values are
 * skipped. */
static inline bool pg_pb_field(struct pg_pb *r, uint32_t *field, uint32_t *wt, uint64_t *val,
                               struct pg_pb *sub)
{
    if (!pg_pb_tag(r, field, wt)) {
        return false;
    }
    switch (*wt) {
    case PG_PB_VARINT:
        return pg_pb_varint(r, val);
    case PG_PB_LEN:
        return pg_pb_len(r, sub);
    default:
        return pg_pb_skip(r, *wt);
    }
}

/* ---- writing ------------------------------------------------------------- */

/* Bytes the varint encoding of @v takes (1..10). */
static inline size_t pg_pb_varint_len(uint64_t v)
{
    return v < 0x80 ? 1 : (size_t)(64 - __builtin_clzll(v) + 6) / 7;
}

/* The key of field @field with wire type @wt (write it with pg_pb_put_varint). */
static inline uint64_t pg_pb_key(uint32_t field, enum pg_pb_wt wt)
{
    return (uint64_t)field << 3 | (uint64_t)wt;
}

/* Writes @v as a varint at @p (room for pg_pb_varint_len(@v) bytes); returns
 * the byte after it. */
static inline uint8_t *pg_pb_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Writes @v little-endian in 8 bytes (I64 wire type); returns the byte after. */
static inline uint8_t *pg_pb_put_fixed64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
    return p + 8;
}

#endif
