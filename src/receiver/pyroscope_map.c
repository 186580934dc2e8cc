/* SPDX-License-Identifier: Apache-2.0
 * Pyroscope's metadata onto a translated OTLP request (worker or loop
 * thread): the query's values, the application name and labels as
 * resource and scope, the times, the spy and the sample_type_config
 * entries of each profile (docs/pyroscope.md, field by field). Strings and
 * attributes added after translation are appended to the request's
 * dictionary (deduplicated), in the batch arena. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "otlp/otlp_build.h"
#include "pyroscope/pyro_folded.h"
#include "pyroscope/pyro_multipart.h"
#include "pyroscope/pyro_name.h"
#include "pyroscope/pyro_push.h"
#include "pyroscope/pyro_stc.h"
#include "pyroscope/pyro_type.h"
#include "receiver/pyroscope_internal.h"

/* ---- the query ----------------------------------------------------------- */

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* @v[0..n) URL-decoded into @a; runs without escapes are copied whole
 * (a `name` is mostly escapes-free text). */
static const char *query_decode(struct pg_arena *a, const char *v, size_t n)
{
    char *out = pg_arena_alloc(a, n + 1);
    size_t o = 0, i = 0;

    if (out == NULL) {
        return NULL;
    }
    while (i < n) {
        const char *pct = memchr(v + i, '%', n - i), *plus = memchr(v + i, '+', n - i);
        const char *e = pct == NULL ? plus : plus == NULL || pct < plus ? pct : plus;
        size_t run = e != NULL ? (size_t)(e - (v + i)) : n - i;
        int h, l;

        memcpy(out + o, v + i, run);
        o += run;
        i += run;
        if (i >= n) {
            break;
        }
        if (v[i] == '+') {
            out[o++] = ' ';
            i++;
        } else if (i + 2 < n && (h = hexval(v[i + 1])) >= 0 && (l = hexval(v[i + 2])) >= 0) {
            out[o++] = (char)(h << 4 | l);
            i += 3;
        } else {
            out[o++] = v[i++];
        }
    }
    out[o] = '\0';
    return out;
}

#define QUERY_MAX_KEYS 16
void pg_pyro_query_parse(struct pg_arena *a, const char *q, const char *const *keys, size_t n,
                         const char **out)
{
    size_t klens[QUERY_MAX_KEYS];

    n = n < QUERY_MAX_KEYS ? n : QUERY_MAX_KEYS;
    for (size_t k = 0; k < n; k++) {
        out[k] = NULL;
        klens[k] = strlen(keys[k]);
    }
    while (q != NULL && *q != '\0') {
        size_t seg = strcspn(q, "&"), klen = strcspn(q, "=&");

        for (size_t k = 0; k < n; k++) {
            if (klens[k] == klen && q[0] == keys[k][0] && memcmp(q, keys[k], klen) == 0) {
                const char *v = q + klen + (klen < seg);

                out[k] = query_decode(a, v, (size_t)(q + seg - v)); /* a repeat: the last */
                break;
            }
        }
        q = q[seg] == '&' ? q + seg + 1 : NULL;
    }
}

const char *pg_pyro_query_get(struct pg_arena *a, const char *q, const char *key)
{
    const char *v;

    pg_pyro_query_parse(a, q, &key, 1, &v);
    return v;
}

/* ---- dictionary additions after translation ------------------------------ */

/* The index of @s in @d's string table, appended when missing; -1 on OOM. */
static int32_t dict_str(struct pg_arena *a, struct pg_otlp_dict *d, const char *s)
{
    char **t;

    for (size_t i = 0; i < d->n_string_table; i++) {
        if (strcmp(d->string_table[i], s) == 0) {
            return (int32_t)i;
        }
    }
    t = pg_arena_alloc(a, (d->n_string_table + 1) * sizeof(*t));
    if (t == NULL || (t[d->n_string_table] = pg_arena_strdup(a, s)) == NULL) {
        return -1;
    }
    memcpy(t, d->string_table, d->n_string_table * sizeof(*t));
    d->string_table = t;
    return (int32_t)d->n_string_table++;
}

