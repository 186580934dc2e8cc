/* SPDX-License-Identifier: Apache-2.0
 * Config loading, env expansion, value parsers and field binding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "pg_test.h"
#include "pg_test_diag.h"

PG_TEST(test_env_expansion)
{
    static const struct {
        const char *in;
        const char *want; /* NULL = error */
    } cases[] = {
        {"plain", "plain"},
        {"${env:PG_T_A}", "alpha"},
        {"${PG_T_A}", "alpha"},
        {"x-${env:PG_T_A}-y", "x-alpha-y"},
        {"${env:PG_T_UNSET:-fallback}", "fallback"},
        {"${env:PG_T_EMPTY:-fallback}", "fallback"},
        {"${env:PG_T_A:-fallback}", "alpha"},
        {"${env:PG_T_UNSET}", ""},
        {"cost $$5", "cost $5"},
        {"$$${PG_T_A}", "$alpha"},
        {"a $ b", "a $ b"},
        {"${env:PG_T_A", NULL},
        {"${1BAD}", NULL},
        {"${file:/etc/passwd}", NULL},
    };
    struct pg_arena *a = pg_arena_create(0);

    setenv("PG_T_A", "alpha", 1);
    setenv("PG_T_EMPTY", "", 1);
    unsetenv("PG_T_UNSET");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *err = NULL;
        char *got = pg_config_expand_env(a, cases[i].in, &err);
        if (cases[i].want == NULL) {
            CHECK(got == NULL && err != NULL);
        } else {
            CHECK_STR(got, cases[i].want);
        }
    }
    pg_arena_destroy(a);
}

PG_TEST(test_durations_and_bytes)
{
    static const struct {
        const char *in;
        bool ok;
        int64_t ns;
    } durs[] = {
        {"5s", true, 5000000000LL}, {"250ms", true, 250000000LL}, {"1m30s", true, 90000000000LL},
        {"2h", true, 7200000000000LL}, {"1.5s", true, 1500000000LL}, {"0", true, 0},
        {"10us", true, 10000}, {"7ns", true, 7}, {"5", false, 0}, {"s", false, 0}, {"5x", false, 0},
        {"", false, 0},
    };
    static const struct {
        const char *in;
        bool ok;
        uint64_t v;
    } sizes[] = {
        {"4MiB", true, 4194304}, {"20MB", true, 20000000}, {"512KiB", true, 524288},
        {"1024", true, 1024}, {"1GiB", true, 1073741824ULL}, {"3 MiB", true, 3145728},
        {"-1", false, 0}, {"MiB", false, 0}, {"4XB", false, 0},
    };

    for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
        int64_t ns = -1;
        bool ok = pg_parse_duration(durs[i].in, &ns);
        CHECK_INT(ok, durs[i].ok);
        if (ok && durs[i].ok) {
            CHECK_INT(ns, durs[i].ns);
        }
    }
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint64_t v = 0;
        bool ok = pg_parse_bytes(sizes[i].in, &v);
        CHECK_INT(ok, sizes[i].ok);
        if (ok && sizes[i].ok) {
            CHECK_INT(v, sizes[i].v);
        }
    }
}

struct sub_cfg {
    char *mode;
};

struct demo_cfg {
    char *endpoint;
    bool flag;
    int64_t count;
    int64_t timeout_ns;
    uint64_t max_bytes;
    int level;
    struct pg_strlist algos;
    struct pg_strmap headers;
    bool has_sub;
    struct sub_cfg sub;
};

static const char *const levels[] = {"basic", "normal", "detailed", NULL};

static const struct pg_field sub_fields[] = {
    {"mode", PG_FT_STR, offsetof(struct sub_cfg, mode), "fast", 0, 0, NULL, NULL, 0, NULL},
    PG_FIELD_END,
};

