/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite values over the OTLP batch: scalar helpers (type names, text,
 * out-of-memory and type errors), interning into the profile's
 * dictionary, AnyValue <-> value conversion and the attribute-map view
 * (resource/scope KeyValue arrays and dictionary attributes). Every
 * allocation comes from the batch arena; dictionary strings and attributes
 * are interned, never duplicated, and shared entries are never modified in
 * place. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "processor/ottl_internal.h"

#include "core/utf8.h"
#include "otlp/otlp_utf8.h"

#define ANYVALUE_INIT OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT
#define KV_INIT OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT
#define MAX_NEST 16 /* kvlist/array depth converted to values */

/* ---- scalar values -------------------------------------------------- */

const char *pg_ottl_type_name(enum pg_ottl_type t)
{
    static const char *const names[] = {"nil", "bool", "int", "double",
                                        "string", "bytes", "map", "list"};
    return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

enum pg_err pg_ottl_oom(struct pg_ottl_env *env, struct pg_status *st)
{
    return pg_status_set(st, pg_arena_hit_cap(env->a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                         "out of request memory while transforming");
}

void pg_ottl_set_str(struct pg_ottl_value *v, const char *p, size_t n)
{
    v->t = PG_OTTL_STR;
    v->lit = false;
    v->u.s.p = p;
    v->u.s.n = n;
}

bool pg_ottl_to_text(struct pg_ottl_env *env, const struct pg_ottl_value *v, const char **p,
                     size_t *n, bool *nomem)
{
    char buf[48];
    int len;

    *nomem = false;
    switch (v->t) {
    case PG_OTTL_STR:
        *p = v->u.s.p;
        *n = v->u.s.n;
        return true;
    case PG_OTTL_BOOL:
        *p = v->u.b ? "true" : "false";
        *n = strlen(*p);
        return true;
    case PG_OTTL_INT:
        len = snprintf(buf, sizeof(buf), "%" PRId64, v->u.i);
        break;
    case PG_OTTL_DOUBLE:
        len = snprintf(buf, sizeof(buf), "%.17g", v->u.d);
        break;
    default:
        return false;
    }
    *p = pg_arena_strndup(env->a, buf, (size_t)len);
    *n = (size_t)len;
    if (*p == NULL) {
        *nomem = true;
        return false;
    }
    return true;
}

const char *pg_ottl_dict_string(const struct pg_batch *b, int32_t idx)
{
    const struct pg_otlp_dict *d = b->req ? b->req->dictionary : NULL;

    if (d == NULL || idx < 0 || (size_t)idx >= d->n_string_table) {
        return NULL;
    }
    return d->string_table[idx];
}

enum pg_err pg_ottl_type_err(struct pg_status *st, const char *what, const char *want,
                             const struct pg_ottl_value *got)
{
    return pg_status_set(st, PG_ERR_PROCESSING, "%s: expected %s but got %s", what, want,
                         pg_ottl_type_name(got->t));
}

/* ---- dictionary interning ------------------------------------------- */

static struct pg_otlp_dict *ensure_dict(struct pg_ottl_env *env)
{
    struct pg_otlp_request *req = env->b->req;

    if (req->dictionary == NULL) {
        static const struct pg_otlp_dict init =
            OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
        struct pg_otlp_dict *d = pg_arena_alloc(env->a, sizeof(*d));
        char **strs = pg_arena_calloc(env->a, 16, sizeof(char *));
        if (d == NULL || strs == NULL) {
            return NULL;
        }
        *d = init;
        strs[0] = "";
        d->string_table = strs;
        d->n_string_table = 1;
        env->string_cap = 16;
        req->dictionary = d;
    }
    return req->dictionary;
}

/* Grows an arena array of pointers to hold one more, tracking capacity in
 * *@cap (0 = the original exact-size array, which must be copied). */
static void *grow(struct pg_ottl_env *env, void *arr, size_t n, size_t *cap, size_t elem)
{
    size_t ncap;
    void *nv;

    if (*cap != 0 && n < *cap) {
        return arr;
    }
    ncap = n < 8 ? 16 : n * 2;
    nv = pg_arena_alloc(env->a, ncap * elem);
    if (nv == NULL) {
        return NULL;
    }
    if (n > 0) {
        memcpy(nv, arr, n * elem);
    }
    *cap = ncap;
    return nv;
}

enum pg_err pg_ottl_intern_string(struct pg_ottl_env *env, const char *s, size_t n, bool lit,
                                  int32_t *out, struct pg_status *st)
{
    struct pg_otlp_dict *d = ensure_dict(env);
    char **arr;

    if (d == NULL) {
        return pg_ottl_oom(env, st);
    }
    if (!pg_utf8_valid(s, n)) {
        /* A NUL-terminated arena copy: no second copy below. */
        s = pg_utf8_clean(env->a, s, &n, "transform result");
        lit = false;
        if (s == NULL) {
            return pg_ottl_oom(env, st);
        }
    }
    for (size_t i = 0; i < d->n_string_table; i++) {
        const char *t = d->string_table[i];
        if (t != NULL && strncmp(t, s, n) == 0 && t[n] == '\0') {
            *out = (int32_t)i;
            return PG_ERR_OK;
        }
    }
    if (d->n_string_table >= INT32_MAX) {
        return pg_status_set(st, PG_ERR_LIMIT, "string table full");
    }
    arr = grow(env, d->string_table, d->n_string_table, &env->string_cap, sizeof(char *));
    if (arr == NULL) {
        return pg_ottl_oom(env, st);
    }
    d->string_table = arr;
    if (lit || s[n] != '\0') {
        s = pg_arena_strndup(env->a, s, n);
        if (s == NULL) {
            return pg_ottl_oom(env, st);
        }
    }
    arr[d->n_string_table] = (char *)s;
    *out = (int32_t)d->n_string_table++;
    return PG_ERR_OK;
}

static bool any_equal(const struct pg_otlp_anyvalue *x, const struct pg_otlp_anyvalue *y)
{
    if (x == NULL || y == NULL) {
        return x == y;
    }
    if (x->value_case != y->value_case) {
        return false;
    }
    switch (x->value_case) {
    case PG_OTLP_ANYVALUE_STR:
        return strcmp(x->string_value, y->string_value) == 0;
    case PG_OTLP_ANYVALUE_BOOL:
        return !x->bool_value == !y->bool_value;
    case PG_OTLP_ANYVALUE_INT:
        return x->int_value == y->int_value;
    case PG_OTLP_ANYVALUE_DOUBLE:
        return x->double_value == y->double_value;
    case PG_OTLP_ANYVALUE_STRINDEX:
        return x->string_value_strindex == y->string_value_strindex;
    case PG_OTLP_ANYVALUE_NONE:
        return true;
    default:
        return false; /* containers: just add a new entry */
    }
}

static enum pg_err intern_attr(struct pg_ottl_env *env, int32_t key, struct pg_otlp_anyvalue *v,
                               int32_t *out, struct pg_status *st)
{
    static const struct pg_otlp_kvu init =
        OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__KEY_VALUE_AND_UNIT__INIT;
    struct pg_otlp_dict *d = ensure_dict(env);
    struct pg_otlp_kvu **arr;
    struct pg_otlp_kvu *kvu;

    if (d == NULL) {
        return pg_ottl_oom(env, st);
    }
    for (size_t i = 1; i < d->n_attribute_table; i++) {
        const struct pg_otlp_kvu *e = d->attribute_table[i];
        if (e != NULL && e->key_strindex == key && e->unit_strindex == 0 && any_equal(e->value, v)) {
            *out = (int32_t)i;
            return PG_ERR_OK;
        }
    }
    if (d->n_attribute_table == 0) {
        /* Index 0 is the zero sentinel of every dictionary table. */
        arr = grow(env, d->attribute_table, 0, &env->attr_cap, sizeof(*arr));
        kvu = pg_arena_alloc(env->a, sizeof(*kvu));
        if (arr == NULL || kvu == NULL) {
            return pg_ottl_oom(env, st);
        }
        *kvu = init;
        arr[0] = kvu;
        d->attribute_table = arr;
        d->n_attribute_table = 1;
    }
    arr = grow(env, d->attribute_table, d->n_attribute_table, &env->attr_cap, sizeof(*arr));
    kvu = pg_arena_alloc(env->a, sizeof(*kvu));
    if (arr == NULL || kvu == NULL) {
        return pg_ottl_oom(env, st);
    }
    *kvu = init;
    kvu->key_strindex = key;
    kvu->value = v;
    d->attribute_table = arr;
    arr[d->n_attribute_table] = kvu;
    *out = (int32_t)d->n_attribute_table++;
    return PG_ERR_OK;
}

/* ---- AnyValue <-> value --------------------------------------------- */

/* Both conversion directions enforce MAX_NEST and must say so alike. */
static enum pg_err too_deep(struct pg_status *st)
{
    return pg_status_set(st, PG_ERR_PROCESSING, "value nested deeper than %d", MAX_NEST);
}

static enum pg_err any_to_value(struct pg_ottl_env *env, const struct pg_otlp_anyvalue *av,
                                int depth, struct pg_ottl_value *out, struct pg_status *st)
{
    memset(out, 0, sizeof(*out));
    if (av == NULL) {
        return PG_ERR_OK;
    }
    /* Only arrays and kvlists nest, so only they count against the bound: a
     * scalar one level below the deepest allowed container is fine. */
    if ((av->value_case == PG_OTLP_ANYVALUE_ARRAY || av->value_case == PG_OTLP_ANYVALUE_KVLIST) &&
        depth >= MAX_NEST) {
        return too_deep(st);
    }
    switch (av->value_case) {
    case PG_OTLP_ANYVALUE_STR:
        pg_ottl_set_str(out, av->string_value, strlen(av->string_value));
        break;
    case PG_OTLP_ANYVALUE_STRINDEX: {
        const char *s = pg_ottl_dict_string(env->b, av->string_value_strindex);
        if (s == NULL) {
            s = "";
        }
        pg_ottl_set_str(out, s, strlen(s));
        break;
    }
    case PG_OTLP_ANYVALUE_BOOL:
        out->t = PG_OTTL_BOOL;
        out->u.b = av->bool_value != 0;
        break;
    case PG_OTLP_ANYVALUE_INT:
        out->t = PG_OTTL_INT;
        out->u.i = av->int_value;
        break;
    case PG_OTLP_ANYVALUE_DOUBLE:
        out->t = PG_OTTL_DOUBLE;
        out->u.d = av->double_value;
        break;
    case PG_OTLP_ANYVALUE_BYTES:
        out->t = PG_OTTL_BYTES;
        out->u.s.p = (const char *)av->bytes_value.data;
        out->u.s.n = av->bytes_value.len;
        break;
    case PG_OTLP_ANYVALUE_ARRAY: {
        const pg_otlp_array *arr = av->array_value;
        struct pg_ottl_list *l = pg_arena_zalloc(env->a, sizeof(*l));
        size_t n = arr ? arr->n_values : 0;
        if (l == NULL || (n && (l->v = pg_arena_calloc(env->a, n, sizeof(*l->v))) == NULL)) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n; i++) {
            enum pg_err err = any_to_value(env, arr->values[i], depth + 1, &l->v[i], st);
            if (err != PG_ERR_OK) {
                return err;
            }
        }
        l->n = n;
        out->t = PG_OTTL_LIST;
        out->u.l = l;
        break;
    }
    case PG_OTLP_ANYVALUE_KVLIST: {
        const pg_otlp_kvlist *kl = av->kvlist_value;
        struct pg_ottl_map *m = pg_arena_zalloc(env->a, sizeof(*m));
        size_t n = kl ? kl->n_values : 0;
        if (m == NULL || (n && (m->v = pg_arena_calloc(env->a, n, sizeof(*m->v))) == NULL)) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n; i++) {
            enum pg_err err;
            m->v[i].key = kl->values[i]->key ? kl->values[i]->key : "";
            err = any_to_value(env, kl->values[i]->value, depth + 1, &m->v[i].v, st);
            if (err != PG_ERR_OK) {
                return err;
            }
        }
        m->n = n;
        out->t = PG_OTTL_MAP;
        out->u.m = m;
        break;
    }
    default:
        break;
    }
    return PG_ERR_OK;
}

