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
#include <time.h>

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

const char *pg_pyro_query_get(struct pg_arena *a, const char *q, const char *key)
{
    size_t klen = strlen(key);

    while (q != NULL && *q != '\0') {
        const char *end = strchr(q, '&');
        size_t n = end != NULL ? (size_t)(end - q) : strlen(q);

        if (n >= klen && strncmp(q, key, klen) == 0 && (n == klen || q[klen] == '=')) {
            const char *v = n == klen ? q + n : q + klen + 1;
            size_t vlen = (size_t)(q + n - v), o = 0;
            char *out = pg_arena_alloc(a, vlen + 1);

            if (out == NULL) {
                return NULL;
            }
            for (size_t i = 0; i < vlen; i++) {
                int h, l;

                if (v[i] == '+') {
                    out[o++] = ' ';
                } else if (v[i] == '%' && i + 2 < vlen && (h = hexval(v[i + 1])) >= 0 &&
                           (l = hexval(v[i + 2])) >= 0) {
                    out[o++] = (char)(h << 4 | l);
                    i += 2;
                } else {
                    out[o++] = v[i];
                }
            }
            out[o] = '\0';
            return out;
        }
        q = end != NULL ? end + 1 : NULL;
    }
    return NULL;
}

/* Pyroscope's `from`/`until` (its attime rule): digits only; 8 digits
 * forming a date are YYYYMMDD, else by length 13 ms, 16 us, 19 ns, any other
 * length seconds. Anything else (relative forms like now-10s): @now. */
int64_t pg_pyro_parse_time(const char *s, int64_t now)
{
    size_t n = s != NULL ? strlen(s) : 0;
    uint64_t v = 0;

    if (n == 0 || n > 19 || strspn(s, "0123456789") != n) {
        return now;
    }
    for (size_t i = 0; i < n; i++) {
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (n == 8) {
        unsigned y = (unsigned)(v / 10000), m = (unsigned)(v / 100 % 100), d = (unsigned)(v % 100);

        if (y > 1900 && m >= 1 && m <= 12 && d >= 1 && d <= 31) {
            struct tm tm = {.tm_year = (int)y - 1900, .tm_mon = (int)m - 1, .tm_mday = (int)d};

            return (int64_t)timegm(&tm) * 1000000000;
        }
    }
    switch (n) {
    case 13: return (int64_t)v * 1000000;
    case 16: return (int64_t)v * 1000;
    case 19: return v > INT64_MAX ? now : (int64_t)v;
    default: return v > INT64_MAX / 1000000000 ? now : (int64_t)v * 1000000000;
    }
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

static const char *label_get(const struct pyro_meta *m, const char *name)
{
    const char *v = NULL;

    for (size_t i = 0; i < m->n_labels; i++) { /* the last one wins */
        if (strcmp(m->labels[i].name, name) == 0) {
            v = m->labels[i].value;
        }
    }
    return v;
}

static bool resource_add(struct pg_arena *a, struct pg_otlp_resource *r, const char *k,
                         const char *v)
{
    for (size_t i = 0; i < r->n_attributes; i++) {
        if (r->attributes[i]->key != NULL && strcmp(r->attributes[i]->key, k) == 0) {
            r->attributes[i] = pg_otlp_kv_str(a, k, v); /* a later label wins */
            return r->attributes[i] != NULL;
        }
    }
    return pg_otlp_kv_append(a, &r->attributes, &r->n_attributes, pg_otlp_kv_str(a, k, v));
}

/* Resource and scope: service.name, the labels, the session, the spy. */
static bool map_resource(struct pg_arena *a, struct pg_otlp_resprof *rp, const struct pyro_meta *m)
{
    const char *svc = label_get(m, "service_name");
    const char *scope_name = label_get(m, "otel.scope.name");
    const char *scope_version = label_get(m, "otel.scope.version");
    const char *session = label_get(m, "__session_id__");
    struct pg_otlp_resource *r = rp->resource;

    if (r == NULL) {
        r = pg_arena_zalloc(a, sizeof(*r));
        if (r == NULL) {
            return false;
        }
        opentelemetry__proto__resource__v1__resource__init(r);
        rp->resource = r;
    }
    if (svc == NULL || svc[0] == '\0') {
        svc = m->app;
    }
    if (svc != NULL && svc[0] != '\0' && !resource_add(a, r, "service.name", svc)) {
        return false;
    }
    for (size_t i = 0; i < m->n_labels; i++) {
        const char *k = m->labels[i].name;

        if (strncmp(k, "__", 2) == 0 || strcmp(k, "service_name") == 0 ||
            strcmp(k, "otel.scope.name") == 0 || strcmp(k, "otel.scope.version") == 0) {
            continue; /* internal, or placed above/below */
        }
        if (!resource_add(a, r, k, m->labels[i].value)) {
            return false;
        }
    }
    if (session != NULL && session[0] != '\0' && label_get(m, "service.instance.id") == NULL &&
        !resource_add(a, r, "service.instance.id", session)) {
        return false;
    }
    if (m->spy != NULL && m->spy[0] != '\0' && !resource_add(a, r, "pyroscope.spy.name", m->spy)) {
        return false;
    }
    for (size_t s = 0; s < rp->n_scope_profiles && scope_name != NULL; s++) {
        struct pg_otlp_scope *sc = pg_arena_zalloc(a, sizeof(*sc));

        if (sc == NULL) {
            return false;
        }
        opentelemetry__proto__common__v1__instrumentation_scope__init(sc);
        sc->name = pg_arena_strdup(a, scope_name);
        sc->version = pg_arena_strdup(a, scope_version != NULL ? scope_version : "");
        if (sc->name == NULL || sc->version == NULL) {
            return false;
        }
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
    } else if (m->aggregation != NULL && m->aggregation[0] != '\0') {
        agg = strcmp(m->aggregation, "avg") == 0 ? "average" : m->aggregation;
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
