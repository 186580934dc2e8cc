/* SPDX-License-Identifier: Apache-2.0
 * Size-caching ExportProfilesServiceRequest encoder. protobuf-c's pack sizes
 * every sub-message again at each level of nesting (a Sample 5 times) through
 * reflective loops; here sz_*() walks the tree once in pre-order and records
 * each nested message's (and packed field's) length in a flat cache, and
 * wr_*() walks it again in the same order writing bytes. The wire rules are
 * protobuf-c 1.4's, so the output is byte-identical (tests/unit/test_wire_encode.c
 * checks it on every fixture): fields in field-number order, proto3 scalars,
 * strings, bytes and message pointers skipped when zero / empty / NULL, oneof
 * members written whenever selected (a string or message only when non-NULL and
 * not the shared empty default), repeated scalars packed, unknown fields last. */
#include "otlp/otlp_encode.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/pb_wire.h"
#include "core/vec.h"
#include "otlp/otlp_encode_internal.h"

/* A small request's samples are encoded once, while sizing, and copied when writing (the
 * copy is cheaper than sizing them). A large request sizes them, then writes them, rather
 * than hold another copy of its samples (peak memory). */
#define SCRATCH_MAX ((size_t)256 << 10)
#define SCRATCH_MIN ((size_t)16 << 10)
/* Bytes a sample takes at least in practice (stack index, a value, header): a profile with
 * more samples than the rest of the scratch holds at this size is sized, not tried. Only
 * the path depends on it, never the bytes. */
#define SAMPLE_TYPICAL 8

/* The size cache and the scratch of a small request are kept for the next request on the
 * same thread instead of freed (no malloc per SDK push); freed when the thread exits. A
 * larger request's are freed, so a thread holds at most 48 KiB here. */
#define KEEP_SZ_CAP 4096
#define KEEP_SCR_CAP ((size_t)32 << 10)

struct enc_spare {
    uint32_t *sz;
    size_t cap;
    uint8_t *scr;
    size_t scr_cap;
};

static __thread struct enc_spare tl_enc;
static pthread_key_t enc_key;
static pthread_once_t enc_once = PTHREAD_ONCE_INIT;
static bool enc_key_ok;

static void enc_spare_free(void *arg)
{
    struct enc_spare *sp = arg;

    free(sp->sz);
    free(sp->scr);
    memset(sp, 0, sizeof(*sp));
}

static void enc_key_init(void)
{
    enc_key_ok = pthread_key_create(&enc_key, enc_spare_free) == 0;
}

/* Starts @e with this thread's kept buffers, if any. */
static void enc_take(struct enc *e)
{
    e->sz = tl_enc.sz;
    e->cap = tl_enc.cap;
    e->scr = tl_enc.scr;
    e->scr_cap = tl_enc.scr_cap;
    memset(&tl_enc, 0, sizeof(tl_enc));
}

/* Keeps @e's buffers for the next request on this thread when they are small, else frees. */
static void enc_give(struct enc *e)
{
    if (e->cap <= KEEP_SZ_CAP && e->scr_cap <= KEEP_SCR_CAP && tl_enc.sz == NULL &&
        tl_enc.scr == NULL) {
        (void)pthread_once(&enc_once, enc_key_init);
        /* the key's value only marks the thread for the exit-time free (set once) */
        if (enc_key_ok && (pthread_getspecific(enc_key) != NULL ||
                           pthread_setspecific(enc_key, &tl_enc) == 0)) {
            tl_enc.sz = e->sz;
            tl_enc.cap = e->cap;
            tl_enc.scr = e->scr;
            tl_enc.scr_cap = e->scr_cap;
            return;
        }
    }
    free(e->sz);
    free(e->scr);
}

/* ---- common: AnyValue, KeyValue, ArrayValue, KeyValueList, scope, resource */

static size_t sz_kv(struct enc *e, const struct pg_otlp_kv *m);
static uint8_t *wr_kv(struct enc *e, uint8_t *p, const struct pg_otlp_kv *m);

