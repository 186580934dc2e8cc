/* SPDX-License-Identifier: Apache-2.0
 * Text rendering of OTLP profiles for the debug exporter, line for line in
 * the collector's formats (otlp-profiles.md §3), with pprofgate's
 * annotations (debug_annotate.c) put in where asked. Input may come from
 * any receiver, so every dictionary index is range-checked and printed as
 * the collector's "[Missing ...]" text. */
#include "exporter/debug_format.h"

#include <stdio.h>
#include <string.h>

#include "exporter/debug_annotate.h"
#include "otlp/otlp_lazy.h"

static void put_int_list(struct pg_debug_buf *b, const int32_t *v, size_t n)
{
    pg_debug_put(b, "[");
    for (size_t i = 0; i < n; i++) {
        pg_debug_buf_printf(b, i ? " %d" : "%d", v[i]);
    }
    pg_debug_put(b, "]");
}

/* ---- summary --------------------------------------------------------- */

size_t pg_debug_resource_profiles(const struct pg_otlp_request *req)
{
    return req ? req->n_resource_profiles : 0;
}

size_t pg_debug_sample_records(const struct pg_otlp_request *req)
{
    size_t n = 0;

    for (size_t i = 0; req && i < req->n_resource_profiles; i++) {
        const pg_otlp_resprof *rp = req->resource_profiles[i];

        for (size_t j = 0; rp && j < rp->n_scope_profiles; j++) {
            const pg_otlp_scopeprof *sp = rp->scope_profiles[j];

            for (size_t k = 0; sp && k < sp->n_profiles; k++) {
                n += sp->profiles[k] ? pg_otlp_profile_sample_count(sp->profiles[k]) : 0;
            }
        }
    }
    return n;
}

void pg_debug_format_summary(struct pg_debug_buf *b, size_t resource_profiles,
                             size_t sample_records)
{
    pg_debug_buf_printf(b, "Profiles\t{\"resource profiles\": %zu, \"sample records\": %zu}\n",
                        resource_profiles, sample_records);
}

/* ---- normal ---------------------------------------------------------- */

static void put_kv_pairs(struct pg_debug_buf *b, pg_otlp_kv *const *kvs, size_t n,
                         const pg_otlp_dict *d)
{
    for (size_t i = 0; i < n; i++) {
        if (kvs[i] == NULL) {
            continue;
        }
        pg_debug_buf_printf(b, " %s=", pg_debug_kv_key(kvs[i], d));
        pg_debug_put_as_string(b, kvs[i]->value, d);
    }
}

static void format_normal(struct pg_debug_buf *b, const struct pg_otlp_request *req,
                          bool annotate)
{
    const pg_otlp_dict *d = req->dictionary;

    for (size_t i = 0; i < req->n_resource_profiles; i++) {
        const pg_otlp_resprof *rp = req->resource_profiles[i];

        if (rp == NULL) {
            continue;
        }
        pg_debug_buf_printf(b, "ResourceProfiles #%zu", i);
        if (rp->schema_url && rp->schema_url[0]) {
            pg_debug_buf_printf(b, " [%s]", rp->schema_url);
        }
        if (rp->resource) {
            put_kv_pairs(b, rp->resource->attributes, rp->resource->n_attributes, d);
        }
        pg_debug_put(b, "\n");
        for (size_t j = 0; j < rp->n_scope_profiles; j++) {
            const pg_otlp_scopeprof *sp = rp->scope_profiles[j];

            if (sp == NULL) {
                continue;
            }
            pg_debug_buf_printf(b, "ScopeProfiles #%zu", j);
            if (sp->scope && sp->scope->name && sp->scope->name[0]) {
                pg_debug_buf_printf(b, " %s", sp->scope->name);
            }
            if (sp->scope && sp->scope->version && sp->scope->version[0]) {
                pg_debug_buf_printf(b, "@%s", sp->scope->version);
            }
            if (sp->schema_url && sp->schema_url[0]) {
                pg_debug_buf_printf(b, " [%s]", sp->schema_url);
            }
            if (sp->scope) {
                put_kv_pairs(b, sp->scope->attributes, sp->scope->n_attributes, d);
            }
            if (annotate) {
                pg_debug_annot_scope_fields(b, d, sp);
            }
            pg_debug_put(b, "\n");
            for (size_t k = 0; k < sp->n_profiles; k++) {
                const pg_otlp_profile *p = sp->profiles[k];

                if (p == NULL) {
                    continue;
                }
                pg_debug_put_hex(b, p->profile_id.data, p->profile_id.len);
                pg_debug_buf_printf(b, " samples=%zu", p->n_samples);
                if (annotate) {
                    pg_debug_annot_profile_fields(b, d, p);
                }
                if (p->n_attribute_indices > 0) {
                    for (size_t a = 0; a < p->n_attribute_indices; a++) {
                        int32_t ai = p->attribute_indices[a];
                        const pg_otlp_kvu *kvu;
                        const char *key;

                        pg_debug_put(b, " ");
                        if (d == NULL || ai < 0 || (size_t)ai >= d->n_attribute_table ||
                            d->attribute_table[ai] == NULL) {
                            pg_debug_buf_printf(b, "[Missing Dictionary AttributeTable Item #%d]",
                                                ai);
                            continue;
                        }
                        kvu = d->attribute_table[ai];
                        key = pg_debug_dict_str(d, kvu->key_strindex);
                        if (key == NULL) {
                            pg_debug_buf_printf(b, "[Missing Dictionary Key String Item #%d]=",
                                                kvu->key_strindex);
                        } else {
                            pg_debug_buf_printf(b, "%s=", key);
                        }
                        pg_debug_put_as_string(b, kvu->value, d);
                    }
                }
                pg_debug_put(b, "\n");
            }
        }
    }
}

