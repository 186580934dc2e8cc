/* SPDX-License-Identifier: Apache-2.0
 * An ExportProfilesServiceRequest from the wire (otlp_decode.h): the layout
 * is told from the wire types (v1.9 / v1.8 / older are refused by name, or
 * v1.9 converted), a walk over the bytes bounds the nesting and finds NUL
 * bytes inside strings (protobuf-c would cut the C string there silently),
 * protobuf-c unpacks into the arena, then pg_otlp_validate repairs strings to
 * UTF-8, runs the dictionary checks of dict_validate.c and resolves string
 * table references in resource and scope attributes to plain strings
 * (otlp_refs.c). */
#include "otlp/otlp_decode.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/pb_wire.h"
#include "core/utf8.h"
#include "otlp/dict.h"
#include "otlp/otlp_lazy.h"
#include "otlp/otlp_refs.h"
#include "otlp/otlp_unpack.h"
#include "otlp/otlp_utf8.h"

/* Message nesting the wire walk allows (protobuf-c's unpack recurses once per level; a
 * request is 5 deep plus 2 per nested AnyValue array/kvlist). The same bound as OTLP/JSON. */
#define WIRE_MAX_DEPTH 64

#define D_SAMPLE   opentelemetry__proto__profiles__v1development__sample__descriptor
#define D_STACK    opentelemetry__proto__profiles__v1development__stack__descriptor
#define D_LOCATION opentelemetry__proto__profiles__v1development__location__descriptor
#define D_LINE     opentelemetry__proto__profiles__v1development__line__descriptor
#define D_FUNCTION opentelemetry__proto__profiles__v1development__function__descriptor
#define D_MAPPING  opentelemetry__proto__profiles__v1development__mapping__descriptor
#define D_LINK     opentelemetry__proto__profiles__v1development__link__descriptor
#define D_VALTYPE  opentelemetry__proto__profiles__v1development__value_type__descriptor

const char *pg_otlp_wire_version_name(enum pg_otlp_wire_version v)
{
    switch (v) {
    case PG_OTLP_WIRE_CURRENT:
        return "v1.10/v1.11";
    case PG_OTLP_WIRE_V1_9:
        return "v1.9";
    case PG_OTLP_WIRE_V1_8:
        return "v1.8";
    case PG_OTLP_WIRE_OLDER:
        return "v1.7 or older";
    }
    return "unknown";
}

/* ---- version detection ----------------------------------------------------
 * Each rule is a field whose wire type cannot occur in the newer layouts, so it rules them
 * out; the answer is the newest layout no rule excludes (ambiguous or empty input stays
 * CURRENT). Sample: 3 as LEN (v1.9/v1.8 packed attribute_indices; now link_index, a
 * varint) -> at most v1.9; 5 as VARINT (v1.7 link_index; timestamps are fixed64 since
 * v1.8) -> older. Profile: 3 not I64 (time_unix_nano is fixed64 since v1.8; v1.7 had
 * location_indices) -> older; 7 as VARINT (v1.8 unpacked comment_strindices; now
 * profile_id bytes), 8 as LEN (v1.8 profile_id; now dropped_attributes_count) or 9 as
 * VARINT (v1.8 dropped_attributes_count; now original_payload_format) -> at most v1.8.
 * Ambiguous on purpose: Sample 2 and 4 (LEN or VARINT in both layouts). A v1.9 Sample
 * without attributes therefore reads as current; its values land in attribute_indices,
 * which validation then refuses as dangling. With @patch, v1.9 Sample tags are rewritten
 * to the current numbers at the same offsets (one-byte tags, same lengths). */

struct vwalk {
    enum pg_otlp_wire_version v;
    const uint8_t *base;
    uint8_t *patch; /* NULL: detect only */
};

static void rule_out(struct vwalk *w, enum pg_otlp_wire_version v)
{
    if (v > w->v) {
        w->v = v;
    }
}

