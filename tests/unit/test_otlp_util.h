/* SPDX-License-Identifier: Apache-2.0
 * Test helpers for the OTLP exporter tests: synthetic batches built with the
 * dictionary builder (deterministic from a seed), a checker for the
 * dictionary invariants (zero entries, ranges, no orphans), and a
 * canonical per-sample fingerprint (stack frames by name, attributes by
 * value, values) so requests can be compared across re-interning. */
#ifndef PG_TEST_OTLP_UTIL_H
#define PG_TEST_OTLP_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/batch.h"
#include "otlp/dict.h"

static inline struct pg_otlp_valuetype *tb_vt(struct pg_arena *a, int32_t t, int32_t u)
{
    struct pg_otlp_valuetype *vt = pg_arena_zalloc(a, sizeof(*vt));

    opentelemetry__proto__profiles__v1development__value_type__init(vt);
    vt->type_strindex = t;
    vt->unit_strindex = u;
    return vt;
}

/* A request with @n_profiles profiles of @n_samples samples over @n_funcs
 * functions, for service @service. Everything in @a. */
static inline struct pg_otlp_request *tb_request(struct pg_arena *a, size_t n_profiles, size_t n_samples,
                                          size_t n_funcs, const char *service, unsigned seed)
{
    struct pg_dict_builder *b = pg_dict_builder_new(a, a);
    struct pg_otlp_request *req = pg_arena_zalloc(a, sizeof(*req));
    struct pg_otlp_resprof *rp = pg_arena_zalloc(a, sizeof(*rp));
    struct pg_otlp_scopeprof *sp = pg_arena_zalloc(a, sizeof(*sp));
    struct pg_otlp_resource *res = pg_arena_zalloc(a, sizeof(*res));
    struct pg_otlp_scope *scope = pg_arena_zalloc(a, sizeof(*scope));
    struct pg_otlp_kv *kv = pg_arena_zalloc(a, sizeof(*kv));
    struct pg_otlp_anyvalue *av = pg_arena_zalloc(a, sizeof(*av));
    int32_t *locs = pg_arena_calloc(a, n_funcs, sizeof(int32_t));
    int32_t s_cpu, s_ns, s_thread, s_file;
    char name[96];

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        req);
    opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
    opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
    opentelemetry__proto__resource__v1__resource__init(res);
    opentelemetry__proto__common__v1__instrumentation_scope__init(scope);
    opentelemetry__proto__common__v1__key_value__init(kv);
    opentelemetry__proto__common__v1__any_value__init(av);
    av->value_case = PG_OTLP_ANYVALUE_STR;
    av->string_value = pg_arena_strdup(a, service);
    kv->key = "service.name";
    kv->value = av;
    res->n_attributes = 1;
    res->attributes = pg_arena_calloc(a, 1, sizeof(*res->attributes));
    res->attributes[0] = kv;
    scope->name = "pprofgate-test";
    rp->resource = res;
    sp->scope = scope;
    rp->n_scope_profiles = 1;
    rp->scope_profiles = pg_arena_calloc(a, 1, sizeof(*rp->scope_profiles));
    rp->scope_profiles[0] = sp;
    req->n_resource_profiles = 1;
    req->resource_profiles = pg_arena_calloc(a, 1, sizeof(*req->resource_profiles));
    req->resource_profiles[0] = rp;

    s_cpu = pg_dict_string(b, "cpu", 3);
    s_ns = pg_dict_string(b, "nanoseconds", 11);
    s_thread = pg_dict_string(b, "thread.name", 11);
    s_file = pg_dict_string(b, "main.go", 7);
    for (size_t i = 0; i < n_funcs; i++) {
        struct pg_dict_line line;
        int32_t fname;
        int32_t fn;

        snprintf(name, sizeof(name), "pkg.function_%u_%zu_with_a_realistic_length", seed, i);
        fname = pg_dict_string(b, name, strlen(name));
        fn = pg_dict_function(b, fname, 0, s_file, (int64_t)i + 1);
        line.function_index = fn;
        line.line = (int64_t)i * 3 + 1;
        line.column = 0;
        locs[i] = pg_dict_location(b, 0, 0x1000 + i * 16, &line, 1, NULL, 0);
    }
    sp->n_profiles = n_profiles;
    sp->profiles = pg_arena_calloc(a, n_profiles ? n_profiles : 1, sizeof(*sp->profiles));
    for (size_t p = 0; p < n_profiles; p++) {
        struct pg_otlp_profile *prof = pg_arena_zalloc(a, sizeof(*prof));

        opentelemetry__proto__profiles__v1development__profile__init(prof);
        prof->sample_type = tb_vt(a, s_cpu, s_ns);
        prof->period_type = tb_vt(a, s_cpu, s_ns);
        prof->period = 10000000;
        prof->time_unix_nano = 1700000000000000000ULL + p;
        prof->n_samples = n_samples;
        prof->samples = pg_arena_calloc(a, n_samples ? n_samples : 1, sizeof(*prof->samples));
        for (size_t s = 0; s < n_samples; s++) {
            struct pg_otlp_sample *smp = pg_arena_zalloc(a, sizeof(*smp));
            int32_t stack[8];
            size_t depth = 1 + (s + seed) % 5;
            struct pg_otlp_anyvalue tv;
            char tname[16];
            int32_t attr;

            opentelemetry__proto__profiles__v1development__sample__init(smp);
            for (size_t k = 0; k < depth; k++) {
                stack[k] = locs[(s * 7 + k * 13 + p) % n_funcs];
            }
            smp->stack_index = pg_dict_stack(b, stack, depth);
            opentelemetry__proto__common__v1__any_value__init(&tv);
            snprintf(tname, sizeof(tname), "t%zu", s % 3);
            tv.value_case = PG_OTLP_ANYVALUE_STR;
            tv.string_value = tname;
            attr = pg_dict_attr(b, s_thread, &tv, 0);
            smp->n_attribute_indices = 1;
            smp->attribute_indices = pg_arena_calloc(a, 1, sizeof(int32_t));
            smp->attribute_indices[0] = attr;
            smp->n_values = 1;
            smp->values = pg_arena_calloc(a, 1, sizeof(int64_t));
            smp->values[0] = (int64_t)(s + 1) * 1000 + (int64_t)p;
            prof->samples[s] = smp;
        }
        sp->profiles[p] = prof;
    }
    req->dictionary = pg_dict_finish(b);
    return req;
}

