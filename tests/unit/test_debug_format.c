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
        pg_debug_format_text(&b, req, PG_DEBUG_BASIC, true);
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
        pg_debug_format_text(&b, req, PG_DEBUG_NORMAL, true);
        check_golden("worked_example.normal.txt", b.p ? b.p : "");
        /* Each profile line names what it holds (the collector's does not). */
        CHECK(strstr(b.p, " samples=2 sample_type=cpu/nanoseconds total=40ms period=10ms "
                          "period_type=cpu/nanoseconds start=2023-11-14T22:13:20Z duration=10s "
                          "pprof.profile.drop_frames=") != NULL);
        CHECK(strstr(b.p, " samples=2 sample_type=samples/count total=4 period=10ms ") != NULL);
        /* pprofgate_annotations: false is the collector's text, byte for byte. */
        pg_debug_buf_reset(&b);
        pg_debug_format_text(&b, req, PG_DEBUG_NORMAL, false);
        check_golden("worked_example.normal.collector.txt", b.p ? b.p : "");
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
        pg_debug_format_text(&b, req, PG_DEBUG_DETAILED, false);
        check_golden("worked_example.detailed.collector.txt", b.p ? b.p : "");
        CHECK(strstr(b.p, "Attribute table:\n     -> Key: Int(12)\n     -> Value: Str()\n"
                          "     -> unit: Int(0)\nLink table:\n"
                          "     -> Trace ID: Str(4bf92f3577b34da6a3ce929d0e0e4736)\n") != NULL);
        CHECK(strstr(b.p, "Stack") == NULL && strstr(b.p, "Top frames") == NULL);
        pg_debug_buf_reset(&b);
        pg_debug_format_text(&b, req, PG_DEBUG_DETAILED, true);
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

    pg_debug_format_text(&b, &req, PG_DEBUG_DETAILED, true);
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
    /* Annotations with nothing to name: no sample type, no period, no value. */
    CHECK(strstr(b.p, "    Sample type    : ?/?\n    Period         : none\n"
                      "    Duration       : 0s\n    Total          : 0 in 1 samples\n"
                      "    Top frames     : top 1 of 1 leaf frames by self value\n"
                      "        0      -  [Missing Dictionary StackTable Item #3]\n"
                      "    Sample #0\n        Values: [] ?/?\n") != NULL);
    /* normal: the profile line resolves nothing; attribute-less profile */
    pg_debug_buf_reset(&b);
    pg_debug_format_text(&b, &req, PG_DEBUG_NORMAL, false);
    CHECK(strstr(b.p, "ResourceProfiles #0 r= r=42 r= r=true r=AQID r={\"nested\":\"value\"} "
                      "r=[\"value\",true]\n") != NULL);
    CHECK(strstr(b.p, "ScopeProfiles #0\n samples=1\n") != NULL);
    pg_debug_buf_reset(&b);
    pg_debug_format_text(&b, &req, PG_DEBUG_NORMAL, true);
    CHECK(strstr(b.p, "ScopeProfiles #0\n samples=1 sample_type=?/? total=0 "
                      "start=1970-01-01T00:00:00Z duration=0s\n") != NULL);
    pg_debug_buf_free(&b);
}

PG_TEST(test_go_duration_and_rfc3339)
{
    static const struct {
        long long ns;
        const char *want;
    } durations[] = {
        {0, "0s"},           {1, "1ns"},
        {999, "999ns"},      {1000, "1\xc2\xb5s"},
        {1500, "1.5\xc2\xb5s"}, {10000000, "10ms"},
        {623993448, "623.993448ms"}, {1000000000, "1s"},
        {10000000000LL, "10s"}, {90000000000LL, "1m30s"},
        {3600000000000LL, "1h0m0s"}, {3723500000000LL, "1h2m3.5s"},
        {-1500000, "-1.5ms"},
    };
    static const struct {
        unsigned long long ns;
        const char *want;
    } times[] = {
        {0, "1970-01-01T00:00:00Z"},
        {1700000000000000000ULL, "2023-11-14T22:13:20Z"},
        {1581452772000000321ULL, "2020-02-11T20:26:12.000000321Z"},
        {1581452772500000000ULL, "2020-02-11T20:26:12.5Z"},
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
        pg_debug_go_duration(buf, sizeof(buf), durations[i].ns);
        CHECK_STR(buf, durations[i].want);
    }
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
        pg_debug_rfc3339(buf, sizeof(buf), times[i].ns);
        CHECK_STR(buf, times[i].want);
    }
}