static const struct pg_field demo_fields[] = {
    {"endpoint", PG_FT_STR, offsetof(struct demo_cfg, endpoint), "localhost:4040", 0, 0, NULL, NULL, 0, NULL},
    {"flag", PG_FT_BOOL, offsetof(struct demo_cfg, flag), "true", 0, 0, NULL, NULL, 0, NULL},
    {"count", PG_FT_INT, offsetof(struct demo_cfg, count), "10", 1, 1000, NULL, NULL, 0, NULL},
    {"timeout", PG_FT_DURATION, offsetof(struct demo_cfg, timeout_ns), "5s", 0, 0, NULL, NULL, 0, NULL},
    {"max_bytes", PG_FT_BYTES, offsetof(struct demo_cfg, max_bytes), "20MiB", 0, 0, NULL, NULL, 0, NULL},
    {"verbosity", PG_FT_ENUM, offsetof(struct demo_cfg, level), "basic", 0, 0, NULL, levels, 0, NULL},
    {"algos", PG_FT_STRLIST, offsetof(struct demo_cfg, algos), ",gzip,deflate", 0, 0, NULL, NULL, 0, NULL},
    {"headers", PG_FT_STRMAP, offsetof(struct demo_cfg, headers), NULL, 0, 0, NULL, NULL, 0, NULL},
    {"sub", PG_FT_SECTION, offsetof(struct demo_cfg, sub), NULL, 0, 0, sub_fields, NULL,
     offsetof(struct demo_cfg, has_sub), NULL},
    PG_FIELD_END,
};

PG_TEST(test_bind_defaults)
{
    struct pg_config *cfg = pg_config_load_string("t.yaml", "x: {}\n", 6);
    struct demo_cfg out;

    CHECK(cfg != NULL && cfg->root != NULL);
    memset(&out, 0xff, sizeof(out));
    CHECK_INT(pg_cfg_bind(cfg->arena, &cfg->diag, pg_cfg_get(cfg->root, "x"), demo_fields, &out, "x"), 0);
    CHECK_STR(out.endpoint, "localhost:4040");
    CHECK_INT(out.flag, 1);
    CHECK_INT(out.count, 10);
    CHECK_INT(out.timeout_ns, 5000000000LL);
    CHECK_INT(out.max_bytes, 20971520);
    CHECK_INT(out.level, 0);
    CHECK_INT(out.algos.n, 3);
    CHECK_STR(out.algos.v[0], "");
    CHECK_STR(out.algos.v[2], "deflate");
    CHECK_INT(out.headers.n, 0);
    CHECK_INT(out.has_sub, 0);
    CHECK_STR(out.sub.mode, "fast");
    pg_config_free(cfg);
}

PG_TEST(test_bind_values)
{
    static const char yaml[] = "x:\n"
                               "  endpoint: 0.0.0.0:9999\n"
                               "  flag: false\n"
                               "  count: 42\n"
                               "  timeout: 250ms\n"
                               "  max_bytes: 1MiB\n"
                               "  verbosity: detailed\n"
                               "  algos: [gzip]\n"
                               "  headers: {x-token: \"${env:PG_T_TOKEN}\", a: b}\n"
                               "  sub: {mode: slow}\n";
    struct pg_config *cfg;
    struct demo_cfg out;

    setenv("PG_T_TOKEN", "s3cret", 1);
    cfg = pg_config_load_string("t.yaml", yaml, sizeof(yaml) - 1);
    CHECK(cfg->diag.n == 0);
    CHECK_INT(pg_cfg_bind(cfg->arena, &cfg->diag, pg_cfg_get(cfg->root, "x"), demo_fields, &out, "x"), 0);
    CHECK_STR(out.endpoint, "0.0.0.0:9999");
    CHECK_INT(out.flag, 0);
    CHECK_INT(out.count, 42);
    CHECK_INT(out.timeout_ns, 250000000LL);
    CHECK_INT(out.max_bytes, 1048576);
    CHECK_INT(out.level, 2);
    CHECK_INT(out.algos.n, 1);
    CHECK_STR(out.algos.v[0], "gzip");
    CHECK_INT(out.headers.n, 2);
    CHECK_STR(out.headers.keys[0], "x-token");
    CHECK_STR(out.headers.values[0], "s3cret");
    CHECK_INT(out.has_sub, 1);
    CHECK_STR(out.sub.mode, "slow");
    pg_config_free(cfg);
}

