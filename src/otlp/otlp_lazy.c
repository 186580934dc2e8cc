/* SPDX-License-Identifier: Apache-2.0
 * Lazy samples (otlp_lazy.h): the canonical-form check the decoder applies
 * before keeping a profile's samples as wire records, the one-at-a-time walk
 * validation and materialization use, and materialization itself. */
#include "otlp/otlp_lazy.h"

#include <stdlib.h>
#include <string.h>

#include "core/pb_wire.h"

bool pg_otlp_request_is_lazy(const struct pg_otlp_request *req)
{
    if (req != NULL && req->dictionary != NULL && pg_otlp_lazy_links(req->dictionary) != NULL) {
        return true;
    }
    for (size_t r = 0; req != NULL && r < req->n_resource_profiles; r++) {
        const struct pg_otlp_resprof *rp = req->resource_profiles[r];
        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            const struct pg_otlp_scopeprof *sp = rp->scope_profiles[s];
            for (size_t k = 0; k < sp->n_profiles; k++) {
                if (pg_otlp_lazy_of(sp->profiles[k]) != NULL) {
                    return true;
                }
            }
        }
    }
    return false;
}

/* ---- canonical form ------------------------------------------------------ */

/* A varint written in as few bytes as its value needs. */
static inline bool min_varint(struct pg_pb *r, uint64_t *v)
{
    const uint8_t *p = r->p;

    return pg_pb_varint(r, v) && (size_t)(r->p - p) == pg_pb_varint_len(*v);
}

/* An int32 as protobuf writes it: negative values sign-extended to 64 bits. The eager unpack
 * keeps the low 32 bits, so any other form would come back out different. */
static inline bool int32_form(uint64_t v)
{
    return v == (uint64_t)(int64_t)(int32_t)(uint32_t)v;
}

bool pg_otlp_lazy_canonical(const uint8_t *p, size_t len)
{
    struct pg_pb r = {p, p + len}, sub;
    uint32_t last = 0;
    uint64_t v;

    while (r.p < r.end) {
        uint8_t tag = *r.p++;
        uint32_t f = tag >> 3;

        if (tag >= 0x80 || f <= last || f > 5) {
            return false; /* out of order, twice, unknown, or a long tag */
        }
        last = f;
        if (f == 1 || f == 3) { /* stack_index, link_index */
            if ((tag & 7) != PG_PB_VARINT || !min_varint(&r, &v) || v == 0 || !int32_form(v)) {
                return false;
            }
            continue;
        }
        if ((tag & 7) != PG_PB_LEN) {
            return false;
        }
        {
            const uint8_t *lp = r.p;
            if (!pg_pb_len(&r, &sub) || sub.p == sub.end ||
                (size_t)(sub.p - lp) != pg_pb_varint_len((uint64_t)(sub.end - sub.p))) {
                return false;
            }
        }
        if (f == 5) { /* timestamps_unix_nano: packed fixed64 */
            if ((sub.end - sub.p) % 8 != 0) {
                return false;
            }
            continue;
        }
        while (sub.p < sub.end) { /* 2 attribute_indices (int32), 4 values (int64) */
            if (!min_varint(&sub, &v) || (f == 2 && !int32_form(v))) {
                return false;
            }
        }
    }
    return true;
}

bool pg_otlp_lazy_link_canonical(const uint8_t *p, size_t len)
{
    struct pg_pb r = {p, p + len}, sub;
    uint32_t last = 0;

    while (r.p < r.end) {
        uint8_t tag = *r.p++;
        const uint8_t *lp = r.p;

        if (tag >= 0x80 || (tag >> 3) <= last || (tag >> 3) > 2 || (tag & 7) != PG_PB_LEN ||
            !pg_pb_len(&r, &sub) || sub.p == sub.end ||
            (size_t)(sub.p - lp) != pg_pb_varint_len((uint64_t)(sub.end - sub.p))) {
            return false;
        }
        last = tag >> 3;
    }
    return true;
}

/* ---- the walk ------------------------------------------------------------ */

void pg_otlp_lazy_iter_init(struct pg_otlp_lazy_iter *it, const struct pg_otlp_lazy *lz)
{
    memset(it, 0, sizeof(*it));
    it->p = lz->wire;
    it->end = lz->wire + lz->len;
}

void pg_otlp_lazy_iter_done(struct pg_otlp_lazy_iter *it)
{
    free(it->ai);
    free(it->val);
    free(it->ts);
    memset(it, 0, sizeof(*it));
}

static bool grow(void **arr, size_t *cap, size_t need, size_t es)
{
    void *n;

    if (need <= *cap) {
        return true;
    }
    if (need < 64) {
        need = 64;
    }
    if ((n = realloc(*arr, need * es)) == NULL) {
        return false;
    }
    *arr = n;
    *cap = need;
    return true;
}

