/* SPDX-License-Identifier: Apache-2.0
 * The transform processor through its component ops: config binding (flat
 * and grouped profile_statements), compile diagnostics with file:line:col and
 * a caret, error modes (propagate -> PG_ERR_PROCESSING, ignore/silent go on),
 * conditions, and copy-on-write of shared batches. */
#include <stdbool.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "pipeline/component.h"
#include "core/config.h"
#include "pg_test.h"
#include "pg_test_processor.h"
#include "pg_test_diag.h"

extern const struct pg_component_ops pg_processor_transform;

#define SDK_HDR                                                                                    \
    "telemetry.sdk.language=javascript,telemetry.sdk.name=%40coralogix%2Fopentelemetry-"          \
    "profiling,runtime.name=nodejs,runtime.version=v20.20.2,process.pid=21297,deployment."         \
    "environment=prod,service.version=1.2.3,owner=o'brien,service.name=cart-svc,profiler.type="    \
    "wall"

static void setup(struct pg_proc_fixture *f, const char *yaml)
{
    pg_proc_setup(f, &pg_processor_transform, yaml);
}

static struct pg_batch *mk_batch(const char *hdr, int np)
{
    struct pg_arena *a = pg_arena_create(1 << 20);
    struct pg_otlp_request *req = pg_arena_zalloc(a, sizeof(*req));
    struct pg_otlp_resprof *rp = pg_arena_zalloc(a, sizeof(*rp));
    struct pg_otlp_scopeprof *sp = pg_arena_zalloc(a, sizeof(*sp));
    struct pg_otlp_dict *d = pg_arena_zalloc(a, sizeof(*d));
    struct pg_batch *b;

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        req);
    opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
    opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
    opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
    d->n_string_table = 1;
    d->string_table = pg_arena_calloc(a, 1, sizeof(char *));
    d->string_table[0] = pg_arena_strdup(a, "");
    sp->n_profiles = (size_t)np;
    sp->profiles = pg_arena_calloc(a, (size_t)np + 1, sizeof(struct pg_otlp_profile *));
    for (int i = 0; i < np; i++) {
        sp->profiles[i] = pg_arena_zalloc(a, sizeof(struct pg_otlp_profile));
        opentelemetry__proto__profiles__v1development__profile__init(sp->profiles[i]);
        sp->profiles[i]->period = i;
    }
    rp->n_scope_profiles = 1;
    rp->scope_profiles = pg_arena_calloc(a, 1, sizeof(*rp->scope_profiles));
    rp->scope_profiles[0] = sp;
    req->n_resource_profiles = 1;
    req->resource_profiles = pg_arena_calloc(a, 1, sizeof(*req->resource_profiles));
    req->resource_profiles[0] = rp;
    req->dictionary = d;
    b = pg_batch_new(a, req);
    if (hdr != NULL) {
        b->metadata.entries = pg_arena_calloc(a, 1, sizeof(struct pg_metadata_entry));
        b->metadata.entries[0].key = "otel-resource-attributes";
        b->metadata.entries[0].value = pg_arena_strdup(a, hdr);
        b->metadata.n = 1;
    }
    return b;
}

static const char *res_str(const struct pg_batch *b, const char *key)
{
    const struct pg_otlp_resource *r = b->req->resource_profiles[0]->resource;

    for (size_t i = 0; r != NULL && i < r->n_attributes; i++) {
        if (strcmp(r->attributes[i]->key, key) == 0 &&
            r->attributes[i]->value->value_case == PG_OTLP_ANYVALUE_STR) {
            return r->attributes[i]->value->string_value;
        }
    }
    return NULL;
}

static size_t res_count(const struct pg_batch *b)
{
    const struct pg_otlp_resource *r = b->req->resource_profiles[0]->resource;

    return r ? r->n_attributes : 0;
}

