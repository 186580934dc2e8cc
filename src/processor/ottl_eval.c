/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite evaluation: values, comparisons, path reads and writes over the
 * OTLP batch (resource/scope KeyValue arrays and the profile's dictionary
 * attributes), and statement execution. Every allocation comes from the
 * batch arena; dictionary strings and attributes are interned, never
 * duplicated, and shared dictionary entries are never modified in place. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "processor/ottl_internal.h"

#include "core/utf8.h"

#define ANYVALUE_INIT OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT
#define KV_INIT OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT
#define MAX_NEST 16 /* kvlist/array depth converted to values */

void pg_ottl_env_init(struct pg_ottl_env *env, struct pg_batch *b)
{
    memset(env, 0, sizeof(*env));
    env->b = b;
    env->a = b->arena;
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

static const char *dup_if_lit(struct pg_ottl_env *env, const char *s, size_t n, bool lit);

static enum pg_err intern_string(struct pg_ottl_env *env, const char *s, size_t n, bool lit,
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
static const char *dup_if_lit(struct pg_ottl_env *env, const char *s, size_t n, bool lit)
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
    struct pg_otlp_anyvalue *av = pg_arena_alloc(env->a, sizeof(*av));

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
        av->string_value = (char *)dup_if_lit(env, v->u.s.p, v->u.s.n, v->lit);
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
            kvs[i].key = (char *)dup_if_lit(env, pr->key, strlen(pr->key), v->lit);
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

static struct pg_otlp_resource *ensure_resource(struct pg_ottl_env *env)
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

static struct pg_otlp_scope *ensure_scope(struct pg_ottl_env *env)
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

static enum pg_err no_ctx(struct pg_status *st, const char *what)
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
            return no_ctx(st, "resource");
        }
        r = ensure_resource(env);
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
            return no_ctx(st, "scope");
        }
        s = ensure_scope(env);
        if (s == NULL) {
            return pg_ottl_oom(env, st);
        }
        out->kv = &s->attributes;
        out->nkv = &s->n_attributes;
        return PG_ERR_OK;
    }
    case P_PROF_ATTRS:
        if (env->p == NULL) {
            return no_ctx(st, "profile");
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
        err = intern_string(env, key, strlen(key), key_lit, &k, st);
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
        kv->key = (char *)dup_if_lit(env, key, strlen(key), key_lit);
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

enum pg_err pg_ottl_attrs_replace(const struct ottl_attrs *at, struct pg_ottl_env *env,
                                  const struct pg_ottl_map *m, bool lit, struct pg_status *st)
{
    if (at->dict) {
        *at->nidx = 0;
    } else {
        *at->nkv = 0;
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

/* ---- regex ---------------------------------------------------------- */

int pg_ottl_regex_search(const struct ottl_regex *re, const char *s, size_t n,
                         struct pg_status *st)
{
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, 0, 0, re->md, re->mctx);

    if (rc >= 0) {
        return 1;
    }
    if (rc == PCRE2_ERROR_NOMATCH) {
        return 0;
    }
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
        rc == PCRE2_ERROR_HEAPLIMIT) {
        pg_status_set(st, PG_ERR_PROCESSING, "regex /%s/ hit its match limit", re->pattern);
    } else {
        PCRE2_UCHAR msg[120];
        pcre2_get_error_message(rc, msg, sizeof(msg));
        pg_status_set(st, PG_ERR_PROCESSING, "regex /%s/: %s", re->pattern, (char *)msg);
    }
    return -1;
}

/* ---- paths ---------------------------------------------------------- */

static enum pg_err type_err(struct pg_status *st, const char *what, const char *want,
                            const struct pg_ottl_value *got)
{
    return pg_status_set(st, PG_ERR_PROCESSING, "%s: expected %s but got %s", what, want,
                         pg_ottl_type_name(got->t));
}

static enum pg_err apply_keys(struct pg_ottl_env *env, const struct ottl_key *keys, size_t n,
                              struct pg_ottl_value *v, struct pg_status *st)
{
    (void)env;
    for (size_t i = 0; i < n; i++) {
        const struct ottl_key *k = &keys[i];
        if (v->t == PG_OTTL_NIL) {
            return PG_ERR_OK;
        }
        if (!k->is_int && v->t == PG_OTTL_MAP) {
            const struct pg_ottl_map *m = v->u.m;
            size_t j;
            for (j = 0; j < m->n; j++) {
                if (strcmp(m->v[j].key, k->s) == 0) {
                    break;
                }
            }
            if (j == m->n) {
                memset(v, 0, sizeof(*v));
            } else {
                bool lit = v->lit;
                *v = m->v[j].v;
                v->lit = v->lit || lit;
            }
        } else if (k->is_int && v->t == PG_OTTL_LIST) {
            const struct pg_ottl_list *l = v->u.l;
            bool lit = v->lit;
            if ((uint64_t)k->i >= l->n) {
                return pg_status_set(st, PG_ERR_PROCESSING, "index %" PRId64
                                     " out of range for a list of %zu", k->i, l->n);
            }
            *v = l->v[k->i];
            v->lit = v->lit || lit;
        } else {
            return pg_status_set(st, PG_ERR_PROCESSING, "cannot index a %s with %s",
                                 pg_ottl_type_name(v->t), k->is_int ? "an integer" : "a string");
        }
    }
    return PG_ERR_OK;
}

static void set_int(struct pg_ottl_value *v, int64_t i)
{
    memset(v, 0, sizeof(*v));
    v->t = PG_OTTL_INT;
    v->u.i = i;
}

static void set_strz(struct pg_ottl_value *v, const char *s)
{
    if (s == NULL) {
        memset(v, 0, sizeof(*v));
    } else {
        pg_ottl_set_str(v, s, strlen(s));
    }
}

enum pg_err pg_ottl_path_get(const struct ottl_expr *path, struct pg_ottl_env *env,
                             struct pg_ottl_value *out, struct pg_status *st)
{
    const struct ottl_key *keys = path->keys;
    size_t nkeys = path->nkeys;
    enum pg_err err = PG_ERR_OK;

    memset(out, 0, sizeof(*out));
    switch (path->u.path.id) {
    case P_RES_ATTRS:
    case P_SCOPE_ATTRS:
    case P_PROF_ATTRS: {
        struct ottl_attrs at;
        err = pg_ottl_attrs_for(path, env, &at, st);
        if (err != PG_ERR_OK) {
            return err;
        }
        if (nkeys > 0) {
            long i;
            if (keys[0].is_int) {
                return pg_status_set(st, PG_ERR_PROCESSING, "cannot index a map with an integer");
            }
            i = pg_ottl_attrs_find(&at, env, keys[0].s);
            if (i >= 0) {
                err = pg_ottl_attrs_value(&at, env, (size_t)i, out, st);
            }
            keys++;
            nkeys--;
        } else {
            size_t n = pg_ottl_attrs_count(&at);
            struct pg_ottl_map *m = pg_arena_zalloc(env->a, sizeof(*m));
            if (m == NULL || (n && (m->v = pg_arena_calloc(env->a, n, sizeof(*m->v))) == NULL)) {
                return pg_ottl_oom(env, st);
            }
            for (size_t i = 0; i < n && err == PG_ERR_OK; i++) {
                m->v[i].key = pg_ottl_attrs_key(&at, env, i);
                err = pg_ottl_attrs_value(&at, env, i, &m->v[i].v, st);
            }
            m->n = n;
            out->t = PG_OTTL_MAP;
            out->u.m = m;
        }
        break;
    }
    case P_RES_DROPPED:
        set_int(out, env->rp && env->rp->resource ? env->rp->resource->dropped_attributes_count : 0);
        break;
    case P_SCOPE_NAME:
        set_strz(out, env->sp && env->sp->scope ? env->sp->scope->name : "");
        break;
    case P_SCOPE_VERSION:
        set_strz(out, env->sp && env->sp->scope ? env->sp->scope->version : "");
        break;
    case P_SCOPE_DROPPED:
        set_int(out, env->sp && env->sp->scope ? env->sp->scope->dropped_attributes_count : 0);
        break;
    case P_PROF_SAMPLE_TYPE_TYPE:
    case P_PROF_SAMPLE_TYPE_UNIT:
    case P_PROF_PERIOD_TYPE_TYPE:
    case P_PROF_PERIOD_TYPE_UNIT: {
        enum ottl_path_id id = path->u.path.id;
        const pg_otlp_valuetype *vt;
        int32_t si;
        if (env->p == NULL) {
            return no_ctx(st, "profile");
        }
        vt = (id == P_PROF_SAMPLE_TYPE_TYPE || id == P_PROF_SAMPLE_TYPE_UNIT)
                 ? env->p->sample_type
                 : env->p->period_type;
        si = vt == NULL ? 0
             : (id == P_PROF_SAMPLE_TYPE_TYPE || id == P_PROF_PERIOD_TYPE_TYPE) ? vt->type_strindex
                                                                                 : vt->unit_strindex;
        set_strz(out, pg_ottl_dict_string(env->b, si));
        if (out->t == PG_OTTL_NIL) {
            set_strz(out, "");
        }
        break;
    }
    case P_PROF_PERIOD:
    case P_PROF_DURATION:
    case P_PROF_TIME:
    case P_PROF_DROPPED:
    case P_PROF_SAMPLE_COUNT:
        if (env->p == NULL) {
            return no_ctx(st, "profile");
        }
        set_int(out, path->u.path.id == P_PROF_PERIOD     ? env->p->period
                     : path->u.path.id == P_PROF_DURATION ? (int64_t)env->p->duration_nano
                     : path->u.path.id == P_PROF_TIME     ? (int64_t)env->p->time_unix_nano
                     : path->u.path.id == P_PROF_DROPPED  ? (int64_t)env->p->dropped_attributes_count
                                                          : (int64_t)env->p->n_samples);
        break;
    case P_PROF_ORIG_FORMAT:
        if (env->p == NULL) {
            return no_ctx(st, "profile");
        }
        set_strz(out, env->p->original_payload_format ? env->p->original_payload_format : "");
        break;
    case P_PROF_ID:
        if (env->p == NULL) {
            return no_ctx(st, "profile");
        }
        out->t = PG_OTTL_BYTES;
        out->u.s.p = (const char *)env->p->profile_id.data;
        out->u.s.n = env->p->profile_id.len;
        break;
    case P_METADATA:
        set_strz(out, pg_metadata_get(&env->b->metadata, path->u.path.meta_key, 0));
        break;
    case P_OTELCOL_METADATA: {
        const char *key = path->u.path.meta_key;
        size_t n = pg_metadata_count(&env->b->metadata, key);
        struct pg_ottl_list *l;
        if (n == 0) {
            break; /* nil */
        }
        l = pg_arena_zalloc(env->a, sizeof(*l));
        if (l == NULL || (l->v = pg_arena_calloc(env->a, n, sizeof(*l->v))) == NULL) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n; i++) {
            set_strz(&l->v[i], pg_metadata_get(&env->b->metadata, key, i));
        }
        l->n = n;
        out->t = PG_OTTL_LIST;
        out->u.l = l;
        break;
    }
    case P_OTELCOL_ADDR:
        set_strz(out, env->b->metadata.peer_addr);
        break;
    }
    if (err != PG_ERR_OK) {
        return err;
    }
    return apply_keys(env, keys, nkeys, out, st);
}

