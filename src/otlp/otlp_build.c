/* SPDX-License-Identifier: Apache-2.0
 * Arena constructors for OTLP KeyValue / AnyValue messages. */
#include "otlp/otlp_build.h"

#include <string.h>

#include "core/utf8.h"

struct pg_otlp_anyvalue *pg_otlp_any_str(struct pg_arena *arena, const char *s, size_t len)
{
    struct pg_otlp_anyvalue *v = pg_arena_alloc(arena, sizeof(*v));
    size_t n = s != NULL ? len : 0;
    const char *clean = s != NULL ? pg_utf8_clean(arena, s, &n, "attribute value") : "";
    /* clean is @s (valid: copy it) or already a repaired arena copy. */
    char *copy = clean == NULL ? NULL
                 : clean == s  ? pg_arena_strndup(arena, s, n)
                               : pg_arena_strndup(arena, clean, n);

    if (v == NULL || copy == NULL) {
        return NULL;
    }
    opentelemetry__proto__common__v1__any_value__init(v);
    v->value_case = PG_OTLP_ANYVALUE_STR;
    v->string_value = copy;
    return v;
}

struct pg_otlp_anyvalue *pg_otlp_any_int(struct pg_arena *arena, int64_t i)
{
    struct pg_otlp_anyvalue *v = pg_arena_alloc(arena, sizeof(*v));

    if (v == NULL) {
        return NULL;
    }
    opentelemetry__proto__common__v1__any_value__init(v);
    v->value_case = PG_OTLP_ANYVALUE_INT;
    v->int_value = i;
    return v;
}

struct pg_otlp_anyvalue *pg_otlp_any_bool(struct pg_arena *arena, bool b)
{
    struct pg_otlp_anyvalue *v = pg_arena_alloc(arena, sizeof(*v));

    if (v == NULL) {
        return NULL;
    }
    opentelemetry__proto__common__v1__any_value__init(v);
    v->value_case = PG_OTLP_ANYVALUE_BOOL;
    v->bool_value = b;
    return v;
}

struct pg_otlp_kv *pg_otlp_kv_str(struct pg_arena *arena, const char *key, const char *value)
{
    struct pg_otlp_kv *kv = pg_arena_alloc(arena, sizeof(*kv));
    char *k = pg_arena_strdup(arena, key != NULL ? key : "");

    if (kv == NULL || k == NULL) {
        return NULL;
    }
    opentelemetry__proto__common__v1__key_value__init(kv);
    kv->key = k;
    kv->value = pg_otlp_any_str(arena, value, value != NULL ? strlen(value) : 0);
    return kv->value != NULL ? kv : NULL;
}

bool pg_otlp_kv_append(struct pg_arena *arena, struct pg_otlp_kv ***attrs, size_t *n,
                       struct pg_otlp_kv *kv)
{
    /* The old array may be borrowed (a decoded message): copy, never realloc. */
    struct pg_otlp_kv **grown = pg_arena_alloc(arena, (*n + 1) * sizeof(*grown));

    if (grown == NULL) {
        return false;
    }
    if (*n > 0) {
        memcpy(grown, *attrs, *n * sizeof(*grown));
    }
    grown[*n] = kv;
    *attrs = grown;
    (*n)++;
    return true;
}