/* The index of the attribute @key = @value (a string), appended when missing. */
static int32_t dict_attr(struct pg_arena *a, struct pg_otlp_dict *d, const char *key,
                         const char *value)
{
    int32_t k = dict_str(a, d, key);
    struct pg_otlp_kvu **t, *kv;

    if (k < 0) {
        return -1;
    }
    for (size_t i = 0; i < d->n_attribute_table; i++) {
        const struct pg_otlp_kvu *e = d->attribute_table[i];

        if (e->key_strindex == k && e->value != NULL &&
            e->value->value_case == PG_OTLP_ANYVALUE_STR && strcmp(e->value->string_value, value) == 0) {
            return (int32_t)i;
        }
    }
    t = pg_arena_alloc(a, (d->n_attribute_table + 1) * sizeof(*t));
    kv = pg_arena_zalloc(a, sizeof(*kv));
    if (t == NULL || kv == NULL) {
        return -1;
    }
    opentelemetry__proto__profiles__v1development__key_value_and_unit__init(kv);
    kv->key_strindex = k;
    kv->value = pg_otlp_any_str(a, value, strlen(value));
    if (kv->value == NULL) {
        return -1;
    }
    memcpy(t, d->attribute_table, d->n_attribute_table * sizeof(*t));
    t[d->n_attribute_table] = kv;
    d->attribute_table = t;
    return (int32_t)d->n_attribute_table++;
}

/* Adds attribute @idx to @p (its list is shared: replaced, never edited). */
static bool profile_add_attr(struct pg_arena *a, struct pg_otlp_profile *p, int32_t idx)
{
    int32_t *l;

    if (idx < 0) {
        return false;
    }
    for (size_t i = 0; i < p->n_attribute_indices; i++) {
        if (p->attribute_indices[i] == idx) {
            return true;
        }
    }
    l = pg_arena_alloc(a, (p->n_attribute_indices + 1) * sizeof(*l));
    if (l == NULL) {
        return false;
    }
    memcpy(l, p->attribute_indices, p->n_attribute_indices * sizeof(*l));
    l[p->n_attribute_indices] = idx;
    p->attribute_indices = l;
    p->n_attribute_indices++;
    return true;
}

/* ---- Pyroscope's metadata onto one translated request --------------------- */

static const struct pg_pyro_stc_entry *stc_find(const struct pyro_meta *m, const char *type)
{
    for (size_t i = 0; i < m->n_stc; i++) {
        if (strcmp(m->stc[i].type, type) == 0) {
            return &m->stc[i];
        }
    }
    return NULL;
}

/* A string KeyValue pointing at @k and @v (both live in the batch arena,
 * or are static): no copies, this runs for every label of every push. */
static struct pg_otlp_kv *kv_ref(struct pg_arena *a, const char *k, const char *v)
{
    struct pg_otlp_kv *kv = pg_arena_alloc(a, sizeof(*kv));
    struct pg_otlp_anyvalue *av = pg_arena_alloc(a, sizeof(*av));

    if (kv == NULL || av == NULL) {
        return NULL;
    }
    opentelemetry__proto__common__v1__key_value__init(kv);
    opentelemetry__proto__common__v1__any_value__init(av);
    av->value_case = PG_OTLP_ANYVALUE_STR;
    av->string_value = (char *)v;
    kv->key = (char *)k;
    kv->value = av;
    return kv;
}

/* Sets @k = @v in the list @attrs of *@n (room for one more is there): a
 * key already present takes the later value. */
static bool attr_set(struct pg_arena *a, struct pg_otlp_kv **attrs, size_t *n, const char *k,
                     const char *v)
{
    struct pg_otlp_kv *kv = kv_ref(a, k, v);

    if (kv == NULL) {
        return false;
    }
    for (size_t i = 0; i < *n; i++) {
        if (attrs[i]->key != NULL && attrs[i]->key[0] == k[0] && strcmp(attrs[i]->key, k) == 0) {
            attrs[i] = kv;
            return true;
        }
    }
    attrs[(*n)++] = kv;
    return true;
}

