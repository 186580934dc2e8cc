/* SPDX-License-Identifier: Apache-2.0
 * pyroscope/pyro_folded.c: folded and lines text to pprof, table-driven; every output is read
 * back with the project's own pprof decoder (stacks leaf first, names, values, merged
 * stacks) and one goes all the way through pprof -> OTLP translation. Bad input: no count,
 * 10^30, negative counts, empty frames, each cap. */
#include "pg_test.h"

#include "otlp/otlp.h"
#include "pprof/pprof_decode.h"
#include "pprof/translate.h"
#include "pyroscope/pyro_folded.h"

/* The samples of pprof @buf as "leaf;...;root=v|..." in @out, plus the sample type and
 * period; returns the decode result. */
static enum pg_err render(const uint8_t *buf, size_t len, char *out, size_t cap, char *types,
                          size_t tcap)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_translate_opts o;
    struct pg_pprof p;
    struct pg_pprof_sample_iter it;
    struct pg_status st = {0};
    enum pg_err err;

    pg_translate_opts_default(&o);
    out[0] = '\0';
    err = pg_pprof_decode(a, buf, len, &o.limits, &p, &st);
    if (err == PG_ERR_OK) {
        err = pg_pprof_sample_iter_init(a, &p, &it, &st);
    }
#define S(i) (int)p.strings[i].len, pg_pprof_str_p(&p, &p.strings[i])
    if (err == PG_ERR_OK) {
        snprintf(types, tcap, "%.*s/%.*s period %.*s/%.*s=%lld t=%lld d=%lld",
                 S(p.sample_types[0].type), S(p.sample_types[0].unit), S(p.period_type.type),
                 S(p.period_type.unit), (long long)p.period, (long long)p.time_nanos,
                 (long long)p.duration_nanos);
    }
    for (size_t k = 0; err == PG_ERR_OK; k++) {
        int64_t values[4];
        bool done = false;
        err = pg_pprof_next_sample(&p, &it, values, &done, &st);
        if (err != PG_ERR_OK || done) {
            break;
        }
        size_t o2 = strlen(out);
        snprintf(out + o2, cap - o2, "%s", k ? "|" : "");
        for (size_t j = 0; j < it.s.n_locations; j++) {
            uint32_t pos = pg_pprof_location_pos(&p, it.s.location_ids[j]);
            const struct pg_pprof_location *l = &p.locations[pos];
            const struct pg_pprof_function *f = &p.functions[l->lines[0].function_pos];
            o2 = strlen(out);
            snprintf(out + o2, cap - o2, "%s%.*s", j ? ";" : "", S(f->name));
        }
        o2 = strlen(out);
        snprintf(out + o2, cap - o2, "=%lld", (long long)values[0]);
    }
#undef S
    if (err != PG_ERR_OK) {
        fprintf(stderr, "  decode: %s\n", st.msg);
    }
    pg_arena_destroy(a);
    return err;
}