/* Every string an expression writes into the model passes here: valid
 * UTF-8 (core/utf8 repair) and, for literals, a copy in the request arena. */
const char *pg_ottl_dup_if_lit(struct pg_ottl_env *env, const char *s, size_t n, bool lit)
{
    if (!pg_utf8_valid(s, n)) {
        return pg_utf8_clean(env->a, s, &n, "transform result");
    }
    return lit ? pg_arena_strndup(env->a, s, n) : s;
}

static enum pg_err value_to_any(struct pg_ottl_env *env, const struct pg_ottl_value *v,
                                int depth, struct pg_otlp_anyvalue **out, struct pg_status *st)
{
    static const struct pg_otlp_anyvalue init = ANYVALUE_INIT;
    struct pg_otlp_anyvalue *av;

    /* Defined on every path, failures included: callers test the error, but
     * once this is inlined GCC (-O2 and up) cannot tell and warns that a
     * failed call's value reaches intern_attr()'s comparison. */
    *out = NULL;
    av = pg_arena_alloc(env->a, sizeof(*av));
    if (av == NULL) {
        return pg_ottl_oom(env, st);
    }
    *av = init;
    /* The same rule as any_to_value(): only lists and maps count. */
    if ((v->t == PG_OTTL_LIST || v->t == PG_OTTL_MAP) && depth >= MAX_NEST) {
        return too_deep(st);
    }
    switch (v->t) {
    case PG_OTTL_NIL:
        break;
    case PG_OTTL_BOOL:
        av->value_case = PG_OTLP_ANYVALUE_BOOL;
        av->bool_value = v->u.b;
        break;
    case PG_OTTL_INT:
        av->value_case = PG_OTLP_ANYVALUE_INT;
        av->int_value = v->u.i;
        break;
    case PG_OTTL_DOUBLE:
        av->value_case = PG_OTLP_ANYVALUE_DOUBLE;
        av->double_value = v->u.d;
        break;
    case PG_OTTL_STR:
        av->value_case = PG_OTLP_ANYVALUE_STR;
        av->string_value = (char *)pg_ottl_dup_if_lit(env, v->u.s.p, v->u.s.n, v->lit);
        if (av->string_value == NULL) {
            return pg_ottl_oom(env, st);
        }
        break;
    case PG_OTTL_BYTES:
        av->value_case = PG_OTLP_ANYVALUE_BYTES;
        av->bytes_value.len = v->u.s.n;
        av->bytes_value.data =
            (uint8_t *)(v->lit ? pg_arena_memdup(env->a, v->u.s.p, v->u.s.n ? v->u.s.n : 1)
                               : v->u.s.p);
        if (av->bytes_value.data == NULL) {
            return pg_ottl_oom(env, st);
        }
        break;
    case PG_OTTL_LIST: {
        static const pg_otlp_array ainit = OPENTELEMETRY__PROTO__COMMON__V1__ARRAY_VALUE__INIT;
        pg_otlp_array *arr = pg_arena_alloc(env->a, sizeof(*arr));
        size_t n = v->u.l->n;
        if (arr == NULL) {
            return pg_ottl_oom(env, st);
        }
        *arr = ainit;
        arr->values = pg_arena_calloc(env->a, n ? n : 1, sizeof(*arr->values));
        if (arr->values == NULL) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n; i++) {
            enum pg_err err = value_to_any(env, &v->u.l->v[i], depth + 1, &arr->values[i], st);
            if (err != PG_ERR_OK) {
                return err;
            }
        }
        arr->n_values = n;
        av->value_case = PG_OTLP_ANYVALUE_ARRAY;
        av->array_value = arr;
        break;
    }
    case PG_OTTL_MAP: {
        static const pg_otlp_kvlist linit = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE_LIST__INIT;
        static const struct pg_otlp_kv kinit = KV_INIT;
        pg_otlp_kvlist *kl = pg_arena_alloc(env->a, sizeof(*kl));
        size_t n = v->u.m->n;
        struct pg_otlp_kv *kvs = pg_arena_alloc(env->a, (n ? n : 1) * sizeof(*kvs));
        if (kl == NULL || kvs == NULL) {
            return pg_ottl_oom(env, st);
        }
        *kl = linit;
        kl->values = pg_arena_calloc(env->a, n ? n : 1, sizeof(*kl->values));
        if (kl->values == NULL) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n; i++) {
            const struct pg_ottl_pair *pr = &v->u.m->v[i];
            enum pg_err err;
            kvs[i] = kinit;
            kvs[i].key = (char *)pg_ottl_dup_if_lit(env, pr->key, strlen(pr->key), v->lit);
            err = value_to_any(env, &pr->v, depth + 1, &kvs[i].value, st);
            if (err != PG_ERR_OK) {
                return err;
            }
            if (kvs[i].key == NULL) {
                return pg_ottl_oom(env, st);
            }
            kl->values[i] = &kvs[i];
        }
        kl->n_values = n;
        av->value_case = PG_OTLP_ANYVALUE_KVLIST;
        av->kvlist_value = kl;
        break;
    }
    }
    *out = av;
    return PG_ERR_OK;
}

