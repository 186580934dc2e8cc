/* SPDX-License-Identifier: Apache-2.0
 * ParseKeyValue (collector semantics, every case in the reference notes) and
 * ParseResourceAttributes (the SDK header format), table-driven, plus the real
 * Otel-Resource-Attributes headers captured from the SDK client. */
#include <stdbool.h>

#include "core/arena.h"
#include "processor/ottl_kv.h"
#include "pg_test.h"

/* Expected pairs as "k=v" strings ('\x01' separates key and value so '='
 * may appear in keys and values). */
struct kv_case {
    const char *name;
    const char *src;
    const char *delim;
    const char *pair_delim;
    const char *err; /* expected message, NULL for success */
    const char *want[8];
};

static void check_pairs(const char *name, const struct pg_ottl_kv_list *l, const char *const *want)
{
    size_t nwant = 0;

    while (nwant < 8 && want[nwant] != NULL) {
        nwant++;
    }
    if (l->n != nwant) {
        fprintf(stderr, "  case %s: %zu pairs, want %zu\n", name, l->n, nwant);
        pg_test_failures_++;
        return;
    }
    for (size_t i = 0; i < nwant; i++) {
        const char *sep = strchr(want[i], '\x01');
        char key[128];
        const char *got;
        snprintf(key, sizeof(key), "%.*s", (int)(sep - want[i]), want[i]);
        got = pg_ottl_kv_get(l, key);
        if (got == NULL || strcmp(got, sep + 1) != 0) {
            fprintf(stderr, "  case %s: [%s] = \"%s\", want \"%s\"\n", name, key,
                    got ? got : "(missing)", sep + 1);
            pg_test_failures_++;
        }
    }
}

#define KV(k, v) k "\x01" v

static const struct kv_case pkv_cases[] = {
    {"defaults", "k1=v1 k2=v2", "=", " ", NULL, {KV("k1", "v1"), KV("k2", "v2")}},
    {"double quotes", "k1=\"v 1\" k2=v2", "=", " ", NULL, {KV("k1", "v 1"), KV("k2", "v2")}},
    {"single quotes", "k1='v 1' k2='v=2'", "=", " ", NULL, {KV("k1", "v 1"), KV("k2", "v=2")}},
    {"quoted key", "\"my key\"=v", "=", " ", NULL, {KV("my key", "v")}},
    {"pair delimiter inside quotes", "a='x,b=y',c=z", "=", ",", NULL,
     {KV("a", "x,b=y"), KV("c", "z")}},
    {"trims key and value", " k1 = v1 , k2= v2 ", "=", ",", NULL, {KV("k1", "v1"), KV("k2", "v2")}},
    {"trims inside quotes too", "k=\"  v  \"", "=", " ", NULL, {KV("k", "v")}},
    {"trims unicode space", "k=\xc2\xa0v\xe3\x80\x80", "=", ",", NULL, {KV("k", "v")}},
    {"last duplicate wins", "a=1 b=2 a=3", "=", " ", NULL, {KV("a", "3"), KV("b", "2")}},
    {"split at first delimiter", "a==b eq=x=y", "=", " ", NULL, {KV("a", "=b"), KV("eq", "x=y")}},
    {"empty key and value", "=v k=", "=", " ", NULL, {KV("", "v"), KV("k", "")}},
    {"leading, trailing, repeated delimiters", "  a=1   b=2 ", "=", " ", NULL,
     {KV("a", "1"), KV("b", "2")}},
    {"multi-character delimiters", "k1:=v1||k2:=v2||||k3:=a:b", ":=", "||", NULL,
     {KV("k1", "v1"), KV("k2", "v2"), KV("k3", "a:b")}},
    {"multi-character pair delimiter inside quotes", "k1:='a||b'||k2:=c", ":=", "||", NULL,
     {KV("k1", "a||b"), KV("k2", "c")}},
    {"escaped quote inside quotes", "k=\"a\\\"b\"", "=", " ", NULL, {KV("k", "a\"b")}},
    {"escaped backslash", "k=\"a\\\\b\"", "=", " ", NULL, {KV("k", "a\\b")}},
    {"backslash before other char kept", "k=a\\nb", "=", " ", NULL, {KV("k", "a\\nb")}},
    {"escaped quote outside quotes keeps backslash", "k=a\\\"b", "=", " ", NULL,
     {KV("k", "a\\\"b")}},
    {"no percent decoding", "n=%40a%2Fb,sp=hello%20world", "=", ",", NULL,
     {KV("n", "%40a%2Fb"), KV("sp", "hello%20world")}},
    {"values stay strings", "n=42,b=true", "=", ",", NULL, {KV("n", "42"), KV("b", "true")}},
    {"empty target", "", "=", " ", "cannot parse from empty target", {NULL}},
    {"pair without delimiter", "a=1 b", "=", " ",
     "failed to split pairs into key-values: cannot split \"b\" into 2 items, got 1 item(s)",
     {NULL}},
    {"every bad pair is reported", "x a=1 y", "=", " ",
     "failed to split pairs into key-values: cannot split \"x\" into 2 items, got 1 item(s); "
     "cannot split \"y\" into 2 items, got 1 item(s)",
     {NULL}},
    {"unclosed quote", "owner=o'brien,a=b", "=", ",",
     "splitting source \"owner=o'brien,a=b\" into pairs failed: never reached the end of a "
     "quoted value",
     {NULL}},
    {"trailing escape", "k=v\\", "=", " ",
     "splitting source \"k=v\\\\\" into pairs failed: found a trailing escape character", {NULL}},
    {"only delimiters", "   ", "=", " ", NULL, {NULL}},
};