PG_TEST(default_config_statement)
{
    struct pg_proc_fixture f;
    struct pg_batch *b = mk_batch(SDK_HDR, 2);
    struct pg_status st;

    setup(&f, "processors:\n"
              "  transform:\n"
              "    error_mode: ignore\n"
              "    profile_statements:\n"
              "      - merge_maps(resource.attributes, "
              "ParseResourceAttributes(metadata[\"otel-resource-attributes\"]), \"upsert\")\n");
    CHECK_INT(f.err, PG_ERR_OK);
    CHECK_INT(f.cfg->diag.n, 0);
    pg_status_clear(&st);
    CHECK_INT(pg_processor_transform.process(f.state, &b, &st), PG_ERR_OK);
    CHECK_INT(res_count(b), 10);
    CHECK_STR(res_str(b, "service.name"), "cart-svc");
    CHECK_STR(res_str(b, "telemetry.sdk.name"), "@coralogix/opentelemetry-profiling");
    CHECK_STR(res_str(b, "owner"), "o'brien");
    pg_batch_unref(b);
    pg_proc_teardown(&f);
}

PG_TEST(error_modes)
{
    /* The last row leaves error_mode out: the collector's default, propagate. */
    static const char *const modes[] = {"error_mode: ignore", "error_mode: silent",
                                        "error_mode: propagate", "# error_mode: (default)"};

    for (int m = 0; m < 4; m++) {
        char yaml[1024];
        struct pg_proc_fixture f;
        struct pg_batch *b = mk_batch(SDK_HDR, 1);
        struct pg_status st;
        enum pg_err err;

        snprintf(yaml, sizeof(yaml),
                 "processors:\n"
                 "  transform:\n"
                 "    %s\n"
                 "    profile_statements:\n"
                 "      - set(resource.attributes, ParseKeyValue(metadata[\"otel-resource-"
                 "attributes\"], \"=\", \",\"))\n"
                 "      - set(resource.attributes[\"after\"], \"ran\")\n",
                 modes[m]);
        setup(&f, yaml);
        CHECK_INT(f.err, PG_ERR_OK);
        pg_status_clear(&st);
        err = pg_processor_transform.process(f.state, &b, &st);
        if (m < 2) {
            CHECK_INT(err, PG_ERR_OK);
            CHECK_STR(res_str(b, "after"), "ran"); /* the next statement still runs */
            CHECK(res_str(b, "service.name") == NULL);
        } else {
            CHECK_INT(err, PG_ERR_PROCESSING);
            CHECK(strstr(st.msg, "failed to execute statement: set(resource.attributes") != NULL);
            CHECK(strstr(st.msg, "never reached the end of a quoted value") != NULL);
        }
        pg_batch_unref(b);
        pg_proc_teardown(&f);
    }
}

PG_TEST(groups_contexts_conditions)
{
    struct pg_proc_fixture f;
    struct pg_batch *b = mk_batch("service.name=x,tier=gold", 3);
    struct pg_status st;
    const struct pg_otlp_scopeprof *sp;

    setup(&f, "processors:\n"
              "  transform:\n"
              "    error_mode: propagate\n"
              "    profile_statements:\n"
              "      - context: resource\n"
              "        statements:\n"
              "          - merge_maps(attributes, "
              "ParseResourceAttributes(metadata[\"otel-resource-attributes\"]), \"upsert\")\n"
              "      - context: resource\n"
              "        conditions:\n"
              "          - attributes[\"tier\"] == \"silver\"\n"
              "        statements:\n"
              "          - set(attributes[\"never\"], true)\n"
              "      - context: profile\n"
              "        conditions:\n"
              "          - period == 1\n"
              "          - period == 2\n"
              "        statements:\n"
              "          - set(dropped_attributes_count, 7)\n"
              "      - statements:\n"
              "          - set(scope.name, \"renamed\") where resource.attributes[\"tier\"] == "
              "\"gold\"\n"
              "      - context: resource\n"
              "        error_mode: ignore\n"
              "        statements:\n"
              "          - set(attributes[\"x\"], ToUpperCase(attributes[\"missing\"]))\n");
    CHECK_INT(f.err, PG_ERR_OK);
    if (f.err != PG_ERR_OK) {
        pg_test_diag_has(&f.cfg->diag, "(none)");
        pg_proc_teardown(&f);
        pg_batch_unref(b);
        return;
    }
    pg_status_clear(&st);
    CHECK_INT(pg_processor_transform.process(f.state, &b, &st), PG_ERR_OK);
    CHECK_STR(res_str(b, "tier"), "gold");
    CHECK(res_str(b, "never") == NULL);
    sp = b->req->resource_profiles[0]->scope_profiles[0];
    CHECK_INT(sp->profiles[0]->dropped_attributes_count, 0);
    CHECK_INT(sp->profiles[1]->dropped_attributes_count, 7);
    CHECK_INT(sp->profiles[2]->dropped_attributes_count, 7);
    CHECK(sp->scope != NULL && strcmp(sp->scope->name, "renamed") == 0);
    pg_batch_unref(b);
    pg_proc_teardown(&f);
}

