/* SPDX-License-Identifier: Apache-2.0
 * The fast unpack of otlp_unpack.h. protobuf-c's unpack records every field
 * occurrence of a message (scan slabs taken from the allocator, which an
 * arena never gets back), finds each field by a range search and allocates
 * each element of a repeated message alone; for an OTLP request that is most
 * of the receiver's cost and several times the message in memory. Here a
 * table per message type, built once from protobuf-c's descriptors, maps a
 * one-byte tag (OTLP numbers every field below 16) to what to do with it;
 * each message is read in one pass: a packed run is sized by itself, and the
 * first repeated message/string/bytes field met starts one counting walk of
 * the rest of the message, which sizes all of them; a repeated message's
 * elements are one block. The small arrays and strings a sample-heavy request
 * is made of (values, attribute indices, link ids) are carved from shared
 * pieces at their own alignment instead of one 16-byte-rounded arena block
 * each, and a sample's packed run equal to the previous sample's (their
 * attribute indices, often) shares its array, as the pprof translator shares
 * its samples' arrays: the pipeline never writes into a sample's arrays in
 * place. */
#include "otlp/otlp_unpack.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "core/pb_wire.h"
#include "core/utf8.h"
#include "otlp/otlp.h"
#include "otlp/otlp_lazy.h"

#ifdef PG_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Carving pieces grow from PIECE_MIN to PIECE_MAX bytes (a small request takes
 * little); a value over a quarter of the current piece gets an arena block. */
#define PIECE_MIN ((size_t)1024)
#define PIECE_MAX ((size_t)64 * 1024)
/* Packed runs up to this many bytes are compared with the previous one. */
#define SHARE_MAX_BYTES 64

/* One-byte tags: field numbers 1..15. A type with a larger number, or a
 * field type OTLP does not use, makes its table unusable (declined). */
#define UNPACK_SLOTS 16
/* Message types reachable from ExportProfilesServiceRequest (about 20). */
#define UNPACK_MAX_TYPES 48

enum kind {
    K_NONE = 0, /* no such field: declined */
    K_U32,      /* int32, uint32, enum: the low 32 bits, as protobuf-c */
    K_U64,      /* int64, uint64 */
    K_BOOL,
    K_F64, /* fixed64, double */
    K_STR,
    K_BYTES,
    K_MSG,
    K_R_U32, /* repeated scalars: one packed run */
    K_R_U64,
    K_R_BOOL,
    K_R_F64,
    K_R_STR, /* repeated, one element per occurrence, sized by the counting walk */
    K_R_BYTES,
    K_R_MSG,
};

struct slot {
    uint8_t kind;  /* enum kind */
    uint8_t wt;    /* the wire type it must come with */
    bool oneof;
    bool share;     /* a packed run equal to the previous one of this field may share its array */
    uint8_t lazy;   /* 1 Profile.samples, 2 ProfilesDictionary.link_table: may be kept in
                     * wire form (otlp_lazy.h) */
    uint16_t child; /* K_MSG, K_R_MSG: the table of the field's message type */
    uint32_t id;
    size_t off, qoff; /* the member; its count (repeated) or case (oneof) */
};

struct mtab {
    const ProtobufCMessageDescriptor *d;
    bool usable;
    struct slot s[UNPACK_SLOTS];
};

static struct mtab g_tabs[UNPACK_MAX_TYPES];
static size_t g_ntabs;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static enum kind kind_of(const ProtobufCFieldDescriptor *fd)
{
    bool rep = fd->label == PROTOBUF_C_LABEL_REPEATED;

    switch (fd->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_ENUM:
        return rep ? K_R_U32 : K_U32;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_UINT64:
        return rep ? K_R_U64 : K_U64;
    case PROTOBUF_C_TYPE_BOOL:
        return rep ? K_R_BOOL : K_BOOL;
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return rep ? K_R_F64 : K_F64;
    case PROTOBUF_C_TYPE_STRING:
        return rep ? K_R_STR : K_STR;
    case PROTOBUF_C_TYPE_BYTES:
        return rep ? K_R_BYTES : K_BYTES;
    case PROTOBUF_C_TYPE_MESSAGE:
        return rep ? K_R_MSG : K_MSG;
    default:
        return K_NONE;
    }
}

