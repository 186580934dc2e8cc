/* SPDX-License-Identifier: Apache-2.0
 * OTLP request decoding and validation (otlp/otlp_decode.h): every pprof
 * fixture translated and encoded decodes, validates and re-encodes to the same
 * bytes; the golden request of otlp-profiles.md Appendix A; one mutation of the
 * golden request per check, each with its code and message; bytes that are
 * truncated, garbage or of an older layout (v1.9 made by re-tagging Samples);
 * UTF-8 repair of invalid bytes and embedded NULs, counted. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/pb_wire.h"
#include "otlp/otlp_decode.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_lazy.h"
#include "otlp/otlp_unpack.h"
#include "pg_test.h"
#include "pg_test_fixtures.h"
#include "pprof/translate.h"

/* ---- helpers -------------------------------------------------------------- */

static uint8_t *golden(size_t *len)
{
    return pg_test_golden_otlp(len);
}

static enum pg_err decode(struct pg_arena *a, const uint8_t *b, size_t n,
                          const struct pg_otlp_decode_opts *o, struct pg_otlp_request **req,
                          struct pg_otlp_decode_stats *stats, struct pg_status *st)
{
    memset(st, 0, sizeof(*st));
    return pg_otlp_decode(a, b, n, o, req, stats, st);
}

/* @b decodes, validates and encodes back to exactly @b. */
static void check_round_trip(const char *name, const uint8_t *b, size_t n)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = NULL;
    struct pg_otlp_decode_stats stats;
    struct pg_status st;
    uint8_t *again = NULL;
    size_t again_n = 0;
    enum pg_err err = decode(a, b, n, NULL, &req, &stats, &st);

    if (err != PG_ERR_OK) {
        fprintf(stderr, "  %s: %s\n", name, st.msg);
    }
    CHECK_INT(err, PG_ERR_OK);
    if (err == PG_ERR_OK) {
        CHECK_INT(stats.version, PG_OTLP_WIRE_CURRENT);
        CHECK_INT(stats.utf8_repaired, 0);
        CHECK(pg_otlp_request_encode(req, a, &again, &again_n, &st) == PG_ERR_OK);
        CHECK_INT(again_n, n);
        if (again_n != n || memcmp(again, b, n) != 0) {
            fprintf(stderr, "  %s: re-encoded bytes differ\n", name);
            CHECK(0);
        }
    }
    pg_arena_destroy(a);
}

/* ---- fixtures -------------------------------------------------------------- */

static void round_trip_fixture(const char *name, size_t i, const uint8_t *wire, size_t n, void *arg)
{
    (void)i;
    (void)arg;
    check_round_trip(name, wire, n);
}

PG_TEST(test_fixtures_round_trip)
{
    size_t done = pg_test_each_fixture_request(round_trip_fixture, NULL);

    CHECK_INT(done, PG_TEST_N_PPROF_FIXTURES);
}

PG_TEST(test_golden_appendix_a)
{
    size_t n;
    uint8_t *b = golden(&n);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req;
    struct pg_otlp_decode_stats stats;
    struct pg_status st;

    PG_REQUIRE(b != NULL);
    CHECK_INT(n, 741);
    check_round_trip("appendix_a", b, n);
    CHECK_INT(decode(a, b, n, NULL, &req, &stats, &st), PG_ERR_OK);
    CHECK_INT(stats.resource_profiles, 1);
    CHECK_INT(stats.profiles, 2);
    CHECK_INT(stats.samples, 4);
    CHECK_INT(req->dictionary->n_string_table, 15);
    CHECK_STR(req->resource_profiles[0]->resource->attributes[0]->value->string_value, "checkout");
    CHECK_INT(pg_otlp_wire_version_detect(b, n), PG_OTLP_WIRE_CURRENT);
    pg_arena_destroy(a);
    free(b);
}

/* ---- mutations of the golden request ----------------------------------------- */

typedef void (*mutate_fn)(struct pg_otlp_request *r, struct pg_arena *a);

#define RP(r)      ((r)->resource_profiles[0])
#define PROF(r, k) (RP(r)->scope_profiles[0]->profiles[k])
#define SAMP(r, k, i) (PROF(r, k)->samples[i])
#define DICT(r)    ((r)->dictionary)

static int32_t *ints(struct pg_arena *a, size_t n, const int32_t *v)
{
    return pg_arena_memdup(a, v, n * sizeof(int32_t));
}

