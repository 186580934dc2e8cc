/* SPDX-License-Identifier: Apache-2.0
 * The fast unpack of otlp_unpack.h. protobuf-c's unpack records every field
 * occurrence of a message (scan slabs taken from the allocator, which an
 * arena never gets back), finds each field by a range search and allocates
 * each element of a repeated message alone; for an OTLP request that is most
 * of the receiver's cost and several times the message in memory. Here each
 * message is read twice: a counting walk (fields, wire types, packed
 * element counts, the plain-case checks), then a filling walk into arrays
 * sized by it; a repeated message's elements are one block. */
#include "otlp/otlp_unpack.h"

#include <stdbool.h>
#include <string.h>

#include "core/pb_wire.h"

/* OTLP messages have at most a dozen fields; a descriptor with more is declined. */
#define UNPACK_MAX_FIELDS 32

struct uctx {
    struct pg_arena *arena;
    unsigned depth, max_depth;
};

/* protobuf-c orders fields by number; OTLP numbers them densely from 1. */
static const ProtobufCFieldDescriptor *field_of(const ProtobufCMessageDescriptor *d, uint32_t id)
{
    if (id - 1u < d->n_fields && d->fields[id - 1u].id == id) {
        return &d->fields[id - 1u];
    }
    for (unsigned i = 0; i < d->n_fields; i++) {
        if (d->fields[i].id == id) {
            return &d->fields[i];
        }
    }
    return NULL;
}

/* By ProtobufCType (0..16): the wire type of a field's single value (-1: a
 * type OTLP does not use, declined) and the size of one element of its
 * repeated array. */
static const int8_t wire_type_by_type[PROTOBUF_C_TYPE_MESSAGE + 1] = {
    [PROTOBUF_C_TYPE_INT32] = PG_PB_VARINT,   [PROTOBUF_C_TYPE_SINT32] = -1,
    [PROTOBUF_C_TYPE_SFIXED32] = -1,          [PROTOBUF_C_TYPE_INT64] = PG_PB_VARINT,
    [PROTOBUF_C_TYPE_SINT64] = -1,            [PROTOBUF_C_TYPE_SFIXED64] = -1,
    [PROTOBUF_C_TYPE_UINT32] = PG_PB_VARINT,  [PROTOBUF_C_TYPE_FIXED32] = -1,
    [PROTOBUF_C_TYPE_UINT64] = PG_PB_VARINT,  [PROTOBUF_C_TYPE_FIXED64] = PG_PB_I64,
    [PROTOBUF_C_TYPE_FLOAT] = -1,             [PROTOBUF_C_TYPE_DOUBLE] = PG_PB_I64,
    [PROTOBUF_C_TYPE_BOOL] = PG_PB_VARINT,    [PROTOBUF_C_TYPE_ENUM] = PG_PB_VARINT,
    [PROTOBUF_C_TYPE_STRING] = PG_PB_LEN,     [PROTOBUF_C_TYPE_BYTES] = PG_PB_LEN,
    [PROTOBUF_C_TYPE_MESSAGE] = PG_PB_LEN,
};
static const uint8_t elem_size_by_type[PROTOBUF_C_TYPE_MESSAGE + 1] = {
    [PROTOBUF_C_TYPE_INT32] = sizeof(int32_t),   [PROTOBUF_C_TYPE_INT64] = sizeof(int64_t),
    [PROTOBUF_C_TYPE_UINT32] = sizeof(uint32_t), [PROTOBUF_C_TYPE_UINT64] = sizeof(uint64_t),
    [PROTOBUF_C_TYPE_FIXED64] = sizeof(uint64_t), [PROTOBUF_C_TYPE_DOUBLE] = sizeof(double),
    [PROTOBUF_C_TYPE_BOOL] = sizeof(protobuf_c_boolean), [PROTOBUF_C_TYPE_ENUM] = sizeof(int32_t),
    [PROTOBUF_C_TYPE_STRING] = sizeof(char *), [PROTOBUF_C_TYPE_BYTES] = sizeof(ProtobufCBinaryData),
    [PROTOBUF_C_TYPE_MESSAGE] = sizeof(void *),
};

static int wire_type_of(ProtobufCType t)
{
    return (unsigned)t <= PROTOBUF_C_TYPE_MESSAGE ? wire_type_by_type[t] : -1;
}

