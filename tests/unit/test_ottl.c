/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite: compile errors (message + column) for the parser, every editor
 * and converter, conditions, contexts and dictionary interning, on batches
 * built by hand (arena + protobuf-c structs). */
#include <stdbool.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "processor/ottl.h"
#include "pg_test.h"

#define SDK_HDR                                                                                    \
    "telemetry.sdk.language=javascript,telemetry.sdk.name=%40coralogix%2Fopentelemetry-"          \
    "profiling,runtime.name=nodejs,runtime.version=v20.20.2,process.pid=21297,deployment."         \
    "environment=prod,service.version=1.2.3,owner=o'brien,service.name=cart-svc,profiler.type="    \
    "wall"

/* ---- a hand-built batch ---------------------------------------------- */

static char *dupz(struct pg_arena *a, const char *s)
{
    return pg_arena_strdup(a, s);
}

/* One resource (no attributes), one scope, @np profiles sharing a dictionary
 * whose attribute 1 is pprof.profile.doc_url="" (on every profile). */
static struct pg_batch *mk_batch(const char *hdr, int np)
{
    static const char *const strs[] = {"", "samples", "count", "pprof.profile.doc_url",
                                       "/usr/local/bin/cart-svc"};
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = pg_arena_zalloc(a, sizeof(*req));
    struct pg_otlp_dict *d = pg_arena_zalloc(a, sizeof(*d));
    struct pg_otlp_resprof *rp = pg_arena_zalloc(a, sizeof(*rp));
    struct pg_otlp_scopeprof *sp = pg_arena_zalloc(a, sizeof(*sp));
    struct pg_otlp_scope *scope = pg_arena_zalloc(a, sizeof(*scope));
    struct pg_batch *b;

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        req);
    opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
    opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
    opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
    opentelemetry__proto__common__v1__instrumentation_scope__init(scope);
    d->n_string_table = 5;
    d->string_table = pg_arena_calloc(a, 5, sizeof(char *));
    for (int i = 0; i < 5; i++) {
        d->string_table[i] = dupz(a, strs[i]);
    }
    d->n_attribute_table = 2;
    d->attribute_table = pg_arena_calloc(a, 2, sizeof(struct pg_otlp_kvu *));
    for (int i = 0; i < 2; i++) {
        struct pg_otlp_kvu *k = pg_arena_zalloc(a, sizeof(*k));
        opentelemetry__proto__profiles__v1development__key_value_and_unit__init(k);
        if (i == 1) {
            k->key_strindex = 3;
            k->value = pg_arena_zalloc(a, sizeof(struct pg_otlp_anyvalue));
            opentelemetry__proto__common__v1__any_value__init(k->value);
            k->value->value_case = PG_OTLP_ANYVALUE_STR;
            k->value->string_value = dupz(a, "");
        }
        d->attribute_table[i] = k;
    }
    d->n_mapping_table = 2;
    d->mapping_table = pg_arena_calloc(a, 2, sizeof(struct pg_otlp_mapping *));
    for (int i = 0; i < 2; i++) {
        d->mapping_table[i] = pg_arena_zalloc(a, sizeof(struct pg_otlp_mapping));
        opentelemetry__proto__profiles__v1development__mapping__init(d->mapping_table[i]);
    }
    d->mapping_table[1]->filename_strindex = 4;
    scope->name = dupz(a, "pprofreceiver");
    scope->version = dupz(a, "0.1.0");
    sp->scope = scope;
    sp->n_profiles = (size_t)np;
    sp->profiles = pg_arena_calloc(a, (size_t)np + 1, sizeof(struct pg_otlp_profile *));
    for (int i = 0; i < np; i++) {
        struct pg_otlp_profile *p = pg_arena_zalloc(a, sizeof(*p));
        opentelemetry__proto__profiles__v1development__profile__init(p);
        p->sample_type = pg_arena_zalloc(a, sizeof(pg_otlp_valuetype));
        opentelemetry__proto__profiles__v1development__value_type__init(p->sample_type);
        p->sample_type->type_strindex = 1;
        p->sample_type->unit_strindex = 2;
        p->period = 10 + i;
        p->duration_nano = 1000;
        p->n_attribute_indices = 1;
        p->attribute_indices = pg_arena_calloc(a, 1, sizeof(int32_t));
        p->attribute_indices[0] = 1;
        sp->profiles[i] = p;
    }
    rp->n_scope_profiles = 1;
    rp->scope_profiles = pg_arena_calloc(a, 1, sizeof(*rp->scope_profiles));
    rp->scope_profiles[0] = sp;
    req->n_resource_profiles = 1;
    req->resource_profiles = pg_arena_calloc(a, 1, sizeof(*req->resource_profiles));
    req->resource_profiles[0] = rp;
    req->dictionary = d;
    b = pg_batch_new(a, req);
    b->metadata.entries = pg_arena_calloc(a, 4, sizeof(struct pg_metadata_entry));
    b->metadata.entries[0].key = "host";
    b->metadata.entries[0].value = "127.0.0.1:4040";
    b->metadata.entries[1].key = "x-multi";
    b->metadata.entries[1].value = "first";
    b->metadata.entries[2].key = "x-multi";
    b->metadata.entries[2].value = "second";
    b->metadata.n = 3;
    if (hdr != NULL) {
        b->metadata.entries[3].key = "otel-resource-attributes";
        b->metadata.entries[3].value = dupz(a, hdr);
        b->metadata.n = 4;
    }
    b->metadata.peer_addr = "127.0.0.1:5555";
    return b;
}

