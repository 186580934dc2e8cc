/* SPDX-License-Identifier: Apache-2.0
 * Size-caching ExportProfilesServiceRequest encoder: the request and its
 * profile tree (ResourceProfiles -> ScopeProfiles -> Profile -> Samples).
 * protobuf-c's pack sizes every sub-message again at each level of nesting (a
 * Sample 5 times) through reflective loops; here the sz_*() functions walk the
 * tree once in pre-order and record each nested message's (and packed
 * field's) length in a flat cache, and the wr_*() functions walk it again in
 * the same order writing bytes. The wire rules are protobuf-c 1.4's, so the
 * output is byte-identical (tests/unit/test_wire_encode.c checks it on every
 * fixture): fields in field-number order, proto3 scalars, strings, bytes and
 * message pointers skipped when zero / empty / NULL, oneof members written
 * whenever selected (a string or message only when non-NULL and not the shared
 * empty default), repeated scalars packed, unknown fields last. The
 * dictionary, the common messages and the buffers are the other
 * otlp_encode_*.c files (otlp_encode_internal.h). */
#include "otlp/otlp_encode.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/pb_wire.h"
#include "core/vec.h"
#include "otlp/otlp_encode_internal.h"
#include "otlp/otlp_lazy.h"

/* Bytes a sample takes at least in practice (stack index, a value, header): a profile with
 * more samples than the rest of the scratch holds at this size is sized, not tried. Only
 * the path depends on it, never the bytes. */
#define SAMPLE_TYPICAL 8

static size_t sz_vt(struct enc *e, const struct pg_otlp_valuetype *m)
{
    size_t slot = reserve(e);
    return fill(e, slot,
                i32f_size(m->type_strindex) + i32f_size(m->unit_strindex) + UNK_SIZE(m));
}

static uint8_t *wr_vt(uint8_t *p, const struct pg_otlp_valuetype *m)
{
    p = i32f_write(p, 1, m->type_strindex);
    p = i32f_write(p, 2, m->unit_strindex);
    return UNK_WRITE(m, p);
}

/* A Sample takes no size-cache slot: the sizing pass only adds its length to the profile's,
 * and the writing pass writes it behind a one-byte length that is patched afterwards (moved
 * up when the body turns out to be 128 bytes or more, which SDK samples never are). Its
 * packed fields are written the same way, so the values are walked once when written. */
static inline size_t sample_len(const struct pg_otlp_sample *m)
{
    size_t n = i32f_size(m->stack_index) + i32f_size(m->link_index) +
               pf64_size(m->n_timestamps_unix_nano);

    if (m->n_attribute_indices != 0) {
        n += emb(pi32_len(m->attribute_indices, m->n_attribute_indices));
    }
    if (m->n_values != 0) {
        n += emb(pi64_len(m->values, m->n_values));
    }
    return n + UNK_SIZE(m);
}

static inline uint8_t *bp_pi64_write(uint8_t *p, unsigned field, const int64_t *v, size_t n)
{
    uint8_t *lenp;

    if (n == 0) {
        return p;
    }
    *p = TAG(field, PG_PB_LEN);
    lenp = p + 1;
    p += 2;
    for (size_t i = 0; i < n; i++) {
        p = pg_pb_put_varint(p, (uint64_t)v[i]);
    }
    return patch_len(lenp, p);
}

/* Writes field 2 of Profile (tag, length, body). Writing the body one byte past its final
 * place is safe: the exact-size buffer ends after the body's final place. */
static inline __attribute__((always_inline)) uint8_t *wr_sample(uint8_t *p,
                                                                 const struct pg_otlp_sample *m)
{
    uint8_t *lenp = p + 1;

    *p = TAG(2, PG_PB_LEN);
    p += 2;
    p = i32f_write(p, 1, m->stack_index);
    p = bp_pi32_write(p, 2, m->attribute_indices, m->n_attribute_indices);
    p = i32f_write(p, 3, m->link_index);
    p = bp_pi64_write(p, 4, m->values, m->n_values);
    p = pf64_write(p, 5, m->timestamps_unix_nano, m->n_timestamps_unix_nano);
    p = UNK_WRITE(m, p);
    return patch_len(lenp, p);
}

/* Room for the sample at most: tag and a 10-byte length, stack and link indexes, the packed
 * fields' tags and lengths, 10 bytes a value, 8 a timestamp. */
static inline size_t sample_bound(const struct pg_otlp_sample *m)
{
    return 66 + 10 * (m->n_attribute_indices + m->n_values) + 8 * m->n_timestamps_unix_nano +
           UNK_SIZE(m);
}

/* The Samples of a profile: two cache slots (scratch offset + 1, or 0 when they are to be
 * written from the structs; and the block's length). Returns the block's length. */