static size_t elem_size(ProtobufCType t)
{
    return (unsigned)t <= PROTOBUF_C_TYPE_MESSAGE ? elem_size_by_type[t] : 0;
}

static bool is_packable(ProtobufCType t)
{
    return t < PROTOBUF_C_TYPE_STRING;
}

/* Elements in a packed run, or SIZE_MAX when it is cut short. */
static size_t packed_count(ProtobufCType t, struct pg_pb r)
{
    size_t n = (size_t)(r.end - r.p);

    if (wire_type_of(t) == PG_PB_I64) {
        return n % 8 == 0 ? n / 8 : SIZE_MAX;
    }
    if (n > 0 && r.end[-1] >= 0x80) {
        return SIZE_MAX;
    }
    return pg_pb_count_varints(r.p, r.end);
}

static enum pg_otlp_unpack_result unpack_message(struct uctx *u,
                                                 const ProtobufCMessageDescriptor *d,
                                                 ProtobufCMessage *m, struct pg_pb r);

/* One value of @fd's (non-message) type from @r (wire type already
 * checked) into @dst. Inline: the per-field cost is most of the unpack. */
static inline enum pg_otlp_unpack_result read_value(struct uctx *u,
                                                    const ProtobufCFieldDescriptor *fd,
                                                    struct pg_pb *r, void *dst)
{
    uint64_t v;
    struct pg_pb sub;

    switch (fd->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_ENUM: {
        uint32_t x;
        if (!pg_pb_varint(r, &v)) {
            return PG_OTLP_UNPACK_DECLINED;
        }
        x = (uint32_t)v; /* protobuf-c keeps the low 32 bits */
        memcpy(dst, &x, sizeof(x));
        return PG_OTLP_UNPACK_OK;
    }
    case PROTOBUF_C_TYPE_BOOL: {
        protobuf_c_boolean b;
        if (!pg_pb_varint(r, &v)) {
            return PG_OTLP_UNPACK_DECLINED;
        }
        b = v != 0;
        memcpy(dst, &b, sizeof(b));
        return PG_OTLP_UNPACK_OK;
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_UINT64:
        if (!pg_pb_varint(r, &v)) {
            return PG_OTLP_UNPACK_DECLINED;
        }
        memcpy(dst, &v, sizeof(v));
        return PG_OTLP_UNPACK_OK;
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        if (r->end - r->p < 8) {
            return PG_OTLP_UNPACK_DECLINED;
        }
        /* little-endian host, as the wire (protobuf-c copies the same way there) */
        memcpy(dst, r->p, 8);
        r->p += 8;
        return PG_OTLP_UNPACK_OK;
    case PROTOBUF_C_TYPE_STRING: {
        char *s;
        size_t n;
        if (!pg_pb_len(r, &sub)) {
            return PG_OTLP_UNPACK_DECLINED;
        }
        n = (size_t)(sub.end - sub.p);
        if ((s = pg_arena_alloc(u->arena, n + 1)) == NULL) {
            return PG_OTLP_UNPACK_NOMEM;
        }
        memcpy(s, sub.p, n);
        s[n] = '\0';
        for (char *q = s; (q = memchr(q, 0, (size_t)(s + n - q))) != NULL; q++) {
            *q = (char)0xff;
        }
        memcpy(dst, &s, sizeof(s));
        return PG_OTLP_UNPACK_OK;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData bd = {0, NULL};
        if (!pg_pb_len(r, &sub)) {
            return PG_OTLP_UNPACK_DECLINED;
        }
        bd.len = (size_t)(sub.end - sub.p);
        if (bd.len > 0) { /* protobuf-c leaves data NULL when empty */
            if ((bd.data = pg_arena_alloc(u->arena, bd.len)) == NULL) {
                return PG_OTLP_UNPACK_NOMEM;
            }
            memcpy(bd.data, sub.p, bd.len);
        }
        memcpy(dst, &bd, sizeof(bd));
        return PG_OTLP_UNPACK_OK;
    }
    default:
        return PG_OTLP_UNPACK_DECLINED;
    }
}

/* A message value of @fd from @r into @sm (initialised), one level deeper. */
static enum pg_otlp_unpack_result read_sub(struct uctx *u, const ProtobufCFieldDescriptor *fd,
                                           struct pg_pb *r, ProtobufCMessage *sm)
{
    enum pg_otlp_unpack_result res;
    struct pg_pb sub;

