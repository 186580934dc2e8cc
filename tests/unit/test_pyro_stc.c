/* SPDX-License-Identifier: Apache-2.0
 * pyroscope/pyro_stc.c: the sample_type_config part, table-driven: the Go SDK's heap config,
 * every key, case-insensitive keys, nulls, unknown keys; wrong JSON types, an unknown
 * aggregation, broken JSON and the caps refused with the key named. */
#include "pg_test.h"

#include "pyroscope/pyro_stc.h"

/* Entries as "type:units/display/agg/cum/sampled|..." ('-' for unset). */
static void render(const struct pg_pyro_stc_entry *e, size_t n, char *out, size_t cap)
{
    static const char *const agg[] = {"-", "sum", "average"};
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t o = strlen(out);
        snprintf(out + o, cap - o, "%s%s:%s/%s/%s/%s/%s", i ? "|" : "", e[i].type,
                 e[i].units ? e[i].units : "-", e[i].display_name ? e[i].display_name : "-",
                 agg[e[i].aggregation],
                 e[i].has_cumulative ? (e[i].cumulative ? "t" : "f") : "-",
                 e[i].has_sampled ? (e[i].sampled ? "t" : "f") : "-");
    }
}

PG_TEST(test_stc_good)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"alloc_objects\":{\"units\":\"objects\"},\"alloc_space\":{\"units\":\"bytes\"},"
         "\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\"},"
         "\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\"}}",
         "alloc_objects:objects/-/-/-/-|alloc_space:bytes/-/-/-/-|"
         "inuse_objects:objects/-/average/-/-|inuse_space:bytes/-/average/-/-"},
        {"{\"samples\":{\"units\":\"samples\",\"display-name\":\"cpu\",\"sampled\":true,"
         "\"cumulative\":false,\"aggregation\":\"sum\"}}",
         "samples:samples/cpu/sum/f/t"},
        {"{\"x\":{\"UNITS\":\"bytes\",\"Display-Name\":\"y\",\"Cumulative\":true}}",
         "x:bytes/y/-/t/-"},
        {"{\"x\":{\"units\":null,\"sampled\":null,\"aggregation\":\"\",\"future\":[1,{}]}}",
         "x:-/-/-/-/-"},
        {"{\"x\":null,\"y\":{}}", "y:-/-/-/-/-"},
        {"{}", ""},
        {" {\"x\":{\"units\":\"b\",\"units\":\"c\"}} \n", "x:c/-/-/-/-"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_pyro_stc_entry *e;
        size_t n;
        struct pg_status st = {0};
        char got[1024];
        enum pg_err err = pg_pyro_stc_parse(a, (const uint8_t *)cases[i].json,
                                            strlen(cases[i].json), &e, &n, &st);
        if (err != PG_ERR_OK) {
            fprintf(stderr, "  %s: %s\n", cases[i].json, st.msg);
        }
        CHECK_INT(err, PG_ERR_OK);
        if (err == PG_ERR_OK) {
            render(e, n, got, sizeof(got));
            CHECK_STR(got, cases[i].want);
        }
        pg_arena_destroy(a);
    }
}