static enum pg_err set_vt(struct pg_ottl_env *env, pg_otlp_valuetype **vtp, bool type,
                          const struct pg_ottl_value *v, struct pg_status *st)
{
    int32_t si;
    enum pg_err err;

    if (v->t != PG_OTTL_STR) {
        return type_err(st, "set", "string", v);
    }
    err = intern_string(env, v->u.s.p, v->u.s.n, v->lit, &si, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    if (*vtp == NULL) {
        static const pg_otlp_valuetype init =
            OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
        *vtp = pg_arena_alloc(env->a, sizeof(**vtp));
        if (*vtp == NULL) {
            return pg_ottl_oom(env, st);
        }
        **vtp = init;
    }
    if (type) {
        (*vtp)->type_strindex = si;
    } else {
        (*vtp)->unit_strindex = si;
    }
    return PG_ERR_OK;
}

static enum pg_err want_int(const struct pg_ottl_value *v, int64_t lo, int64_t hi, int64_t *out,
                            struct pg_status *st)
{
    if (v->t != PG_OTTL_INT) {
        return type_err(st, "set", "int", v);
    }
    if (v->u.i < lo || v->u.i > hi) {
        return pg_status_set(st, PG_ERR_PROCESSING, "set: %" PRId64 " out of range", v->u.i);
    }
    *out = v->u.i;
    return PG_ERR_OK;
}

static enum pg_err want_str(struct pg_ottl_env *env, const struct pg_ottl_value *v, char **out,
                            struct pg_status *st)
{
    if (v->t != PG_OTTL_STR) {
        return type_err(st, "set", "string", v);
    }
    *out = (char *)dup_if_lit(env, v->u.s.p, v->u.s.n, v->lit);
    return *out ? PG_ERR_OK : pg_ottl_oom(env, st);
}

enum pg_err pg_ottl_path_set(const struct ottl_expr *path, struct pg_ottl_env *env,
                             const struct pg_ottl_value *v, struct pg_status *st)
{
    enum pg_err err = PG_ERR_OK;
    int64_t i = 0;

    switch (path->u.path.id) {
    case P_RES_ATTRS:
    case P_SCOPE_ATTRS:
    case P_PROF_ATTRS: {
        struct ottl_attrs at;
        err = pg_ottl_attrs_for(path, env, &at, st);
        if (err != PG_ERR_OK) {
            return err;
        }
        if (path->nkeys == 0) {
            if (v->t != PG_OTTL_MAP) {
                return type_err(st, "set", "map", v);
            }
            return pg_ottl_attrs_replace(&at, env, v->u.m, v->lit, st);
        }
        if (path->keys[0].is_int) {
            return pg_status_set(st, PG_ERR_PROCESSING, "cannot index a map with an integer");
        }
        return pg_ottl_attrs_set(&at, env, path->keys[0].s, true, v, st);
    }
    case P_RES_DROPPED:
        if (env->rp == NULL || ensure_resource(env) == NULL) {
            return env->rp ? pg_ottl_oom(env, st) : no_ctx(st, "resource");
        }
        err = want_int(v, 0, UINT32_MAX, &i, st);
        if (err == PG_ERR_OK) {
            env->rp->resource->dropped_attributes_count = (uint32_t)i;
        }
        return err;
    case P_SCOPE_NAME:
    case P_SCOPE_VERSION:
    case P_SCOPE_DROPPED: {
        struct pg_otlp_scope *s;
        if (env->sp == NULL) {
            return no_ctx(st, "scope");
        }
        s = ensure_scope(env);
        if (s == NULL) {
            return pg_ottl_oom(env, st);
        }
        if (path->u.path.id == P_SCOPE_NAME) {
            return want_str(env, v, &s->name, st);
        }
        if (path->u.path.id == P_SCOPE_VERSION) {
            return want_str(env, v, &s->version, st);
        }
        err = want_int(v, 0, UINT32_MAX, &i, st);
        if (err == PG_ERR_OK) {
            s->dropped_attributes_count = (uint32_t)i;
        }
        return err;
    }
    default:
        break;
    }
    if (env->p == NULL) {
        return no_ctx(st, "profile");
    }
    switch (path->u.path.id) {
    case P_PROF_SAMPLE_TYPE_TYPE:
        return set_vt(env, &env->p->sample_type, true, v, st);
    case P_PROF_SAMPLE_TYPE_UNIT:
        return set_vt(env, &env->p->sample_type, false, v, st);
    case P_PROF_PERIOD_TYPE_TYPE:
        return set_vt(env, &env->p->period_type, true, v, st);
    case P_PROF_PERIOD_TYPE_UNIT:
        return set_vt(env, &env->p->period_type, false, v, st);
    case P_PROF_PERIOD:
        err = want_int(v, INT64_MIN, INT64_MAX, &i, st);
        if (err == PG_ERR_OK) {
            env->p->period = i;
        }
        return err;
    case P_PROF_DURATION:
    case P_PROF_TIME:
        err = want_int(v, 0, INT64_MAX, &i, st);
        if (err == PG_ERR_OK) {
            if (path->u.path.id == P_PROF_DURATION) {
                env->p->duration_nano = (uint64_t)i;
            } else {
                env->p->time_unix_nano = (uint64_t)i;
            }
        }
        return err;
    case P_PROF_DROPPED:
        err = want_int(v, 0, UINT32_MAX, &i, st);
        if (err == PG_ERR_OK) {
            env->p->dropped_attributes_count = (uint32_t)i;
        }
        return err;
    case P_PROF_ORIG_FORMAT:
        return want_str(env, v, &env->p->original_payload_format, st);
    case P_PROF_ID:
        if (v->t != PG_OTTL_BYTES) {
            return type_err(st, "set", "bytes", v);
        }
        env->p->profile_id.len = v->u.s.n;
        env->p->profile_id.data = (uint8_t *)v->u.s.p;
        if (v->lit) {
            env->p->profile_id.data = pg_arena_memdup(env->a, v->u.s.p, v->u.s.n ? v->u.s.n : 1);
        }
        return env->p->profile_id.data ? PG_ERR_OK : pg_ottl_oom(env, st);
    default:
        return pg_status_set(st, PG_ERR_PROCESSING, "path is read-only");
    }
}

/* ---- expressions ---------------------------------------------------- */

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);

    if (c != 0) {
        return c;
    }
    return an < bn ? -1 : an > bn ? 1 : 0;
}