PG_TEST(compile_diagnostics)
{
    struct pg_proc_fixture f;

    /* Column: the scalar starts at col 9 of line 5; the bad token is 13 in. */
    setup(&f, "processors:\n"
              "  transform:\n"
              "    profile_statements:\n"
              "      - set(resource.attributes[\"a\"], \"b\")\n"
              "      - set(resource.nope, 1)\n"
              "      - context: galaxy\n"
              "        statements: ['set(attributes[\"a\"], 1)']\n"
              "      - context: resource\n"
              "        statement: [oops]\n"
              "      - context: resource\n"
              "        conditions: ['attributes[\"a\"] ==']\n"
              "        statements: ['set(attributes[\"a\"], 1)']\n");
    CHECK_INT(f.err, PG_ERR_CONFIG);
    CHECK(f.state == NULL);
    CHECK(pg_test_diag_has(&f.cfg->diag, "test.yaml:5:13: processors::transform: invalid statement: unknown "
                          "path 'resource.nope'\n"
                          "    set(resource.nope, 1)\n"
                          "        ^"));
    CHECK(pg_test_diag_has(&f.cfg->diag, "test.yaml:6:18: processors::transform: context: \"galaxy\" is not one "
                          "of resource, scope, profile"));
    CHECK(pg_test_diag_has(&f.cfg->diag, "unknown key \"statement\""));
    CHECK(pg_test_diag_has(&f.cfg->diag, "invalid condition: expected a value, found end of statement\n"
                          "    attributes[\"a\"] ==\n"
                          "                      ^"));
    pg_proc_teardown(&f);

    setup(&f, "processors:\n"
              "  transform:\n"
              "    error_mode: loud\n");
    CHECK_INT(f.err, PG_ERR_CONFIG);
    CHECK(pg_test_diag_has(&f.cfg->diag, "\"loud\" is not one of: ignore, silent, propagate"));
    pg_proc_teardown(&f);

    /* Quoted scalar: the column still lands on the token. */
    setup(&f, "processors:\n"
              "  transform:\n"
              "    profile_statements: [\"set(resource.attributes[1], 2)\"]\n");
    CHECK_INT(f.err, PG_ERR_CONFIG);
    CHECK(pg_test_diag_has(&f.cfg->diag, "test.yaml:3:51: processors::transform: invalid statement:"));
    pg_proc_teardown(&f);
}

