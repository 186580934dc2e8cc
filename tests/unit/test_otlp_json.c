/* SPDX-License-Identifier: Apache-2.0
 * OTLP/JSON (otlp/otlp_json.h): every pprof fixture's request goes proto ->
 * JSON -> proto to the same bytes; Appendix A of otlp-profiles.md written by
 * hand as OTLP/JSON (camelCase and snake_case names, 64-bit values as numbers
 * and as strings, hex ids in both cases, an unknown field) gives its 741
 * golden bytes; every AnyValue kind read and written; malformed documents
 * refused with a message naming the place. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/otlp_decode.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_json.h"
#include "pg_test.h"
#include "pg_test_fixtures.h"
#include "pprof/translate.h"

static enum pg_err jdecode(struct pg_arena *a, const char *json, size_t n,
                           struct pg_otlp_request **req, struct pg_status *st)
{
    ProtobufCMessage *m = NULL;
    enum pg_err err;

    memset(st, 0, sizeof(*st));
    err = pg_otlp_json_decode(a, &pg_otlp_request_descriptor, json, n, &m, st);
    *req = (struct pg_otlp_request *)m;
    return err;
}

/* proto @b -> request -> JSON -> request -> proto, which must be @b again. */
static void check_json_round_trip(const char *name, const uint8_t *b, size_t n)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = NULL, *back = NULL;
    struct pg_otlp_decode_stats stats;
    struct pg_status st;
    char *json;
    size_t json_n;
    uint8_t *again;
    size_t again_n;

    PG_REQUIRE(pg_otlp_decode(a, b, n, NULL, &req, NULL, &st) == PG_ERR_OK);
    PG_REQUIRE(pg_otlp_json_encode(a, &req->base, &json, &json_n, &st) == PG_ERR_OK);
    CHECK_INT(strlen(json), json_n);
    if (jdecode(a, json, json_n, &back, &st) != PG_ERR_OK) {
        fprintf(stderr, "  %s: %s\n", name, st.msg);
        CHECK(0);
        pg_arena_destroy(a);
        return;
    }
    CHECK_INT(pg_otlp_validate(a, back, NULL, &stats, &st), PG_ERR_OK);
    CHECK_INT(stats.utf8_repaired, 0);
    PG_REQUIRE(pg_otlp_request_encode(back, a, &again, &again_n, &st) == PG_ERR_OK);
    if (again_n != n || memcmp(again, b, n) != 0) {
        fprintf(stderr, "  %s: %zu bytes back from JSON, %zu sent\n", name, again_n, n);
        CHECK(0);
    }
    pg_arena_destroy(a);
}

static void json_round_trip_fixture(const char *name, size_t i, const uint8_t *wire, size_t n,
                                    void *arg)
{
    (void)i;
    (void)arg;
    check_json_round_trip(name, wire, n);
}

PG_TEST(test_fixtures_json_round_trip)
{
    size_t done = pg_test_each_fixture_request(json_round_trip_fixture, NULL);

    {
        size_t n;
        uint8_t *g = pg_test_golden_otlp(&n);
        PG_REQUIRE(g != NULL);
        check_json_round_trip("appendix_a", g, n);
        free(g);
    }
    CHECK_INT(done, PG_TEST_N_PPROF_FIXTURES);
}

/* Appendix A by hand, as a peer may write it: both name styles, 64-bit values as strings
 * and numbers, upper-case hex, whitespace, and fields this schema does not know. */