static bool values_equal(const struct pg_ottl_value *a, const struct pg_ottl_value *b);

static bool maps_equal(const struct pg_ottl_map *a, const struct pg_ottl_map *b)
{
    if (a->n != b->n) {
        return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        size_t j;
        for (j = 0; j < b->n; j++) {
            if (strcmp(a->v[i].key, b->v[j].key) == 0) {
                break;
            }
        }
        if (j == b->n || !values_equal(&a->v[i].v, &b->v[j].v)) {
            return false;
        }
    }
    return true;
}

static bool values_equal(const struct pg_ottl_value *a, const struct pg_ottl_value *b)
{
    if ((a->t == PG_OTTL_INT || a->t == PG_OTTL_DOUBLE) &&
        (b->t == PG_OTTL_INT || b->t == PG_OTTL_DOUBLE)) {
        if (a->t == PG_OTTL_INT && b->t == PG_OTTL_INT) {
            return a->u.i == b->u.i;
        }
        return (a->t == PG_OTTL_INT ? (double)a->u.i : a->u.d) ==
               (b->t == PG_OTTL_INT ? (double)b->u.i : b->u.d);
    }
    if (a->t != b->t) {
        return false;
    }
    switch (a->t) {
    case PG_OTTL_NIL:
        return true;
    case PG_OTTL_BOOL:
        return a->u.b == b->u.b;
    case PG_OTTL_STR:
    case PG_OTTL_BYTES:
        return cmp_bytes(a->u.s.p, a->u.s.n, b->u.s.p, b->u.s.n) == 0;
    case PG_OTTL_MAP:
        return maps_equal(a->u.m, b->u.m);
    case PG_OTTL_LIST:
        if (a->u.l->n != b->u.l->n) {
            return false;
        }
        for (size_t i = 0; i < a->u.l->n; i++) {
            if (!values_equal(&a->u.l->v[i], &b->u.l->v[i])) {
                return false;
            }
        }
        return true;
    default:
        return false;
    }
}