/* Two profiles of one pprof: samples/count (profile 0) and cpu/nanoseconds
 * (profile 1), with the scope's sample_type_order; the count profile's
 * samples cover every kind of leaf frame. */
struct annot_fixture {
    pg_otlp_valuetype vt_count, vt_cpu;
    pg_otlp_function fns[8], *fn_ptrs[8];
    pg_otlp_line lines[10], *line_ptrs[10];
    pg_otlp_location locs[10], *loc_ptrs[10];
    pg_otlp_mapping maps[2], *map_ptrs[2];
    int32_t stack_locs[10][2];
    pg_otlp_stack stacks[10], *stack_ptrs[10];
    pg_otlp_sample samples[12], *sample_ptrs[12];
    int64_t values[12];
    uint64_t stamps[3];
    pg_otlp_profile profs[2], *prof_ptrs[2];
    pg_otlp_anyvalue order_vals[4], *order_ptrs[4], order;
    pg_otlp_array order_arr;
    pg_otlp_kv order_kv, *scope_attrs[1];
    pg_otlp_scope scope;
    pg_otlp_scopeprof sp, *sps[1];
    pg_otlp_resprof rp, *rps[1];
    pg_otlp_dict dict;
    struct pg_otlp_request req;
};

static char *annot_strings[] = {"",   "samples", "count", "cpu", "nanoseconds", "f1", "f2",
                                "f3", "f4",      "f5",    "f6",  "f7",          "a.go", "/bin/app"};

