/* SPDX-License-Identifier: Apache-2.0
 * Receiver authentication: bearer tokens and basic auth (plain and
 * {SHA256} entries), header parsing edge cases, file errors with line
 * numbers, and re-reading a rotated credentials file. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "pg_test.h"
#include "http/auth.h"

static char dir[64];

static const char *tmpfile_with(const char *name, const char *content)
{
    static char path[8][128];
    static int k;
    FILE *f;
    char *p = path[k++ % 8];

    if (dir[0] == '\0') {
        snprintf(dir, sizeof(dir), "/tmp/pg_test_auth.XXXXXX");
        if (mkdtemp(dir) == NULL) {
            exit(2);
        }
    }
    snprintf(p, 128, "%s/%s", dir, name);
    f = fopen(p, "w");
    if (f != NULL) {
        fputs(content, f);
        fclose(f);
    }
    return p;
}

PG_TEST(test_bearer)
{
    static const struct {
        const char *header;
        bool ok;
        const char *why;
    } cases[] = {
        {"Bearer s3cret-token", true, NULL},
        {"bearer s3cret-token", true, NULL},
        {"BEARER   s3cret-token  ", true, NULL},
        {"Bearer s3cret-tokenX", false, "invalid bearer token"},
        {"Bearer s3cret-toke", false, "invalid bearer token"},
        {"Bearer ", false, "invalid bearer token"},
        {"Bearer", false, "expected an Authorization: Bearer"},
        {"Bearers3cret-token", false, "expected an Authorization: Bearer"},
        {"Basic czNjcmV0LXRva2Vu", false, "expected an Authorization: Bearer"},
        {"s3cret-token", false, "expected an Authorization: Bearer"},
        {"", false, "missing Authorization"},
        {NULL, false, "missing Authorization"},
    };
    struct pg_auth_options o = {0};
    struct pg_auth *a = NULL;
    struct pg_status st;

    /* A trailing newline (echo > file) is not part of the token. */
    o.bearer_token_file = tmpfile_with("token", "  s3cret-token\n");
    CHECK_INT(pg_auth_new(&o, &a, &st), PG_ERR_OK);
    if (a == NULL) {
        return;
    }
    CHECK_STR(pg_auth_challenge(a), "Bearer realm=\"pprofgate\"");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool ok;
        st.msg[0] = '\0';
        ok = pg_auth_check(a, cases[i].header, &st);
        if (ok != cases[i].ok || (cases[i].why && strstr(st.msg, cases[i].why) == NULL)) {
            fprintf(stderr, "  case %zu (%s): ok=%d msg=%s\n", i,
                    cases[i].header ? cases[i].header : "NULL", ok, st.msg);
            CHECK(false);
        }
    }
    pg_auth_free(a);
}

PG_TEST(test_basic)
{
    /* sha256("hunter2") */
    static const char file[] =
        "# users\n"
        "alice:wonderland\n"
        "\n"
        "bob:{SHA256}f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7\r\n";
    static const struct {
        const char *header;
        bool ok;
        const char *why;
    } cases[] = {
        {"Basic YWxpY2U6d29uZGVybGFuZA==", true, NULL},     /* alice:wonderland */
        {"basic YWxpY2U6d29uZGVybGFuZA==", true, NULL},
        {"Basic Ym9iOmh1bnRlcjI=", true, NULL},             /* bob:hunter2 */
        {"Basic Ym9iOmh1bnRlcjM=", false, "invalid user name or password"}, /* bob:hunter3 */
        {"Basic YWxpY2U6aHVudGVyMg==", false, "invalid user"}, /* alice:hunter2 */
        {"Basic bWFsbG9yeTp3b25kZXJsYW5k", false, "invalid user"}, /* mallory:wonderland */
        {"Basic YWxpY2U=", false, "expected user:password"}, /* alice */
        {"Basic YWxpY2U6d29uZGVybGFuZA", false, "not base64"},
        {"Basic !!!!", false, "not base64"},
        {"Basic YW=jZQ==", false, "not base64"},
        {"Bearer YWxpY2U6d29uZGVybGFuZA==", false, "expected an Authorization: Basic"},
        {NULL, false, "missing"},
    };
    struct pg_auth_options o = {0};
    struct pg_auth *a = NULL;
    struct pg_status st;

    o.basic_auth_file = tmpfile_with("htpasswd", file);
    o.realm = "profiles";
    CHECK_INT(pg_auth_new(&o, &a, &st), PG_ERR_OK);
    if (a == NULL) {
        fprintf(stderr, "  %s\n", st.msg);
        return;
    }
    CHECK_STR(pg_auth_challenge(a), "Basic realm=\"profiles\", charset=\"UTF-8\"");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool ok;
        st.msg[0] = '\0';
        ok = pg_auth_check(a, cases[i].header, &st);
        if (ok != cases[i].ok || (cases[i].why && strstr(st.msg, cases[i].why) == NULL)) {
            fprintf(stderr, "  case %zu (%s): ok=%d msg=%s\n", i,
                    cases[i].header ? cases[i].header : "NULL", ok, st.msg);
            CHECK(false);
        }
    }
    {
        /* A header longer than the cap is refused without decoding. */
        char *big = malloc(10000);
        memset(big, 'A', 9999);
        memcpy(big, "Basic ", 6);
        big[9999] = '\0';
        CHECK(!pg_auth_check(a, big, &st));
        CHECK(strstr(st.msg, "too long") != NULL);
        free(big);
    }
    pg_auth_free(a);
}

