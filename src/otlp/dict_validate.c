/* SPDX-License-Identifier: Apache-2.0
 * Validation of a whole OTLP request against its dictionary: every index in
 * range, no repeated attribute keys, optionally no duplicate entries. */
#include "otlp/dict.h"

#include <string.h>

/* ---- validation ---------------------------------------------------------- */

#define CHECK_IDX(val, n, what)                                                                    \
    do {                                                                                           \
        if ((val) < 0 || (size_t)(val) >= (n)) {                                                   \
            return pg_status_set(st, PG_ERR_MALFORMED, "otlp: %s %lld out of range (table has " \
                                 "%zu entries)", what, (long long)(val), (size_t)(n));            \
        }                                                                                          \
    } while (0)

static enum pg_err check_attr_list(const struct pg_otlp_dict *d, const int32_t *idx, size_t n,
                                   const char *what, struct pg_status *st)
{
    for (size_t i = 0; i < n; i++) {
        CHECK_IDX(idx[i], d->n_attribute_table, what);
        for (size_t j = 0; j < i; j++) {
            const struct pg_otlp_kvu *a = d->attribute_table[idx[i]];
            const struct pg_otlp_kvu *b = d->attribute_table[idx[j]];
            if (a->key_strindex == b->key_strindex) {
                return pg_status_set(st, PG_ERR_MALFORMED, "otlp: %s repeat key index %d", what,
                                     a->key_strindex);
            }
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_dict_validate(struct pg_arena *scratch, const struct pg_otlp_request *req,
                             bool no_duplicates, struct pg_status *st)
{
    const struct pg_otlp_dict *d = req->dictionary;
    enum pg_err err;

    if (d == NULL) {
        return pg_status_set(st, PG_ERR_MALFORMED, "otlp: request without dictionary");
    }
    if (d->n_string_table == 0 || d->string_table[0][0] != '\0' || d->n_mapping_table == 0 ||
        d->n_location_table == 0 || d->n_function_table == 0 || d->n_link_table == 0 ||
        d->n_attribute_table == 0 || d->n_stack_table == 0) {
        return pg_status_set(st, PG_ERR_MALFORMED, "otlp: a dictionary table lacks index 0");
    }
    {
        const struct pg_otlp_mapping *m = d->mapping_table[0];
        const struct pg_otlp_location *l = d->location_table[0];
        const struct pg_otlp_function *f = d->function_table[0];
        const struct pg_otlp_link *k = d->link_table[0];
        const struct pg_otlp_kvu *a = d->attribute_table[0];
        static const uint8_t zero[16];
        if (m->memory_start || m->memory_limit || m->file_offset || m->filename_strindex ||
            m->n_attribute_indices || l->mapping_index || l->address || l->n_lines ||
            l->n_attribute_indices || f->name_strindex || f->system_name_strindex ||
            f->filename_strindex || f->start_line || a->key_strindex || a->unit_strindex ||
            (a->value != NULL && a->value->value_case != PG_OTLP_ANYVALUE_NONE) ||
            d->stack_table[0]->n_location_indices ||
            (k->trace_id.len != 0 && (k->trace_id.len != 16 ||
                                      memcmp(k->trace_id.data, zero, 16) != 0)) ||
            (k->span_id.len != 0 && (k->span_id.len != 8 ||
                                     memcmp(k->span_id.data, zero, 8) != 0))) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "otlp: index 0 of a dictionary table is not the zero value");
        }
    }
    for (size_t i = 0; i < d->n_mapping_table; i++) {
        const struct pg_otlp_mapping *m = d->mapping_table[i];
        CHECK_IDX(m->filename_strindex, d->n_string_table, "mapping filename_strindex");
        if ((err = check_attr_list(d, m->attribute_indices, m->n_attribute_indices,
                                   "mapping attribute_indices", st)) != PG_ERR_OK) {
            return err;
        }
    }
    for (size_t i = 0; i < d->n_function_table; i++) {
        const struct pg_otlp_function *f = d->function_table[i];
        CHECK_IDX(f->name_strindex, d->n_string_table, "function name_strindex");
        CHECK_IDX(f->system_name_strindex, d->n_string_table, "function system_name_strindex");
        CHECK_IDX(f->filename_strindex, d->n_string_table, "function filename_strindex");
    }
    for (size_t i = 0; i < d->n_location_table; i++) {
        const struct pg_otlp_location *l = d->location_table[i];
        CHECK_IDX(l->mapping_index, d->n_mapping_table, "location mapping_index");
        for (size_t j = 0; j < l->n_lines; j++) {
            CHECK_IDX(l->lines[j]->function_index, d->n_function_table, "line function_index");
        }
        if ((err = check_attr_list(d, l->attribute_indices, l->n_attribute_indices,
                                   "location attribute_indices", st)) != PG_ERR_OK) {
            return err;
        }
    }
    for (size_t i = 0; i < d->n_stack_table; i++) {
        const struct pg_otlp_stack *s = d->stack_table[i];
        for (size_t j = 0; j < s->n_location_indices; j++) {
            CHECK_IDX(s->location_indices[j], d->n_location_table, "stack location_indices");
        }
    }
    for (size_t i = 0; i < d->n_attribute_table; i++) {
        const struct pg_otlp_kvu *a = d->attribute_table[i];
        CHECK_IDX(a->key_strindex, d->n_string_table, "attribute key_strindex");
        CHECK_IDX(a->unit_strindex, d->n_string_table, "attribute unit_strindex");
    }
    for (size_t r = 0; r < req->n_resource_profiles; r++) {
        const struct pg_otlp_resprof *rp = req->resource_profiles[r];
        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            const struct pg_otlp_scopeprof *sp = rp->scope_profiles[s];
            for (size_t k = 0; k < sp->n_profiles; k++) {
                const struct pg_otlp_profile *p = sp->profiles[k];
                if (p->sample_type != NULL) {
                    CHECK_IDX(p->sample_type->type_strindex, d->n_string_table, "sample_type");
                    CHECK_IDX(p->sample_type->unit_strindex, d->n_string_table, "sample_type");
                }
                if (p->period_type != NULL) {
                    CHECK_IDX(p->period_type->type_strindex, d->n_string_table, "period_type");
                    CHECK_IDX(p->period_type->unit_strindex, d->n_string_table, "period_type");
                }
                if ((err = check_attr_list(d, p->attribute_indices, p->n_attribute_indices,
                                           "profile attribute_indices", st)) != PG_ERR_OK) {
                    return err;
                }
                for (size_t i = 0; i < p->n_samples; i++) {
                    const struct pg_otlp_sample *sm = p->samples[i];
                    CHECK_IDX(sm->stack_index, d->n_stack_table, "sample stack_index");
                    CHECK_IDX(sm->link_index, d->n_link_table, "sample link_index");
                    if ((err = check_attr_list(d, sm->attribute_indices,
                                               sm->n_attribute_indices,
                                               "sample attribute_indices", st)) != PG_ERR_OK) {
                        return err;
                    }
                }
            }
        }
    }
    if (no_duplicates) {
        /* Re-intern every entry into a fresh builder, dependencies first: an entry that lands
         * on an earlier index duplicates it. */
        struct pg_dict_builder *b = pg_dict_builder_new(scratch, scratch);
        struct pg_dict_remap *rm = pg_dict_remap_new(scratch, d);
        struct {
            const char *name;
            size_t n;
            int32_t (*imp)(struct pg_dict_builder *, struct pg_dict_remap *, int32_t);
        } tabs[] = {
            {"string", d->n_string_table, pg_dict_import_string},
            {"function", d->n_function_table, pg_dict_import_function},
            {"attribute", d->n_attribute_table, pg_dict_import_attr},
            {"link", d->n_link_table, pg_dict_import_link},
            {"mapping", d->n_mapping_table, pg_dict_import_mapping},
            {"location", d->n_location_table, pg_dict_import_location},
            {"stack", d->n_stack_table, pg_dict_import_stack},
        };
        if (b == NULL || rm == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "otlp: no memory to check duplicates");
        }
        for (size_t t = 0; t < sizeof(tabs) / sizeof(tabs[0]); t++) {
            for (size_t i = 0; i < tabs[t].n; i++) {
                int32_t r = tabs[t].imp(b, rm, (int32_t)i);
                if (r < 0) {
                    return pg_status_set(st, PG_ERR_NOMEM, "otlp: no memory to check duplicates");
                }
                if ((size_t)r != i) {
                    return pg_status_set(st, PG_ERR_MALFORMED,
                                         "otlp: %s_table[%zu] duplicates entry %d", tabs[t].name,
                                         i, r);
                }
            }
        }
    }
    return PG_ERR_OK;
}