/* OTTL comparison: equality across any types (numbers compare numerically),
 * ordering only between numbers or between strings; otherwise false. */
static bool compare(const struct pg_ottl_value *a, const struct pg_ottl_value *b, enum ottl_cmp op)
{
    int c;

    if (op == CMP_EQ) {
        return values_equal(a, b);
    }
    if (op == CMP_NE) {
        return !values_equal(a, b);
    }
    if ((a->t == PG_OTTL_INT || a->t == PG_OTTL_DOUBLE) &&
        (b->t == PG_OTTL_INT || b->t == PG_OTTL_DOUBLE)) {
        if (a->t == PG_OTTL_INT && b->t == PG_OTTL_INT) {
            c = a->u.i < b->u.i ? -1 : a->u.i > b->u.i ? 1 : 0;
        } else {
            double x = a->t == PG_OTTL_INT ? (double)a->u.i : a->u.d;
            double y = b->t == PG_OTTL_INT ? (double)b->u.i : b->u.d;
            if (x != x || y != y) {
                return false; /* NaN orders with nothing */
            }
            c = x < y ? -1 : x > y ? 1 : 0;
        }
    } else if (a->t == PG_OTTL_STR && b->t == PG_OTTL_STR) {
        c = cmp_bytes(a->u.s.p, a->u.s.n, b->u.s.p, b->u.s.n);
    } else {
        return false;
    }
    switch (op) {
    case CMP_LT:
        return c < 0;
    case CMP_LE:
        return c <= 0;
    case CMP_GT:
        return c > 0;
    default:
        return c >= 0;
    }
}

