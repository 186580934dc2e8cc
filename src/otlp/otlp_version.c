/* SPDX-License-Identifier: Apache-2.0
 * Current-layout request bytes rewritten for an older OTLP Profiles version
 * (otlp_version.h). v1.9 differs from v1.10/v1.11 in two places only (the
 * upstream protos diffed): Sample fields 2-4 were renumbered (values 2 -> 4,
 * attribute_indices 3 -> 2, link_index 4 -> 3), and KeyValue.key_strindex (3)
 * and AnyValue.string_value_strindex (8) are new. One walk over the bytes
 * writes each Sample's fields under their v1.9 numbers in v1.9's field order
 * (what protoc writes with the v1.9 schema) and notes any reference; a request
 * with references is decoded, resolved and encoded again first, so a v1.9
 * reader, which would skip those fields, sees the strings. Nothing of a
 * current request is without a place in v1.9. */
#include "otlp/otlp_version.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/pb_wire.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_refs.h"

const char *const pg_otlp_proto_version_names[] = {"v1.11", "v1.10", "v1.9", NULL};

/* Nesting allowed in attribute values (arrays and kvlists), as the decoder's wire walk. */
#define MAX_DEPTH 64

struct walk {
    const uint8_t *in;
    uint8_t *out; /* a copy of in, Samples rewritten in place */
    size_t samples;
    bool refs; /* a reference seen: the bytes must be resolved first */
};

/* ---- references -------------------------------------------------------------- */

static bool scan_value(struct walk *w, struct pg_pb r, unsigned depth);

/* A KeyValue: 3 key_strindex (a reference when set), 2 its value. */
static bool scan_kv(struct walk *w, struct pg_pb r, unsigned depth)
{
    uint32_t f, wt;
    uint64_t val = 0;
    struct pg_pb sub;

    while (r.p < r.end) {
        if (!pg_pb_field(&r, &f, &wt, &val, &sub)) {
            return false;
        }
        if (f == 3 && (wt != PG_PB_VARINT || val != 0)) {
            w->refs = true;
        } else if (f == 2 && wt == PG_PB_LEN && !scan_value(w, sub, depth + 1)) {
            return false;
        }
    }
    return true;
}

/* An AnyValue: 8 string_value_strindex, 5 an ArrayValue (1: AnyValues), 6 a KeyValueList
 * (1: KeyValues). */
static bool scan_value(struct walk *w, struct pg_pb r, unsigned depth)
{
    uint32_t f, wt, f2, wt2;
    uint64_t val;
    struct pg_pb sub, el;

    if (depth > MAX_DEPTH) {
        return false;
    }
    while (r.p < r.end && !w->refs) {
        if (!pg_pb_field(&r, &f, &wt, &val, &sub)) {
            return false;
        }
        if (f == 8) {
            w->refs = true;
        } else if ((f == 5 || f == 6) && wt == PG_PB_LEN) {
            while (sub.p < sub.end) {
                if (!pg_pb_field(&sub, &f2, &wt2, &val, &el)) {
                    return false;
                }
                if (f2 == 1 && wt2 == PG_PB_LEN &&
                    !(f == 5 ? scan_value(w, el, depth + 1) : scan_kv(w, el, depth + 1))) {
                    return false;
                }
            }
        }
    }
    return true;
}

/* Fields @kv_field of message @r that are KeyValues (Resource 1, InstrumentationScope 3). */
static bool scan_attrs(struct walk *w, struct pg_pb r, uint32_t kv_field)
{
    uint32_t f, wt;
    uint64_t val;
    struct pg_pb sub;

    while (r.p < r.end && !w->refs) {
        if (!pg_pb_field(&r, &f, &wt, &val, &sub)) {
            return false;
        }
        if (f == kv_field && wt == PG_PB_LEN && !scan_kv(w, sub, 0)) {
            return false;
        }
    }
    return true;
}

/* ProfilesDictionary: 6 attribute_table (KeyValueAndUnit: 2 value). */
static bool scan_dict(struct walk *w, struct pg_pb r)
{
    uint32_t f, wt, f2, wt2;
    uint64_t val;
    struct pg_pb sub, v;

    while (r.p < r.end && !w->refs) {
        if (!pg_pb_field(&r, &f, &wt, &val, &sub)) {
            return false;
        }
        if (f != 6 || wt != PG_PB_LEN) {
            continue;
        }
        while (sub.p < sub.end) {
            if (!pg_pb_field(&sub, &f2, &wt2, &val, &v)) {
                return false;
            }
            if (f2 == 2 && wt2 == PG_PB_LEN && !scan_value(w, v, 0)) {
                return false;
            }
        }
    }
    return true;
}