PG_TEST(test_folded_good)
{
    static const struct pg_pyro_folded_opts cpu = {"samples", "count", NULL, NULL, 0, 0, 0,
                                                   0, 0, 0, 0};
    static const struct {
        const char *what, *text;
        enum pg_pyro_text_format fmt;
        const char *want; /* samples, leaf first */
    } cases[] = {
        {"one stack", "a;b;c 42\n", PG_PYRO_FOLDED, "c;b;a=42"},
        {"no final newline, CRLF, blanks", "a;b 1\r\n\r\n   \nb 2", PG_PYRO_FOLDED, "b;a=1|b=2"},
        {"equal stacks merge", "a;b 1\nx 5\na;b 2\n", PG_PYRO_FOLDED, "b;a=3|x=5"},
        {"spaces inside frames: the count is after the last",
         "main;net/http.(*conn).serve func1 7\n", PG_PYRO_FOLDED, "net/http.(*conn).serve func1;main=7"},
        {"trailing blanks trimmed", "a;b 9 \t\n", PG_PYRO_FOLDED, "b;a=9"},
        {"zero counts write no sample", "a 0\nb 1\n", PG_PYRO_FOLDED, "b=1"},
        {"a frame shared by two stacks", "main;f 1\nmain;g 2\n", PG_PYRO_FOLDED, "f;main=1|g;main=2"},
        {"max int64", "a 9223372036854775807\n", PG_PYRO_FOLDED, "a=9223372036854775807"},
        {"lines: each occurrence counts 1", "a;b\nc\na;b\na;b\n", PG_PYRO_LINES, "b;a=3|c=1"},
        {"lines: spaces are part of the frame", "a b;c d\n", PG_PYRO_LINES, "c d;a b=1"},
        {"empty text", "", PG_PYRO_FOLDED, ""},
        {"only blank lines", "\n\r\n \n", PG_PYRO_LINES, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_status st = {0};
        uint8_t *out;
        size_t len;
        char got[1024], types[256];
        enum pg_err err = pg_pyro_folded_to_pprof(a, (const uint8_t *)cases[i].text,
                                                  strlen(cases[i].text), cases[i].fmt, &cpu, &out,
                                                  &len, &st);
        if (err != PG_ERR_OK) {
            fprintf(stderr, "  %s: %s\n", cases[i].what, st.msg);
        }
        CHECK_INT(err, PG_ERR_OK);
        if (err == PG_ERR_OK) {
            CHECK_INT(render(out, len, got, sizeof(got), types, sizeof(types)), PG_ERR_OK);
            if (strcmp(got, cases[i].want) != 0) {
                fprintf(stderr, "  %s:\n", cases[i].what);
            }
            CHECK_STR(got, cases[i].want);
            CHECK_STR(types, "samples/count period /=0 t=0 d=0");
        }
        pg_arena_destroy(a);
    }
}

PG_TEST(test_folded_opts)
{
    /* Pyroscope's cpu upload at sampleRate=100: type cpu/nanoseconds, period 10 ms, each
     * count times the period; time and duration from `from`/`until`. */
    struct pg_pyro_folded_opts o = {
        .sample_type = "cpu", .sample_unit = "nanoseconds", .period_type = "cpu",
        .period_unit = "nanoseconds", .period = 10000000, .time_nanos = 1700000000000000000,
        .duration_nanos = 10000000000, .scale = 10000000,
    };
    struct pg_arena *a = pg_arena_create(1 << 20);
    struct pg_status st = {0};
    uint8_t *out;
    size_t len;
    char got[256], types[256];
    const char *text = "main;work 3\nmain;idle 1\n";

    PG_REQUIRE(pg_pyro_folded_to_pprof(a, (const uint8_t *)text, strlen(text), PG_PYRO_FOLDED, &o,
                                       &out, &len, &st) == PG_ERR_OK);
    CHECK_INT(render(out, len, got, sizeof(got), types, sizeof(types)), PG_ERR_OK);
    CHECK_STR(got, "work;main=30000000|idle;main=10000000");
    CHECK_STR(types, "cpu/nanoseconds period cpu/nanoseconds=10000000 t=1700000000000000000 "
                     "d=10000000000");
    /* The scale overflowing int64 is the sender's count's fault. */
    o.scale = INT64_MAX / 2;
    text = "a 3\n";
    CHECK_INT(pg_pyro_folded_to_pprof(a, (const uint8_t *)text, 4, PG_PYRO_FOLDED, &o, &out, &len,
                                      &st), PG_ERR_MALFORMED);
    CHECK(strstr(st.msg, "line 1: the count times") != NULL);
    pg_arena_destroy(a);
}

/* Through the whole translator: one OTLP profile, the names by stack, the values. */
PG_TEST(test_folded_translates)
{
    static const struct pg_pyro_folded_opts o = {.sample_type = "samples",
                                                 .sample_unit = "count",
                                                 .time_nanos = 1700000000000000000,
                                                 .duration_nanos = 15000000000};
    struct pg_arena *a = pg_arena_create(0);
    struct pg_status st = {0};
    uint8_t *out;
    size_t len;
    const char *text = "main;runtime.main;app.handle;app.parse 5\nmain;runtime.main;app.handle 2\n";
    struct pg_translate_opts to;
    struct pg_otlp_request *req;

    PG_REQUIRE(pg_pyro_folded_to_pprof(a, (const uint8_t *)text, strlen(text), PG_PYRO_FOLDED, &o,
                                       &out, &len, &st) == PG_ERR_OK);
    pg_translate_opts_default(&to);
    enum pg_err err = pg_pprof_translate(a, out, len, &to, &req, NULL, &st);
    if (err != PG_ERR_OK) {
        fprintf(stderr, "  translate: %s\n", st.msg);
    }
    PG_REQUIRE(err == PG_ERR_OK);
    const struct pg_otlp_dict *d = req->dictionary;
    const struct pg_otlp_profile *pr = req->resource_profiles[0]->scope_profiles[0]->profiles[0];
    CHECK_INT(req->resource_profiles[0]->scope_profiles[0]->n_profiles, 1);
    CHECK_STR(d->string_table[pr->sample_type->type_strindex], "samples");
    CHECK_STR(d->string_table[pr->sample_type->unit_strindex], "count");
    CHECK_INT(pr->time_unix_nano, 1700000000000000000);
    CHECK_INT(pr->duration_nano, 15000000000);
    PG_REQUIRE(pr->n_samples == 2);
    static const char *const want[2][4] = {{"app.parse", "app.handle", "runtime.main", "main"},
                                           {"app.handle", "runtime.main", "main", NULL}};
    static const int64_t want_v[2] = {5, 2};
    for (size_t i = 0; i < 2; i++) {
        const struct pg_otlp_sample *s = pr->samples[i];
        const struct pg_otlp_stack *k = d->stack_table[s->stack_index];
        CHECK_INT(s->values[0], want_v[i]);
        CHECK_INT(k->n_location_indices, i == 0 ? 4 : 3);
        for (size_t j = 0; j < k->n_location_indices && j < 4; j++) {
            const struct pg_otlp_location *l = d->location_table[k->location_indices[j]];
            PG_REQUIRE(l->n_lines == 1);
            const struct pg_otlp_function *f = d->function_table[l->lines[0]->function_index];
            CHECK_STR(d->string_table[f->name_strindex], want[i][j]);
        }
    }
    pg_arena_destroy(a);
}

PG_TEST(test_folded_bad)
{
    static const struct {
        const char *what, *text;
        enum pg_pyro_text_format fmt;
        enum pg_err code;
        const char *msg;
    } cases[] = {
        {"no count", "a;b;c\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED, "line 1 has no count"},
        {"no count on line 3", "a 1\n\nb;c\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED,
         "line 3 has no count"},
        {"10^30", "a;b 1000000000000000000000000000000\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED,
         "line 1: the count does not fit int64"},
        {"2^63", "a 9223372036854775808\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED, "does not fit"},
        {"negative", "a -5\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED, "not a non-negative integer"},
        {"plus sign", "a +5\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED, "not a non-negative integer"},
        {"fraction", "a 1.5\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED, "not a non-negative integer"},
        {"empty count", "a; \n", PG_PYRO_FOLDED, PG_ERR_MALFORMED, "has no count"},
        {"empty stack", " 5\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED, "empty frame name at byte 1"},
        {"empty frame", "a;;b 5\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED, "empty frame name at byte 3"},
        {"trailing ;", "a;b; 5\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED, "empty frame name at byte 5"},
        {"lines: empty frame", "a;;b\n", PG_PYRO_LINES, PG_ERR_MALFORMED, "empty frame name"},
        {"sum past int64", "a 9223372036854775807\na 1\n", PG_PYRO_FOLDED, PG_ERR_MALFORMED,
         "line 2: the counts of one stack add up past"},
    };
    static const struct pg_pyro_folded_opts o = {.sample_type = "samples", .sample_unit = "count"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_status st = {0};
        uint8_t *out;
        size_t len;
        enum pg_err err = pg_pyro_folded_to_pprof(a, (const uint8_t *)cases[i].text,
                                                  strlen(cases[i].text), cases[i].fmt, &o, &out,
                                                  &len, &st);
        if (err != cases[i].code || strstr(st.msg, cases[i].msg) == NULL) {
            fprintf(stderr, "  %s: %d \"%s\"\n", cases[i].what, err, st.msg);
        }
        CHECK_INT(err, cases[i].code);
        CHECK(strstr(st.msg, cases[i].msg) != NULL);
        pg_arena_destroy(a);
    }
}

PG_TEST(test_folded_caps)
{
    struct pg_pyro_folded_opts o = {.sample_type = "samples", .sample_unit = "count",
                                    .max_lines = 3, .max_depth = 4, .max_frame_bytes = 8};
    static const struct {
        const char *text;
        enum pg_err code;
        const char *msg;
    } cases[] = {
        {"a 1\nb 1\n\n\nc 1\n", PG_ERR_OK, ""},
        {"a 1\nb 1\nc 1\nd 1\n", PG_ERR_LIMIT, "more than 3 stacks (line 4)"},
        {"a;b;c;d 1\n", PG_ERR_OK, ""},
        {"a;b;c;d;e 1\n", PG_ERR_LIMIT, "line 1: more than 4 frames in one stack"},
        {"12345678 1\n", PG_ERR_OK, ""},
        {"a;123456789 1\n", PG_ERR_LIMIT, "a frame name of 9 bytes, over the cap of 8"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_status st = {0};
        uint8_t *out;
        size_t len;
        enum pg_err err = pg_pyro_folded_to_pprof(a, (const uint8_t *)cases[i].text,
                                                  strlen(cases[i].text), PG_PYRO_FOLDED, &o, &out,
                                                  &len, &st);
        if (err != cases[i].code) {
            fprintf(stderr, "  \"%s\": %s\n", cases[i].text, st.msg);
        }
        CHECK_INT(err, cases[i].code);
        CHECK(strstr(st.msg, cases[i].msg) != NULL);
        pg_arena_destroy(a);
    }
    /* The arena's cap is a LIMIT too, not a crash: 50 000 distinct frames in 64 KiB. */
    struct pg_arena *a = pg_arena_create(64 << 10);
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    for (int i = 0; i < 50000; i++) {
        len += (size_t)snprintf(text + len, cap - len, "f%d 1\n", i);
    }
    struct pg_pyro_folded_opts big = {.sample_type = "samples", .sample_unit = "count"};
    struct pg_status st = {0};
    uint8_t *out;
    size_t olen;
    CHECK_INT(pg_pyro_folded_to_pprof(a, (uint8_t *)text, len, PG_PYRO_FOLDED, &big, &out, &olen,
                                      &st), PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "memory cap") != NULL);
    pg_arena_destroy(a);
    /* Many distinct frames and stacks (the hash tables grow) decode back exactly. */
    a = pg_arena_create(0);
    PG_REQUIRE(pg_pyro_folded_to_pprof(a, (uint8_t *)text, len, PG_PYRO_FOLDED, &big, &out, &olen,
                                       &st) == PG_ERR_OK);
    struct pg_translate_opts to;
    struct pg_pprof p;
    pg_translate_opts_default(&to);
    CHECK_INT(pg_pprof_decode(a, out, olen, &to.limits, &p, &st), PG_ERR_OK);
    CHECK_INT(p.n_samples, 50000);
    CHECK_INT(p.n_functions, 50000);
    CHECK_INT(p.n_locations, 50000);
    free(text);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_folded_good), PG_CASE(test_folded_opts), PG_CASE(test_folded_translates),
             PG_CASE(test_folded_bad), PG_CASE(test_folded_caps))