static size_t sz_any(struct enc *e, const struct pg_otlp_anyvalue *m)
{
    size_t slot = reserve(e), n = 0;

    switch (m->value_case) {
    case PG_OTLP_ANYVALUE_STR:
        if (m->string_value != NULL && m->string_value != protobuf_c_empty_string) {
            size_t l = strlen(m->string_value);
            n += 1 + pg_pb_varint_len(l) + l;
        }
        break;
    case PG_OTLP_ANYVALUE_BOOL:
        n += 2;
        break;
    case PG_OTLP_ANYVALUE_INT:
        n += 1 + pg_pb_varint_len((uint64_t)m->int_value);
        break;
    case PG_OTLP_ANYVALUE_DOUBLE:
        n += 9;
        break;
    case PG_OTLP_ANYVALUE_ARRAY:
        if (m->array_value != NULL) {
            const struct pg_otlp_array *a = m->array_value;
            size_t aslot = reserve(e), an = 0;
            for (size_t i = 0; i < a->n_values; i++) {
                an += emb(sz_any(e, a->values[i]));
            }
            n += emb(fill(e, aslot, an + UNK_SIZE(a)));
        }
        break;
    case PG_OTLP_ANYVALUE_KVLIST:
        if (m->kvlist_value != NULL) {
            const struct pg_otlp_kvlist *l = m->kvlist_value;
            size_t lslot = reserve(e), ln = 0;
            for (size_t i = 0; i < l->n_values; i++) {
                ln += emb(sz_kv(e, l->values[i]));
            }
            n += emb(fill(e, lslot, ln + UNK_SIZE(l)));
        }
        break;
    case PG_OTLP_ANYVALUE_BYTES:
        n += 1 + pg_pb_varint_len(m->bytes_value.len) + m->bytes_value.len;
        break;
    case PG_OTLP_ANYVALUE_STRINDEX:
        n += 1 + i32len(m->string_value_strindex);
        break;
    default:
        break;
    }
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_any(struct enc *e, uint8_t *p, const struct pg_otlp_anyvalue *m)
{
    switch (m->value_case) {
    case PG_OTLP_ANYVALUE_STR:
        if (m->string_value != NULL && m->string_value != protobuf_c_empty_string) {
            p = rstr_write(p, 1, m->string_value);
        }
        break;
    case PG_OTLP_ANYVALUE_BOOL:
        *p++ = TAG(2, PG_PB_VARINT);
        *p++ = m->bool_value ? 1 : 0;
        break;
    case PG_OTLP_ANYVALUE_INT:
        *p++ = TAG(3, PG_PB_VARINT);
        p = pg_pb_put_varint(p, (uint64_t)m->int_value);
        break;
    case PG_OTLP_ANYVALUE_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &m->double_value, 8);
        *p++ = TAG(4, PG_PB_I64);
        p = pg_pb_put_fixed64(p, bits);
        break;
    }
    case PG_OTLP_ANYVALUE_ARRAY:
        if (m->array_value != NULL) {
            const struct pg_otlp_array *a = m->array_value;
            p = hdr(e, p, 5);
            for (size_t i = 0; i < a->n_values; i++) {
                p = hdr(e, p, 1);
                p = wr_any(e, p, a->values[i]);
            }
            p = UNK_WRITE(a, p);
        }
        break;
    case PG_OTLP_ANYVALUE_KVLIST:
        if (m->kvlist_value != NULL) {
            const struct pg_otlp_kvlist *l = m->kvlist_value;
            p = hdr(e, p, 6);
            for (size_t i = 0; i < l->n_values; i++) {
                p = hdr(e, p, 1);
                p = wr_kv(e, p, l->values[i]);
            }
            p = UNK_WRITE(l, p);
        }
        break;
    case PG_OTLP_ANYVALUE_BYTES:
        *p++ = TAG(7, PG_PB_LEN);
        p = pg_pb_put_varint(p, m->bytes_value.len);
        if (m->bytes_value.len > 0) {
            memcpy(p, m->bytes_value.data, m->bytes_value.len);
        }
        p += m->bytes_value.len;
        break;
    case PG_OTLP_ANYVALUE_STRINDEX:
        *p++ = TAG(8, PG_PB_VARINT);
        p = pg_pb_put_varint(p, (uint64_t)(int64_t)m->string_value_strindex);
        break;
    default:
        break;
    }
    return UNK_WRITE(m, p);
}

