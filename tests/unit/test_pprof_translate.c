/* SPDX-License-Identifier: Apache-2.0
 * pprof -> OTLP translation: the golden vectors of otlp-profiles.md
 * (Appendix B in, Appendix A out, compared semantically), every invalid case
 * with its message, limits, and the edge cases translation must keep (links, labels,
 * sample type order, comments, empty profiles, address-only locations...). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/arena.h"
#include "pg_test.h"
#include "pg_test_zlib.h"
#include "otlp/dict.h"
#include "codec/inflate.h"
#include "pprof/translate.h"
#include "pprof_writer.h"

/* ---- helpers -------------------------------------------------------------- */

static uint8_t *read_fixture(const char *rel, size_t *len)
{
    char path[1024];
    const char *dir = getenv("PG_FIXTURES");
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", rel);
    return pg_test_read_file(path, len);
}

static uint8_t *gzip_bytes(const uint8_t *in, size_t len, size_t *out_len)
{
    return pg_test_squeeze(in, len, PG_TEST_GZIP_BITS, out_len);
}

struct run {
    struct pg_arena *arena;
    struct pg_otlp_request *req;
    struct pg_status st;
    struct pg_translate_stats stats;
    enum pg_err err;
};

static void run_opts(struct run *r, const uint8_t *b, size_t n, const struct pg_translate_opts *o)
{
    memset(r, 0, sizeof(*r));
    r->arena = pg_arena_create(0);
    r->err = pg_pprof_translate(r->arena, b, n, o, &r->req, &r->stats, &r->st);
    if (r->err == PG_ERR_OK) {
        struct pg_status vst;
        struct pg_arena *scratch = pg_arena_create(0);
        enum pg_err verr = pg_dict_validate(scratch, r->req, true, &vst);
        if (verr != PG_ERR_OK) {
            fprintf(stderr, "  dictionary invariant: %s\n", vst.msg);
        }
        CHECK(verr == PG_ERR_OK);
        pg_arena_destroy(scratch);
    }
}

static void run(struct run *r, const uint8_t *b, size_t n)
{
    struct pg_translate_opts o;
    pg_translate_opts_default(&o);
    run_opts(r, b, n, &o);
}

static void run_free(struct run *r)
{
    pg_arena_destroy(r->arena);
}

static const struct pg_otlp_dict *D(const struct run *r)
{
    return r->req->dictionary;
}

static const struct pg_otlp_scopeprof *SP(const struct run *r)
{
    return r->req->resource_profiles[0]->scope_profiles[0];
}

static const char *str_at(const struct run *r, int32_t i)
{
    return D(r)->string_table[i];
}

/* Attribute @idx rendered as "key=value[unit]" for compact checks. */
static void attr_render(const struct pg_otlp_dict *d, int32_t idx, char *buf, size_t n)
{
    const struct pg_otlp_kvu *a = d->attribute_table[idx];
    const struct pg_otlp_anyvalue *v = a->value;
    int o = snprintf(buf, n, "%s=", d->string_table[a->key_strindex]);
    if (v == NULL) {
        return;
    }
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR: o += snprintf(buf + o, n - o, "%s", v->string_value); break;
    case PG_OTLP_ANYVALUE_INT: o += snprintf(buf + o, n - o, "%lld", (long long)v->int_value); break;
    case PG_OTLP_ANYVALUE_BOOL: o += snprintf(buf + o, n - o, "%s", v->bool_value ? "true" : "false"); break;
    case PG_OTLP_ANYVALUE_ARRAY:
        o += snprintf(buf + o, n - o, "[");
        for (size_t i = 0; i < v->array_value->n_values; i++) {
            const struct pg_otlp_anyvalue *e = v->array_value->values[i];
            if (e->value_case == PG_OTLP_ANYVALUE_STR) {
                o += snprintf(buf + o, n - o, "%s%s", i ? "," : "", e->string_value);
            } else {
                o += snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)e->int_value);
            }
        }
        o += snprintf(buf + o, n - o, "]");
        break;
    default: break;
    }
    if (a->unit_strindex != 0) {
        snprintf(buf + o, n - o, "[%s]", d->string_table[a->unit_strindex]);
    }
}

/* Rendered attribute list of sample @i of profile @k, "a=1 b=x". */
static void sample_attrs(const struct run *r, size_t k, size_t i, char *buf, size_t n)
{
    const struct pg_otlp_sample *s = SP(r)->profiles[k]->samples[i];
    size_t o = 0;
    buf[0] = '\0';
    for (size_t j = 0; j < s->n_attribute_indices && o < n; j++) {
        char one[256];
        attr_render(D(r), s->attribute_indices[j], one, sizeof(one));
        o += (size_t)snprintf(buf + o, n - o, "%s%s", j ? " " : "", one);
    }
}

static bool anyvalue_eq(const struct pg_otlp_anyvalue *a, const struct pg_otlp_anyvalue *b)
{
    return pg_dict_anyvalue_equal(a, b);
}

/* ---- golden: Appendix B -> Appendix A ------------------------------------- */

static void compare_with_appendix_a(const struct run *r)
{
    size_t alen;
    uint8_t *abin = read_fixture("pprof/golden/appendix_a.otlp.bin", &alen);
    struct pg_otlp_request *want;
    const struct pg_otlp_dict *a, *b;

    CHECK(abin != NULL);
    if (abin == NULL) {
        return;
    }
    want = (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor, NULL,
                                                               alen, abin);
    CHECK(want != NULL);
    if (want == NULL) {
        free(abin);
        return;
    }
    a = want->dictionary;
    b = r->req->dictionary;
    CHECK_INT(b->n_string_table, a->n_string_table);
    for (size_t i = 0; i < a->n_string_table && i < b->n_string_table; i++) {
        CHECK_STR(b->string_table[i], a->string_table[i]);
    }
    CHECK_INT(b->n_mapping_table, a->n_mapping_table);
    for (size_t i = 0; i < a->n_mapping_table && i < b->n_mapping_table; i++) {
        const struct pg_otlp_mapping *x = a->mapping_table[i], *y = b->mapping_table[i];
        CHECK_INT(y->memory_start, x->memory_start);
        CHECK_INT(y->memory_limit, x->memory_limit);
        CHECK_INT(y->file_offset, x->file_offset);
        CHECK_INT(y->filename_strindex, x->filename_strindex);
        CHECK_INT(y->n_attribute_indices, x->n_attribute_indices);
        for (size_t j = 0; j < x->n_attribute_indices && j < y->n_attribute_indices; j++) {
            CHECK_INT(y->attribute_indices[j], x->attribute_indices[j]);
        }
    }
    CHECK_INT(b->n_location_table, a->n_location_table);
    for (size_t i = 0; i < a->n_location_table && i < b->n_location_table; i++) {
        const struct pg_otlp_location *x = a->location_table[i], *y = b->location_table[i];
        CHECK_INT(y->mapping_index, x->mapping_index);
        CHECK_INT(y->address, x->address);
        CHECK_INT(y->n_lines, x->n_lines);
        for (size_t j = 0; j < x->n_lines && j < y->n_lines; j++) {
            CHECK_INT(y->lines[j]->function_index, x->lines[j]->function_index);
            CHECK_INT(y->lines[j]->line, x->lines[j]->line);
            CHECK_INT(y->lines[j]->column, x->lines[j]->column);
        }
        CHECK_INT(y->n_attribute_indices, x->n_attribute_indices);
    }
    CHECK_INT(b->n_function_table, a->n_function_table);
    for (size_t i = 0; i < a->n_function_table && i < b->n_function_table; i++) {
        const struct pg_otlp_function *x = a->function_table[i], *y = b->function_table[i];
        CHECK_INT(y->name_strindex, x->name_strindex);
        CHECK_INT(y->system_name_strindex, x->system_name_strindex);
        CHECK_INT(y->filename_strindex, x->filename_strindex);
        CHECK_INT(y->start_line, x->start_line);
    }
    CHECK_INT(b->n_link_table, a->n_link_table);
    for (size_t i = 0; i < a->n_link_table && i < b->n_link_table; i++) {
        const struct pg_otlp_link *x = a->link_table[i], *y = b->link_table[i];
        CHECK_INT(y->trace_id.len, x->trace_id.len);
        CHECK_INT(y->span_id.len, x->span_id.len);
        CHECK(y->trace_id.len == x->trace_id.len &&
              memcmp(y->trace_id.data, x->trace_id.data, x->trace_id.len) == 0);
        CHECK(y->span_id.len == x->span_id.len &&
              memcmp(y->span_id.data, x->span_id.data, x->span_id.len) == 0);
    }
    CHECK_INT(b->n_attribute_table, a->n_attribute_table);
    for (size_t i = 0; i < a->n_attribute_table && i < b->n_attribute_table; i++) {
        const struct pg_otlp_kvu *x = a->attribute_table[i], *y = b->attribute_table[i];
        CHECK_INT(y->key_strindex, x->key_strindex);
        CHECK_INT(y->unit_strindex, x->unit_strindex);
        CHECK(anyvalue_eq(y->value, x->value));
    }
    CHECK_INT(b->n_stack_table, a->n_stack_table);
    for (size_t i = 0; i < a->n_stack_table && i < b->n_stack_table; i++) {
        const struct pg_otlp_stack *x = a->stack_table[i], *y = b->stack_table[i];
        CHECK_INT(y->n_location_indices, x->n_location_indices);
        for (size_t j = 0; j < x->n_location_indices && j < y->n_location_indices; j++) {
            CHECK_INT(y->location_indices[j], x->location_indices[j]);
        }
    }
    {
        const struct pg_otlp_scopeprof *ws = want->resource_profiles[0]->scope_profiles[0];
        const struct pg_otlp_scopeprof *gs = SP(r);
        CHECK_INT(r->req->n_resource_profiles, 1);
        CHECK_INT(r->req->resource_profiles[0]->n_scope_profiles, 1);
        CHECK_STR(gs->schema_url, ws->schema_url);
        CHECK_STR(r->req->resource_profiles[0]->schema_url,
                  want->resource_profiles[0]->schema_url);
        CHECK_INT(gs->n_profiles, ws->n_profiles);
        for (size_t k = 0; k < ws->n_profiles && k < gs->n_profiles; k++) {
            const struct pg_otlp_profile *x = ws->profiles[k], *y = gs->profiles[k];
            CHECK_INT(y->sample_type->type_strindex, x->sample_type->type_strindex);
            CHECK_INT(y->sample_type->unit_strindex, x->sample_type->unit_strindex);
            CHECK_INT(y->period_type->type_strindex, x->period_type->type_strindex);
            CHECK_INT(y->period_type->unit_strindex, x->period_type->unit_strindex);
            CHECK_INT(y->period, x->period);
            CHECK_INT(y->time_unix_nano, x->time_unix_nano);
            CHECK_INT(y->duration_nano, x->duration_nano);
            CHECK_INT(y->dropped_attributes_count, x->dropped_attributes_count);
            CHECK_INT(y->n_attribute_indices, x->n_attribute_indices);
            for (size_t j = 0; j < x->n_attribute_indices && j < y->n_attribute_indices; j++) {
                CHECK_INT(y->attribute_indices[j], x->attribute_indices[j]);
            }
            /* profile_id aside: ours is random, the golden one empty. */
            CHECK_INT(y->profile_id.len, 16);
            CHECK_INT(y->n_samples, x->n_samples);
            for (size_t i = 0; i < x->n_samples && i < y->n_samples; i++) {
                const struct pg_otlp_sample *sx = x->samples[i], *sy = y->samples[i];
                CHECK_INT(sy->stack_index, sx->stack_index);
                CHECK_INT(sy->link_index, sx->link_index);
                CHECK_INT(sy->n_values, sx->n_values);
                CHECK_INT(sy->values[0], sx->values[0]);
                CHECK_INT(sy->n_timestamps_unix_nano, 0);
                CHECK_INT(sy->n_attribute_indices, sx->n_attribute_indices);
                for (size_t j = 0; j < sx->n_attribute_indices && j < sy->n_attribute_indices;
                     j++) {
                    CHECK_INT(sy->attribute_indices[j], sx->attribute_indices[j]);
                }
            }
        }
    }
    protobuf_c_message_free_unpacked((ProtobufCMessage *)want, NULL);
    free(abin);
}