static size_t sz_samples(struct enc *e, struct pg_otlp_sample *const *s, size_t ns)
{
    size_t at = reserve(e), lslot = reserve(e), start = e->scr_len, n = 0;

    if (ns == 0) {
        fill(e, at, 0);
        return fill(e, lslot, 0);
    }
    if (!e->scr_off && ns > (SCRATCH_MAX - e->scr_len) / SAMPLE_TYPICAL) {
        e->scr_off = true; /* surely past the scratch: do not fill it first */
    }
    if (!e->scr_off && (e->scr != NULL || scratch_room(e, 0))) {
        uint8_t *q = e->scr + start, *lim = e->scr + e->scr_cap;
        size_t i;
        for (i = 0; i < ns; i++) {
            size_t b = sample_bound(s[i]);
            if ((size_t)(lim - q) < b) {
                e->scr_len = (size_t)(q - e->scr);
                if (!scratch_room(e, b)) {
                    break;
                }
                q = e->scr + e->scr_len;
                lim = e->scr + e->scr_cap;
            }
            q = wr_sample(q, s[i]);
        }
        if (i == ns) {
            e->scr_len = (size_t)(q - e->scr);
            fill(e, at, start + 1);
            return fill(e, lslot, e->scr_len - start);
        }
        e->scr_off = true; /* too large: this profile and the rest are sized */
        e->scr_len = start;
    }
    for (size_t i = 0; i < ns; i++) {
        n += emb(sample_len(s[i]));
    }
    fill(e, at, 0);
    return fill(e, lslot, n);
}

static inline uint8_t *wr_samples(struct enc *e, uint8_t *p, struct pg_otlp_sample *const *s,
                                  size_t ns)
{
    size_t at = e->sz[e->rd], len = e->sz[e->rd + 1];

    e->rd += 2;
    if (at != 0) {
        if (len > 0) {
            memcpy(p, e->scr + at - 1, len);
        }
        return p + len;
    }
    for (size_t i = 0; i < ns; i++) {
        p = wr_sample(p, s[i]);
    }
    return p;
}