static const struct pg_otlp_anyvalue *res_attr(const struct pg_batch *b, const char *key)
{
    const struct pg_otlp_resource *r = b->req->resource_profiles[0]->resource;

    for (size_t i = 0; r != NULL && i < r->n_attributes; i++) {
        if (strcmp(r->attributes[i]->key, key) == 0) {
            return r->attributes[i]->value;
        }
    }
    return NULL;
}

static const char *res_str(const struct pg_batch *b, const char *key)
{
    const struct pg_otlp_anyvalue *v = res_attr(b, key);

    return v && v->value_case == PG_OTLP_ANYVALUE_STR ? v->string_value : NULL;
}

static size_t res_count(const struct pg_batch *b)
{
    const struct pg_otlp_resource *r = b->req->resource_profiles[0]->resource;

    return r ? r->n_attributes : 0;
}

/* Profile @pi's attribute @key as a string (via the dictionary). */
static const char *prof_str(const struct pg_batch *b, int pi, const char *key)
{
    const struct pg_otlp_profile *p = b->req->resource_profiles[0]->scope_profiles[0]->profiles[pi];
    const struct pg_otlp_dict *d = b->req->dictionary;

    for (size_t i = 0; i < p->n_attribute_indices; i++) {
        const struct pg_otlp_kvu *k = d->attribute_table[p->attribute_indices[i]];
        if (strcmp(d->string_table[k->key_strindex], key) == 0) {
            return k->value->value_case == PG_OTLP_ANYVALUE_STR ? k->value->string_value : "?";
        }
    }
    return NULL;
}

/* Compiles @text (inferred context) and runs it at its context over @b. */
static enum pg_err run(struct pg_batch *b, const char *text, struct pg_status *st)
{
    struct pg_arena *ca = pg_arena_create(0);
    struct pg_ottl_error e;
    struct pg_ottl_stmt *s = pg_ottl_compile(ca, text, PG_OTTL_CTX_INFER, &e);
    struct pg_ottl_env env;
    enum pg_err err = PG_ERR_OK;
    struct pg_otlp_resprof *rp = b->req->resource_profiles[0];

    pg_status_clear(st);
    if (s == NULL) {
        fprintf(stderr, "  compile failed: %s: %s (col %d)\n", text, e.msg, e.col);
        pg_arena_destroy(ca);
        return PG_ERR_CONFIG;
    }
    pg_ottl_env_init(&env, b);
    env.rp = rp;
    if (pg_ottl_stmt_ctx(s) == PG_OTTL_CTX_RESOURCE) {
        err = pg_ottl_exec(s, &env, st);
    } else {
        env.sp = rp->scope_profiles[0];
        if (pg_ottl_stmt_ctx(s) == PG_OTTL_CTX_SCOPE) {
            err = pg_ottl_exec(s, &env, st);
        }
        for (size_t i = 0; pg_ottl_stmt_ctx(s) == PG_OTTL_CTX_PROFILE && i < env.sp->n_profiles &&
                           err == PG_ERR_OK;
             i++) {
            env.p = env.sp->profiles[i];
            err = pg_ottl_exec(s, &env, st);
        }
    }
    pg_arena_destroy(ca);
    return err;
}

static void run_ok(struct pg_batch *b, const char *text)
{
    struct pg_status st;
    enum pg_err err = run(b, text, &st);

    if (err != PG_ERR_OK) {
        fprintf(stderr, "  %s: error %d: %s\n", text, err, st.msg);
        pg_test_failures_++;
    }
}

/* ---- compile errors -------------------------------------------------- */

struct cerr_case {
    const char *text;
    int ctx; /* -1 infer */
    int col;
    const char *msg; /* substring */
};