/* ---- attribute-map view --------------------------------------------- */

struct pg_otlp_resource *pg_ottl_ensure_resource(struct pg_ottl_env *env)
{
    if (env->rp->resource == NULL) {
        static const struct pg_otlp_resource init = OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
        struct pg_otlp_resource *r = pg_arena_alloc(env->a, sizeof(*r));
        if (r == NULL) {
            return NULL;
        }
        *r = init;
        env->rp->resource = r;
    }
    return env->rp->resource;
}

struct pg_otlp_scope *pg_ottl_ensure_scope(struct pg_ottl_env *env)
{
    if (env->sp->scope == NULL) {
        static const struct pg_otlp_scope init =
            OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
        struct pg_otlp_scope *s = pg_arena_alloc(env->a, sizeof(*s));
        if (s == NULL) {
            return NULL;
        }
        *s = init;
        env->sp->scope = s;
    }
    return env->sp->scope;
}

enum pg_err pg_ottl_no_ctx(struct pg_status *st, const char *what)
{
    return pg_status_set(st, PG_ERR_PROCESSING, "no %s in this context", what);
}

enum pg_err pg_ottl_attrs_for(const struct ottl_expr *path, struct pg_ottl_env *env,
                              struct ottl_attrs *out, struct pg_status *st)
{
    memset(out, 0, sizeof(*out));
    switch (path->u.path.id) {
    case P_RES_ATTRS: {
        struct pg_otlp_resource *r;
        if (env->rp == NULL) {
            return pg_ottl_no_ctx(st, "resource");
        }
        r = pg_ottl_ensure_resource(env);
        if (r == NULL) {
            return pg_ottl_oom(env, st);
        }
        out->kv = &r->attributes;
        out->nkv = &r->n_attributes;
        return PG_ERR_OK;
    }
    case P_SCOPE_ATTRS: {
        struct pg_otlp_scope *s;
        if (env->sp == NULL) {
            return pg_ottl_no_ctx(st, "scope");
        }
        s = pg_ottl_ensure_scope(env);
        if (s == NULL) {
            return pg_ottl_oom(env, st);
        }
        out->kv = &s->attributes;
        out->nkv = &s->n_attributes;
        return PG_ERR_OK;
    }
    case P_PROF_ATTRS:
        if (env->p == NULL) {
            return pg_ottl_no_ctx(st, "profile");
        }
        out->dict = true;
        out->idx = &env->p->attribute_indices;
        out->nidx = &env->p->n_attribute_indices;
        return PG_ERR_OK;
    default:
        return pg_status_set(st, PG_ERR_INTERNAL, "not an attribute map path");
    }
}