PG_TEST(golden_appendix_b_to_a)
{
    size_t len;
    uint8_t *pprof = read_fixture("pprof/golden/appendix_b.pprof", &len);
    struct run r;

    CHECK(pprof != NULL && len == 334);
    if (pprof == NULL) {
        return;
    }
    run(&r, pprof, len);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK) {
        compare_with_appendix_a(&r);
        /* scope: ours, plus the sample type bookkeeping */
        CHECK_STR(SP(&r)->scope->name, "pprofgate");
        CHECK_STR(SP(&r)->scope->version, PG_VERSION);
        CHECK_INT(SP(&r)->scope->n_attributes, 2);
        CHECK_STR(SP(&r)->scope->attributes[0]->key, "pprof.scope.sample_type_order");
        CHECK_INT(SP(&r)->scope->attributes[0]->value->array_value->n_values, 2);
        CHECK_INT(SP(&r)->scope->attributes[0]->value->array_value->values[0]->int_value, 1);
        CHECK_INT(SP(&r)->scope->attributes[0]->value->array_value->values[1]->int_value, 0);
        CHECK_STR(SP(&r)->scope->attributes[1]->key, "pprof.scope.default_sample_type");
        CHECK_STR(SP(&r)->scope->attributes[1]->value->string_value, "cpu");
        CHECK(r.req->resource_profiles[0]->resource != NULL);
        CHECK_INT(r.req->resource_profiles[0]->resource->n_attributes, 0);
        CHECK_INT(r.stats.samples, 2);
        CHECK_INT(r.stats.sample_records, 4);
        CHECK_INT(r.stats.profiles, 2);
        CHECK_INT(r.stats.links, 1);
        CHECK_INT(r.stats.raw_pprof_bytes, 334);
        CHECK(memcmp(SP(&r)->profiles[0]->profile_id.data, SP(&r)->profiles[1]->profile_id.data,
                     16) != 0);
    }
    run_free(&r);

    /* Same result through gzip and gzip-in-gzip, and after a pack/unpack cycle. */
    {
        size_t g1n, g2n;
        uint8_t *g1 = gzip_bytes(pprof, len, &g1n);
        uint8_t *g2 = gzip_bytes(g1, g1n, &g2n);
        run(&r, g1, g1n);
        CHECK_INT(r.err, PG_ERR_OK);
        if (r.err == PG_ERR_OK) {
            compare_with_appendix_a(&r);
            CHECK_INT(r.stats.inflated_bytes, 334);
        }
        run_free(&r);
        run(&r, g2, g2n);
        CHECK_INT(r.err, PG_ERR_OK);
        if (r.err == PG_ERR_OK) {
            size_t n = protobuf_c_message_get_packed_size(&r.req->base);
            uint8_t *buf = malloc(n);
            struct run r2;
            CHECK_INT(protobuf_c_message_pack(&r.req->base, buf), n);
            memset(&r2, 0, sizeof(r2));
            r2.req = (struct pg_otlp_request *)protobuf_c_message_unpack(
                &pg_otlp_request_descriptor, NULL, n, buf);
            CHECK(r2.req != NULL);
            if (r2.req != NULL) {
                compare_with_appendix_a(&r2);
                protobuf_c_message_free_unpacked(&r2.req->base, NULL);
            }
            free(buf);
        }
        run_free(&r);
        free(g1);
        free(g2);
    }
    free(pprof);
}

/* ---- invalid inputs --------------------------------------------------------- */

/* A valid base profile: 2 sample types, 1 mapping, 2 functions, 2 locations. */
static void base_tables(struct ppb *b)
{
    static const uint64_t l1[] = {1, 20}, l2[] = {2, 10};
    ppb_value_type(b, 1, "samples", "count");
    ppb_value_type(b, 1, "cpu", "nanoseconds");
    ppb_mapping(b, 1, 0x400000, 0x4a0000, "/app/server", "abc123", 1);
    ppb_function(b, 1, "main.work", "main.go", 18);
    ppb_function(b, 2, "main.main", "main.go", 8);
    ppb_location(b, 1, 1, 0x401000, l1, 1, 0);
    ppb_location(b, 2, 1, 0x402000, l2, 1, 0);
}

enum inv {
    INV_STR0, INV_NO_STRINGS, INV_STR_RANGE, INV_NO_TYPES, INV_VALUE_COUNT, INV_MAP_ID0,
    INV_MAP_DUP, INV_LOC_ID0, INV_LOC_DUP, INV_FN_ID0, INV_FN_DUP, INV_LOC_MISSING_MAP,
    INV_LINE_MISSING_FN, INV_LINE_FN0, INV_SAMPLE_MISSING_LOC, INV_SAMPLE_LOC0, INV_WIRETYPE,
    INV_WIRETYPE_NESTED, INV_TRUNC_VARINT, INV_TRUNC_LEN, INV_GROUP, INV_EMPTY, INV_LABEL_RANGE,
    INV_OVERLONG_VARINT, INV_NEGATIVE_STR, INV_LINE_WIRETYPE, INV_LINE_NESTED_WIRETYPE,
    INV_MANY_LINES_MISSING_FN,
};

