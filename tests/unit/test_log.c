/* SPDX-License-Identifier: Apache-2.0
 * Log lines in both encodings: the exact shape, escaping of request bytes
 * (quotes, backslashes, newlines, control bytes, invalid UTF-8) so they
 * cannot forge lines or break JSON, integer fields, and truncation that
 * still closes the line. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "pg_test.h"

static const struct timespec k_at = {1700000000, 123456789}; /* 2023-11-14T22:13:20.123Z */

static const char *fmt(enum pg_log_encoding enc, const char *msg)
{
    static char buf[4400];

    pg_log_set_encoding(enc);
    pg_log_format(buf, sizeof(buf), PG_LOG_WARN, "receiver/pprof", &k_at, msg, NULL, NULL, 0);
    pg_log_set_encoding(PG_LOG_LOGFMT);
    return buf;
}

PG_TEST(test_escaping_table)
{
    static const struct {
        const char *msg, *logfmt, *json; /* the quoted message in each encoding */
    } cases[] = {
        {"plain", "plain", "plain"},
        {"say \"hi\" \\ bye", "say \\\"hi\\\" \\\\ bye", "say \\\"hi\\\" \\\\ bye"},
        {"two\nlines", "two\\nlines", "two\\nlines"},
        {"bell\x07 del\x7f", "bell\\x07 del\\x7f", "bell\\u0007 del\\u007f"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5",
         "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5"},                /* valid UTF-8 kept */
        {"bad\xff end", "bad\xff end", "bad\\ufffd end"},               /* stray byte */
        {"cut\xc3", "cut\xc3", "cut\\ufffd"},                          /* truncated sequence */
        {"over\xc0\xaf", "over\xc0\xaf", "over\\ufffd\\ufffd"},       /* overlong '/' */
        {"surr\xed\xa0\x80", "surr\xed\xa0\x80", "surr\\ufffd\\ufffd\\ufffd"}, /* U+D800 */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[512];

        snprintf(want, sizeof(want),
                 "ts=2023-11-14T22:13:20.123Z level=warn comp=receiver/pprof msg=\"%s\"\n",
                 cases[i].logfmt);
        CHECK_STR(fmt(PG_LOG_LOGFMT, cases[i].msg), want);
        snprintf(want, sizeof(want),
                 "{\"ts\":\"2023-11-14T22:13:20.123Z\",\"level\":\"warn\",\"comp\":\"receiver/"
                 "pprof\",\"msg\":\"%s\"}\n",
                 cases[i].json);
        CHECK_STR(fmt(PG_LOG_JSON, cases[i].msg), want);
    }
}

PG_TEST(test_fields)
{
    static const char *const keys[] = {"resource_profiles", "sample_records"};
    static const long long vals[] = {1, -348};
    char buf[256];
    size_t n;

    n = pg_log_format(buf, sizeof(buf), PG_LOG_INFO, "exporter/debug", &k_at, "Profiles", keys,
                      vals, 2);
    CHECK_STR(buf, "ts=2023-11-14T22:13:20.123Z level=info comp=exporter/debug msg=\"Profiles\" "
                   "resource_profiles=1 sample_records=-348\n");
    CHECK_INT(n, strlen(buf));
    pg_log_set_encoding(PG_LOG_JSON);
    n = pg_log_format(buf, sizeof(buf), PG_LOG_INFO, NULL, &k_at, "Profiles", keys, vals, 2);
    pg_log_set_encoding(PG_LOG_LOGFMT);
    CHECK_STR(buf, "{\"ts\":\"2023-11-14T22:13:20.123Z\",\"level\":\"info\",\"comp\":\"main\","
                   "\"msg\":\"Profiles\",\"resource_profiles\":1,\"sample_records\":-348}\n");
    CHECK_INT(n, strlen(buf));
}

PG_TEST(test_truncation_closes_the_line)
{
    char msg[2048], buf[600];

    memset(msg, 0x01, sizeof(msg) - 1); /* each byte escapes to 6 */
    msg[sizeof(msg) - 1] = '\0';
    for (int enc = PG_LOG_LOGFMT; enc <= PG_LOG_JSON; enc++) {
        size_t n;

        pg_log_set_encoding((enum pg_log_encoding)enc);
        n = pg_log_format(buf, sizeof(buf), PG_LOG_ERROR, "c", &k_at, msg, NULL, NULL, 0);
        pg_log_set_encoding(PG_LOG_LOGFMT);
        CHECK(n < sizeof(buf));
        CHECK_INT(n, strlen(buf));
        CHECK(n > 400); /* filled, not emptied */
        /* whole escapes only, then the closing quote (and brace) */
        {
            const char *end = enc == PG_LOG_JSON ? "\\u0001\"}\n" : "\\x01\"\n";

            CHECK(strcmp(buf + n - strlen(end), end) == 0);
        }
    }
}

PG_TEST(test_parse_encoding)
{
    enum pg_log_encoding e = PG_LOG_JSON;

    CHECK(pg_log_parse_encoding("console", &e) && e == PG_LOG_LOGFMT);
    CHECK(pg_log_parse_encoding("json", &e) && e == PG_LOG_JSON);
    CHECK(pg_log_parse_encoding("logfmt", &e) && e == PG_LOG_LOGFMT);
    CHECK(!pg_log_parse_encoding("xml", &e));
    CHECK(!pg_log_parse_encoding("JSON", &e));
}

static char *slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

    if (f != NULL) {
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

PG_TEST(test_outputs)
{
    char a[128], b[128], why[256] = "";
    const char *two[2] = {a, b};
    const char *bad[2] = {a, "/nonexistent-dir/x.log"};

    snprintf(a, sizeof(a), "/tmp/pg-log-%d-a.txt", (int)getpid());
    snprintf(b, sizeof(b), "/tmp/pg-log-%d-b.txt", (int)getpid());
    unlink(a);
    unlink(b);
    CHECK(pg_log_open_outputs(two, 2, why, sizeof(why)));
    pg_log_write(PG_LOG_ERROR, "test", "to both %d", 1);
    CHECK(strstr(slurp(a), "msg=\"to both 1\"\n") != NULL);
    CHECK(strstr(slurp(b), "msg=\"to both 1\"\n") != NULL);
    /* A failing set changes nothing and says which path failed. */
    CHECK(!pg_log_open_outputs(bad, 2, why, sizeof(why)));
    CHECK(strstr(why, "/nonexistent-dir/x.log") != NULL);
    pg_log_write(PG_LOG_ERROR, "test", "still both");
    CHECK(strstr(slurp(b), "still both") != NULL);
    CHECK(!pg_log_open_outputs(two, PG_LOG_MAX_OUTPUTS + 1, why, sizeof(why)));
    pg_log_close_outputs();
    pg_log_write(PG_LOG_ERROR, "test", "back on stderr");
    CHECK(strstr(slurp(a), "back on stderr") == NULL);
    unlink(a);
    unlink(b);
}

PG_TEST_MAIN(PG_CASE(test_escaping_table), PG_CASE(test_fields),
             PG_CASE(test_truncation_closes_the_line), PG_CASE(test_parse_encoding),
             PG_CASE(test_outputs))