static void m_stack_index(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    SAMP(r, 1, 1)->stack_index = 3;
}
static void m_stack_negative(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    SAMP(r, 0, 0)->stack_index = -1;
}
static void m_location_index(struct pg_otlp_request *r, struct pg_arena *a)
{
    static const int32_t v[] = {1, 3};
    DICT(r)->stack_table[1]->location_indices = ints(a, 2, v);
}
static void m_function_index(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->location_table[1]->lines[0]->function_index = 3;
}
static void m_mapping_index(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->location_table[2]->mapping_index = 2;
}
static void m_sample_attr(struct pg_otlp_request *r, struct pg_arena *a)
{
    static const int32_t v[] = {7};
    SAMP(r, 0, 0)->attribute_indices = ints(a, 1, v);
}
static void m_link_index(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    SAMP(r, 1, 0)->link_index = 2;
}
static void m_function_name(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->function_table[1]->name_strindex = 15;
}
static void m_function_file(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->function_table[2]->filename_strindex = 1000;
}
static void m_sample_type(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    PROF(r, 1)->sample_type->type_strindex = 15;
}
static void m_period_type(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    PROF(r, 0)->period_type->unit_strindex = -3;
}
static void m_attr_key(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->attribute_table[3]->key_strindex = 15;
}
static void m_attr_unit(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->attribute_table[2]->unit_strindex = 20;
}
static void m_attr_value_strindex(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->attribute_table[1]->value->value_case = PG_OTLP_ANYVALUE_STRINDEX;
    DICT(r)->attribute_table[1]->value->string_value_strindex = 99;
}
static void m_mapping_file(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->mapping_table[1]->filename_strindex = 15;
}
static void m_mapping_attr(struct pg_otlp_request *r, struct pg_arena *a)
{
    static const int32_t v[] = {1, 9};
    DICT(r)->mapping_table[1]->attribute_indices = ints(a, 2, v);
}
static void m_profile_attr(struct pg_otlp_request *r, struct pg_arena *a)
{
    static const int32_t v[] = {4, 5, 7};
    PROF(r, 1)->attribute_indices = ints(a, 3, v);
}
static void m_resource_key_strindex(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    RP(r)->resource->attributes[1]->key = "";
    RP(r)->resource->attributes[1]->key_strindex = 99;
}
/* attributes[1].value becomes a kvlist holding [@a, @b]. */
static void nest_kvlist(struct pg_otlp_request *r, struct pg_arena *a, struct pg_otlp_kv *x,
                        struct pg_otlp_kv *y)
{
    struct pg_otlp_anyvalue *v = pg_arena_zalloc(a, sizeof(*v));
    struct pg_otlp_kvlist *kl = pg_arena_zalloc(a, sizeof(*kl));
    opentelemetry__proto__common__v1__any_value__init(v);
    opentelemetry__proto__common__v1__key_value_list__init(kl);
    kl->n_values = 2;
    kl->values = pg_arena_calloc(a, 2, sizeof(*kl->values));
    kl->values[0] = x;
    kl->values[1] = y;
    v->value_case = PG_OTLP_ANYVALUE_KVLIST;
    v->kvlist_value = kl;
    RP(r)->resource->attributes[1]->value = v;
}
static void m_nested_key_strindex(struct pg_otlp_request *r, struct pg_arena *a)
{
    struct pg_otlp_kv *x = pg_arena_zalloc(a, sizeof(*x));
    opentelemetry__proto__common__v1__key_value__init(x);
    x->key_strindex = 99;
    nest_kvlist(r, a, RP(r)->resource->attributes[0], x);
}
static void m_nested_dup_key(struct pg_otlp_request *r, struct pg_arena *a)
{
    nest_kvlist(r, a, RP(r)->resource->attributes[0], RP(r)->resource->attributes[0]);
}
static void m_key_and_strindex(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    RP(r)->resource->attributes[0]->key_strindex = 2;
}
static void m_zero_string(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->string_table[0] = "x";
}
static void m_zero_mapping(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->mapping_table[0]->memory_start = 4096;
}
static void m_zero_stack(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->stack_table[0] = DICT(r)->stack_table[1];
}
static void m_zero_attr(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->attribute_table[0] = DICT(r)->attribute_table[2];
}
static void m_zero_link(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->link_table[0] = DICT(r)->link_table[1];
}
static void m_no_links(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->n_link_table = 0;
}
static void m_no_strings(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->n_string_table = 0;
}
static void m_no_dictionary(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    r->dictionary = NULL;
}
static void m_dup_profile_key(struct pg_otlp_request *r, struct pg_arena *a)
{
    static const int32_t v[] = {4, 5, 4};
    PROF(r, 0)->attribute_indices = ints(a, 3, v);
}
static void m_dup_long_list(struct pg_otlp_request *r, struct pg_arena *a)
{
    /* 12 entries: the sorted path (attribute 6 twice). */
    static const int32_t v[] = {1, 2, 3, 4, 5, 6, 6, 1, 2, 3, 4, 5};
    PROF(r, 0)->attribute_indices = ints(a, 12, v);
    PROF(r, 0)->n_attribute_indices = 12;
}
static void m_dup_resource_key(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    RP(r)->resource->attributes[1]->key = "service.name";
}
static void m_trace_id_len(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->link_table[1]->trace_id.len = 15;
}
static void m_span_id_len(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    DICT(r)->link_table[1]->span_id.len = 4;
}
static void m_profile_id_len(struct pg_otlp_request *r, struct pg_arena *a)
{
    static const uint8_t id[3] = {1, 2, 3};
    PROF(r, 1)->profile_id.data = pg_arena_memdup(a, id, 3);
    PROF(r, 1)->profile_id.len = 3;
}
static void m_values_timestamps(struct pg_otlp_request *r, struct pg_arena *a)
{
    static const uint64_t ts[2] = {1, 2};
    SAMP(r, 0, 1)->timestamps_unix_nano = pg_arena_memdup(a, ts, sizeof(ts));
    SAMP(r, 0, 1)->n_timestamps_unix_nano = 2;
}
static void m_payload_format_alone(struct pg_otlp_request *r, struct pg_arena *a)
{
    (void)a;
    PROF(r, 0)->original_payload_format = "pprof";
}
static void m_deep_anyvalue(struct pg_otlp_request *r, struct pg_arena *a)
{
    /* attribute_table[1].value wrapped in 20 single-element arrays. */
    struct pg_otlp_anyvalue *v = DICT(r)->attribute_table[1]->value;
    for (int i = 0; i < 20; i++) {
        struct pg_otlp_anyvalue *outer = pg_arena_zalloc(a, sizeof(*outer));
        struct pg_otlp_array *arr = pg_arena_zalloc(a, sizeof(*arr));
        opentelemetry__proto__common__v1__any_value__init(outer);
        opentelemetry__proto__common__v1__array_value__init(arr);
        arr->n_values = 1;
        arr->values = pg_arena_calloc(a, 1, sizeof(*arr->values));
        arr->values[0] = v;
        outer->value_case = PG_OTLP_ANYVALUE_ARRAY;
        outer->array_value = arr;
        v = outer;
    }
    DICT(r)->attribute_table[1]->value = v;
}

struct mutation {
    const char *name;
    mutate_fn fn;
    struct pg_otlp_limits limits;
    enum pg_err err;
    const char *msg; /* the whole message */
};

#define P0 "resource_profiles[0].scope_profiles[0].profiles[0]."
#define P1 "resource_profiles[0].scope_profiles[0].profiles[1]."
#define NOLIM {0}