static void annot_setup(struct annot_fixture *f)
{
    /* sample i: its stack, its value (-1: timestamps only) */
    static const struct { int32_t stack; int64_t value; } rows[] = {
        {1, 10}, {2, 60}, {3, 30}, {4, 30}, {5, 5}, {6, 1},
        {8, 20}, {9, 40}, {0, 2},  {2, 15}, {7, -1},
    };
    size_t ns = sizeof(rows) / sizeof(rows[0]);

    memset(f, 0, sizeof(*f));
    opentelemetry__proto__profiles__v1development__value_type__init(&f->vt_count);
    f->vt_count.type_strindex = 1;
    f->vt_count.unit_strindex = 2;
    opentelemetry__proto__profiles__v1development__value_type__init(&f->vt_cpu);
    f->vt_cpu.type_strindex = 3;
    f->vt_cpu.unit_strindex = 4;
    for (int i = 0; i < 8; i++) { /* function i: name fi, a.go */
        opentelemetry__proto__profiles__v1development__function__init(&f->fns[i]);
        f->fns[i].name_strindex = i ? 4 + i : 0;
        f->fns[i].filename_strindex = i ? 12 : 0;
        f->fn_ptrs[i] = &f->fns[i];
    }
    for (int i = 0; i < 2; i++) {
        opentelemetry__proto__profiles__v1development__mapping__init(&f->maps[i]);
        f->map_ptrs[i] = &f->maps[i];
    }
    f->maps[1].filename_strindex = 13;
    for (int i = 0; i < 10; i++) { /* location i (1..7): fi at line 10*i */
        opentelemetry__proto__profiles__v1development__line__init(&f->lines[i]);
        f->lines[i].function_index = i;
        f->lines[i].line = 10 * i;
        f->line_ptrs[i] = &f->lines[i];
        opentelemetry__proto__profiles__v1development__location__init(&f->locs[i]);
        f->loc_ptrs[i] = &f->locs[i];
        if (i >= 1 && i <= 7) {
            f->locs[i].n_lines = 1;
            f->locs[i].lines = &f->line_ptrs[i];
        }
    }
    /* location 8: f1 at line 11 inlined into f2 at line 21 (callee first) */
    f->lines[8].function_index = 1;
    f->lines[8].line = 11;
    f->lines[9].function_index = 2;
    f->lines[9].line = 21;
    f->locs[8].n_lines = 2;
    f->locs[8].lines = &f->line_ptrs[8];
    /* location 9: an address without lines in /bin/app */
    f->locs[9].mapping_index = 1;
    f->locs[9].address = 0x1234;
    for (int i = 0; i < 10; i++) { /* stack i: [location i, location 1] */
        opentelemetry__proto__profiles__v1development__stack__init(&f->stacks[i]);
        f->stack_locs[i][0] = i;
        f->stack_locs[i][1] = 1;
        f->stacks[i].n_location_indices = i ? 2 : 0;
        f->stacks[i].location_indices = f->stack_locs[i];
        f->stack_ptrs[i] = &f->stacks[i];
    }
    for (size_t i = 0; i < ns; i++) {
        opentelemetry__proto__profiles__v1development__sample__init(&f->samples[i]);
        f->samples[i].stack_index = rows[i].stack;
        if (rows[i].value >= 0) {
            f->values[i] = rows[i].value;
            f->samples[i].n_values = 1;
            f->samples[i].values = &f->values[i];
        } else {
            f->samples[i].n_timestamps_unix_nano = 3;
            f->samples[i].timestamps_unix_nano = f->stamps;
        }
        f->sample_ptrs[i] = &f->samples[i];
    }
    f->values[11] = 1500000;
    opentelemetry__proto__profiles__v1development__sample__init(&f->samples[11]);
    f->samples[11].stack_index = 1;
    f->samples[11].n_values = 1;
    f->samples[11].values = &f->values[11];
    f->sample_ptrs[11] = &f->samples[11];
    for (int i = 0; i < 2; i++) {
        opentelemetry__proto__profiles__v1development__profile__init(&f->profs[i]);
        f->prof_ptrs[i] = &f->profs[i];
    }
    f->profs[0].sample_type = &f->vt_count;
    f->profs[0].n_samples = ns;
    f->profs[0].samples = f->sample_ptrs;
    f->profs[1].sample_type = &f->vt_cpu;
    f->profs[1].period_type = &f->vt_cpu;
    f->profs[1].period = 1000000;
    f->profs[1].time_unix_nano = 1700000000000000000ULL;
    f->profs[1].duration_nano = 90000000000ULL;
    f->profs[1].n_samples = 1;
    f->profs[1].samples = &f->sample_ptrs[11];
    /* pprof's order: cpu/nanoseconds first (profile 1), then samples/count */
    for (int i = 0; i < 4; i++) {
        opentelemetry__proto__common__v1__any_value__init(&f->order_vals[i]);
        f->order_vals[i].value_case = PG_OTLP_ANYVALUE_INT;
        f->order_ptrs[i] = &f->order_vals[i];
    }
    f->order_vals[0].int_value = 1;
    f->order_vals[1].int_value = 0;
    opentelemetry__proto__common__v1__array_value__init(&f->order_arr);
    f->order_arr.n_values = 2;
    f->order_arr.values = f->order_ptrs;
    opentelemetry__proto__common__v1__any_value__init(&f->order);
    f->order.value_case = PG_OTLP_ANYVALUE_ARRAY;
    f->order.array_value = &f->order_arr;
    opentelemetry__proto__common__v1__key_value__init(&f->order_kv);
    f->order_kv.key = "pprof.scope.sample_type_order";
    f->order_kv.value = &f->order;
    f->scope_attrs[0] = &f->order_kv;
    opentelemetry__proto__common__v1__instrumentation_scope__init(&f->scope);
    f->scope.n_attributes = 1;
    f->scope.attributes = f->scope_attrs;
    opentelemetry__proto__profiles__v1development__scope_profiles__init(&f->sp);
    f->sp.scope = &f->scope;
    f->sp.n_profiles = 2;
    f->sp.profiles = f->prof_ptrs;
    f->sps[0] = &f->sp;
    opentelemetry__proto__profiles__v1development__resource_profiles__init(&f->rp);
    f->rp.n_scope_profiles = 1;
    f->rp.scope_profiles = f->sps;
    f->rps[0] = &f->rp;
    opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&f->dict);
    f->dict.n_string_table = sizeof(annot_strings) / sizeof(annot_strings[0]);
    f->dict.string_table = annot_strings;
    f->dict.n_function_table = 8;
    f->dict.function_table = f->fn_ptrs;
    f->dict.n_mapping_table = 2;
    f->dict.mapping_table = f->map_ptrs;
    f->dict.n_location_table = 10;
    f->dict.location_table = f->loc_ptrs;
    f->dict.n_stack_table = 10;
    f->dict.stack_table = f->stack_ptrs;
    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        &f->req);
    f->req.n_resource_profiles = 1;
    f->req.resource_profiles = f->rps;
    f->req.dictionary = &f->dict;
}