static bool vw_sample(struct vwalk *w, struct pg_pb r)
{
    uint32_t f, wt;

    while (r.p < r.end) {
        const uint8_t *tag = r.p;
        if (!pg_pb_tag(&r, &f, &wt) || !pg_pb_skip(&r, wt)) {
            return false;
        }
        if (f == 3 && wt == PG_PB_LEN) {
            rule_out(w, PG_OTLP_WIRE_V1_9);
        } else if (f == 5 && wt == PG_PB_VARINT) {
            rule_out(w, PG_OTLP_WIRE_OLDER);
        }
        /* v1.9 -> current: 2 values -> 4, 3 attribute_indices -> 2, 4 link_index -> 3. */
        if (w->patch != NULL && f >= 2 && f <= 4 && tag[0] < 0x80) {
            static const uint8_t to[5] = {0, 0, 4, 2, 3};
            w->patch[tag - w->base] = (uint8_t)(to[f] << 3 | wt);
        }
    }
    return true;
}

static bool vw_profile(struct vwalk *w, struct pg_pb r)
{
    uint32_t f, wt;
    struct pg_pb sub;
    uint64_t val;

    while (r.p < r.end) {
        if (!pg_pb_field(&r, &f, &wt, &val, &sub)) {
            return false;
        }
        if (f == 2 && wt == PG_PB_LEN) {
            if (!vw_sample(w, sub)) {
                return false;
            }
        } else if (f == 3 && wt != PG_PB_I64) {
            rule_out(w, PG_OTLP_WIRE_OLDER);
        } else if ((f == 7 && wt == PG_PB_VARINT) || (f == 8 && wt == PG_PB_LEN) ||
                   (f == 9 && wt == PG_PB_VARINT)) {
            rule_out(w, PG_OTLP_WIRE_V1_8);
        }
    }
    return true;
}

/* Follows request.1 -> ResourceProfiles.2 -> ScopeProfiles.2 -> Profile; false when the
 * bytes are not well-formed on that path (unpack reports that). */
static bool vw_walk(struct vwalk *w, struct pg_pb r, unsigned level)
{
    static const uint32_t path_field[3] = {1, 2, 2};
    uint32_t f, wt;
    struct pg_pb sub;
    uint64_t val;

    while (r.p < r.end) {
        if (!pg_pb_field(&r, &f, &wt, &val, &sub)) {
            return false;
        }
        if (f != path_field[level] || wt != PG_PB_LEN) {
            continue;
        }
        if (!(level == 2 ? vw_profile(w, sub) : vw_walk(w, sub, level + 1))) {
            return false;
        }
    }
    return true;
}

enum pg_otlp_wire_version pg_otlp_wire_version_detect(const uint8_t *buf, size_t len)
{
    struct vwalk w = {PG_OTLP_WIRE_CURRENT, buf, NULL};

    if (buf == NULL || !vw_walk(&w, (struct pg_pb){buf, buf + len}, 0)) {
        return PG_OTLP_WIRE_CURRENT;
    }
    return w.v;
}

/* ---- the wire walk: nesting bound, NULs in strings, clear messages ---------- */

struct wwalk {
    const uint8_t *base;
    uint8_t *patch; /* NULL: find only */
    bool deep;      /* into leaf messages too: only to explain what protobuf-c refused */
    size_t nuls;
    struct {
        const ProtobufCFieldDescriptor *fd;
        size_t idx; /* element of a repeated field; SIZE_MAX for a singular one */
    } path[WIRE_MAX_DEPTH + 1];
    unsigned depth;
    struct pg_status *st;
};

/* Messages without strings or nested messages of their own: skipped by length. */
static bool leaf_message(const ProtobufCMessageDescriptor *d)
{
    return d == &D_SAMPLE || d == &D_STACK || d == &D_LOCATION || d == &D_LINE ||
           d == &D_FUNCTION || d == &D_MAPPING || d == &D_LINK || d == &D_VALTYPE;
}

static const char *wire_path(const struct wwalk *w, char *buf, size_t n)
{
    size_t off = 0;

    buf[0] = '\0';
    for (unsigned i = 0; i < w->depth && off + 1 < n; i++) {
        int k = w->path[i].idx == SIZE_MAX
                    ? snprintf(buf + off, n - off, "%s%s", i ? "." : "", w->path[i].fd->name)
                    : snprintf(buf + off, n - off, "%s%s[%zu]", i ? "." : "",
                               w->path[i].fd->name, w->path[i].idx);
        off += k > 0 ? (size_t)k : 0;
    }
    return w->depth ? buf : "request";
}

static bool wire_type_fits(const ProtobufCFieldDescriptor *fd, uint32_t wt)
{
    bool packable = fd->label == PROTOBUF_C_LABEL_REPEATED;

    switch (fd->type) {
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return wt == PG_PB_LEN;
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return wt == PG_PB_I64 || (packable && wt == PG_PB_LEN);
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return wt == PG_PB_I32 || (packable && wt == PG_PB_LEN);
    default:
        return wt == PG_PB_VARINT || (packable && wt == PG_PB_LEN);
    }
}

