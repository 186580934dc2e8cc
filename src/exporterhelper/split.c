/* SPDX-License-Identifier: Apache-2.0
 * Splitting and merging OTLP profile requests with rebuilt dictionaries.
 * Every sample (and every empty profile) is one "unit" in a flat, ordered
 * list over all sources; a part is a contiguous range of units rebuilt with
 * its own pg_dict builder (src/otlp/dict.h), so each part's dictionary holds
 * exactly what its samples reference. Ranges that encode larger than the cap
 * are halved until they fit; a single unit that never fits is dropped. */
#include "exporterhelper/split.h"

#include <string.h>

#include "otlp/otlp_encode.h"
#include "otlp/dict.h"

struct unit {
    uint32_t src;
    uint32_t rp;
    uint32_t sp;
    uint32_t prof;
    int64_t sample; /* -1: a profile without samples */
};

struct splitter {
    const struct pg_otlp_request *const *srcs;
    size_t n_src;
    struct unit *units;
    size_t n_units;
    size_t max_bytes;
    struct pg_arena *out;
    struct pg_split_result *res;
    size_t cap_parts;
};

/* Reads a varint at *@p (< @end); false when cut short or over 10 bytes. */
static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            return true;
        }
    }
    return false;
}

/* Walks one message: at @depth 0..2 descends into the field that leads to
 * the samples (1, then 2, 2), at depth 3 counts field 2 (samples). */
static bool wire_walk(const uint8_t *p, const uint8_t *end, int depth, size_t *n)
{
    while (p < end) {
        uint64_t key, v;
        unsigned field, wt;

        if (!wire_varint(&p, end, &key)) {
            return false;
        }
        field = (unsigned)(key >> 3);
        wt = (unsigned)(key & 7);
        switch (wt) {
        case 0:
            if (!wire_varint(&p, end, &v)) {
                return false;
            }
            break;
        case 1:
        case 5:
            if ((size_t)(end - p) < (wt == 1 ? 8u : 4u)) {
                return false;
            }
            p += wt == 1 ? 8 : 4;
            break;
        case 2:
            if (!wire_varint(&p, end, &v) || v > (uint64_t)(end - p)) {
                return false;
            }
            if (depth == 3 && field == 2) {
                (*n)++;
            } else if (depth < 3 && field == (depth == 0 ? 1u : 2u) &&
                       !wire_walk(p, p + v, depth + 1, n)) {
                return false;
            }
            p += v;
            break;
        default:
            return false;
        }
    }
    return true;
}

bool pg_otlp_wire_samples(const uint8_t *buf, size_t len, size_t *out)
{
    size_t n = 0;

    if (!wire_walk(buf, buf + len, 0, &n)) {
        return false;
    }
    *out = n;
    return true;
}

size_t pg_otlp_request_samples(const struct pg_otlp_request *req)
{
    size_t n = 0;

    for (size_t r = 0; r < req->n_resource_profiles; r++) {
        const struct pg_otlp_resprof *rp = req->resource_profiles[r];

        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            const struct pg_otlp_scopeprof *sp = rp->scope_profiles[s];

            for (size_t p = 0; p < sp->n_profiles; p++) {
                n += sp->profiles[p]->n_samples;
            }
        }
    }
    return n;
}

/* Appends to an arena array of pointers. The capacity is implied by the
 * count (the next power of two), so growth is geometric without storing it. */
static bool push(struct pg_arena *a, void ***arr, size_t *n, void *item)
{
    void **na = *arr;

    if ((*n & (*n - 1)) == 0) { /* 0, 1, 2, 4, ...: full */
        size_t ncap = *n ? *n * 2 : 1;

        na = pg_arena_realloc(a, *arr, *n * sizeof(void *), ncap * sizeof(void *));
        if (na == NULL) {
            return false;
        }
    }
    na[*n] = item;
    *arr = na;
    (*n)++;
    return true;
}

