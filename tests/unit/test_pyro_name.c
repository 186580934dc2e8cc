/* SPDX-License-Identifier: Apache-2.0
 * pyroscope/pyro_name.c and pyro_type.c: the `name` value of an /ingest push, table-driven
 * (good names with their app, suffix and labels; every bad one with its code and message). */
#include "pg_test.h"

#include "pyroscope/pyro_name.h"
#include "pyroscope/pyro_type.h"

PG_TEST(test_name_good)
{
    static const struct {
        const char *in;
        const char *app, *suffix;
        const char *labels; /* "k=v;k=v" as parsed, in order */
    } cases[] = {
        {"myapp", "myapp", NULL, ""},
        {"myapp{}", "myapp", NULL, ""},
        {"  myapp  {}  ", "myapp", NULL, ""},
        {"myapp.cpu", "myapp", "cpu", ""},
        {"my.app.alloc_objects{env=prod}", "my.app", "alloc_objects", "env=prod"},
        {"pyro.checkout{env=prod,region=eu-1}", "pyro.checkout", NULL, "env=prod;region=eu-1"},
        {"app.inuse_space{ a = b , c=d ,}", "app", "inuse_space", "a=b;c=d"},
        {"app.lock_duration", "app", "lock_duration", ""},
        {"app.unknownsuffix", "app.unknownsuffix", NULL, ""},
        {"cpu", "cpu", NULL, ""},                 /* no dot: the whole name is the app */
        {"ns/svc-1.wall{}", "ns/svc-1", "wall", ""},
        {"app{k=}", "app", NULL, "k="},            /* values may be empty */
        {"app{k=a=b}", "app", NULL, "k=a=b"},      /* '=' inside a value */
        {"app{k=1,j=2,k=3}", "app", NULL, "k=3;j=2"}, /* last wins, first place */
        {"app{__session_id__=0123456789abcdef,otel.scope.name=com.grafana.pyroscope/go}",
         "app", NULL, "__session_id__=0123456789abcdef;otel.scope.name=com.grafana.pyroscope/go"},
        {"app{9lives=x}", "app", NULL, "9lives=x"}, /* Pyroscope allows a leading digit */
        {"app{k=h\xc3\xa9}", "app", NULL, "k=h\xc3\xa9"},
        {"app{k=a b}", "app", NULL, "k=a b"},
        /* keys of 16 bytes and more (read 16 a step), and past the end of a short name */
        {"app{process.runtime.version=go1.26,Z_9.aZ_9.aZ_9.aZ=1}", "app", NULL,
         "process.runtime.version=go1.26;Z_9.aZ_9.aZ_9.aZ=1"},
        {"app{abcdefghijklmnopqrstuvwxyz0123456789=v}", "app", NULL,
         "abcdefghijklmnopqrstuvwxyz0123456789=v"},
        {"app{x=1}", "app", NULL, "x=1"},
        /* keys of one length and first byte: the repeat is still found */
        {"app{ab=1,ac=2,ab=3,ad=4}", "app", NULL, "ab=3;ac=2;ad=4"},
        {"app{ab=1 ,ac= 2,ab =3}", "app", NULL, "ab=3;ac=2"},
    };
    for (size_t i = 0; i < 2 * sizeof(cases) / sizeof(cases[0]); i++) {
        /* each name twice: copied (pg_pyro_name_parse), then cut in place (.._parse_in) */
        size_t c = i % (sizeof(cases) / sizeof(cases[0]));
        bool in_place = i >= sizeof(cases) / sizeof(cases[0]);
        struct pg_arena *a = pg_arena_create(1 << 20);
        char *copy = pg_arena_strdup(a, cases[c].in);
        struct pg_pyro_name n;
        struct pg_status st = {0};
        enum pg_err err = in_place ? pg_pyro_name_parse_in(a, copy, strlen(copy), &n, &st)
                                   : pg_pyro_name_parse(a, cases[c].in, strlen(cases[c].in), &n,
                                                        &st);

        if (err != PG_ERR_OK) {
            fprintf(stderr, "  \"%s\": %s\n", cases[c].in, st.msg);
        }
        CHECK_INT(err, PG_ERR_OK);
        if (err == PG_ERR_OK) {
            char got[512] = "";
            for (size_t j = 0; j < n.n_labels; j++) {
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s=%s", j ? ";" : "",
                         n.labels[j].name, n.labels[j].value);
            }
            CHECK_STR(n.app, cases[c].app);
            if (cases[c].suffix == NULL) {
                CHECK(n.type_suffix == NULL);
            } else {
                CHECK_STR(n.type_suffix, cases[c].suffix);
            }
            CHECK_STR(got, cases[c].labels);
        }
        pg_arena_destroy(a);
    }
}

