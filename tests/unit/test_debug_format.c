/* SPDX-License-Identifier: Apache-2.0
 * Debug exporter text: the worked example of otlp-profiles.md §3.5 (the
 * Appendix A request, unpacked from its hex) at all three verbosities against
 * golden files in tests/fixtures/debug/, plus value formatting tables and
 * out-of-range dictionary references. PG_UPDATE_GOLDEN=1 rewrites goldens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/otlp.h"
#include "exporter/debug_format.h"
#include "pg_test.h"

/* Appendix A: 741 bytes, SHA-256 eaad605e...27af. */
static const char appendix_a_hex[] =
    "0aac020a430a1a0a0c736572766963652e6e616d65120a0a08636865636b6f75"
    "740a250a1b6465706c6f796d656e742e656e7669726f6e6d656e742e6e616d65"
    "12060a0470726f6412bb010a160a0d7070726f662d676174657761791205302e"
    "312e30123e0a0408041005120d0801120103180122048087a70e120808022204"
    "80ade2041900002a36fe9c97172080c8afa0252a04080410053080ade2045a03"
    "04050612380a04080d100e120a08011201031801220103120508022201011900"
    "002a36fe9c97172080c8afa0252a04080410053080ade2045a030405061a2768"
    "747470733a2f2f6f70656e74656c656d657472792e696f2f736368656d61732f"
    "312e33392e301a2768747470733a2f2f6f70656e74656c656d657472792e696f"
    "2f736368656d61732f312e33392e3012b3030a000a100880808002108080a802"
    "20012a0201021200120d08011080a080021a0408011014120d08011080c08002"
    "1a040802100a1a001a0808061006180720121a080808100818072008221c0a10"
    "0000000000000000000000000000000012080000000000000000221c0a104bf9"
    "2f3577b34da6a3ce929d0e0e4736120800f067aa0ba902b72a002a0b2f617070"
    "2f7365727665722a1f70726f636573732e65786563757461626c652e6275696c"
    "645f69642e676e752a1b7070726f662e6d617070696e672e6861735f66756e63"
    "74696f6e732a036370752a0b6e616e6f7365636f6e64732a096d61696e2e776f"
    "726b2a076d61696e2e676f2a096d61696e2e6d61696e2a0768616e646c65722a"
    "197070726f662e70726f66696c652e64726f705f6672616d65732a197070726f"
    "662e70726f66696c652e6b6565705f6672616d65732a157070726f662e70726f"
    "66696c652e646f635f75726c2a0773616d706c65732a05636f756e743200320c"
    "080212080a066162633132333206080312021001320a080912060a042f617069"
    "3206080a12020a003206080b12020a003206080c12020a003a003a040a020102"
    "3a030a0102"
;

static struct pg_otlp_request *unpack_example(struct pg_arena *arena)
{
    size_t n = strlen(appendix_a_hex) / 2;
    uint8_t *buf = pg_arena_alloc(arena, n);
    ProtobufCAllocator alloc;

    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(appendix_a_hex + 2 * i, "%2x", &v);
        buf[i] = (uint8_t)v;
    }
    CHECK_INT(n, 741);
    pg_arena_protobuf_allocator(arena, &alloc);
    return (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor,
                                                               &alloc, n, buf);
}

/* Compares @got with tests/fixtures/debug/@name, printing the first
 * differing line. */
static void check_golden(const char *name, const char *got)
{
    char path[1024];
    const char *dir = getenv("PG_FIXTURES");
    unsigned char *want;
    size_t len;

    snprintf(path, sizeof(path), "%s/debug/%s", dir ? dir : "tests/fixtures", name);
    if (getenv("PG_UPDATE_GOLDEN") != NULL) {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        if (f != NULL) {
            fputs(got, f);
            fclose(f);
        }
        return;
    }
    want = pg_test_read_file(path, &len);
    CHECK(want != NULL);
    if (want == NULL) {
        fprintf(stderr, "  missing golden %s\n", path);
        return;
    }
    if (strcmp((const char *)want, got) != 0) {
        const char *a = (const char *)want, *b = got;
        int line = 1;

        while (*a && *a == *b) {
            line += *a == '\n';
            a++;
            b++;
        }
        fprintf(stderr, "  %s differs at line %d:\n  want: %.60s\n  got:  %.60s\n", name, line, a,
                b);
        pg_test_failures_++;
    }
    free(want);
}