static const char appendix_a_json[] =
    "{\n"
    " \"resourceProfiles\": [{\n"
    "  \"resource\": {\"attributes\": [\n"
    "    {\"key\": \"service.name\", \"value\": {\"stringValue\": \"checkout\"}},\n"
    "    {\"key\": \"deployment.environment.name\", \"value\": {\"string_value\": \"prod\"}}],\n"
    "    \"entityRefs\": null},\n"
    "  \"scopeProfiles\": [{\n"
    "   \"scope\": {\"name\": \"pprof-gateway\", \"version\": \"0.1.0\"},\n"
    "   \"profiles\": [\n"
    "    {\"sampleType\": {\"typeStrindex\": 4, \"unitStrindex\": 5},\n"
    "     \"samples\": [{\"stackIndex\": 1, \"attributeIndices\": [3], \"linkIndex\": 1,\n"
    "                  \"values\": [\"30000000\"]},\n"
    "                 {\"stack_index\": 2, \"values\": [10000000]}],\n"
    "     \"timeUnixNano\": \"1700000000000000000\", \"durationNano\": 10000000000,\n"
    "     \"periodType\": {\"typeStrindex\": 4, \"unitStrindex\": 5}, \"period\": \"10000000\",\n"
    "     \"attributeIndices\": [4, 5, 6]},\n"
    "    {\"sample_type\": {\"type_strindex\": 13, \"unit_strindex\": 14},\n"
    "     \"samples\": [{\"stackIndex\": 1, \"attributeIndices\": [3], \"linkIndex\": 1,\n"
    "                  \"values\": [3]},\n"
    "                 {\"stackIndex\": 2, \"values\": [\"1\"]}],\n"
    "     \"time_unix_nano\": 1700000000000000000, \"duration_nano\": \"10000000000\",\n"
    "     \"period_type\": {\"typeStrindex\": 4, \"unitStrindex\": 5}, \"period\": 10000000,\n"
    "     \"attribute_indices\": [4, 5, 6], \"profileId\": \"\"}],\n"
    "   \"schemaUrl\": \"https://opentelemetry.io/schemas/1.39.0\"}],\n"
    "  \"schema_url\": \"https://opentelemetry.io/schemas/1.39.0\"}],\n"
    " \"dictionary\": {\n"
    "  \"mappingTable\": [{}, {\"memoryStart\": \"4194304\", \"memoryLimit\": 4849664,\n"
    "                    \"filenameStrindex\": 1, \"attributeIndices\": [1, 2]}],\n"
    "  \"locationTable\": [{}, {\"mappingIndex\": 1, \"address\": \"4198400\",\n"
    "                      \"lines\": [{\"functionIndex\": 1, \"line\": \"20\"}]},\n"
    "                     {\"mapping_index\": 1, \"address\": 4202496,\n"
    "                      \"lines\": [{\"function_index\": 2, \"line\": 10}]}],\n"
    "  \"functionTable\": [{}, {\"nameStrindex\": 6, \"systemNameStrindex\": 6,\n"
    "                      \"filenameStrindex\": 7, \"startLine\": \"18\"},\n"
    "                     {\"name_strindex\": 8, \"system_name_strindex\": 8,\n"
    "                      \"filename_strindex\": 7, \"start_line\": 8}],\n"
    "  \"linkTable\": [{\"traceId\": \"00000000000000000000000000000000\",\n"
    "                  \"spanId\": \"0000000000000000\"},\n"
    "                 {\"trace_id\": \"4BF92F3577B34DA6A3CE929D0E0E4736\",\n"
    "                  \"span_id\": \"00f067aa0ba902b7\"}],\n"
    "  \"stringTable\": [\"\", \"/app/server\", \"process.executable.build_id.gnu\",\n"
    "    \"pprof.mapping.has_functions\", \"cpu\", \"nanoseconds\", \"main.work\", \"main.go\",\n"
    "    \"main.main\", \"handler\", \"pprof.profile.drop_frames\", \"pprof.profile.keep_frames\",\n"
    "    \"pprof.profile.doc_url\", \"samples\", \"count\"],\n"
    "  \"attributeTable\": [{}, {\"keyStrindex\": 2, \"value\": {\"stringValue\": \"abc123\"}},\n"
    "    {\"keyStrindex\": 3, \"value\": {\"boolValue\": true}},\n"
    "    {\"keyStrindex\": 9, \"value\": {\"stringValue\": \"/api\"}},\n"
    "    {\"keyStrindex\": 10, \"value\": {\"stringValue\": \"\"}},\n"
    "    {\"keyStrindex\": 11, \"value\": {\"stringValue\": \"\"}},\n"
    "    {\"key_strindex\": 12, \"value\": {\"string_value\": \"\"}}],\n"
    "  \"stackTable\": [{}, {\"locationIndices\": [1, 2]}, {\"location_indices\": [2]}]\n"
    " },\n"
    " \"someFutureField\": {\"x\": [1, {\"y\": null}]}\n"
    "}\n";

