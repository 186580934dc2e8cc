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

#include "core/hex.h"
#include "otlp/otlp_build.h"
#include "pyroscope/pyro_folded.h"
#include "pyroscope/pyro_multipart.h"
#include "pyroscope/pyro_name.h"
#include "pyroscope/pyro_push.h"
#include "pyroscope/pyro_stc.h"
#include "pyroscope/pyro_type.h"
#include "receiver/pyroscope_internal.h"

/* ---- the query ----------------------------------------------------------- */

/* The escape at @p ('%'): its byte into *@o; the bytes read (3, or 1 when
 * it is not %XX: the '%' stays, as Go's QueryUnescape would refuse it). */
static inline size_t unescape(const char *p, const char *end, char *o)
{
    unsigned h, l; /* digit + 1, 0 for a byte that is not one */

    if (end - p > 2 && (h = pg_hex_val1[(uint8_t)p[1]]) != 0 &&
        (l = pg_hex_val1[(uint8_t)p[2]]) != 0) {
        *o = (char)((h - 1) << 4 | (l - 1));
        return 3;
    }
    *o = '%';
    return 1;
}

#if defined(__SSE2__)
/* Bit i set when @p[i] is '%' or '+' (the bytes a query value escapes with). */
static inline unsigned special_mask(__m128i w)
{
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(w, _mm_set1_epi8('%')),
                                                    _mm_cmpeq_epi8(w, _mm_set1_epi8('+'))));
}
#endif

/* The offset of the first '%' or '+' in @v[0..n), @n when none: 16 bytes a step (an SDK's
 * name is ~250 bytes; from, until and the rest hold none). */
static size_t first_special(const char *v, size_t n)
{
    size_t i = 0;

#if defined(__SSE2__)
    for (; n - i >= 16; i += 16) {
        unsigned m = special_mask(_mm_loadu_si128((const __m128i *)(const void *)(v + i)));

        if (m != 0) {
            return i + (size_t)__builtin_ctz(m);
        }
    }
#endif
    while (i < n && v[i] != '%' && v[i] != '+') {
        i++;
    }
    return i;
}

/* [v, end) URL-decoded into @o, which has room for end - v bytes (decoding only shrinks);
 * returns the end of the output. With SSE2 16 bytes are copied per step and each escape
 * costs one step (the name's runs between escapes are ~14 bytes): the 16-byte stores stay
 * within the room because the output is never ahead of the input. */
static char *decode_into(char *o, const char *v, const char *end)
{
#if defined(__SSE2__)
    while (end - v >= 16) {
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)v);
        unsigned m = special_mask(w);

        _mm_storeu_si128((__m128i *)(void *)o, w);
        if (m == 0) {
            v += 16;
            o += 16;
            continue;
        }
        unsigned k = (unsigned)__builtin_ctz(m);
        v += k;
        o += k;
        if (*v == '+') { /* '+' is a space */
            *o++ = ' ';
            v++;
        } else {
            v += unescape(v, end, o++);
        }
    }
#endif
    while (v < end) {
        if (*v == '+') {
            *o++ = ' ';
            v++;
        } else if (*v == '%') {
            v += unescape(v, end, o++);
        } else {
            *o++ = *v++;
        }
    }
    return o;
}

/* @v[0..n) (inside the caller's query copy) URL-decoded: in place, cut by a NUL where its
 * '&' was, when it holds nothing to decode (every value of an SDK push but the name); else
 * into @a. NULL on OOM. */
static char *query_value(struct pg_arena *a, char *v, size_t n)
{
    size_t k = first_special(v, n);
    char *out;

    if (k == n) {
        v[n] = '\0';
        return v;
    }
    out = pg_arena_alloc(a, n + 1);
    if (out == NULL) {
        return NULL;
    }
    memcpy(out, v, k);
    *decode_into(out + k, v + k, v + n) = '\0';
    return out;
}

#define QUERY_MAX_KEYS 16
void pg_pyro_query_parse(struct pg_arena *a, char *q, const char *const *keys, size_t n,
                         char **out)
{
    char *end = q != NULL ? q + strlen(q) : NULL;
    size_t klen[QUERY_MAX_KEYS];

    n = n < QUERY_MAX_KEYS ? n : QUERY_MAX_KEYS;
    for (size_t k = 0; k < n; k++) {
        out[k] = NULL;
        klen[k] = strlen(keys[k]);
    }
    while (q != NULL && q < end) {
        char *amp = memchr(q, '&', (size_t)(end - q));
        char *seg_end = amp != NULL ? amp : end;
        size_t seg = (size_t)(seg_end - q);

        /* "key=value" or "key": the segment's bytes are read once, by the match (no scan
         * for its '=' first) */
        for (size_t k = 0; k < n; k++) {
            size_t l = klen[k];

            if (q[0] == keys[k][0] && seg >= l && (seg == l || q[l] == '=') &&
                memcmp(q, keys[k], l) == 0) {
                char *v = seg > l ? q + l + 1 : seg_end;

                out[k] = query_value(a, v, (size_t)(seg_end - v)); /* a repeat: the last */
                break;
            }
        }
        q = amp != NULL ? amp + 1 : NULL;
    }
}