static size_t sz_kv(struct enc *e, const struct pg_otlp_kv *m)
{
    size_t slot = reserve(e), n = str_size(m->key);

    if (m->value != NULL) {
        n += emb(sz_any(e, m->value));
    }
    n += i32f_size(m->key_strindex);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_kv(struct enc *e, uint8_t *p, const struct pg_otlp_kv *m)
{
    p = str_write(p, 1, m->key);
    if (m->value != NULL) {
        p = hdr(e, p, 2);
        p = wr_any(e, p, m->value);
    }
    p = i32f_write(p, 3, m->key_strindex);
    return UNK_WRITE(m, p);
}

static size_t sz_kvs(struct enc *e, struct pg_otlp_kv *const *kv, size_t n)
{
    size_t total = 0;

    for (size_t i = 0; i < n; i++) {
        total += emb(sz_kv(e, kv[i]));
    }
    return total;
}

static uint8_t *wr_kvs(struct enc *e, uint8_t *p, unsigned field, struct pg_otlp_kv *const *kv,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p = hdr(e, p, field);
        p = wr_kv(e, p, kv[i]);
    }
    return p;
}

static size_t sz_scope(struct enc *e, const struct pg_otlp_scope *m)
{
    size_t slot = reserve(e);
    size_t n = str_size(m->name) + str_size(m->version) + sz_kvs(e, m->attributes, m->n_attributes);

    n += m->dropped_attributes_count ? 1 + pg_pb_varint_len(m->dropped_attributes_count) : 0;
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_scope(struct enc *e, uint8_t *p, const struct pg_otlp_scope *m)
{
    p = str_write(p, 1, m->name);
    p = str_write(p, 2, m->version);
    p = wr_kvs(e, p, 3, m->attributes, m->n_attributes);
    p = u64f_write(p, 4, m->dropped_attributes_count);
    return UNK_WRITE(m, p);
}

static size_t sz_entity(struct enc *e, const Opentelemetry__Proto__Common__V1__EntityRef *m)
{
    size_t slot = reserve(e), n = str_size(m->schema_url) + str_size(m->type);

    for (size_t i = 0; i < m->n_id_keys; i++) {
        n += rstr_size(m->id_keys[i]);
    }
    for (size_t i = 0; i < m->n_description_keys; i++) {
        n += rstr_size(m->description_keys[i]);
    }
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_entity(struct enc *e, uint8_t *p,
                          const Opentelemetry__Proto__Common__V1__EntityRef *m)
{
    (void)e;
    p = str_write(p, 1, m->schema_url);
    p = str_write(p, 2, m->type);
    for (size_t i = 0; i < m->n_id_keys; i++) {
        p = rstr_write(p, 3, m->id_keys[i]);
    }
    for (size_t i = 0; i < m->n_description_keys; i++) {
        p = rstr_write(p, 4, m->description_keys[i]);
    }
    return UNK_WRITE(m, p);
}

static size_t sz_resource(struct enc *e, const struct pg_otlp_resource *m)
{
    size_t slot = reserve(e), n = sz_kvs(e, m->attributes, m->n_attributes);

    n += m->dropped_attributes_count ? 1 + pg_pb_varint_len(m->dropped_attributes_count) : 0;
    for (size_t i = 0; i < m->n_entity_refs; i++) {
        n += emb(sz_entity(e, m->entity_refs[i]));
    }
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_resource(struct enc *e, uint8_t *p, const struct pg_otlp_resource *m)
{
    p = wr_kvs(e, p, 1, m->attributes, m->n_attributes);
    p = u64f_write(p, 2, m->dropped_attributes_count);
    for (size_t i = 0; i < m->n_entity_refs; i++) {
        p = hdr(e, p, 3);
        p = wr_entity(e, p, m->entity_refs[i]);
    }
    return UNK_WRITE(m, p);
}

/* ---- profiles ----------------------------------------------------------- */

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

/* The body written at @body (one byte after @lenp) is @len bytes long: store the length at
 * @lenp, moving the body up when it needs more than one byte. Returns the byte after it. */
static uint8_t *patch_len_slow(uint8_t *lenp, uint8_t *body, size_t len)
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

static bool scratch_room(struct enc *e, size_t need)
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

    if (m->sample_type != NULL) {
        n += emb(sz_vt(e, m->sample_type));
    }
    n += sz_samples(e, m->samples, m->n_samples);
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
    if (m->sample_type != NULL) {
        p = hdr(e, p, 1);
        p = wr_vt(p, m->sample_type);
    }
    p = wr_samples(e, p, m->samples, m->n_samples);
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
        n += emb(sz_scope(e, m->scope));
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
        p = wr_scope(e, p, m->scope);
    }
    for (size_t i = 0; i < m->n_profiles; i++) {
        p = hdr(e, p, 2);
        p = wr_profile(e, p, m->profiles[i]);
    }
    p = str_write(p, 3, m->schema_url);
    return UNK_WRITE(m, p);
}

static size_t sz_resprof(struct enc *e, const struct pg_otlp_resprof *m)
{
    size_t slot = reserve(e), n = 0;

    if (m->resource != NULL) {
        n += emb(sz_resource(e, m->resource));
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
        p = wr_resource(e, p, m->resource);
    }
    for (size_t i = 0; i < m->n_scope_profiles; i++) {
        p = hdr(e, p, 2);
        p = wr_scopeprof(e, p, m->scope_profiles[i]);
    }
    p = str_write(p, 3, m->schema_url);
    return UNK_WRITE(m, p);
}

/* ---- dictionary --------------------------------------------------------- */

static size_t sz_mapping(struct enc *e, const struct pg_otlp_mapping *m)
{
    size_t slot = reserve(e);
    size_t n = u64f_size(m->memory_start) + u64f_size(m->memory_limit) +
               u64f_size(m->file_offset) + i32f_size(m->filename_strindex) +
               pi32_size(e, m->attribute_indices, m->n_attribute_indices);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_mapping(struct enc *e, uint8_t *p, const struct pg_otlp_mapping *m)
{
    p = u64f_write(p, 1, m->memory_start);
    p = u64f_write(p, 2, m->memory_limit);
    p = u64f_write(p, 3, m->file_offset);
    p = i32f_write(p, 4, m->filename_strindex);
    p = pi32_write(e, p, 5, m->attribute_indices, m->n_attribute_indices);
    return UNK_WRITE(m, p);
}

static size_t sz_line(struct enc *e, const struct pg_otlp_line *m)
{
    size_t slot = reserve(e);
    size_t n = i32f_size(m->function_index) + u64f_size((uint64_t)m->line) +
               u64f_size((uint64_t)m->column);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_line(uint8_t *p, const struct pg_otlp_line *m)
{
    p = i32f_write(p, 1, m->function_index);
    p = u64f_write(p, 2, (uint64_t)m->line);
    p = u64f_write(p, 3, (uint64_t)m->column);
    return UNK_WRITE(m, p);
}

static size_t sz_location(struct enc *e, const struct pg_otlp_location *m)
{
    size_t slot = reserve(e);
    size_t n = i32f_size(m->mapping_index) + u64f_size(m->address);

    for (size_t i = 0; i < m->n_lines; i++) {
        n += emb(sz_line(e, m->lines[i]));
    }
    n += pi32_size(e, m->attribute_indices, m->n_attribute_indices);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_location(struct enc *e, uint8_t *p, const struct pg_otlp_location *m)
{
    p = i32f_write(p, 1, m->mapping_index);
    p = u64f_write(p, 2, m->address);
    for (size_t i = 0; i < m->n_lines; i++) {
        p = hdr(e, p, 3);
        p = wr_line(p, m->lines[i]);
    }
    p = pi32_write(e, p, 4, m->attribute_indices, m->n_attribute_indices);
    return UNK_WRITE(m, p);
}

static size_t sz_function(struct enc *e, const struct pg_otlp_function *m)
{
    size_t slot = reserve(e);
    size_t n = i32f_size(m->name_strindex) + i32f_size(m->system_name_strindex) +
               i32f_size(m->filename_strindex) + u64f_size((uint64_t)m->start_line);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_function(uint8_t *p, const struct pg_otlp_function *m)
{
    p = i32f_write(p, 1, m->name_strindex);
    p = i32f_write(p, 2, m->system_name_strindex);
    p = i32f_write(p, 3, m->filename_strindex);
    p = u64f_write(p, 4, (uint64_t)m->start_line);
    return UNK_WRITE(m, p);
}

static size_t sz_link(struct enc *e, const struct pg_otlp_link *m)
{
    size_t slot = reserve(e);
    return fill(e, slot, bytes_size(&m->trace_id) + bytes_size(&m->span_id) + UNK_SIZE(m));
}

static uint8_t *wr_link(uint8_t *p, const struct pg_otlp_link *m)
{
    p = bytes_write(p, 1, &m->trace_id);
    p = bytes_write(p, 2, &m->span_id);
    return UNK_WRITE(m, p);
}

static size_t sz_kvu(struct enc *e, const struct pg_otlp_kvu *m)
{
    size_t slot = reserve(e), n = i32f_size(m->key_strindex);

    if (m->value != NULL) {
        n += emb(sz_any(e, m->value));
    }
    n += i32f_size(m->unit_strindex);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_kvu(struct enc *e, uint8_t *p, const struct pg_otlp_kvu *m)
{
    p = i32f_write(p, 1, m->key_strindex);
    if (m->value != NULL) {
        p = hdr(e, p, 2);
        p = wr_any(e, p, m->value);
    }
    p = i32f_write(p, 3, m->unit_strindex);
    return UNK_WRITE(m, p);
}

static size_t sz_stack(struct enc *e, const struct pg_otlp_stack *m)
{
    size_t slot = reserve(e);
    size_t n = pi32_size(e, m->location_indices, m->n_location_indices);
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_stack(struct enc *e, uint8_t *p, const struct pg_otlp_stack *m)
{
    p = pi32_write(e, p, 1, m->location_indices, m->n_location_indices);
    return UNK_WRITE(m, p);
}

static size_t sz_dict(struct enc *e, const struct pg_otlp_dict *m)
{
    size_t slot = reserve(e), n = 0;

    for (size_t i = 0; i < m->n_mapping_table; i++) {
        n += emb(sz_mapping(e, m->mapping_table[i]));
    }
    for (size_t i = 0; i < m->n_location_table; i++) {
        n += emb(sz_location(e, m->location_table[i]));
    }
    for (size_t i = 0; i < m->n_function_table; i++) {
        n += emb(sz_function(e, m->function_table[i]));
    }
    for (size_t i = 0; i < m->n_link_table; i++) {
        n += emb(sz_link(e, m->link_table[i]));
    }
    for (size_t i = 0; i < m->n_string_table; i++) {
        n += rstr_size(m->string_table[i]);
    }
    for (size_t i = 0; i < m->n_attribute_table; i++) {
        n += emb(sz_kvu(e, m->attribute_table[i]));
    }
    for (size_t i = 0; i < m->n_stack_table; i++) {
        n += emb(sz_stack(e, m->stack_table[i]));
    }
    return fill(e, slot, n + UNK_SIZE(m));
}

static uint8_t *wr_dict(struct enc *e, uint8_t *p, const struct pg_otlp_dict *m)
{
    for (size_t i = 0; i < m->n_mapping_table; i++) {
        p = hdr(e, p, 1);
        p = wr_mapping(e, p, m->mapping_table[i]);
    }
    for (size_t i = 0; i < m->n_location_table; i++) {
        p = hdr(e, p, 2);
        p = wr_location(e, p, m->location_table[i]);
    }
    for (size_t i = 0; i < m->n_function_table; i++) {
        p = hdr(e, p, 3);
        p = wr_function(p, m->function_table[i]);
    }
    for (size_t i = 0; i < m->n_link_table; i++) {
        p = hdr(e, p, 4);
        p = wr_link(p, m->link_table[i]);
    }
    for (size_t i = 0; i < m->n_string_table; i++) {
        p = rstr_write(p, 5, m->string_table[i]);
    }
    for (size_t i = 0; i < m->n_attribute_table; i++) {
        p = hdr(e, p, 6);
        p = wr_kvu(e, p, m->attribute_table[i]);
    }
    for (size_t i = 0; i < m->n_stack_table; i++) {
        p = hdr(e, p, 7);
        p = wr_stack(e, p, m->stack_table[i]);
    }
    return UNK_WRITE(m, p);
}

/* ---- dictionary, encoded once ------------------------------------------ */

/* Like the Samples, a small request's dictionary is written while sizing, into the scratch
 * block after the samples: each table entry behind a one-byte length patched afterwards
 * (an attribute, whose value may nest, is sized on the spot with cache slots it gives
 * back). Each entry first makes room for the most it can take. */

static inline uint8_t *bp_mapping(uint8_t *p, const struct pg_otlp_mapping *m)
{
    uint8_t *lenp = p + 1;

    *p = TAG(1, PG_PB_LEN);
    p += 2;
    p = u64f_write(p, 1, m->memory_start);
    p = u64f_write(p, 2, m->memory_limit);
    p = u64f_write(p, 3, m->file_offset);
    p = i32f_write(p, 4, m->filename_strindex);
    p = bp_pi32_write(p, 5, m->attribute_indices, m->n_attribute_indices);
    p = UNK_WRITE(m, p);
    return patch_len(lenp, p);
}

static inline uint8_t *bp_location(uint8_t *p, const struct pg_otlp_location *m)
{
    uint8_t *lenp = p + 1;

    *p = TAG(2, PG_PB_LEN);
    p += 2;
    p = i32f_write(p, 1, m->mapping_index);
    p = u64f_write(p, 2, m->address);
    for (size_t i = 0; i < m->n_lines; i++) {
        uint8_t *llen = p + 1;
        *p = TAG(3, PG_PB_LEN);
        p = patch_len(llen, wr_line(p + 2, m->lines[i]));
    }
    p = bp_pi32_write(p, 4, m->attribute_indices, m->n_attribute_indices);
    p = UNK_WRITE(m, p);
    return patch_len(lenp, p);
}

static inline size_t location_bound(const struct pg_otlp_location *m)
{
    size_t b = 55 + 10 * m->n_attribute_indices + UNK_SIZE(m);

    for (size_t i = 0; i < m->n_lines; i++) {
        b += 44 + UNK_SIZE(m->lines[i]);
    }
    return b;
}

static bool dict_to_scratch(struct enc *e, const struct pg_otlp_dict *m, size_t *len)
{
    size_t start = e->scr_len, n0 = e->n;
    bool nomem0 = e->nomem, too_big0 = e->too_big;
    uint8_t *q, *lim;

#define ROOM(bound)                                                                                \
    do {                                                                                           \
        size_t b_ = (bound);                                                                       \
        if ((size_t)(lim - q) < b_) {                                                              \
            e->scr_len = (size_t)(q - e->scr);                                                     \
            if (!scratch_room(e, b_)) {                                                            \
                goto off;                                                                          \
            }                                                                                      \
            q = e->scr + e->scr_len;                                                               \
            lim = e->scr + e->scr_cap;                                                             \
        }                                                                                          \
    } while (0)
#define BP(field, q, body)                                                                         \
    do {                                                                                           \
        uint8_t *lenp_ = (q) + 1;                                                                  \
        *(q) = TAG(field, PG_PB_LEN);                                                              \
        (q) = patch_len(lenp_, body);                                                              \
    } while (0)

    if (e->scr_off || (e->scr == NULL && !scratch_room(e, 0))) {
        return false;
    }
    q = e->scr + start;
    lim = e->scr + e->scr_cap;
    for (size_t i = 0; i < m->n_mapping_table; i++) {
        const struct pg_otlp_mapping *mp = m->mapping_table[i];
        ROOM(66 + 10 * mp->n_attribute_indices + UNK_SIZE(mp));
        q = bp_mapping(q, mp);
    }
    for (size_t i = 0; i < m->n_location_table; i++) {
        ROOM(location_bound(m->location_table[i]));
        q = bp_location(q, m->location_table[i]);
    }
    for (size_t i = 0; i < m->n_function_table; i++) {
        const struct pg_otlp_function *fn = m->function_table[i];
        ROOM(55 + UNK_SIZE(fn));
        BP(3, q, wr_function(q + 2, fn));
    }
    for (size_t i = 0; i < m->n_link_table; i++) {
        const struct pg_otlp_link *lk = m->link_table[i];
        ROOM(33 + lk->trace_id.len + lk->span_id.len + UNK_SIZE(lk));
        if (lk->trace_id.len == 16 && lk->span_id.len == 8 && lk->base.n_unknown_fields == 0) {
            /* the only shape translation writes: fixed bytes, fixed-size copies */
            q[0] = TAG(4, PG_PB_LEN);
            q[1] = 28;
            q[2] = TAG(1, PG_PB_LEN);
            q[3] = 16;
            memcpy(q + 4, lk->trace_id.data, 16);
            q[20] = TAG(2, PG_PB_LEN);
            q[21] = 8;
            memcpy(q + 22, lk->span_id.data, 8);
            q += 30;
            continue;
        }
        BP(4, q, wr_link(q + 2, lk));
    }
    for (size_t i = 0; i < m->n_string_table; i++) {
        const char *str = m->string_table[i];
        size_t sl = str != NULL ? strlen(str) : 0;
        ROOM(11 + sl);
        *q++ = TAG(5, PG_PB_LEN);
        q = pg_pb_put_varint(q, sl);
        if (sl > 0) {
            memcpy(q, str, sl);
        }
        q += sl;
    }
    for (size_t i = 0; i < m->n_attribute_table; i++) {
        size_t s0 = e->n, sz = sz_kvu(e, m->attribute_table[i]);
        if (e->nomem || e->too_big) {
            goto off;
        }
        ROOM(11 + sz);
        e->rd = s0;
        q = hdr(e, q, 6);
        q = wr_kvu(e, q, m->attribute_table[i]);
        e->n = s0;
    }
    for (size_t i = 0; i < m->n_stack_table; i++) {
        const struct pg_otlp_stack *sk = m->stack_table[i];
        ROOM(22 + 10 * sk->n_location_indices + UNK_SIZE(sk));
        BP(7, q, UNK_WRITE(sk, bp_pi32_write(q + 2, 1, sk->location_indices,
                                                sk->n_location_indices)));
    }
    ROOM(UNK_SIZE(m));
    q = UNK_WRITE(m, q);
    e->scr_len = (size_t)(q - e->scr);
    e->rd = 0;
    *len = e->scr_len - start;
    return true;
off:
    e->scr_off = true;
    e->scr_len = start;
    e->n = n0;
    e->rd = 0;
    e->nomem = nomem0; /* sized again by the caller, which tells a real failure */
    e->too_big = too_big0;
    return false;
#undef ROOM
#undef BP
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
    enc_take(&e);
    for (size_t i = 0; i < req->n_resource_profiles; i++) {
        total += emb(sz_resprof(&e, req->resource_profiles[i]));
    }
    if (req->dictionary != NULL) {
        /* two slots: scratch offset + 1 (0: written from the structs), the dictionary's length */
        size_t at = reserve(&e), start = e.scr_len, dlen;
        if (dict_to_scratch(&e, req->dictionary, &dlen)) {
            fill(&e, at, start + 1);
            total += emb(fill(&e, reserve(&e), dlen));
        } else {
            fill(&e, at, 0);
            total += emb(sz_dict(&e, req->dictionary));
        }
    }
    total += UNK_SIZE(req);
    if (e.nomem) {
        enc_give(&e);
        return pg_status_set(st, PG_ERR_NOMEM, "no memory to size a %zu-message OTLP request",
                             e.n);
    }
    if (e.too_big) {
        enc_give(&e);
        return pg_status_set(st, PG_ERR_LIMIT, "OTLP request has a message over 4 GiB");
    }
    buf = pg_arena_alloc(arena, total ? total : 1);
    if (buf == NULL) {
        enc_give(&e);
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
            p = wr_dict(&e, p, req->dictionary);
        }
    }
    p = UNK_WRITE(req, p);
    enc_give(&e);
    if ((size_t)(p - buf) != total || e.rd != e.n) {
        return pg_status_set(st, PG_ERR_INTERNAL, "OTLP encoder wrote %zu of %zu bytes",
                             (size_t)(p - buf), total);
    }
    *out = buf;
    *len = total;
    return PG_ERR_OK;
}