static size_t sz_profile(struct enc *e, const struct pg_otlp_profile *m)
{
    size_t slot = reserve(e), n = 0;
    const struct pg_otlp_lazy *lz;

    if (m->sample_type != NULL) {
        n += emb(sz_vt(e, m->sample_type));
    }
    n += sz_samples(e, m->samples, m->n_samples);
    if (m->base.n_unknown_fields != 0 && (lz = pg_otlp_lazy_of(m)) != NULL) {
        n += lz->len; /* the records, verbatim: canonical, so the eager bytes */
    }
    n += m->time_unix_nano ? 9 : 0;
    n += u64f_size(m->duration_nano);
    if (m->period_type != NULL) {
        n += emb(sz_vt(e, m->period_type));
    }
    n += u64f_size((uint64_t)m->period);
    n += bytes_size(&m->profile_id);
    n += m->dropped_attributes_count ? 1 + pg_pb_varint_len(m->dropped_attributes_count) : 0;
    n += str_size(m->original_payload_format);
    n += bytes_size(&m->original_payload);
    n += pi32_size(e, m->attribute_indices, m->n_attribute_indices);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_profile(struct enc *e, uint8_t *p, const struct pg_otlp_profile *m)
{
    const struct pg_otlp_lazy *lz;

    if (m->sample_type != NULL) {
        p = hdr(e, p, 1);
        p = wr_vt(p, m->sample_type);
    }
    p = wr_samples(e, p, m->samples, m->n_samples);
    if (m->base.n_unknown_fields != 0 && (lz = pg_otlp_lazy_of(m)) != NULL) {
        memcpy(p, lz->wire, lz->len);
        p += lz->len;
    }
    if (m->time_unix_nano) {
        *p++ = TAG(3, PG_PB_I64);
        p = pg_pb_put_fixed64(p, m->time_unix_nano);
    }
    p = u64f_write(p, 4, m->duration_nano);
    if (m->period_type != NULL) {
        p = hdr(e, p, 5);
        p = wr_vt(p, m->period_type);
    }
    p = u64f_write(p, 6, (uint64_t)m->period);
    p = bytes_write(p, 7, &m->profile_id);
    p = u64f_write(p, 8, m->dropped_attributes_count);
    p = str_write(p, 9, m->original_payload_format);
    p = bytes_write(p, 10, &m->original_payload);
    p = pi32_write(e, p, 11, m->attribute_indices, m->n_attribute_indices);
    return UNK_WRITE(m, p);
}

static size_t sz_scopeprof(struct enc *e, const struct pg_otlp_scopeprof *m)
{
    size_t slot = reserve(e), n = 0;

    if (m->scope != NULL) {
        n += emb(pg_enc_scope_size(e, m->scope));
    }
    for (size_t i = 0; i < m->n_profiles; i++) {
        n += emb(sz_profile(e, m->profiles[i]));
    }
    n += str_size(m->schema_url);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_scopeprof(struct enc *e, uint8_t *p, const struct pg_otlp_scopeprof *m)
{
    if (m->scope != NULL) {
        p = hdr(e, p, 1);
        p = pg_enc_scope_write(e, p, m->scope);
    }
    for (size_t i = 0; i < m->n_profiles; i++) {
        p = hdr(e, p, 2);
        p = wr_profile(e, p, m->profiles[i]);
    }
    p = str_write(p, 3, m->schema_url);
    return UNK_WRITE(m, p);
}

/* Kept out of pg_otlp_request_encode: inlined there, the sample loop inside lost registers to
 * the request's calls into the other encoder files (+1.5 % instructions per SDK push encode). */
static __attribute__((noinline)) size_t sz_resprof(struct enc *e, const struct pg_otlp_resprof *m)
{
    size_t slot = reserve(e), n = 0;

    if (m->resource != NULL) {
        n += emb(pg_enc_resource_size(e, m->resource));
    }
    for (size_t i = 0; i < m->n_scope_profiles; i++) {
        n += emb(sz_scopeprof(e, m->scope_profiles[i]));
    }
    n += str_size(m->schema_url);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_resprof(struct enc *e, uint8_t *p, const struct pg_otlp_resprof *m)
{
    if (m->resource != NULL) {
        p = hdr(e, p, 1);
        p = pg_enc_resource_write(e, p, m->resource);
    }
    for (size_t i = 0; i < m->n_scope_profiles; i++) {
        p = hdr(e, p, 2);
        p = wr_scopeprof(e, p, m->scope_profiles[i]);
    }
    p = str_write(p, 3, m->schema_url);
    return UNK_WRITE(m, p);
}

/* ---- request ------------------------------------------------------------ */

enum pg_err pg_otlp_request_encode(const struct pg_otlp_request *req, struct pg_arena *arena,
                                   uint8_t **out, size_t *len, struct pg_status *st)
{
    struct enc e;
    size_t total = 0;
    uint8_t *buf, *p;

    *out = NULL;
    *len = 0;
    memset(&e, 0, sizeof(e));
    pg_enc_take(&e);
    for (size_t i = 0; i < req->n_resource_profiles; i++) {
        total += emb(sz_resprof(&e, req->resource_profiles[i]));
    }
    if (req->dictionary != NULL) {
        /* two slots: scratch offset + 1 (0: written from the structs), the dictionary's length */
        size_t at = reserve(&e), start = e.scr_len, dlen;
        if (pg_enc_dict_to_scratch(&e, req->dictionary, &dlen)) {
            fill(&e, at, start + 1);
            total += emb(fill(&e, reserve(&e), dlen));
        } else {
            fill(&e, at, 0);
            total += emb(pg_enc_dict_size(&e, req->dictionary));
        }
    }
    total += UNK_SIZE(req);
    if (e.nomem) {
        pg_enc_give(&e);
        return pg_status_set(st, PG_ERR_NOMEM, "no memory to size a %zu-message OTLP request",
                             e.n);
    }
    if (e.too_big) {
        pg_enc_give(&e);
        return pg_status_set(st, PG_ERR_LIMIT, "OTLP request has a message over 4 GiB");
    }
    buf = pg_arena_alloc(arena, total ? total : 1);
    if (buf == NULL) {
        pg_enc_give(&e);
        return pg_status_set(st, pg_arena_hit_cap(arena) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "no memory to encode a %zu-byte OTLP request", total);
    }
    p = buf;
    for (size_t i = 0; i < req->n_resource_profiles; i++) {
        p = hdr(&e, p, 1);
        p = wr_resprof(&e, p, req->resource_profiles[i]);
    }
    if (req->dictionary != NULL) {
        size_t at = e.sz[e.rd++];
        p = hdr(&e, p, 2);
        if (at != 0) {
            memcpy(p, e.scr + at - 1, e.sz[e.rd - 1]);
            p += e.sz[e.rd - 1];
        } else {
            p = pg_enc_dict_write(&e, p, req->dictionary);
        }
    }
    p = UNK_WRITE(req, p);
    pg_enc_give(&e);
    if ((size_t)(p - buf) != total || e.rd != e.n) {
        return pg_status_set(st, PG_ERR_INTERNAL, "OTLP encoder wrote %zu of %zu bytes",
                             (size_t)(p - buf), total);
    }
    *out = buf;
    *len = total;
    return PG_ERR_OK;
}