PG_TEST(test_appendix_a_json)
{
    size_t n;
    uint8_t *g = pg_test_golden_otlp(&n);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req;
    struct pg_status st;
    uint8_t *wire;
    size_t wire_n;

    PG_REQUIRE(g != NULL);
    if (jdecode(a, appendix_a_json, sizeof(appendix_a_json) - 1, &req, &st) != PG_ERR_OK) {
        fprintf(stderr, "  %s\n", st.msg);
        CHECK(0);
        pg_arena_destroy(a);
        free(g);
        return;
    }
    CHECK_INT(pg_otlp_validate(a, req, NULL, NULL, &st), PG_ERR_OK);
    PG_REQUIRE(pg_otlp_request_encode(req, a, &wire, &wire_n, &st) == PG_ERR_OK);
    CHECK_INT(wire_n, n);
    CHECK(wire_n == n && memcmp(wire, g, n) == 0);
    pg_arena_destroy(a);
    free(g);
}

/* Every AnyValue kind in, and the exact text out (camelCase, int64 as a string, bytes in
 * base64, ids in lower-case hex, a set oneof member written even when it is the default,
 * defaults left out). */
PG_TEST(test_anyvalue_kinds)
{
    static const char in[] =
        "{\"resourceProfiles\":[{\"resource\":{\"attributes\":["
        "{\"key\":\"s\",\"value\":{\"stringValue\":\"a\\\"b\\\\c\\n\\u0001\"}},"
        "{\"key\":\"b\",\"value\":{\"boolValue\":false}},"
        "{\"key\":\"i\",\"value\":{\"intValue\":\"-9223372036854775808\"}},"
        "{\"key\":\"j\",\"value\":{\"int_value\":42}},"
        "{\"key\":\"d\",\"value\":{\"doubleValue\":1.5}},"
        "{\"key\":\"n\",\"value\":{\"doubleValue\":\"NaN\"}},"
        "{\"key\":\"a\",\"value\":{\"arrayValue\":{\"values\":[{\"intValue\":1},{}]}}},"
        "{\"key\":\"k\",\"value\":{\"kvlistValue\":{\"values\":[{\"key\":\"x\","
        "\"value\":{\"bytesValue\":\"AAEC/w==\"}}]}}},"
        "{\"key\":\"u\",\"value\":{\"bytesValue\":\"AAEC_w\"}},"
        "{\"key\":\"t\",\"value\":{\"stringValueStrindex\":1}},"
        "{\"keyStrindex\":1,\"value\":{}}"
        "]}}],\"dictionary\":{\"stringTable\":[\"\",\"x1\"]}}";
    static const char out[] =
        "{\"resourceProfiles\":[{\"resource\":{\"attributes\":["
        "{\"key\":\"s\",\"value\":{\"stringValue\":\"a\\\"b\\\\c\\n\\u0001\"}},"
        "{\"key\":\"b\",\"value\":{\"boolValue\":false}},"
        "{\"key\":\"i\",\"value\":{\"intValue\":\"-9223372036854775808\"}},"
        "{\"key\":\"j\",\"value\":{\"intValue\":\"42\"}},"
        "{\"key\":\"d\",\"value\":{\"doubleValue\":1.5}},"
        "{\"key\":\"n\",\"value\":{\"doubleValue\":\"NaN\"}},"
        "{\"key\":\"a\",\"value\":{\"arrayValue\":{\"values\":[{\"intValue\":\"1\"},{}]}}},"
        "{\"key\":\"k\",\"value\":{\"kvlistValue\":{\"values\":[{\"key\":\"x\","
        "\"value\":{\"bytesValue\":\"AAEC/w==\"}}]}}},"
        "{\"key\":\"u\",\"value\":{\"bytesValue\":\"AAEC/w==\"}},"
        "{\"key\":\"t\",\"value\":{\"stringValueStrindex\":1}},"
        "{\"value\":{},\"keyStrindex\":1}"
        "]}}],\"dictionary\":{\"stringTable\":[\"\",\"x1\"]}}";
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req;
    struct pg_status st;
    char *json;
    size_t json_n;

    if (jdecode(a, in, sizeof(in) - 1, &req, &st) != PG_ERR_OK) {
        fprintf(stderr, "  %s\n", st.msg);
        CHECK(0);
        pg_arena_destroy(a);
        return;
    }
    {
        struct pg_otlp_kv **kv = req->resource_profiles[0]->resource->attributes;
        CHECK_INT(req->resource_profiles[0]->resource->n_attributes, 11);
        CHECK_STR(kv[0]->value->string_value, "a\"b\\c\n\x01");
        CHECK_INT(kv[1]->value->value_case, PG_OTLP_ANYVALUE_BOOL);
        CHECK(kv[2]->value->int_value == INT64_MIN);
        CHECK(kv[3]->value->int_value == 42);
        CHECK(kv[4]->value->double_value == 1.5);
        CHECK(kv[5]->value->double_value != kv[5]->value->double_value);
        CHECK_INT(kv[6]->value->array_value->n_values, 2);
        CHECK_INT(kv[6]->value->array_value->values[1]->value_case, PG_OTLP_ANYVALUE_NONE);
        CHECK_INT(kv[7]->value->kvlist_value->values[0]->value->bytes_value.len, 4);
        CHECK_INT(kv[8]->value->bytes_value.data[3], 0xff);
        CHECK_INT(kv[9]->value->string_value_strindex, 1);
        CHECK_INT(kv[10]->key_strindex, 1);
    }
    PG_REQUIRE(pg_otlp_json_encode(a, &req->base, &json, &json_n, &st) == PG_ERR_OK);
    CHECK_STR(json, out);
    pg_arena_destroy(a);
}