/* A dictionary string by index; "" for an index the dictionary lacks. */
static const char *dict_str(const struct pg_otlp_dict *d, int32_t i)
{
    return (d && i > 0 && (size_t)i < d->n_string_table) ? d->string_table[i] : "";
}

/* Resource/scope attributes go out with plain keys and string values (a
 * collector's gRPC receiver does not resolve *_strindex there, §1.5). */
static struct pg_otlp_kv **plain_kvs(struct pg_arena *a, const struct pg_otlp_dict *d,
                                     struct pg_otlp_kv **kvs, size_t n)
{
    struct pg_otlp_kv **copy;
    bool needed = false;

    for (size_t i = 0; i < n; i++) {
        if (kvs[i]->key_strindex != 0 ||
            (kvs[i]->value && kvs[i]->value->value_case == PG_OTLP_ANYVALUE_STRINDEX)) {
            needed = true;
        }
    }
    if (!needed || n == 0) {
        return kvs;
    }
    copy = pg_arena_calloc(a, n, sizeof(*copy));
    if (copy == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        struct pg_otlp_kv *kv = pg_arena_memdup(a, kvs[i], sizeof(*kv));

        if (kv == NULL) {
            return NULL;
        }
        if (kv->key_strindex != 0) {
            kv->key = (char *)dict_str(d, kv->key_strindex);
            kv->key_strindex = 0;
        }
        if (kv->value && kv->value->value_case == PG_OTLP_ANYVALUE_STRINDEX) {
            struct pg_otlp_anyvalue *v = pg_arena_memdup(a, kv->value, sizeof(*v));

            if (v == NULL) {
                return NULL;
            }
            v->value_case = PG_OTLP_ANYVALUE_STR;
            v->string_value = (char *)dict_str(d, v->string_value_strindex);
            kv->value = v;
        }
        copy[i] = kv;
    }
    return copy;
}

/* Resource and scope copies share this step: their attribute list (@attrs,
 * a field of the copy) is replaced by the plain form, borrowed from the
 * source when already plain. False on NOMEM. */
static bool make_attrs_plain(struct pg_arena *a, const struct pg_otlp_dict *d,
                             struct pg_otlp_kv ***attrs, size_t n_attrs)
{
    struct pg_otlp_kv **plain = plain_kvs(a, d, *attrs, n_attrs);

    if (plain == NULL && n_attrs > 0) {
        return false;
    }
    *attrs = plain;
    return true;
}

static struct pg_otlp_valuetype *import_vt(struct pg_arena *a, struct pg_dict_builder *b,
                                           struct pg_dict_remap *rm,
                                           const struct pg_otlp_valuetype *vt)
{
    struct pg_otlp_valuetype *c;
    int32_t t;
    int32_t u;

    if (vt == NULL) {
        return NULL;
    }
    c = pg_arena_memdup(a, vt, sizeof(*c));
    t = pg_dict_import_string(b, rm, vt->type_strindex);
    u = pg_dict_import_string(b, rm, vt->unit_strindex);
    if (c == NULL || t < 0 || u < 0) {
        return NULL;
    }
    c->type_strindex = t;
    c->unit_strindex = u;
    return c;
}

/* Builds the request holding units [lo, hi). NULL on failure (NOMEM/LIMIT or
 * a dangling index, reported through @err). */