/* The table of @d (built, with those of the types it holds, on first sight). */
static size_t table_of(const ProtobufCMessageDescriptor *d)
{
    size_t t;

    for (t = 0; t < g_ntabs; t++) {
        if (g_tabs[t].d == d) {
            return t;
        }
    }
    if (g_ntabs == UNPACK_MAX_TYPES) {
        return SIZE_MAX;
    }
    t = g_ntabs++;
    g_tabs[t].d = d;
    g_tabs[t].usable = true;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        struct slot *sl;
        enum kind k = kind_of(fd);

        if (fd->id >= UNPACK_SLOTS || k == K_NONE ||
            (fd->label != PROTOBUF_C_LABEL_REPEATED && fd->label != PROTOBUF_C_LABEL_NONE)) {
            g_tabs[t].usable = false;
            continue;
        }
        sl = &g_tabs[t].s[fd->id];
        sl->kind = (uint8_t)k;
        sl->wt = (uint8_t)(k >= K_R_U32 && k <= K_R_F64 ? PG_PB_LEN
                           : k == K_U32 || k == K_U64 || k == K_BOOL ? PG_PB_VARINT
                           : k == K_F64                              ? PG_PB_I64
                                                                     : PG_PB_LEN);
        sl->oneof = (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0;
        /* Only a Sample's arrays: nothing writes them in place (the pprof translator
         * shares them too), while OTTL edits a profile's attribute_indices in place. */
        sl->share = d == &opentelemetry__proto__profiles__v1development__sample__descriptor &&
                    k >= K_R_U32 && k <= K_R_F64;
        sl->lazy = d == &opentelemetry__proto__profiles__v1development__profile__descriptor &&
                           fd->id == 2
                       ? 1
                   : d == &opentelemetry__proto__profiles__v1development__profiles_dictionary__descriptor &&
                           fd->id == 4
                       ? 2
                       : 0;
        sl->id = fd->id;
        sl->off = fd->offset;
        sl->qoff = fd->quantifier_offset;
        if (k == K_MSG || k == K_R_MSG) {
            size_t c = table_of(fd->descriptor);
            if (c == SIZE_MAX) {
                g_tabs[t].usable = false;
                continue;
            }
            g_tabs[t].s[fd->id].child = (uint16_t)c; /* g_tabs may not move: a fixed array */
        }
    }
    return t;
}

static void build_tables(void)
{
    (void)table_of(&pg_otlp_request_descriptor);
}

/* The last packed run of a shared field: its bytes on the wire and its array. */
struct shared_run {
    const struct slot *sl;
    const uint8_t *wire;
    size_t bytes, n;
    void *arr;
};

struct uctx {
    struct pg_arena *arena;
    unsigned depth, max_depth;
    struct pg_otlp_unpack_info info;
    uint8_t *pc, *pe;  /* the carving piece: next free byte, end */
    size_t piece;      /* the last piece's size */
    struct shared_run last[K_R_F64 - K_R_U32 + 1]; /* by kind: a Sample has one field of each */
    size_t lazy_min;               /* a profile with this many samples keeps them as wire; 0 never */
    struct pg_otlp_lazy *lazy;     /* the current lazy profile's records */
    const ProtobufCMessage *lazy_owner; /* ... and that profile */
};

/* Takes a new carving piece of at least @need bytes from the arena. Its first
 * 16 bytes are never handed out: a carved value then never starts where an
 * arena allocation does, so pg_arena_realloc cannot grow one in place over
 * its neighbours. */
static bool new_piece(struct uctx *u, size_t need)
{
    size_t size = u->piece == 0 ? PIECE_MIN : u->piece < PIECE_MAX ? u->piece * 2 : PIECE_MAX;
    uint8_t *p;

    while (size < need + 16) {
        size *= 2;
    }
    if ((p = pg_arena_alloc(u->arena, size)) == NULL) {
        return false;
    }
    POISON(p, size);
    u->piece = size;
    u->pc = p + 16;
    u->pe = p + size;
    return true;
}