PG_TEST(parse_key_value_table)
{
    for (size_t i = 0; i < sizeof(pkv_cases) / sizeof(pkv_cases[0]); i++) {
        const struct kv_case *c = &pkv_cases[i];
        struct pg_arena *a = pg_arena_create(0);
        struct pg_ottl_kv_list l = {0, 0, NULL};
        struct pg_status st;
        enum pg_err err;

        pg_status_clear(&st);
        err = pg_ottl_parse_key_value(a, c->src, c->delim, c->pair_delim, &l, &st);
        if (c->err != NULL) {
            if (err != PG_ERR_PROCESSING || strcmp(st.msg, c->err) != 0) {
                fprintf(stderr, "  case %s: err %d \"%s\", want \"%s\"\n", c->name, err, st.msg,
                        c->err);
                pg_test_failures_++;
            }
            CHECK_INT(l.n, 0);
        } else {
            if (err != PG_ERR_OK) {
                fprintf(stderr, "  case %s: unexpected error \"%s\"\n", c->name, st.msg);
                pg_test_failures_++;
            }
            check_pairs(c->name, &l, c->want);
        }
        pg_arena_destroy(a);
    }
}

struct ra_case {
    const char *name;
    const char *src;
    size_t skipped;
    const char *want[8];
};

static const struct ra_case ra_cases[] = {
    {"decodes", "telemetry.sdk.name=%40coralogix%2Fopentelemetry-profiling,sp=hello%20world", 0,
     {KV("telemetry.sdk.name", "@coralogix/opentelemetry-profiling"), KV("sp", "hello world")}},
    {"encoded comma and equals stay in the value", "team=a%2Cb,eq=x%3Dy", 0,
     {KV("team", "a,b"), KV("eq", "x=y")}},
    {"encoded key", "k%2Cwith%3Dodd=v%2Cwith%3Dodd%3B%22q%22", 0,
     {KV("k,with=odd", "v,with=odd;\"q\"")}},
    {"apostrophe is data", "owner=o'brien,service.name=cart-svc", 0,
     {KV("owner", "o'brien"), KV("service.name", "cart-svc")}},
    {"quotes are data", "q=\"x y\"", 0, {KV("q", "\"x y\"")}},
    {"first equals splits", "eq=x=y", 0, {KV("eq", "x=y")}},
    {"trims", " a = 1 ,\tb=2 ", 0, {KV("a", "1"), KV("b", "2")}},
    {"last duplicate wins", "a=1,a=2", 0, {KV("a", "2")}},
    {"plus is not a space", "a=b+c", 0, {KV("a", "b+c")}},
    {"utf-8", "city=M%C3%BCnchen", 0, {KV("city", "M\xc3\xbcnchen")}},
    {"empty value allowed", "a=", 0, {KV("a", "")}},
    {"empty entries ignored", ",,a=1,,", 0, {KV("a", "1")}},
    {"empty", "", 0, {NULL}},
    {"malformed pairs skipped and counted", "a=1,novalue,=x,b=%zz,c=%00,d=%C3%28,e=ok,f=%4", 6,
     {KV("a", "1"), KV("e", "ok")}},
};

PG_TEST(parse_resource_attributes_table)
{
    for (size_t i = 0; i < sizeof(ra_cases) / sizeof(ra_cases[0]); i++) {
        const struct ra_case *c = &ra_cases[i];
        struct pg_arena *a = pg_arena_create(0);
        struct pg_ottl_kv_list l = {0, 0, NULL};
        struct pg_status st;
        size_t skipped = 99;

        pg_status_clear(&st);
        CHECK_INT(pg_ottl_parse_resource_attributes(a, c->src, &l, &skipped, &st), PG_ERR_OK);
        if (skipped != c->skipped) {
            fprintf(stderr, "  case %s: skipped %zu, want %zu\n", c->name, skipped, c->skipped);
            pg_test_failures_++;
        }
        check_pairs(c->name, &l, c->want);
        pg_arena_destroy(a);
    }
}

