/* SPDX-License-Identifier: Apache-2.0
 * Several translated requests (one per Push API raw sample, each with its
 * own dictionary) as one ExportProfilesServiceRequest with one dictionary:
 * one batch, one answer, nothing half delivered. Every index is
 * re-interned through the dictionary builder's remap (otlp/dict.h);
 * sample values and timestamps are shared, not copied. Worker or loop
 * thread; everything in the caller's arenas. */
#include <string.h>

#include "otlp/dict.h"
#include "receiver/pyroscope_internal.h"

struct merge {
    struct pg_arena *a;
    struct pg_dict_builder *b;
    struct pg_dict_remap *rm;
};

static struct pg_otlp_valuetype *merge_vt(struct merge *m, const struct pg_otlp_valuetype *src)
{
    struct pg_otlp_valuetype *vt;

    if (src == NULL) {
        return NULL;
    }
    vt = pg_arena_alloc(m->a, sizeof(*vt));
    if (vt == NULL) {
        return NULL;
    }
    *vt = *src;
    vt->type_strindex = pg_dict_import_string(m->b, m->rm, src->type_strindex);
    vt->unit_strindex = pg_dict_import_string(m->b, m->rm, src->unit_strindex);
    return vt->type_strindex < 0 || vt->unit_strindex < 0 ? NULL : vt;
}

static bool merge_sample(struct merge *m, struct pg_otlp_sample **dst,
                         const struct pg_otlp_sample *src)
{
    struct pg_otlp_sample *s = pg_arena_alloc(m->a, sizeof(*s));

    if (s == NULL) {
        return false;
    }
    *s = *src; /* values and timestamps shared */
    s->stack_index = pg_dict_import_stack(m->b, m->rm, src->stack_index);
    s->link_index = pg_dict_import_link(m->b, m->rm, src->link_index);
    if (s->stack_index < 0 || s->link_index < 0 ||
        pg_dict_import_attr_list(m->b, m->rm, src->attribute_indices, src->n_attribute_indices,
                                 &s->attribute_indices) != 0) {
        return false;
    }
    *dst = s;
    return true;
}

static struct pg_otlp_profile *merge_profile(struct merge *m, const struct pg_otlp_profile *src)
{
    struct pg_otlp_profile *p = pg_arena_alloc(m->a, sizeof(*p));

    if (p == NULL) {
        return NULL;
    }
    *p = *src;
    p->sample_type = merge_vt(m, src->sample_type);
    p->period_type = merge_vt(m, src->period_type);
    p->samples = pg_arena_alloc(m->a, (src->n_samples + 1) * sizeof(*p->samples));
    if ((src->sample_type != NULL && p->sample_type == NULL) ||
        (src->period_type != NULL && p->period_type == NULL) || p->samples == NULL ||
        pg_dict_import_attr_list(m->b, m->rm, src->attribute_indices, src->n_attribute_indices,
                                 &p->attribute_indices) != 0) {
        return NULL;
    }
    for (size_t i = 0; i < src->n_samples; i++) {
        if (!merge_sample(m, &p->samples[i], src->samples[i])) {
            return NULL;
        }
    }
    return p;
}

static struct pg_otlp_resprof *merge_resprof(struct merge *m, const struct pg_otlp_resprof *src)
{
    struct pg_otlp_resprof *rp = pg_arena_alloc(m->a, sizeof(*rp));

    if (rp == NULL) {
        return NULL;
    }
    *rp = *src; /* resource and scope: plain KeyValues, shared */
    rp->scope_profiles = pg_arena_alloc(m->a, (src->n_scope_profiles + 1) * sizeof(*rp->scope_profiles));
    if (rp->scope_profiles == NULL) {
        return NULL;
    }
    for (size_t s = 0; s < src->n_scope_profiles; s++) {
        const struct pg_otlp_scopeprof *ss = src->scope_profiles[s];
        struct pg_otlp_scopeprof *sp = pg_arena_alloc(m->a, sizeof(*sp));

        if (sp == NULL) {
            return NULL;
        }
        *sp = *ss;
        sp->profiles = pg_arena_alloc(m->a, (ss->n_profiles + 1) * sizeof(*sp->profiles));
        if (sp->profiles == NULL) {
            return NULL;
        }
        for (size_t i = 0; i < ss->n_profiles; i++) {
            if ((sp->profiles[i] = merge_profile(m, ss->profiles[i])) == NULL) {
                return NULL;
            }
        }
        rp->scope_profiles[s] = sp;
    }
    return rp;
}

enum pg_err pg_pyro_merge(struct pg_arena *a, struct pg_arena *scratch,
                          struct pg_otlp_request *const *reqs, size_t n,
                          struct pg_otlp_request **out, struct pg_status *st)
{
    struct merge m = {.a = a, .b = pg_dict_builder_new(a, scratch)};
    struct pg_otlp_request *r = pg_arena_zalloc(a, sizeof(*r));
    size_t total = 0, k = 0;

    if (n == 1) {
        *out = reqs[0];
        return PG_ERR_OK;
    }
    for (size_t i = 0; i < n; i++) {
        total += reqs[i]->n_resource_profiles;
    }
    if (m.b == NULL || r == NULL) {
        goto nomem;
    }
    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(r);
    r->resource_profiles = pg_arena_alloc(a, (total + 1) * sizeof(*r->resource_profiles));
    if (r->resource_profiles == NULL) {
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        m.rm = pg_dict_remap_new(scratch, reqs[i]->dictionary);
        if (m.rm == NULL) {
            goto nomem;
        }
        for (size_t j = 0; j < reqs[i]->n_resource_profiles; j++) {
            if ((r->resource_profiles[k++] = merge_resprof(&m, reqs[i]->resource_profiles[j])) ==
                NULL) {
                goto nomem;
            }
        }
    }
    r->n_resource_profiles = k;
    r->dictionary = pg_dict_finish(m.b);
    if (r->dictionary == NULL) {
        goto nomem;
    }
    *out = r;
    return PG_ERR_OK;
nomem:
    return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                         "no room to merge %zu profiles of one push into one request", n);
}