static const char *wire_type_name(uint32_t wt)
{
    static const char *const names[] = {"varint", "fixed64", "length-delimited", "group start",
                                        "group end", "fixed32", "6", "7"};
    return names[wt & 7];
}

/* A packed run of scalars: whole fixed-size values, or varints that all end inside it. */
static bool packed_ok(const ProtobufCFieldDescriptor *fd, struct pg_pb r)
{
    uint64_t v;

    switch (fd->type) {
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return (r.end - r.p) % 8 == 0;
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return (r.end - r.p) % 4 == 0;
    default:
        while (r.p < r.end) {
            if (!pg_pb_varint(&r, &v)) {
                return false;
            }
        }
        return true;
    }
}

static enum pg_err ww_message(struct wwalk *w, const ProtobufCMessageDescriptor *desc,
                              struct pg_pb r)
{
    char p[160];
    size_t seen[16] = {0}; /* elements so far per repeated field (by descriptor index) */

    while (r.p < r.end) {
        uint32_t f, wt;
        const uint8_t *at = r.p;
        const ProtobufCFieldDescriptor *fd;
        struct pg_pb sub;

        if (!pg_pb_tag(&r, &f, &wt)) {
            return pg_status_set(w->st, PG_ERR_MALFORMED,
                                 "%s: bad field tag at byte %zu", wire_path(w, p, sizeof(p)),
                                 (size_t)(at - w->base));
        }
        fd = protobuf_c_message_descriptor_get_field(desc, f);
        if (fd != NULL && !wire_type_fits(fd, wt)) {
            return pg_status_set(w->st, PG_ERR_MALFORMED,
                                 "%s.%s (field %u) has wire type %s at byte %zu, impossible "
                                 "for its type",
                                 wire_path(w, p, sizeof(p)), fd->name, f, wire_type_name(wt),
                                 (size_t)(at - w->base));
        }
        if (wt != PG_PB_LEN) {
            if (!pg_pb_skip(&r, wt)) {
                return pg_status_set(w->st, PG_ERR_MALFORMED,
                                     "%s: field %u (wire type %s) at byte %zu is truncated or "
                                     "of an unsupported wire type",
                                     wire_path(w, p, sizeof(p)), f, wire_type_name(wt),
                                     (size_t)(at - w->base));
            }
            continue;
        }
        {
            struct pg_pb lr = r;
            uint64_t n = 0;
            if (!pg_pb_varint(&lr, &n) || n > (uint64_t)(r.end - lr.p)) {
                return pg_status_set(w->st, PG_ERR_MALFORMED,
                                     "%s: field %u (%s) at byte %zu has length %llu, past the "
                                     "end of its message (%zu bytes left)",
                                     wire_path(w, p, sizeof(p)), f,
                                     fd != NULL ? fd->name : "unknown", (size_t)(at - w->base),
                                     (unsigned long long)n, (size_t)(r.end - lr.p));
            }
        }
        (void)pg_pb_len(&r, &sub); /* checked just above */
        if (fd == NULL) {
            continue;
        }
        if (fd->label == PROTOBUF_C_LABEL_REPEATED && fd->type != PROTOBUF_C_TYPE_STRING &&
            fd->type != PROTOBUF_C_TYPE_BYTES && fd->type != PROTOBUF_C_TYPE_MESSAGE &&
            !packed_ok(fd, sub)) {
            return pg_status_set(w->st, PG_ERR_MALFORMED,
                                 "%s.%s (field %u) at byte %zu: packed values cut short",
                                 wire_path(w, p, sizeof(p)), fd->name, f,
                                 (size_t)(at - w->base));
        }
        if (fd->type == PROTOBUF_C_TYPE_STRING) {
            for (const uint8_t *q = sub.p; (q = memchr(q, 0, (size_t)(sub.end - q))) != NULL;
                 q++) {
                w->nuls++;
                if (w->patch != NULL) {
                    /* 0xFF is never UTF-8: the repair turns it into U+FFFD like any bad byte. */
                    w->patch[q - w->base] = 0xff;
                }
            }
        } else if (fd->type == PROTOBUF_C_TYPE_MESSAGE &&
                   (w->deep || !leaf_message(fd->descriptor))) {
            enum pg_err err;
            if (w->depth >= WIRE_MAX_DEPTH) {
                return pg_status_set(w->st, PG_ERR_MALFORMED,
                                     "messages nested deeper than %d: %s", WIRE_MAX_DEPTH,
                                     wire_path(w, p, sizeof(p)));
            }
            {
                size_t fi = (size_t)(fd - desc->fields);
                w->path[w->depth].fd = fd;
                w->path[w->depth].idx = SIZE_MAX;
                if (fd->label == PROTOBUF_C_LABEL_REPEATED && fi < 16) {
                    w->path[w->depth].idx = seen[fi]++;
                }
                w->depth++;
            }
            err = ww_message(w, fd->descriptor, sub);
            w->depth--;
            if (err != PG_ERR_OK) {
                return err;
            }
        }
    }
    return PG_ERR_OK;
}