PG_TEST(test_bind_errors_have_positions)
{
    static const char yaml[] = "x:\n"
                               "  endpont: a\n"       /* line 2: unknown key */
                               "  count: 5000\n"      /* line 3: out of range */
                               "  flag: maybe\n"      /* line 4: not a bool */
                               "  timeout: 5\n"       /* line 5: no unit */
                               "  verbosity: loud\n"  /* line 6: bad enum */
                               "  algos: gzip\n"      /* line 7: not a list */
                               "  sub: {speed: 1}\n"; /* line 8: unknown nested key */
    struct pg_config *cfg = pg_config_load_string("t.yaml", yaml, sizeof(yaml) - 1);
    struct demo_cfg out;
    size_t n = pg_cfg_bind(cfg->arena, &cfg->diag, pg_cfg_get(cfg->root, "x"), demo_fields, &out, "x");

    CHECK_INT(n, 7);
    CHECK(pg_test_diag_has(&cfg->diag, "t.yaml:2:3: x: unknown key \"endpont\" (did you mean \"endpoint\"?); valid keys: endpoint, flag"));
    CHECK(pg_test_diag_has(&cfg->diag, "t.yaml:3:10: x::count: 5000 is outside [1, 1000]"));
    CHECK(pg_test_diag_has(&cfg->diag, "t.yaml:4:9: x::flag: expected true or false"));
    CHECK(pg_test_diag_has(&cfg->diag, "t.yaml:5:12: x::timeout: expected a duration"));
    CHECK(pg_test_diag_has(&cfg->diag, "t.yaml:6:14: x::verbosity: \"loud\" is not one of: basic, normal, detailed"));
    CHECK(!pg_test_diag_has(&cfg->diag, "did you mean \"basic\""));
    CHECK(pg_test_diag_has(&cfg->diag, "t.yaml:7:10: x::algos: expected a list"));
    CHECK(pg_test_diag_has(&cfg->diag, "t.yaml:8:9: x::sub: unknown key \"speed\"; valid keys: mode"));
    pg_config_free(cfg);
}

PG_TEST(test_yaml_problems)
{
    static const struct {
        const char *yaml;
        const char *want;
    } cases[] = {
        {"a: [1, 2\n", "YAML syntax error"},
        {"a: 1\na: 2\n", "t.yaml:2:1: a: duplicate key \"a\" (first at line 1)"},
        {"a:\n  b:\n    c: 1\n    c: 2\n", "t.yaml:4:5: a::b::c: duplicate key \"c\" (first at line 3)"},
        {"- 1\n- 2\n", "the config must be a mapping"},
        {"", "the config is empty"},
        {"a: &x 1\nb: *x\n", "YAML aliases"},
        {"a: \"${env:NOPE\"\n", "unterminated ${...}"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_config *cfg = pg_config_load_string("t.yaml", cases[i].yaml, strlen(cases[i].yaml));
        CHECK(cfg != NULL);
        CHECK(pg_test_diag_has(&cfg->diag, cases[i].want));
        pg_config_free(cfg);
    }
}

/* Errors and warnings print in file order, whatever order the checks ran
 * in; equal positions keep the order found; a warning is not an error. */
PG_TEST(test_diag_print_order)
{
    struct pg_diag d;
    struct pg_cfg_node l9 = {.file = "t.yaml", .line = 9, .col = 3};
    struct pg_cfg_node l2 = {.file = "t.yaml", .line = 2, .col = 5};
    struct pg_cfg_node l2b = {.file = "t.yaml", .line = 2, .col = 1};
    char buf[1024] = "";
    FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

    pg_diag_init(&d);
    pg_diag_add(&d, &l9, "a::b", "late");
    pg_diag_warn(&d, &l2, "c", "careful");
    pg_diag_add(&d, &l2, "c", "second at 2:5");
    pg_diag_add(&d, &l2b, NULL, "early");
    pg_diag_add(&d, NULL, "file", "no position");
    CHECK_INT(d.n, 4);
    CHECK_INT(d.n_warn, 1);
    CHECK(f != NULL);
    pg_diag_print(&d, f);
    fclose(f);
    CHECK_STR(buf, "file: no position\n"
                   "t.yaml:2:1: early\n"
                   "t.yaml:2:5: c: warning: careful\n"
                   "t.yaml:2:5: c: second at 2:5\n"
                   "t.yaml:9:3: a::b: late\n");
    pg_diag_free(&d);
}

PG_TEST(test_missing_file)
{
    struct pg_config *cfg = pg_config_load("/nonexistent/pprofgate.yaml");

    CHECK(cfg != NULL && cfg->root == NULL);
    CHECK(pg_test_diag_has(&cfg->diag, "cannot open config"));
    pg_config_free(cfg);
}

PG_TEST_MAIN(PG_CASE(test_env_expansion), PG_CASE(test_durations_and_bytes), PG_CASE(test_bind_defaults),
             PG_CASE(test_bind_values), PG_CASE(test_bind_errors_have_positions),
             PG_CASE(test_yaml_problems), PG_CASE(test_diag_print_order), PG_CASE(test_missing_file))