static const struct mutation mutations[] = {
    {"stack index", m_stack_index, NOLIM, PG_ERR_MALFORMED,
     P1 "samples[1].stack_index 3 is past stack_table (3 entries)"},
    {"negative stack index", m_stack_negative, NOLIM, PG_ERR_MALFORMED,
     P0 "samples[0].stack_index -1 is negative"},
    {"location index", m_location_index, NOLIM, PG_ERR_MALFORMED,
     "dictionary.stack_table[1].location_indices[1] 3 is past location_table (3 entries)"},
    {"function index", m_function_index, NOLIM, PG_ERR_MALFORMED,
     "dictionary.location_table[1].lines[0].function_index 3 is past function_table (3 "
     "entries)"},
    {"mapping index", m_mapping_index, NOLIM, PG_ERR_MALFORMED,
     "dictionary.location_table[2].mapping_index 2 is past mapping_table (2 entries)"},
    {"sample attribute index", m_sample_attr, NOLIM, PG_ERR_MALFORMED,
     P0 "samples[0].attribute_indices[0] 7 is past attribute_table (7 entries)"},
    {"link index", m_link_index, NOLIM, PG_ERR_MALFORMED,
     P1 "samples[0].link_index 2 is past link_table (2 entries)"},
    {"function name strindex", m_function_name, NOLIM, PG_ERR_MALFORMED,
     "dictionary.function_table[1].name_strindex 15 is past string_table (15 entries)"},
    {"function filename strindex", m_function_file, NOLIM, PG_ERR_MALFORMED,
     "dictionary.function_table[2].filename_strindex 1000 is past string_table (15 entries)"},
    {"sample_type strindex", m_sample_type, NOLIM, PG_ERR_MALFORMED,
     P1 "sample_type.type_strindex 15 is past string_table (15 entries)"},
    {"period_type strindex", m_period_type, NOLIM, PG_ERR_MALFORMED,
     P0 "period_type.unit_strindex -3 is negative"},
    {"attribute key strindex", m_attr_key, NOLIM, PG_ERR_MALFORMED,
     "dictionary.attribute_table[3].key_strindex 15 is past string_table (15 entries)"},
    {"attribute unit strindex", m_attr_unit, NOLIM, PG_ERR_MALFORMED,
     "dictionary.attribute_table[2].unit_strindex 20 is past string_table (15 entries)"},
    {"AnyValue string_value_strindex", m_attr_value_strindex, NOLIM, PG_ERR_MALFORMED,
     "dictionary.attribute_table[1].value.string_value_strindex 99 is past string_table (15 "
     "entries)"},
    {"mapping filename strindex", m_mapping_file, NOLIM, PG_ERR_MALFORMED,
     "dictionary.mapping_table[1].filename_strindex 15 is past string_table (15 entries)"},
    {"mapping attribute index", m_mapping_attr, NOLIM, PG_ERR_MALFORMED,
     "dictionary.mapping_table[1].attribute_indices[1] 9 is past attribute_table (7 "
     "entries)"},
    {"profile attribute index", m_profile_attr, NOLIM, PG_ERR_MALFORMED,
     P1 "attribute_indices[2] 7 is past attribute_table (7 entries)"},
    {"resource key_strindex", m_resource_key_strindex, NOLIM, PG_ERR_MALFORMED,
     "resource_profiles[0].resource.attributes[1].key_strindex 99 is past string_table (15 "
     "entries)"},
    {"nested key_strindex", m_nested_key_strindex, NOLIM, PG_ERR_MALFORMED,
     "resource_profiles[0].resource.attributes[1].value (nested) key_strindex 99 is past "
     "string_table (15 entries)"},
    {"repeated key in a nested kvlist", m_nested_dup_key, NOLIM, PG_ERR_MALFORMED,
     "resource_profiles[0].resource.attributes[1].value.kvlist_value repeats key "
     "\"service.name\" (entries 0 and 1)"},
    {"key and key_strindex", m_key_and_strindex, NOLIM, PG_ERR_MALFORMED,
     "resource_profiles[0].resource.attributes[0] sets both key \"service.name\" and "
     "key_strindex 2"},
    {"string_table[0] not empty", m_zero_string, NOLIM, PG_ERR_MALFORMED,
     "dictionary.string_table[0] is \"x\", not the empty string"},
    {"mapping_table[0] not zero", m_zero_mapping, NOLIM, PG_ERR_MALFORMED,
     "dictionary.mapping_table[0] is not the zero value"},
    {"stack_table[0] not zero", m_zero_stack, NOLIM, PG_ERR_MALFORMED,
     "dictionary.stack_table[0] is not the zero value"},
    {"attribute_table[0] not zero", m_zero_attr, NOLIM, PG_ERR_MALFORMED,
     "dictionary.attribute_table[0] is not the zero value"},
    {"link_table[0] not zero", m_zero_link, NOLIM, PG_ERR_MALFORMED,
     "dictionary.link_table[0] is not the zero value"},
    {"no link_table", m_no_links, NOLIM, PG_ERR_MALFORMED,
     "dictionary.link_table is empty: index 0 must hold the zero value"},
    {"no string_table", m_no_strings, NOLIM, PG_ERR_MALFORMED,
     "dictionary.string_table is empty: index 0 must hold the zero value"},
    {"no dictionary", m_no_dictionary, NOLIM, PG_ERR_MALFORMED, "the request has no dictionary"},
    {"repeated key in profile attributes", m_dup_profile_key, NOLIM, PG_ERR_MALFORMED,
     P0 "attribute_indices repeats key \"pprof.profile.drop_frames\" (attributes 4 and 4)"},
    {"repeated key in a long list", m_dup_long_list, NOLIM, PG_ERR_MALFORMED,
     P0 "attribute_indices repeats key \"process.executable.build_id.gnu\""},
    {"repeated resource key", m_dup_resource_key, NOLIM, PG_ERR_MALFORMED,
     "resource_profiles[0].resource.attributes repeats key \"service.name\" (entries 0 and 1)"},
    {"trace_id length", m_trace_id_len, NOLIM, PG_ERR_MALFORMED,
     "dictionary.link_table[1].trace_id is 15 bytes, not 16"},
    {"span_id length", m_span_id_len, NOLIM, PG_ERR_MALFORMED,
     "dictionary.link_table[1].span_id is 4 bytes, not 8"},
    {"profile_id length", m_profile_id_len, NOLIM, PG_ERR_MALFORMED,
     P1 "profile_id is 3 bytes, not 16"},
    {"values vs timestamps", m_values_timestamps, NOLIM, PG_ERR_MALFORMED,
     "resource_profiles[0].scope_profiles[0].profiles[0].samples[1]: 1 values but 2 timestamps_unix_nano (must be equal when both are set)"},
    {"payload format alone", m_payload_format_alone, NOLIM, PG_ERR_MALFORMED,
     "resource_profiles[0].scope_profiles[0].profiles[0]: original_payload_format and original_payload must be set together"},
    {"AnyValue too deep", m_deep_anyvalue, NOLIM, PG_ERR_LIMIT,
     "dictionary.attribute_table[1].value nests arrays/kvlists deeper than "
     "max_anyvalue_depth=16"},
    /* Each cap one below what the golden request has. */
    {"max_samples", NULL, {.max_samples = 3}, PG_ERR_LIMIT,
     "the request has more than max_samples=3 samples (4 up to "
     "resource_profiles[0].scope_profiles[0].profiles[1])"},
    {"max_profiles", NULL, {.max_profiles = 1}, PG_ERR_LIMIT,
     "the request has more than max_profiles=1 profiles"},
    {"max_locations", NULL, {.max_locations = 2}, PG_ERR_LIMIT,
     "dictionary.location_table has 3 entries, over the limit max_locations=2"},
    {"max_functions", NULL, {.max_functions = 2}, PG_ERR_LIMIT,
     "dictionary.function_table has 3 entries, over the limit max_functions=2"},
    {"max_mappings", NULL, {.max_mappings = 1}, PG_ERR_LIMIT,
     "dictionary.mapping_table has 2 entries, over the limit max_mappings=1"},
    {"max_strings", NULL, {.max_strings = 14}, PG_ERR_LIMIT,
     "dictionary.string_table has 15 entries, over the limit max_strings=14"},
    {"max_stacks", NULL, {.max_stacks = 2}, PG_ERR_LIMIT,
     "dictionary.stack_table has 3 entries, over the limit max_stacks=2"},
    {"max_attributes", NULL, {.max_attributes = 6}, PG_ERR_LIMIT,
     "dictionary.attribute_table has 7 entries, over the limit max_attributes=6"},
    {"max_links", NULL, {.max_links = 1}, PG_ERR_LIMIT,
     "dictionary.link_table has 2 entries, over the limit max_links=1"},
    {"max_string_bytes", NULL, {.max_string_bytes = 38}, PG_ERR_LIMIT,
     "resource_profiles[0].scope_profiles[0].schema_url is 39 bytes, over "
     "max_string_bytes=38"},
    {"max_stack_depth", NULL, {.max_stack_depth = 1}, PG_ERR_LIMIT,
     "dictionary.stack_table[1].location_indices has 2 locations, over the limit "
     "max_stack_depth=1"},
    {"max_sample_values", m_values_timestamps, {.max_sample_values = 1}, PG_ERR_LIMIT,
     P0 "samples[1].timestamps_unix_nano has 2 entries, over the limit max_sample_values=1"},
    {"max_anyvalue_depth", m_deep_anyvalue, {.max_anyvalue_depth = 25}, PG_ERR_OK, ""},
};