static const struct cerr_case cerr_cases[] = {
    {"", -1, 0, "empty statement"},
    {"set(resource.attributes[\"a\"], \"b\"", -1, 33, "expected ',' or ')'"},
    {"sett(resource.attributes, {})", -1, 0, "unknown function 'sett' (did you mean set?)"},
    {"merge_maps(resource.attributes, ParseResourceAttribute(metadata[\"x\"]), \"upsert\")", -1,
     32, "(did you mean ParseResourceAttributes?)"},
    {"set(resource.attributes[\"a\"], Frobnicate())", -1, 30, "unknown function 'Frobnicate'"},
    {"set(attributes[\"a\"], 1)", -1, 4, "no context prefix"},
    {"set(resource.foo, 1)", -1, 4, "unknown path 'resource.foo'"},
    {"set(resource.attributes[\"a\"], \"b\") where", -1, 40, "expected a value"},
    {"delete_matching_keys(resource.attributes, \"a(b\")", -1, 46, "invalid regular expression"},
    {"merge_maps(resource.attributes, ParseKeyValue(metadata[\"x\"]), \"merge\")", -1, 62,
     "strategy must be"},
    {"set(resource.attributes, ParseKeyValue(otelcol.client.metadata[\"x\"], \"=\", \",\"))", -1,
     39, "take one value with [0]"},
    {"ParseKeyValue(metadata[\"x\"])", -1, 0, "is a converter"},
    {"set(resource.attributes[\"a\"], delete_key(resource.attributes, \"x\"))", -1, 30,
     "is an editor"},
    {"set(resource.attributes[\"a\"], \"x\\q\")", -1, 32, "unknown escape \\q"},
    {"set(resource.attributes[\"a\"], \"x)", -1, 30, "unterminated string"},
    {"set(metadata[\"a\"], \"x\")", -1, 4, "must be a settable path"},
    {"set(profile.period, \"x\")", -1, 20, "takes an integer"},
    {"set(resource.attributes, \"x\")", -1, 25, "can only be set to a map"},
    {"set(resource.attributes[\"a\"], \"b\") where resource.attributes[\"a\"]", -1, 41,
     "expected a condition"},
    {"limit(resource.attributes, 1, [\"a\", \"b\"])", -1, 27, "number of priority keys"},
    {"limit(resource.attributes, 0)", -1, 27, "less than 1"},
    {"set(resource.attributes, ParseKeyValue(metadata[\"x\"], \",\", \",\"))", -1, 59,
     "cannot be equal"},
    {"set(resource.attributes, ParseKeyValue(metadata[\"x\"], \"\"))", -1, 54, "empty string"},
    {"set(resource.attributes[\"a\"], 1) extra", -1, 33, "unexpected 'extra'"},
    {"set(profile.period, 1)", 0, 4, "not available in context resource"},
    {"set(resource.attributes[\"a\"], 99999999999999999999)", -1, 30, "out of range"},
    {"set(resource.attributes[\"a\"], ParseKeyValue(metadata[\"x\"], nope=\"=\"))", -1, 59,
     "no parameter 'nope'"},
    {"set(resource.attributes[\"a\"], IsMatch(\"x\", metadata[\"p\"]))", -1, 43,
     "must be a string literal"},
    {"set(metadata, 1)", -1, 4, "needs a header name key"},
    {"keep_keys(resource.attributes, [\"a\", 1])", -1, 37, "keys must be strings"},
    {"set(resource.attributes[\"a\"], 1) where 1 == 1 and", -1, 49, "expected a value"},
    {"set(resource.attributes[\"a\"], 1) where (1 == 1", -1, 46, "expected ')'"},
    {"set(resource.attributes[\"a\"], 1) where 1 = 1", -1, 39, "expected a condition"},
    {"set(resource.attributes[\"a\"][\"b\"], 1)", -1, 29, "nested keys"},
    {"set(scope.name, \"x\") where $x", -1, 27, "unexpected character '$'"},
    {"set(profile.period[0], 1)", -1, 18, "cannot be indexed"},
    {"merge_maps(resource.attributes, \"x\", \"upsert\")", -1, 32, "source must be a map"},
};

PG_TEST(compile_errors)
{
    for (size_t i = 0; i < sizeof(cerr_cases) / sizeof(cerr_cases[0]); i++) {
        const struct cerr_case *c = &cerr_cases[i];
        struct pg_arena *a = pg_arena_create(0);
        struct pg_ottl_error e;
        struct pg_ottl_stmt *s = pg_ottl_compile(a, c->text, (enum pg_ottl_ctx)c->ctx, &e);

        if (s != NULL) {
            fprintf(stderr, "  compiled, want error: %s\n", c->text);
            pg_test_failures_++;
        } else if (e.col != c->col || strstr(e.msg, c->msg) == NULL) {
            fprintf(stderr, "  %s\n    got col %d \"%s\", want col %d \"%s\"\n", c->text, e.col,
                    e.msg, c->col, c->msg);
            pg_test_failures_++;
        }
        pg_arena_destroy(a);
    }
}

