/* SPDX-License-Identifier: Apache-2.0
 * The size-caching OTLP encoder (otlp/otlp_encode.c) against protobuf-c's own
 * pack: byte-for-byte equality on every pprof fixture's translation, on the
 * golden Appendix A request, and on a hand-built request that exercises the
 * rules translation never produces (unknown fields, negative int32s, empty
 * oneof strings and bytes, nested arrays / kvlists, entity refs, timestamps). */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "otlp/otlp_encode.h"
#include "pg_test.h"
#include "pprof/translate.h"

static uint8_t *read_fixture(const char *rel, size_t *len)
{
    char path[1024];
    const char *dir = getenv("PG_FIXTURES");
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", rel);
    return pg_test_read_file(path, len);
}

/* Encodes @req both ways and checks the bytes are identical; returns the length. */
static size_t check_same(const struct pg_otlp_request *req, const char *what)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_status st;
    size_t n = protobuf_c_message_get_packed_size(&req->base), len = 0;
    uint8_t *ref = malloc(n ? n : 1), *ours = NULL;
    enum pg_err err;

    CHECK(ref != NULL);
    CHECK_INT(protobuf_c_message_pack(&req->base, ref), n);
    err = pg_otlp_request_encode(req, a, &ours, &len, &st);
    CHECK_INT(err, PG_ERR_OK);
    if (err == PG_ERR_OK) {
        CHECK_INT(len, n);
        if (len == n && memcmp(ref, ours, n) != 0) {
            size_t i = 0;
            while (i < n && ref[i] == ours[i]) {
                i++;
            }
            fprintf(stderr, "  %s: first difference at byte %zu of %zu\n", what, i, n);
            CHECK(!"encodings differ");
        }
    } else {
        fprintf(stderr, "  %s: %s\n", what, st.msg);
    }
    free(ref);
    pg_arena_destroy(a);
    return n;
}

static const char *const k_dirs[] = {"pprof/edge", "pprof/go", "pprof/golden", "sdk",
                                     "debug"};

PG_TEST(every_fixture_matches_protobuf_c)
{
    size_t files = 0;

    for (size_t d = 0; d < sizeof(k_dirs) / sizeof(k_dirs[0]); d++) {
        char path[1024];
        const char *root = getenv("PG_FIXTURES");
        DIR *dir;
        struct dirent *de;

        snprintf(path, sizeof(path), "%s/%s", root ? root : "tests/fixtures", k_dirs[d]);
        dir = opendir(path);
        CHECK(dir != NULL);
        if (dir == NULL) {
            continue;
        }
        while ((de = readdir(dir)) != NULL) {
            const char *n = de->d_name;
            size_t nl = strlen(n), len;
            char rel[512];
            uint8_t *data;
            struct pg_arena *a;
            struct pg_otlp_request *req = NULL;
            struct pg_translate_opts o;
            struct pg_status st;

            if (!(nl > 6 && strcmp(n + nl - 6, ".pprof") == 0) &&
                !(nl > 6 && strcmp(n + nl - 6, ".pb.gz") == 0) &&
                !(nl > 9 && strcmp(n + nl - 9, ".pprof.gz") == 0) &&
                !(nl > 12 && strcmp(n + nl - 12, ".pprof.gz.gz") == 0)) {
                continue;
            }
            snprintf(rel, sizeof(rel), "%s/%s", k_dirs[d], n);
            data = read_fixture(rel, &len);
            CHECK(data != NULL);
            if (data == NULL) {
                continue;
            }
            pg_translate_opts_default(&o);
            o.include_original_payload = files % 2 == 1; /* bytes field on half of them */
            a = pg_arena_create(0);
            CHECK_INT(pg_pprof_translate(a, data, len, &o, &req, NULL, &st), PG_ERR_OK);
            if (req != NULL) {
                check_same(req, rel);
                files++;
            }
            pg_arena_destroy(a);
            free(data);
        }
        closedir(dir);
    }
    CHECK(files >= 12);
}

