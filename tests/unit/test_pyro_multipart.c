/* SPDX-License-Identifier: Apache-2.0
 * pyroscope/pyro_multipart.c: the boundary from a Content-Type, and whole bodies split into
 * parts (the pyroscope-go SDK's shape, LF-only lines, preamble and epilogue, empty parts)
 * and every bad body (10 000 parts, a boundary never closed, huge header blocks), table-driven. */
#include "pg_test.h"

#include "pyroscope/pyro_multipart.h"

PG_TEST(test_boundary_table)
{
    static const struct {
        const char *ct;
        enum pg_err code;
        const char *want; /* boundary, or a substring of the message */
    } cases[] = {
        {"multipart/form-data; boundary=abc123", PG_ERR_OK, "abc123"},
        {"Multipart/Form-Data;boundary=\"a b:c\"", PG_ERR_OK, "a b:c"},
        {"multipart/form-data; charset=utf-8; BOUNDARY=x", PG_ERR_OK, "x"},
        {"multipart/form-data; boundary=\"q\\\"x\"", PG_ERR_OK, "q\"x"},
        {"multipart/form-data; boundary=e0b2e8c1b1b5f6f2f9a2d7e1c5d3a4b6f8e9d0c1a2b3c4d5e6f7a8b9c0d1",
         PG_ERR_OK, "e0b2e8c1b1b5f6f2f9a2d7e1c5d3a4b6f8e9d0c1a2b3c4d5e6f7a8b9c0d1"},
        {"application/octet-stream", PG_ERR_UNSUPPORTED, "not multipart/form-data"},
        {"multipart/mixed; boundary=x", PG_ERR_UNSUPPORTED, "not multipart/form-data"},
        {"multipart/form-data", PG_ERR_MALFORMED, "no boundary"},
        {"multipart/form-data; boundary=", PG_ERR_MALFORMED, "no boundary"},
        {"multipart/form-data; boundary=\"\"", PG_ERR_MALFORMED, "no boundary"},
        {"multipart/form-data; boundary=\"abc", PG_ERR_MALFORMED, "malformed"},
        {"multipart/form-data; boundary",  PG_ERR_MALFORMED, "malformed"},
        {"multipart/form-data; boundary=12345678901234567890123456789012345678901234567890"
         "123456789012345678901", PG_ERR_MALFORMED, "70"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char b[PG_PYRO_MAX_BOUNDARY + 1];
        struct pg_status st = {0};
        enum pg_err err = pg_pyro_multipart_boundary(cases[i].ct, b, sizeof(b), &st);

        if (err != cases[i].code) {
            fprintf(stderr, "  \"%s\": %d %s\n", cases[i].ct, err, st.msg);
        }
        CHECK_INT(err, cases[i].code);
        if (err == PG_ERR_OK && cases[i].code == PG_ERR_OK) {
            CHECK_STR(b, cases[i].want);
        } else if (err != PG_ERR_OK) {
            CHECK(strstr(st.msg, cases[i].want) != NULL);
        }
    }
    struct pg_status st = {0};
    char b[PG_PYRO_MAX_BOUNDARY + 1];
    CHECK_INT(pg_pyro_multipart_boundary(NULL, b, sizeof(b), &st), PG_ERR_UNSUPPORTED);
}

struct want_part {
    const char *name, *filename, *content_type, *data;
};

PG_TEST(test_parse_good)
{
    static const struct {
        const char *what, *body;
        size_t n;
        struct want_part parts[3];
    } cases[] = {
        {"the Go SDK's shape",
         "--XyZ\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
         "Content-Type: application/octet-stream\r\n\r\n\x1f\x8b\x08\x01pprof\r\n"
         "--XyZ\r\nContent-Disposition: form-data; name=\"sample_type_config\"; "
         "filename=\"sample_type_config.json\"\r\nContent-Type: application/octet-stream\r\n\r\n"
         "{\"alloc_objects\":{\"units\":\"objects\"}}\r\n--XyZ--\r\n",
         2,
         {{"profile", "profile.pprof", "application/octet-stream", "\x1f\x8b\x08\x01pprof"},
          {"sample_type_config", "sample_type_config.json", "application/octet-stream",
           "{\"alloc_objects\":{\"units\":\"objects\"}}"}}},
        {"bare LF lines, preamble, epilogue, an unquoted name",
         "preamble\n--XyZ\ncontent-disposition: form-data; name=profile\n\nab\ncd\n--XyZ--\nepilogue",
         1, {{"profile", NULL, NULL, "ab\ncd"}}},
        {"an empty part and one holding a near-boundary",
         "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n\r\n--XyZ\r\n"
         "Content-Disposition: form-data; name=\"b\"\r\n\r\nx\r\n--XyZW\r\n--XyZ--",
         2, {{"a", NULL, NULL, ""}, {"b", NULL, NULL, "x\r\n--XyZW"}}},
        {"an empty part without the extra line break, padding after the boundary",
         "--XyZ  \r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n--XyZ--", 1,
         {{"a", NULL, NULL, ""}}},
        {"a folded Content-Disposition, other headers",
         "--XyZ\r\nX-Other: 1\r\nContent-Disposition: form-data;\r\n  name=\"p\"\r\n\r\nv\r\n--XyZ--",
         1, {{"p", NULL, NULL, "v"}}},
        {"no parts at all", "--XyZ--\r\n", 0, {{0}}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_pyro_part *parts;
        size_t n;
        struct pg_status st = {0};
        enum pg_err err = pg_pyro_multipart_parse(a, (const uint8_t *)cases[i].body,
                                                  strlen(cases[i].body), "XyZ", &parts, &n, &st);
        if (err != PG_ERR_OK || n != cases[i].n) {
            fprintf(stderr, "  %s: %d %s, %zu parts\n", cases[i].what, err, st.msg, n);
        }
        CHECK_INT(err, PG_ERR_OK);
        CHECK_INT(n, cases[i].n);
        for (size_t j = 0; err == PG_ERR_OK && j < n && j < cases[i].n; j++) {
            const struct want_part *w = &cases[i].parts[j];
            CHECK_STR(parts[j].name, w->name);
            if (w->filename == NULL) {
                CHECK(parts[j].filename == NULL);
            } else {
                CHECK_STR(parts[j].filename, w->filename);
            }
            if (w->content_type == NULL) {
                CHECK(parts[j].content_type == NULL);
            } else {
                CHECK_STR(parts[j].content_type, w->content_type);
            }
            CHECK_INT(parts[j].len, strlen(w->data));
            CHECK(memcmp(parts[j].data, w->data, parts[j].len) == 0);
            /* zero copy: the data lies inside the body */
            CHECK(parts[j].data >= (const uint8_t *)cases[i].body &&
                  parts[j].data <= (const uint8_t *)cases[i].body + strlen(cases[i].body));
            CHECK(pg_pyro_multipart_find(parts, n, w->name) == &parts[j]);
        }
        CHECK(pg_pyro_multipart_find(parts, n, "missing") == NULL);
        pg_arena_destroy(a);
    }
}

PG_TEST(test_parse_bad)
{
    static const struct {
        const char *what, *body;
        enum pg_err code;
        const char *msg;
    } cases[] = {
        {"empty body", "", PG_ERR_MALFORMED, "no opening boundary"},
        {"no delimiter", "just text\r\n", PG_ERR_MALFORMED, "no opening boundary"},
        {"boundary not at a line start", "x--XyZ\r\n", PG_ERR_MALFORMED, "no opening boundary"},
        {"never closed",
         "--XyZ\r\nContent-Disposition: form-data; name=\"profile\"\r\n\r\ndata data",
         PG_ERR_MALFORMED, "boundary never closed (part 1 \"profile\""},
        {"never closed after a part",
         "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--XyZ\r\n",
         PG_ERR_MALFORMED, "boundary never closed (the body ends in the headers of part 2"},
        {"headers never end", "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n",
         PG_ERR_MALFORMED, "boundary never closed"},
        {"no Content-Disposition", "--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--",
         PG_ERR_MALFORMED, "no Content-Disposition"},
        {"no headers", "--XyZ\r\n\r\nv\r\n--XyZ--", PG_ERR_MALFORMED, "no Content-Disposition"},
        {"no name", "--XyZ\r\nContent-Disposition: form-data; filename=\"f\"\r\n\r\nv\r\n--XyZ--",
         PG_ERR_MALFORMED, "form-data with a name"},
        {"empty name", "--XyZ\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nv\r\n--XyZ--",
         PG_ERR_MALFORMED, "form-data with a name"},
        {"not form-data", "--XyZ\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nv\r\n--XyZ--",
         PG_ERR_MALFORMED, "form-data with a name"},
        {"unclosed quote", "--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nv\r\n--XyZ--",
         PG_ERR_MALFORMED, "form-data with a name"},
        {"header without colon", "--XyZ\r\nContent-Disposition form-data\r\n\r\nv\r\n--XyZ--",
         PG_ERR_MALFORMED, "without a name and ':'"},
        {"folded first line", "--XyZ\r\n  x\r\n\r\nv\r\n--XyZ--", PG_ERR_MALFORMED, "folded"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_pyro_part *parts;
        size_t n;
        struct pg_status st = {0};
        enum pg_err err = pg_pyro_multipart_parse(a, (const uint8_t *)cases[i].body,
                                                  strlen(cases[i].body), "XyZ", &parts, &n, &st);
        if (err != cases[i].code || strstr(st.msg, cases[i].msg) == NULL) {
            fprintf(stderr, "  %s: %d \"%s\"\n", cases[i].what, err, st.msg);
        }
        CHECK_INT(err, cases[i].code);
        CHECK(strstr(st.msg, cases[i].msg) != NULL);
        pg_arena_destroy(a);
    }
}

/* Appends @count small parts to @buf at @len (room checked by the caller). */
static size_t add_parts(char *buf, size_t len, size_t cap, int count)
{
    for (int i = 0; i < count; i++) {
        len += (size_t)snprintf(buf + len, cap - len,
                                "--XyZ\r\nContent-Disposition: form-data; name=\"p%d\"\r\n\r\nv\r\n",
                                i);
    }
    return len;
}

PG_TEST(test_parse_caps)
{
    struct pg_arena *a = pg_arena_create(1 << 20);
    size_t cap = 1 << 20, len;
    char *buf = malloc(cap);
    struct pg_pyro_part *parts;
    size_t n;
    struct pg_status st = {0};

    /* Exactly the cap of parts passes. */
    len = add_parts(buf, 0, cap, PG_PYRO_MAX_PARTS);
    len += (size_t)snprintf(buf + len, cap - len, "--XyZ--\r\n");
    CHECK_INT(pg_pyro_multipart_parse(a, (uint8_t *)buf, len, "XyZ", &parts, &n, &st), PG_ERR_OK);
    CHECK_INT(n, PG_PYRO_MAX_PARTS);
    /* 10 000 parts: LIMIT, without reading them all. */
    len = add_parts(buf, 0, cap, 10000);
    len += (size_t)snprintf(buf + len, cap - len, "--XyZ--\r\n");
    CHECK_INT(pg_pyro_multipart_parse(a, (uint8_t *)buf, len, "XyZ", &parts, &n, &st),
              PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "more than 32 parts") != NULL);
    CHECK_INT(n, 0);
    /* A header block over 8 KiB: LIMIT. */
    len = (size_t)snprintf(buf, cap, "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nX: ");
    memset(buf + len, 'x', 9000);
    len += 9000;
    len += (size_t)snprintf(buf + len, cap - len, "\r\n\r\nv\r\n--XyZ--");
    CHECK_INT(pg_pyro_multipart_parse(a, (uint8_t *)buf, len, "XyZ", &parts, &n, &st),
              PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "header block of part 1") != NULL);
    /* A big part body is fine (the caller caps the body). */
    len = (size_t)snprintf(buf, cap, "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n");
    memset(buf + len, '\n', 500000);
    len += 500000;
    len += (size_t)snprintf(buf + len, cap - len, "\r\n--XyZ--");
    CHECK_INT(pg_pyro_multipart_parse(a, (uint8_t *)buf, len, "XyZ", &parts, &n, &st), PG_ERR_OK);
    CHECK_INT(parts[0].len, 500000);
    /* A bad boundary argument. */
    CHECK_INT(pg_pyro_multipart_parse(a, (uint8_t *)buf, len, "", &parts, &n, &st),
              PG_ERR_MALFORMED);
    free(buf);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_boundary_table), PG_CASE(test_parse_good), PG_CASE(test_parse_bad),
             PG_CASE(test_parse_caps))