/* ---- detailed -------------------------------------------------------- */

static void put_attr_line(struct pg_debug_buf *b, const char *indent, const pg_otlp_dict *d,
                          int32_t ai)
{
    const pg_otlp_kvu *kvu;
    const char *key;

    if (d == NULL || ai < 0 || (size_t)ai >= d->n_attribute_table ||
        d->attribute_table[ai] == NULL) {
        pg_debug_buf_printf(b, "%s-> [Missing Dictionary AttributeTable Item #%d]\n", indent, ai);
        return;
    }
    kvu = d->attribute_table[ai];
    key = pg_debug_dict_str(d, kvu->key_strindex);
    if (key == NULL) {
        pg_debug_buf_printf(b, "%s-> [Missing Dictionary Key String Item #%d]: ", indent,
                            kvu->key_strindex);
    } else {
        pg_debug_buf_printf(b, "%s-> %s: ", indent, key);
    }
    pg_debug_put_typed(b, kvu->value, d);
    pg_debug_put(b, "\n");
}

static void put_kv_block(struct pg_debug_buf *b, const char *title, pg_otlp_kv *const *kvs,
                         size_t n, const pg_otlp_dict *d)
{
    if (n == 0) {
        return;
    }
    pg_debug_buf_printf(b, "%s\n", title);
    for (size_t i = 0; i < n; i++) {
        if (kvs[i] == NULL) {
            continue;
        }
        pg_debug_buf_printf(b, "     -> %s: ", pg_debug_kv_key(kvs[i], d));
        pg_debug_put_typed(b, kvs[i]->value, d);
        pg_debug_put(b, "\n");
    }
}

/* The collector's attribute and link tables: it writes every entry's
 * fields into one map, so only the last entry's values show (each field in
 * first-insertion order). */
static void format_tables_as_collector(struct pg_debug_buf *b, const pg_otlp_dict *d)
{
    const pg_otlp_kvu *a = d->n_attribute_table > 0 ? d->attribute_table[d->n_attribute_table - 1]
                                                    : NULL;
    const pg_otlp_link *l = d->n_link_table > 0 ? d->link_table[d->n_link_table - 1] : NULL;

    if (a != NULL) {
        pg_debug_buf_printf(b, "Attribute table:\n     -> Key: Int(%d)\n     -> Value: Str(",
                            a->key_strindex);
        pg_debug_put_as_string(b, a->value, d);
        pg_debug_buf_printf(b, ")\n     -> unit: Int(%d)\n", a->unit_strindex);
    }
    if (l != NULL) {
        pg_debug_put(b, "Link table:\n     -> Trace ID: Str(");
        pg_debug_put_hex(b, l->trace_id.data, l->trace_id.len);
        pg_debug_put(b, ")\n     -> Span ID: Str(");
        pg_debug_put_hex(b, l->span_id.data, l->span_id.len);
        pg_debug_put(b, ")\n");
    }
}