static uint8_t *invalid_profile(enum inv kind, size_t *len)
{
    struct ppb b;
    static const uint64_t locs12[] = {1, 2}, locs9[] = {9}, locs0[] = {0};
    static const int64_t v2[] = {1, 10}, v1[] = {1};
    struct pw raw = {0};

    ppb_init(&b);
    switch (kind) {
    case INV_STR0:
        base_tables(&b);
        b.strs[0] = "oops";
        break;
    case INV_NO_STRINGS:
        pw_u(&raw, 9, 12345);
        *len = raw.n;
        return raw.b;
    case INV_STR_RANGE: {
        struct pw f = {0};
        base_tables(&b);
        pw_u(&f, 1, 7);
        pw_u(&f, 2, 999);
        pw_msg(&b.out, 5, &f);
        break;
    }
    case INV_NO_TYPES: {
        ppb_sample(&b, NULL, 0, v1, 1, NULL, 0, 1);
        break;
    }
    case INV_VALUE_COUNT:
        base_tables(&b);
        ppb_sample(&b, locs12, 2, v1, 1, NULL, 0, 1);
        break;
    case INV_MAP_ID0:
        ppb_mapping(&b, 0, 1, 2, "x", "", 0);
        break;
    case INV_MAP_DUP:
        ppb_mapping(&b, 3, 1, 2, "x", "", 0);
        ppb_mapping(&b, 3, 5, 6, "y", "", 0);
        break;
    case INV_LOC_ID0:
        ppb_location(&b, 0, 0, 0x10, NULL, 0, 0);
        break;
    case INV_LOC_DUP:
        ppb_location(&b, 5, 0, 0x10, NULL, 0, 0);
        ppb_location(&b, 5, 0, 0x20, NULL, 0, 0);
        break;
    case INV_FN_ID0:
        ppb_function(&b, 0, "f", "f.go", 1);
        break;
    case INV_FN_DUP:
        ppb_function(&b, 1000000, "f", "f.go", 1);
        ppb_function(&b, 1000000, "g", "g.go", 1);
        break;
    case INV_LOC_MISSING_MAP:
        ppb_location(&b, 1, 42, 0x10, NULL, 0, 0);
        break;
    case INV_LINE_MISSING_FN: {
        static const uint64_t ln[] = {77, 1};
        ppb_location(&b, 1, 0, 0x10, ln, 1, 0);
        break;
    }
    case INV_LINE_FN0: {
        static const uint64_t ln[] = {0, 1};
        ppb_location(&b, 1, 0, 0x10, ln, 1, 0);
        break;
    }
    case INV_SAMPLE_MISSING_LOC:
        base_tables(&b);
        ppb_sample(&b, locs9, 1, v2, 2, NULL, 0, 1);
        break;
    case INV_SAMPLE_LOC0:
        base_tables(&b);
        ppb_sample(&b, locs0, 1, v2, 2, NULL, 0, 0);
        break;
    case INV_WIRETYPE:
        pw_u(&b.out, 1, 5); /* sample_type is a message, not a varint */
        break;
    case INV_WIRETYPE_NESTED: {
        struct pw m = {0};
        pw_str(&m, 1, "x"); /* Mapping.id as bytes */
        pw_msg(&b.out, 3, &m);
        break;
    }
    case INV_TRUNC_VARINT:
        pw_str(&raw, 6, "");
        pw_tag(&raw, 9, 0);
        pw_raw(&raw, "\x80\x80", 2);
        *len = raw.n;
        return raw.b;
    case INV_TRUNC_LEN:
        pw_str(&raw, 6, "");
        pw_tag(&raw, 2, 2);
        pw_varint(&raw, 100);
        pw_raw(&raw, "\x08\x01", 2);
        *len = raw.n;
        return raw.b;
    case INV_GROUP:
        pw_str(&raw, 6, "");
        pw_tag(&raw, 20, 3);
        *len = raw.n;
        return raw.b;
    case INV_EMPTY:
        *len = 0;
        return malloc(1);
    case INV_LABEL_RANGE: {
        struct pw s = {0}, l = {0};
        base_tables(&b);
        pw_packed(&s, 1, locs12, 2);
        pw_packed(&s, 2, (const uint64_t *)v2, 2);
        pw_u(&l, 1, 500);
        pw_u(&l, 2, 1);
        pw_msg(&s, 3, &l);
        pw_msg(&b.out, 2, &s);
        break;
    }
    case INV_OVERLONG_VARINT:
        pw_str(&raw, 6, "");
        pw_tag(&raw, 9, 0);
        pw_raw(&raw, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
        *len = raw.n;
        return raw.b;
    case INV_LINE_WIRETYPE: { /* Location.line as a varint */
        struct pw l = {0};
        pw_u(&l, 1, 1);
        pw_u(&l, 4, 7);
        pw_msg(&b.out, 4, &l);
        break;
    }
    case INV_LINE_NESTED_WIRETYPE: { /* Line.function_id as bytes */
        struct pw l = {0}, ln = {0};
        pw_u(&l, 1, 1);
        pw_str(&ln, 1, "x");
        pw_msg(&l, 4, &ln);
        pw_msg(&b.out, 4, &l);
        break;
    }
    case INV_MANY_LINES_MISSING_FN: { /* more lines than the one-pass decoder buffers */
        static const uint64_t ln[] = {1, 1, 1, 2, 1, 3, 1, 4, 1, 5, 1, 6, 1, 7, 1, 8, 1, 9, 77, 10};
        base_tables(&b);
        ppb_location(&b, 3, 0, 0x10, ln, 10, 0);
        break;
    }
    case INV_NEGATIVE_STR: {
        base_tables(&b);
        pw_u(&b.out, 15, (uint64_t)-3); /* doc_url = -3 */
        break;
    }
    }
    return ppb_finish(&b, len);
}

PG_TEST(invalid_inputs)
{
    static const struct {
        enum inv kind;
        enum pg_err err;
        const char *msg;
    } cases[] = {
        {INV_STR0, PG_ERR_MALFORMED, "string_table[0] must be \"\""},
        {INV_NO_STRINGS, PG_ERR_MALFORMED, "string_table[0] must be \"\""},
        {INV_STR_RANGE, PG_ERR_MALFORMED, "function.name: string index 999 out of range"},
        {INV_NO_TYPES, PG_ERR_MALFORMED, "1 samples but no sample types"},
        {INV_VALUE_COUNT, PG_ERR_MALFORMED, "sample #0 has 1 values, want 2"},
        {INV_MAP_ID0, PG_ERR_MALFORMED, "mapping #0 has the reserved id 0"},
        {INV_MAP_DUP, PG_ERR_MALFORMED, "duplicate mapping id 3"},
        {INV_LOC_ID0, PG_ERR_MALFORMED, "location #0 has the reserved id 0"},
        {INV_LOC_DUP, PG_ERR_MALFORMED, "duplicate location id 5"},
        {INV_FN_ID0, PG_ERR_MALFORMED, "function #0 has the reserved id 0"},
        {INV_FN_DUP, PG_ERR_MALFORMED, "duplicate function id 1000000"},
        {INV_LOC_MISSING_MAP, PG_ERR_MALFORMED, "location id 1 references missing mapping id 42"},
        {INV_LINE_MISSING_FN, PG_ERR_MALFORMED, "line with missing function id 77"},
        {INV_LINE_FN0, PG_ERR_MALFORMED, "line with missing function id 0"},
        {INV_SAMPLE_MISSING_LOC, PG_ERR_MALFORMED, "sample #0 references missing location id 9"},
        {INV_SAMPLE_LOC0, PG_ERR_MALFORMED, "sample #0 references missing location id 0"},
        {INV_WIRETYPE, PG_ERR_MALFORMED, "Profile.sample_type has wire type 0"},
        {INV_WIRETYPE_NESTED, PG_ERR_MALFORMED, "Mapping.id has wire type 2"},
        {INV_TRUNC_VARINT, PG_ERR_MALFORMED, "malformed time_nanos at byte 2"},
        {INV_TRUNC_LEN, PG_ERR_MALFORMED, "malformed sample at byte 2"},
        {INV_GROUP, PG_ERR_MALFORMED, "malformed field at byte 2"},
        {INV_EMPTY, PG_ERR_MALFORMED, "empty profile"},
        {INV_LABEL_RANGE, PG_ERR_MALFORMED, "sample #0: label string index 500 out of range"},
        {INV_OVERLONG_VARINT, PG_ERR_MALFORMED, "malformed time_nanos"},
        {INV_NEGATIVE_STR, PG_ERR_MALFORMED, "doc_url: string index -3 out of range"},
        {INV_LINE_WIRETYPE, PG_ERR_MALFORMED, "Location.line has wire type 0"},
        {INV_LINE_NESTED_WIRETYPE, PG_ERR_MALFORMED, "Line.function_id has wire type 2"},
        {INV_MANY_LINES_MISSING_FN, PG_ERR_MALFORMED, "location id 3 has a line with missing function id 77"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len;
        uint8_t *p = invalid_profile(cases[i].kind, &len);
        struct run r;
        run(&r, p, len);
        if (r.err != cases[i].err || strstr(r.st.msg, cases[i].msg) == NULL) {
            fprintf(stderr, "  case %zu: got %d \"%s\", want %d \"%s\"\n", i, r.err, r.st.msg,
                    cases[i].err, cases[i].msg);
        }
        CHECK_INT(r.err, cases[i].err);
        CHECK(strstr(r.st.msg, cases[i].msg) != NULL);
        CHECK(r.req == NULL);
        run_free(&r);
        free(p);
    }
}

PG_TEST(invalid_gzip)
{
    size_t len, glen;
    uint8_t *p = read_fixture("pprof/golden/appendix_b.pprof", &len);
    uint8_t *g = p ? gzip_bytes(p, len, &glen) : NULL;
    struct run r;

    CHECK(g != NULL);
    if (g == NULL) {
        free(p);
        return;
    }
    run(&r, g, glen - 10); /* truncated */
    CHECK_INT(r.err, PG_ERR_MALFORMED);
    CHECK(strstr(r.st.msg, "gzip: unexpected EOF") != NULL);
    run_free(&r);
    g[12] ^= 0xff; /* corrupt the deflate stream */
    g[13] ^= 0xff;
    run(&r, g, glen);
    CHECK_INT(r.err, PG_ERR_MALFORMED);
    CHECK(strncmp(r.st.msg, "gzip: ", 6) == 0);
    run_free(&r);
    {
        static const uint8_t bad_hdr[] = {0x1f, 0x8b, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        run(&r, bad_hdr, sizeof(bad_hdr));
        CHECK_INT(r.err, PG_ERR_MALFORMED);
        CHECK(strstr(r.st.msg, "gzip: invalid header") != NULL);
        run_free(&r);
    }
    free(g);
    free(p);
}

PG_TEST(limits)
{
    size_t len;
    uint8_t *p = read_fixture("pprof/golden/appendix_b.pprof", &len);
    struct pg_translate_opts o;
    struct run r;
    uint8_t *layers[6];
    size_t lens[6];

    if (p == NULL) {
        CHECK(p != NULL);
        return;
    }
    /* gzip layers: 4 accepted, 5 refused */
    layers[0] = p;
    lens[0] = len;
    for (int i = 1; i < 6; i++) {
        layers[i] = gzip_bytes(layers[i - 1], lens[i - 1], &lens[i]);
    }
    run(&r, layers[4], lens[4]);
    CHECK_INT(r.err, PG_ERR_OK);
    run_free(&r);
    run(&r, layers[5], lens[5]);
    CHECK_INT(r.err, PG_ERR_LIMIT);
    CHECK(strstr(r.st.msg, "max_gzip_layers") != NULL);
    run_free(&r);
    for (int i = 1; i < 6; i++) {
        free(layers[i]);
    }

    static const struct {
        size_t off;
        size_t val;
        const char *msg;
    } lims[] = {
        {offsetof(struct pg_pprof_limits, max_stack_depth), 1, "max_stack_depth"},
        {offsetof(struct pg_pprof_limits, max_labels_per_sample), 2, "max_labels_per_sample"},
        {offsetof(struct pg_pprof_limits, max_sample_types), 1, "max_sample_types"},
        {offsetof(struct pg_pprof_limits, max_samples), 1, "max_samples"},
        {offsetof(struct pg_pprof_limits, max_samples), 3, "max_samples"}, /* 2x2 records */
        {offsetof(struct pg_pprof_limits, max_locations), 1, "max_locations"},
        {offsetof(struct pg_pprof_limits, max_functions), 1, "max_functions"},
        {offsetof(struct pg_pprof_limits, max_mappings), 0, "max_mappings"},
        {offsetof(struct pg_pprof_limits, max_strings), 10, "max_strings"},
        {offsetof(struct pg_pprof_limits, max_string_bytes), 100, "max_string_bytes"},
    };
    for (size_t i = 0; i < sizeof(lims) / sizeof(lims[0]); i++) {
        pg_translate_opts_default(&o);
        memcpy((uint8_t *)&o.limits + lims[i].off, &lims[i].val, sizeof(size_t));
        run_opts(&r, p, len, &o);
        CHECK_INT(r.err, PG_ERR_LIMIT);
        if (strstr(r.st.msg, lims[i].msg) == NULL) {
            fprintf(stderr, "  limit %s: \"%s\"\n", lims[i].msg, r.st.msg);
        }
        CHECK(strstr(r.st.msg, lims[i].msg) != NULL);
        run_free(&r);
    }
    /* inflated size cap: exactly the size passes, one byte less does not */
    {
        size_t glen;
        uint8_t *g = gzip_bytes(p, len, &glen);
        pg_translate_opts_default(&o);
        o.limits.max_inflated_bytes = len;
        run_opts(&r, g, glen, &o);
        CHECK_INT(r.err, PG_ERR_OK);
        run_free(&r);
        o.limits.max_inflated_bytes = len - 1;
        run_opts(&r, g, glen, &o);
        CHECK_INT(r.err, PG_ERR_LIMIT);
        CHECK(strstr(r.st.msg, "exceeds max_request_body_size (333 bytes)") != NULL);
        run_free(&r);
        free(g);
    }
    /* lines in one location over max_stack_depth: the total is named */
    {
        static const uint64_t ln[] = {1, 1, 1, 2, 1, 3};
        struct ppb b;
        size_t blen;
        uint8_t *bp;
        ppb_init(&b);
        base_tables(&b);
        ppb_location(&b, 3, 0, 0x10, ln, 3, 0);
        bp = ppb_finish(&b, &blen);
        pg_translate_opts_default(&o);
        o.limits.max_stack_depth = 2;
        run_opts(&r, bp, blen, &o);
        CHECK_INT(r.err, PG_ERR_LIMIT);
        CHECK(strstr(r.st.msg, "3 lines in one location exceed the limit max_stack_depth (2)") !=
              NULL);
        run_free(&r);
        free(bp);
    }
    /* a request arena cap turns into LIMIT, not a crash */
    {
        struct pg_arena *a = pg_arena_create(2048);
        struct pg_otlp_request *req;
        struct pg_status st;
        pg_translate_opts_default(&o);
        CHECK_INT(pg_pprof_translate(a, p, len, &o, &req, NULL, &st), PG_ERR_LIMIT);
        CHECK(strstr(st.msg, "memory limit") != NULL);
        pg_arena_destroy(a);
    }
    free(p);
}

/* ---- edge cases ------------------------------------------------------------ */

static uint8_t *label_profile(const struct ppb_label *labels, size_t n, size_t *len)
{
    struct ppb b;
    static const uint64_t locs[] = {1, 2};
    static const int64_t v[] = {1, 10};
    ppb_init(&b);
    base_tables(&b);
    ppb_sample(&b, locs, 2, v, 2, labels, n, 1);
    return ppb_finish(&b, len);
}

PG_TEST(links_and_trace_labels)
{
    static const struct {
        struct ppb_label l[3];
        size_t n;
        bool link;
        const char *attrs;
    } cases[] = {
        {{{"trace_id", "4BF92F3577B34DA6A3CE929D0E0E4736", 0, NULL},
          {"span_id", "00F067AA0BA902B7", 0, NULL}}, 2, true, ""},
        {{{"trace_id", "4bf92f3577b34da6a3ce929d0e0e4736", 0, NULL},
          {"span_id", "00f067aa0ba902b7", 0, NULL},
          {"handler", "/api", 0, NULL}}, 3, true, "handler=/api"},
        /* lone trace id: stays an attribute */
        {{{"trace_id", "4bf92f3577b34da6a3ce929d0e0e4736", 0, NULL}}, 1, false,
         "trace_id=4bf92f3577b34da6a3ce929d0e0e4736"},
        /* malformed: 31 digits, non-hex */
        {{{"trace_id", "4bf92f3577b34da6a3ce929d0e0e473", 0, NULL},
          {"span_id", "00f067aa0ba902b7", 0, NULL}}, 2, false,
         "trace_id=4bf92f3577b34da6a3ce929d0e0e473 span_id=00f067aa0ba902b7"},
        {{{"trace_id", "4bf92f3577b34da6a3ce929d0e0e473g", 0, NULL},
          {"span_id", "00f067aa0ba902b7", 0, NULL}}, 2, false,
         "trace_id=4bf92f3577b34da6a3ce929d0e0e473g span_id=00f067aa0ba902b7"},
        /* all-zero ids are invalid */
        {{{"trace_id", "00000000000000000000000000000000", 0, NULL},
          {"span_id", "00f067aa0ba902b7", 0, NULL}}, 2, false,
         "trace_id=00000000000000000000000000000000 span_id=00f067aa0ba902b7"},
        {{{"trace_id", "4bf92f3577b34da6a3ce929d0e0e4736", 0, NULL},
          {"span_id", "0000000000000000", 0, NULL}}, 2, false,
         "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=0000000000000000"},
        /* numeric span id: not a link */
        {{{"trace_id", "4bf92f3577b34da6a3ce929d0e0e4736", 0, NULL},
          {"span_id", NULL, 77, NULL}}, 2, false,
         "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=77"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len;
        uint8_t *p = label_profile(cases[i].l, cases[i].n, &len);
        struct run r;
        char buf[512];
        run(&r, p, len);
        CHECK_INT(r.err, PG_ERR_OK);
        if (r.err == PG_ERR_OK) {
            const struct pg_otlp_sample *s = SP(&r)->profiles[0]->samples[0];
            CHECK_INT(s->link_index, cases[i].link ? 1 : 0);
            CHECK_INT(D(&r)->n_link_table, cases[i].link ? 2 : 1);
            if (cases[i].link) {
                static const uint8_t tid[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                                                0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
                static const uint8_t sid[8] = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
                const struct pg_otlp_link *l = D(&r)->link_table[1];
                CHECK(l->trace_id.len == 16 && memcmp(l->trace_id.data, tid, 16) == 0);
                CHECK(l->span_id.len == 8 && memcmp(l->span_id.data, sid, 8) == 0);
                /* the consumed labels left no strings behind */
                for (size_t j = 0; j < D(&r)->n_string_table; j++) {
                    CHECK(strcmp(str_at(&r, (int32_t)j), "trace_id") != 0);
                }
            }
            sample_attrs(&r, 0, 0, buf, sizeof(buf));
            if (strcmp(buf, cases[i].attrs) != 0) {
                fprintf(stderr, "  case %zu\n", i);
            }
            CHECK_STR(buf, cases[i].attrs);
            CHECK_INT(SP(&r)->profiles[1]->samples[0]->link_index, s->link_index);
        }
        run_free(&r);
        free(p);
    }
}

/* Every class of byte around the hex digits ('/' ':' '@' 'G' '`' 'g', control
 * bytes, bytes >= 0x80), at the first, middle and last positions of the trace
 * and span ids: only exact hex, any case, makes a link. */
PG_TEST(trace_id_hex_digits)
{
    static const char good_t[] = "4bf92f3577b34da6a3ce929d0e0e4736";
    static const char good_s[] = "00f067aa0ba902b7";
    static const unsigned char bad[] = {'/', ':', '@', 'G', '`', 'g', ' ', 0x10, 0x1a, 0x7f,
                                        0x80, 0xb0, 0xc1, 0xe6, 0xff, 'z', 'Z', '.'};
    static const size_t t_pos[] = {0, 7, 8, 15, 16, 31};
    static const size_t s_pos[] = {0, 7, 8, 15};
    static const struct {
        const char *t, *s;
        bool link;
    } ok_cases[] = {
        {"0123456789abcdefABCDEF0123456789", "aBcDeF0123456789", true},
        {"00000000000000000000000000000001", "0000000000000001", true},
        {"10000000000000000000000000000000", "1000000000000000", true},
        {"ffffffffffffffffffffffffffffffff", "FFFFFFFFFFFFFFFF", true},
        {"00000000000000000000000000000000", "1000000000000000", false},
        {"10000000000000000000000000000000", "0000000000000000", false},
    };

    for (size_t i = 0; i < sizeof(ok_cases) / sizeof(ok_cases[0]) + 2 * sizeof(bad) * 6; i++) {
        char t[33], sp[17];
        struct ppb_label l[2];
        bool want;
        size_t len;
        uint8_t *p;
        struct run r;

        memcpy(t, good_t, 33);
        memcpy(sp, good_s, 17);
        if (i < sizeof(ok_cases) / sizeof(ok_cases[0])) {
            memcpy(t, ok_cases[i].t, 33);
            memcpy(sp, ok_cases[i].s, 17);
            want = ok_cases[i].link;
        } else {
            size_t k = i - sizeof(ok_cases) / sizeof(ok_cases[0]);
            size_t b = k / 12, where = k % 12;
            if (where < 6) {
                t[t_pos[where]] = (char)bad[b];
            } else {
                sp[s_pos[(where - 6) % 4]] = (char)bad[b];
            }
            want = false;
        }
        l[0] = (struct ppb_label){"trace_id", t, 0, NULL};
        l[1] = (struct ppb_label){"span_id", sp, 0, NULL};
        p = label_profile(l, 2, &len);
        run(&r, p, len);
        CHECK_INT(r.err, PG_ERR_OK);
        if (r.err == PG_ERR_OK) {
            const struct pg_otlp_sample *s = SP(&r)->profiles[0]->samples[0];
            if ((s->link_index != 0) != want) {
                fprintf(stderr, "  case %zu: trace %s span %s\n", i, t, sp);
            }
            CHECK_INT(s->link_index != 0, want);
            if (want && i == 0) {
                static const uint8_t tid[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                                0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89};
                static const uint8_t sid[8] = {0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89};
                const struct pg_otlp_link *lk = D(&r)->link_table[1];
                CHECK(memcmp(lk->trace_id.data, tid, 16) == 0);
                CHECK(memcmp(lk->span_id.data, sid, 8) == 0);
            }
        }
        run_free(&r);
        free(p);
    }
}

PG_TEST(links_dedup_and_custom_keys)
{
    struct ppb b;
    static const uint64_t locs[] = {1};
    static const int64_t v[] = {1, 10};
    static const struct ppb_label a[] = {{"otel.traceid", "0af7651916cd43dd8448eb211c80319c", 0, NULL},
                                         {"otel.spanid", "b7ad6b7169203331", 0, NULL}};
    static const struct ppb_label c[] = {{"otel.traceid", "0af7651916cd43dd8448eb211c80319c", 0, NULL},
                                         {"otel.spanid", "b7ad6b7169203332", 0, NULL}};
    struct pg_translate_opts o;
    struct run r;
    size_t len;
    uint8_t *p;

    ppb_init(&b);
    base_tables(&b);
    ppb_sample(&b, locs, 1, v, 2, a, 2, 1);
    ppb_sample(&b, locs, 1, v, 2, c, 2, 0);
    ppb_sample(&b, locs, 1, v, 2, a, 2, 1);
    p = ppb_finish(&b, &len);
    pg_translate_opts_default(&o);
    o.trace_id_label = "otel.traceid";
    o.span_id_label = "otel.spanid";
    run_opts(&r, p, len, &o);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK) {
        CHECK_INT(D(&r)->n_link_table, 3);
        CHECK_INT(SP(&r)->profiles[0]->samples[0]->link_index, 1);
        CHECK_INT(SP(&r)->profiles[0]->samples[1]->link_index, 2);
        CHECK_INT(SP(&r)->profiles[0]->samples[2]->link_index, 1);
        CHECK_INT(SP(&r)->profiles[0]->samples[0]->n_attribute_indices, 0);
        /* same stack for all three: one stack entry besides the zero one */
        CHECK_INT(D(&r)->n_stack_table, 2);
        CHECK_INT(r.stats.links, 2);
        /* link_table[0] is 16 + 8 zero bytes */
        CHECK_INT(D(&r)->link_table[0]->trace_id.len, 16);
        CHECK_INT(D(&r)->link_table[0]->span_id.len, 8);
    }
    run_free(&r);
    /* with the default keys the labels stay attributes */
    run(&r, p, len);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK) {
        char buf[512];
        CHECK_INT(D(&r)->n_link_table, 1);
        sample_attrs(&r, 0, 1, buf, sizeof(buf));
        CHECK_STR(buf, "otel.traceid=0af7651916cd43dd8448eb211c80319c otel.spanid=b7ad6b7169203332");
    }
    run_free(&r);
    free(p);
}

PG_TEST(labels_numeric_multi_and_dropped)
{
    static const struct {
        struct ppb_label l[4];
        size_t n;
        const char *attrs;
    } cases[] = {
        {{{"bytes", NULL, 4096, "bytes"}}, 1, "bytes=4096[bytes]"},
        {{{"count", NULL, -7, NULL}}, 1, "count=-7"},
        {{{"k", "a", 0, NULL}, {"k", "b", 0, NULL}}, 2, "k=[a,b]"},
        {{{"n", NULL, 1, "ms"}, {"x", "y", 0, NULL}, {"n", NULL, 2, "ms"}}, 3, "n=[1,2][ms] x=y"},
        {{{"n", NULL, 1, "ms"}, {"n", NULL, 2, "s"}}, 2, "n=[1,2]"},
        {{{"m", "s", 0, NULL}, {"m", NULL, 3, NULL}}, 2, "m=[s,3]"},
        /* str=0, num=0, no unit: dropped like google/pprof does */
        {{{"gone", NULL, 0, NULL}, {"kept", NULL, 0, "bytes"}}, 2, "kept=0[bytes]"},
        /* a string label ignores num_unit */
        {{{"s", "v", 0, NULL}}, 1, "s=v"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len;
        uint8_t *p = label_profile(cases[i].l, cases[i].n, &len);
        struct run r;
        char buf[512];
        run(&r, p, len);
        CHECK_INT(r.err, PG_ERR_OK);
        if (r.err == PG_ERR_OK) {
            sample_attrs(&r, 0, 0, buf, sizeof(buf));
            if (strcmp(buf, cases[i].attrs) != 0) {
                fprintf(stderr, "  case %zu\n", i);
            }
            CHECK_STR(buf, cases[i].attrs);
        }
        run_free(&r);
        free(p);
    }
}

PG_TEST(four_sample_types_and_values)
{
    struct ppb b;
    static const uint64_t locs[] = {1};
    static const int64_t v1[] = {1, 100, -3, 0}, v2[] = {0, -1, 5, 9223372036854775807LL};
    struct run r;
    size_t len;
    uint8_t *p;
    static const char *const types[4] = {"alloc_objects", "alloc_space", "inuse_objects",
                                         "inuse_space"};
    static const int want_order[4] = {3, 1, 2, 0};

    ppb_init(&b);
    ppb_value_type(&b, 1, "alloc_objects", "count");
    ppb_value_type(&b, 1, "alloc_space", "bytes");
    ppb_value_type(&b, 1, "inuse_objects", "count");
    ppb_value_type(&b, 1, "inuse_space", "bytes");
    ppb_value_type(&b, 11, "space", "bytes");
    pw_u(&b.out, 12, 524288);
    pw_u(&b.out, 14, (uint64_t)ppb_s(&b, "alloc_space"));
    {
        static const uint64_t ln[] = {1, 5};
        ppb_function(&b, 1, "f", "f.go", 1);
        ppb_location(&b, 1, 0, 0, ln, 1, 0);
    }
    ppb_sample(&b, locs, 1, v1, 4, NULL, 0, 1);
    ppb_sample(&b, locs, 1, v2, 4, NULL, 0, 0);
    p = ppb_finish(&b, &len);
    run(&r, p, len);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK) {
        CHECK_INT(SP(&r)->n_profiles, 4);
        for (int k = 0; k < 4 && k < (int)SP(&r)->n_profiles; k++) {
            const struct pg_otlp_profile *pr = SP(&r)->profiles[k];
            CHECK_STR(str_at(&r, pr->sample_type->type_strindex), types[want_order[k]]);
            CHECK_STR(str_at(&r, pr->period_type->type_strindex), "space");
            CHECK_INT(pr->period, 524288);
            CHECK_INT(pr->n_samples, 2);
            CHECK_INT(pr->samples[0]->values[0], v1[want_order[k]]);
            CHECK_INT(pr->samples[1]->values[0], v2[want_order[k]]);
            CHECK_INT(pr->samples[1]->n_values, 1);
            /* location with no mapping */
            CHECK_INT(D(&r)->location_table[1]->mapping_index, 0);
        }
        {
            const struct pg_otlp_kv *ord = SP(&r)->scope->attributes[0];
            for (int k = 0; k < 4; k++) {
                CHECK_INT(ord->value->array_value->values[k]->int_value, want_order[k]);
            }
            CHECK_STR(SP(&r)->scope->attributes[1]->value->string_value, "alloc_space");
        }
    }
    run_free(&r);
    free(p);
}

/* Sample values of every varint length (1-10 bytes), packed, with the samples in the
 * middle of the buffer and at its very end (strings first): the word-at-a-time value
 * decoder and its bytewise fallback give the same values. */
PG_TEST(sample_values_every_varint_length)
{
    static const int64_t vals[] = {0, 1, 127, 128, 16383, 16384, 2097151, 2097152,
                                   268435455, 268435456, 1LL << 35, (1LL << 42) - 1, 1LL << 49,
                                   (1LL << 56) - 1, 1LL << 56, INT64_MAX, -1, INT64_MIN};
    enum { NT = sizeof(vals) / sizeof(vals[0]) };
    static const uint64_t locs[] = {1}, ln[] = {1, 5};
    char names[NT][8];

    for (int pass = 0; pass < 2; pass++) {
        struct ppb b;
        struct run r;
        int64_t rev[NT];
        size_t len;
        uint8_t *p;

        ppb_init(&b);
        b.strings_first = pass;
        for (int k = 0; k < NT; k++) {
            snprintf(names[k], sizeof(names[k]), "t%d", k); /* the writer keeps the pointer */
            ppb_value_type(&b, 1, names[k], "count");
            rev[k] = vals[NT - 1 - k];
        }
        ppb_function(&b, 1, "f", "f.go", 1);
        ppb_location(&b, 1, 0, 0, ln, 1, 0);
        ppb_sample(&b, locs, 1, vals, NT, NULL, 0, 1);
        ppb_sample(&b, locs, 1, rev, NT, NULL, 0, 1);
        p = ppb_finish(&b, &len);
        run(&r, p, len);
        CHECK_INT(r.err, PG_ERR_OK);
        if (r.err == PG_ERR_OK && SP(&r)->n_profiles == NT) {
            for (int k = 0; k < NT; k++) {
                /* profiles[0] and the last swap places (pprof's default type first) */
                int want = k == 0 ? NT - 1 : k == NT - 1 ? 0 : k;
                const struct pg_otlp_profile *pr = SP(&r)->profiles[k];
                CHECK_INT(pr->n_samples, 2);
                if (pr->n_samples == 2) {
                    CHECK(pr->samples[0]->values[0] == vals[want]);
                    CHECK(pr->samples[1]->values[0] == rev[want]);
                }
            }
        } else {
            CHECK_INT(r.err == PG_ERR_OK ? SP(&r)->n_profiles : 0, NT);
        }
        run_free(&r);
        free(p);
    }
}

/* Consecutive samples whose packed values are byte-equal take the previous sample's values
 * without decoding: every value must still be its own, whether the bytes repeat, differ in
 * one byte, differ in length, span more than eight bytes (never copied), or follow a sample
 * the fast path did not take (unpacked values). */
PG_TEST(repeated_value_bytes)
{
    static const struct {
        int64_t v[2];
        int packed;
    } rows[] = {
        {{1, 10000000}, 1}, {{1, 10000000}, 1}, {{1, 10000001}, 1}, {{2, 10000001}, 1},
        {{2, 10000001}, 1}, {{2, 1000000000}, 1}, {{2, 10000001}, 1}, {{-1, 5}, 1},
        {{-1, 5}, 1},       {{-1, 6}, 1},       {{3, 4}, 0},        {{3, 4}, 1},
        {{3, 4}, 0},        {{3, 4}, 1},        {{0, 0}, 1},        {{0, 0}, 1},
        /* only the last byte differs: 5 bytes, then exactly 8 (the whole word) */
        {{1, 10000000}, 1}, {{1, 12097152}, 1}, {{1, 1LL << 42}, 1}, {{1, 1LL << 42}, 1},
        {{1, 3LL << 42}, 1}, {{1, 3LL << 42}, 1},
    };
    enum { NR = sizeof(rows) / sizeof(rows[0]) };
    static const uint64_t locs[] = {1}, ln[] = {1, 5};
    struct ppb b;
    struct run r;
    size_t len;
    uint8_t *p;

    ppb_init(&b);
    ppb_value_type(&b, 1, "samples", "count");
    ppb_value_type(&b, 1, "cpu", "nanoseconds");
    ppb_function(&b, 1, "f", "f.go", 1);
    ppb_location(&b, 1, 0, 0, ln, 1, 0);
    for (int i = 0; i < NR; i++) {
        ppb_sample(&b, locs, 1, rows[i].v, 2, NULL, 0, rows[i].packed);
    }
    p = ppb_finish(&b, &len);
    run(&r, p, len);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK && SP(&r)->n_profiles == 2) {
        for (int k = 0; k < 2; k++) {
            const struct pg_otlp_profile *pr = SP(&r)->profiles[k];
            CHECK_INT(pr->n_samples, NR);
            for (int i = 0; i < NR && (size_t)i < pr->n_samples; i++) {
                /* profiles[0] is pprof's last type */
                if (pr->samples[i]->values[0] != rows[i].v[1 - k]) {
                    fprintf(stderr, "  profile %d sample %d: %lld, want %lld\n", k, i,
                            (long long)pr->samples[i]->values[0], (long long)rows[i].v[1 - k]);
                }
                CHECK(pr->samples[i]->values[0] == rows[i].v[1 - k]);
            }
        }
    }
    run_free(&r);
    free(p);
}

/* The word-matched label run checks the label cap and the sample's end once for the run:
 * exactly max_labels_per_sample labels pass, one more is the limit, in the middle of the
 * buffer and as its last sample; a later sample past the cap after good ones still fails. */
PG_TEST(label_run_cap)
{
    static const struct ppb_label labs[] = {
        {"k0", "v0", 0, NULL}, {"k1", "v1", 0, NULL}, {"k2", "v2", 0, NULL},
        {"k3", "v3", 0, NULL}, {"k4", "v4", 0, NULL},
    };
    static const struct {
        size_t cap, n_first, n_last;
        enum pg_err want;
    } cases[] = {
        {4, 4, 4, PG_ERR_OK},    {4, 5, 1, PG_ERR_LIMIT}, {4, 1, 5, PG_ERR_LIMIT},
        {5, 5, 5, PG_ERR_OK},    {1, 1, 1, PG_ERR_OK},    {1, 2, 1, PG_ERR_LIMIT},
        {0, 0, 0, PG_ERR_OK},    {0, 0, 1, PG_ERR_LIMIT},
    };
    static const uint64_t locs[] = {1}, ln[] = {1, 5};
    static const int64_t v[] = {1};

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (int strings_first = 0; strings_first < 2; strings_first++) {
            struct pg_translate_opts o;
            struct ppb b;
            struct run r;
            size_t len;
            uint8_t *p;

            ppb_init(&b);
            b.strings_first = strings_first; /* the last sample at the buffer's end, or not */
            ppb_value_type(&b, 1, "samples", "count");
            ppb_function(&b, 1, "f", "f.go", 1);
            ppb_location(&b, 1, 0, 0, ln, 1, 0);
            ppb_sample(&b, locs, 1, v, 1, labs, cases[c].n_first, 1);
            ppb_sample(&b, locs, 1, v, 1, labs, cases[c].n_first, 1);
            ppb_sample(&b, locs, 1, v, 1, labs, cases[c].n_last, 1);
            p = ppb_finish(&b, &len);
            pg_translate_opts_default(&o);
            o.limits.max_labels_per_sample = cases[c].cap;
            run_opts(&r, p, len, &o);
            if (r.err != cases[c].want) {
                fprintf(stderr, "  case %zu/%d: %s\n", c, strings_first, r.st.msg);
            }
            CHECK_INT(r.err, cases[c].want);
            if (cases[c].want == PG_ERR_LIMIT) {
                CHECK(strstr(r.st.msg, "max_labels_per_sample") != NULL);
            } else if (r.err == PG_ERR_OK) {
                char buf[128];
                sample_attrs(&r, 0, 2, buf, sizeof(buf));
                CHECK_INT(strlen(buf) > 0, cases[c].n_last > 0);
            }
            run_free(&r);
            free(p);
        }
    }
}

/* Samples in a row whose label keys repeat: translation reuses the last sample's key
 * classification only while every value is a non-empty string. Each row's link and
 * attributes must be what that sample alone would give. */
PG_TEST(label_layout_sequence)
{
#define T1 "4bf92f3577b34da6a3ce929d0e0e4736"
#define T2 "0af7651916cd43dd8448eb211c80319c"
#define S1 "00f067aa0ba902b7"
#define S2 "b7ad6b7169203331"
    static const struct {
        struct ppb_label l[3];
        size_t n;
        bool link;
        const char *attrs;
    } rows[] = {
        {{{"trace_id", T1, 0, NULL}, {"span_id", S1, 0, NULL}, {"route", "/a", 0, NULL}}, 3, true,
         "route=/a"},
        {{{"trace_id", T2, 0, NULL}, {"span_id", S2, 0, NULL}, {"route", "/b", 0, NULL}}, 3, true,
         "route=/b"},
        /* same keys, a numeric span id: no link */
        {{{"trace_id", T1, 0, NULL}, {"span_id", NULL, 77, NULL}, {"route", "/a", 0, NULL}}, 3,
         false, "trace_id=" T1 " span_id=77 route=/a"},
        {{{"trace_id", T1, 0, NULL}, {"span_id", S1, 0, NULL}, {"route", "/a", 0, NULL}}, 3, true,
         "route=/a"},
        /* same keys, an empty span id (dropped, as google/pprof does): no link */
        {{{"trace_id", T1, 0, NULL}, {"span_id", "", 0, NULL}, {"route", "/a", 0, NULL}}, 3, false,
         "trace_id=" T1 " route=/a"},
        {{{"span_id", S1, 0, NULL}, {"trace_id", T1, 0, NULL}, {"route", "/c", 0, NULL}}, 3, true,
         "route=/c"},
        /* same keys, an empty route: dropped, the link alone */
        {{{"span_id", S2, 0, NULL}, {"trace_id", T2, 0, NULL}, {"route", "", 0, NULL}}, 3, true,
         ""},
        {{{"route", "/a", 0, NULL}, {"route", "/b", 0, NULL}}, 2, false, "route=[/a,/b]"},
        {{{"route", "/c", 0, NULL}, {"route", "/d", 0, NULL}}, 2, false, "route=[/c,/d]"},
        {{{"route", "/c", 0, NULL}, {"route", NULL, 5, NULL}}, 2, false, "route=[/c,5]"},
        {{{"trace_id", T2, 0, NULL}, {"span_id", S2, 0, NULL}}, 2, true, ""},
        /* same keys, a trace id that is not hex: both stay attributes */
        {{{"trace_id", "x" T2, 0, NULL}, {"span_id", S1, 0, NULL}}, 2, false,
         "trace_id=x" T2 " span_id=" S1},
        {{{"trace_id", T2, 0, NULL}, {"span_id", S1, 0, NULL}}, 2, true, ""},
        {{{"thread", "main", 0, NULL}}, 1, false, "thread=main"},
        {{{"thread", "io", 0, NULL}}, 1, false, "thread=io"},
        {{{"thread", NULL, 3, "ms"}}, 1, false, "thread=3[ms]"},
    };
#undef T1
#undef T2
#undef S1
#undef S2
    enum { NR = sizeof(rows) / sizeof(rows[0]) };
    static const uint64_t locs[] = {1, 2};
    static const int64_t v[] = {1, 10};
    struct ppb b;
    struct run r;
    size_t len;
    uint8_t *p;

    ppb_init(&b);
    base_tables(&b);
    for (int i = 0; i < NR; i++) {
        ppb_sample(&b, locs, 2, v, 2, rows[i].l, rows[i].n, 1);
    }
    p = ppb_finish(&b, &len);
    run(&r, p, len);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK) {
        CHECK_INT(SP(&r)->profiles[0]->n_samples, NR);
        for (int i = 0; i < NR && (size_t)i < SP(&r)->profiles[0]->n_samples; i++) {
            char buf[512];
            const struct pg_otlp_sample *s = SP(&r)->profiles[0]->samples[i];
            sample_attrs(&r, 0, (size_t)i, buf, sizeof(buf));
            if (strcmp(buf, rows[i].attrs) != 0 || (s->link_index != 0) != rows[i].link) {
                fprintf(stderr, "  row %d: link %d attrs \"%s\", want %d \"%s\"\n", i,
                        s->link_index, buf, rows[i].link, rows[i].attrs);
            }
            CHECK_INT(s->link_index != 0, rows[i].link);
            CHECK_STR(buf, rows[i].attrs);
        }
    }
    run_free(&r);
    free(p);
}