/* @n bytes (> 0) aligned to @align (a power of two <= 16), uninitialised. */
static inline void *carve(struct uctx *u, size_t n, size_t align)
{
    uint8_t *p = (uint8_t *)(((uintptr_t)u->pc + align - 1) & ~(uintptr_t)(align - 1));

    if (p > u->pe || n > (size_t)(u->pe - p)) {
        if (n > PIECE_MAX / 4) {
            return pg_arena_alloc(u->arena, n); /* its own block: no tail wasted */
        }
        if (!new_piece(u, n)) {
            return NULL;
        }
        p = u->pc; /* 16-byte aligned */
    }
    u->pc = p + n;
    UNPOISON(p, n);
    return p;
}

static enum pg_otlp_unpack_result unpack_message(struct uctx *u, const struct mtab *t,
                                                 ProtobufCMessage *m, struct pg_pb r);

/* A length prefix and its range; protobuf-c reads a prefix of at most 5
 * bytes (and a tag of at most 5), so a longer, overlong one is declined. */
static inline bool len5(struct pg_pb *r, struct pg_pb *sub)
{
    const uint8_t *p = r->p;

    if (p < r->end && p[0] >= 0x80 && r->end - p >= 5 && (p[1] & p[2] & p[3] & p[4] & 0x80)) {
        return false;
    }
    return pg_pb_len(r, sub);
}

static inline bool skip5(struct pg_pb *r, uint32_t wt)
{
    struct pg_pb sub;

    return wt == PG_PB_LEN ? len5(r, &sub) : pg_pb_skip(r, wt);
}

/* A fresh message of @t's type in the arena, initialised as protobuf-c does. */
static ProtobufCMessage *new_message(struct uctx *u, const struct mtab *t)
{
    ProtobufCMessage *m = pg_arena_alloc(u->arena, t->d->sizeof_message);

    if (m != NULL) {
        t->d->message_init(m);
    }
    return m;
}

/* A string value: copied and terminated; a NUL inside becomes 0xFF. */
static enum pg_otlp_unpack_result read_str(struct uctx *u, struct pg_pb *r, char **dst)
{
    struct pg_pb sub;
    size_t n;
    char *s;

    if (!len5(r, &sub)) {
        return PG_OTLP_UNPACK_DECLINED;
    }
    n = (size_t)(sub.end - sub.p);
    if ((s = carve(u, n + 1, 1)) == NULL) {
        return PG_OTLP_UNPACK_NOMEM;
    }
    memcpy(s, sub.p, n);
    s[n] = '\0';
    if (memchr(s, 0, n) != NULL) {
        for (char *q = s; (q = memchr(q, 0, (size_t)(s + n - q))) != NULL; q++) {
            *q = (char)0xff;
        }
        u->info.suspect_strings++;
    } else if (!pg_utf8_valid(s, n)) {
        u->info.suspect_strings++;
    }
    if (n > u->info.longest_string) {
        u->info.longest_string = n;
    }
    *dst = s;
    return PG_OTLP_UNPACK_OK;
}

static enum pg_otlp_unpack_result read_bytes(struct uctx *u, struct pg_pb *r,
                                             ProtobufCBinaryData *dst)
{
    struct pg_pb sub;
    ProtobufCBinaryData bd = {0, NULL};

    if (!len5(r, &sub)) {
        return PG_OTLP_UNPACK_DECLINED;
    }
    bd.len = (size_t)(sub.end - sub.p);
    if (bd.len > 0) { /* protobuf-c leaves data NULL when empty */
        if ((bd.data = carve(u, bd.len, 1)) == NULL) {
            return PG_OTLP_UNPACK_NOMEM;
        }
        memcpy(bd.data, sub.p, bd.len);
    }
    *dst = bd;
    return PG_OTLP_UNPACK_OK;
}

