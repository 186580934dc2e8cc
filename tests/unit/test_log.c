/* SPDX-License-Identifier: Apache-2.0
 * Log lines in both encodings: the exact shape, escaping of request bytes
 * (quotes, backslashes, newlines, control bytes, invalid UTF-8) so they
 * cannot forge lines or break JSON, integer fields, and truncation that
 * still closes the line. */
#include <stdio.h>
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

/* The cached timestamp against gmtime + strftime per call, over second,
 * day, leap-day and year boundaries and back in time (a clock step). */
PG_TEST(test_timestamp_matches_strftime)
{
    static const struct timespec at[] = {
        {0, 0},
        {1700000000, 123456789},
        {1700000000, 999999999}, /* same second: from the cache */
        {1700000000, 0},
        {1700000001, 1000000},   /* next second */
        {1699999999, 500000000}, /* back in time */
        {951782399, 999000000},  /* 2000-02-28T23:59:59.999 */
        {951782400, 0},          /* 2000-02-29 */
        {1735689599, 42000000},  /* 2024-12-31T23:59:59 */
        {1735689600, 7000000},   /* 2025-01-01 */
        {4102444800, 1},         /* 2100-01-01 */
        {253402300799, 999999999}, /* 9999-12-31T23:59:59.999 */
    };

    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        char got[PG_LOG_TS_MAX], want[64], sec[40];
        struct tm tm;
        size_t n;

        gmtime_r(&at[i].tv_sec, &tm);
        strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(want, sizeof(want), "%s.%03ldZ", sec, at[i].tv_nsec / 1000000L);
        n = pg_log_timestamp(got, &at[i]);
        CHECK_STR(got, want);
        CHECK_INT(n, strlen(want));
    }
    {
        /* A malformed timespec stays inside the buffer and says what it got. */
        const struct timespec bad = {1700000000, -9223372036854775807L};
        char got[PG_LOG_TS_MAX];
        size_t n = pg_log_timestamp(got, &bad);

        CHECK(n < sizeof(got));
        CHECK_INT(n, strlen(got));
        CHECK(strncmp(got, "2023-11-14T22:13:20.-", 21) == 0);
    }
}

/* The line built without printf against the printf-built one it replaced,
 * for both encodings, with fields (negative, zero, extremes) and caps so
 * small that the head or a field is dropped whole (the message and comp
 * are plain ASCII, so quoting copies them byte for byte). */
static size_t ref_format(char *buf, size_t cap, bool json, const char *level, const char *comp,
                         const struct timespec *at, const char *quoted_msg,
                         const char *quoted_comp, const char *const *keys,
                         const long long *vals, size_t n)
{
    char ts[40];
    struct tm tm;
    size_t o = 0;
    int w;

#define REF_APPEND(...)                                                                            \
    do {                                                                                           \
        if (o + 4 < cap) {                                                                         \
            w = snprintf(buf + o, cap - 4 - o, __VA_ARGS__);                                       \
            if (w > 0 && (size_t)w < cap - 4 - o) {                                                \
                o += (size_t)w;                                                                    \
            } else {                                                                               \
                buf[o] = '\0';                                                                     \
            }                                                                                      \
        }                                                                                          \
    } while (0)
    gmtime_r(&at->tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    if (json) {
        REF_APPEND("{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"comp\":\"", ts,
                   at->tv_nsec / 1000000L, level);
        for (const char *p = quoted_comp; *p != '\0' && o + 8 < cap; p++) {
            buf[o++] = *p;
        }
        REF_APPEND("\",\"msg\":\"");
    } else {
        REF_APPEND("ts=%s.%03ldZ level=%s comp=%s msg=\"", ts, at->tv_nsec / 1000000L, level,
                   comp);
    }
    for (const char *p = quoted_msg; *p != '\0' && o + 8 < cap; p++) { /* as quote_into */
        buf[o++] = *p;
    }
    buf[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        REF_APPEND(json ? ",\"%s\":%lld" : " %s=%lld", keys[i], vals[i]);
    }
#undef REF_APPEND
    if (json) {
        buf[o++] = '}';
    }
    buf[o++] = '\n';
    buf[o] = '\0';
    return o;
}

PG_TEST(test_format_matches_printf)
{
    static const char *const keys[] = {"resource_profiles", "sample_records", "x"};
    static const long long vals[] = {0, -9223372036854775807LL - 1, 9223372036854775807LL};
    static const size_t caps[] = {8, 16, 40, 60, 70, 80, 90, 100, 110, 130, 160, 512};

    for (int enc = PG_LOG_LOGFMT; enc <= PG_LOG_JSON; enc++) {
        for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
            for (size_t nf = 0; nf <= 3; nf++) {
                char got[512], want[512];
                size_t gn, wn;

                pg_log_set_encoding((enum pg_log_encoding)enc);
                gn = pg_log_format(got, caps[c], PG_LOG_INFO, "exporter/debug", &k_at,
                                   "Profiles", keys, vals, nf);
                pg_log_set_encoding(PG_LOG_LOGFMT);
                wn = ref_format(want, caps[c], enc == PG_LOG_JSON, "info", "exporter/debug",
                                &k_at, "Profiles", "exporter/debug", keys, vals, nf);
                CHECK_STR(got, want);
                CHECK_INT(gn, wn);
            }
        }
    }
}

PG_TEST_MAIN(PG_CASE(test_escaping_table), PG_CASE(test_fields),
             PG_CASE(test_truncation_closes_the_line), PG_CASE(test_parse_encoding),
             PG_CASE(test_outputs), PG_CASE(test_timestamp_matches_strftime),
             PG_CASE(test_format_matches_printf))