/* Resource and scope: service.name, the labels, the session, the spy. */
static bool map_resource(struct pg_arena *a, struct pg_otlp_resprof *rp, const struct pyro_meta *m)
{
    const char *svc = NULL, *scope_name = NULL, *scope_version = NULL, *session = NULL;
    bool has_instance = false;
    struct pg_otlp_resource *r = rp->resource;
    struct pg_otlp_kv **attrs;
    size_t n;

    /* One pass: the labels placed elsewhere (the last one wins). */
    for (size_t i = 0; i < m->n_labels; i++) {
        const char *k = m->labels[i].name, *v = m->labels[i].value;

        if (k[0] == '_' && strcmp(k, "__session_id__") == 0) {
            session = v;
        } else if (k[0] == 's' && strcmp(k, "service_name") == 0) {
            svc = v;
        } else if (k[0] == 's' && strcmp(k, "service.instance.id") == 0) {
            has_instance = true;
        } else if (k[0] == 'o' && strcmp(k, "otel.scope.name") == 0) {
            scope_name = v;
        } else if (k[0] == 'o' && strcmp(k, "otel.scope.version") == 0) {
            scope_version = v;
        }
    }
    if (r == NULL) {
        r = pg_arena_zalloc(a, sizeof(*r));
        if (r == NULL) {
            return false;
        }
        opentelemetry__proto__resource__v1__resource__init(r);
        rp->resource = r;
    }
    n = r->n_attributes;
    attrs = pg_arena_alloc(a, (n + m->n_labels + 3) * sizeof(*attrs));
    if (attrs == NULL) {
        return false;
    }
    if (n > 0) {
        memcpy(attrs, r->attributes, n * sizeof(*attrs)); /* may be shared: a new array */
    }
    if (svc == NULL || svc[0] == '\0') {
        svc = m->app;
    }
    if (svc != NULL && svc[0] != '\0' && !attr_set(a, attrs, &n, "service.name", svc)) {
        return false;
    }
    for (size_t i = 0; i < m->n_labels; i++) {
        const char *k = m->labels[i].name;

        if ((k[0] == '_' && k[1] == '_') || (k[0] == 's' && strcmp(k, "service_name") == 0) ||
            (k[0] == 'o' && strncmp(k, "otel.scope.", 11) == 0 &&
             (strcmp(k + 11, "name") == 0 || strcmp(k + 11, "version") == 0))) {
            continue; /* internal, or placed above/below */
        }
        if (!attr_set(a, attrs, &n, k, m->labels[i].value)) {
            return false;
        }
    }
    if (session != NULL && session[0] != '\0' && !has_instance &&
        !attr_set(a, attrs, &n, "service.instance.id", session)) {
        return false;
    }
    if (m->spy != NULL && m->spy[0] != '\0' &&
        !attr_set(a, attrs, &n, "pyroscope.spy.name", m->spy)) {
        return false;
    }
    r->attributes = attrs;
    r->n_attributes = n;
    for (size_t s = 0; s < rp->n_scope_profiles && scope_name != NULL; s++) {
        struct pg_otlp_scope *sc = pg_arena_zalloc(a, sizeof(*sc));

        if (sc == NULL) {
            return false;
        }
        opentelemetry__proto__common__v1__instrumentation_scope__init(sc);
        sc->name = (char *)scope_name;
        sc->version = (char *)(scope_version != NULL ? scope_version : "");
        rp->scope_profiles[s]->scope = sc;
    }
    return true;
}

/* One profile: times (Pyroscope's fixTime: a zero or 1970 time_nanos takes
 * `from`), duration, the sample_type_config entry of its sample type. */