PG_TEST(compile_contexts)
{
    static const struct {
        const char *text;
        int given;
        int want;
    } cases[] = {
        {"set(resource.attributes[\"a\"], \"b\")", -1, PG_OTTL_CTX_RESOURCE},
        {"set(resource.attributes[\"a\"], metadata[\"x\"])", -1, PG_OTTL_CTX_RESOURCE},
        {"set(scope.name, \"x\")", -1, PG_OTTL_CTX_SCOPE},
        {"set(resource.attributes[\"a\"], \"b\") where profile.period > 1", -1,
         PG_OTTL_CTX_PROFILE},
        {"set(profile.attributes[\"k\"], resource.attributes[\"a\"])", -1, PG_OTTL_CTX_PROFILE},
        {"set(attributes[\"a\"], \"b\")", PG_OTTL_CTX_RESOURCE, PG_OTTL_CTX_RESOURCE},
        {"set(attributes[\"a\"], name)", PG_OTTL_CTX_SCOPE, PG_OTTL_CTX_SCOPE},
        {"set(period, 5) where sample_type.type == \"samples\"", PG_OTTL_CTX_PROFILE,
         PG_OTTL_CTX_PROFILE},
        {"set(resource.attributes[\"a\"], \"b\")", PG_OTTL_CTX_PROFILE, PG_OTTL_CTX_PROFILE},
        {"set(resource.attributes[\"a\"], otelcol.client.metadata[\"x\"][0])", -1,
         PG_OTTL_CTX_RESOURCE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(0);
        struct pg_ottl_error e;
        struct pg_ottl_stmt *s = pg_ottl_compile(a, cases[i].text, cases[i].given, &e);
        CHECK(s != NULL);
        if (s == NULL) {
            fprintf(stderr, "  %s: %s (col %d)\n", cases[i].text, e.msg, e.col);
        } else {
            CHECK_INT(pg_ottl_stmt_ctx(s), cases[i].want);
            CHECK_STR(pg_ottl_stmt_text(s), cases[i].text);
        }
        pg_arena_destroy(a);
    }
}

/* ---- conditions ------------------------------------------------------ */

PG_TEST(conditions)
{
    static const struct {
        const char *text;
        bool want;
    } cases[] = {
        {"1 == 1", true},
        {"1 == 1.0", true},
        {"1 != 2", true},
        {"2 > 1", true},
        {"2 >= 2", true},
        {"1.5 < 2", true},
        {"2 <= 1", false},
        {"\"a\" < \"b\"", true},
        {"\"b\" >= \"a\"", true},
        {"\"a\" == \"a\"", true},
        {"nil == nil", true},
        {"1 == nil", false},
        {"1 != nil", true},
        {"1 < \"a\"", false},
        {"1 == \"1\"", false},
        {"true == true", true},
        {"true", true},
        {"false", false},
        {"not true", false},
        {"not false and false", false},
        {"true and false or true", true},
        {"true or false and false", true},
        {"not (true and false)", true},
        {"(1 == 1) and (2 == 2)", true},
        {"[1, \"a\"] == [1, \"a\"]", true},
        {"[1] == [2]", false},
        {"{\"a\": 1} == {\"a\": 1}", true},
        {"\"tab\\there\" == \"tab\there\"", true},
        {"\"\\u00fc\" == \"\xc3\xbc\"", true},
        {"\"q\\\"q\" == \"q\\x22q\"", true},
        {"-3 < -2", true},
        {"1e3 == 1000", true},
        {"metadata[\"missing\"] == nil", true},
        {"metadata[\"HOST\"] == \"127.0.0.1:4040\"", true},
        {"metadata[\"x-multi\"] == \"first\"", true},
        {"otelcol.client.metadata[\"x-multi\"][1] == \"second\"", true},
        {"otelcol.client.metadata[\"x-multi\"] == [\"first\", \"second\"]", true},
        {"otelcol.client.metadata[\"nope\"] == nil", true},
        {"otelcol.client.addr == \"127.0.0.1:5555\"", true},
        {"IsMatch(metadata[\"host\"], \"^127\\\\.0\")", true},
        {"IsMatch(metadata[\"missing\"], \".*\")", false},
        {"IsMatch(42, \"^4\")", true},
        {"IsMatch(true, \"^tr\")", true},
        {"not IsMatch(\"abc\", \"d\")", true},
        {"Len(Split(\"a,b,c\", \",\")) == 3", true},
        {"Split(\"a,,b\", \",\")[1] == \"\"", true},
        {"Split(\"abc\", \",\") == [\"abc\"]", true},
        {"Len(\"h\xc3\xa9\") == 3", true},
        {"Len({\"a\": 1, \"b\": 2}) == 2", true},
        {"ToUpperCase(\"ab-\xc3\xa9\") == \"AB-\xc3\xa9\"", true},
        {"ToLowerCase(\"AbC\") == \"abc\"", true},
        {"Concat([\"a\", 1, true, nil, 1.5], \"-\") == \"a-1-true--1.5\"", true},
        {"Concat([], \",\") == \"\"", true},
        {"ParseKeyValue(\"a=1 b=2\")[\"b\"] == \"2\"", true},
        {"ParseKeyValue(\"a:1|b:2\", \":\", \"|\")[\"a\"] == \"1\"", true},
        {"ParseKeyValue(target = \"a:1|b:2\", pair_delimiter = \"|\", delimiter = \":\")[\"b\"] == "
         "\"2\"",
         true},
        {"ParseKeyValue(\"a=1\")[\"zzz\"] == nil", true},
        {"ParseResourceAttributes(\"x=%41\")[\"x\"] == \"A\"", true},
        {"Len(ParseResourceAttributes(metadata[\"missing\"])) == 0", true},
        {"Len(ParseResourceAttributes(otelcol.client.metadata[\"x-multi\"])) == 0", true},
        {"ParseResourceAttributes(metadata[\"otel-resource-attributes\"])[\"owner\"] == "
         "\"o'brien\"",
         true},
        {"Len(ParseResourceAttributes(metadata[\"otel-resource-attributes\"])) == 10", true},
    };
    struct pg_batch *b = mk_batch(SDK_HDR, 1);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(0);
        struct pg_ottl_error e;
        struct pg_ottl_cond *c = pg_ottl_compile_condition(a, cases[i].text, PG_OTTL_CTX_INFER, &e);
        struct pg_ottl_env env;
        struct pg_status st;
        bool got = !cases[i].want;

        if (c == NULL) {
            fprintf(stderr, "  %s: compile: %s (col %d)\n", cases[i].text, e.msg, e.col);
            pg_test_failures_++;
            pg_arena_destroy(a);
            continue;
        }
        pg_ottl_env_init(&env, b);
        env.rp = b->req->resource_profiles[0];
        if (pg_ottl_eval_cond(c, &env, &got, &st) != PG_ERR_OK) {
            fprintf(stderr, "  %s: eval: %s\n", cases[i].text, st.msg);
            pg_test_failures_++;
        } else if (got != cases[i].want) {
            fprintf(stderr, "  %s: got %d want %d\n", cases[i].text, got, cases[i].want);
            pg_test_failures_++;
        }
        pg_arena_destroy(a);
    }
    pg_batch_unref(b);
}