/* Each mutation twice: samples and links unpacked, and kept in wire form (lazy_min_samples
 * 1, otlp/otlp_lazy.h): the same code and message either way. */
PG_TEST(test_mutations)
{
    size_t n;
    uint8_t *b = golden(&n);

    size_t lazy_cases = 0;

    PG_REQUIRE(b != NULL);
    for (size_t i = 0; i < 2 * (sizeof(mutations) / sizeof(mutations[0])); i++) {
        const struct mutation *m = &mutations[i / 2];
        struct pg_arena *a = pg_arena_create(0);
        struct pg_otlp_request *req = NULL, *back = NULL;
        struct pg_otlp_decode_opts o = {.limits = &m->limits, .lazy_min_samples = i % 2};
        struct pg_status st;
        uint8_t *wire = b;
        size_t wire_n = n;
        enum pg_err err;

        if (m->fn != NULL) {
            PG_REQUIRE(decode(a, b, n, NULL, &req, NULL, &st) == PG_ERR_OK);
            m->fn(req, a);
            PG_REQUIRE(pg_otlp_request_encode(req, a, &wire, &wire_n, &st) == PG_ERR_OK);
        }
        if (i % 2 == 1) { /* the lazy path is the one taken: samples and links as records */
            struct pg_otlp_request *raw = NULL;
            struct pg_otlp_unpack_info info;
            if (pg_otlp_unpack_request_lazy(a, wire, wire_n, 64, 1, &raw, &info) ==
                PG_OTLP_UNPACK_OK) {
                if (raw->dictionary != NULL && pg_otlp_lazy_links(raw->dictionary) != NULL &&
                    pg_otlp_lazy_of(PROF(raw, 0)) != NULL) {
                    lazy_cases++;
                } else {
                    fprintf(stderr, "  %s: not lazy\n", m->name);
                }
            }
        }
        err = decode(a, wire, wire_n, &o, &back, NULL, &st);
        if (err != m->err || strcmp(st.msg, m->msg) != 0) {
            fprintf(stderr, "  %s%s: got %s \"%s\"\n  want %s \"%s\"\n", m->name,
                    i % 2 ? " (lazy)" : "", pg_err_name(err), st.msg, pg_err_name(m->err),
                    m->msg);
            CHECK(0);
        }
        CHECK(err != PG_ERR_OK ? back == NULL : back != NULL);
        pg_arena_destroy(a);
    }
    /* All but the ones with no dictionary / no links, and the nesting past the bound. */
    CHECK(lazy_cases + 4 >= sizeof(mutations) / sizeof(mutations[0]));
    free(b);
}