/* A message value from @r into @sm (initialised), one level deeper. */
static enum pg_otlp_unpack_result read_sub(struct uctx *u, const struct mtab *t, struct pg_pb *r,
                                           ProtobufCMessage *sm)
{
    enum pg_otlp_unpack_result res;
    struct pg_pb sub;

    if (!len5(r, &sub) || u->depth >= u->max_depth) {
        return PG_OTLP_UNPACK_DECLINED;
    }
    u->depth++;
    res = unpack_message(u, t, sm, sub);
    u->depth--;
    return res;
}

/* A packed run of @k values into a new array of exactly its length. */
static enum pg_otlp_unpack_result read_packed(struct uctx *u, const struct slot *sl,
                                              struct pg_pb *r, void **arrp, size_t *np)
{
    enum kind k = (enum kind)sl->kind;
    struct shared_run *last;
    struct pg_pb sub;
    size_t n, bytes;
    uint64_t v;

    if (*np != 0 || !len5(r, &sub)) {
        return PG_OTLP_UNPACK_DECLINED; /* a second run of the same field: declined */
    }
    bytes = (size_t)(sub.end - sub.p);
    if (bytes == 0) {
        return PG_OTLP_UNPACK_OK;
    }
    last = NULL;
    if (sl->share && bytes <= SHARE_MAX_BYTES) {
        last = &u->last[k - K_R_U32];
        if (last->sl == sl && bytes == last->bytes && memcmp(sub.p, last->wire, bytes) == 0) {
            *arrp = last->arr; /* the same run as the previous sample's: the same values */
            *np = last->n;
            return PG_OTLP_UNPACK_OK;
        }
    }
    if (k == K_R_F64) {
        if (bytes % 8 != 0 || (*arrp = carve(u, bytes, 8)) == NULL) {
            return bytes % 8 != 0 ? PG_OTLP_UNPACK_DECLINED : PG_OTLP_UNPACK_NOMEM;
        }
        memcpy(*arrp, sub.p, bytes); /* little-endian host, as the wire */
        *np = bytes / 8;
        if (last != NULL) {
            *last = (struct shared_run){sl, sub.p, bytes, *np, *arrp};
        }
        return PG_OTLP_UNPACK_OK;
    }
    if (sub.end[-1] >= 0x80) {
        return PG_OTLP_UNPACK_DECLINED;
    }
    n = pg_pb_count_varints(sub.p, sub.end);
    if ((*arrp = carve(u, n * (k == K_R_U64 ? 8 : 4), k == K_R_U64 ? 8 : 4)) == NULL) {
        return PG_OTLP_UNPACK_NOMEM;
    }
    if (last != NULL) {
        *last = (struct shared_run){sl, sub.p, bytes, n, *arrp};
    }
    n = 0;
    if (k == K_R_U64) {
        uint64_t *a = *arrp;
        while (sub.p < sub.end) {
            if (!pg_pb_varint(&sub, &v)) {
                return PG_OTLP_UNPACK_DECLINED;
            }
            a[n++] = v;
        }
    } else {
        uint32_t *a = *arrp; /* protobuf_c_boolean is an int, as uint32_t here */
        while (sub.p < sub.end) {
            if (!pg_pb_varint(&sub, &v)) {
                return PG_OTLP_UNPACK_DECLINED;
            }
            a[n++] = k == K_R_BOOL ? (uint32_t)(v != 0) : (uint32_t)v;
        }
    }
    *np = n;
    return PG_OTLP_UNPACK_OK;
}

/* Counts the elements of each repeated message/string/bytes field from @r to
 * the end of the message; false when a field is cut short. */
static bool count_unpacked(const struct mtab *t, struct pg_pb r, size_t *count)
{
    uint32_t f, wt;

    while (r.p < r.end) {
        if (!pg_pb_tag(&r, &f, &wt) || !skip5(&r, wt)) {
            return false;
        }
        if (f < UNPACK_SLOTS) { /* others are unknown, kept by the filling pass */
            count[f] += t->s[f].kind >= K_R_STR;
        }
    }
    return true;
}