const char *pg_pyro_query_get(struct pg_arena *a, const char *q, const char *key)
{
    char *copy = pg_arena_strdup(a, q != NULL ? q : "");
    char *v = NULL;

    if (copy != NULL) {
        pg_pyro_query_parse(a, copy, &key, 1, &v);
    }
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

/* A string KeyValue and its AnyValue: map_resource takes room for all of its
 * attributes in one allocation (this runs for every label of every push). */
struct kv_av {
    struct pg_otlp_kv kv;
    struct pg_otlp_anyvalue av;
};

/* The next slot of @pool as @k = @v (both live in the batch arena, or are
 * static: no copies). */
static struct pg_otlp_kv *kv_ref(struct kv_av **pool, const char *k, const char *v)
{
    struct kv_av *p = (*pool)++;

    p->kv = (struct pg_otlp_kv)OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
    p->av = (struct pg_otlp_anyvalue)OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
    p->av.value_case = PG_OTLP_ANYVALUE_STR;
    p->av.string_value = (char *)v;
    p->kv.key = (char *)k;
    p->kv.value = &p->av;
    return &p->kv;
}

/* Sets @k = @v in the list @attrs of *@n (room for one more is there, and
 * in @pool): a key already among the first @seen takes the later value (the
 * caller knows the keys after those differ from @k). */
static void attr_set_in(struct kv_av **pool, struct pg_otlp_kv **attrs, size_t *n, size_t seen,
                        const char *k, const char *v)
{
    struct pg_otlp_kv *kv = kv_ref(pool, k, v);

    for (size_t i = 0; i < seen; i++) {
        if (attrs[i]->key != NULL && attrs[i]->key[0] == k[0] && strcmp(attrs[i]->key, k) == 0) {
            attrs[i] = kv;
            return;
        }
    }
    attrs[(*n)++] = kv;
}

static void attr_set(struct kv_av **pool, struct pg_otlp_kv **attrs, size_t *n, const char *k,
                     const char *v)
{
    attr_set_in(pool, attrs, n, *n, k, v);
}

/* Resource and scope: service.name, the labels, the session, the spy. */
static bool map_resource(struct pg_arena *a, struct pg_otlp_resprof *rp, const struct pyro_meta *m)
{
    const char *svc = NULL, *scope_name = NULL, *scope_version = NULL, *session = NULL;
    bool has_instance = false;
    struct pg_otlp_resource *r = rp->resource;
    struct pg_otlp_kv **attrs;
    struct kv_av *pool;
    size_t n;

    /* One pass: the labels placed elsewhere (the last one wins), and a bit for
     * each label that is no resource attribute (internal, or placed). */
    uint64_t skip[(PG_PYRO_MAX_LABELS + 63) / 64] = {0};
    size_t n_labels = m->n_labels < PG_PYRO_MAX_LABELS ? m->n_labels : PG_PYRO_MAX_LABELS;
    for (size_t i = 0; i < n_labels; i++) {
        const char *k = m->labels[i].name, *v = m->labels[i].value;
        bool placed = true;

        if (k[0] == '_' && k[1] == '_') {
            if (strcmp(k, "__session_id__") == 0) {
                session = v;
            }
        } else if (k[0] == 's' && strcmp(k, "service_name") == 0) {
            svc = v;
        } else if (k[0] == 'o' && strcmp(k, "otel.scope.name") == 0) {
            scope_name = v;
        } else if (k[0] == 'o' && strcmp(k, "otel.scope.version") == 0) {
            scope_version = v;
        } else {
            placed = false;
            has_instance |= k[0] == 's' && strcmp(k, "service.instance.id") == 0;
        }
        skip[i / 64] |= (uint64_t)placed << (i % 64);
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
    pool = pg_arena_alloc(a, (m->n_labels + 3) * sizeof(*pool)); /* one slot per attr_set */
    if (attrs == NULL || pool == NULL) {
        return false;
    }
    if (n > 0) {
        memcpy(attrs, r->attributes, n * sizeof(*attrs)); /* may be shared: a new array */
    }
    if (svc == NULL || svc[0] == '\0') {
        svc = m->app;
    }
    if (svc != NULL && svc[0] != '\0') {
        attr_set(&pool, attrs, &n, "service.name", svc);
    }
    size_t fixed = n; /* distinct labels (a parsed name) need only be matched against these */
    for (size_t i = 0; i < n_labels; i++) {
        if ((skip[i / 64] >> (i % 64) & 1) == 0) {
            attr_set_in(&pool, attrs, &n, m->labels_distinct ? fixed : n, m->labels[i].name,
                        m->labels[i].value);
        }
    }
    if (session != NULL && session[0] != '\0' && !has_instance) {
        attr_set(&pool, attrs, &n, "service.instance.id", session);
    }
    if (m->spy != NULL && m->spy[0] != '\0') {
        attr_set(&pool, attrs, &n, "pyroscope.spy.name", m->spy);
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