PG_TEST(test_worked_example_basic)
{
    struct pg_arena *arena = pg_arena_create(0);
    struct pg_otlp_request *req = unpack_example(arena);
    struct pg_debug_buf b = {0};

    CHECK(req != NULL);
    if (req != NULL) {
        CHECK_INT(pg_debug_sample_records(req), 4);
        CHECK_INT(pg_debug_resource_profiles(req), 1);
        pg_debug_format_summary(&b, pg_debug_resource_profiles(req), pg_debug_sample_records(req));
        CHECK_STR(b.p, "Profiles\t{\"resource profiles\": 1, \"sample records\": 4}\n");
        pg_debug_buf_reset(&b);
        pg_debug_format_text(&b, req, PG_DEBUG_BASIC);
        CHECK_INT(b.len, 0);
    }
    pg_debug_buf_free(&b);
    pg_arena_destroy(arena);
}

PG_TEST(test_worked_example_normal)
{
    struct pg_arena *arena = pg_arena_create(0);
    struct pg_otlp_request *req = unpack_example(arena);
    struct pg_debug_buf b = {0};

    CHECK(req != NULL);
    if (req != NULL) {
        pg_debug_format_text(&b, req, PG_DEBUG_NORMAL);
        check_golden("worked_example.normal.txt", b.p ? b.p : "");
    }
    pg_debug_buf_free(&b);
    pg_arena_destroy(arena);
}

PG_TEST(test_worked_example_detailed)
{
    struct pg_arena *arena = pg_arena_create(0);
    struct pg_otlp_request *req = unpack_example(arena);
    struct pg_debug_buf b = {0};

    CHECK(req != NULL);
    if (req != NULL) {
        pg_debug_format_text(&b, req, PG_DEBUG_DETAILED);
        check_golden("worked_example.detailed.txt", b.p ? b.p : "");
        /* The additions operators rely on, spelled out. */
        CHECK(strstr(b.p, "    Attribute #3\n         -> Key: Int(9)\n"
                          "         -> Value: Str(/api)\n") != NULL);
        CHECK(strstr(b.p, "    Link #1\n         -> Trace ID: Str(4bf92f3577b34da6a3ce929d0e0e4736)\n"
                          "         -> Span ID: Str(00f067aa0ba902b7)\n") != NULL);
        CHECK(strstr(b.p, "        Link #1: trace_id=4bf92f3577b34da6a3ce929d0e0e4736 "
                          "span_id=00f067aa0ba902b7\n        Stack #1:\n"
                          "            main.work main.go:20\n"
                          "            main.main main.go:10\n") != NULL);
    }
    pg_debug_buf_free(&b);
    pg_arena_destroy(arena);
}

PG_TEST(test_go_time)
{
    static const struct {
        unsigned long long ns;
        const char *want;
    } cases[] = {
        {0, "1970-01-01 00:00:00 +0000 UTC"},
        {1700000000000000000ULL, "2023-11-14 22:13:20 +0000 UTC"},
        {1581452772000000321ULL, "2020-02-11 20:26:12.000000321 +0000 UTC"},
        {1581452772500000000ULL, "2020-02-11 20:26:12.5 +0000 UTC"},
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pg_debug_go_time(buf, sizeof(buf), cases[i].ns);
        CHECK_STR(buf, cases[i].want);
    }
}