/* Ids come out in lower-case hex; other bytes in base64; 64-bit values quoted. */
PG_TEST(test_encode_ids_and_numbers)
{
    size_t n;
    uint8_t *g = pg_test_golden_otlp(&n);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req;
    struct pg_status st;
    char *json;
    size_t json_n;

    PG_REQUIRE(g != NULL);
    PG_REQUIRE(pg_otlp_decode(a, g, n, NULL, &req, NULL, &st) == PG_ERR_OK);
    PG_REQUIRE(pg_otlp_json_encode(a, &req->base, &json, &json_n, &st) == PG_ERR_OK);
    CHECK(strstr(json, "{\"traceId\":\"4bf92f3577b34da6a3ce929d0e0e4736\","
                       "\"spanId\":\"00f067aa0ba902b7\"}") != NULL);
    CHECK(strstr(json, "{\"traceId\":\"00000000000000000000000000000000\",") != NULL);
    CHECK(strstr(json, "\"timeUnixNano\":\"1700000000000000000\",\"durationNano\":"
                       "\"10000000000\"") != NULL);
    CHECK(strstr(json, "{\"stackIndex\":1,\"attributeIndices\":[3],\"linkIndex\":1,"
                       "\"values\":[\"30000000\"]}") != NULL);
    CHECK(strstr(json, "\"memoryStart\":\"4194304\"") != NULL);
    CHECK(strstr(json, "\"stringTable\":[\"\",\"/app/server\",") != NULL);
    CHECK(strstr(json, "\"period\":\"10000000\"") != NULL);
    CHECK(strstr(json, "_") == NULL || strstr(json, "\"time_unix_nano\"") == NULL);
    pg_arena_destroy(a);
    free(g);
}