PG_TEST(empty_and_collector_keys)
{
    struct pg_proc_fixture f;
    struct pg_batch *b = mk_batch(NULL, 1);
    struct pg_batch *keep = pg_batch_ref(b);
    struct pg_status st;

    setup(&f, "processors:\n"
              "  transform:\n"
              "    trace_statements: [\"set(span.name, \\\"x\\\")\"]\n");
    CHECK_INT(f.err, PG_ERR_OK);
    CHECK_INT(pg_processor_transform.process(f.state, &b, &st), PG_ERR_OK);
    CHECK(b == keep); /* nothing to do: no copy */
    pg_proc_teardown(&f);
    pg_batch_unref(keep);

    /* Shared batch: the processor works on a copy, the original is untouched. */
    setup(&f, "processors:\n"
              "  transform:\n"
              "    profile_statements: ['set(resource.attributes[\"k\"], \"v\")']\n");
    keep = pg_batch_ref(b);
    CHECK_INT(pg_processor_transform.process(f.state, &b, &st), PG_ERR_OK);
    CHECK(b != keep);
    CHECK_STR(res_str(b, "k"), "v");
    CHECK(res_str(keep, "k") == NULL);
    pg_batch_unref(keep);
    pg_batch_unref(b);
    pg_proc_teardown(&f);
}

/* The SDK README's ParseKeyValue recipe under error_mode: propagate loads,
 * with a warning that names the safer function; ignore, or a group's own
 * ignore, or ParseResourceAttributes, draw none. */
PG_TEST(parse_key_value_propagate_warns)
{
    static const struct {
        const char *yaml;
        size_t warnings;
    } cases[] = {
        {"processors:\n  transform:\n    profile_statements:\n"
         "      - merge_maps(resource.attributes, ParseKeyValue(metadata[\"otel-resource-attributes\"], "
         "\"=\", \",\"), \"upsert\")\n",
         1},
        {"processors:\n  transform:\n    error_mode: ignore\n    profile_statements:\n"
         "      - merge_maps(resource.attributes, ParseKeyValue(metadata[\"otel-resource-attributes\"], "
         "\"=\", \",\"), \"upsert\")\n",
         0},
        {"processors:\n  transform:\n    profile_statements:\n      - error_mode: ignore\n"
         "        statements: ['merge_maps(resource.attributes, ParseKeyValue(metadata[\"Otel-Resource-"
         "Attributes\"]), \"upsert\")']\n",
         0},
        {"processors:\n  transform:\n    profile_statements:\n"
         "      - merge_maps(resource.attributes, ParseResourceAttributes(metadata[\"otel-resource-"
         "attributes\"]), \"upsert\")\n",
         0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_proc_fixture f;
        setup(&f, cases[i].yaml);
        CHECK_INT(f.err, PG_ERR_OK);
        CHECK_INT(f.cfg->diag.n_warn, cases[i].warnings);
        if (cases[i].warnings > 0) {
            CHECK(strstr(f.cfg->diag.all[0].text, "test.yaml:4:9: processors::transform: warning: "
                                                  "ParseKeyValue(") != NULL);
            CHECK(strstr(f.cfg->diag.all[0].text, "use ParseResourceAttributes") != NULL);
        }
        pg_proc_teardown(&f);
    }
}

PG_TEST(arena_cap_is_not_ignored)
{
    struct pg_proc_fixture f;
    struct pg_batch *b = mk_batch(NULL, 1);
    struct pg_status st;
    struct pg_arena *tiny;

    setup(&f, "processors:\n"
              "  transform:\n"
              "    error_mode: ignore\n"
              "    profile_statements:\n"
              "      - set(resource.attributes[\"k\"], Concat([\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", "
              "\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"], \"\"))\n");
    CHECK_INT(f.err, PG_ERR_OK);
    /* Swap in an arena that is already full. */
    tiny = pg_arena_create(64);
    (void)pg_arena_alloc(tiny, 48);
    {
        struct pg_arena *orig = b->arena;
        b->arena = tiny;
        CHECK_INT(pg_processor_transform.process(f.state, &b, &st), PG_ERR_LIMIT);
        b->arena = orig;
    }
    pg_arena_destroy(tiny);
    pg_batch_unref(b);
    pg_proc_teardown(&f);
}

PG_TEST_MAIN(PG_CASE(default_config_statement), PG_CASE(error_modes),
             PG_CASE(parse_key_value_propagate_warns),
             PG_CASE(groups_contexts_conditions), PG_CASE(compile_diagnostics),
             PG_CASE(empty_and_collector_keys), PG_CASE(arena_cap_is_not_ignored))