/* Labels whose key and string indexes are one- or two-byte varints, in the middle of the
 * buffer and at its very end: the word-matched label shapes (1a 04 .., 1a 05 ..) and the
 * bytewise ones give the same attributes. */
PG_TEST(label_index_widths)
{
    static const struct {
        const char *key, *val, *want;
    } cases[] = {
        {"key_lo", "val_lo", "key_lo=val_lo"}, /* both under 128: 1a 04 08 k 10 v */
        {"key_lo", "val_hi", "key_lo=val_hi"}, /* two-byte string: 1a 05 08 k 10 v0 v1 */
        {"key_hi", "val_lo", "key_hi=val_lo"}, /* two-byte key: the bytewise path */
        {"key_hi", "val_hi", "key_hi=val_hi"},
    };
    enum { NC = sizeof(cases) / sizeof(cases[0]) };
    static const uint64_t locs[] = {1}, ln[] = {1, 5};
    static char fill[1200][12];

    for (int pass = 0; pass < 2; pass++) {
        struct ppb b;
        struct run r;
        size_t len;
        uint8_t *p;

        ppb_init(&b);
        b.strings_first = pass;
        ppb_value_type(&b, 1, "samples", "count");
        ppb_s(&b, "key_lo");
        ppb_s(&b, "val_lo");
        for (int i = 0; i < 200; i++) {
            snprintf(fill[i], sizeof(fill[i]), "filler%d", i); /* the writer keeps pointers */
            ppb_s(&b, fill[i]);
        }
        ppb_function(&b, 1, "f", "f.go", 1);
        ppb_location(&b, 1, 0, 0, ln, 1, 0);
        for (int i = 0; i < NC; i++) {
            const struct ppb_label l = {cases[i].key, cases[i].val, 0, NULL};
            const int64_t v[] = {i + 1};
            ppb_sample(&b, locs, 1, v, 1, &l, 1, 1);
        }
        /* more strings after them: a wrongly decoded index still lands in the table */
        for (int i = 200; i < 1200; i++) {
            snprintf(fill[i], sizeof(fill[i]), "filler%d", i);
            ppb_s(&b, fill[i]);
        }
        p = ppb_finish(&b, &len);
        run(&r, p, len);
        CHECK_INT(r.err, PG_ERR_OK);
        if (r.err == PG_ERR_OK) {
            for (int i = 0; i < NC; i++) {
                char buf[128];
                sample_attrs(&r, 0, (size_t)i, buf, sizeof(buf));
                CHECK_STR(buf, cases[i].want);
            }
        }
        run_free(&r);
        free(p);
    }
}

