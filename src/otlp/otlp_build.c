/* SPDX-License-Identifier: Apache-2.0
 * Arena constructors for OTLP KeyValue / AnyValue messages. */
#include "otlp/otlp_build.h"

#include <string.h>

#include "otlp/otlp_utf8.h"

static const struct pg_otlp_anyvalue any_init = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
static const struct pg_otlp_kv kv_init = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;

/* A NUL-terminated copy of @s[0..n) in @arena. */
static char *copy_str(struct pg_arena *arena, const char *s, size_t n)
{
    char *c = n < SIZE_MAX ? pg_arena_alloc(arena, n + 1) : NULL;

    if (c != NULL) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

struct pg_otlp_anyvalue *pg_otlp_any_str(struct pg_arena *arena, const char *s, size_t len)
{
    struct pg_otlp_anyvalue *v = pg_arena_alloc(arena, sizeof(*v));
    size_t n = s != NULL ? len : 0;
    const char *clean = s != NULL ? pg_utf8_clean(arena, s, &n, "attribute value") : "";
    /* clean is @s (valid: copy it) or already a repaired, NUL-terminated arena copy. */
    char *copy = clean == NULL ? NULL : clean == s || s == NULL ? copy_str(arena, clean, n)
                                                                : (char *)clean;

    if (v == NULL || copy == NULL) {
        return NULL;
    }
    *v = any_init;
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
    *v = any_init;
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
    *v = any_init;
    v->value_case = PG_OTLP_ANYVALUE_BOOL;
    v->bool_value = b;
    return v;
}

struct pg_otlp_kv *pg_otlp_kv_str(struct pg_arena *arena, const char *key, const char *value)
{
    struct pg_otlp_kv *kv = pg_arena_alloc(arena, sizeof(*kv));
    char *k = key != NULL ? copy_str(arena, key, strlen(key)) : copy_str(arena, "", 0);

    if (kv == NULL || k == NULL) {
        return NULL;
    }
    *kv = kv_init;
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