PG_TEST(golden_appendix_a_matches_protobuf_c)
{
    size_t len;
    uint8_t *bin = read_fixture("pprof/golden/appendix_a.otlp.bin", &len);
    struct pg_arena *a = pg_arena_create(0);
    ProtobufCAllocator alloc;
    struct pg_otlp_request *req;

    CHECK(bin != NULL);
    if (bin == NULL) {
        pg_arena_destroy(a);
        return;
    }
    pg_arena_protobuf_allocator(a, &alloc);
    req = (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor, &alloc,
                                                              len, bin);
    CHECK(req != NULL);
    if (req != NULL) {
        /* protobuf-c re-encodes the golden bytes exactly, so ours must too. */
        CHECK_INT(check_same(req, "appendix_a"), len);
    }
    free(bin);
    pg_arena_destroy(a);
}

#define P(name) OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__##name##__INIT
#define RESPROF_INIT P(RESOURCE_PROFILES)
#define REQ_INIT                                                                                   \
    OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT

/* A request using every field and rule, built by hand. */
PG_TEST(edge_rules_match_protobuf_c)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request req = REQ_INIT;
    struct pg_otlp_resprof rp = RESPROF_INIT, rp_empty = RESPROF_INIT;
    struct pg_otlp_resprof *rps[2] = {&rp, &rp_empty};
    struct pg_otlp_resource res = OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
    Opentelemetry__Proto__Common__V1__EntityRef ent =
        OPENTELEMETRY__PROTO__COMMON__V1__ENTITY_REF__INIT;
    Opentelemetry__Proto__Common__V1__EntityRef *ents[1] = {&ent};
    char *ids[3] = {"service.name", "", "x"};
    struct pg_otlp_scopeprof sp = P(SCOPE_PROFILES);
    struct pg_otlp_scopeprof *sps[1] = {&sp};
    struct pg_otlp_scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
    struct pg_otlp_profile prof = P(PROFILE);
    struct pg_otlp_profile *profs[1] = {&prof};
    struct pg_otlp_valuetype vt = P(VALUE_TYPE);
    struct pg_otlp_sample s1 = P(SAMPLE), s2 = P(SAMPLE), s3 = P(SAMPLE), s4 = P(SAMPLE);
    struct pg_otlp_sample *samples[4] = {&s1, &s2, &s3, &s4};
    /* Samples and packed fields of 128 bytes and more (two- and three-byte lengths: the
     * writer patches a one-byte length and moves the body up). */
    static int32_t many_neg[20];
    static int64_t many_vals[2000];
    int32_t neg[3] = {-1, 0, 300};
    int64_t vals[3] = {-5, 0, INT64_MAX};
    int32_t deep[12] = {1, -1, 127, 128, 16383, 16384, INT32_MAX, INT32_MIN, 0, 2, 3, 4};
    uint64_t ts[2] = {1, UINT64_MAX};
    struct pg_otlp_dict dict = P(PROFILES_DICTIONARY);
    char *strs[3] = {"", "k", "\xc3\xa9t\xc3\xa9"};
    struct pg_otlp_kvu kvus[9], *kvup[9];
    struct pg_otlp_anyvalue av[9], inner[2], *innerp[2];
    struct pg_otlp_array arr = OPENTELEMETRY__PROTO__COMMON__V1__ARRAY_VALUE__INIT;
    struct pg_otlp_kvlist kl = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE_LIST__INIT;
    struct pg_otlp_kv kv = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT, *kvp[1] = {&kv};
    struct pg_otlp_kv skv = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT, *skvp[1] = {&skv};
    struct pg_otlp_anyvalue skv_val = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
    struct pg_otlp_link lk = P(LINK), *lkp[1] = {&lk};
    struct pg_otlp_location loc = P(LOCATION), *locp[1] = {&loc};
    struct pg_otlp_line line = P(LINE), *linep[1] = {&line};
    struct pg_otlp_function fn = P(FUNCTION), *fnp[1] = {&fn};
    struct pg_otlp_mapping mp = P(MAPPING), *mpp[1] = {&mp};
    struct pg_otlp_stack stk = P(STACK), *stkp[1] = {&stk};
    uint8_t unk_data[3] = {0x02, 0xaa, 0xbb}; /* length-delimited: prefix + 2 bytes */
    uint8_t unk_var[1] = {0x05};
    ProtobufCMessageUnknownField unk[2] = {
        {.tag = 15, .wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, .len = 3,
         .data = unk_data},
        {.tag = 3000, .wire_type = PROTOBUF_C_WIRE_TYPE_VARINT, .len = 1, .data = unk_var}};
    uint8_t id16[16] = {1, 2, 3}, id8[8] = {9};
    struct pg_arena *a2;
    ProtobufCAllocator alloc;
    uint8_t *bytes;
    size_t len;
    struct pg_status st;

    /* every AnyValue case, including the zero-ish oneof values that are still written */
    for (int i = 0; i < 9; i++) {
        opentelemetry__proto__common__v1__any_value__init(&av[i]);
        opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&kvus[i]);
        kvus[i].key_strindex = 1;
        kvus[i].value = &av[i];
        kvup[i] = &kvus[i];
    }
    av[0].value_case = PG_OTLP_ANYVALUE_STR;
    av[0].string_value = "";          /* a distinct empty string: written */
    av[1].value_case = PG_OTLP_ANYVALUE_STR;
    av[1].string_value = (char *)protobuf_c_empty_string; /* the default: skipped */
    av[2].value_case = PG_OTLP_ANYVALUE_BOOL;
    av[3].value_case = PG_OTLP_ANYVALUE_INT;
    av[3].int_value = -7;
    av[4].value_case = PG_OTLP_ANYVALUE_DOUBLE;
    av[4].double_value = -0.0;
    av[5].value_case = PG_OTLP_ANYVALUE_BYTES; /* empty bytes: written */
    av[6].value_case = PG_OTLP_ANYVALUE_STRINDEX;
    av[6].string_value_strindex = -2;
    for (int i = 0; i < 2; i++) {
        opentelemetry__proto__common__v1__any_value__init(&inner[i]);
        innerp[i] = &inner[i];
    }
    inner[0].value_case = PG_OTLP_ANYVALUE_INT;
    inner[1].value_case = PG_OTLP_ANYVALUE_KVLIST;
    inner[1].kvlist_value = &kl;
    kl.n_values = 1;
    kl.values = kvp;
    kv.key = "nested";
    kv.key_strindex = -1;
    arr.n_values = 2;
    arr.values = innerp;
    av[7].value_case = PG_OTLP_ANYVALUE_ARRAY;
    av[7].array_value = &arr;
    av[8].value_case = PG_OTLP_ANYVALUE_ARRAY; /* selected but NULL: skipped */
    kvus[2].unit_strindex = 2;
    kvus[3].base.n_unknown_fields = 2;
    kvus[3].base.unknown_fields = unk;

    skv.key = "service.name";
    skv.value = &skv_val;
    skv_val.value_case = PG_OTLP_ANYVALUE_STR;
    skv_val.string_value = "bench";
    ent.type = "service";
    ent.n_id_keys = 3;
    ent.id_keys = ids;
    ent.n_description_keys = 1;
    ent.description_keys = ids;
    res.n_attributes = 1;
    res.attributes = skvp;
    res.dropped_attributes_count = 3;
    res.n_entity_refs = 1;
    res.entity_refs = ents;
    scope.name = "pprofgate";
    scope.version = "";
    scope.n_attributes = 1;
    scope.attributes = skvp;
    vt.type_strindex = 1;
    vt.unit_strindex = -3;
    s1.stack_index = 0;
    s1.n_attribute_indices = 3;
    s1.attribute_indices = neg;
    s1.link_index = -1;
    s1.n_values = 3;
    s1.values = vals;
    s1.n_timestamps_unix_nano = 2;
    s1.timestamps_unix_nano = ts;
    s2.base.n_unknown_fields = 1;
    s2.base.unknown_fields = &unk[1];
    for (int i = 0; i < 20; i++) {
        many_neg[i] = -i - 1;
    }
    for (int i = 0; i < 2000; i++) {
        many_vals[i] = INT64_MAX - i;
    }
    s3.stack_index = 200;
    s3.n_attribute_indices = 20; /* 200 bytes packed */
    s3.attribute_indices = many_neg;
    s3.link_index = 3;
    s3.n_values = 14; /* 126 bytes packed, sample 337 bytes */
    s3.values = many_vals;
    s3.n_timestamps_unix_nano = 2;
    s3.timestamps_unix_nano = ts;
    s4.n_attribute_indices = 12; /* 120 bytes packed */
    s4.attribute_indices = many_neg;
    s4.n_values = 2000; /* 18000 bytes packed */
    s4.values = many_vals;
    s4.base.n_unknown_fields = 2;
    s4.base.unknown_fields = unk;
    prof.sample_type = &vt;
    prof.n_samples = 4;
    prof.samples = samples;
    prof.time_unix_nano = 1700000000000000000ull;
    prof.duration_nano = 10;
    prof.period_type = &vt;
    prof.period = -1;
    prof.profile_id.len = 16;
    prof.profile_id.data = id16;
    prof.dropped_attributes_count = 1;
    prof.original_payload_format = "pprof";
    prof.original_payload.len = 3;
    prof.original_payload.data = unk_data;
    prof.n_attribute_indices = 1;
    prof.attribute_indices = neg;
    sp.scope = &scope;
    sp.n_profiles = 1;
    sp.profiles = profs;
    sp.schema_url = "https://x";
    rp.resource = &res;
    rp.n_scope_profiles = 1;
    rp.scope_profiles = sps;
    rp_empty.base.n_unknown_fields = 1;
    rp_empty.base.unknown_fields = &unk[0];
    lk.trace_id.len = 16;
    lk.trace_id.data = id16;
    lk.span_id.len = 8;
    lk.span_id.data = id8;
    line.function_index = 1;
    line.line = -4;
    line.column = 9;
    loc.mapping_index = 1;
    loc.address = 0xffffffffffffull;
    loc.n_lines = 1;
    loc.lines = linep;
    loc.n_attribute_indices = 2;
    loc.attribute_indices = neg + 1;
    fn.name_strindex = 1;
    fn.start_line = -10;
    mp.memory_start = 0x400000;
    mp.memory_limit = 0x500000;
    mp.filename_strindex = 2;
    stk.n_location_indices = 12; /* past the short-array recount: length from the cache */
    stk.location_indices = deep;
    dict.n_mapping_table = 1;
    dict.mapping_table = mpp;
    dict.n_location_table = 1;
    dict.location_table = locp;
    dict.n_function_table = 1;
    dict.function_table = fnp;
    dict.n_link_table = 1;
    dict.link_table = lkp;
    dict.n_string_table = 3;
    dict.string_table = strs;
    dict.n_attribute_table = 9;
    dict.attribute_table = kvup;
    dict.n_stack_table = 1;
    dict.stack_table = stkp;
    req.n_resource_profiles = 2;
    req.resource_profiles = rps;
    req.dictionary = &dict;
    req.base.n_unknown_fields = 1;
    req.base.unknown_fields = &unk[1];
    check_same(&req, "hand-built");

    /* Round trip through protobuf-c's decoder: unknown fields come back and re-encode equal. */
    CHECK_INT(pg_otlp_request_encode(&req, a, &bytes, &len, &st), PG_ERR_OK);
    a2 = pg_arena_create(0);
    pg_arena_protobuf_allocator(a2, &alloc);
    {
        struct pg_otlp_request *back = (struct pg_otlp_request *)protobuf_c_message_unpack(
            &pg_otlp_request_descriptor, &alloc, len, bytes);
        CHECK(back != NULL);
        if (back != NULL) {
            check_same(back, "decoded hand-built");
        }
    }
    pg_arena_destroy(a2);

    /* The empty request encodes to nothing, like protobuf-c. */
    {
        struct pg_otlp_request empty = REQ_INIT;
        CHECK_INT(check_same(&empty, "empty"), 0);
    }
    pg_arena_destroy(a);
}