PG_TEST(profile_attributes_comments_frames)
{
    struct ppb b;
    struct run r;
    size_t len;
    uint8_t *p;

    ppb_init(&b);
    base_tables(&b);
    pw_u(&b.out, 7, (uint64_t)ppb_s(&b, "runtime\\..*"));
    pw_u(&b.out, 8, (uint64_t)ppb_s(&b, "main\\..*"));
    pw_u(&b.out, 13, (uint64_t)ppb_s(&b, "first comment"));
    {
        uint64_t c[2] = {(uint64_t)ppb_s(&b, "second"), (uint64_t)ppb_s(&b, "third")};
        pw_packed(&b.out, 13, c, 2);
    }
    pw_u(&b.out, 15, (uint64_t)ppb_s(&b, "https://example.com/doc"));
    pw_u(&b.out, 9, 1700000000000000000ull);
    pw_u(&b.out, 10, 10000000000ull);
    p = ppb_finish(&b, &len);
    run(&r, p, len);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK) {
        const struct pg_otlp_profile *pr = SP(&r)->profiles[0];
        char buf[256];
        static const char *const want[4] = {
            "pprof.profile.drop_frames=runtime\\..*", "pprof.profile.keep_frames=main\\..*",
            "pprof.profile.comment=[first comment,second,third]",
            "pprof.profile.doc_url=https://example.com/doc"};
        CHECK_INT(pr->n_attribute_indices, 4);
        for (size_t i = 0; i < 4 && i < pr->n_attribute_indices; i++) {
            attr_render(D(&r), pr->attribute_indices[i], buf, sizeof(buf));
            CHECK_STR(buf, want[i]);
        }
        CHECK_INT(pr->time_unix_nano, 1700000000000000000ull);
        CHECK_INT(pr->duration_nano, 10000000000ull);
        CHECK_INT(pr->n_samples, 0); /* empty profile: accepted */
        CHECK_INT(SP(&r)->profiles[1]->n_samples, 0);
        CHECK_INT(r.stats.sample_records, 0);
    }
    run_free(&r);
    free(p);
}