static void format_tables(struct pg_debug_buf *b, const pg_otlp_dict *d, bool annotate)
{
    for (size_t i = 0; i < d->n_mapping_table; i++) {
        const pg_otlp_mapping *m = d->mapping_table[i];

        if (m == NULL) {
            continue;
        }
        pg_debug_buf_printf(b,
                            "Mapping #%zu\n    Memory start: %llu\n    Memory limit: %llu\n"
                            "    File offset: %llu\n    File name: %d\n    Attributes: ",
                            i, (unsigned long long)m->memory_start,
                            (unsigned long long)m->memory_limit,
                            (unsigned long long)m->file_offset, m->filename_strindex);
        put_int_list(b, m->attribute_indices, m->n_attribute_indices);
        pg_debug_put(b, "\n");
    }
    for (size_t i = 0; i < d->n_location_table; i++) {
        const pg_otlp_location *l = d->location_table[i];

        if (l == NULL) {
            continue;
        }
        pg_debug_buf_printf(b, "Location #%zu\n    Mapping index: %d\n    Address: %llu\n", i,
                            l->mapping_index, (unsigned long long)l->address);
        for (size_t j = 0; j < l->n_lines; j++) {
            const pg_otlp_line *ln = l->lines[j];

            if (ln == NULL) {
                continue;
            }
            pg_debug_buf_printf(b,
                                "    Line #%zu\n        Function index: %d\n        Line: %lld\n"
                                "        Column: %lld\n",
                                j, ln->function_index, (long long)ln->line,
                                (long long)ln->column);
        }
        pg_debug_put(b, "    Attributes: ");
        put_int_list(b, l->attribute_indices, l->n_attribute_indices);
        pg_debug_put(b, "\n");
    }
    for (size_t i = 0; i < d->n_function_table; i++) {
        const pg_otlp_function *f = d->function_table[i];

        if (f == NULL) {
            continue;
        }
        pg_debug_buf_printf(b,
                            "Function #%zu\n    Name: %d\n    System name: %d\n    Filename: %d\n"
                            "    Start line: %lld\n",
                            i, f->name_strindex, f->system_name_strindex, f->filename_strindex,
                            (long long)f->start_line);
    }
    if (!annotate) {
        format_tables_as_collector(b, d);
    }
    if (annotate) {
        pg_debug_annot_tables(b, d);
    }
    if (d->n_string_table > 0) {
        pg_debug_put(b, "String table:\n");
        for (size_t i = 0; i < d->n_string_table; i++) {
            pg_debug_buf_printf(b, "    %s\n", pg_debug_str0(d->string_table[i]));
        }
    }
}

/* @type_name: the profile's "type/unit" to name next to the values, or
 * NULL for the collector's text. */
static void format_sample(struct pg_debug_buf *b, const pg_otlp_dict *d, const pg_otlp_sample *s,
                          size_t idx, const char *type_name)
{
    pg_debug_buf_printf(b, "    Sample #%zu\n        Values: [", idx);
    for (size_t v = 0; v < s->n_values; v++) {
        pg_debug_buf_printf(b, v ? " %lld" : "%lld", (long long)s->values[v]);
    }
    pg_debug_put(b, "]");
    if (type_name != NULL) {
        pg_debug_buf_printf(b, " %s", type_name);
    }
    pg_debug_put(b, "\n");
    if (s->n_attribute_indices > 0) {
        pg_debug_put(b, "        Attributes:\n");
        for (size_t a = 0; a < s->n_attribute_indices; a++) {
            put_attr_line(b, "             ", d, s->attribute_indices[a]);
        }
    }
    if (type_name != NULL) {
        pg_debug_annot_sample(b, d, s);
    }
}