/* A sample attribute list past max_attrs_per_sample (the golden request has one each). */
PG_TEST(test_cap_attrs_per_sample)
{
    size_t n;
    uint8_t *b = golden(&n);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req;
    struct pg_otlp_limits lim = {.max_attrs_per_sample = 1};
    struct pg_otlp_decode_opts o = {.limits = &lim};
    static const int32_t v[] = {1, 3};
    struct pg_status st;
    uint8_t *wire;
    size_t wire_n;

    PG_REQUIRE(b != NULL);
    PG_REQUIRE(decode(a, b, n, &o, &req, NULL, &st) == PG_ERR_OK);
    SAMP(req, 0, 0)->attribute_indices = ints(a, 2, v);
    SAMP(req, 0, 0)->n_attribute_indices = 2;
    PG_REQUIRE(pg_otlp_request_encode(req, a, &wire, &wire_n, &st) == PG_ERR_OK);
    CHECK_INT(decode(a, wire, wire_n, &o, &req, NULL, &st), PG_ERR_LIMIT);
    CHECK_STR(st.msg, P0 "samples[0].attribute_indices has 2 entries, over the limit "
                         "max_attrs_per_sample=1");
    pg_arena_destroy(a);
    free(b);
}

/* ---- bytes that are not a current request ---------------------------------- */

/* Re-numbers every Sample's tags between the current layout and v1.9 (the test's own walk,
 * independent of the decoder's): current 2 attribute_indices -> 3, 3 link_index -> 4,
 * 4 values -> 2. */
static void retag(uint8_t *base, struct pg_pb r, int level)
{
    static const uint32_t path[4] = {1, 2, 2, 2};
    uint32_t f, wt;
    uint64_t v;
    struct pg_pb sub;

    while (r.p < r.end) {
        uint8_t *tag = (uint8_t *)(uintptr_t)r.p;
        PG_REQUIRE(pg_pb_field(&r, &f, &wt, &v, &sub));
        if (level == 4) {
            static const uint8_t to[5] = {0, 1, 3, 4, 2};
            if (f >= 2 && f <= 4) {
                *tag = (uint8_t)(to[f] << 3 | wt);
            }
        } else if (f == path[level] && wt == PG_PB_LEN) {
            retag(base, sub, level + 1);
        }
    }
}

PG_TEST(test_v1_9_refused_and_converted)
{
    size_t n;
    uint8_t *b = golden(&n);
    uint8_t *old = malloc(n);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = NULL;
    struct pg_otlp_decode_opts o = {.convert_v1_9 = true};
    struct pg_otlp_decode_stats stats;
    struct pg_status st;
    uint8_t *again;
    size_t again_n;

    PG_REQUIRE(b != NULL && old != NULL);
    memcpy(old, b, n);
    retag(old, (struct pg_pb){old, old + n}, 0);
    CHECK(memcmp(old, b, n) != 0);
    CHECK_INT(pg_otlp_wire_version_detect(old, n), PG_OTLP_WIRE_V1_9);
    CHECK_INT(decode(a, old, n, NULL, &req, &stats, &st), PG_ERR_MALFORMED);
    CHECK(req == NULL);
    CHECK(strstr(st.msg, "v1.9") != NULL);
    CHECK_STR(st.msg, "otlp: the request is in the OTLP Profiles v1.9 layout (Sample fields 2-4 "
                      "numbered as before v1.10); only v1.10/v1.11 is accepted (Collector "
                      "v0.148.0 or later)");
    /* Converted, it is the golden request again; @old itself is left as it was. */
    {
        uint8_t *keep = malloc(n);
        memcpy(keep, old, n);
        CHECK_INT(decode(a, old, n, &o, &req, &stats, &st), PG_ERR_OK);
        CHECK(memcmp(keep, old, n) == 0);
        free(keep);
    }
    CHECK_INT(stats.version, PG_OTLP_WIRE_V1_9);
    if (req != NULL) {
        CHECK(pg_otlp_request_encode(req, a, &again, &again_n, &st) == PG_ERR_OK);
        CHECK(again_n == n && memcmp(again, b, n) == 0);
    }
    pg_arena_destroy(a);
    free(old);
    free(b);
}

/* Appends field @f (wire type @wt) with @body to a Profile: the caller builds the rest. */
static size_t put_len(uint8_t *p, uint32_t f, const uint8_t *body, size_t n)
{
    size_t o = 0;
    p[o++] = (uint8_t)(f << 3 | PG_PB_LEN);
    o = (size_t)(pg_pb_put_varint(p + o, n) - p);
    memcpy(p + o, body, n);
    return o + n;
}

/* A request of one profile whose body is @prof. */
static size_t wrap_profile(uint8_t *out, const uint8_t *prof, size_t n)
{
    uint8_t sp[256], rp[256];
    size_t spn = put_len(sp, 2, prof, n);
    size_t rpn = put_len(rp, 2, sp, spn);
    return put_len(out, 1, rp, rpn);
}