PG_TEST(mappings_locations_inline_folded)
{
    struct ppb b;
    struct run r;
    size_t len;
    uint8_t *p;
    static const uint64_t inl[] = {1, 11, 2, 22, 3, 33}; /* callee first */
    static const uint64_t loc_a[] = {10, 20, 30};
    static const int64_t v[] = {5};

    ppb_init(&b);
    b.strings_first = 1;
    ppb_value_type(&b, 1, "samples", "count");
    ppb_mapping(&b, 7, 0x1000, 0x2000, "/lib/a.so", "", 0);                 /* no build id */
    ppb_mapping(&b, 9, 0x3000, 0x4000, "/bin/b", "feedface", 0xf);          /* all flags */
    ppb_mapping(&b, 11, 0x5000, 0x6000, "[vdso]", "", 0);                   /* unreferenced */
    ppb_function(&b, 1, "memcpy", "string.c", 0);
    ppb_function(&b, 2, "printf", "stdio.c", 0);
    ppb_function(&b, 3, "main", "main.c", 0);
    ppb_function(&b, 4, "unused", "x.c", 0);
    ppb_location(&b, 10, 9, 0x3100, inl, 3, 1);    /* inline chain, folded */
    ppb_location(&b, 20, 7, 0x1100, NULL, 0, 0);   /* address only */
    ppb_location(&b, 30, 0, 0xdead, NULL, 0, 0);   /* address only, no mapping */
    ppb_location(&b, 40, 7, 0x1200, NULL, 0, 0);   /* unreferenced */
    ppb_sample(&b, loc_a, 3, v, 1, NULL, 0, 0);
    p = ppb_finish(&b, &len);
    run(&r, p, len);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK) {
        const struct pg_otlp_dict *d = D(&r);
        char buf[256];
        CHECK_INT(d->n_mapping_table, 4); /* every pprof mapping, in order */
        CHECK_STR(str_at(&r, d->mapping_table[1]->filename_strindex), "/lib/a.so");
        CHECK_INT(d->mapping_table[1]->n_attribute_indices, 0);
        CHECK_STR(str_at(&r, d->mapping_table[2]->filename_strindex), "/bin/b");
        CHECK_INT(d->mapping_table[2]->memory_start, 0x3000);
        CHECK_INT(d->mapping_table[2]->n_attribute_indices, 5);
        if (d->mapping_table[2]->n_attribute_indices == 5) {
            static const char *const want[5] = {
                "process.executable.build_id.gnu=feedface", "pprof.mapping.has_functions=true",
                "pprof.mapping.has_filenames=true", "pprof.mapping.has_line_numbers=true",
                "pprof.mapping.has_inline_frames=true"};
            for (int i = 0; i < 5; i++) {
                attr_render(d, d->mapping_table[2]->attribute_indices[i], buf, sizeof(buf));
                CHECK_STR(buf, want[i]);
            }
        }
        CHECK_STR(str_at(&r, d->mapping_table[3]->filename_strindex), "[vdso]");
        CHECK_INT(d->n_location_table, 4); /* unreferenced location 40 dropped */
        CHECK_INT(d->location_table[1]->mapping_index, 2);
        CHECK_INT(d->location_table[1]->n_lines, 3);
        if (d->location_table[1]->n_lines == 3) {
            CHECK_STR(str_at(&r, d->function_table[d->location_table[1]->lines[0]->function_index]
                                     ->name_strindex), "memcpy");
            CHECK_STR(str_at(&r, d->function_table[d->location_table[1]->lines[2]->function_index]
                                     ->name_strindex), "main");
            CHECK_INT(d->location_table[1]->lines[1]->line, 22);
        }
        CHECK_INT(d->location_table[1]->n_attribute_indices, 1);
        attr_render(d, d->location_table[1]->attribute_indices[0], buf, sizeof(buf));
        CHECK_STR(buf, "pprof.location.is_folded=true");
        CHECK_INT(d->location_table[2]->mapping_index, 1);
        CHECK_INT(d->location_table[2]->address, 0x1100);
        CHECK_INT(d->location_table[2]->n_lines, 0);
        CHECK_INT(d->location_table[3]->mapping_index, 0);
        CHECK_INT(d->location_table[3]->address, 0xdead);
        CHECK_INT(d->n_function_table, 4); /* "unused" dropped */
        CHECK_INT(d->stack_table[1]->n_location_indices, 3);
        CHECK_INT(SP(&r)->n_profiles, 1);
        CHECK_INT(SP(&r)->profiles[0]->samples[0]->values[0], 5);
    }
    run_free(&r);
    free(p);
}