/* Sample bytes near and past what the encoder's scratch block holds (256 KiB): 180 KiB come
 * from the scratch (grown four times); then the second profile runs past it mid-way and is
 * sized and written instead, and so is the small third one after it; and a profile of 40 000
 * samples, which is sized and written without trying the scratch. */
PG_TEST(samples_past_the_scratch_match_protobuf_c)
{
    struct pg_otlp_request req = REQ_INIT;
    struct pg_otlp_resprof rp = RESPROF_INIT, *rps[1] = {&rp};
    struct pg_otlp_scopeprof sp = P(SCOPE_PROFILES), *sps[1] = {&sp};
    struct pg_otlp_profile pr[3] = {P(PROFILE), P(PROFILE), P(PROFILE)};
    struct pg_otlp_profile *prp[3] = {&pr[0], &pr[1], &pr[2]};
    struct pg_otlp_sample small = P(SAMPLE), big = P(SAMPLE);
    struct pg_otlp_sample *first[2] = {&small, &small}, *many[40];
    static int64_t vals[1000];
    int32_t attrs[3] = {1, 2, 3};

    for (int i = 0; i < 1000; i++) {
        vals[i] = INT64_MAX - i; /* 9 bytes each */
    }
    small.stack_index = 1;
    small.n_attribute_indices = 3;
    small.attribute_indices = attrs;
    small.link_index = 2;
    small.n_values = 1;
    small.values = vals + 20;
    big.stack_index = 5;
    big.n_values = 1000; /* 9 KiB a sample */
    big.values = vals;
    for (int i = 0; i < 40; i++) {
        many[i] = i % 2 ? &big : &small;
    }
    pr[0].n_samples = 2;
    pr[0].samples = first;
    pr[1].n_samples = 40;
    pr[1].samples = many;
    pr[2].n_samples = 2;
    pr[2].samples = first;
    sp.n_profiles = 3;
    sp.profiles = prp;
    rp.n_scope_profiles = 1;
    rp.scope_profiles = sps;
    req.n_resource_profiles = 1;
    req.resource_profiles = rps;
    CHECK(check_same(&req, "past the scratch") > ((size_t)256 << 10) / 2);
    {
        /* a dictionary after those samples: in the scratch, then past it */
        struct pg_otlp_dict dict = P(PROFILES_DICTIONARY);
        struct pg_otlp_stack stk = P(STACK), *stkp[1] = {&stk};
        struct pg_otlp_link lk = P(LINK), lk2 = P(LINK), lk3 = P(LINK);
        struct pg_otlp_link *lkp[3] = {&lk, &lk2, &lk3};
        uint8_t unk_var[1] = {0x07};
        ProtobufCMessageUnknownField unk = {.tag = 9, .wire_type = PROTOBUF_C_WIRE_TYPE_VARINT,
                                            .len = 1, .data = unk_var};
        static int32_t locs[100];
        static char long_str[90000];
        char *strs[3] = {"", "main", long_str};
        uint8_t id16[16] = {1}, id8[8] = {2};

        for (int i = 0; i < 100; i++) {
            locs[i] = i * 3; /* 100 + 33 two-byte indexes: a 166-byte stack */
        }
        memset(long_str, 'x', sizeof(long_str) - 1);
        stk.n_location_indices = 100;
        stk.location_indices = locs;
        lk.trace_id.len = 16;
        lk.trace_id.data = id16;
        lk.span_id.len = 8;
        lk.span_id.data = id8;
        dict.n_stack_table = 1;
        dict.stack_table = stkp;
        lk2.trace_id.len = 3; /* not the 16 + 8 shape translation writes */
        lk2.trace_id.data = id16;
        lk3 = lk; /* that shape with an unknown field */
        lk3.base.n_unknown_fields = 1;
        lk3.base.unknown_fields = &unk;
        dict.n_link_table = 3;
        dict.link_table = lkp;
        dict.n_string_table = 2;
        dict.string_table = strs;
        req.dictionary = &dict;
        check_same(&req, "dictionary in the scratch");
        dict.n_string_table = 3; /* 90 KB more: past the scratch */
        CHECK(check_same(&req, "dictionary past the scratch") > ((size_t)256 << 10));
        req.dictionary = NULL;
    }
    for (int i = 0; i < 40; i++) {
        many[i] = &big; /* 360 KiB: over the scratch within this profile */
    }
    CHECK(check_same(&req, "past the scratch") > ((size_t)256 << 10));
    {
        /* so many samples that the scratch is not even tried for them */
        static struct pg_otlp_sample *lots[40000];
        for (int i = 0; i < 40000; i++) {
            lots[i] = &small;
        }
        pr[1].n_samples = 40000;
        pr[1].samples = lots;
        CHECK(check_same(&req, "many samples") > 40000 * 10);
    }
}