static inline struct pg_batch *tb_batch(size_t n_profiles, size_t n_samples, size_t n_funcs,
                                 const char *service, unsigned seed)
{
    struct pg_arena *a = pg_arena_create(0);

    return pg_batch_new(a, tb_request(a, n_profiles, n_samples, n_funcs, service, seed));
}

/* Checks the dictionary invariants of @req; returns the number of problems
 * and prints each. */
static inline int tb_check_dict(const struct pg_otlp_request *req)
{
    const struct pg_otlp_dict *d = req->dictionary;
    int bad = 0;
    char *used_str, *used_fn, *used_loc, *used_map, *used_stack, *used_attr;

#define BAD(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "  dict: " __VA_ARGS__);                                                   \
        fprintf(stderr, "\n");                                                                     \
        bad++;                                                                                     \
    } while (0)
    if (d == NULL) {
        BAD("no dictionary");
        return bad;
    }
    if (d->n_string_table < 1 || d->string_table[0][0] != '\0') {
        BAD("string_table[0] is not \"\"");
    }
    if (d->n_function_table < 1 || d->function_table[0]->name_strindex != 0) {
        BAD("function_table[0] not zero");
    }
    if (d->n_location_table < 1 || d->location_table[0]->n_lines != 0) {
        BAD("location_table[0] not zero");
    }
    if (d->n_stack_table < 1 || d->stack_table[0]->n_location_indices != 0) {
        BAD("stack_table[0] not zero");
    }
    if (d->n_mapping_table < 1 || d->n_attribute_table < 1 || d->n_link_table < 1) {
        BAD("a table lacks its zero entry");
    }
    used_str = calloc(d->n_string_table + 1, 1);
    used_fn = calloc(d->n_function_table + 1, 1);
    used_loc = calloc(d->n_location_table + 1, 1);
    used_map = calloc(d->n_mapping_table + 1, 1);
    used_stack = calloc(d->n_stack_table + 1, 1);
    used_attr = calloc(d->n_attribute_table + 1, 1);