PG_TEST(test_older_layouts)
{
    static const struct {
        const char *name;
        uint8_t prof[16];
        size_t n;
        enum pg_otlp_wire_version want;
    } cases[] = {
        /* v1.8: profile_id (16 bytes) as field 8. */
        {"v1.8 profile_id at 8", {0x42, 0x02, 0x01, 0x02}, 4, PG_OTLP_WIRE_V1_8},
        /* v1.8: dropped_attributes_count as field 9. */
        {"v1.8 dropped count at 9", {0x48, 0x05}, 2, PG_OTLP_WIRE_V1_8},
        /* v1.8: unpacked comment_strindices at 7. */
        {"v1.8 comment at 7", {0x38, 0x03}, 2, PG_OTLP_WIRE_V1_8},
        /* v1.7: Profile.location_indices packed at 3 (now fixed64 time_unix_nano). */
        {"v1.7 location_indices", {0x1a, 0x02, 0x01, 0x02}, 4, PG_OTLP_WIRE_OLDER},
        /* v1.7 Sample: link_index varint at 5 (timestamps are fixed64 since v1.8). */
        {"v1.7 sample link_index", {0x12, 0x02, 0x28, 0x01}, 4, PG_OTLP_WIRE_OLDER},
        /* v1.9 Sample: packed attribute_indices at 3. */
        {"v1.9 sample attributes", {0x12, 0x03, 0x1a, 0x01, 0x01}, 5, PG_OTLP_WIRE_V1_9},
        /* v1.9 Sample and a v1.8 Profile field: the older wins. */
        {"v1.8 profile and sample", {0x12, 0x03, 0x1a, 0x01, 0x01, 0x48, 0x01}, 7,
         PG_OTLP_WIRE_V1_8},
        /* Current: Sample 3 varint, 4 packed; Profile 8 varint, 7 bytes. */
        {"current", {0x12, 0x04, 0x18, 0x01, 0x22, 0x00, 0x40, 0x01, 0x3a, 0x00}, 10,
         PG_OTLP_WIRE_CURRENT},
        /* Ambiguous alone: Sample 2 and 4 varints (unpacked in either layout). */
        {"ambiguous sample", {0x12, 0x04, 0x10, 0x01, 0x20, 0x01}, 6, PG_OTLP_WIRE_CURRENT},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t req[512];
        size_t n = wrap_profile(req, cases[i].prof, cases[i].n);
        struct pg_arena *a = pg_arena_create(0);
        struct pg_otlp_request *out;
        struct pg_status st;
        enum pg_otlp_wire_version got = pg_otlp_wire_version_detect(req, n);

        if (got != cases[i].want) {
            fprintf(stderr, "  %s: detected %s\n", cases[i].name, pg_otlp_wire_version_name(got));
            CHECK(0);
        }
        if (cases[i].want != PG_OTLP_WIRE_CURRENT) {
            CHECK_INT(decode(a, req, n, NULL, &out, NULL, &st), PG_ERR_MALFORMED);
            CHECK(strstr(st.msg, pg_otlp_wire_version_name(cases[i].want)) != NULL);
        }
        pg_arena_destroy(a);
    }
    CHECK_INT(pg_otlp_wire_version_detect(NULL, 0), PG_OTLP_WIRE_CURRENT);
    CHECK_INT(pg_otlp_wire_version_detect((const uint8_t *)"", 0), PG_OTLP_WIRE_CURRENT);
}

PG_TEST(test_bad_bytes)
{
    size_t n;
    uint8_t *b = golden(&n);
    static const uint8_t huge_len[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x07, 0x0a, 0x00};
    static const uint8_t huge_inner[] = {0x0a, 0x07, 0x12, 0xfe, 0xff, 0xff, 0xff, 0x07, 0x00};
    static const uint8_t wrong_type[] = {0x12, 0x05, 0x2a, 0x03, 0x61, 0x62, 0x63, 0x09, 0, 0,
                                         0, 0, 0, 0, 0, 0};
    static const uint8_t bad_varint[] = {0x78, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0xff, 0x01};
    struct {
        const char *name;
        const uint8_t *p;
        size_t n;
        const char *msg;
    } cases[] = {
        {"truncated", b, n - 5, NULL},
        /* Inside a Sample (a leaf the first walk skips): named after protobuf-c refuses. */
        {"stack_index as fixed64 in a sample",
         (const uint8_t *)"\x0a\x13\x12\x11\x12\x0f\x12\x02\x08\x01\x12\x09\x09"
                          "\x00\x00\x00\x00\x00\x00\x00\x00",
         21,
         "resource_profiles[0].scope_profiles[0].profiles[0].samples[1].stack_index (field 1) "
         "has wire type fixed64 at byte 12, impossible for its type"},
        {"packed values cut short",
         (const uint8_t *)"\x0a\x0b\x12\x09\x12\x07\x12\x05\x22\x03\x01\x02\x80", 13,
         "resource_profiles[0].scope_profiles[0].profiles[0].samples[0].values (field 4) at "
         "byte 8: packed values cut short"},
        {"truncated in the dictionary", b, 700, NULL},
        {"length near 2^31", huge_len, sizeof(huge_len),
         "request: field 1 (resource_profiles) at byte 0 has length 2147483647, past the end of its message (2 "
         "bytes left)"},
        {"inner length near 2^31", huge_inner, sizeof(huge_inner),
         "resource_profiles[0]: field 2 (scope_profiles) at byte 2 has length 2147483646, past the end of its "
         "message (1 bytes left)"},
        {"garbage text", (const uint8_t *)"GET / HTTP/1.1\r\n", 16, NULL},
        {"known field, wrong wire type", wrong_type, sizeof(wrong_type), NULL},
        {"overlong varint", bad_varint, sizeof(bad_varint), NULL},
        {"dictionary missing", (const uint8_t *)"\x0a\x00", 2,
         "the request has no dictionary"},
        /* A Sample holding a field numbered 0 (tag written in two bytes, 80 00), which
         * protobuf-c keeps as unknown and would write back. */
        {"field number 0 in a sample",
         (const uint8_t *)"\x0a\x0b\x12\x09\x12\x07\x12\x05\x80\x00\x01\x08\x00"
                          "\x12\x0e\x0a\x00\x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x3a\x00",
         29,
         "resource_profiles[0].scope_profiles[0].profiles[0].samples[0] has a field numbered 0"},
    };

    PG_REQUIRE(b != NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(0);
        struct pg_otlp_request *out = (void *)1;
        struct pg_status st;
        enum pg_err err = decode(a, cases[i].p, cases[i].n, NULL, &out, NULL, &st);
        fprintf(stderr, "  %s: %s\n", cases[i].name, st.msg);
        CHECK_INT(err, PG_ERR_MALFORMED);
        CHECK(out == NULL);
        CHECK(st.msg[0] != '\0');
        if (cases[i].msg != NULL) {
            CHECK_STR(st.msg, cases[i].msg);
        }
        pg_arena_destroy(a);
    }
    /* Deep nesting is refused before protobuf-c recurses into it. */
    {
        size_t depth = 200, len = 0;
        uint8_t *deep = malloc(depth * 12 + 16);
        struct pg_arena *a = pg_arena_create(0);
        struct pg_otlp_request *out;
        struct pg_status st;
        /* Innermost first: an AnyValue holding an ArrayValue holding ... */
        uint8_t *tmp = malloc(depth * 12 + 16);
        for (size_t i = 0; i < depth; i++) {
            size_t k = put_len(tmp, 1, deep, len);  /* ArrayValue.values */
            len = put_len(deep, 5, tmp, k);         /* AnyValue.array_value */
        }
        /* KeyValueAndUnit.value -> ProfilesDictionary.attribute_table -> request.dictionary */
        {
            size_t k = put_len(tmp, 2, deep, len);
            len = put_len(deep, 6, tmp, k);
            k = put_len(tmp, 2, deep, len);
            memcpy(deep, tmp, k);
            len = k;
        }
        CHECK_INT(decode(a, deep, len, NULL, &out, NULL, &st), PG_ERR_MALFORMED);
        CHECK(strstr(st.msg, "nested deeper than 64: dictionary.attribute_table[0].value."
                             "array_value.values[0].array_value") != NULL);
        fprintf(stderr, "  deep: %s\n", st.msg);
        pg_arena_destroy(a);
        free(deep);
        free(tmp);
    }
    /* An empty request: nothing to check, accepted. */
    {
        struct pg_arena *a = pg_arena_create(0);
        struct pg_otlp_request *out = NULL;
        struct pg_status st;
        CHECK_INT(decode(a, (const uint8_t *)"", 0, NULL, &out, NULL, &st), PG_ERR_OK);
        CHECK(out != NULL && out->n_resource_profiles == 0);
        CHECK_INT(decode(a, NULL, 0, NULL, &out, NULL, &st), PG_ERR_OK);
        CHECK(out != NULL && out->n_resource_profiles == 0);
        pg_arena_destroy(a);
    }
    /* Over the arena's cap: LIMIT, not MALFORMED. */
    {
        struct pg_arena *a = pg_arena_create(1024);
        struct pg_otlp_request *out;
        struct pg_status st;
        CHECK_INT(decode(a, b, n, NULL, &out, NULL, &st), PG_ERR_LIMIT);
        pg_arena_destroy(a);
    }
    free(b);
}

