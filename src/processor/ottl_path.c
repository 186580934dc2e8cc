/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite path reads and writes (resource, scope, profile and sample
 * fields, attribute maps and their keys) over the OTLP batch; values and
 * the attribute-map view are ottl_value.c's. Allocations come from the
 * batch arena. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "processor/ottl_internal.h"

#include "core/utf8.h"

/* ---- paths ---------------------------------------------------------- */

enum pg_err pg_ottl_apply_keys(struct pg_ottl_env *env, const struct ottl_key *keys, size_t n,
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
            return pg_ottl_no_ctx(st, "profile");
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
            return pg_ottl_no_ctx(st, "profile");
        }
        set_int(out, path->u.path.id == P_PROF_PERIOD     ? env->p->period
                     : path->u.path.id == P_PROF_DURATION ? (int64_t)env->p->duration_nano
                     : path->u.path.id == P_PROF_TIME     ? (int64_t)env->p->time_unix_nano
                     : path->u.path.id == P_PROF_DROPPED  ? (int64_t)env->p->dropped_attributes_count
                                                          : (int64_t)env->p->n_samples);
        break;
    case P_PROF_ORIG_FORMAT:
        if (env->p == NULL) {
            return pg_ottl_no_ctx(st, "profile");
        }
        set_strz(out, env->p->original_payload_format ? env->p->original_payload_format : "");
        break;
    case P_PROF_ID:
        if (env->p == NULL) {
            return pg_ottl_no_ctx(st, "profile");
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
    return pg_ottl_apply_keys(env, keys, nkeys, out, st);
}

static enum pg_err set_vt(struct pg_ottl_env *env, pg_otlp_valuetype **vtp, bool type,
                          const struct pg_ottl_value *v, struct pg_status *st)
{
    int32_t si;
    enum pg_err err;

    if (v->t != PG_OTTL_STR) {
        return pg_ottl_type_err(st, "set", "string", v);
    }
    err = pg_ottl_intern_string(env, v->u.s.p, v->u.s.n, v->lit, &si, st);
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
        return pg_ottl_type_err(st, "set", "int", v);
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
        return pg_ottl_type_err(st, "set", "string", v);
    }
    *out = (char *)pg_ottl_dup_if_lit(env, v->u.s.p, v->u.s.n, v->lit);
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
                return pg_ottl_type_err(st, "set", "map", v);
            }
            return pg_ottl_attrs_replace(&at, env, v->u.m, v->lit, st);
        }
        if (path->keys[0].is_int) {
            return pg_status_set(st, PG_ERR_PROCESSING, "cannot index a map with an integer");
        }
        return pg_ottl_attrs_set(&at, env, path->keys[0].s, true, v, st);
    }
    case P_RES_DROPPED:
        if (env->rp == NULL || pg_ottl_ensure_resource(env) == NULL) {
            return env->rp ? pg_ottl_oom(env, st) : pg_ottl_no_ctx(st, "resource");
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
            return pg_ottl_no_ctx(st, "scope");
        }
        s = pg_ottl_ensure_scope(env);
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
        return pg_ottl_no_ctx(st, "profile");
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
            return pg_ottl_type_err(st, "set", "bytes", v);
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