static struct pg_otlp_request *build(struct splitter *sp, struct pg_arena *a,
                                     struct pg_arena *scratch, size_t lo, size_t hi,
                                     size_t *samples, enum pg_err *err)
{
    struct pg_dict_builder *b = pg_dict_builder_new(a, scratch);
    struct pg_dict_remap **remaps;
    struct pg_otlp_request *req;
    struct pg_otlp_resprof *cur_rp = NULL;
    struct pg_otlp_scopeprof *cur_sp = NULL;
    struct pg_otlp_profile *cur_p = NULL;
    const struct unit *last = NULL;

    *err = PG_ERR_NOMEM;
    *samples = 0;
    remaps = pg_arena_calloc(scratch, sp->n_src, sizeof(*remaps));
    req = pg_arena_zalloc(a, sizeof(*req));
    if (b == NULL || remaps == NULL || req == NULL) {
        return NULL;
    }
    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        req);
    for (size_t i = lo; i < hi; i++) {
        const struct unit *u = &sp->units[i];
        const struct pg_otlp_request *src = sp->srcs[u->src];
        const struct pg_otlp_dict *sd = src->dictionary;
        const struct pg_otlp_resprof *srp = src->resource_profiles[u->rp];
        const struct pg_otlp_scopeprof *ssp = srp->scope_profiles[u->sp];
        const struct pg_otlp_profile *sprof = ssp->profiles[u->prof];
        struct pg_dict_remap *rm;

        if (remaps[u->src] == NULL) {
            static const struct pg_otlp_dict empty_dict =
                OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;

            remaps[u->src] = pg_dict_remap_new(scratch, sd != NULL ? sd : &empty_dict);
            if (remaps[u->src] == NULL) {
                return NULL;
            }
        }
        rm = remaps[u->src];
        if (last == NULL || last->src != u->src || last->rp != u->rp) {
            cur_rp = pg_arena_memdup(a, srp, sizeof(*srp));
            if (cur_rp == NULL) {
                return NULL;
            }
            cur_rp->scope_profiles = NULL;
            cur_rp->n_scope_profiles = 0;
            if (srp->resource != NULL) {
                struct pg_otlp_resource *res = pg_arena_memdup(a, srp->resource, sizeof(*res));

                if (res == NULL || !make_attrs_plain(a, sd, &res->attributes, res->n_attributes)) {
                    return NULL;
                }
                cur_rp->resource = res;
            }
            if (!push(a, (void ***)&req->resource_profiles, &req->n_resource_profiles, cur_rp)) {
                return NULL;
            }
            cur_sp = NULL;
        }
        if (cur_sp == NULL || last->sp != u->sp) {
            cur_sp = pg_arena_memdup(a, ssp, sizeof(*ssp));
            if (cur_sp == NULL) {
                return NULL;
            }
            cur_sp->profiles = NULL;
            cur_sp->n_profiles = 0;
            if (ssp->scope != NULL) {
                struct pg_otlp_scope *sc = pg_arena_memdup(a, ssp->scope, sizeof(*sc));

                if (sc == NULL || !make_attrs_plain(a, sd, &sc->attributes, sc->n_attributes)) {
                    return NULL;
                }
                cur_sp->scope = sc;
            }
            if (!push(a, (void ***)&cur_rp->scope_profiles, &cur_rp->n_scope_profiles, cur_sp)) {
                return NULL;
            }
            cur_p = NULL;
        }
        if (cur_p == NULL || last->prof != u->prof) {
            int32_t *attrs = NULL;

            cur_p = pg_arena_memdup(a, sprof, sizeof(*sprof));
            if (cur_p == NULL) {
                return NULL;
            }
            cur_p->samples = NULL;
            cur_p->n_samples = 0;
            cur_p->sample_type = import_vt(a, b, rm, sprof->sample_type);
            cur_p->period_type = import_vt(a, b, rm, sprof->period_type);
            if ((sprof->sample_type && !cur_p->sample_type) ||
                (sprof->period_type && !cur_p->period_type) ||
                pg_dict_import_attr_list(b, rm, sprof->attribute_indices,
                                         sprof->n_attribute_indices, &attrs) < 0) {
                *err = pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_MALFORMED;
                return NULL;
            }
            cur_p->attribute_indices = attrs;
            if (!push(a, (void ***)&cur_sp->profiles, &cur_sp->n_profiles, cur_p)) {
                return NULL;
            }
        }
        if (u->sample >= 0) {
            const struct pg_otlp_sample *ss = sprof->samples[u->sample];
            struct pg_otlp_sample *s = pg_arena_memdup(a, ss, sizeof(*ss));
            int32_t *attrs = NULL;
            int32_t stack;
            int32_t link;

            if (s == NULL) {
                return NULL;
            }
            stack = pg_dict_import_stack(b, rm, ss->stack_index);
            link = pg_dict_import_link(b, rm, ss->link_index);
            if (stack < 0 || link < 0 ||
                pg_dict_import_attr_list(b, rm, ss->attribute_indices, ss->n_attribute_indices,
                                         &attrs) < 0) {
                *err = (stack == PG_DICT_NOMEM || link == PG_DICT_NOMEM || pg_arena_hit_cap(a))
                           ? PG_ERR_NOMEM
                           : PG_ERR_MALFORMED;
                return NULL;
            }
            s->stack_index = stack;
            s->link_index = link;
            s->attribute_indices = attrs;
            if (!push(a, (void ***)&cur_p->samples, &cur_p->n_samples, s)) {
                return NULL;
            }
            (*samples)++;
        }
        last = u;
    }
    req->dictionary = pg_dict_finish(b);
    if (req->dictionary == NULL) {
        return NULL;
    }
    *err = PG_ERR_OK;
    return req;
}

