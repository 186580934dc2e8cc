/* SPDX-License-Identifier: Apache-2.0
 * Protobuf wire-format primitives for the hand-written pprof decoder: varint,
 * tag, length-delimited and skip helpers over a bounded byte range. All are
 * static inline so the decoder's hot loops see through them. Every reader
 * checks bounds and returns false on truncation or an overlong varint. */
#ifndef PG_PPROF_PB_WIRE_H
#define PG_PPROF_PB_WIRE_H

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

/* Skips one field value of wire type @wt; groups are not supported (pprof
 * never uses them) and count as malformed. */
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

#endif