static int bad(struct pg_otlp_lazy_iter *it, struct pg_status *st, const char *what)
{
    pg_status_set(st, PG_ERR_MALFORMED, "lazy sample %zu: %s", it->i, what);
    return -1;
}

int pg_otlp_lazy_next(struct pg_otlp_lazy_iter *it, struct pg_otlp_sample *out,
                      struct pg_status *st)
{
    static const struct pg_otlp_sample init = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SAMPLE__INIT;
    struct pg_pb r = {it->p, it->end}, body, sub;
    uint32_t f, wt;
    uint64_t v;

    if (r.p >= r.end) {
        return 0;
    }
    if (!pg_pb_tag(&r, &f, &wt) || f != 2 || wt != PG_PB_LEN || !pg_pb_len(&r, &body)) {
        return bad(it, st, "not a Profile.samples record");
    }
    *out = init;
    while (body.p < body.end) {
        if (!pg_pb_tag(&body, &f, &wt)) {
            return bad(it, st, "cut short");
        }
        if ((f == 1 || f == 3) && wt == PG_PB_VARINT) {
            if (!pg_pb_varint(&body, &v)) {
                return bad(it, st, "cut short");
            }
            *(f == 1 ? &out->stack_index : &out->link_index) = (int32_t)(uint32_t)v;
            continue;
        }
        if (f < 2 || f > 5 || f == 3 || wt != PG_PB_LEN || !pg_pb_len(&body, &sub)) {
            return bad(it, st, "an unexpected field");
        }
        if (f == 5) {
            size_t n = (size_t)(sub.end - sub.p) / 8;
            if ((size_t)(sub.end - sub.p) % 8 != 0) {
                return bad(it, st, "timestamps_unix_nano not a whole number of fixed64");
            }
            if (!grow((void **)&it->ts, &it->ts_cap, n, sizeof(*it->ts))) {
                goto nomem;
            }
            for (size_t i = 0; i < n; i++) {
                memcpy(&it->ts[i], sub.p + 8 * i, 8); /* little-endian hosts only, as pb_wire */
            }
            out->timestamps_unix_nano = it->ts;
            out->n_timestamps_unix_nano = n;
            continue;
        }
        {
            size_t cap = pg_pb_count_varints(sub.p, sub.end), n = 0;
            if (f == 2 ? !grow((void **)&it->ai, &it->ai_cap, cap, sizeof(*it->ai))
                       : !grow((void **)&it->val, &it->val_cap, cap, sizeof(*it->val))) {
                goto nomem;
            }
            while (sub.p < sub.end) {
                if (!pg_pb_varint(&sub, &v) || n == cap) {
                    return bad(it, st, "a packed run cut short");
                }
                if (f == 2) {
                    it->ai[n++] = (int32_t)(uint32_t)v;
                } else {
                    it->val[n++] = (int64_t)v;
                }
            }
            if (f == 2) {
                out->attribute_indices = it->ai;
                out->n_attribute_indices = n;
            } else {
                out->values = it->val;
                out->n_values = n;
            }
        }
    }
    it->p = r.p;
    it->i++;
    return 1;
nomem:
    pg_status_set(st, PG_ERR_NOMEM, "no memory to read lazy sample %zu", it->i);
    return -1;
}

int pg_otlp_lazy_next_link(struct pg_otlp_lazy_iter *it, struct pg_otlp_link *out,
                           struct pg_status *st)
{
    static const struct pg_otlp_link init = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT;
    struct pg_pb r = {it->p, it->end}, body, sub;
    uint32_t f, wt;

    if (r.p >= r.end) {
        return 0;
    }
    if (!pg_pb_tag(&r, &f, &wt) || f != 4 || wt != PG_PB_LEN || !pg_pb_len(&r, &body)) {
        return bad(it, st, "not a link_table record");
    }
    *out = init;
    while (body.p < body.end) {
        if (!pg_pb_tag(&body, &f, &wt) || (f != 1 && f != 2) || wt != PG_PB_LEN ||
            !pg_pb_len(&body, &sub)) {
            return bad(it, st, "an unexpected field in a link");
        }
        ProtobufCBinaryData *b = f == 1 ? &out->trace_id : &out->span_id;
        b->data = (uint8_t *)(uintptr_t)sub.p; /* read-only: the record stays in the arena */
        b->len = (size_t)(sub.end - sub.p);
    }
    it->p = r.p;
    it->i++;
    return 1;
}

/* ---- materialization ----------------------------------------------------- */

/* Removes @m's lazy marker; its real unknown fields keep their order. */
static void drop_marker(ProtobufCMessage *m)
{
    unsigned j = 0;

    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        if (m->unknown_fields[i].wire_type != PG_OTLP_LAZY_MARK) {
            m->unknown_fields[j++] = m->unknown_fields[i];
        }
    }
    m->n_unknown_fields = j;
}