/* Field order and packing do not change the output (profile_id aside). */
PG_TEST(determinism_packed_unpacked_order)
{
    uint8_t *bufs[2];
    size_t lens[2];
    size_t enc_len[2];
    uint8_t *enc[2];
    static const struct ppb_label lab[] = {{"a", "x", 0, NULL}, {"n", NULL, 3, "ms"}};
    /* string labels only: packed, the decoder's fast path takes the whole sample */
    static const struct ppb_label slab[] = {{"a", "x", 0, NULL}, {"b", "y", 0, NULL},
                                            {"a", "z", 0, NULL}};

    for (int pass = 0; pass < 2; pass++) {
        struct ppb b;
        static const uint64_t locs[] = {2, 1};
        static const int64_t v[] = {4, 40};
        struct run r;
        ppb_init(&b);
        b.strings_first = pass;
        base_tables(&b);
        ppb_sample(&b, locs, 2, v, 2, lab, 2, pass);
        ppb_sample(&b, locs + 1, 1, v, 2, lab + 1, 1, !pass);
        ppb_sample(&b, locs, 2, v, 2, slab, 3, pass);
        ppb_sample(&b, locs + 1, 1, v, 2, slab, 3, pass); /* packed: same label bytes */
        ppb_sample(&b, locs, 2, v, 2, slab, 3, !pass);
        ppb_sample(&b, locs, 2, v, 2, slab, 3, pass);
        ppb_sample(&b, locs, 2, v, 2, slab, 2, !pass);
        bufs[pass] = ppb_finish(&b, &lens[pass]);
        run(&r, bufs[pass], lens[pass]);
        CHECK_INT(r.err, PG_ERR_OK);
        enc[pass] = NULL;
        enc_len[pass] = 0;
        if (r.err == PG_ERR_OK) {
            for (size_t k = 0; k < SP(&r)->n_profiles; k++) {
                SP(&r)->profiles[k]->profile_id.len = 0;
            }
            enc_len[pass] = protobuf_c_message_get_packed_size(&r.req->base);
            enc[pass] = malloc(enc_len[pass]);
            protobuf_c_message_pack(&r.req->base, enc[pass]);
        }
        run_free(&r);
    }
    CHECK(lens[0] != lens[1] || memcmp(bufs[0], bufs[1], lens[0]) != 0); /* inputs differ */
    CHECK(enc_len[0] > 0 && enc_len[0] == enc_len[1]);
    CHECK(enc[0] != NULL && enc[1] != NULL && memcmp(enc[0], enc[1], enc_len[0]) == 0);
    for (int i = 0; i < 2; i++) {
        free(bufs[i]);
        free(enc[i]);
    }
}

