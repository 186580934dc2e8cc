/* SPDX-License-Identifier: Apache-2.0
 * AnyValue and KeyValue by value, for the dictionary's attribute table: the
 * hash, the equality and the deep copy (nesting capped at 64 levels). */
#include <string.h>

#include "otlp/dict.h"
#include "otlp/dict_internal.h"

static uint64_t kv_hash(const struct pg_otlp_kv *kv, uint64_t h)
{
    const char *key = kv->key != NULL ? kv->key : "";
    h = hash_u64(h, pg_dict_hash_bytes(key, strlen(key), 23));
    h = hash_u64(h, (uint32_t)kv->key_strindex);
    return pg_dict_any_hash(kv->value, h);
}

uint64_t pg_dict_any_hash(const struct pg_otlp_anyvalue *v, uint64_t h)
{
    if (v == NULL) {
        return hash_u64(h, 0xffff);
    }
    h = hash_u64(h, (uint64_t)v->value_case);
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR: {
        const char *s = v->string_value != NULL ? v->string_value : "";
        return hash_u64(h, pg_dict_hash_bytes(s, strlen(s), 29));
    }
    case PG_OTLP_ANYVALUE_BOOL:
        return hash_u64(h, v->bool_value != 0);
    case PG_OTLP_ANYVALUE_INT:
        return hash_u64(h, (uint64_t)v->int_value);
    case PG_OTLP_ANYVALUE_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &v->double_value, 8);
        return hash_u64(h, bits);
    }
    case PG_OTLP_ANYVALUE_BYTES:
        return hash_u64(h, v->bytes_value.len
                               ? pg_dict_hash_bytes(v->bytes_value.data, v->bytes_value.len, 31)
                               : 31);
    case PG_OTLP_ANYVALUE_STRINDEX:
        return hash_u64(h, (uint32_t)v->string_value_strindex);
    case PG_OTLP_ANYVALUE_ARRAY:
        if (v->array_value != NULL) {
            for (size_t i = 0; i < v->array_value->n_values; i++) {
                h = pg_dict_any_hash(v->array_value->values[i], h);
            }
            h = hash_u64(h, v->array_value->n_values);
        }
        return h;
    case PG_OTLP_ANYVALUE_KVLIST:
        if (v->kvlist_value != NULL) {
            for (size_t i = 0; i < v->kvlist_value->n_values; i++) {
                h = kv_hash(v->kvlist_value->values[i], h);
            }
            h = hash_u64(h, v->kvlist_value->n_values);
        }
        return h;
    default:
        return h;
    }
}