PG_TEST(test_bad_files)
{
    static const struct {
        bool basic;
        const char *content; /* NULL = missing file */
        const char *why;
    } cases[] = {
        {false, "\n  \n", "is empty"},
        {false, NULL, "cannot open"},
        {true, "alice\n", ":1: expected user:password"},
        {true, "# c\n:pw\n", ":2: expected user:password"},
        {true, "a:b\nbob:{SHA256}abc\n", ":2: {SHA256} needs 64 hex"},
        {true, "bob:{SHA256}zz2fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7\n",
         "not hex"},
        {true, "bob:$2y$05$abcdefghijklmnopqrstuv\n", "unsupported password hash"},
        {true, "bob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", "unsupported password hash"},
        {true, "bob:\n", "empty password"},
        {true, "# only comments\n\n", "no user:password lines"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_auth_options o = {0};
        struct pg_auth *a = NULL;
        struct pg_status st;
        const char *path = cases[i].content != NULL
                               ? tmpfile_with("bad", cases[i].content)
                               : "/nonexistent/pprofgate/token";
        if (cases[i].basic) {
            o.basic_auth_file = path;
        } else {
            o.bearer_token_file = path;
        }
        st.msg[0] = '\0';
        if (pg_auth_new(&o, &a, &st) != PG_ERR_CONFIG || a != NULL ||
            strstr(st.msg, cases[i].why) == NULL) {
            fprintf(stderr, "  case %zu: msg=%s\n", i, st.msg);
            CHECK(false);
        }
        pg_auth_free(a);
    }
    {
        struct pg_auth_options o = {0};
        struct pg_auth *a = NULL;
        struct pg_status st;
        CHECK_INT(pg_auth_new(&o, &a, &st), PG_ERR_CONFIG);
        CHECK(strstr(st.msg, "exactly one") != NULL);
        o.bearer_token_file = "x";
        o.basic_auth_file = "y";
        CHECK_INT(pg_auth_new(&o, &a, &st), PG_ERR_CONFIG);
    }
}

/* A rotated token takes effect without a restart; a broken rotation keeps
 * the old token working. */
PG_TEST(test_reload)
{
    struct pg_auth_options o = {0};
    struct pg_auth *a = NULL;
    struct pg_status st;
    const char *path = tmpfile_with("rot", "first\n");

    o.bearer_token_file = path;
    o.reload_check_ns = 1;
    CHECK_INT(pg_auth_new(&o, &a, &st), PG_ERR_OK);
    if (a == NULL) {
        return;
    }
    CHECK(pg_auth_check(a, "Bearer first", &st));
    tmpfile_with("rot", "second-token\n");
    CHECK(!pg_auth_check(a, "Bearer first", &st));
    CHECK(pg_auth_check(a, "Bearer second-token", &st));
    CHECK_INT(pg_auth_reloads(a), 2);
    tmpfile_with("rot", "\n"); /* emptied by mistake: keep the last good token */
    CHECK(pg_auth_check(a, "Bearer second-token", &st));
    CHECK_INT(pg_auth_reloads(a), 2);
    unlink(path); /* gone: still the last good token */
    CHECK(pg_auth_check(a, "Bearer second-token", &st));
    pg_auth_free(a);
}

/* The `auth:` field table binds collector-style YAML into the options. */
PG_TEST(test_field_table)
{
    char yaml[256];
    const char *tok = tmpfile_with("tok2", "abc\n");
    struct pg_config *cfg;
    struct pg_diag diag;
    struct pg_auth_options o;
    struct pg_auth *a = NULL;
    struct pg_status st;

    snprintf(yaml, sizeof(yaml), "bearer_token_file: %s\n", tok);
    cfg = pg_config_load_string("auth.yaml", yaml, strlen(yaml));
    pg_diag_init(&diag);
    memset(&o, 0, sizeof(o));
    CHECK(cfg != NULL && cfg->root != NULL);
    if (cfg != NULL && cfg->root != NULL) {
        CHECK_INT(pg_cfg_bind(cfg->arena, &diag, cfg->root, pg_auth_fields, &o, "auth"), 0);
        CHECK_STR(o.bearer_token_file, tok);
        CHECK_STR(o.realm, "pprofgate");
        CHECK_INT(pg_auth_new(&o, &a, &st), PG_ERR_OK);
        CHECK(a != NULL && pg_auth_check(a, "Bearer abc", &st));
        pg_auth_free(a);
    }
    pg_config_free(cfg);
    cfg = pg_config_load_string("auth.yaml", "bearer_token: x\n", 15);
    if (cfg != NULL && cfg->root != NULL) {
        CHECK_INT(pg_cfg_bind(cfg->arena, &diag, cfg->root, pg_auth_fields, &o, "auth"), 1);
        CHECK(diag.n == 1 && strstr(diag.msgs[0], "bearer_token_file") != NULL);
    }
    pg_config_free(cfg);
    pg_diag_free(&diag);
}

static void cleanup(void)
{
    char cmd[128];
    if (dir[0] != '\0') {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0) {
            fprintf(stderr, "cleanup of %s failed\n", dir);
        }
    }
}

PG_TEST(test_zz_cleanup)
{
    cleanup();
}

PG_TEST_MAIN(PG_CASE(test_bearer), PG_CASE(test_basic), PG_CASE(test_bad_files),
             PG_CASE(test_reload), PG_CASE(test_field_table), PG_CASE(test_zz_cleanup))