PG_TEST(duplicate_pprof_strings_and_bad_utf8)
{
    struct ppb b;
    struct run r;
    size_t len;
    uint8_t *p;
    static const uint64_t l1[] = {1, 1}, l2[] = {2, 1};
    static const uint64_t locs[] = {1, 2};
    static const int64_t v[] = {1};
    struct pw f = {0};

    ppb_init(&b);
    ppb_value_type(&b, 1, "samples", "count");
    ppb_function(&b, 1, "dup", "f.go", 0);
    /* function 2 names a second, identical "dup" string and an invalid UTF-8 file */
    pw_u(&f, 1, 2);
    pw_u(&f, 2, 5);
    pw_u(&f, 4, 6);
    pw_msg(&b.out, 5, &f);
    ppb_location(&b, 1, 0, 0, l1, 1, 0);
    ppb_location(&b, 2, 0, 0, l2, 1, 0);
    ppb_sample(&b, locs, 2, v, 1, NULL, 0, 1);
    CHECK_INT(ppb_s(&b, "samples"), 1);
    CHECK_INT(ppb_s(&b, "f.go"), 4);
    b.strs[b.nstr++] = "dup";       /* 5: duplicate content */
    b.strs[b.nstr++] = "bad\xff\xfe"; /* 6 */
    p = ppb_finish(&b, &len);
    run(&r, p, len);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK) {
        bool found = false;
        for (size_t i = 0; i < D(&r)->n_string_table; i++) {
            found |= strcmp(str_at(&r, (int32_t)i), "bad\xef\xbf\xbd\xef\xbf\xbd") == 0;
        }
        CHECK(found);
        CHECK_INT(D(&r)->function_table[1]->name_strindex, D(&r)->function_table[2]->name_strindex);
    }
    run_free(&r);
    free(p);
}

PG_TEST(original_payload_option)
{
    size_t len, glen;
    uint8_t *p = read_fixture("pprof/golden/appendix_b.pprof", &len);
    uint8_t *g = p ? gzip_bytes(p, len, &glen) : NULL;
    struct pg_translate_opts o;
    struct run r;

    if (g == NULL) {
        CHECK(g != NULL);
        free(p);
        return;
    }
    pg_translate_opts_default(&o);
    o.include_original_payload = true;
    o.scope_name = "custom";
    run_opts(&r, g, glen, &o);
    CHECK_INT(r.err, PG_ERR_OK);
    if (r.err == PG_ERR_OK) {
        const struct pg_otlp_profile *pr = SP(&r)->profiles[0];
        CHECK_STR(pr->original_payload_format, "pprof");
        CHECK_INT(pr->original_payload.len, len);
        CHECK(memcmp(pr->original_payload.data, p, len) == 0);
        CHECK_INT(SP(&r)->profiles[1]->original_payload.len, 0);
        CHECK_STR(SP(&r)->scope->name, "custom");
    }
    run_free(&r);
    free(g);
    free(p);
}

PG_TEST(inflate_api)
{
    size_t len, glen;
    uint8_t *p = read_fixture("pprof/golden/appendix_b.pprof", &len);
    uint8_t *g = p ? gzip_bytes(p, len, &glen) : NULL;
    struct pg_arena *a = pg_arena_create(0);
    struct pg_status st;
    uint8_t *out, *multi;
    size_t out_len;

    if (g == NULL) {
        CHECK(g != NULL);
        free(p);
        pg_arena_destroy(a);
        return;
    }
    CHECK(pg_is_gzip(g, glen));
    CHECK(!pg_is_gzip(p, len));
    CHECK(!pg_is_gzip(g, 1));
    CHECK_INT(pg_inflate(a, g, glen, PG_INFLATE_GZIP, len, &out, &out_len, &st), PG_ERR_OK);
    CHECK(out_len == len && memcmp(out, p, len) == 0);
    /* multi-member gzip: two members concatenate */
    multi = malloc(2 * glen);
    memcpy(multi, g, glen);
    memcpy(multi + glen, g, glen);
    CHECK_INT(pg_inflate(a, multi, 2 * glen, PG_INFLATE_GZIP, 2 * len, &out, &out_len, &st),
              PG_ERR_OK);
    CHECK_INT(out_len, 2 * len);
    CHECK_INT(pg_inflate(a, multi, 2 * glen, PG_INFLATE_GZIP, 2 * len - 1, &out, &out_len, &st),
              PG_ERR_LIMIT);
    /* trailing garbage after a member */
    multi[glen] = 0x00;
    CHECK_INT(pg_inflate(a, multi, glen + 4, PG_INFLATE_GZIP, 2 * len, &out, &out_len, &st),
              PG_ERR_MALFORMED);
    CHECK(strstr(st.msg, "gzip: invalid header") != NULL);
    /* zlib (HTTP "deflate") */
    {
        uLongf zl = compressBound(len);
        uint8_t *z = malloc(zl);
        compress(z, &zl, p, len);
        CHECK_INT(pg_inflate(a, z, zl, PG_INFLATE_ZLIB, len, &out, &out_len, &st), PG_ERR_OK);
        CHECK(out_len == len && memcmp(out, p, len) == 0);
        CHECK_INT(pg_inflate(a, z, zl, PG_INFLATE_GZIP, len, &out, &out_len, &st),
                  PG_ERR_MALFORMED);
        CHECK_INT(pg_inflate(a, g, glen, PG_INFLATE_ZLIB, len, &out, &out_len, &st),
                  PG_ERR_MALFORMED);
        free(z);
    }
    /* a bomb: 64 MiB of zeros stops at the cap */
    {
        size_t big = (size_t)64 << 20, bl;
        uint8_t *zeros = calloc(1, big);
        uint8_t *bomb = gzip_bytes(zeros, big, &bl);
        free(zeros);
        CHECK_INT(pg_inflate(a, bomb, bl, PG_INFLATE_GZIP, 1 << 20, &out, &out_len, &st),
                  PG_ERR_LIMIT);
        CHECK(strstr(st.msg, "exceeds max_request_body_size (1048576 bytes)") != NULL);
        CHECK(pg_arena_footprint(a) < (size_t)8 << 20);
        free(bomb);
    }
    free(multi);
    free(g);
    free(p);
    pg_arena_destroy(a);
}

/* The request's bytes with random profile ids cleared (they differ per call). */
static uint8_t *packed_without_ids(struct pg_otlp_request *req, size_t *len)
{
    struct pg_otlp_scopeprof *sp = req->resource_profiles[0]->scope_profiles[0];
    uint8_t *buf;

    for (size_t k = 0; k < sp->n_profiles; k++) {
        sp->profiles[k]->profile_id.len = 0;
    }
    *len = protobuf_c_message_get_packed_size(&req->base);
    buf = malloc(*len ? *len : 1);
    protobuf_c_message_pack(&req->base, buf);
    return buf;
}

/* pg_pprof_translate_owned gives the body's arena back (NULL) on every path and produces
 * the same request as pg_pprof_translate; under ASan a read of the body after it was
 * dropped (plain pprof strings, the original payload copy) is a use-after-free. */
PG_TEST(owned_body_arena)
{
    size_t glen, plen;
    uint8_t *gz = read_fixture("sdk/push0.pprof.gz", &glen);
    uint8_t *plain = read_fixture("pprof/golden/appendix_b.pprof", &plen);
    static const uint8_t bad[] = {0x0a, 0xff};
    struct {
        const char *name;
        const uint8_t *body;
        size_t len;
        bool payload;
        enum pg_err want;
    } cases[] = {
        {"gzip'd SDK push", gz, glen, false, PG_ERR_OK},
        {"gzip'd, original payload kept", gz, glen, true, PG_ERR_OK},
        {"plain pprof", plain, plen, false, PG_ERR_OK},
        {"plain, original payload kept", plain, plen, true, PG_ERR_OK},
        {"malformed", bad, sizeof(bad), false, PG_ERR_MALFORMED},
        {"truncated gzip", gz, glen / 2, false, PG_ERR_MALFORMED},
    };

    CHECK(gz != NULL && plain != NULL);
    if (gz == NULL || plain == NULL) {
        free(gz);
        free(plain);
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_translate_opts o;
        struct pg_arena *a1 = pg_arena_create(0), *a2 = pg_arena_create(0);
        struct pg_arena *body_arena = pg_arena_create(0);
        uint8_t *copy = pg_arena_memdup(body_arena, cases[i].body, cases[i].len);
        struct pg_otlp_request *r1 = NULL, *r2 = NULL;
        struct pg_status st1, st2;
        enum pg_err e1, e2;

        pg_translate_opts_default(&o);
        o.include_original_payload = cases[i].payload;
        e1 = pg_pprof_translate(a1, cases[i].body, cases[i].len, &o, &r1, NULL, &st1);
        e2 = pg_pprof_translate_owned(a2, &body_arena, copy, cases[i].len, &o, &r2, NULL, &st2);
        if (e1 != cases[i].want || e2 != cases[i].want || body_arena != NULL) {
            fprintf(stderr, "  case %s: %d / %d, body arena %s\n", cases[i].name, e1, e2,
                    body_arena ? "kept" : "dropped");
        }
        CHECK_INT(e1, cases[i].want);
        CHECK_INT(e2, cases[i].want);
        CHECK(body_arena == NULL);
        if (e1 == PG_ERR_OK && e2 == PG_ERR_OK) {
            size_t l1, l2;
            uint8_t *b1 = packed_without_ids(r1, &l1), *b2 = packed_without_ids(r2, &l2);
            CHECK(l1 == l2 && memcmp(b1, b2, l1) == 0);
            free(b1);
            free(b2);
        } else if (e1 != PG_ERR_OK && e2 != PG_ERR_OK) {
            CHECK_STR(st1.msg, st2.msg);
        }
        pg_arena_destroy(body_arena);
        pg_arena_destroy(a1);
        pg_arena_destroy(a2);
    }
    free(gz);
    free(plain);
}

PG_TEST_MAIN(PG_CASE(golden_appendix_b_to_a), PG_CASE(sample_values_every_varint_length), PG_CASE(repeated_value_bytes), PG_CASE(label_run_cap), PG_CASE(label_layout_sequence), PG_CASE(label_index_widths), PG_CASE(invalid_inputs), PG_CASE(invalid_gzip),
             PG_CASE(limits), PG_CASE(links_and_trace_labels),
             PG_CASE(links_dedup_and_custom_keys), PG_CASE(trace_id_hex_digits),
             PG_CASE(labels_numeric_multi_and_dropped),
             PG_CASE(four_sample_types_and_values), PG_CASE(profile_attributes_comments_frames),
             PG_CASE(mappings_locations_inline_folded), PG_CASE(determinism_packed_unpacked_order),
             PG_CASE(duplicate_pprof_strings_and_bad_utf8), PG_CASE(original_payload_option),
             PG_CASE(inflate_api), PG_CASE(owned_body_arena))