/* Reads "otel-resource-attributes" from a captured push<N>.json. */
static char *sdk_header(const char *file)
{
    const char *dir = getenv("PG_FIXTURES");
    char path[512];
    size_t len;
    char *json;
    char *p;
    char *end;
    char *out;

    snprintf(path, sizeof(path), "%s/sdk/%s", dir ? dir : "tests/fixtures", file);
    json = (char *)pg_test_read_file(path, &len);
    if (json == NULL) {
        return NULL;
    }
    p = strstr(json, "\"otel-resource-attributes\": \"");
    if (p == NULL) {
        free(json);
        return NULL;
    }
    p += strlen("\"otel-resource-attributes\": \"");
    end = strchr(p, '"');
    out = end ? strndup(p, (size_t)(end - p)) : NULL;
    free(json);
    return out;
}

PG_TEST(real_sdk_headers)
{
    static const char *const files[] = {"push0.json", "push1.json", "push2.json", "push3.json"};

    for (size_t i = 0; i < 4; i++) {
        char *hdr = sdk_header(files[i]);
        struct pg_arena *a = pg_arena_create(0);
        struct pg_ottl_kv_list l = {0, 0, NULL};
        struct pg_status st;
        size_t skipped = 0;

        CHECK(hdr != NULL);
        if (hdr == NULL) {
            pg_arena_destroy(a);
            continue;
        }
        /* The collector statement fails on the apostrophe in owner=o'brien. */
        CHECK_INT(pg_ottl_parse_key_value(a, hdr, "=", ",", &l, &st), PG_ERR_PROCESSING);
        CHECK(strstr(st.msg, "never reached the end of a quoted value") != NULL);
        CHECK_INT(l.n, 0);
        /* ParseResourceAttributes keeps everything, decoded. */
        CHECK_INT(pg_ottl_parse_resource_attributes(a, hdr, &l, &skipped, &st), PG_ERR_OK);
        CHECK_INT(skipped, 0);
        CHECK_INT(l.n, 10);
        CHECK_STR(pg_ottl_kv_get(&l, "service.name"), "cart-svc");
        CHECK_STR(pg_ottl_kv_get(&l, "owner"), "o'brien");
        CHECK_STR(pg_ottl_kv_get(&l, "telemetry.sdk.name"), "@coralogix/opentelemetry-profiling");
        CHECK_STR(pg_ottl_kv_get(&l, "service.version"), "1.2.3");
        CHECK_STR(pg_ottl_kv_get(&l, "process.pid"), "21297");
        CHECK_STR(pg_ottl_kv_get(&l, "profiler.type"), i % 2 == 0 ? "wall" : "heap");
        free(hdr);
        pg_arena_destroy(a);
    }
}

PG_TEST(worked_example_collector_values)
{
    /* Reference §2.5: the live header, parsed the collector's way. */
    static const char hdr[] =
        "telemetry.sdk.language=javascript,telemetry.sdk.name=%40coralogix%2Fopentelemetry-"
        "profiling,runtime.name=nodejs,runtime.version=v20.20.2,process.pid=11541,deployment."
        "environment=prod,team=a%2Cb,eq=x%3Dy,sp=hello%20world,service.name=live-test,custom.num="
        "42,custom.bool=true,k%2Cwith%3Dodd=v%2Cwith%3Dodd%3B%22q%22,profiler.type=wall";
    struct pg_arena *a = pg_arena_create(0);
    struct pg_ottl_kv_list l = {0, 0, NULL};
    struct pg_status st;

    CHECK_INT(pg_ottl_parse_key_value(a, hdr, "=", ",", &l, &st), PG_ERR_OK);
    CHECK_INT(l.n, 14);
    CHECK_STR(pg_ottl_kv_get(&l, "telemetry.sdk.name"), "%40coralogix%2Fopentelemetry-profiling");
    CHECK_STR(pg_ottl_kv_get(&l, "team"), "a%2Cb");
    CHECK_STR(pg_ottl_kv_get(&l, "eq"), "x%3Dy");
    CHECK_STR(pg_ottl_kv_get(&l, "sp"), "hello%20world");
    CHECK_STR(pg_ottl_kv_get(&l, "process.pid"), "11541");
    CHECK_STR(pg_ottl_kv_get(&l, "k%2Cwith%3Dodd"), "v%2Cwith%3Dodd%3B%22q%22");
    CHECK_STR(pg_ottl_kv_get(&l, "service.name"), "live-test");
    pg_arena_destroy(a);
}

PG_TEST(pair_cap)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_ottl_kv_list l = {0, 0, NULL};
    struct pg_status st;
    size_t n = (PG_OTTL_KV_MAX_PAIRS + 10) * 8;
    char *big = malloc(n + 1);
    size_t o = 0;

    for (int i = 0; i < PG_OTTL_KV_MAX_PAIRS + 10; i++) {
        o += (size_t)snprintf(big + o, n + 1 - o, "k%04d=v,", i);
    }
    CHECK_INT(pg_ottl_parse_resource_attributes(a, big, &l, NULL, &st), PG_ERR_LIMIT);
    free(big);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(parse_key_value_table), PG_CASE(parse_resource_attributes_table),
             PG_CASE(real_sdk_headers), PG_CASE(worked_example_collector_values),
             PG_CASE(pair_cap))