/* A new entry at the end of @m's unknown fields (@cap: the room they have). */
static ProtobufCMessageUnknownField *unknown_slot(struct uctx *u, ProtobufCMessage *m,
                                                 size_t *cap)
{
    if (m->n_unknown_fields == *cap) { /* rare: grow by doubling */
        size_t ncap = *cap ? *cap * 2 : 4;
        ProtobufCMessageUnknownField *grown;
        if (ncap > UINT32_MAX ||
            (grown = pg_arena_alloc(u->arena, ncap * sizeof(*grown))) == NULL) {
            return NULL;
        }
        if (m->n_unknown_fields > 0) {
            memcpy(grown, m->unknown_fields, m->n_unknown_fields * sizeof(*grown));
        }
        m->unknown_fields = grown;
        *cap = ncap;
    }
    return &m->unknown_fields[m->n_unknown_fields++];
}

/* A field @m's type does not know, kept as protobuf-c keeps it (its value's
 * bytes after the tag, a length prefix included, copied), so it is packed
 * again on the way out. @r is just past the tag. */
static enum pg_otlp_unpack_result keep_unknown(struct uctx *u, ProtobufCMessage *m,
                                              size_t *cap, uint32_t f, uint32_t wt,
                                              struct pg_pb *r)
{
    const uint8_t *start = r->p;
    ProtobufCMessageUnknownField *uf;

    if (!skip5(r, wt)) {
        return PG_OTLP_UNPACK_DECLINED; /* cut short, or a group */
    }
    if ((uf = unknown_slot(u, m, cap)) == NULL) {
        return PG_OTLP_UNPACK_NOMEM;
    }
    uf->tag = f;
    uf->wire_type = (ProtobufCWireType)wt;
    uf->len = (size_t)(r->p - start);
    if ((uf->data = pg_arena_alloc(u->arena, uf->len ? uf->len : 1)) == NULL) {
        return PG_OTLP_UNPACK_NOMEM;
    }
    memcpy(uf->data, start, uf->len);
    return PG_OTLP_UNPACK_OK;
}

/* One Profile.samples or link_table record (@at its tag, @r just past it; @sl its slot) kept
 * in wire form: checked canonical (else declined: protobuf-c's path unpacks it), copied
 * behind @m's previous ones. The first one sizes the copy for all of @m's records of that
 * field and marks @m lazy (otlp_lazy.h). */
static enum pg_otlp_unpack_result keep_lazy(struct uctx *u, ProtobufCMessage *m, size_t *cap,
                                           const struct slot *sl, const uint8_t *at,
                                           struct pg_pb *r)
{
    struct pg_pb sub;
    const uint8_t *lp = r->p;
    size_t n;

    if (!len5(r, &sub) ||
        (size_t)(sub.p - lp) != pg_pb_varint_len((uint64_t)(sub.end - sub.p)) ||
        !(sl->lazy == 1 ? pg_otlp_lazy_canonical
                        : pg_otlp_lazy_link_canonical)(sub.p, (size_t)(sub.end - sub.p))) {
        return PG_OTLP_UNPACK_DECLINED;
    }
    if (u->lazy_owner != m) {
        struct pg_pb w = {at, r->end};
        ProtobufCMessageUnknownField *uf;
        size_t total = 0;
        uint32_t f, wt;

        while (w.p < w.end) {
            const uint8_t *t0 = w.p;
            if (!pg_pb_tag(&w, &f, &wt) || !skip5(&w, wt)) {
                return PG_OTLP_UNPACK_DECLINED;
            }
            total += f == sl->id ? (size_t)(w.p - t0) : 0;
        }
        if ((u->lazy = pg_arena_alloc(u->arena, sizeof(*u->lazy))) == NULL ||
            (u->lazy->wire = pg_arena_alloc(u->arena, total)) == NULL ||
            (uf = unknown_slot(u, m, cap)) == NULL) {
            return PG_OTLP_UNPACK_NOMEM;
        }
        u->lazy->n = 0;
        u->lazy->len = 0;
        uf->tag = 0;
        uf->wire_type = PG_OTLP_LAZY_MARK;
        uf->len = sizeof(*u->lazy);
        uf->data = (uint8_t *)(void *)u->lazy;
        u->lazy_owner = m;
    }
    n = (size_t)(r->p - at);
    memcpy(u->lazy->wire + u->lazy->len, at, n);
    u->lazy->len += n;
    u->lazy->n++;
    return PG_OTLP_UNPACK_OK;
}