    if (!pg_pb_len(r, &sub) || u->depth >= u->max_depth) {
        return PG_OTLP_UNPACK_DECLINED;
    }
    u->depth++;
    res = unpack_message(u, fd->descriptor, sm, sub);
    u->depth--;
    return res;
}

/* A packed run of @t values (counted already) appended to @arr at *@np. */
static bool fill_packed(ProtobufCType t, struct pg_pb r, char *arr, size_t *np)
{
    size_t n = *np;
    uint64_t v;

    switch (t) {
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        memcpy(arr + n * 8, r.p, (size_t)(r.end - r.p));
        *np = n + (size_t)(r.end - r.p) / 8;
        return true;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_UINT64: {
        uint64_t *a = (uint64_t *)(void *)arr;
        while (r.p < r.end) {
            if (!pg_pb_varint(&r, &v)) {
                return false;
            }
            a[n++] = v;
        }
        break;
    }
    case PROTOBUF_C_TYPE_BOOL: {
        protobuf_c_boolean *a = (protobuf_c_boolean *)(void *)arr;
        while (r.p < r.end) {
            if (!pg_pb_varint(&r, &v)) {
                return false;
            }
            a[n++] = v != 0;
        }
        break;
    }
    default: { /* int32, uint32, enum: the low 32 bits, as protobuf-c */
        uint32_t *a = (uint32_t *)(void *)arr;
        while (r.p < r.end) {
            if (!pg_pb_varint(&r, &v)) {
                return false;
            }
            a[n++] = (uint32_t)v;
        }
        break;
    }
    }
    *np = n;
    return true;
}

/* A fresh @d message in the arena, initialised as protobuf-c does. */
static ProtobufCMessage *new_message(struct uctx *u, const ProtobufCMessageDescriptor *d)
{
    ProtobufCMessage *m = pg_arena_alloc(u->arena, d->sizeof_message);

    if (m != NULL) {
        d->message_init(m);
    }
    return m;
}

/* Counts the occurrences of each repeated field that is not a packed run
 * (messages, strings, bytes) from @r to the end of the message, checking
 * every field as it goes; false when something is not plain. */
static bool count_unpacked(const ProtobufCMessageDescriptor *d, struct pg_pb r, size_t *count)
{
    uint32_t f, wt;

    while (r.p < r.end) {
        const ProtobufCFieldDescriptor *fd;

        if (!pg_pb_tag(&r, &f, &wt) || (fd = field_of(d, f)) == NULL ||
            !pg_pb_skip(&r, wt)) {
            return false;
        }
        if (fd->label == PROTOBUF_C_LABEL_REPEATED && !is_packable(fd->type)) {
            count[fd - d->fields]++;
        }
    }
    return true;
}

/* One pass over the message. A packed run is sized by itself (a field in
 * more than one run, or unpacked, is declined: proto3 encoders pack); the
 * first repeated message/string/bytes field met starts one counting walk
 * over the rest of the message, which sizes all of them. */
static enum pg_otlp_unpack_result unpack_message(struct uctx *u,
                                                 const ProtobufCMessageDescriptor *d,
                                                 ProtobufCMessage *m, struct pg_pb r)
{
    size_t count[UNPACK_MAX_FIELDS];
    uint8_t *block[UNPACK_MAX_FIELDS]; /* a repeated message's elements, by field index */
    bool counted = false;
    char *base = (char *)m;
    uint32_t f = 0, wt = 0;

    if (d->n_fields > UNPACK_MAX_FIELDS) {
        return PG_OTLP_UNPACK_DECLINED;
    }
    while (r.p < r.end) {
        const struct pg_pb at = r;
        const ProtobufCFieldDescriptor *fd;
        enum pg_otlp_unpack_result res;
        size_t fi;
        int want;

        if (!pg_pb_tag(&r, &f, &wt) || (fd = field_of(d, f)) == NULL) {
            return PG_OTLP_UNPACK_DECLINED;
        }
        fi = (size_t)(fd - d->fields);
        want = wire_type_of(fd->type);
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t *np = (size_t *)(void *)(base + fd->quantifier_offset);
            size_t es = elem_size(fd->type);
            char *arr;

            if (is_packable(fd->type)) {
                struct pg_pb sub;
                size_t n;
                if (want < 0 || wt != PG_PB_LEN || *np != 0 || !pg_pb_len(&r, &sub) ||
                    (n = packed_count(fd->type, sub)) == SIZE_MAX) {
                    return PG_OTLP_UNPACK_DECLINED;
                }
                if (n == 0) {
                    continue;
                }
                if ((arr = pg_arena_alloc(u->arena, n * es)) == NULL) {
                    return PG_OTLP_UNPACK_NOMEM;
                }
                memcpy(base + fd->offset, &arr, sizeof(arr));
                if (!fill_packed(fd->type, sub, arr, np)) {
                    return PG_OTLP_UNPACK_DECLINED;
                }
                continue;
            }
            if ((int)wt != want) {
                return PG_OTLP_UNPACK_DECLINED;
            }
            if (!counted) {
                memset(count, 0, d->n_fields * sizeof(count[0]));
                if (!count_unpacked(d, at, count)) {
                    return PG_OTLP_UNPACK_DECLINED;
                }
                counted = true;
            }
            memcpy(&arr, base + fd->offset, sizeof(arr));
            if (arr == NULL) { /* the field's first element: its array, and block */
                size_t n = count[fi];
                if ((arr = pg_arena_alloc(u->arena, n * es)) == NULL) {
                    return PG_OTLP_UNPACK_NOMEM;
                }
                memcpy(base + fd->offset, &arr, sizeof(arr));
                if (fd->type == PROTOBUF_C_TYPE_MESSAGE &&
                    (block[fi] = pg_arena_alloc(
                         u->arena, n * ((const ProtobufCMessageDescriptor *)fd->descriptor)
                                           ->sizeof_message)) == NULL) {
                    return PG_OTLP_UNPACK_NOMEM;
                }
            }
            if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
                const ProtobufCMessageDescriptor *sd = fd->descriptor;
                ProtobufCMessage *sm =
                    (ProtobufCMessage *)(void *)(block[fi] + *np * sd->sizeof_message);
                sd->message_init(sm);
                memcpy(arr + *np * es, &sm, sizeof(sm));
                res = read_sub(u, fd, &r, sm);
            } else {
                res = read_value(u, fd, &r, arr + *np * es);
            }
            if (res != PG_OTLP_UNPACK_OK) {
                return res;
            }
            ++*np;
            continue;
        }
        if ((int)wt != want) {
            return PG_OTLP_UNPACK_DECLINED;
        }
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            /* the last member wins, as in protobuf-c; the same message member
             * twice would be merged: declined */
            uint32_t id = fd->id, was;
            memcpy(&was, base + fd->quantifier_offset, sizeof(was));
            if (was == id && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
                return PG_OTLP_UNPACK_DECLINED;
            }
            memcpy(base + fd->quantifier_offset, &id, sizeof(id));
        }
        if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
            ProtobufCMessage *sm;
            memcpy(&sm, base + fd->offset, sizeof(sm));
            if (sm != NULL && !(fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) {
                return PG_OTLP_UNPACK_DECLINED; /* a second one: protobuf merges them */
            }
            if ((sm = new_message(u, fd->descriptor)) == NULL) {
                return PG_OTLP_UNPACK_NOMEM;
            }
            memcpy(base + fd->offset, &sm, sizeof(sm));
            res = read_sub(u, fd, &r, sm);
        } else {
            res = read_value(u, fd, &r, base + fd->offset);
        }
        if (res != PG_OTLP_UNPACK_OK) {
            return res;
        }
    }
    return PG_OTLP_UNPACK_OK;
}

enum pg_otlp_unpack_result pg_otlp_unpack_fast(struct pg_arena *arena,
                                               const ProtobufCMessageDescriptor *desc,
                                               const uint8_t *buf, size_t len, unsigned max_depth,
                                               ProtobufCMessage **out)
{
    struct uctx u = {arena, 0, max_depth};
    ProtobufCMessage *m;
    enum pg_otlp_unpack_result res;

    *out = NULL;
    if ((m = new_message(&u, desc)) == NULL) {
        return PG_OTLP_UNPACK_NOMEM;
    }
    res = unpack_message(&u, desc, m, (struct pg_pb){buf, buf + len});
    if (res == PG_OTLP_UNPACK_OK) {
        *out = m;
    }
    return res;
}