/* ---- decode ---------------------------------------------------------------- */

static enum pg_err validate_req(struct pg_arena *arena, struct pg_otlp_request *req,
                                const struct pg_otlp_limits *limits, bool strings_ok,
                                struct pg_otlp_decode_stats *stats, struct pg_status *st);

enum pg_err pg_otlp_decode(struct pg_arena *arena, const uint8_t *buf, size_t len,
                           const struct pg_otlp_decode_opts *opts,
                           struct pg_otlp_request **out, struct pg_otlp_decode_stats *stats,
                           struct pg_status *st)
{
    struct pg_otlp_decode_stats local;
    struct wwalk w;
    ProtobufCAllocator alloc;
    struct pg_otlp_request *req;
    struct pg_otlp_unpack_info info;
    bool strings_ok = false; /* the fast unpack saw every string fine */
    enum pg_err err;
    uint8_t *copy = NULL;

    *out = NULL;
    if (stats == NULL) {
        stats = &local;
    }
    memset(stats, 0, sizeof(*stats));
    if (buf == NULL) {
        if (len != 0) {
            return pg_status_set(st, PG_ERR_MALFORMED, "otlp: no request bytes");
        }
        buf = (const uint8_t *)""; /* an empty request; no arithmetic on NULL below */
    }
    /* The plain case (every field known, the current layout's wire types) in one pass;
     * anything else takes the checked path below, which says what is wrong. */
    switch (pg_otlp_unpack_request_lazy(arena, buf, len, WIRE_MAX_DEPTH,
                                        opts != NULL ? opts->lazy_min_samples : 0, &req, &info)) {
    case PG_OTLP_UNPACK_OK: {
        const struct pg_otlp_limits *lim = opts != NULL ? opts->limits : NULL;
        strings_ok = info.suspect_strings == 0 &&
                     (lim == NULL || lim->max_string_bytes == 0 ||
                      info.longest_string <= lim->max_string_bytes);
        goto validate;
    }
    case PG_OTLP_UNPACK_NOMEM:
        if (pg_arena_hit_cap(arena)) {
            goto nomem;
        }
        break; /* not the cap: let protobuf-c try */
    case PG_OTLP_UNPACK_DECLINED:
        break;
    }
    stats->version = pg_otlp_wire_version_detect(buf, len);
    if (stats->version != PG_OTLP_WIRE_CURRENT) {
        if (stats->version != PG_OTLP_WIRE_V1_9 || opts == NULL || !opts->convert_v1_9) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "otlp: the request is in the OTLP Profiles %s layout (%s); "
                                 "only v1.10/v1.11 is accepted (Collector v0.148.0 or later)",
                                 pg_otlp_wire_version_name(stats->version),
                                 stats->version == PG_OTLP_WIRE_V1_9
                                     ? "Sample fields 2-4 numbered as before v1.10"
                                     : "Profile fields numbered as before v1.9");
        }
        copy = pg_arena_memdup(arena, buf, len);
        if (copy == NULL) {
            goto nomem;
        }
        {
            struct vwalk vw = {PG_OTLP_WIRE_CURRENT, copy, copy};
            struct pg_pb r = {copy, copy + len};
            if (!vw_walk(&vw, r, 0)) {
                return pg_status_set(st, PG_ERR_MALFORMED, "otlp: malformed v1.9 request");
            }
        }
        buf = copy;
    }
    memset(&w, 0, sizeof(w));
    w.base = buf;
    w.st = st;
    err = ww_message(&w, &pg_otlp_request_descriptor, (struct pg_pb){buf, buf + len});
    if (err != PG_ERR_OK) {
        return err;
    }
    if (w.nuls != 0) {
        if (copy == NULL && (copy = pg_arena_memdup(arena, buf, len)) == NULL) {
            goto nomem;
        }
        w.base = copy;
        w.patch = copy;
        w.nuls = 0;
        err = ww_message(&w, &pg_otlp_request_descriptor, (struct pg_pb){copy, copy + len});
        if (err != PG_ERR_OK) {
            return err;
        }
        buf = copy;
    }
    pg_arena_protobuf_allocator(arena, &alloc);
    req = (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor, &alloc,
                                                               len, buf);
    if (req == NULL) {
        if (pg_arena_hit_cap(arena)) {
            return pg_status_set(st, PG_ERR_LIMIT,
                                 "otlp: the %zu-byte request does not fit the memory cap", len);
        }
        /* Say where: walk again, into the leaf messages this time. */
        memset(&w, 0, sizeof(w));
        w.base = buf;
        w.st = st;
        w.deep = true;
        err = ww_message(&w, &pg_otlp_request_descriptor, (struct pg_pb){buf, buf + len});
        if (err != PG_ERR_OK) {
            return err;
        }
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "otlp: %zu bytes are not a valid ExportProfilesServiceRequest "
                             "(truncated or malformed protobuf)",
                             len);
    }