/* A small request's size cache and scratch are kept per thread: encoding on a thread that
 * then exits must free them (the ASan+UBSan run's leak check fails otherwise), and a kept
 * set must serve a second, larger request on the same thread. */
static void *encode_on_thread(void *arg)
{
    const char *rel = arg;
    size_t len;
    uint8_t *data = read_fixture(rel, &len);
    struct pg_translate_opts o;
    struct pg_status st;

    CHECK(data != NULL);
    if (data != NULL) {
        for (int i = 0; i < 2; i++) {
            struct pg_arena *a = pg_arena_create(0);
            struct pg_otlp_request *req = NULL;
            pg_translate_opts_default(&o);
            o.include_original_payload = i == 1;
            CHECK_INT(pg_pprof_translate(a, data, len, &o, &req, NULL, &st), PG_ERR_OK);
            if (req != NULL) {
                check_same(req, rel);
            }
            pg_arena_destroy(a);
        }
        free(data);
    }
    return NULL;
}

PG_TEST(kept_buffers_freed_at_thread_exit)
{
    pthread_t t;

    CHECK_INT(pthread_create(&t, NULL, encode_on_thread, (void *)"sdk/push0.pprof.gz"), 0);
    CHECK_INT(pthread_join(t, NULL), 0);
}

PG_TEST(arena_cap_is_a_limit)
{
    size_t len;
    uint8_t *data = read_fixture("sdk/push0.pprof.gz", &len), *out = NULL;
    struct pg_arena *a = pg_arena_create(0), *small = pg_arena_create(256);
    struct pg_otlp_request *req = NULL;
    struct pg_status st;

    CHECK(data != NULL);
    if (data != NULL && pg_pprof_translate(a, data, len, NULL, &req, NULL, &st) == PG_ERR_OK) {
        CHECK_INT(pg_otlp_request_encode(req, small, &out, &len, &st), PG_ERR_LIMIT);
        CHECK(out == NULL);
    }
    free(data);
    pg_arena_destroy(small);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(every_fixture_matches_protobuf_c),
             PG_CASE(golden_appendix_a_matches_protobuf_c), PG_CASE(edge_rules_match_protobuf_c),
             PG_CASE(samples_past_the_scratch_match_protobuf_c), PG_CASE(kept_buffers_freed_at_thread_exit),
             PG_CASE(arena_cap_is_a_limit))