static void *dup_arr(struct pg_arena *a, const void *src, size_t n, size_t es, bool *ok)
{
    void *d;

    if (n == 0) {
        return NULL;
    }
    if ((d = pg_arena_alloc(a, n * es)) == NULL) {
        *ok = false;
        return NULL;
    }
    memcpy(d, src, n * es);
    return d;
}

static enum pg_err materialize_profile(struct pg_arena *a, struct pg_otlp_profile *p,
                                       struct pg_status *st)
{
    const struct pg_otlp_lazy *lz = pg_otlp_lazy_of(p);
    struct pg_otlp_lazy_iter it;
    struct pg_otlp_sample s, *block, **arr;
    size_t n = p->n_samples, total, k = 0;
    int rc;
    bool ok = true;

    if (lz == NULL) {
        return PG_ERR_OK;
    }
    total = n + lz->n;
    block = pg_arena_alloc(a, lz->n * sizeof(*block) + 1);
    arr = pg_arena_alloc(a, total * sizeof(*arr) + 1);
    if (block == NULL || arr == NULL) {
        return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "no memory to unpack %zu lazy samples", lz->n);
    }
    /* Samples in struct form come first on the wire too (the encoder writes them, then the
     * records), so the order is kept. */
    if (n > 0) {
        memcpy(arr, p->samples, n * sizeof(*arr));
    }
    pg_otlp_lazy_iter_init(&it, lz);
    while ((rc = pg_otlp_lazy_next(&it, &s, st)) == 1 && ok && k < lz->n) {
        struct pg_otlp_sample *d = &block[k++];
        *d = s;
        d->attribute_indices = dup_arr(a, s.attribute_indices, s.n_attribute_indices,
                                       sizeof(int32_t), &ok);
        d->values = dup_arr(a, s.values, s.n_values, sizeof(int64_t), &ok);
        d->timestamps_unix_nano = dup_arr(a, s.timestamps_unix_nano, s.n_timestamps_unix_nano,
                                          sizeof(uint64_t), &ok);
        arr[n++] = d;
    }
    pg_otlp_lazy_iter_done(&it);
    if (rc < 0) {
        return st->code;
    }
    if (!ok) {
        return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "no memory to unpack %zu lazy samples", lz->n);
    }
    if (k != lz->n || rc != 0) {
        return pg_status_set(st, PG_ERR_INTERNAL, "lazy samples: %zu records, %zu counted", k,
                             lz->n);
    }
    p->samples = arr;
    p->n_samples = n;
    drop_marker(&p->base);
    return PG_ERR_OK;
}

static enum pg_err materialize_links(struct pg_arena *a, struct pg_otlp_dict *d,
                                     struct pg_status *st)
{
    const struct pg_otlp_lazy *lz = pg_otlp_lazy_links(d);
    struct pg_otlp_lazy_iter it;
    struct pg_otlp_link *block, **arr;
    size_t n = d->n_link_table, k = 0;
    int rc;

    if (lz == NULL) {
        return PG_ERR_OK;
    }
    block = pg_arena_alloc(a, lz->n * sizeof(*block) + 1);
    arr = pg_arena_alloc(a, (n + lz->n) * sizeof(*arr) + 1);
    if (block == NULL || arr == NULL) {
        return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "no memory to unpack %zu lazy links", lz->n);
    }
    if (n > 0) {
        memcpy(arr, d->link_table, n * sizeof(*arr));
    }
    pg_otlp_lazy_iter_init(&it, lz);
    while (k < lz->n && (rc = pg_otlp_lazy_next_link(&it, &block[k], st)) == 1) {
        arr[n++] = &block[k++];
    }
    if (k != lz->n || it.p != it.end) {
        return k != lz->n && st->code != PG_ERR_OK
                   ? st->code
                   : pg_status_set(st, PG_ERR_INTERNAL, "lazy links: %zu records, %zu counted",
                                   k, lz->n);
    }
    d->link_table = arr;
    d->n_link_table = n;
    drop_marker(&d->base);
    return PG_ERR_OK;
}

enum pg_err pg_otlp_lazy_materialize(struct pg_arena *arena, struct pg_otlp_request *req,
                                     struct pg_status *st)
{
    if (req != NULL && req->dictionary != NULL) {
        enum pg_err err = materialize_links(arena, req->dictionary, st);
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    for (size_t r = 0; req != NULL && r < req->n_resource_profiles; r++) {
        struct pg_otlp_resprof *rp = req->resource_profiles[r];
        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            struct pg_otlp_scopeprof *sp = rp->scope_profiles[s];
            for (size_t k = 0; k < sp->n_profiles; k++) {
                enum pg_err err = materialize_profile(arena, sp->profiles[k], st);
                if (err != PG_ERR_OK) {
                    return err;
                }
            }
        }
    }
    return PG_ERR_OK;
}
