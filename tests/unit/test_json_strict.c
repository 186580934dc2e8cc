/* SPDX-License-Identifier: Apache-2.0
 * core/json_strict.c: the strict whole-document parse every JSON reader shares, one table
 * (documents taken, each refusal with its code and message: cut short, null, trailing
 * bytes, nesting, UTF-8 only when asked, json-c's own errors with the offset) and the
 * memory cap held before json-c builds anything. */
#include "pg_test.h"

#include <json-c/json.h>

#include "core/arena.h"
#include "core/json_strict.h"

PG_TEST(test_json_strict_table)
{
    static const struct {
        const char *in;
        unsigned flags;
        enum pg_err code;
        const char *msg; /* a substring of the message; for OK: the type json-c built */
    } cases[] = {
        {"{\"a\":[1,2]}", 0, PG_ERR_OK, "object"},
        {" {} \n\t", 0, PG_ERR_OK, "object"},            /* white space around it */
        {"12", 0, PG_ERR_OK, "int"},                      /* finished by the NUL pass */
        {"\"h\xc3\xa9\"", PG_JSON_UTF8, PG_ERR_OK, "string"},
        {"\"\xff\"", 0, PG_ERR_OK, "string"},             /* the caller checks UTF-8 */
        {"", 0, PG_ERR_MALFORMED, "doc: the document ends early (0 bytes)"},
        {"{\"a\":", 0, PG_ERR_MALFORMED, "doc: the document ends early (5 bytes)"},
        {"null", 0, PG_ERR_MALFORMED, "doc: the document is null"},
        /* json-c's strict mode stops at a second value itself: the offset either way */
        {"{} x", 0, PG_ERR_MALFORMED, "doc: unexpected character at offset 3"},
        {"{}{}", 0, PG_ERR_MALFORMED, "at offset 2"},
        {"[[[[[1]]]]]", 0, PG_ERR_MALFORMED, "doc: nested deeper than 4 objects/arrays"},
        {"[[[1]]]", 0, PG_ERR_OK, "array"},
        {"{a:1}", 0, PG_ERR_MALFORMED, "at offset 1"},     /* strict: keys are strings */
        {"[1,]", 0, PG_ERR_MALFORMED, "at offset 3"},      /* strict: no trailing comma */
        {"\"\xff\"", PG_JSON_UTF8, PG_ERR_MALFORMED, "at offset"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct json_object *root = (struct json_object *)&root; /* must be reset */
        struct pg_status st = {0};
        enum pg_err err = pg_json_parse_strict(a, cases[i].in, strlen(cases[i].in), "doc", 4,
                                               cases[i].flags, &root, &st);

        if (err != cases[i].code) {
            fprintf(stderr, "  case %zu \"%s\": %d %s\n", i, cases[i].in, err, st.msg);
        }
        CHECK_INT(err, cases[i].code);
        if (cases[i].code == PG_ERR_OK) {
            CHECK(root != NULL &&
                  strcmp(json_type_to_name(json_object_get_type(root)), cases[i].msg) == 0);
        } else {
            CHECK(root == NULL);
            if (strstr(st.msg, cases[i].msg) == NULL) {
                fprintf(stderr, "  case %zu: \"%s\" lacks \"%s\"\n", i, st.msg, cases[i].msg);
            }
            CHECK(strstr(st.msg, cases[i].msg) != NULL);
        }
        json_object_put(err == PG_ERR_OK ? root : NULL);
        pg_arena_destroy(a);
    }
}

/* A NUL ends json-c's reading early; what follows inside the length is not ignored. */
PG_TEST(test_json_strict_nul_inside)
{
    struct pg_arena *a = pg_arena_create(1 << 20);
    struct json_object *root = NULL;
    struct pg_status st = {0};

    CHECK_INT(pg_json_parse_strict(a, "{} \0x", 5, "doc", 4, 0, &root, &st), PG_ERR_MALFORMED);
    CHECK(root == NULL && strstr(st.msg, "doc: bytes after the document at offset 3") != NULL);
    pg_arena_destroy(a);
}

/* json-c's tree is far larger than the text and lives outside the arena: a document of
 * many small objects is refused against the arena's cap before it is parsed. */
PG_TEST(test_json_strict_memory_cap)
{
    struct pg_arena *a = pg_arena_create(64 << 10);
    size_t n = 2000 * 3;
    char *doc = malloc(n + 3);
    struct json_object *root = NULL;
    struct pg_status st = {0};

    PG_REQUIRE(a != NULL && doc != NULL);
    doc[0] = '[';
    for (size_t i = 0; i < 2000; i++) {
        memcpy(doc + 1 + 3 * i, i + 1 < 2000 ? "{}," : "{}]", 3);
    }
    doc[n + 1] = '\0';
    CHECK_INT(pg_json_parse_strict(a, doc, n + 1, "doc", 8, 0, &root, &st), PG_ERR_LIMIT);
    CHECK(root == NULL && strstr(st.msg, "KiB left of the request's memory cap") != NULL);
    /* no cap (0): the same document is parsed */
    struct pg_arena *free_a = pg_arena_create(0);
    CHECK_INT(pg_json_parse_strict(free_a, doc, n + 1, "doc", 8, 0, &root, &st), PG_ERR_OK);
    CHECK(root != NULL && json_object_array_length(root) == 2000);
    json_object_put(root);
    pg_arena_destroy(free_a);
    pg_arena_destroy(a);
    free(doc);
}

PG_TEST_MAIN(PG_CASE(test_json_strict_table), PG_CASE(test_json_strict_nul_inside),
             PG_CASE(test_json_strict_memory_cap))
