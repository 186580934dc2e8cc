/* SPDX-License-Identifier: Apache-2.0
 * service.name is never missing: the fallback order (existing value, the
 * receiver's default_service_name, unknown_service:<main mapping basename>,
 * unknown_service) and the counter. */
#include <stdbool.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "core/metrics.h"
#include "pipeline/service_name.h"
#include "pg_test.h"

/* @name: existing service.name or NULL; @file: mapping_table[1] filename or
 * NULL (then no mapping). */
static struct pg_batch *mk_batch(const char *name, const char *file, bool with_resource)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = pg_arena_zalloc(a, sizeof(*req));
    struct pg_otlp_resprof *rp = pg_arena_zalloc(a, sizeof(*rp));
    struct pg_otlp_dict *d = pg_arena_zalloc(a, sizeof(*d));

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        req);
    opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
    opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
    if (with_resource) {
        rp->resource = pg_arena_zalloc(a, sizeof(*rp->resource));
        opentelemetry__proto__resource__v1__resource__init(rp->resource);
    }
    if (name != NULL) {
        struct pg_otlp_kv *kv = pg_arena_zalloc(a, sizeof(*kv));
        opentelemetry__proto__common__v1__key_value__init(kv);
        kv->key = "service.name";
        kv->value = pg_arena_zalloc(a, sizeof(*kv->value));
        opentelemetry__proto__common__v1__any_value__init(kv->value);
        kv->value->value_case = PG_OTLP_ANYVALUE_STR;
        kv->value->string_value = pg_arena_strdup(a, name);
        rp->resource->attributes = pg_arena_calloc(a, 1, sizeof(kv));
        rp->resource->attributes[0] = kv;
        rp->resource->n_attributes = 1;
    }
    d->string_table = pg_arena_calloc(a, 2, sizeof(char *));
    d->string_table[0] = "";
    d->string_table[1] = (char *)(file ? file : "");
    d->n_string_table = 2;
    if (file != NULL) {
        d->mapping_table = pg_arena_calloc(a, 2, sizeof(struct pg_otlp_mapping *));
        for (int i = 0; i < 2; i++) {
            d->mapping_table[i] = pg_arena_zalloc(a, sizeof(struct pg_otlp_mapping));
            opentelemetry__proto__profiles__v1development__mapping__init(d->mapping_table[i]);
        }
        d->mapping_table[1]->filename_strindex = 1;
        d->n_mapping_table = 2;
    }
    req->dictionary = d;
    req->resource_profiles = pg_arena_calloc(a, 1, sizeof(rp));
    req->resource_profiles[0] = rp;
    req->n_resource_profiles = 1;
    return pg_batch_new(a, req);
}

static const char *service_name(const struct pg_batch *b)
{
    const struct pg_otlp_resource *r = b->req->resource_profiles[0]->resource;

    for (size_t i = 0; r != NULL && i < r->n_attributes; i++) {
        if (strcmp(r->attributes[i]->key, "service.name") == 0) {
            return r->attributes[i]->value->string_value;
        }
    }
    return NULL;
}

PG_TEST(fallback_order)
{
    static const struct {
        const char *name;
        const char *file;
        bool with_resource;
        const char *def;
        const char *want;
        bool set;
    } cases[] = {
        {"cart-svc", "/usr/bin/app", true, "dflt", "cart-svc", false},
        {NULL, "/usr/bin/app", true, "dflt", "dflt", true},
        {NULL, "/usr/local/bin/cart-svc", true, NULL, "unknown_service:cart-svc", true},
        {NULL, "cart-svc", false, NULL, "unknown_service:cart-svc", true},
        {NULL, "/usr/bin/", true, NULL, "unknown_service", true},
        {NULL, NULL, true, NULL, "unknown_service", true},
        {NULL, NULL, false, "", "unknown_service", true},
        {"", "/bin/x", true, NULL, "unknown_service:x", true},
    };
    struct pg_metric *m = pg_metric_counter("test_service_name_fallbacks_total", "test", NULL);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_batch *b = mk_batch(cases[i].name, cases[i].file, cases[i].with_resource);
        int64_t before = pg_metric_value(m);
        bool set;

        b->default_service_name = cases[i].def;
        CHECK(pg_service_name_missing(b) == cases[i].set);
        set = pg_service_name_ensure(b, m);
        if (set != cases[i].set) {
            fprintf(stderr, "  case %zu: set %d\n", i, set);
            pg_test_failures_++;
        }
        CHECK_STR(service_name(b), cases[i].want);
        CHECK_INT(pg_metric_value(m) - before, cases[i].set ? 1 : 0);
        CHECK(!pg_service_name_missing(b));
        /* Idempotent. */
        CHECK(!pg_service_name_ensure(b, m));
        pg_batch_unref(b);
    }
}

PG_TEST_MAIN(PG_CASE(fallback_order))