size_t pg_ottl_attrs_count(const struct ottl_attrs *at)
{
    return at->dict ? *at->nidx : *at->nkv;
}

static const struct pg_otlp_kvu *dict_attr(struct pg_ottl_env *env, int32_t i)
{
    const struct pg_otlp_dict *d = env->b->req->dictionary;

    if (d == NULL || i < 0 || (size_t)i >= d->n_attribute_table) {
        return NULL;
    }
    return d->attribute_table[i];
}

const char *pg_ottl_attrs_key(const struct ottl_attrs *at, struct pg_ottl_env *env, size_t i)
{
    const char *k;

    if (at->dict) {
        const struct pg_otlp_kvu *e = dict_attr(env, (*at->idx)[i]);
        k = e ? pg_ottl_dict_string(env->b, e->key_strindex) : NULL;
    } else {
        const struct pg_otlp_kv *kv = (*at->kv)[i];
        k = kv->key;
        if ((k == NULL || k[0] == '\0') && kv->key_strindex > 0) {
            k = pg_ottl_dict_string(env->b, kv->key_strindex);
        }
    }
    return k ? k : "";
}

enum pg_err pg_ottl_attrs_value(const struct ottl_attrs *at, struct pg_ottl_env *env, size_t i,
                                struct pg_ottl_value *out, struct pg_status *st)
{
    if (at->dict) {
        const struct pg_otlp_kvu *e = dict_attr(env, (*at->idx)[i]);
        return any_to_value(env, e ? e->value : NULL, 0, out, st);
    }
    return any_to_value(env, (*at->kv)[i]->value, 0, out, st);
}