static enum pg_err eval_bool(const struct ottl_expr *e, struct pg_ottl_env *env, bool *out,
                             struct pg_status *st)
{
    struct pg_ottl_value v;
    enum pg_err err = pg_ottl_eval_expr(e, env, &v, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    if (v.t != PG_OTTL_BOOL) {
        return type_err(st, "condition", "bool", &v);
    }
    *out = v.u.b;
    return PG_ERR_OK;
}

enum pg_err pg_ottl_eval_expr(const struct ottl_expr *e, struct pg_ottl_env *env,
                              struct pg_ottl_value *out, struct pg_status *st)
{
    enum pg_err err = PG_ERR_OK;

    memset(out, 0, sizeof(*out));
    switch (e->kind) {
    case E_LIT:
        *out = e->u.lit;
        return PG_ERR_OK;
    case E_PATH:
        return pg_ottl_path_get(e, env, out, st);
    case E_CALL:
        err = e->u.call.fn->impl(e, env, out, st);
        if (err == PG_ERR_OK) {
            err = apply_keys(env, e->keys, e->nkeys, out, st);
        }
        return err;
    case E_LIST: {
        size_t n = e->u.list.n;
        struct pg_ottl_list *l = pg_arena_zalloc(env->a, sizeof(*l));
        if (l == NULL || (n && (l->v = pg_arena_calloc(env->a, n, sizeof(*l->v))) == NULL)) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n && err == PG_ERR_OK; i++) {
            err = pg_ottl_eval_expr(e->u.list.items[i], env, &l->v[i], st);
        }
        l->n = n;
        out->t = PG_OTTL_LIST;
        out->u.l = l;
        return err;
    }
    case E_MAP: {
        size_t n = e->u.map.n;
        struct pg_ottl_map *m = pg_arena_zalloc(env->a, sizeof(*m));
        if (m == NULL || (n && (m->v = pg_arena_calloc(env->a, n, sizeof(*m->v))) == NULL)) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n && err == PG_ERR_OK; i++) {
            /* Keys live in the compile arena: copy when stored (lit). */
            m->v[i].key = e->u.map.keys[i];
            err = pg_ottl_eval_expr(e->u.map.vals[i], env, &m->v[i].v, st);
        }
        m->n = n;
        out->t = PG_OTTL_MAP;
        out->u.m = m;
        out->lit = true;
        return err;
    }
    case E_CMP: {
        struct pg_ottl_value l;
        struct pg_ottl_value r;
        err = pg_ottl_eval_expr(e->u.bin.l, env, &l, st);
        if (err == PG_ERR_OK) {
            err = pg_ottl_eval_expr(e->u.bin.r, env, &r, st);
        }
        if (err == PG_ERR_OK) {
            out->t = PG_OTTL_BOOL;
            out->u.b = compare(&l, &r, e->u.bin.op);
        }
        return err;
    }
    case E_AND:
    case E_OR: {
        bool l;
        bool r = false;
        err = eval_bool(e->u.bin.l, env, &l, st);
        /* Short-circuit like Go's && and ||. */
        if (err == PG_ERR_OK && (e->kind == E_AND ? l : !l)) {
            err = eval_bool(e->u.bin.r, env, &r, st);
        } else {
            r = l;
        }
        out->t = PG_OTTL_BOOL;
        out->u.b = e->kind == E_AND ? (l && r) : (l || r);
        return err;
    }
    case E_NOT: {
        bool v = false;
        err = eval_bool(e->u.bin.l, env, &v, st);
        out->t = PG_OTTL_BOOL;
        out->u.b = !v;
        return err;
    }
    }
    return pg_status_set(st, PG_ERR_INTERNAL, "bad expression node");
}

enum pg_err pg_ottl_exec(const struct pg_ottl_stmt *s, struct pg_ottl_env *env,
                         struct pg_status *st)
{
    struct pg_ottl_value dummy;

    if (s->where != NULL) {
        bool ok = false;
        enum pg_err err = eval_bool(s->where, env, &ok, st);
        if (err != PG_ERR_OK || !ok) {
            return err;
        }
    }
    return s->call->u.call.fn->impl(s->call, env, &dummy, st);
}

enum pg_err pg_ottl_eval_cond(const struct pg_ottl_cond *c, struct pg_ottl_env *env, bool *out,
                              struct pg_status *st)
{
    return eval_bool(c->expr, env, out, st);
}