static bool add_part(struct splitter *sp, struct pg_otlp_request *req, size_t samples,
                     size_t bytes, const uint8_t *wire)
{
    struct pg_split_result *res = sp->res;

    if (res->n_parts == sp->cap_parts) {
        size_t ncap = sp->cap_parts ? sp->cap_parts * 2 : 4;
        struct pg_otlp_part *np = pg_arena_realloc(sp->out, res->parts,
                                                   sp->cap_parts * sizeof(*np), ncap * sizeof(*np));

        if (np == NULL) {
            return false;
        }
        res->parts = np;
        sp->cap_parts = ncap;
    }
    res->parts[res->n_parts].req = req;
    res->parts[res->n_parts].samples = samples;
    res->parts[res->n_parts].bytes = bytes;
    res->parts[res->n_parts].wire = wire;
    res->n_parts++;
    return true;
}

static void arena_destroy_cb(void *a)
{
    pg_arena_destroy(a);
}

/* Emits units [lo, hi) as one part when it fits, else in pieces. Each
 * candidate is built in its own arena so a rejected one costs nothing after;
 * an accepted one is handed to the output arena's cleanup. */
static enum pg_err split_range(struct splitter *sp, size_t lo, size_t hi, struct pg_status *st)
{
    struct pg_otlp_request *req;
    struct pg_arena *cand;
    struct pg_arena *scratch;
    struct pg_arena *wire_arena;
    uint8_t *wire = NULL;
    size_t samples;
    size_t bytes = 0;
    enum pg_err err;

