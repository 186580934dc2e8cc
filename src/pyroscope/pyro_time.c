/* SPDX-License-Identifier: Apache-2.0
 * Reads a Pyroscope `from`/`until` value into Unix nanoseconds: digit count tells the unit
 * of a Unix time, YYYYMMDD dates, and "now" with Graphite-style offsets (attime's rules). */
#include "pyroscope/pyro_time.h"

#include <stdbool.h>
#include <string.h>

#define NS 1000000000LL
#define MAX_TIME 64 /* bytes of a time value after the ignored characters are dropped */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int64_t y, int64_t m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dm[m - 1];
}

/* 8 digits that Go's time.Parse("20060102") accepts, with a year after 1900: 1 with *@ns
 * set, 0 when not such a date, -1 when the date is past int64 nanoseconds (year 2262). */
static int as_date(const char *s, int64_t *ns)
{
    int64_t y = 0, m = 0, d = 0;
    for (int i = 0; i < 4; i++) {
        y = y * 10 + (s[i] - '0');
    }
    m = (s[4] - '0') * 10 + (s[5] - '0');
    d = (s[6] - '0') * 10 + (s[7] - '0');
    if (y <= 1900 || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m)) {
        return 0;
    }
    int64_t days = days_from_civil(y, m, d);
    if (days > INT64_MAX / (86400 * NS)) {
        return -1;
    }
    *ns = days * 86400 * NS;
    return 1;
}

static enum pg_err bad(struct pg_status *st, const char *s, size_t n, const char *why)
{
    return pg_status_set(st, PG_ERR_MALFORMED, "time \"%.*s\": %s", (int)(n > 40 ? 40 : n), s,
                         why);
}

/* Seconds per offset unit, by Pyroscope's prefix rules; 0 when unknown. */
static int64_t unit_seconds(const char *u, size_t n)
{
    if (n >= 1 && u[0] == 's') {
        return 1;
    }
    if ((n >= 3 && memcmp(u, "mon", 3) == 0) || (n >= 1 && u[0] == 'M')) {
        return 30 * 86400;
    }
    if (n >= 1 && u[0] == 'm') {
        return 60; /* "min..." and "m" */
    }
    if (n >= 1 && u[0] == 'h') {
        return 3600;
    }
    if (n >= 1 && u[0] == 'd') {
        return 86400;
    }
    if (n >= 1 && u[0] == 'w') {
        return 7 * 86400;
    }
    if (n >= 1 && u[0] == 'y') {
        return 365 * 86400;
    }
    return 0;
}

static enum pg_err from_value(int64_t v, size_t n, const char *s, size_t len, int64_t *out_ns,
                              struct pg_status *st);

/* @t[0..n), digits only (not a date), as a Unix time whose digit count tells the unit. */
static enum pg_err from_digits(const char *t, size_t n, const char *s, size_t len,
                               int64_t *out_ns, struct pg_status *st)
{
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (i >= 18 && v > (INT64_MAX - (t[i] - '0')) / 10) { /* 18 digits always fit */
            return bad(st, s, len, "does not fit int64");
        }
        v = v * 10 + (t[i] - '0');
    }
    return from_value(v, n, s, len, out_ns, st);
}

/* The Unix time @v of @n digits in nanoseconds (the digit count tells the unit). */
static enum pg_err from_value(int64_t v, size_t n, const char *s, size_t len, int64_t *out_ns,
                              struct pg_status *st)
{
    switch (n) {
    case 13: /* milliseconds */
        if (v > INT64_MAX / 1000000) {
            return bad(st, s, len, "does not fit int64 nanoseconds");
        }
        *out_ns = v * 1000000;
        return PG_ERR_OK;
    case 16: /* microseconds */
        if (v > INT64_MAX / 1000) {
            return bad(st, s, len, "does not fit int64 nanoseconds");
        }
        *out_ns = v * 1000;
        return PG_ERR_OK;
    case 19: /* nanoseconds */
        *out_ns = v;
        return PG_ERR_OK;
    default: /* seconds */
        if (v > INT64_MAX / NS) {
            return bad(st, s, len, "does not fit int64 nanoseconds");
        }
        *out_ns = v * NS;
        return PG_ERR_OK;
    }
}

enum pg_err pg_pyro_time_parse(const char *s, size_t len, int64_t now_ns, int64_t *out_ns,
                               struct pg_status *st)
{
    char t[MAX_TIME + 1];
    size_t n = 0, all = 0;

    /* The SDKs' form, digits only, is read in place (8 digits may be a date: the long way). */
    if (len > 0 && len <= 19 && len != 8) {
        uint64_t v = 0; /* 19 digits fit uint64 */
        while (all < len && is_digit(s[all])) {
            v = v * 10 + (uint64_t)(s[all++] - '0');
        }
        if (all == len) {
            return v > INT64_MAX ? bad(st, s, len, "does not fit int64")
                                 : from_value((int64_t)v, len, s, len, out_ns, st);
        }
    }

    /* Pyroscope drops '_', ',' and spaces anywhere, and trims white space. */
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '_' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            continue;
        }
        if (n == MAX_TIME) {
            return bad(st, s, len, "too long");
        }
        t[n++] = c;
    }
    t[n] = '\0';
    if (n == 0) {
        *out_ns = now_ns;
        return PG_ERR_OK;
    }
    size_t digits = 0;
    while (digits < n && is_digit(t[digits])) {
        digits++;
    }
    if (digits == n) {
        int date = n == 8 ? as_date(t, out_ns) : 0;
        if (date != 0) {
            return date > 0 ? PG_ERR_OK : bad(st, s, len, "a date past int64 nanoseconds");
        }
        return from_digits(t, n, s, len, out_ns, st);
    }
    /* "now" and an offset: [now](+|-)(digits unit)+ */
    size_t i = 0;
    if (n >= 3 && memcmp(t, "now", 3) == 0) {
        i = 3;
    }
    if (i == n) {
        *out_ns = now_ns;
        return PG_ERR_OK;
    }
    if (t[i] != '+' && t[i] != '-') {
        return bad(st, s, len,
                   "want Unix seconds, ms, us or ns digits, YYYYMMDD, or now[+-]N<unit>");
    }
    int64_t sign = t[i] == '-' ? -1 : 1, secs = 0;
    size_t parts = 0;
    for (i++; i < n; parts++) {
        int64_t num = 0;
        size_t d0 = i;
        while (i < n && is_digit(t[i])) {
            if (num > 1000000000) {
                return bad(st, s, len, "offset too large");
            }
            num = num * 10 + (t[i++] - '0');
        }
        size_t u0 = i;
        while (i < n && !is_digit(t[i])) {
            i++;
        }
        int64_t mul = unit_seconds(t + u0, i - u0);
        if (i == d0 || u0 == d0 || mul == 0) {
            return bad(st, s, len, "an offset wants digits and a unit (s, min, h, d, w, mon, y)");
        }
        secs += num * mul;
        if (secs > 200LL * 365 * 86400) { /* so that secs * NS fits int64 */
            return bad(st, s, len, "offset too large");
        }
    }
    if (parts == 0) {
        return bad(st, s, len, "an offset wants digits and a unit (s, min, h, d, w, mon, y)");
    }
    int64_t off = sign * secs * NS;
    if ((off > 0 && now_ns > INT64_MAX - off) || (off < 0 && now_ns < INT64_MIN - off)) {
        return bad(st, s, len, "does not fit int64 nanoseconds");
    }
    *out_ns = now_ns + off;
    return PG_ERR_OK;
}