validate:
    {
        enum pg_otlp_wire_version v = stats->version;
        err = validate_req(arena, req, opts != NULL ? opts->limits : NULL, strings_ok, stats,
                           st);
        stats->version = v;
    }
    if (err != PG_ERR_OK) {
        return err;
    }
    *out = req;
    return PG_ERR_OK;

nomem:
    if (pg_arena_hit_cap(arena)) {
        return pg_status_set(st, PG_ERR_LIMIT,
                             "otlp: the %zu-byte request does not fit the memory cap", len);
    }
    return pg_status_set(st, PG_ERR_NOMEM, "otlp: no memory to decode the request");
}

/* ---- validate: UTF-8 repair of every string field, then the dictionary checks ---- */

struct swalk {
    struct pg_arena *arena;
    size_t max_bytes;
    size_t repaired, bad;
    struct {
        const char *name;
        size_t idx;
    } path[WIRE_MAX_DEPTH + 2];
    unsigned depth;
    struct pg_status *st;
};

static const char *str_path(const struct swalk *w, const char *field, char *buf, size_t n)
{
    size_t off = 0;

    buf[0] = '\0';
    for (unsigned i = 0; i < w->depth && off + 1 < n; i++) {
        int k = w->path[i].idx == SIZE_MAX
                    ? snprintf(buf + off, n - off, "%s.", w->path[i].name)
                    : snprintf(buf + off, n - off, "%s[%zu].", w->path[i].name, w->path[i].idx);
        off += k > 0 ? (size_t)k : 0;
    }
    if (off + 1 < n) {
        snprintf(buf + off, n - off, "%s", field);
    }
    return buf;
}

/* One string: within max_string_bytes, valid UTF-8 (repaired into the arena otherwise). */
static enum pg_err fix_string(struct swalk *w, char **sp, const char *field, size_t idx)
{
    char *s = *sp;
    size_t n, bad = 0;
    char *fixed;

    if (s == NULL) {
        return PG_ERR_OK;
    }
    n = strlen(s);
    if (!pg_utf8_valid(s, n)) {
        if (n > (SIZE_MAX - 1) / 3 || (fixed = pg_arena_alloc(w->arena, n * 3 + 1)) == NULL) {
            return pg_status_set(w->st,
                                 pg_arena_hit_cap(w->arena) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                                 "otlp: no memory to repair a string to UTF-8");
        }
        n = pg_utf8_repair(fixed, s, n, &bad);
        fixed[n] = '\0';
        *sp = fixed;
        w->repaired++;
        w->bad += bad;
    }
    /* The cap applies to the stored (repaired) form, so a forwarded request re-validates
     * the same. */
    if (w->max_bytes != 0 && n > w->max_bytes) {
        char p[192], f[96];
        if (idx != SIZE_MAX) {
            snprintf(f, sizeof(f), "%s[%zu]", field, idx);
        }
        return pg_status_set(w->st, PG_ERR_LIMIT, "%s is %zu bytes, over max_string_bytes=%zu",
                             str_path(w, idx != SIZE_MAX ? f : field, p, sizeof(p)), n,
                             w->max_bytes);
    }
    return PG_ERR_OK;
}

