/* SPDX-License-Identifier: Apache-2.0
 * otlp/dict interning, one table per entity: strings are stored UTF-8-clean
 * (one pass hashes and spots non-ASCII/NUL bytes; a repaired string must land
 * on the same entry as its clean form, whatever path hashed it), equal values
 * share an index, distinct ones do not, links keep their 16 + 8 bytes, and a
 * string attribute is one entry whether made by pg_dict_attr_str or pg_dict_attr. */
#include <string.h>

#include "core/arena.h"
#include "otlp/dict.h"
#include "otlp/otlp_build.h"
#include "pg_test.h"

static const struct {
    const char *name;
    const char *in;
    size_t len;
    const char *want; /* the stored form */
} str_cases[] = {
    {"empty", "", 0, ""},
    {"1 byte", "a", 1, "a"},
    {"2 bytes", "ab", 2, "ab"},
    {"3 bytes", "abc", 3, "abc"},
    {"4 bytes", "abcd", 4, "abcd"},
    {"7 bytes", "abcdefg", 7, "abcdefg"},
    {"8 bytes", "abcdefgh", 8, "abcdefgh"},
    {"17 bytes", "abcdefghijklmnopq", 17, "abcdefghijklmnopq"},
    {"NUL alone", "\0", 1, "\xef\xbf\xbd"},
    {"NUL 2nd of 2", "a\0", 2, "a\xef\xbf\xbd"},
    {"NUL mid of 3", "a\0b", 3, "a\xef\xbf\xbd" "b"},
    {"NUL 1st of 3", "\0bc", 3, "\xef\xbf\xbd" "bc"},
    {"NUL in 5-byte tail", "abcd\0", 5, "abcd\xef\xbf\xbd"},
    {"NUL 2nd of 6", "a\0cdef", 6, "a\xef\xbf\xbd" "cdef"},
    {"NUL in 1st word", "abcdefg\0ijk", 11, "abcdefg\xef\xbf\xbdijk"},
    {"NUL in tail after word", "abcdefghij\0l", 12, "abcdefghij\xef\xbf\xbdl"},
    {"NUL last of 9", "abcdefgh\0", 9, "abcdefgh\xef\xbf\xbd"},
    {"2-byte", "\xc3\xa9", 2, "\xc3\xa9"},
    {"euro in word", "price \xe2\x82\xac 10", 12, "price \xe2\x82\xac 10"},
    {"bad byte short", "a\xff", 2, "a\xef\xbf\xbd"},
    {"bad byte in word", "abcdefghij\xffklmnop", 17, "abcdefghij\xef\xbf\xbdklmnop"},
    {"U+FFFD itself", "\xef\xbf\xbd", 3, "\xef\xbf\xbd"},
};

PG_TEST(test_strings)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_dict_builder *b = pg_dict_builder_new(a, a);
    int32_t idx[sizeof(str_cases) / sizeof(str_cases[0])];
    size_t n = sizeof(str_cases) / sizeof(str_cases[0]);
    struct pg_otlp_dict *d;

    PG_REQUIRE(b != NULL);
    CHECK_INT(pg_dict_string(b, "", 0), 0);
    for (size_t i = 0; i < n; i++) {
        idx[i] = pg_dict_string(b, str_cases[i].in, str_cases[i].len);
        CHECK(idx[i] >= 0);
        /* The clean form, interned directly, is the same entry, and so is a second call. */
        CHECK_INT(pg_dict_string(b, str_cases[i].want, strlen(str_cases[i].want)), idx[i]);
        CHECK_INT(pg_dict_string(b, str_cases[i].in, str_cases[i].len), idx[i]);
    }
    d = pg_dict_finish(b);
    PG_REQUIRE(d != NULL);
    for (size_t i = 0; i < n; i++) {
        bool ok = idx[i] >= 0 && (size_t)idx[i] < d->n_string_table &&
                  strcmp(d->string_table[idx[i]], str_cases[i].want) == 0;
        if (!ok) {
            fprintf(stderr, "  case %s: stored wrong\n", str_cases[i].name);
        }
        CHECK(ok);
        for (size_t j = 0; j < i; j++) {
            /* distinct stored forms, distinct entries */
            CHECK((idx[i] == idx[j]) == (strcmp(str_cases[i].want, str_cases[j].want) == 0));
        }
    }
    pg_arena_destroy(a);
}