static enum pg_otlp_unpack_result unpack_message(struct uctx *u, const struct mtab *t,
                                                 ProtobufCMessage *m, struct pg_pb r)
{
    size_t ucap = 0; /* room in m->unknown_fields */
    size_t count[UNPACK_SLOTS];
    uint8_t *block[UNPACK_SLOTS]; /* a repeated message's elements, by field number */
    bool counted = false;
    char *base = (char *)m;

    if (!t->usable) {
        return PG_OTLP_UNPACK_DECLINED;
    }
    while (r.p < r.end) {
        const uint8_t *at = r.p;
        const struct slot *sl;
        enum pg_otlp_unpack_result res = PG_OTLP_UNPACK_OK;
        unsigned tag = *r.p++;
        uint64_t v;

        sl = &t->s[(tag >> 3) & (UNPACK_SLOTS - 1)];
        if (tag >= 0x80 || sl->kind == K_NONE) {
            uint32_t f, wt;
            r.p = at;
            if (!pg_pb_tag(&r, &f, &wt) || r.p - at > 5 ||
                (f < UNPACK_SLOTS && t->s[f].kind != K_NONE)) { /* a known field's long tag */
                return PG_OTLP_UNPACK_DECLINED;
            }
            if ((res = keep_unknown(u, m, &ucap, f, wt, &r)) != PG_OTLP_UNPACK_OK) {
                return res;
            }
            continue;
        }
        if ((tag & 7) != sl->wt) {
            return PG_OTLP_UNPACK_DECLINED;
        }
        if (sl->oneof) {
            /* the last member wins, as in protobuf-c; the same message member
             * twice would be merged: declined */
            uint32_t was;
            memcpy(&was, base + sl->qoff, sizeof(was));
            if (was == sl->id && sl->kind == K_MSG) {
                return PG_OTLP_UNPACK_DECLINED;
            }
            memcpy(base + sl->qoff, &sl->id, sizeof(sl->id));
        }
        switch ((enum kind)sl->kind) {
        case K_U32:
        case K_BOOL: {
            uint32_t x;
            if (!pg_pb_varint(&r, &v)) {
                return PG_OTLP_UNPACK_DECLINED;
            }
            x = sl->kind == K_BOOL ? (uint32_t)(v != 0) : (uint32_t)v;
            memcpy(base + sl->off, &x, sizeof(x));
            break;
        }
        case K_U64:
            if (!pg_pb_varint(&r, &v)) {
                return PG_OTLP_UNPACK_DECLINED;
            }
            memcpy(base + sl->off, &v, sizeof(v));
            break;
        case K_F64:
            if (r.end - r.p < 8) {
                return PG_OTLP_UNPACK_DECLINED;
            }
            memcpy(base + sl->off, r.p, 8);
            r.p += 8;
            break;
        case K_STR:
            res = read_str(u, &r, (char **)(void *)(base + sl->off));
            break;
        case K_BYTES:
            res = read_bytes(u, &r, (ProtobufCBinaryData *)(void *)(base + sl->off));
            break;
        case K_MSG: {
            const struct mtab *ct = &g_tabs[sl->child];
            ProtobufCMessage *sm;
            memcpy(&sm, base + sl->off, sizeof(sm));
            if (sm != NULL && !sl->oneof) {
                return PG_OTLP_UNPACK_DECLINED; /* a second one: protobuf merges them */
            }
            if ((sm = new_message(u, ct)) == NULL) {
                return PG_OTLP_UNPACK_NOMEM;
            }
            memcpy(base + sl->off, &sm, sizeof(sm));
            res = read_sub(u, ct, &r, sm);
            break;
        }
        case K_R_U32:
        case K_R_U64:
        case K_R_BOOL:
        case K_R_F64:
            res = read_packed(u, sl, &r, (void **)(void *)(base + sl->off),
                              (size_t *)(void *)(base + sl->qoff));
            break;
        case K_R_STR:
        case K_R_BYTES:
        case K_R_MSG: {
            size_t f = tag >> 3, *np = (size_t *)(void *)(base + sl->qoff);
            const struct mtab *ct = sl->kind == K_R_MSG ? &g_tabs[sl->child] : NULL;
            size_t es = sl->kind == K_R_STR     ? sizeof(char *)
                        : sl->kind == K_R_BYTES ? sizeof(ProtobufCBinaryData)
                                                : sizeof(void *);
            char *arr;

            if (!counted) {
                memset(count, 0, sizeof(count));
                if (!count_unpacked(t, (struct pg_pb){at, r.end}, count)) {
                    return PG_OTLP_UNPACK_DECLINED;
                }
                counted = true;
            }
            memcpy(&arr, base + sl->off, sizeof(arr));
            if (arr == NULL) { /* the field's first element: its array, and block */
                /* Lazy records never get an array, so each of them comes here: the
                 * other fields' elements pay nothing for it. */
                if (__builtin_expect(sl->lazy != 0, 0) && u->lazy_min != 0 &&
                    count[f] >= u->lazy_min) {
                    res = keep_lazy(u, m, &ucap, sl, at, &r);
                    break;
                }
                if ((arr = pg_arena_alloc(u->arena, count[f] * es)) == NULL ||
                    (ct != NULL && (block[f] = pg_arena_alloc(
                                        u->arena, count[f] * ct->d->sizeof_message)) == NULL)) {
                    return PG_OTLP_UNPACK_NOMEM;
                }
                memcpy(base + sl->off, &arr, sizeof(arr));
            }
            if (ct != NULL) {
                ProtobufCMessage *sm =
                    (ProtobufCMessage *)(void *)(block[f] + *np * ct->d->sizeof_message);
                ct->d->message_init(sm);
                memcpy(arr + *np * es, &sm, sizeof(sm));
                res = read_sub(u, ct, &r, sm);
            } else if (sl->kind == K_R_STR) {
                res = read_str(u, &r, (char **)(void *)(arr + *np * es));
            } else {
                res = read_bytes(u, &r, (ProtobufCBinaryData *)(void *)(arr + *np * es));
            }
            ++*np;
            break;
        }
        case K_NONE:
            return PG_OTLP_UNPACK_DECLINED;
        }
        if (res != PG_OTLP_UNPACK_OK) {
            return res;
        }
    }
    return PG_OTLP_UNPACK_OK;
}