PG_TEST(test_name_bad)
{
    static const struct {
        const char *in;
        enum pg_err code;
        const char *msg; /* a substring of the message */
    } cases[] = {
        {"", PG_ERR_MALFORMED, "missing"},
        {"app{k=v", PG_ERR_MALFORMED, "'{' at offset 3 is never closed"},
        {"app}", PG_ERR_MALFORMED, "'}' at offset 3 has no '{'"},
        {"app{k=v}}", PG_ERR_MALFORMED, "text after the closing '}' at offset 8"},
        {"app{k={v}}", PG_ERR_MALFORMED, "nested '{' at offset 6"},
        {"app{{k=v}}", PG_ERR_MALFORMED, "nested '{'"},
        {"app{k=v}x", PG_ERR_MALFORMED, "text after"},
        {"app{k=v}{j=w}", PG_ERR_MALFORMED, "text after"},
        {"{k=v}", PG_ERR_MALFORMED, "application name before '{' is empty"},
        {"  {}", PG_ERR_MALFORMED, "empty"},
        {".cpu", PG_ERR_MALFORMED, "nothing before the profile-type suffix"},
        {"my app", PG_ERR_MALFORMED, "byte 0x20 at offset 2"},
        {"app{=v}", PG_ERR_MALFORMED, "empty label name"},
        {"app{ =v}", PG_ERR_MALFORMED, "empty label name"},
        {"app{k}", PG_ERR_MALFORMED, "has no '='"},
        {"app{a=b,,c=d}", PG_ERR_MALFORMED, "empty label at offset 8"},
        {"app{,a=b}", PG_ERR_MALFORMED, "empty label"},
        {"app{k-1=v}", PG_ERR_MALFORMED, "byte 0x2d at offset 5 is not allowed in a label name"},
        {"app{k:1=v}", PG_ERR_MALFORMED, "label name"},
        {"app{k=\xff}", PG_ERR_MALFORMED, "not valid UTF-8"},
        {"app{abcdefghijklmnopq-s=v}", PG_ERR_MALFORMED, "byte 0x2d at offset 21"},
        {"app{abcdefghijklmnopqrs t=v}", PG_ERR_MALFORMED, "byte 0x20 at offset 23"},
    };
    for (size_t i = 0; i < 2 * sizeof(cases) / sizeof(cases[0]); i++) {
        size_t c = i % (sizeof(cases) / sizeof(cases[0]));
        struct pg_arena *a = pg_arena_create(1 << 20);
        char *copy = pg_arena_strdup(a, cases[c].in);
        struct pg_pyro_name n;
        struct pg_status st = {0};
        enum pg_err err = i >= sizeof(cases) / sizeof(cases[0])
                              ? pg_pyro_name_parse_in(a, copy, strlen(copy), &n, &st)
                              : pg_pyro_name_parse(a, cases[c].in, strlen(cases[c].in), &n, &st);

        if (err != cases[c].code || strstr(st.msg, cases[c].msg) == NULL) {
            fprintf(stderr, "  \"%s\": %d \"%s\"\n", cases[c].in, err, st.msg);
        }
        CHECK_INT(err, cases[c].code);
        CHECK(strstr(st.msg, cases[c].msg) != NULL);
        pg_arena_destroy(a);
    }
    /* A NUL inside the given length. */
    struct pg_arena *a = pg_arena_create(1 << 20);
    struct pg_pyro_name n;
    struct pg_status st = {0};
    CHECK_INT(pg_pyro_name_parse(a, "app\0{k=v}", 9, &n, &st), PG_ERR_MALFORMED);
    CHECK(strstr(st.msg, "NUL byte at offset 3") != NULL);
    pg_arena_destroy(a);
}