PG_TEST(test_links)
{
    static const uint8_t zero[24];
    struct pg_arena *a = pg_arena_create(0);
    struct pg_dict_builder *b = pg_dict_builder_new(a, a);
    uint8_t ids[300][24];
    int32_t got[300];
    struct pg_otlp_dict *d;

    PG_REQUIRE(b != NULL);
    CHECK_INT(pg_dict_link(b, zero, zero + 16), 0);
    for (size_t i = 0; i < 300; i++) {
        for (size_t j = 0; j < 24; j++) {
            /* pairs that differ in one byte only: trace id, span id, first and last bytes */
            ids[i][j] = (uint8_t)(j == i % 24 ? i / 24 + 1 : (i % 3 == 0 ? j : 0));
        }
    }
    for (size_t i = 0; i < 300; i++) {
        got[i] = pg_dict_link(b, ids[i], ids[i] + 16);
        CHECK(got[i] > 0);
    }
    d = pg_dict_finish(b);
    PG_REQUIRE(d != NULL);
    for (size_t i = 0; i < 300; i++) {
        const struct pg_otlp_link *l;
        for (size_t j = 0; j < i; j++) {
            if (memcmp(ids[i], ids[j], 24) == 0) {
                CHECK_INT(got[i], got[j]);
            } else {
                CHECK(got[i] != got[j]);
            }
        }
        CHECK_INT(pg_dict_link(b, ids[i], ids[i] + 16), got[i]);
        PG_REQUIRE(got[i] > 0 && (size_t)got[i] < d->n_link_table);
        l = d->link_table[got[i]];
        CHECK(l->trace_id.len == 16 && memcmp(l->trace_id.data, ids[i], 16) == 0);
        CHECK(l->span_id.len == 8 && memcmp(l->span_id.data, ids[i] + 16, 8) == 0);
    }
    CHECK(d->link_table[0]->trace_id.len == 16 && d->link_table[0]->span_id.len == 8);
    pg_arena_destroy(a);
}

/* pg_dict_attr_str and pg_dict_attr with the same (repaired) string value are one entry,
 * in either order; key, unit and value each tell entries apart. */
PG_TEST(test_attr_str)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_dict_builder *b = pg_dict_builder_new(a, a);
    size_t n = sizeof(str_cases) / sizeof(str_cases[0]);
    int32_t got[sizeof(str_cases) / sizeof(str_cases[0])][2];
    struct pg_otlp_dict *d;

    PG_REQUIRE(b != NULL);
    for (size_t i = 0; i < n; i++) {
        for (int32_t unit = 0; unit < 2; unit++) {
            struct pg_otlp_anyvalue v = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
            int32_t viaattr;
            v.value_case = PG_OTLP_ANYVALUE_STR;
            if (i % 2 == 0) {
                got[i][unit] = pg_dict_attr_str(b, 7, str_cases[i].in, str_cases[i].len, unit);
            }
            v.string_value = (char *)pg_dict_tmp_cstr(b, str_cases[i].in, str_cases[i].len);
            PG_REQUIRE(v.string_value != NULL);
            viaattr = pg_dict_attr(b, 7, &v, unit);
            if (i % 2 != 0) {
                got[i][unit] = pg_dict_attr_str(b, 7, str_cases[i].in, str_cases[i].len, unit);
            }
            CHECK(got[i][unit] > 0);
            CHECK_INT(got[i][unit], viaattr);
            CHECK(pg_dict_attr_str(b, 8, str_cases[i].in, str_cases[i].len, unit) != viaattr);
        }
        CHECK(got[i][0] != got[i][1]);
    }
    d = pg_dict_finish(b);
    PG_REQUIRE(d != NULL);
    for (size_t i = 0; i < n; i++) {
        const struct pg_otlp_kvu *e = d->attribute_table[got[i][1]];
        CHECK(e->key_strindex == 7 && e->unit_strindex == 1 && e->value != NULL &&
              e->value->value_case == PG_OTLP_ANYVALUE_STR &&
              strcmp(e->value->string_value, str_cases[i].want) == 0);
        for (size_t j = 0; j < i; j++) {
            CHECK((got[i][0] == got[j][0]) ==
                  (strcmp(str_cases[i].want, str_cases[j].want) == 0));
        }
    }
    pg_arena_destroy(a);
}