enum pg_otlp_unpack_result pg_otlp_unpack_request(struct pg_arena *arena, const uint8_t *buf,
                                                  size_t len, unsigned max_depth,
                                                  struct pg_otlp_request **out,
                                                  struct pg_otlp_unpack_info *info)
{
    return pg_otlp_unpack_request_lazy(arena, buf, len, max_depth, 0, out, info);
}

enum pg_otlp_unpack_result pg_otlp_unpack_request_lazy(struct pg_arena *arena,
                                                       const uint8_t *buf, size_t len,
                                                       unsigned max_depth, size_t lazy_min,
                                                       struct pg_otlp_request **out,
                                                       struct pg_otlp_unpack_info *info)
{
    struct uctx u;
    const struct mtab *t;
    ProtobufCMessage *m;
    enum pg_otlp_unpack_result res;

    *out = NULL;
    memset(&u, 0, sizeof(u));
    u.arena = arena;
    u.max_depth = max_depth;
    u.lazy_min = lazy_min;
    pthread_once(&g_once, build_tables);
    t = &g_tabs[0]; /* the request's: built first */
    if ((m = new_message(&u, t)) == NULL) {
        return PG_OTLP_UNPACK_NOMEM;
    }
    res = unpack_message(&u, t, m, (struct pg_pb){buf, buf + len});
    if (res == PG_OTLP_UNPACK_OK) {
        *out = (struct pg_otlp_request *)m;
        *info = u.info;
    }
    return res;
}