/* ---- samples ----------------------------------------------------------------------- */

/* v1.9's number for each current Sample field (1..5); anything else is kept, last. */
static const uint8_t to_v19[6] = {0, 1, 3, 4, 2, 5};

/* Writes the Sample body @r (in w->in) at the same offset of w->out, its fields under their
 * v1.9 numbers in ascending order (stable: repeated fields keep their order, anything else
 * last). One pass notes where each field lies; a Sample with more fields than that holds
 * (unpacked repeats: not an encoder's output) is not rewritten. */
#define SAMPLE_FIELDS_MAX 16

static bool rewrite_sample(struct walk *w, struct pg_pb r)
{
    struct {
        const uint8_t *p;
        uint32_t n;
        uint8_t num, tag; /* v1.9 number (6: kept as is, last), its tag byte */
    } seg[SAMPLE_FIELDS_MAX];
    unsigned k = 0, have = 0; /* have: bit per v1.9 number present */
    uint8_t at[6] = {0};       /* at[n]: 1 + the segment of v1.9 field n (1..5) */
    bool dup = false;          /* a field seen twice (unpacked or repeated): the slow order */
    uint8_t *o = w->out + (r.p - w->in);

    while (r.p < r.end) {
        const uint8_t *start = r.p;
        uint32_t f, wt;

        if (k == SAMPLE_FIELDS_MAX || !pg_pb_tag(&r, &f, &wt)) {
            return false;
        }
        if (f <= 5 && r.p != start + 1) {
            return false; /* a padded tag: not an encoder's output */
        }
        if (!pg_pb_skip(&r, wt)) {
            return false;
        }
        seg[k].p = start;
        seg[k].n = (uint32_t)(r.p - start);
        seg[k].num = f <= 5 ? to_v19[f] : 6;
        seg[k].tag = (uint8_t)((unsigned)seg[k].num << 3 | wt);
        if (seg[k].num <= 5) {
            dup = dup || at[seg[k].num] != 0;
            at[seg[k].num] = (uint8_t)(k + 1);
        }
        have |= 1u << seg[k].num;
        k++;
    }
    if (!dup) {
        /* the usual Sample: each field once; v1.9's order by direct lookup */
        for (unsigned want = 1; want <= 5; want++) {
            if (at[want] != 0) {
                const unsigned i = at[want] - 1u;
                memcpy(o, seg[i].p, seg[i].n);
                *o = seg[i].tag;
                o += seg[i].n;
            }
        }
    } else {
        for (unsigned want = 1; want <= 5; want++) {
            for (unsigned i = 0; (have & 1u << want) && i < k; i++) {
                if (seg[i].num == want) {
                    memcpy(o, seg[i].p, seg[i].n);
                    *o = seg[i].tag;
                    o += seg[i].n;
                }
            }
        }
    }
    for (unsigned i = 0; (have & 1u << 6) && i < k; i++) {
        if (seg[i].num == 6) {
            memcpy(o, seg[i].p, seg[i].n); /* unknown fields, as they were, last */
            o += seg[i].n;
        }
    }
    w->samples++;
    return true;
}

/* Profile: 2 samples. */
static bool walk_profile(struct walk *w, struct pg_pb r)
{
    uint32_t f, wt;
    uint64_t val;
    struct pg_pb sub;

    while (r.p < r.end) {
        if (!pg_pb_field(&r, &f, &wt, &val, &sub)) {
            return false;
        }
        if (f == 2 && wt == PG_PB_LEN && !rewrite_sample(w, sub)) {
            return false;
        }
    }
    return true;
}

/* ScopeProfiles: 1 scope, 2 profiles. */
static bool walk_scopeprof(struct walk *w, struct pg_pb r)
{
    uint32_t f, wt;
    uint64_t val;
    struct pg_pb sub;

    while (r.p < r.end && !w->refs) {
        if (!pg_pb_field(&r, &f, &wt, &val, &sub)) {
            return false;
        }
        if (wt != PG_PB_LEN) {
            continue;
        }
        if ((f == 1 && !scan_attrs(w, sub, 3)) || (f == 2 && !walk_profile(w, sub))) {
            return false;
        }
    }
    return true;
}