    if (lo >= hi) {
        return PG_ERR_OK;
    }
    cand = pg_arena_create(pg_arena_cap(sp->out));
    scratch = pg_arena_create(0);
    if (cand == NULL || scratch == NULL) {
        pg_arena_destroy(cand);
        pg_arena_destroy(scratch);
        return pg_status_set(st, PG_ERR_NOMEM, "no memory to rebuild a request part");
    }
    req = build(sp, cand, scratch, lo, hi, &samples, &err);
    pg_arena_destroy(scratch);
    if (req == NULL) {
        pg_arena_destroy(cand);
        return pg_status_set(st, err,
                             err == PG_ERR_MALFORMED
                                 ? "request has a dictionary index out of range"
                                 : "no memory to rebuild a request part");
    }
    /* The encoding is the size check; an accepted part keeps it (in its own
     * uncapped arena, so encoding never trips the output arena's cap). */
    wire_arena = pg_arena_create(0);
    if (wire_arena == NULL ||
        (err = pg_otlp_request_encode(req, wire_arena, &wire, &bytes, st)) != PG_ERR_OK) {
        pg_arena_destroy(wire_arena);
        pg_arena_destroy(cand);
        return wire_arena == NULL
                   ? pg_status_set(st, PG_ERR_NOMEM, "no memory to encode a request part")
                   : err;
    }
    if (sp->max_bytes == 0 || bytes <= sp->max_bytes) {
        if (pg_arena_cleanup_add(sp->out, arena_destroy_cb, cand) != 0) {
            pg_arena_destroy(wire_arena);
            pg_arena_destroy(cand);
            return pg_status_set(st, PG_ERR_NOMEM, "no memory for request parts");
        }
        if (pg_arena_cleanup_add(sp->out, arena_destroy_cb, wire_arena) != 0) {
            pg_arena_destroy(wire_arena);
            return pg_status_set(st, PG_ERR_NOMEM, "no memory for request parts");
        }
        if (!add_part(sp, req, samples, bytes, wire)) {
            return pg_status_set(st, PG_ERR_NOMEM, "no memory for request parts");
        }
        return PG_ERR_OK;
    }
    pg_arena_destroy(wire_arena);
    pg_arena_destroy(cand);
    if (hi - lo == 1) {
        if (sp->units[lo].sample >= 0) {
            sp->res->dropped_samples++;
        } else {
            sp->res->dropped_profiles++;
        }
        return PG_ERR_OK;
    }
    /* Aim straight for the number of pieces the size suggests, then halve. */
    {
        size_t pieces = bytes / sp->max_bytes + 1;
        size_t n = hi - lo;

        if (pieces < 2) {
            pieces = 2;
        }
        if (pieces > n) {
            pieces = n;
        }
        for (size_t k = 0; k < pieces; k++) {
            size_t a = lo + n * k / pieces;
            size_t b = lo + n * (k + 1) / pieces;

            err = split_range(sp, a, b, st);
            if (err != PG_ERR_OK) {
                return err;
            }
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_otlp_split(const struct pg_otlp_request *const *srcs, size_t n_src,
                          size_t max_bytes, struct pg_arena *out, struct pg_split_result *res,
                          struct pg_status *st)
{
    struct splitter sp;
    size_t n = 0;

    memset(res, 0, sizeof(*res));
    memset(&sp, 0, sizeof(sp));
    sp.srcs = srcs;
    sp.n_src = n_src;
    sp.max_bytes = max_bytes;
    sp.out = out;
    sp.res = res;
    for (size_t i = 0; i < n_src; i++) {
        const struct pg_otlp_request *q = srcs[i];

        for (size_t r = 0; r < q->n_resource_profiles; r++) {
            for (size_t s = 0; s < q->resource_profiles[r]->n_scope_profiles; s++) {
                const struct pg_otlp_scopeprof *scp = q->resource_profiles[r]->scope_profiles[s];

                for (size_t p = 0; p < scp->n_profiles; p++) {
                    n += scp->profiles[p]->n_samples ? scp->profiles[p]->n_samples : 1;
                }
            }
        }
    }
    sp.units = pg_arena_calloc(out, n ? n : 1, sizeof(*sp.units));
    if (sp.units == NULL) {
        return pg_status_set(st, pg_arena_hit_cap(out) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "no memory to split a request of %zu samples", n);
    }
    for (size_t i = 0; i < n_src; i++) {
        const struct pg_otlp_request *q = srcs[i];

        for (size_t r = 0; r < q->n_resource_profiles; r++) {
            for (size_t s = 0; s < q->resource_profiles[r]->n_scope_profiles; s++) {
                const struct pg_otlp_scopeprof *scp = q->resource_profiles[r]->scope_profiles[s];

                for (size_t p = 0; p < scp->n_profiles; p++) {
                    size_t ns = scp->profiles[p]->n_samples;

                    for (size_t k = 0; k < (ns ? ns : 1); k++) {
                        struct unit *u = &sp.units[sp.n_units++];

                        u->src = (uint32_t)i;
                        u->rp = (uint32_t)r;
                        u->sp = (uint32_t)s;
                        u->prof = (uint32_t)p;
                        u->sample = ns ? (int64_t)k : -1;
                    }
                }
            }
        }
    }
    return split_range(&sp, 0, sp.n_units, st);
}