static bool str_equal0(const char *a, const char *b)
{
    return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

static bool kv_equal(const struct pg_otlp_kv *a, const struct pg_otlp_kv *b)
{
    return str_equal0(a->key, b->key) && a->key_strindex == b->key_strindex &&
           pg_dict_anyvalue_equal(a->value, b->value);
}

bool pg_dict_anyvalue_equal(const struct pg_otlp_anyvalue *a, const struct pg_otlp_anyvalue *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    if (a->value_case != b->value_case) {
        return false;
    }
    switch (a->value_case) {
    case PG_OTLP_ANYVALUE_STR:
        return str_equal0(a->string_value, b->string_value);
    case PG_OTLP_ANYVALUE_BOOL:
        return (a->bool_value != 0) == (b->bool_value != 0);
    case PG_OTLP_ANYVALUE_INT:
        return a->int_value == b->int_value;
    case PG_OTLP_ANYVALUE_DOUBLE:
        return memcmp(&a->double_value, &b->double_value, sizeof(double)) == 0;
    case PG_OTLP_ANYVALUE_BYTES:
        return a->bytes_value.len == b->bytes_value.len &&
               (a->bytes_value.len == 0 ||
                memcmp(a->bytes_value.data, b->bytes_value.data, a->bytes_value.len) == 0);
    case PG_OTLP_ANYVALUE_STRINDEX:
        return a->string_value_strindex == b->string_value_strindex;
    case PG_OTLP_ANYVALUE_ARRAY: {
        size_t na = a->array_value ? a->array_value->n_values : 0;
        size_t nb = b->array_value ? b->array_value->n_values : 0;
        if (na != nb) {
            return false;
        }
        for (size_t i = 0; i < na; i++) {
            if (!pg_dict_anyvalue_equal(a->array_value->values[i], b->array_value->values[i])) {
                return false;
            }
        }
        return true;
    }
    case PG_OTLP_ANYVALUE_KVLIST: {
        size_t na = a->kvlist_value ? a->kvlist_value->n_values : 0;
        size_t nb = b->kvlist_value ? b->kvlist_value->n_values : 0;
        if (na != nb) {
            return false;
        }
        for (size_t i = 0; i < na; i++) {
            if (!kv_equal(a->kvlist_value->values[i], b->kvlist_value->values[i])) {
                return false;
            }
        }
        return true;
    }
    default:
        return true;
    }
}

static struct pg_otlp_kv *kv_copy(struct pg_arena *a, const struct pg_otlp_kv *kv, unsigned depth)
{
    struct pg_otlp_kv *c = pg_arena_alloc(a, sizeof(*c));

    if (c == NULL) {
        return NULL;
    }
    opentelemetry__proto__common__v1__key_value__init(c);
    c->key_strindex = kv->key_strindex;
    if (kv->key != NULL && kv->key[0] != '\0') {
        if ((c->key = pg_arena_strdup(a, kv->key)) == NULL) {
            return NULL;
        }
    }
    if (kv->value != NULL && (c->value = pg_dict_any_copy(a, kv->value, depth + 1)) == NULL) {
        return NULL;
    }
    return c;
}

/* Deep copy; nesting is bounded because protobuf-c's own unpacker bounds it
 * and our translator builds at most one level. */
struct pg_otlp_anyvalue *pg_dict_any_copy(struct pg_arena *a, const struct pg_otlp_anyvalue *v,
                                          unsigned depth)
{
    struct pg_otlp_anyvalue *c = pg_arena_alloc(a, sizeof(*c));

    if (c == NULL || depth > 64) {
        return NULL;
    }
    *c = *v;
    c->base.n_unknown_fields = 0;
    c->base.unknown_fields = NULL;
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR:
        c->string_value = pg_arena_strdup(a, v->string_value != NULL ? v->string_value : "");
        return c->string_value != NULL ? c : NULL;
    case PG_OTLP_ANYVALUE_BYTES:
        if (v->bytes_value.len > 0) {
            c->bytes_value.data = pg_arena_memdup(a, v->bytes_value.data, v->bytes_value.len);
            return c->bytes_value.data != NULL ? c : NULL;
        }
        c->bytes_value.data = NULL;
        return c;
    case PG_OTLP_ANYVALUE_ARRAY: {
        const struct pg_otlp_array *src = v->array_value;
        struct pg_otlp_array *arr = pg_arena_alloc(a, sizeof(*arr));
        if (arr == NULL) {
            return NULL;
        }
        opentelemetry__proto__common__v1__array_value__init(arr);
        if (src != NULL && src->n_values > 0) {
            arr->values = pg_arena_calloc(a, src->n_values, sizeof(*arr->values));
            if (arr->values == NULL) {
                return NULL;
            }
            for (size_t i = 0; i < src->n_values; i++) {
                if ((arr->values[i] = pg_dict_any_copy(a, src->values[i], depth + 1)) == NULL) {
                    return NULL;
                }
            }
            arr->n_values = src->n_values;
        }
        c->array_value = arr;
        return c;
    }
    case PG_OTLP_ANYVALUE_KVLIST: {
        const struct pg_otlp_kvlist *src = v->kvlist_value;
        struct pg_otlp_kvlist *kl = pg_arena_alloc(a, sizeof(*kl));
        if (kl == NULL) {
            return NULL;
        }
        opentelemetry__proto__common__v1__key_value_list__init(kl);
        if (src != NULL && src->n_values > 0) {
            kl->values = pg_arena_calloc(a, src->n_values, sizeof(*kl->values));
            if (kl->values == NULL) {
                return NULL;
            }
            for (size_t i = 0; i < src->n_values; i++) {
                if ((kl->values[i] = kv_copy(a, src->values[i], depth + 1)) == NULL) {
                    return NULL;
                }
            }
            kl->n_values = src->n_values;
        }
        c->kvlist_value = kl;
        return c;
    }
    default:
        return c;
    }
}