static enum pg_err fix_message(struct swalk *w, ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *desc = m->descriptor;

    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &desc->fields[i];
        char *base = (char *)m;
        enum pg_err err = PG_ERR_OK;

        if (fd->type != PROTOBUF_C_TYPE_STRING &&
            (fd->type != PROTOBUF_C_TYPE_MESSAGE || leaf_message(fd->descriptor))) {
            continue;
        }
        if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(const void *)(base + fd->quantifier_offset) != fd->id) {
            continue;
        }
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(const void *)(base + fd->quantifier_offset);
            void **arr = *(void ***)(void *)(base + fd->offset);
            for (size_t j = 0; j < n && err == PG_ERR_OK; j++) {
                if (fd->type == PROTOBUF_C_TYPE_STRING) {
                    err = fix_string(w, (char **)&arr[j], fd->name, j);
                } else if (w->depth < WIRE_MAX_DEPTH + 1) {
                    w->path[w->depth].name = fd->name;
                    w->path[w->depth++].idx = j;
                    err = fix_message(w, arr[j]);
                    w->depth--;
                }
            }
        } else if (fd->type == PROTOBUF_C_TYPE_STRING) {
            err = fix_string(w, (char **)(void *)(base + fd->offset), fd->name, SIZE_MAX);
        } else {
            ProtobufCMessage *sub = *(ProtobufCMessage **)(void *)(base + fd->offset);
            if (sub != NULL && w->depth < WIRE_MAX_DEPTH + 1) {
                w->path[w->depth].name = fd->name;
                w->path[w->depth++].idx = SIZE_MAX;
                err = fix_message(w, sub);
                w->depth--;
            }
        }
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    return PG_ERR_OK;
}

/* pg_otlp_validate; @strings_ok: every string is known valid UTF-8 within
 * max_string_bytes already (the fast unpack looked at each as it copied it),
 * so the walk over the strings is skipped. */
static enum pg_err validate_req(struct pg_arena *arena, struct pg_otlp_request *req,
                                const struct pg_otlp_limits *limits, bool strings_ok,
                                struct pg_otlp_decode_stats *stats, struct pg_status *st)
{
    struct pg_otlp_decode_stats local;
    struct swalk w;
    enum pg_err err;

    if (stats == NULL) {
        stats = &local;
    }
    memset(stats, 0, sizeof(*stats));
    if (!strings_ok) {
        memset(&w, 0, sizeof(w));
        w.arena = arena;
        w.max_bytes = limits != NULL ? limits->max_string_bytes : 0;
        w.st = st;
        err = fix_message(&w, &req->base);
        stats->utf8_repaired = w.repaired;
        if (w.bad != 0) {
            pg_utf8_note(w.bad, "received OTLP request");
        }
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    /* An empty export (no resource_profiles) has nothing to check and may lack the
     * dictionary. */
    if (req->n_resource_profiles == 0 && req->dictionary == NULL) {
        return PG_ERR_OK;
    }
    err = pg_dict_validate_limits(arena, req, false, limits, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    /* Resource and scope attributes given by reference (the Collector's otlphttp exporter
     * writes them so) become plain key / string_value, as its ProtoUnmarshaler does, so the
     * pipeline (service.name, OTTL resource paths, debug) and a gRPC peer downstream see
     * them. Indices were checked above. */
    err = pg_otlp_refs_resolve(arena, req, false, NULL, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    stats->resource_profiles = req->n_resource_profiles;
    for (size_t r = 0; r < req->n_resource_profiles; r++) {
        const struct pg_otlp_resprof *rp = req->resource_profiles[r];
        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            const struct pg_otlp_scopeprof *sp = rp->scope_profiles[s];
            stats->profiles += sp->n_profiles;
            for (size_t k = 0; k < sp->n_profiles; k++) {
                stats->samples += pg_otlp_profile_sample_count(sp->profiles[k]);
            }
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_otlp_validate(struct pg_arena *arena, struct pg_otlp_request *req,
                             const struct pg_otlp_limits *limits,
                             struct pg_otlp_decode_stats *stats, struct pg_status *st)
{
    return validate_req(arena, req, limits, false, stats, st);
}