PG_TEST(runtime_errors)
{
    static const struct {
        const char *text;
        const char *msg;
    } cases[] = {
        {"set(resource.attributes, ParseKeyValue(metadata[\"otel-resource-attributes\"], \"=\", "
         "\",\"))",
         "never reached the end of a quoted value"},
        {"set(resource.attributes, ParseKeyValue(metadata[\"missing\"], \"=\", \",\"))",
         "expected string but got nil"},
        {"set(resource.attributes, ParseKeyValue(\"\"))", "cannot parse from empty target"},
        {"set(resource.attributes[\"x\"], otelcol.client.metadata[\"x-multi\"][5])",
         "out of range"},
        {"set(resource.attributes[\"x\"], ToUpperCase(metadata[\"missing\"]))",
         "expected string but got nil"},
        {"set(resource.attributes[\"x\"], \"y\") where IsMatch(\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\","
         " \"^(a|aa)+$\")",
         "match limit"},
        {"merge_maps(resource.attributes, resource.attributes[\"nope\"], \"upsert\")",
         "expected map but got nil"},
        {"set(resource.attributes[\"x\"], Len(1))", "expected string, bytes, map or list"},
        {"set(resource.attributes[\"x\"], \"y\") where metadata[\"host\"][0] == 1",
         "cannot index a string"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_batch *b = mk_batch(SDK_HDR, 1);
        struct pg_status st;
        enum pg_err err = run(b, cases[i].text, &st);
        if (err != PG_ERR_PROCESSING || strstr(st.msg, cases[i].msg) == NULL) {
            fprintf(stderr, "  %s\n    got %d \"%s\", want \"%s\"\n", cases[i].text, err, st.msg,
                    cases[i].msg);
            pg_test_failures_++;
        }
        /* A failed statement leaves the resource untouched. */
        CHECK_INT(res_count(b), 0);
        pg_batch_unref(b);
    }
}

/* ---- editors --------------------------------------------------------- */

PG_TEST(set_values)
{
    struct pg_batch *b = mk_batch(SDK_HDR, 1);
    const struct pg_otlp_anyvalue *v;

    run_ok(b, "set(resource.attributes[\"s\"], \"str\")");
    run_ok(b, "set(resource.attributes[\"i\"], 42)");
    run_ok(b, "set(resource.attributes[\"d\"], 2.5)");
    run_ok(b, "set(resource.attributes[\"b\"], true)");
    run_ok(b, "set(resource.attributes[\"l\"], [\"x\", 1])");
    run_ok(b, "set(resource.attributes[\"m\"], {\"k\": \"v\"})");
    run_ok(b, "set(resource.attributes[\"nil\"], nil)");
    run_ok(b, "set(resource.attributes[\"missing\"], metadata[\"nope\"])");
    run_ok(b, "set(resource.attributes[\"host\"], metadata[\"Host\"])");
    run_ok(b, "set(resource.attributes[\"second\"], otelcol.client.metadata[\"x-multi\"][1])");
    run_ok(b, "set(resource.attributes[\"s\"], Concat([resource.attributes[\"s\"], \"2\"], \"\"))");
    CHECK_STR(res_str(b, "s"), "str2");
    v = res_attr(b, "i");
    CHECK(v != NULL && v->value_case == PG_OTLP_ANYVALUE_INT && v->int_value == 42);
    v = res_attr(b, "d");
    CHECK(v != NULL && v->value_case == PG_OTLP_ANYVALUE_DOUBLE && v->double_value == 2.5);
    v = res_attr(b, "b");
    CHECK(v != NULL && v->value_case == PG_OTLP_ANYVALUE_BOOL && v->bool_value);
    v = res_attr(b, "l");
    CHECK(v != NULL && v->value_case == PG_OTLP_ANYVALUE_ARRAY && v->array_value->n_values == 2);
    v = res_attr(b, "m");
    CHECK(v != NULL && v->value_case == PG_OTLP_ANYVALUE_KVLIST &&
          strcmp(v->kvlist_value->values[0]->key, "k") == 0);
    CHECK(res_attr(b, "nil") == NULL);
    CHECK(res_attr(b, "missing") == NULL);
    CHECK_STR(res_str(b, "host"), "127.0.0.1:4040");
    CHECK_STR(res_str(b, "second"), "second");
    CHECK_INT(res_count(b), 8);
    /* Reading nested values back. */
    run_ok(b, "set(resource.attributes[\"mk\"], resource.attributes[\"m\"][\"k\"])");
    run_ok(b, "set(resource.attributes[\"l0\"], resource.attributes[\"l\"][0])");
    CHECK_STR(res_str(b, "mk"), "v");
    CHECK_STR(res_str(b, "l0"), "x");
    /* A whole-map set replaces the map. */
    run_ok(b, "set(resource.attributes, {\"only\": \"one\"})");
    CHECK_INT(res_count(b), 1);
    CHECK_STR(res_str(b, "only"), "one");
    pg_batch_unref(b);
}

PG_TEST(collector_statement_on_clean_header)
{
    /* The client README statement on a header without an apostrophe:
     * attributes arrive, still percent-encoded (collector parity). */
    struct pg_batch *b = mk_batch("service.name=a%20b,telemetry.sdk.name=%40x,team=a%2Cb", 1);

    run_ok(b, "set(resource.attributes, ParseKeyValue(metadata[\"otel-resource-attributes\"], "
              "\"=\", \",\"))");
    CHECK_INT(res_count(b), 3);
    CHECK_STR(res_str(b, "service.name"), "a%20b");
    CHECK_STR(res_str(b, "telemetry.sdk.name"), "%40x");
    CHECK_STR(res_str(b, "team"), "a%2Cb");
    /* The collector's shipped form gives the same. */
    run_ok(b, "set(resource.attributes, {})");
    CHECK_INT(res_count(b), 0);
    run_ok(b, "set(resource.attributes, ParseKeyValue(otelcol.client.metadata[\"otel-resource-"
              "attributes\"][0], \"=\", \",\"))");
    CHECK_STR(res_str(b, "service.name"), "a%20b");
    pg_batch_unref(b);
}

PG_TEST(default_statement_merge_maps)
{
    struct pg_batch *b = mk_batch(SDK_HDR, 1);

    run_ok(b, "set(resource.attributes[\"service.name\"], \"from-config\")");
    run_ok(b, "set(resource.attributes[\"keep\"], \"me\")");
    run_ok(b, "merge_maps(resource.attributes, "
              "ParseResourceAttributes(metadata[\"otel-resource-attributes\"]), \"upsert\")");
    CHECK_INT(res_count(b), 11);
    CHECK_STR(res_str(b, "service.name"), "cart-svc");
    CHECK_STR(res_str(b, "keep"), "me");
    CHECK_STR(res_str(b, "owner"), "o'brien");
    CHECK_STR(res_str(b, "telemetry.sdk.name"), "@coralogix/opentelemetry-profiling");
    CHECK_STR(res_str(b, "process.pid"), "21297");
    pg_batch_unref(b);

    /* insert keeps existing values, update touches only existing keys. */
    b = mk_batch("a=new,b=new", 1);
    run_ok(b, "set(resource.attributes[\"a\"], \"old\")");
    run_ok(b, "merge_maps(resource.attributes, ParseResourceAttributes(metadata[\"otel-resource-"
              "attributes\"]), \"insert\")");
    CHECK_STR(res_str(b, "a"), "old");
    CHECK_STR(res_str(b, "b"), "new");
    run_ok(b, "merge_maps(resource.attributes, {\"a\": \"upd\", \"c\": \"x\"}, \"update\")");
    CHECK_STR(res_str(b, "a"), "upd");
    CHECK(res_attr(b, "c") == NULL);
    pg_batch_unref(b);

    /* No header: nothing happens, no error. */
    b = mk_batch(NULL, 1);
    run_ok(b, "merge_maps(resource.attributes, "
              "ParseResourceAttributes(metadata[\"otel-resource-attributes\"]), \"upsert\")");
    CHECK_INT(res_count(b), 0);
    pg_batch_unref(b);
}

PG_TEST(map_editors)
{
    struct pg_batch *b = mk_batch(SDK_HDR, 1);

    run_ok(b, "merge_maps(resource.attributes, "
              "ParseResourceAttributes(metadata[\"otel-resource-attributes\"]), \"upsert\")");
    CHECK_INT(res_count(b), 10);
    run_ok(b, "delete_key(resource.attributes, \"owner\")");
    run_ok(b, "delete_key(resource.attributes, \"not-there\")");
    CHECK_INT(res_count(b), 9);
    CHECK(res_attr(b, "owner") == NULL);
    run_ok(b, "delete_matching_keys(resource.attributes, \"^runtime\\\\.\")");
    CHECK_INT(res_count(b), 7);
    CHECK(res_attr(b, "runtime.name") == NULL);
    run_ok(b, "keep_matching_keys(resource.attributes, \"(service|telemetry|process)\")");
    CHECK_INT(res_count(b), 5);
    CHECK(res_attr(b, "profiler.type") == NULL);
    run_ok(b, "keep_keys(resource.attributes, [\"service.name\", \"process.pid\", \"nope\"])");
    CHECK_INT(res_count(b), 2);
    CHECK_STR(res_str(b, "service.name"), "cart-svc");
    run_ok(b, "set(resource.attributes[\"a\"], \"1\")");
    run_ok(b, "set(resource.attributes[\"b\"], \"2\")");
    run_ok(b, "limit(resource.attributes, 2, [\"b\"])");
    CHECK_INT(res_count(b), 2);
    CHECK_STR(res_str(b, "b"), "2");
    CHECK_STR(res_str(b, "process.pid"), "21297"); /* first non-priority key in order */
    run_ok(b, "limit(resource.attributes, 5)");
    CHECK_INT(res_count(b), 2);
    pg_batch_unref(b);
}

PG_TEST(replace_pattern)
{
    struct pg_batch *b = mk_batch(NULL, 1);

    run_ok(b, "set(resource.attributes[\"u\"], \"https://user:pw@host/x?a=1\")");
    run_ok(b, "replace_pattern(resource.attributes[\"u\"], \"://[^@]+@\", \"://***@\")");
    CHECK_STR(res_str(b, "u"), "https://***@host/x?a=1");
    run_ok(b, "set(resource.attributes[\"v\"], \"a1b22c333\")");
    run_ok(b, "replace_pattern(resource.attributes[\"v\"], \"([a-z])(\\\\d+)\", \"$2$1\")");
    CHECK_STR(res_str(b, "v"), "1a22b333c");
    run_ok(b, "replace_pattern(resource.attributes[\"v\"], \"zzz\", \"y\")");
    CHECK_STR(res_str(b, "v"), "1a22b333c");
    /* Non-strings and missing keys are left alone. */
    run_ok(b, "set(resource.attributes[\"n\"], 5)");
    run_ok(b, "replace_pattern(resource.attributes[\"n\"], \"5\", \"6\")");
    run_ok(b, "replace_pattern(resource.attributes[\"absent\"], \".*\", \"6\")");
    CHECK(res_attr(b, "n")->int_value == 5);
    CHECK(res_attr(b, "absent") == NULL);
    /* Output longer than the first guess. */
    run_ok(b, "set(resource.attributes[\"w\"], \"abababababababababab\")");
    run_ok(b, "replace_pattern(resource.attributes[\"w\"], \"b\", \"0123456789\")");
    CHECK(strlen(res_str(b, "w")) == 10 + 10 * 10);
    pg_batch_unref(b);
}

PG_TEST(scope_and_profile_paths)
{
    struct pg_batch *b = mk_batch(SDK_HDR, 2);
    const struct pg_otlp_dict *d;
    const struct pg_otlp_profile *p0;
    const struct pg_otlp_profile *p1;
    size_t nstr;
    size_t nattr;

    run_ok(b, "set(scope.version, \"9\") where scope.name == \"pprofreceiver\"");
    CHECK_STR(b->req->resource_profiles[0]->scope_profiles[0]->scope->version, "9");
    run_ok(b, "set(scope.attributes[\"sa\"], \"x\")");
    CHECK_INT(b->req->resource_profiles[0]->scope_profiles[0]->scope->n_attributes, 1);
    /* Profile attributes go through the dictionary, interned. */
    run_ok(b, "set(profile.attributes[\"env\"], \"prod\")");
    d = b->req->dictionary;
    nstr = d->n_string_table;
    nattr = d->n_attribute_table;
    CHECK_INT(nattr, 3);
    CHECK_INT(nstr, 6); /* + the key "env"; values stay in AnyValue.string_value */
    CHECK_STR(prof_str(b, 0, "env"), "prod");
    CHECK_STR(prof_str(b, 1, "env"), "prod");
    p0 = b->req->resource_profiles[0]->scope_profiles[0]->profiles[0];
    p1 = b->req->resource_profiles[0]->scope_profiles[0]->profiles[1];
    CHECK_INT(p0->n_attribute_indices, 2);
    CHECK_INT(p0->attribute_indices[1], p1->attribute_indices[1]);
    /* Same again: nothing new in the dictionary. */
    run_ok(b, "set(profile.attributes[\"env\"], \"prod\")");
    CHECK_INT(b->req->dictionary->n_attribute_table, nattr);
    CHECK_INT(b->req->dictionary->n_string_table, nstr);
    CHECK_INT(p0->n_attribute_indices, 2);
    /* Changing one profile's value leaves the shared entry alone. */
    run_ok(b, "set(profile.attributes[\"env\"], \"dev\") where profile.period == 11");
    CHECK_STR(prof_str(b, 0, "env"), "prod");
    CHECK_STR(prof_str(b, 1, "env"), "dev");
    /* Existing key string reused: "count" is already in the table. */
    run_ok(b, "set(profile.attributes[\"count\"], \"u\")");
    CHECK_INT(b->req->dictionary->n_string_table, nstr);
    run_ok(b, "set(profile.attributes[\"u\"], \"count\")");
    CHECK_INT(b->req->dictionary->n_string_table, nstr + 1);
    run_ok(b, "delete_key(profile.attributes, \"pprof.profile.doc_url\")");
    CHECK(prof_str(b, 0, "pprof.profile.doc_url") == NULL);
    CHECK_STR(prof_str(b, 0, "env"), "prod");
    run_ok(b, "set(profile.attributes[\"from_res\"], resource.attributes[\"x\"])");
    CHECK(prof_str(b, 0, "from_res") == NULL);
    run_ok(b, "set(profile.sample_type.type, \"cpu\") where profile.sample_type.type == "
              "\"samples\"");
    CHECK_STR(d->string_table[p0->sample_type->type_strindex], "cpu");
    run_ok(b, "set(profile.period, profile.period) where profile.duration_unix_nano == 1000");
    run_ok(b, "set(profile.duration_unix_nano, 5)");
    CHECK_INT(p0->duration_nano, 5);
    run_ok(b, "set(profile.period_type.unit, \"nanoseconds\")");
    CHECK_STR(b->req->dictionary->string_table[p0->period_type->unit_strindex], "nanoseconds");
    pg_batch_unref(b);
}

PG_TEST(missing_dictionary_and_resource)
{
    struct pg_batch *b = mk_batch(NULL, 1);

    b->req->dictionary = NULL;
    run_ok(b, "set(profile.attributes[\"k\"], \"v\")");
    CHECK(b->req->dictionary != NULL);
    CHECK_STR(b->req->dictionary->string_table[0], "");
    CHECK_STR(prof_str(b, 0, "k"), "v");
    CHECK(b->req->dictionary->attribute_table[0]->key_strindex == 0);
    pg_batch_unref(b);
}

/* A resource attribute "deep" holding @levels kvlists nested in each other,
 * the innermost with one string. */
static void add_nested_attr(struct pg_batch *b, int levels)
{
    struct pg_arena *a = b->arena;
    struct pg_otlp_resource *r = pg_arena_zalloc(a, sizeof(*r));
    struct pg_otlp_anyvalue *v = pg_arena_zalloc(a, sizeof(*v));
    struct pg_otlp_kv *top = pg_arena_zalloc(a, sizeof(*top));

    opentelemetry__proto__resource__v1__resource__init(r);
    opentelemetry__proto__common__v1__any_value__init(v);
    v->value_case = PG_OTLP_ANYVALUE_STR;
    v->string_value = dupz(a, "leaf");
    for (int i = 0; i < levels; i++) {
        struct pg_otlp_kvlist *l = pg_arena_zalloc(a, sizeof(*l));
        struct pg_otlp_kv *kv = pg_arena_zalloc(a, sizeof(*kv));
        struct pg_otlp_anyvalue *outer = pg_arena_zalloc(a, sizeof(*outer));
        opentelemetry__proto__common__v1__key_value_list__init(l);
        opentelemetry__proto__common__v1__key_value__init(kv);
        opentelemetry__proto__common__v1__any_value__init(outer);
        kv->key = dupz(a, "k");
        kv->value = v;
        l->n_values = 1;
        l->values = pg_arena_calloc(a, 1, sizeof(*l->values));
        l->values[0] = kv;
        outer->value_case = PG_OTLP_ANYVALUE_KVLIST;
        outer->kvlist_value = l;
        v = outer;
    }
    opentelemetry__proto__common__v1__key_value__init(top);
    top->key = dupz(a, "deep");
    top->value = v;
    r->n_attributes = 1;
    r->attributes = pg_arena_calloc(a, 1, sizeof(*r->attributes));
    r->attributes[0] = top;
    b->req->resource_profiles[0]->resource = r;
}

PG_TEST(nesting_bound)
{
    static const struct {
        int levels;
        bool ok;
    } cases[] = {{1, true}, {16, true}, {17, false}, {40, false}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_batch *b = mk_batch(SDK_HDR, 1);
        struct pg_status st;
        enum pg_err err;

        add_nested_attr(b, cases[i].levels);
        err = run(b, "set(resource.attributes[\"copy\"], resource.attributes[\"deep\"])", &st);
        if (cases[i].ok) {
            CHECK_INT(err, PG_ERR_OK);
            CHECK(res_attr(b, "copy") != NULL);
        } else {
            CHECK_INT(err, PG_ERR_PROCESSING);
            CHECK(strstr(st.msg, "value nested deeper than 16") != NULL);
            CHECK(res_attr(b, "copy") == NULL);
        }
        pg_batch_unref(b);
    }
}

PG_TEST_MAIN(PG_CASE(nesting_bound), PG_CASE(compile_errors), PG_CASE(compile_contexts), PG_CASE(conditions),
             PG_CASE(runtime_errors), PG_CASE(set_values),
             PG_CASE(collector_statement_on_clean_header), PG_CASE(default_statement_merge_maps),
             PG_CASE(map_editors), PG_CASE(replace_pattern), PG_CASE(scope_and_profile_paths),
             PG_CASE(missing_dictionary_and_resource))