PG_TEST(test_malformed_json)
{
    static const struct {
        const char *name, *json, *msg;
    } cases[] = {
        {"not JSON", "GET / HTTP/1.1", NULL},
        {"empty", "", "otlp/json: the document ends early (0 bytes)"},
        {"truncated", "{\"resourceProfiles\": [", "otlp/json: the document ends early (22 bytes)"},
        {"trailing bytes", "{} x", "otlp/json: unexpected character at offset 3"},
        {"a second document", "{}\n{}", NULL},
        {"null document", "null", "otlp/json: the document is null, not an object"},
        {"top-level array", "[]", "otlp/json: (top): expected an object, got an array"},
        {"list is an object", "{\"resourceProfiles\": {}}",
         "otlp/json: resourceProfiles: expected an array, got an object"},
        {"message is a string", "{\"resourceProfiles\": [\"x\"]}",
         "otlp/json: resourceProfiles[0]: expected an object, got a string"},
        {"null in a message list", "{\"resourceProfiles\": [null]}",
         "otlp/json: resourceProfiles[0]: null in a list of messages"},
        {"int32 out of range",
         "{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"samples\":[{},"
         "{\"stackIndex\":3000000000}]}]}]}]}",
         "otlp/json: resourceProfiles[0].scopeProfiles[0].profiles[0].samples[1].stackIndex: "
         "3000000000 is out of range"},
        {"int32 as a fraction", "{\"dictionary\":{\"stackTable\":[{\"locationIndices\":[1.5]}]}}",
         "otlp/json: dictionary.stackTable[0].locationIndices[0]: expected an integer, got a "
         "number"},
        {"int64 string with letters",
         "{\"dictionary\":{\"functionTable\":[{\"startLine\":\"12a\"}]}}",
         "otlp/json: dictionary.functionTable[0].startLine: expected a decimal integer in the "
         "string"},
        {"negative uint64", "{\"dictionary\":{\"mappingTable\":[{\"memoryStart\":-1}]}}",
         "otlp/json: dictionary.mappingTable[0].memoryStart: -1 is out of range"},
        {"uint64 past 2^64",
         "{\"dictionary\":{\"mappingTable\":[{\"memoryStart\":\"18446744073709551616\"}]}}",
         "otlp/json: dictionary.mappingTable[0].memoryStart: expected a decimal integer in the "
         "string"},
        {"odd hex id", "{\"dictionary\":{\"linkTable\":[{\"traceId\":\"abc\"}]}}",
         "otlp/json: dictionary.linkTable[0].traceId: hex id of odd length"},
        {"non-hex id", "{\"dictionary\":{\"linkTable\":[{\"spanId\":\"zz00000000000000\"}]}}",
         "otlp/json: dictionary.linkTable[0].spanId: not a hex string"},
        {"id as a number", "{\"dictionary\":{\"linkTable\":[{\"spanId\":5}]}}",
         "otlp/json: dictionary.linkTable[0].spanId: expected a hex string, got a number"},
        {"bad base64",
         "{\"dictionary\":{\"attributeTable\":[{\"value\":{\"bytesValue\":\"a$b\"}}]}}",
         "otlp/json: dictionary.attributeTable[0].value.bytesValue: not a base64 string"},
        {"string as a number", "{\"dictionary\":{\"stringTable\":[\"\", 5]}}",
         "otlp/json: dictionary.stringTable[1]: expected a string, got a number"},
        {"bool as a string",
         "{\"dictionary\":{\"attributeTable\":[{\"value\":{\"boolValue\":\"true\"}}]}}",
         "otlp/json: dictionary.attributeTable[0].value.boolValue: expected true or false, got "
         "a string"},
        {"double string", "{\"dictionary\":{\"attributeTable\":[{\"value\":{\"doubleValue\":"
                          "\"abc\"}}]}}",
         "otlp/json: dictionary.attributeTable[0].value.doubleValue: expected a number in the "
         "string"},
        {"two oneof members",
         "{\"dictionary\":{\"attributeTable\":[{\"value\":{\"intValue\":1,\"boolValue\":true}}]}}",
         "otlp/json: dictionary.attributeTable[0].value.boolValue: a second member of the same "
         "oneof"},
        {"trailing comma", "{\"dictionary\": {},}", NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(0);
        struct pg_otlp_request *req = (void *)1;
        struct pg_status st;
        enum pg_err err = jdecode(a, cases[i].json, strlen(cases[i].json), &req, &st);
        if (err != PG_ERR_MALFORMED || (cases[i].msg != NULL && strcmp(st.msg, cases[i].msg))) {
            fprintf(stderr, "  %s: got %s \"%s\"\n", cases[i].name, pg_err_name(err), st.msg);
            CHECK(0);
        }
        CHECK(req == NULL);
        CHECK(st.msg[0] != '\0');
        pg_arena_destroy(a);
    }
}

/* Nesting past 64 messages is refused, by json-c's depth or by ours, never by the stack. */
PG_TEST(test_deep_json)
{
    static const int depths[] = {30, 40, 120, 2000};
    for (size_t di = 0; di < sizeof(depths) / sizeof(depths[0]); di++) {
        int levels = depths[di];
        size_t cap = (size_t)levels * 40 + 200, n = 0;
        char *j = malloc(cap);
        struct pg_arena *a = pg_arena_create(0);
        struct pg_otlp_request *req;
        struct pg_status st;
        enum pg_err err;

        n += (size_t)snprintf(j + n, cap - n, "{\"dictionary\":{\"attributeTable\":[{\"value\":");
        for (int i = 0; i < levels; i++) {
            n += (size_t)snprintf(j + n, cap - n, "{\"arrayValue\":{\"values\":[");
        }
        n += (size_t)snprintf(j + n, cap - n, "{}");
        for (int i = 0; i < levels; i++) {
            n += (size_t)snprintf(j + n, cap - n, "]}}");
        }
        n += (size_t)snprintf(j + n, cap - n, "}]}}");
        err = jdecode(a, j, n, &req, &st);
        fprintf(stderr, "  %d levels: %s\n", levels, err == PG_ERR_OK ? "ok" : st.msg);
        CHECK_INT(err, levels <= 30 ? PG_ERR_OK : PG_ERR_MALFORMED);
        if (levels == 40) {
            CHECK(strstr(st.msg, ": messages nested deeper than 64") != NULL);
        }
        if (levels <= 30 && err == PG_ERR_OK) {
            /* Within the JSON bounds, but past max_anyvalue_depth (16). */
            CHECK_INT(pg_otlp_validate(a, req, NULL, NULL, &st), PG_ERR_MALFORMED);
        }
        pg_arena_destroy(a);
        free(j);
    }
}

/* A NUL from \u0000 and an invalid byte are repaired by pg_otlp_validate and counted. */
PG_TEST(test_json_utf8)
{
    static const char in[] = "{\"resourceProfiles\":[{\"schemaUrl\":\"a\\u0000b\xff\"}],"
                             "\"dictionary\":{\"stringTable\":[\"\"],\"mappingTable\":[{}],"
                             "\"locationTable\":[{}],\"functionTable\":[{}],\"linkTable\":[{}],"
                             "\"attributeTable\":[{}],\"stackTable\":[{}]}}";
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req;
    struct pg_otlp_decode_stats stats;
    struct pg_status st;

    PG_REQUIRE(jdecode(a, in, sizeof(in) - 1, &req, &st) == PG_ERR_OK);
    CHECK_INT(pg_otlp_validate(a, req, NULL, &stats, &st), PG_ERR_OK);
    CHECK_INT(stats.utf8_repaired, 1);
    CHECK_STR(req->resource_profiles[0]->schema_url, "a\xef\xbf\xbd" "b\xef\xbf\xbd");
    pg_arena_destroy(a);
}

/* What the Collector's pdata (pprofileotlp.ExportRequest.MarshalJSON, v0.161.0) wrote for
 * the golden request: resource attributes by string table reference, empty zero link ids,
 * an empty AnyValue in attribute_table[0], fields in its own order. It reads, validates,
 * has its references resolved, and otherwise matches the golden request. */
PG_TEST(test_collector_json)
{
    size_t n, gn;
    char *j = (char *)pg_test_read_rel("PG_SOURCE_DIR", ".",
                               "tests/fuzz/seeds/fuzz_otlp_json/appendix_a_collector.json", &n);
    uint8_t *g = pg_test_golden_otlp(&gn);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req, *want;
    struct pg_status st;

    PG_REQUIRE(j != NULL && g != NULL);
    PG_REQUIRE(pg_otlp_decode(a, g, gn, NULL, &want, NULL, &st) == PG_ERR_OK);
    if (jdecode(a, j, n, &req, &st) != PG_ERR_OK) {
        fprintf(stderr, "  %s\n", st.msg);
        CHECK(0);
    } else {
        const struct pg_otlp_resource *r = req->resource_profiles[0]->resource;
        const struct pg_otlp_profile *p = req->resource_profiles[0]->scope_profiles[0]->profiles[0];
        CHECK_INT(pg_otlp_validate(a, req, NULL, NULL, &st), PG_ERR_OK);
        CHECK_INT(r->n_attributes, 2);
        CHECK_STR(r->attributes[0]->key, "service.name");
        CHECK_STR(r->attributes[0]->value->string_value, "checkout");
        CHECK_STR(r->attributes[1]->key, "deployment.environment.name");
        CHECK(req->dictionary->link_table[1]->trace_id.len == 16 &&
              memcmp(req->dictionary->link_table[1]->trace_id.data,
                     want->dictionary->link_table[1]->trace_id.data, 16) == 0);
        CHECK_INT(p->n_samples, 2);
        CHECK(p->samples[0]->values[0] == 30000000);
        CHECK(p->time_unix_nano == 1700000000000000000ull);
        CHECK_INT(req->dictionary->n_stack_table, 3);
        CHECK_STR(req->dictionary->string_table[8], "main.main");
    }
    pg_arena_destroy(a);
    free(j);
    free(g);
}

/* json-c's tree is held against the arena's cap before parsing: a document of small
 * objects that would take far more heap than its size is refused as LIMIT. */
PG_TEST(test_json_memory_cap)
{
    size_t n = 0, cap = 200000 * 20 + 64;
    char *j = malloc(cap);
    struct pg_arena *a = pg_arena_create(8u << 20);
    struct pg_arena *big = pg_arena_create(1u << 30);
    struct pg_otlp_request *req;
    struct pg_status st;

    PG_REQUIRE(j != NULL);
    n += (size_t)snprintf(j + n, cap - n, "{\"dictionary\":{\"stackTable\":[{}");
    for (int i = 0; i < 200000; i++) {
        memcpy(j + n, ",{}", 3);
        n += 3;
    }
    n += (size_t)snprintf(j + n, cap - n, "]}}");
    CHECK_INT(jdecode(a, j, n, &req, &st), PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "over the 7 MiB left of the request's memory cap") != NULL ||
          strstr(st.msg, "over the 8 MiB left of the request's memory cap") != NULL);
    fprintf(stderr, "  %s\n", st.msg);
    CHECK_INT(jdecode(big, j, n, &req, &st), PG_ERR_OK);
    CHECK_INT(req->dictionary->n_stack_table, 200001);
    pg_arena_destroy(a);
    pg_arena_destroy(big);
    free(j);
}