PG_TEST(test_annotations)
{
    static struct annot_fixture f;
    struct pg_debug_buf b = {0};

    annot_setup(&f);
    pg_debug_format_text(&b, &f.req, PG_DEBUG_NORMAL, true);
    CHECK_STR(b.p, "ResourceProfiles #0\n"
                   "ScopeProfiles #0 pprof.scope.sample_type_order=[1,0] "
                   "pprof_sample_types=cpu/nanoseconds,samples/count\n"
                   " samples=11 sample_type=samples/count total=216 start=1970-01-01T00:00:00Z "
                   "duration=0s\n"
                   " samples=1 sample_type=cpu/nanoseconds total=1.5ms period=1ms "
                   "period_type=cpu/nanoseconds start=2023-11-14T22:13:20Z duration=1m30s\n");

    pg_debug_buf_reset(&b);
    pg_debug_format_text(&b, &f.req, PG_DEBUG_DETAILED, true);
    /* Top 5 of 10 leaf frames: f2's two samples add up; equal values in
     * function order; the inline leaf (f1:11), not its caller; an address;
     * timestamps count one each (f7: 3). */
    CHECK(strstr(b.p, "pprof sample types: [0] cpu/nanoseconds = Profile #1, "
                      "[1] samples/count = Profile #0\nProfile #0\n") != NULL);
    CHECK(strstr(b.p, "    Dropped attributes count: 0\n"
                      "    Sample type    : samples/count\n"
                      "    Period         : none\n"
                      "    Duration       : 0s\n"
                      "    Total          : 216 in 11 samples\n"
                      "    Top frames     : top 5 of 10 leaf frames by self value\n"
                      "        75  34.7%  f2 a.go:20\n"
                      "        40  18.5%  0x1234 /bin/app\n"
                      "        30  13.9%  f3 a.go:30\n"
                      "        30  13.9%  f4 a.go:40\n"
                      "        20   9.3%  f1 a.go:11\n"
                      "    Sample #0\n        Values: [10] samples/count\n") != NULL);
    CHECK(strstr(b.p, "    Sample #10\n        Values: [] samples/count\n") != NULL);
    CHECK(strstr(b.p, "    Sample type    : cpu/nanoseconds\n"
                      "    Period         : 1ms (cpu/nanoseconds)\n"
                      "    Duration       : 1m30s\n"
                      "    Total          : 1.5ms in 1 samples\n"
                      "    Top frames     : top 1 of 1 leaf frames by self value\n"
                      "        1.5ms 100.0%  f1 a.go:10\n"
                      "    Sample #0\n        Values: [1500000] cpu/nanoseconds\n") != NULL);
    /* ... and none of it in the collector's text. */
    pg_debug_buf_reset(&b);
    pg_debug_format_text(&b, &f.req, PG_DEBUG_DETAILED, false);
    CHECK(strstr(b.p, "pprof sample types") == NULL && strstr(b.p, "Sample type") == NULL &&
          strstr(b.p, "Top frames") == NULL && strstr(b.p, "Stack #") == NULL &&
          strstr(b.p, "        Values: [10]\n") != NULL);

    /* References that do not resolve: a location index past the table, a
     * function index past the table. */
    f.stack_locs[5][0] = 99;
    f.values[4] = 100;
    f.lines[6].function_index = 42;
    f.values[5] = 90;
    pg_debug_buf_reset(&b);
    pg_debug_format_text(&b, &f.req, PG_DEBUG_DETAILED, true);
    CHECK(strstr(b.p, "    Top frames     : top 5 of 10 leaf frames by self value\n"
                      "        100  25.0%  [Missing Dictionary LocationTable Item #99]\n"
                      "         90  22.5%  ?? ??:60\n"
                      "         75  18.8%  f2 a.go:20\n") != NULL);
    CHECK(strstr(b.p, "        Stack #5:\n            [Missing Dictionary LocationTable Item #99]\n"
                      "            f1 a.go:10\n") != NULL);

    /* An order that does not match the profiles is not decoded: a
     * processor dropped one (2 entries, 1 profile), or it is not a
     * permutation. */
    f.sp.n_profiles = 1;
    pg_debug_buf_reset(&b);
    pg_debug_format_text(&b, &f.req, PG_DEBUG_NORMAL, true);
    CHECK(strstr(b.p, "sample_type_order=[1,0]\n") != NULL);
    f.sp.n_profiles = 2;
    f.order_vals[1].int_value = 1;
    pg_debug_buf_reset(&b);
    pg_debug_format_text(&b, &f.req, PG_DEBUG_DETAILED, true);
    CHECK(strstr(b.p, "pprof sample types") == NULL);
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
             PG_CASE(test_go_duration_and_rfc3339), PG_CASE(test_annotations),
             PG_CASE(test_buffer_cap))