PG_TEST(test_name_caps)
{
    struct pg_arena *a = pg_arena_create(8 << 20);
    struct pg_pyro_name n;
    struct pg_status st = {0};
    size_t cap = 200000, len = 0;
    char *s = malloc(cap);

    /* PG_PYRO_MAX_LABELS distinct labels pass, one more is LIMIT. */
    len = (size_t)snprintf(s, cap, "app{");
    for (int i = 0; i < PG_PYRO_MAX_LABELS; i++) {
        len += (size_t)snprintf(s + len, cap - len, "%sk%d=v", i ? "," : "", i);
    }
    len += (size_t)snprintf(s + len, cap - len, "}");
    CHECK_INT(pg_pyro_name_parse(a, s, len, &n, &st), PG_ERR_OK);
    CHECK_INT(n.n_labels, PG_PYRO_MAX_LABELS);
    s[len - 1] = ',';
    len += (size_t)snprintf(s + len, cap - len, "one=more}");
    CHECK_INT(pg_pyro_name_parse(a, s, len, &n, &st), PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "more than 128 labels") != NULL);
    /* Many repeats of one key are one label, not a LIMIT. */
    len = (size_t)snprintf(s, cap, "app{");
    for (int i = 0; i < 1000; i++) {
        len += (size_t)snprintf(s + len, cap - len, "%sk=%d", i ? "," : "", i);
    }
    len += (size_t)snprintf(s + len, cap - len, "}");
    CHECK_INT(pg_pyro_name_parse(a, s, len, &n, &st), PG_ERR_OK);
    CHECK_INT(n.n_labels, 1);
    CHECK_STR(n.labels[0].value, "999");
    /* Over 64 KiB. */
    memset(s, 'a', PG_PYRO_MAX_NAME_LEN + 1);
    CHECK_INT(pg_pyro_name_parse(a, s, PG_PYRO_MAX_NAME_LEN + 1, &n, &st), PG_ERR_LIMIT);
    CHECK_INT(pg_pyro_name_parse(a, s, PG_PYRO_MAX_NAME_LEN, &n, &st), PG_ERR_OK);
    free(s);
    pg_arena_destroy(a);
}

PG_TEST(test_type_table)
{
    const struct pg_pyro_type *t = pg_pyro_type_lookup("cpu", 3);
    PG_REQUIRE(t != NULL);
    CHECK_STR(t->metric, "process_cpu");
    CHECK(t->sampled);
    t = pg_pyro_type_lookup("alloc_space", 11);
    PG_REQUIRE(t != NULL);
    CHECK_STR(t->metric, "memory");
    CHECK_STR(t->sample_unit, "bytes");
    CHECK(!t->sampled);
    CHECK(pg_pyro_type_lookup("cpux", 4) == NULL);
    CHECK(pg_pyro_type_lookup("", 0) == NULL);
    CHECK(pg_pyro_type_lookup("checkout", 8) == NULL); /* no type is 8 bytes long */
    char longer[80];
    memset(longer, 'a', sizeof(longer));
    CHECK(pg_pyro_type_lookup(longer, sizeof(longer)) == NULL);
    CHECK(pg_pyro_name_is_type_suffix("mutex_count"));
    CHECK(!pg_pyro_name_is_type_suffix("contentions"));
    CHECK(pg_pyro_label_name_valid("service_name", 12));
    CHECK(!pg_pyro_label_name_valid("a-b", 3));
    CHECK(!pg_pyro_label_name_valid("", 0));
    size_t n;
    const struct pg_pyro_type *all = pg_pyro_types(&n);
    CHECK(n >= 20);
    for (size_t i = 0; i < n; i++) {
        CHECK(pg_pyro_type_lookup(all[i].suffix, strlen(all[i].suffix)) == &all[i]);
    }
}

PG_TEST_MAIN(PG_CASE(test_name_good), PG_CASE(test_name_bad), PG_CASE(test_name_caps),
             PG_CASE(test_type_table))