PG_TEST(test_stc_bad)
{
    static const struct {
        const char *json;
        enum pg_err code;
        const char *msg;
    } cases[] = {
        {"", PG_ERR_MALFORMED, "ends early"},
        {"{", PG_ERR_MALFORMED, "ends early"},
        {"null", PG_ERR_MALFORMED, "null"},
        {"[]", PG_ERR_MALFORMED, "must be a JSON object"},
        {"{\"x\":1}", PG_ERR_MALFORMED, "\"x\" must be an object"},
        {"{\"x\":{\"units\":5}}", PG_ERR_MALFORMED, "\"x\".\"units\" must be a string"},
        {"{\"x\":{\"display-name\":[]}}", PG_ERR_MALFORMED, "\"display-name\" must be a string"},
        {"{\"x\":{\"cumulative\":\"true\"}}", PG_ERR_MALFORMED,
         "\"x\".\"cumulative\" must be true or false"},
        {"{\"x\":{\"sampled\":1}}", PG_ERR_MALFORMED, "\"sampled\" must be true or false"},
        {"{\"x\":{\"aggregation\":\"max\"}}", PG_ERR_MALFORMED,
         "\"x\".\"aggregation\" is \"max\", want \"sum\" or \"average\""},
        {"{\"x\":{}} x", PG_ERR_MALFORMED, "offset 9"},
        {"{\"x\":{},}", PG_ERR_MALFORMED, "offset"},
        {"{\"x\":\"\xff\"}", PG_ERR_MALFORMED, "offset"},
        {"{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":{\"i\":{\"j\":{\"k\":{\"l\":{\"m\":"
         "{\"n\":{\"o\":{\"p\":{\"q\":{}}}}}}}}}}}}}}}}}}}", PG_ERR_MALFORMED, "nested deeper"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_pyro_stc_entry *e;
        size_t n;
        struct pg_status st = {0};
        enum pg_err err = pg_pyro_stc_parse(a, (const uint8_t *)cases[i].json,
                                            strlen(cases[i].json), &e, &n, &st);
        if (err != cases[i].code || strstr(st.msg, cases[i].msg) == NULL) {
            fprintf(stderr, "  %s: %d \"%s\"\n", cases[i].json, err, st.msg);
        }
        CHECK_INT(err, cases[i].code);
        CHECK(strstr(st.msg, cases[i].msg) != NULL);
        pg_arena_destroy(a);
    }
}

PG_TEST(test_stc_caps)
{
    struct pg_arena *a = pg_arena_create(4 << 20);
    size_t cap = PG_PYRO_MAX_STC_BYTES * 2, len;
    char *s = malloc(cap);
    struct pg_pyro_stc_entry *e;
    size_t n;
    struct pg_status st = {0};

    len = (size_t)snprintf(s, cap, "{");
    for (int i = 0; i < PG_PYRO_MAX_STC_ENTRIES; i++) {
        len += (size_t)snprintf(s + len, cap - len, "%s\"t%d\":{}", i ? "," : "", i);
    }
    len += (size_t)snprintf(s + len, cap - len, "}");
    CHECK_INT(pg_pyro_stc_parse(a, (uint8_t *)s, len, &e, &n, &st), PG_ERR_OK);
    CHECK_INT(n, PG_PYRO_MAX_STC_ENTRIES);
    s[len - 1] = ',';
    len += (size_t)snprintf(s + len, cap - len, "\"one_more\":{}}");
    CHECK_INT(pg_pyro_stc_parse(a, (uint8_t *)s, len, &e, &n, &st), PG_ERR_MALFORMED);
    CHECK(strstr(st.msg, "over the cap of 64") != NULL);
    memset(s, ' ', PG_PYRO_MAX_STC_BYTES + 1);
    CHECK_INT(pg_pyro_stc_parse(a, (uint8_t *)s, PG_PYRO_MAX_STC_BYTES + 1, &e, &n, &st),
              PG_ERR_LIMIT);
    /* The memory estimate against a small arena: LIMIT before json-c builds the tree. */
    struct pg_arena *small = pg_arena_create(16 << 10);
    len = (size_t)snprintf(s, cap, "{\"x\":{\"future\":[");
    for (int i = 0; i < 200; i++) {
        len += (size_t)snprintf(s + len, cap - len, "%s{}", i ? "," : "");
    }
    len += (size_t)snprintf(s + len, cap - len, "]}}");
    CHECK_INT(pg_pyro_stc_parse(small, (uint8_t *)s, len, &e, &n, &st), PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "memory cap") != NULL);
    pg_arena_destroy(small);
    free(s);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_stc_good), PG_CASE(test_stc_bad), PG_CASE(test_stc_caps))