/* ---- UTF-8 ------------------------------------------------------------------ */

static uint8_t *find(uint8_t *b, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++) {
        if (memcmp(b + i, s, k) == 0) {
            return b + i;
        }
    }
    return NULL;
}

PG_TEST(test_utf8_repair)
{
    size_t n;
    uint8_t *b = golden(&n);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req;
    struct pg_otlp_decode_stats stats;
    struct pg_status st;
    uint8_t *p;

    PG_REQUIRE(b != NULL);
    /* Embedded NUL in a dictionary string, an invalid byte in a resource attribute value,
     * a lone continuation byte in the scope name, NUL in a schema url. */
    PG_REQUIRE((p = find(b, n, "main.work")) != NULL);
    p[4] = 0;
    PG_REQUIRE((p = find(b, n, "checkout")) != NULL);
    p[0] = 0xff;
    PG_REQUIRE((p = find(b, n, "pprof-gateway")) != NULL);
    p[5] = 0x80;
    PG_REQUIRE((p = find(b, n, "schemas/1.39.0")) != NULL);
    p[0] = 0;
    {
        uint8_t *keep = malloc(n);
        memcpy(keep, b, n);
        CHECK_INT(decode(a, b, n, NULL, &req, &stats, &st), PG_ERR_OK);
        CHECK(memcmp(keep, b, n) == 0); /* the caller's bytes are not written */
        free(keep);
    }
    CHECK_INT(stats.utf8_repaired, 4);
    CHECK_STR(req->dictionary->string_table[6], "main\xef\xbf\xbdwork");
    CHECK_STR(req->resource_profiles[0]->resource->attributes[0]->value->string_value,
              "\xef\xbf\xbdheckout");
    CHECK_STR(req->resource_profiles[0]->scope_profiles[0]->scope->name,
              "pprof\xef\xbf\xbdgateway");
    CHECK_STR(req->resource_profiles[0]->scope_profiles[0]->schema_url,
              "https://opentelemetry.io/\xef\xbf\xbd" "chemas/1.39.0");
    /* Clean input: nothing counted. */
    {
        uint8_t *g = golden(&n);
        CHECK_INT(decode(a, g, n, NULL, &req, &stats, &st), PG_ERR_OK);
        CHECK_INT(stats.utf8_repaired, 0);
        free(g);
    }
    pg_arena_destroy(a);
    free(b);
}

/* pg_otlp_validate alone, on a request built in memory: a KeyValue key inside a kvlist. */
PG_TEST(test_validate_nested_strings)
{
    size_t n;
    uint8_t *b = golden(&n);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req;
    struct pg_otlp_decode_stats stats;
    struct pg_status st;
    struct pg_otlp_anyvalue *outer = pg_arena_zalloc(a, sizeof(*outer));
    struct pg_otlp_kvlist *kl = pg_arena_zalloc(a, sizeof(*kl));
    struct pg_otlp_kv *kv = pg_arena_zalloc(a, sizeof(*kv));
    struct pg_otlp_anyvalue *inner = pg_arena_zalloc(a, sizeof(*inner));

    PG_REQUIRE(b != NULL);
    PG_REQUIRE(decode(a, b, n, NULL, &req, NULL, &st) == PG_ERR_OK);
    opentelemetry__proto__common__v1__any_value__init(outer);
    opentelemetry__proto__common__v1__key_value_list__init(kl);
    opentelemetry__proto__common__v1__key_value__init(kv);
    opentelemetry__proto__common__v1__any_value__init(inner);
    inner->value_case = PG_OTLP_ANYVALUE_STR;
    inner->string_value = pg_arena_strdup(a, "v\xc3");
    kv->key = pg_arena_strdup(a, "k\xe2\x82");
    kv->value = inner;
    kl->n_values = 1;
    kl->values = pg_arena_calloc(a, 1, sizeof(*kl->values));
    kl->values[0] = kv;
    outer->value_case = PG_OTLP_ANYVALUE_KVLIST;
    outer->kvlist_value = kl;
    req->resource_profiles[0]->resource->attributes[1]->value = outer;
    CHECK_INT(pg_otlp_validate(a, req, NULL, &stats, &st), PG_ERR_OK);
    CHECK_INT(stats.utf8_repaired, 2);
    CHECK_STR(kv->key, "k\xef\xbf\xbd\xef\xbf\xbd");
    CHECK_STR(inner->string_value, "v\xef\xbf\xbd");
    CHECK_INT(stats.profiles, 2);
    pg_arena_destroy(a);
    free(b);
}