/* The request: 1 ResourceProfiles (1 resource, 2 scope_profiles), 2 dictionary. */
static bool walk_request(struct walk *w, struct pg_pb r)
{
    uint32_t f, wt, f2, wt2;
    uint64_t val;
    struct pg_pb sub, el;

    /* Once a reference is seen the bytes are resolved and walked again: stop here. */
    while (r.p < r.end && !w->refs) {
        if (!pg_pb_field(&r, &f, &wt, &val, &sub)) {
            return false;
        }
        if (wt != PG_PB_LEN) {
            continue;
        }
        if (f == 2) {
            if (!scan_dict(w, sub)) {
                return false;
            }
            continue;
        }
        while (f == 1 && sub.p < sub.end && !w->refs) {
            if (!pg_pb_field(&sub, &f2, &wt2, &val, &el)) {
                return false;
            }
            if (wt2 == PG_PB_LEN && ((f2 == 1 && !scan_attrs(w, el, 1)) ||
                                     (f2 == 2 && !walk_scopeprof(w, el)))) {
                return false;
            }
        }
    }
    return true;
}

/* ---- entry points --------------------------------------------------------------- */

/* @enc into a malloc'd v1.9 copy; *@refs set (and nothing returned) when it holds a
 * reference, which needs the decoded path. */
static enum pg_err rewrite(const uint8_t *enc, size_t len, uint8_t **out, size_t *out_len,
                           bool *refs, struct pg_otlp_version_stats *stats, struct pg_status *st)
{
    struct walk w;

    if (enc == NULL) {
        enc = (const uint8_t *)""; /* an empty request; no arithmetic on NULL */
        len = 0;
    }
    w = (struct walk){enc, malloc(len ? len : 1), 0, false};
    *refs = false;
    if (w.out == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "no memory for a %zu-byte v1.9 request", len);
    }
    /* Everything but the Samples is the same bytes; the walk rewrites those in place. */
    if (len > 0) {
        memcpy(w.out, enc, len);
    }
    if (!walk_request(&w, (struct pg_pb){enc, enc + len})) {
        free(w.out);
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "the %zu-byte request is not well-formed OTLP: not rewritten as v1.9",
                             len);
    }
    if (w.refs) {
        free(w.out);
        *refs = true;
        return PG_ERR_OK;
    }
    *out = w.out;
    *out_len = len;
    if (stats != NULL) {
        stats->samples += w.samples;
    }
    return PG_ERR_OK;
}

enum pg_err pg_otlp_version_encode(enum pg_otlp_proto_version v, const uint8_t *enc, size_t len,
                                   uint8_t **out, size_t *out_len,
                                   struct pg_otlp_version_stats *stats, struct pg_status *st)
{
    struct pg_arena *a;
    ProtobufCAllocator alloc;
    struct pg_otlp_request *req;
    uint8_t *plain = NULL;
    size_t plain_len = 0;
    bool refs;
    enum pg_err err;

    *out = NULL;
    *out_len = 0;
    if (v != PG_OTLP_PROTO_V1_9) {
        return PG_ERR_OK; /* v1.10 and v1.11 are the current bytes */
    }
    err = rewrite(enc, len, out, out_len, &refs, stats, st);
    if (err != PG_ERR_OK || !refs) {
        return err;
    }
    /* Rare (OTLP input that gave its dictionary's attribute values by reference): the
     * decoded copy is this call's, never the shared batch. */
    a = pg_arena_create(0);
    if (a == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "no memory for a v1.9 request");
    }
    pg_arena_protobuf_allocator(a, &alloc);
    req = (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor, &alloc,
                                                               len, enc);
    if (req == NULL) {
        pg_arena_destroy(a);
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "the %zu-byte request does not decode: not rewritten as v1.9", len);
    }
    err = pg_otlp_refs_resolve(a, req, true, stats != NULL ? &stats->references : NULL, st);
    if (err == PG_ERR_OK) {
        err = pg_otlp_request_encode(req, a, &plain, &plain_len, st);
    }
    if (err == PG_ERR_OK) {
        err = rewrite(plain, plain_len, out, out_len, &refs, stats, st);
    }
    if (err == PG_ERR_OK && refs) {
        err = pg_status_set(st, PG_ERR_INTERNAL, "a reference is left after resolving them");
    }
    pg_arena_destroy(a);
    return err;
}

enum pg_err pg_otlp_version_prepare(enum pg_otlp_proto_version v, struct pg_arena *a,
                                    struct pg_otlp_request *req,
                                    struct pg_otlp_version_stats *stats, struct pg_status *st)
{
    if (v != PG_OTLP_PROTO_V1_9) {
        return PG_ERR_OK;
    }
    return pg_otlp_refs_resolve(a, req, true, stats != NULL ? &stats->references : NULL, st);
}
