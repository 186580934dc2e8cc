/* SPDX-License-Identifier: Apache-2.0
 * The encoder's messages of opentelemetry.proto.common and .resource: AnyValue
 * (with its arrays and key-value lists), KeyValue, InstrumentationScope,
 * EntityRef, Resource, and the dictionary's KeyValueAndUnit, whose value is
 * an AnyValue. Each as a sizing/writing pair over the size cache. */
#include <string.h>

#include "otlp/otlp_encode_internal.h"

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

size_t pg_enc_scope_size(struct enc *e, const struct pg_otlp_scope *m)
{
    size_t slot = reserve(e);
    size_t n = str_size(m->name) + str_size(m->version) + sz_kvs(e, m->attributes, m->n_attributes);

    n += m->dropped_attributes_count ? 1 + pg_pb_varint_len(m->dropped_attributes_count) : 0;
    return fill(e, slot, n + UNK_SIZE(m));
}

uint8_t *pg_enc_scope_write(struct enc *e, uint8_t *p, const struct pg_otlp_scope *m)
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

size_t pg_enc_resource_size(struct enc *e, const struct pg_otlp_resource *m)
{
    size_t slot = reserve(e), n = sz_kvs(e, m->attributes, m->n_attributes);

    n += m->dropped_attributes_count ? 1 + pg_pb_varint_len(m->dropped_attributes_count) : 0;
    for (size_t i = 0; i < m->n_entity_refs; i++) {
        n += emb(sz_entity(e, m->entity_refs[i]));
    }
    return fill(e, slot, n + UNK_SIZE(m));
}

uint8_t *pg_enc_resource_write(struct enc *e, uint8_t *p, const struct pg_otlp_resource *m)
{
    p = wr_kvs(e, p, 1, m->attributes, m->n_attributes);
    p = u64f_write(p, 2, m->dropped_attributes_count);
    for (size_t i = 0; i < m->n_entity_refs; i++) {
        p = hdr(e, p, 3);
        p = wr_entity(e, p, m->entity_refs[i]);
    }
    return UNK_WRITE(m, p);
}

size_t pg_enc_kvu_size(struct enc *e, const struct pg_otlp_kvu *m)
{
    size_t slot = reserve(e), n = i32f_size(m->key_strindex);

    if (m->value != NULL) {
        n += emb(sz_any(e, m->value));
    }
    n += i32f_size(m->unit_strindex);
    return fill(e, slot, n + UNK_SIZE(m));
}

uint8_t *pg_enc_kvu_write(struct enc *e, uint8_t *p, const struct pg_otlp_kvu *m)
{
    p = i32f_write(p, 1, m->key_strindex);
    if (m->value != NULL) {
        p = hdr(e, p, 2);
        p = wr_any(e, p, m->value);
    }
    p = i32f_write(p, 3, m->unit_strindex);
    return UNK_WRITE(m, p);
}
