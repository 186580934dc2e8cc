/* SPDX-License-Identifier: Apache-2.0
 * The service.name fallback rule, applied by the pipeline after processors. */
#include "pipeline/service_name.h"

#include <string.h>

#include "otlp/otlp_build.h"

static const struct pg_otlp_kv *find_attr(const struct pg_otlp_resource *r, const char *key)
{
    if (r == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < r->n_attributes; i++) {
        if (r->attributes[i]->key != NULL && strcmp(r->attributes[i]->key, key) == 0) {
            return r->attributes[i];
        }
    }
    return NULL;
}

static bool has_service_name(const struct pg_otlp_resource *r)
{
    const struct pg_otlp_kv *kv = find_attr(r, "service.name");

    if (kv == NULL || kv->value == NULL) {
        return false;
    }
    if (kv->value->value_case == PG_OTLP_ANYVALUE_STR) {
        return kv->value->string_value != NULL && kv->value->string_value[0] != '\0';
    }
    return kv->value->value_case != PG_OTLP_ANYVALUE_NONE;
}

bool pg_service_name_missing(const struct pg_batch *b)
{
    for (size_t i = 0; i < b->req->n_resource_profiles; i++) {
        if (!has_service_name(b->req->resource_profiles[i]->resource)) {
            return true;
        }
    }
    return false;
}

/* unknown_service:<basename of mapping_table[1]>, or unknown_service. */
static const char *fallback_name(struct pg_batch *b)
{
    const struct pg_otlp_dict *d = b->req->dictionary;
    const char *file = NULL;
    const char *base;

    if (b->default_service_name != NULL && b->default_service_name[0] != '\0') {
        return b->default_service_name;
    }
    if (d != NULL && d->n_mapping_table > 1) {
        int32_t si = d->mapping_table[1]->filename_strindex;
        if (si > 0 && (size_t)si < d->n_string_table) {
            file = d->string_table[si];
        }
    }
    if (file == NULL || file[0] == '\0') {
        return "unknown_service";
    }
    base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (base[0] == '\0') {
        return "unknown_service";
    }
    {
        /* Once per request without service.name: no printf for a concatenation. */
        static const char prefix[] = "unknown_service:";
        size_t bl = strlen(base);
        char *name = pg_arena_alloc(b->arena, sizeof(prefix) + bl);

        if (name != NULL) {
            memcpy(name, prefix, sizeof(prefix) - 1);
            memcpy(name + sizeof(prefix) - 1, base, bl + 1);
        }
        return name;
    }
}

bool pg_service_name_ensure(struct pg_batch *b, struct pg_metric *counter)
{
    bool any = false;
    const char *name = NULL;

    for (size_t i = 0; i < b->req->n_resource_profiles; i++) {
        struct pg_otlp_resprof *rp = b->req->resource_profiles[i];
        struct pg_otlp_kv *kv;
        if (has_service_name(rp->resource)) {
            continue;
        }
        if (name == NULL) {
            name = fallback_name(b);
        }
        if (rp->resource == NULL) {
            rp->resource = pg_arena_alloc(b->arena, sizeof(*rp->resource));
            if (rp->resource == NULL) {
                return any;
            }
            opentelemetry__proto__resource__v1__resource__init(rp->resource);
        }
        kv = (struct pg_otlp_kv *)find_attr(rp->resource, "service.name");
        if (kv == NULL) {
            kv = pg_otlp_kv_str(b->arena, "service.name", name);
            if (kv == NULL || !pg_otlp_kv_append(b->arena, &rp->resource->attributes,
                                                 &rp->resource->n_attributes, kv)) {
                return any;
            }
        } else {
            struct pg_otlp_anyvalue *v = pg_otlp_any_str(b->arena, name, strlen(name));
            if (v == NULL) {
                return any;
            }
            kv->value = v;
        }
        any = true;
        if (counter != NULL) {
            pg_metric_add(counter, 1);
        }
    }
    return any;
}
