/* SPDX-License-Identifier: Apache-2.0
 * String-table references in KeyValue / AnyValue resolved to plain strings
 * (otlp_refs.h). The Collector's pprofile ProtoMarshaler (its otlphttp
 * exporter, file and Kafka codecs) writes resource and scope attributes as
 * KeyValue.key_strindex / AnyValue.string_value_strindex; its gRPC path, every
 * other signal and every v1.9 reader see only the plain fields. */
#include "otlp/otlp_refs.h"

struct refs {
    struct pg_arena *a;
    const struct pg_otlp_dict *d;
    size_t n; /* references rewritten */
    struct pg_status *st;
    enum pg_err err; /* why table_string gave NULL */
};

/* string_table[@i] copied into the arena; NULL with st set when out of range or no memory. */
static char *table_string(struct refs *r, int64_t i, const char *what)
{
    char *s;

    if (r->d == NULL || i < 0 || (size_t)i >= r->d->n_string_table) {
        r->err = pg_status_set(r->st, PG_ERR_MALFORMED, "otlp: %s %lld is past string_table (%zu entries)",
                      what, (long long)i, r->d != NULL ? r->d->n_string_table : (size_t)0);
        return NULL;
    }
    s = pg_arena_strdup(r->a, r->d->string_table[i] != NULL ? r->d->string_table[i] : "");
    if (s == NULL) {
        r->err = pg_status_set(r->st, pg_arena_hit_cap(r->a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                               "otlp: no memory to resolve attribute references");
        return NULL;
    }
    r->n++;
    return s;
}

static enum pg_err resolve_value(struct refs *r, struct pg_otlp_anyvalue *v);

static enum pg_err resolve_kvs(struct refs *r, struct pg_otlp_kv **kvs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct pg_otlp_kv *kv = kvs[i];
        enum pg_err err;

        if (kv->key_strindex != 0) {
            char *k = table_string(r, kv->key_strindex, "key_strindex");
            if (k == NULL) {
                return r->err;
            }
            kv->key = k;
            kv->key_strindex = 0;
        }
        if ((err = resolve_value(r, kv->value)) != PG_ERR_OK) {
            return err;
        }
    }
    return PG_ERR_OK;
}

static enum pg_err resolve_value(struct refs *r, struct pg_otlp_anyvalue *v)
{
    if (v == NULL) {
        return PG_ERR_OK;
    }
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STRINDEX: {
        char *s = table_string(r, v->string_value_strindex, "string_value_strindex");
        if (s == NULL) {
            return r->err;
        }
        v->value_case = PG_OTLP_ANYVALUE_STR;
        v->string_value = s;
        return PG_ERR_OK;
    }
    case PG_OTLP_ANYVALUE_KVLIST:
        return v->kvlist_value == NULL
                   ? PG_ERR_OK
                   : resolve_kvs(r, v->kvlist_value->values, v->kvlist_value->n_values);
    case PG_OTLP_ANYVALUE_ARRAY:
        for (size_t i = 0; v->array_value != NULL && i < v->array_value->n_values; i++) {
            enum pg_err err = resolve_value(r, v->array_value->values[i]);
            if (err != PG_ERR_OK) {
                return err;
            }
        }
        return PG_ERR_OK;
    default:
        return PG_ERR_OK;
    }
}

enum pg_err pg_otlp_refs_resolve(struct pg_arena *a, struct pg_otlp_request *req,
                                 bool with_dictionary, size_t *resolved, struct pg_status *st)
{
    struct refs r = {a, req->dictionary, 0, st, PG_ERR_OK};
    enum pg_err err = PG_ERR_OK;

    for (size_t i = 0; i < req->n_resource_profiles && err == PG_ERR_OK; i++) {
        struct pg_otlp_resprof *rp = req->resource_profiles[i];
        if (rp->resource != NULL) {
            err = resolve_kvs(&r, rp->resource->attributes, rp->resource->n_attributes);
        }
        for (size_t s = 0; s < rp->n_scope_profiles && err == PG_ERR_OK; s++) {
            struct pg_otlp_scope *sc = rp->scope_profiles[s]->scope;
            if (sc != NULL) {
                err = resolve_kvs(&r, sc->attributes, sc->n_attributes);
            }
        }
    }
    if (with_dictionary && req->dictionary != NULL) {
        for (size_t i = 0; i < req->dictionary->n_attribute_table && err == PG_ERR_OK; i++) {
            const struct pg_otlp_kvu *kvu = req->dictionary->attribute_table[i];
            if (kvu != NULL) {
                err = resolve_value(&r, kvu->value);
            }
        }
    }
    if (resolved != NULL) {
        *resolved += r.n;
    }
    return err;
}