/* Resource and scope attributes by reference (as the Collector's otlphttp exporter writes
 * them) come out as plain key / string_value; dictionary attributes are left as they are. */
PG_TEST(test_resolve_references)
{
    size_t n;
    uint8_t *b = golden(&n);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req;
    struct pg_status st;
    uint8_t *wire;
    size_t wire_n;
    struct pg_otlp_kv *kv;
    struct pg_otlp_scope *scope;

    PG_REQUIRE(b != NULL);
    PG_REQUIRE(decode(a, b, n, NULL, &req, NULL, &st) == PG_ERR_OK);
    kv = RP(req)->resource->attributes[0];
    kv->key = "";
    kv->key_strindex = 2;
    kv->value->value_case = PG_OTLP_ANYVALUE_STRINDEX;
    kv->value->string_value_strindex = 9;
    DICT(req)->attribute_table[1]->value->value_case = PG_OTLP_ANYVALUE_STRINDEX;
    DICT(req)->attribute_table[1]->value->string_value_strindex = 9;
    scope = RP(req)->scope_profiles[0]->scope;
    scope->n_attributes = 1;
    scope->attributes = pg_arena_calloc(a, 1, sizeof(*scope->attributes));
    scope->attributes[0] = RP(req)->resource->attributes[1];
    RP(req)->resource->attributes[1]->key = "";
    RP(req)->resource->attributes[1]->key_strindex = 13;
    PG_REQUIRE(pg_otlp_request_encode(req, a, &wire, &wire_n, &st) == PG_ERR_OK);
    PG_REQUIRE(decode(a, wire, wire_n, NULL, &req, NULL, &st) == PG_ERR_OK);
    kv = RP(req)->resource->attributes[0];
    CHECK_STR(kv->key, "process.executable.build_id.gnu");
    CHECK_INT(kv->key_strindex, 0);
    CHECK_INT(kv->value->value_case, PG_OTLP_ANYVALUE_STR);
    CHECK_STR(kv->value->string_value, "handler");
    CHECK_STR(RP(req)->resource->attributes[1]->key, "samples");
    CHECK_STR(RP(req)->scope_profiles[0]->scope->attributes[0]->key, "samples");
    CHECK_STR(RP(req)->scope_profiles[0]->scope->attributes[0]->value->string_value, "prod");
    CHECK_INT(DICT(req)->attribute_table[1]->value->value_case, PG_OTLP_ANYVALUE_STRINDEX);
    pg_arena_destroy(a);
    free(b);
}

/* The golden request as the Collector writes it (pdata v0.161.0
 * pprofileotlp.ExportRequest.MarshalProto: fields in descending order, resource attributes
 * by string table reference, zero link ids empty): accepted, and the same request. */
PG_TEST(test_collector_bytes)
{
    size_t n, gn;
    uint8_t *b = pg_test_read_rel("PG_SOURCE_DIR", ".",
                          "tests/fuzz/seeds/fuzz_otlp_decode/appendix_a_collector.bin", &n);
    uint8_t *g = golden(&gn);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req, *want;
    struct pg_otlp_decode_stats stats;
    struct pg_status st;

    PG_REQUIRE(b != NULL && g != NULL);
    CHECK(b[0] == 0x12); /* the dictionary (field 2) comes first */
    PG_REQUIRE(decode(a, g, gn, NULL, &want, NULL, &st) == PG_ERR_OK);
    CHECK_INT(decode(a, b, n, NULL, &req, &stats, &st), PG_ERR_OK);
    if (req != NULL) {
        const struct pg_otlp_profile *p = PROF(req, 1), *q = PROF(want, 1);
        CHECK_INT(stats.version, PG_OTLP_WIRE_CURRENT);
        CHECK_INT(stats.samples, 4);
        CHECK_STR(RP(req)->resource->attributes[0]->key, "service.name");
        CHECK_STR(RP(req)->resource->attributes[1]->value->string_value, "prod");
        CHECK_INT(DICT(req)->link_table[0]->trace_id.len, 0);
        CHECK_INT(p->n_samples, q->n_samples);
        for (size_t i = 0; i < p->n_samples && i < q->n_samples; i++) {
            CHECK_INT(p->samples[i]->stack_index, q->samples[i]->stack_index);
            CHECK_INT(p->samples[i]->link_index, q->samples[i]->link_index);
            CHECK(p->samples[i]->n_values == 1 && p->samples[i]->values[0] == q->samples[i]->values[0]);
        }
    }
    pg_arena_destroy(a);
    free(b);
    free(g);
}

PG_TEST_MAIN(PG_CASE(test_fixtures_round_trip), PG_CASE(test_resolve_references),
             PG_CASE(test_collector_bytes), PG_CASE(test_golden_appendix_a),
             PG_CASE(test_mutations), PG_CASE(test_cap_attrs_per_sample),
             PG_CASE(test_v1_9_refused_and_converted), PG_CASE(test_older_layouts),
             PG_CASE(test_bad_bytes), PG_CASE(test_utf8_repair),
             PG_CASE(test_validate_nested_strings))