/* The builder starts with index 0 of every table: the zero value of each, which the
 * interning calls find (they would append a second entry if the seeded hash differed). */
PG_TEST(test_zero_entries)
{
    static const uint8_t zero[24];
    struct pg_arena *a = pg_arena_create(0);
    struct pg_dict_builder *b = pg_dict_builder_new(a, a);
    struct pg_dict_counts c;
    struct pg_otlp_dict *d;

    PG_REQUIRE(b != NULL);
    CHECK_INT(pg_dict_string(b, "", 0), 0);
    CHECK_INT(pg_dict_function(b, 0, 0, 0, 0), 0);
    CHECK_INT(pg_dict_mapping(b, 0, 0, 0, 0, NULL, 0), 0);
    CHECK_INT(pg_dict_location(b, 0, 0, NULL, 0, NULL, 0), 0);
    CHECK_INT(pg_dict_stack(b, NULL, 0), 0);
    CHECK_INT(pg_dict_attr(b, 0, NULL, 0), 0);
    CHECK_INT(pg_dict_link(b, zero, zero + 16), 0);
    pg_dict_counts(b, &c);
    CHECK(c.strings == 1 && c.functions == 1 && c.mappings == 1 && c.locations == 1 &&
          c.stacks == 1 && c.attrs == 1 && c.links == 1);
    d = pg_dict_finish(b);
    PG_REQUIRE(d != NULL);
    CHECK(strcmp(d->string_table[0], "") == 0);
    CHECK(d->function_table[0]->name_strindex == 0 && d->function_table[0]->start_line == 0);
    CHECK(d->mapping_table[0]->n_attribute_indices == 0 &&
          d->mapping_table[0]->attribute_indices == NULL);
    CHECK(d->location_table[0]->n_lines == 0 && d->location_table[0]->lines == NULL);
    CHECK(d->stack_table[0]->n_location_indices == 0);
    CHECK(d->attribute_table[0]->value == NULL);
    CHECK(d->link_table[0]->trace_id.len == 16 &&
          memcmp(d->link_table[0]->trace_id.data, zero, 16) == 0 &&
          d->link_table[0]->span_id.len == 8 &&
          memcmp(d->link_table[0]->span_id.data, zero, 8) == 0);
    pg_arena_destroy(a);
}

/* otlp_build's string values, the same repair rule outside the dictionary: the stored
 * value is an arena copy, NUL-terminated, clean; NULL stands for "". */
PG_TEST(test_any_str)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_kv *kv;
    struct pg_otlp_anyvalue *v;

    for (size_t i = 0; i < sizeof(str_cases) / sizeof(str_cases[0]); i++) {
        v = pg_otlp_any_str(a, str_cases[i].in, str_cases[i].len);
        PG_REQUIRE(v != NULL);
        CHECK(v->value_case == PG_OTLP_ANYVALUE_STR && v->string_value != str_cases[i].in &&
              strcmp(v->string_value, str_cases[i].want) == 0);
    }
    v = pg_otlp_any_str(a, NULL, 5);
    CHECK(v != NULL && strcmp(v->string_value, "") == 0);
    kv = pg_otlp_kv_str(a, "service.name", "a\xff");
    CHECK(kv != NULL && strcmp(kv->key, "service.name") == 0 && kv->value != NULL &&
          strcmp(kv->value->string_value, "a\xef\xbf\xbd") == 0);
    kv = pg_otlp_kv_str(a, NULL, NULL);
    CHECK(kv != NULL && strcmp(kv->key, "") == 0 && strcmp(kv->value->string_value, "") == 0);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_strings), PG_CASE(test_links), PG_CASE(test_attr_str),
             PG_CASE(test_zero_entries), PG_CASE(test_any_str))