long pg_ottl_attrs_find(const struct ottl_attrs *at, struct pg_ottl_env *env, const char *key)
{
    size_t n = pg_ottl_attrs_count(at);

    for (size_t i = 0; i < n; i++) {
        const char *k = pg_ottl_attrs_key(at, env, i);
        if (k[0] == key[0] && strcmp(k, key) == 0) {
            return (long)i;
        }
    }
    return -1;
}

enum pg_err pg_ottl_attrs_set(const struct ottl_attrs *at, struct pg_ottl_env *env,
                              const char *key, bool key_lit, const struct pg_ottl_value *v,
                              struct pg_status *st)
{
    long i = pg_ottl_attrs_find(at, env, key);
    struct pg_otlp_anyvalue *av;
    enum pg_err err = value_to_any(env, v, 0, &av, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    if (at->dict) {
        int32_t k = 0;
        int32_t ai = 0;
        err = pg_ottl_intern_string(env, key, strlen(key), key_lit, &k, st);
        if (err == PG_ERR_OK) {
            err = intern_attr(env, k, av, &ai, st);
        }
        if (err != PG_ERR_OK) {
            return err;
        }
        if (i >= 0) {
            (*at->idx)[i] = ai;
        } else {
            size_t n = *at->nidx;
            int32_t *ni = pg_arena_alloc(env->a, (n + 1) * sizeof(*ni));
            if (ni == NULL) {
                return pg_ottl_oom(env, st);
            }
            if (n > 0) {
                memcpy(ni, *at->idx, n * sizeof(*ni));
            }
            ni[n] = ai;
            *at->idx = ni;
            *at->nidx = n + 1;
        }
        return PG_ERR_OK;
    }
    if (i >= 0) {
        /* A fresh KeyValue, so a KeyValue shared with anything else stays intact. */
        struct pg_otlp_kv *kv = pg_arena_alloc(env->a, sizeof(*kv));
        if (kv == NULL) {
            return pg_ottl_oom(env, st);
        }
        *kv = *(*at->kv)[i];
        kv->value = av;
        (*at->kv)[i] = kv;
    } else {
        static const struct pg_otlp_kv kinit = KV_INIT;
        size_t n = *at->nkv;
        struct pg_otlp_kv *kv = pg_arena_alloc(env->a, sizeof(*kv));
        struct pg_otlp_kv **arr =
            pg_arena_realloc(env->a, n ? *at->kv : NULL, n * sizeof(*arr), (n + 1) * sizeof(*arr));
        if (kv == NULL || arr == NULL) {
            return pg_ottl_oom(env, st);
        }
        *kv = kinit;
        kv->key = (char *)pg_ottl_dup_if_lit(env, key, strlen(key), key_lit);
        if (kv->key == NULL) {
            return pg_ottl_oom(env, st);
        }
        kv->value = av;
        arr[n] = kv;
        *at->kv = arr;
        *at->nkv = n + 1;
    }
    return PG_ERR_OK;
}

void pg_ottl_attrs_filter(const struct ottl_attrs *at, const bool *keep)
{
    size_t n = pg_ottl_attrs_count(at);
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        if (!keep[i]) {
            continue;
        }
        if (at->dict) {
            (*at->idx)[o++] = (*at->idx)[i];
        } else {
            (*at->kv)[o++] = (*at->kv)[i];
        }
    }
    if (at->dict) {
        *at->nidx = o;
    } else {
        *at->nkv = o;
    }
}