PG_TEST(test_es6_double)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {3.14, "3.14"},       {1.5, "1.5"},         {100, "100"},
        {-2.5, "-2.5"},       {0.1, "0.1"},         {1e21, "1e+21"},
        {1e20, "100000000000000000000"},            {1e-7, "1e-7"},
        {0.000001, "0.000001"}, {123456789.25, "123456789.25"},
        {1.2345e-10, "1.2345e-10"}, {0, "0"},
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pg_debug_es6_double(buf, sizeof(buf), cases[i].v);
        CHECK_STR(buf, cases[i].want);
    }
    pg_debug_es6_double(buf, sizeof(buf), NAN);
    CHECK_STR(buf, "NaN");
    pg_debug_es6_double(buf, sizeof(buf), -INFINITY);
    CHECK_STR(buf, "-Infinity");
}

/* A hand-built request: typed attribute values and indices out of range. */
PG_TEST(test_values_and_missing_refs)
{
    static char *strings[] = {"", "k", "nested", "value"};
    uint8_t bytes[] = {1, 2, 3};
    pg_otlp_anyvalue vals[8];
    pg_otlp_kvu kvus[8];
    pg_otlp_kvu *attr_table[8];
    pg_otlp_kv nested_kv, res_kv[7];
    pg_otlp_kv *nested_kvs[1] = {&nested_kv}, *res_kvs[7];
    pg_otlp_kvlist kvlist;
    pg_otlp_anyvalue arr_items[2], *arr_ptrs[2] = {&arr_items[0], &arr_items[1]};
    pg_otlp_array arr;
    pg_otlp_dict dict;
    pg_otlp_sample sample, *samples[1] = {&sample};
    int32_t sample_attrs[] = {1, 9, 2};
    pg_otlp_profile prof, *profs[1] = {&prof};
    pg_otlp_scopeprof sp, *sps[1] = {&sp};
    pg_otlp_resource res;
    pg_otlp_resprof rp, *rps[1] = {&rp};
    struct pg_otlp_request req;
    struct pg_debug_buf b = {0};

    for (int i = 0; i < 8; i++) {
        opentelemetry__proto__common__v1__any_value__init(&vals[i]);
        opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&kvus[i]);
        kvus[i].key_strindex = 1;
        kvus[i].value = &vals[i];
        attr_table[i] = &kvus[i];
    }
    vals[1].value_case = PG_OTLP_ANYVALUE_INT;
    vals[1].int_value = 42;
    vals[2].value_case = PG_OTLP_ANYVALUE_DOUBLE;
    vals[2].double_value = 3.14;
    kvus[2].key_strindex = 77; /* missing key string */
    vals[3].value_case = PG_OTLP_ANYVALUE_BOOL;
    vals[3].bool_value = 1;
    vals[4].value_case = PG_OTLP_ANYVALUE_BYTES;
    vals[4].bytes_value.data = bytes;
    vals[4].bytes_value.len = 3;
    opentelemetry__proto__common__v1__key_value__init(&nested_kv);
    nested_kv.key = "nested";
    nested_kv.value = &vals[7];
    vals[7].value_case = PG_OTLP_ANYVALUE_STR;
    vals[7].string_value = "value";
    opentelemetry__proto__common__v1__key_value_list__init(&kvlist);
    kvlist.n_values = 1;
    kvlist.values = nested_kvs;
    vals[5].value_case = PG_OTLP_ANYVALUE_KVLIST;
    vals[5].kvlist_value = &kvlist;
    for (int i = 0; i < 2; i++) {
        opentelemetry__proto__common__v1__any_value__init(&arr_items[i]);
    }
    arr_items[0].value_case = PG_OTLP_ANYVALUE_STR;
    arr_items[0].string_value = "value";
    arr_items[1].value_case = PG_OTLP_ANYVALUE_BOOL;
    arr_items[1].bool_value = 1;
    opentelemetry__proto__common__v1__array_value__init(&arr);
    arr.n_values = 2;
    arr.values = arr_ptrs;
    vals[6].value_case = PG_OTLP_ANYVALUE_ARRAY;
    vals[6].array_value = &arr;

    for (int i = 0; i < 7; i++) {
        opentelemetry__proto__common__v1__key_value__init(&res_kv[i]);
        res_kv[i].key = "r";
        res_kv[i].value = &vals[i == 2 ? 0 : i];
        res_kvs[i] = &res_kv[i];
    }
    res_kv[0].value = NULL;

    opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&dict);
    dict.n_string_table = 4;
    dict.string_table = strings;
    dict.n_attribute_table = 7;
    dict.attribute_table = attr_table;
    opentelemetry__proto__profiles__v1development__sample__init(&sample);
    sample.n_attribute_indices = 3;
    sample.attribute_indices = sample_attrs;
    sample.link_index = 5; /* missing */
    sample.stack_index = 3; /* missing */
    opentelemetry__proto__profiles__v1development__profile__init(&prof);
    prof.n_samples = 1;
    prof.samples = samples;
    opentelemetry__proto__profiles__v1development__scope_profiles__init(&sp);
    sp.n_profiles = 1;
    sp.profiles = profs;
    opentelemetry__proto__resource__v1__resource__init(&res);
    res.n_attributes = 7;
    res.attributes = res_kvs;
    opentelemetry__proto__profiles__v1development__resource_profiles__init(&rp);
    rp.resource = &res;
    rp.n_scope_profiles = 1;
    rp.scope_profiles = sps;
    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        &req);
    req.n_resource_profiles = 1;
    req.resource_profiles = rps;
    req.dictionary = &dict;

    pg_debug_format_text(&b, &req, PG_DEBUG_DETAILED);
    CHECK(b.p != NULL);
    if (b.p == NULL) {
        return;
    }
    CHECK(strstr(b.p, "     -> r: Empty()\n") != NULL);
    CHECK(strstr(b.p, "     -> r: Int(42)\n") != NULL);
    CHECK(strstr(b.p, "     -> r: Bool(true)\n") != NULL);
    CHECK(strstr(b.p, "     -> r: Bytes(AQID)\n") != NULL);
    CHECK(strstr(b.p, "     -> r: Map({\"nested\":\"value\"})\n") != NULL);
    CHECK(strstr(b.p, "     -> r: Slice([\"value\",true])\n") != NULL);
    CHECK(strstr(b.p, "             -> k: Int(42)\n") != NULL);
    CHECK(strstr(b.p, "             -> [Missing Dictionary AttributeTable Item #9]\n") != NULL);
    CHECK(strstr(b.p, "             -> [Missing Dictionary Key String Item #77]: Double(3.14)\n") !=
          NULL);
    CHECK(strstr(b.p, "        Link: [Missing Dictionary LinkTable Item #5]\n") != NULL);
    CHECK(strstr(b.p, "        Stack: [Missing Dictionary StackTable Item #3]\n") != NULL);
    /* normal: the profile line resolves nothing; attribute-less profile */
    pg_debug_buf_reset(&b);
    pg_debug_format_text(&b, &req, PG_DEBUG_NORMAL);
    CHECK(strstr(b.p, "ResourceProfiles #0 r= r=42 r= r=true r=AQID r={\"nested\":\"value\"} "
                      "r=[\"value\",true]\n") != NULL);
    CHECK(strstr(b.p, "ScopeProfiles #0\n samples=1\n") != NULL);
    pg_debug_buf_free(&b);
}

/* The buffer cap: appends past max are dropped and flagged. */
PG_TEST(test_buffer_cap)
{
    struct pg_debug_buf b = {0};

    b.max = 10;
    pg_debug_buf_printf(&b, "%s", "12345");
    CHECK(!b.truncated);
    pg_debug_buf_printf(&b, "%s", "1234567890");
    CHECK(b.truncated);
    CHECK_STR(b.p, "12345");
    pg_debug_buf_free(&b);
}

PG_TEST_MAIN(PG_CASE(test_worked_example_basic), PG_CASE(test_worked_example_normal),
             PG_CASE(test_worked_example_detailed), PG_CASE(test_go_time),
             PG_CASE(test_es6_double), PG_CASE(test_values_and_missing_refs),
             PG_CASE(test_buffer_cap))