#define USE(arr, n, idx, what)                                                                     \
    do {                                                                                           \
        if ((idx) < 0 || (size_t)(idx) >= (n)) {                                                   \
            BAD("%s index %d out of range (%zu)", what, (int)(idx), (size_t)(n));                  \
        } else {                                                                                   \
            arr[idx] = 1;                                                                          \
        }                                                                                          \
    } while (0)
    for (size_t r = 0; r < req->n_resource_profiles; r++) {
        for (size_t s = 0; s < req->resource_profiles[r]->n_scope_profiles; s++) {
            const struct pg_otlp_scopeprof *sp = req->resource_profiles[r]->scope_profiles[s];

            for (size_t p = 0; p < sp->n_profiles; p++) {
                const struct pg_otlp_profile *prof = sp->profiles[p];

                if (prof->sample_type) {
                    USE(used_str, d->n_string_table, prof->sample_type->type_strindex, "string");
                    USE(used_str, d->n_string_table, prof->sample_type->unit_strindex, "string");
                }
                if (prof->period_type) {
                    USE(used_str, d->n_string_table, prof->period_type->type_strindex, "string");
                    USE(used_str, d->n_string_table, prof->period_type->unit_strindex, "string");
                }
                for (size_t i = 0; i < prof->n_samples; i++) {
                    const struct pg_otlp_sample *smp = prof->samples[i];

                    USE(used_stack, d->n_stack_table, smp->stack_index, "stack");
                    for (size_t k = 0; k < smp->n_attribute_indices; k++) {
                        USE(used_attr, d->n_attribute_table, smp->attribute_indices[k], "attr");
                    }
                }
            }
        }
    }
    for (size_t i = 1; i < d->n_stack_table; i++) {
        for (size_t k = 0; k < d->stack_table[i]->n_location_indices; k++) {
            USE(used_loc, d->n_location_table, d->stack_table[i]->location_indices[k], "location");
        }
    }
    for (size_t i = 1; i < d->n_location_table; i++) {
        if (!used_loc[i]) {
            continue;
        }
        USE(used_map, d->n_mapping_table, d->location_table[i]->mapping_index, "mapping");
        for (size_t k = 0; k < d->location_table[i]->n_lines; k++) {
            USE(used_fn, d->n_function_table, d->location_table[i]->lines[k]->function_index,
                "function");
        }
    }
    for (size_t i = 1; i < d->n_function_table; i++) {
        if (used_fn[i]) {
            USE(used_str, d->n_string_table, d->function_table[i]->name_strindex, "string");
            USE(used_str, d->n_string_table, d->function_table[i]->filename_strindex, "string");
            USE(used_str, d->n_string_table, d->function_table[i]->system_name_strindex, "string");
        }
    }
    for (size_t i = 1; i < d->n_mapping_table; i++) {
        if (used_map[i]) {
            USE(used_str, d->n_string_table, d->mapping_table[i]->filename_strindex, "string");
        }
    }
    for (size_t i = 1; i < d->n_attribute_table; i++) {
        if (used_attr[i]) {
            USE(used_str, d->n_string_table, d->attribute_table[i]->key_strindex, "string");
            USE(used_str, d->n_string_table, d->attribute_table[i]->unit_strindex, "string");
        }
    }
    /* Orphans: entries (beyond index 0) nothing refers to. */
    for (size_t i = 1; i < d->n_string_table; i++) {
        if (!used_str[i]) {
            BAD("orphan string %zu \"%s\"", i, d->string_table[i]);
        }
    }
    for (size_t i = 1; i < d->n_function_table; i++) {
        if (!used_fn[i]) {
            BAD("orphan function %zu", i);
        }
    }
    for (size_t i = 1; i < d->n_location_table; i++) {
        if (!used_loc[i]) {
            BAD("orphan location %zu", i);
        }
    }
    for (size_t i = 1; i < d->n_stack_table; i++) {
        if (!used_stack[i]) {
            BAD("orphan stack %zu", i);
        }
    }
    for (size_t i = 1; i < d->n_attribute_table; i++) {
        if (!used_attr[i]) {
            BAD("orphan attribute %zu", i);
        }
    }
    free(used_str);
    free(used_fn);
    free(used_loc);
    free(used_map);
    free(used_stack);
    free(used_attr);
#undef USE
#undef BAD
    return bad;
}

/* A canonical text for one sample: frames by function name and line, its
 * attributes as key=value, its values. Written into @buf. */
static inline void tb_sample_key(const struct pg_otlp_dict *d, const struct pg_otlp_sample *s, char *buf,
                          size_t cap)
{
    size_t off = 0;
    const struct pg_otlp_stack *st = d->stack_table[s->stack_index];

    buf[0] = '\0';
    for (size_t k = 0; k < st->n_location_indices && off + 1 < cap; k++) {
        const struct pg_otlp_location *l = d->location_table[st->location_indices[k]];

        for (size_t j = 0; j < l->n_lines && off + 1 < cap; j++) {
            const struct pg_otlp_function *f = d->function_table[l->lines[j]->function_index];

            off += (size_t)snprintf(buf + off, cap - off, "%s:%lld;",
                                    d->string_table[f->name_strindex],
                                    (long long)l->lines[j]->line);
        }
    }
    for (size_t k = 0; k < s->n_attribute_indices && off + 1 < cap; k++) {
        const struct pg_otlp_kvu *a = d->attribute_table[s->attribute_indices[k]];

        off += (size_t)snprintf(buf + off, cap - off, "|%s=%s", d->string_table[a->key_strindex],
                                a->value && a->value->value_case == PG_OTLP_ANYVALUE_STR
                                    ? a->value->string_value
                                    : "?");
    }
    for (size_t k = 0; k < s->n_values && off + 1 < cap; k++) {
        off += (size_t)snprintf(buf + off, cap - off, "#%lld", (long long)s->values[k]);
    }
}

#endif