/* pg_ottl_attrs_replace() on a KeyValue list whose array (*at->kv) has room
 * for every entry of @m: as pg_ottl_attrs_set() per entry, a later duplicate
 * key replacing the earlier one's value. */
static enum pg_err replace_kvs(const struct ottl_attrs *at, struct pg_ottl_env *env,
                               const struct pg_ottl_map *m, bool lit, struct pg_status *st)
{
    static const struct pg_otlp_kv kinit = KV_INIT;
    struct pg_otlp_kv **arr = *at->kv;

    for (size_t i = 0; i < m->n; i++) {
        const char *key = m->v[i].key;
        struct pg_ottl_value v = m->v[i].v;
        struct pg_otlp_anyvalue *av;
        struct pg_otlp_kv *kv = pg_arena_alloc(env->a, sizeof(*kv));
        size_t n = *at->nkv, j = 0;
        enum pg_err err;

        v.lit = v.lit || lit;
        while (j < n && !(arr[j]->key[0] == key[0] && strcmp(arr[j]->key, key) == 0)) {
            j++;
        }
        err = value_to_any(env, &v, 0, &av, st);
        if (err != PG_ERR_OK) {
            return err;
        }
        if (kv == NULL) {
            return pg_ottl_oom(env, st);
        }
        if (j < n) {
            *kv = *arr[j];
        } else {
            *kv = kinit;
            kv->key = (char *)pg_ottl_dup_if_lit(env, key, strlen(key), lit);
            if (kv->key == NULL) {
                return pg_ottl_oom(env, st);
            }
        }
        kv->value = av;
        arr[j] = kv;
        if (j == n) {
            *at->nkv = n + 1;
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_ottl_attrs_replace(const struct ottl_attrs *at, struct pg_ottl_env *env,
                                  const struct pg_ottl_map *m, bool lit, struct pg_status *st)
{
    if (at->dict) {
        *at->nidx = 0;
    } else {
        *at->nkv = 0;
        if (m->n > 0) {
            /* The whole array at once, not one reallocation per key. */
            struct pg_otlp_kv **arr = pg_arena_alloc(env->a, m->n * sizeof(*arr));

            if (arr == NULL) {
                return pg_ottl_oom(env, st);
            }
            *at->kv = arr;
            return replace_kvs(at, env, m, lit, st);
        }
    }
    for (size_t i = 0; i < m->n; i++) {
        struct pg_ottl_value v = m->v[i].v;
        enum pg_err err;
        v.lit = v.lit || lit;
        err = pg_ottl_attrs_set(at, env, m->v[i].key, lit, &v, st);
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    return PG_ERR_OK;
}