static void format_detailed(struct pg_debug_buf *b, const struct pg_otlp_request *req,
                            bool annotate)
{
    const pg_otlp_dict *d = req->dictionary;
    char tbuf[64], type_name[256];
    struct pg_debug_frames frames = {0};

    if (d != NULL) {
        format_tables(b, d, annotate);
    }
    for (size_t i = 0; i < req->n_resource_profiles; i++) {
        const pg_otlp_resprof *rp = req->resource_profiles[i];
        const pg_otlp_resource *r;

        if (rp == NULL) {
            continue;
        }
        r = rp->resource;
        pg_debug_buf_printf(b, "ResourceProfiles #%zu\nResource SchemaURL: %s\n", i,
                            pg_debug_str0(rp->schema_url));
        if (r != NULL) {
            put_kv_block(b, "Resource attributes:", r->attributes, r->n_attributes, d);
            if (r->n_entity_refs > 0) {
                pg_debug_put(b, "Resource entity refs:\n");
                for (size_t e = 0; e < r->n_entity_refs; e++) {
                    const Opentelemetry__Proto__Common__V1__EntityRef *er = r->entity_refs[e];

                    if (er == NULL) {
                        continue;
                    }
                    pg_debug_buf_printf(b, "     -> Entity ref #%zu:\n          -> Type: %s\n", e,
                                        pg_debug_str0(er->type));
                    if (er->schema_url && er->schema_url[0]) {
                        pg_debug_buf_printf(b, "          -> Schema URL: %s\n", er->schema_url);
                    }
                    if (er->n_id_keys > 0) {
                        pg_debug_put(b, "          -> ID keys:\n");
                        for (size_t k = 0; k < er->n_id_keys; k++) {
                            pg_debug_buf_printf(b, "               -> %s\n",
                                                pg_debug_str0(er->id_keys[k]));
                        }
                    }
                    if (er->n_description_keys > 0) {
                        pg_debug_put(b, "          -> Description keys:\n");
                        for (size_t k = 0; k < er->n_description_keys; k++) {
                            pg_debug_buf_printf(b, "               -> %s\n",
                                                pg_debug_str0(er->description_keys[k]));
                        }
                    }
                }
            }
        }
        for (size_t j = 0; j < rp->n_scope_profiles; j++) {
            const pg_otlp_scopeprof *sp = rp->scope_profiles[j];

            if (sp == NULL) {
                continue;
            }
            pg_debug_buf_printf(b, "ScopeProfiles #%zu\nScopeProfiles SchemaURL: %s\n", j,
                                pg_debug_str0(sp->schema_url));
            pg_debug_buf_printf(b, "InstrumentationScope %s %s\n",
                                sp->scope ? pg_debug_str0(sp->scope->name) : "",
                                sp->scope ? pg_debug_str0(sp->scope->version) : "");
            if (sp->scope != NULL) {
                put_kv_block(b, "InstrumentationScope attributes:", sp->scope->attributes,
                             sp->scope->n_attributes, d);
            }
            if (annotate) {
                pg_debug_annot_scope_lines(b, d, sp);
            }
            for (size_t k = 0; k < sp->n_profiles; k++) {
                const pg_otlp_profile *p = sp->profiles[k];

                if (p == NULL) {
                    continue;
                }
                pg_debug_buf_printf(b, "Profile #%zu\n    %-15s: ", k, "Profile ID");
                pg_debug_put_hex(b, p->profile_id.data, p->profile_id.len);
                pg_debug_go_time(tbuf, sizeof(tbuf), (unsigned long long)p->time_unix_nano);
                pg_debug_buf_printf(b, "\n    %-15s: %s\n    %-15s: %llu\n"
                                       "    Dropped attributes count: %u\n",
                                    "Start time", tbuf, "DurationNano",
                                    (unsigned long long)p->duration_nano,
                                    p->dropped_attributes_count);
                if (annotate) {
                    pg_debug_annot_profile_lines(b, d, p, &frames);
                    pg_debug_value_type_name(type_name, sizeof(type_name), d, p->sample_type);
                }
                for (size_t s = 0; s < p->n_samples; s++) {
                    if (p->samples[s] != NULL) {
                        format_sample(b, d, p->samples[s], s, annotate ? type_name : NULL);
                    }
                }
            }
        }
    }
    pg_debug_frames_free(&frames);
}

void pg_debug_format_text(struct pg_debug_buf *b, const struct pg_otlp_request *req,
                          enum pg_debug_verbosity v, bool annotate)
{
    if (req == NULL) {
        return;
    }
    if (v == PG_DEBUG_NORMAL) {
        format_normal(b, req, annotate);
    } else if (v == PG_DEBUG_DETAILED) {
        format_detailed(b, req, annotate);
    }
}