static bool map_profile(struct pg_arena *a, struct pg_otlp_dict *d, struct pg_otlp_profile *p,
                        const struct pyro_meta *m)
{
    const char *type = "", *unit = "";
    const struct pg_pyro_stc_entry *e;
    const char *agg = NULL;

    if (p->time_unix_nano < 31536000ull * 1000000000ull && m->from_ns > 0) {
        p->time_unix_nano = (uint64_t)m->from_ns;
    }
    if (p->duration_nano == 0 && m->until_ns > m->from_ns) {
        p->duration_nano = (uint64_t)(m->until_ns - m->from_ns);
    }
    if (p->sample_type != NULL && (size_t)p->sample_type->type_strindex < d->n_string_table) {
        type = d->string_table[p->sample_type->type_strindex];
        if ((size_t)p->sample_type->unit_strindex < d->n_string_table) {
            unit = d->string_table[p->sample_type->unit_strindex];
        }
    }
    e = stc_find(m, type);
    if (e != NULL && e->units != NULL && e->units[0] != '\0' && unit[0] == '\0') {
        struct pg_otlp_valuetype *vt = pg_arena_zalloc(a, sizeof(*vt));
        int32_t u = dict_str(a, d, e->units);

        if (vt == NULL || u < 0) {
            return false;
        }
        *vt = *p->sample_type; /* shared with other profiles: replaced */
        vt->unit_strindex = u;
        p->sample_type = vt;
    }
    if (e != NULL && e->aggregation != PG_PYRO_AGG_UNSET) {
        agg = e->aggregation == PG_PYRO_AGG_AVERAGE ? "average" : "sum";
    } else if (m->aggregation != NULL &&
               (strcmp(m->aggregation, "average") == 0 || strcmp(m->aggregation, "avg") == 0)) {
        agg = "average"; /* the query's "sum" is Pyroscope's default: nothing to say */
    }
    if (agg != NULL && !profile_add_attr(a, p, dict_attr(a, d, "pyroscope.aggregation", agg))) {
        return false;
    }
    if (e != NULL && e->display_name != NULL && e->display_name[0] != '\0' &&
        !profile_add_attr(a, p, dict_attr(a, d, "pyroscope.display_name", e->display_name))) {
        return false;
    }
    return true;
}

/* The profile type named by the name suffix or __name__ selects the profiles
 * of that sample type when the pprof has one (a heap pprof sent as
 * "app.inuse_space"); otherwise every profile stays. */
static void select_type(struct pg_otlp_scopeprof *sp, const struct pg_otlp_dict *d,
                        const char *want)
{
    size_t keep = 0;

    if (want == NULL || sp->n_profiles < 2) {
        return;
    }
    for (size_t i = 0; i < sp->n_profiles; i++) {
        const struct pg_otlp_profile *p = sp->profiles[i];

        if (p->sample_type != NULL && (size_t)p->sample_type->type_strindex < d->n_string_table &&
            strcmp(d->string_table[p->sample_type->type_strindex], want) == 0) {
            sp->profiles[keep++] = sp->profiles[i];
        }
    }
    if (keep > 0) {
        sp->n_profiles = keep;
    }
}

enum pg_err pg_pyro_apply(struct pg_arena *a, struct pg_otlp_request *req,
                          const struct pyro_meta *m, struct pg_status *st)
{
    struct pg_otlp_dict *d = req->dictionary;

    for (size_t r = 0; r < req->n_resource_profiles; r++) {
        struct pg_otlp_resprof *rp = req->resource_profiles[r];

        if (!map_resource(a, rp, m)) {
            goto nomem;
        }
        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            struct pg_otlp_scopeprof *sp = rp->scope_profiles[s];

            select_type(sp, d, m->select_type);
            for (size_t i = 0; d != NULL && i < sp->n_profiles; i++) {
                if (!map_profile(a, d, sp->profiles[i], m)) {
                    goto nomem;
                }
            }
        }
    }
    return PG_ERR_OK;
nomem:
    return pg_status_set(st, PG_ERR_NOMEM, "no memory for the Pyroscope metadata");
}
