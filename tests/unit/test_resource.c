/* SPDX-License-Identifier: Apache-2.0
 * The resource processor: every collector action (insert, update, upsert,
 * delete, hash, extract) with value / from_attribute / from_context, the
 * pattern forms, and the config checks. */
#include <stdbool.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "pipeline/component.h"
#include "core/config.h"
#include "pg_test.h"
#include "pg_test_processor.h"

extern const struct pg_component_ops pg_processor_resource;

static void setup(struct pg_proc_fixture *f, const char *yaml)
{
    pg_proc_setup(f, &pg_processor_resource, yaml);
}

static void add_attr(struct pg_arena *a, struct pg_otlp_resource *r, const char *k, const char *v)
{
    struct pg_otlp_kv **arr = pg_arena_calloc(a, r->n_attributes + 1, sizeof(*arr));
    struct pg_otlp_kv *kv = pg_arena_zalloc(a, sizeof(*kv));

    opentelemetry__proto__common__v1__key_value__init(kv);
    kv->key = pg_arena_strdup(a, k);
    kv->value = pg_arena_zalloc(a, sizeof(*kv->value));
    opentelemetry__proto__common__v1__any_value__init(kv->value);
    kv->value->value_case = PG_OTLP_ANYVALUE_STR;
    kv->value->string_value = pg_arena_strdup(a, v);
    if (r->n_attributes) {
        memcpy(arr, r->attributes, r->n_attributes * sizeof(*arr));
    }
    arr[r->n_attributes++] = kv;
    r->attributes = arr;
}

static struct pg_batch *mk_batch(void)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = pg_arena_zalloc(a, sizeof(*req));
    struct pg_otlp_resprof *rp = pg_arena_zalloc(a, sizeof(*rp));
    struct pg_otlp_resource *r = pg_arena_zalloc(a, sizeof(*r));
    struct pg_batch *b;

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        req);
    opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
    opentelemetry__proto__resource__v1__resource__init(r);
    add_attr(a, r, "service.name", "cart");
    add_attr(a, r, "path", "/srv/team-a/cart");
    add_attr(a, r, "user.email", "bob@example.com");
    add_attr(a, r, "secret.token", "abc");
    rp->resource = r;
    req->n_resource_profiles = 1;
    req->resource_profiles = pg_arena_calloc(a, 1, sizeof(*req->resource_profiles));
    req->resource_profiles[0] = rp;
    b = pg_batch_new(a, req);
    b->metadata.entries = pg_arena_calloc(a, 3, sizeof(struct pg_metadata_entry));
    b->metadata.entries[0].key = "x-tenant";
    b->metadata.entries[0].value = "t1";
    b->metadata.entries[1].key = "x-tenant";
    b->metadata.entries[1].value = "t2";
    b->metadata.entries[2].key = "x-pod";
    b->metadata.entries[2].value = "pod-7";
    b->metadata.n = 3;
    return b;
}

static const struct pg_otlp_anyvalue *attr(const struct pg_batch *b, const char *key)
{
    const struct pg_otlp_resource *r = b->req->resource_profiles[0]->resource;

    for (size_t i = 0; i < r->n_attributes; i++) {
        if (strcmp(r->attributes[i]->key, key) == 0) {
            return r->attributes[i]->value;
        }
    }
    return NULL;
}

static const char *str(const struct pg_batch *b, const char *key)
{
    const struct pg_otlp_anyvalue *v = attr(b, key);

    return v && v->value_case == PG_OTLP_ANYVALUE_STR ? v->string_value : NULL;
}