/* The response, both ways: what the receiver answers and what the otlphttp exporter reads. */
PG_TEST(test_response)
{
    static const char want[] =
        "{\"partialSuccess\":{\"rejectedProfiles\":\"3\",\"errorMessage\":\"dropped \\\"x\\\"\"}}";
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_response resp;
    struct pg_otlp_partial ps;
    struct pg_status st;
    ProtobufCMessage *m;
    char *json;
    size_t n;

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__init(
        &resp);
    opentelemetry__proto__collector__profiles__v1development__export_profiles_partial_success__init(
        &ps);
    /* An empty partial_success is still written, as the Collector does. */
    resp.partial_success = &ps;
    PG_REQUIRE(pg_otlp_json_encode(a, &resp.base, &json, &n, &st) == PG_ERR_OK);
    CHECK_STR(json, "{\"partialSuccess\":{}}");
    ps.rejected_profiles = 3;
    ps.error_message = "dropped \"x\"";
    PG_REQUIRE(pg_otlp_json_encode(a, &resp.base, &json, &n, &st) == PG_ERR_OK);
    CHECK_STR(json, want);
    CHECK_INT(pg_otlp_json_decode(a, &pg_otlp_response_descriptor, json, n, &m, &st), PG_ERR_OK);
    if (m != NULL) {
        const struct pg_otlp_response *r = (const struct pg_otlp_response *)m;
        CHECK(r->partial_success != NULL && r->partial_success->rejected_profiles == 3);
        CHECK_STR(r->partial_success->error_message, "dropped \"x\"");
    }
    CHECK_INT(pg_otlp_json_decode(a, &pg_otlp_response_descriptor, "{}", 2, &m, &st), PG_ERR_OK);
    CHECK(m != NULL && ((struct pg_otlp_response *)m)->partial_success == NULL);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_fixtures_json_round_trip), PG_CASE(test_response), PG_CASE(test_json_memory_cap), PG_CASE(test_collector_json), PG_CASE(test_appendix_a_json),
             PG_CASE(test_anyvalue_kinds), PG_CASE(test_encode_ids_and_numbers),
             PG_CASE(test_malformed_json), PG_CASE(test_deep_json), PG_CASE(test_json_utf8))