PG_TEST(actions)
{
    struct pg_proc_fixture f;
    struct pg_batch *b = mk_batch();
    struct pg_status st;
    const struct pg_otlp_anyvalue *v;

    setup(&f, "processors:\n"
              "  resource:\n"
              "    attributes:\n"
              "      - {key: service.name, value: other, action: insert}\n"
              "      - {key: deployment.environment, value: prod, action: insert}\n"
              "      - {key: missing, value: x, action: update}\n"
              "      - {key: path, value: /new, action: update}\n"
              "      - {key: replicas, value: 3, action: upsert}\n"
              "      - {key: ratio, value: 0.5, action: upsert}\n"
              "      - {key: canary, value: true, action: upsert}\n"
              "      - {key: quoted, value: \"3\", action: upsert}\n"
              "      - {key: svc.copy, from_attribute: service.name, action: upsert}\n"
              "      - {key: nothing, from_attribute: absent, action: upsert}\n"
              "      - {key: k8s.pod.name, from_context: metadata.x-pod, action: upsert}\n"
              "      - {key: tenant, from_context: x-tenant, action: upsert}\n"
              "      - {key: user.email, action: hash}\n"
              "      - {pattern: ^secret\\., action: delete}\n"
              "      - key: path\n"
              "        pattern: ^/(?P<root>[^/]+)/(?P<team>[^/]+)\n"
              "        action: extract\n");
    CHECK_INT(f.err, PG_ERR_OK);
    for (size_t i = 0; i < f.cfg->diag.n; i++) {
        fprintf(stderr, "  %s\n", f.cfg->diag.msgs[i]);
    }
    if (f.state == NULL) {
        pg_batch_unref(b);
        pg_proc_teardown(&f);
        return;
    }
    pg_status_clear(&st);
    CHECK_INT(pg_processor_resource.process(f.state, &b, &st), PG_ERR_OK);
    CHECK_STR(str(b, "service.name"), "cart");
    CHECK_STR(str(b, "deployment.environment"), "prod");
    CHECK(attr(b, "missing") == NULL);
    CHECK_STR(str(b, "path"), "/new");
    v = attr(b, "replicas");
    CHECK(v && v->value_case == PG_OTLP_ANYVALUE_INT && v->int_value == 3);
    v = attr(b, "ratio");
    CHECK(v && v->value_case == PG_OTLP_ANYVALUE_DOUBLE && v->double_value == 0.5);
    v = attr(b, "canary");
    CHECK(v && v->value_case == PG_OTLP_ANYVALUE_BOOL && v->bool_value);
    CHECK_STR(str(b, "quoted"), "3");
    CHECK_STR(str(b, "svc.copy"), "cart");
    CHECK(attr(b, "nothing") == NULL);
    CHECK_STR(str(b, "k8s.pod.name"), "pod-7");
    CHECK_STR(str(b, "tenant"), "t1;t2");
    /* sha256("bob@example.com") */
    CHECK_STR(str(b, "user.email"),
              "5ff860bf1190596c7188ab851db691f0f3169c453936e9e1eba2f9a47f7a0018");
    CHECK(attr(b, "secret.token") == NULL);
    /* extract ran after path was updated to /new: no match, nothing added */
    CHECK(attr(b, "team") == NULL);
    pg_batch_unref(b);
    pg_proc_teardown(&f);
}

PG_TEST(extract)
{
    struct pg_proc_fixture f;
    struct pg_batch *b = mk_batch();
    struct pg_status st;

    setup(&f, "processors:\n"
              "  resource:\n"
              "    attributes:\n"
              "      - key: path\n"
              "        pattern: ^/(?P<root>[^/]+)/(?P<team>[^/]+)\n"
              "        action: extract\n");
    CHECK_INT(f.err, PG_ERR_OK);
    CHECK_INT(pg_processor_resource.process(f.state, &b, &st), PG_ERR_OK);
    CHECK_STR(str(b, "root"), "srv");
    CHECK_STR(str(b, "team"), "team-a");
    CHECK_STR(str(b, "path"), "/srv/team-a/cart");
    pg_batch_unref(b);
    pg_proc_teardown(&f);
}

PG_TEST(config_errors)
{
    static const struct {
        const char *yaml;
        const char *msg;
    } cases[] = {
        {"    attributes: []\n", "at least one action"},
        {"    attributes:\n      - {key: a, value: 1}\n", "action is required"},
        {"    attributes:\n      - {key: a, value: 1, action: smash}\n", "is not one of"},
        {"    attributes:\n      - {key: a, action: convert, converted_type: int}\n",
         "convert is not supported"},
        {"    attributes:\n      - {key: a, action: upsert}\n", "exactly one of"},
        {"    attributes:\n      - {key: a, value: 1, from_attribute: b, action: upsert}\n",
         "exactly one of"},
        {"    attributes:\n      - {value: 1, action: insert}\n", "key is required"},
        {"    attributes:\n      - {action: delete}\n", "either key or pattern"},
        {"    attributes:\n      - {key: a, pattern: \"(\", action: delete}\n",
         "either key or pattern"},
        {"    attributes:\n      - {pattern: \"(\", action: delete}\n", "invalid regular expression"},
        {"    attributes:\n      - {key: a, pattern: \"^a\", action: extract}\n", "named groups"},
        {"    attributes:\n      - {key: a, from_context: auth.sub, action: upsert}\n",
         "auth.* is not supported"},
        {"    attributes:\n      - {key: a, value: 1, action: upsert, colour: red}\n",
         "unknown key \"colour\""},
        {"    attributes:\n      - {key: a, value: 1, action: delete}\n", "takes no value"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[512];
        struct pg_proc_fixture f;
        bool found = false;

        snprintf(yaml, sizeof(yaml), "processors:\n  resource:\n%s", cases[i].yaml);
        setup(&f, yaml);
        CHECK_INT(f.err, PG_ERR_CONFIG);
        for (size_t k = 0; k < f.cfg->diag.n; k++) {
            found = found || strstr(f.cfg->diag.msgs[k], cases[i].msg) != NULL;
        }
        if (!found) {
            fprintf(stderr, "  case %zu: no diag with \"%s\"\n", i, cases[i].msg);
            for (size_t k = 0; k < f.cfg->diag.n; k++) {
                fprintf(stderr, "    %s\n", f.cfg->diag.msgs[k]);
            }
            pg_test_failures_++;
        }
        pg_proc_teardown(&f);
    }
}

PG_TEST_MAIN(PG_CASE(actions), PG_CASE(extract), PG_CASE(config_errors))
