/* SPDX-License-Identifier: Apache-2.0
 * The debug exporter's text buffer and its value formatting: each value the
 * way the collector's Go code prints it (time.Time, time.Duration, pcommon
 * AsString with ES6 doubles and sorted-key JSON, hex ids, base64 bytes). */
#include "exporter/debug_value.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base64.h"
#include "core/vec.h"

/* ---- buffer ------------------------------------------------------------ */

static bool buf_reserve(struct pg_debug_buf *b, size_t extra)
{
    size_t need;

    if (b->truncated) {
        return false;
    }
    if (__builtin_add_overflow(b->len, extra + 1, &need) || (b->max && need > b->max)) {
        b->truncated = true;
        return false;
    }
    if (!PG_VEC_RESERVE(NULL, b->p, b->cap, need, 4096, b->max)) {
        b->truncated = true;
        return false;
    }
    return true;
}

void pg_debug_buf_reset(struct pg_debug_buf *b)
{
    b->len = 0;
    b->truncated = false;
    if (b->p != NULL) {
        b->p[0] = '\0';
    }
}

void pg_debug_buf_free(struct pg_debug_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->truncated = false;
}

void pg_debug_buf_append(struct pg_debug_buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n)) {
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void pg_debug_put(struct pg_debug_buf *b, const char *s)
{
    pg_debug_buf_append(b, s, strlen(s));
}

void pg_debug_buf_printf(struct pg_debug_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_reserve(b, (size_t)n)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- value formatting ------------------------------------------------ */

/* Splits unix nanos into a broken-down UTC time and the fraction as Go and
 * RFC 3339 print it: ".5", ".000000321", or "" when whole. */
static void utc_parts(unsigned long long unix_nano, struct tm *tm, char *frac, size_t size)
{
    long long t = (long long)unix_nano;
    long long sec = t / 1000000000LL;
    long long nsec = t % 1000000000LL;
    time_t tt;

    if (nsec < 0) {
        nsec += 1000000000LL;
        sec -= 1;
    }
    tt = (time_t)sec;
    gmtime_r(&tt, tm);
    frac[0] = '\0';
    if (nsec != 0) {
        size_t len;

        snprintf(frac, size, ".%09lld", nsec);
        len = strlen(frac);
        while (len > 1 && frac[len - 1] == '0') {
            frac[--len] = '\0';
        }
    }
}

void pg_debug_go_time(char *buf, size_t size, unsigned long long unix_nano)
{
    /* Go: time.Unix(0, int64(t)).UTC().String() */
    struct tm tm;
    char frac[16];

    utc_parts(unix_nano, &tm, frac, sizeof(frac));
    snprintf(buf, size, "%04d-%02d-%02d %02d:%02d:%02d%s +0000 UTC", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

void pg_debug_rfc3339(char *buf, size_t size, unsigned long long unix_nano)
{
    struct tm tm;
    char frac[16];

    utc_parts(unix_nano, &tm, frac, sizeof(frac));
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

/* Writes the @prec-digit fraction of @u (at most 9; trailing zeros
 * trimmed, no point when zero) into @frac (at least 11 bytes) and returns
 * the integer part, as Go's fmtFrac. */
static unsigned long long duration_frac(char *frac, unsigned long long u, int prec)
{
    int len = 0;

    frac[0] = '\0';
    for (int i = prec; i > 0; i--) { /* least significant digit first */
        unsigned digit = (unsigned)(u % 10);

        u /= 10;
        if (len == 0 && digit == 0) {
            continue; /* trailing zero */
        }
        if (len == 0) {
            len = i + 1; /* '.' and i digits */
            frac[0] = '.';
            frac[len] = '\0';
        }
        frac[i] = (char)('0' + digit);
    }
    return u;
}

void pg_debug_go_duration(char *buf, size_t size, long long ns)
{
    /* Go: time.Duration(ns).String() */
    unsigned long long u = ns < 0 ? 0ULL - (unsigned long long)ns : (unsigned long long)ns;
    const char *sign = ns < 0 ? "-" : "";
    char frac[16];

    if (u == 0) {
        snprintf(buf, size, "0s");
    } else if (u < 1000ULL) {
        snprintf(buf, size, "%s%lluns", sign, u);
    } else if (u < 1000000ULL) {
        u = duration_frac(frac, u, 3);
        snprintf(buf, size, "%s%llu%s\xc2\xb5" "s", sign, u, frac);
    } else if (u < 1000000000ULL) {
        u = duration_frac(frac, u, 6);
        snprintf(buf, size, "%s%llu%sms", sign, u, frac);
    } else {
        unsigned long long s = duration_frac(frac, u, 9);
        unsigned long long m = s / 60, h = m / 60;

        if (h > 0) {
            snprintf(buf, size, "%s%lluh%llum%llu%ss", sign, h, m % 60, s % 60, frac);
        } else if (m > 0) {
            snprintf(buf, size, "%s%llum%llu%ss", sign, m, s % 60, frac);
        } else {
            snprintf(buf, size, "%s%llu%ss", sign, s, frac);
        }
    }
}

void pg_debug_es6_double(char *buf, size_t size, double v)
{
    char e[40];
    char digits[24];
    int nd = 0, exp10, p;
    double av = fabs(v);
    const char *s;
    size_t o = 0;
    char out[64];

    if (isnan(v)) {
        snprintf(buf, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, "%s", v < 0 ? "-Infinity" : "Infinity");
        return;
    }
    if (v == 0) {
        snprintf(buf, size, "%s", signbit(v) ? "-0" : "0");
        return;
    }
    /* Shortest digit string that reads back as the same double. */
    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof(e), "%.*e", p - 1, v);
        if (strtod(e, NULL) == v) {
            break;
        }
    }
    s = e;
    if (*s == '-') {
        s++;
    }
    for (; *s != 'e'; s++) {
        if (*s >= '0' && *s <= '9' && nd < (int)sizeof(digits) - 1) {
            digits[nd++] = *s;
        }
    }
    digits[nd] = '\0';
    exp10 = atoi(s + 1);
    while (nd > 1 && digits[nd - 1] == '0') {
        digits[--nd] = '\0';
    }
    if (v < 0) {
        out[o++] = '-';
    }
    if (av < 1e-6 || av >= 1e21) {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, (size_t)nd - 1);
            o += (size_t)nd - 1;
        }
        o += (size_t)snprintf(out + o, sizeof(out) - o, "e%c%d", exp10 < 0 ? '-' : '+',
                              exp10 < 0 ? -exp10 : exp10);
    } else if (exp10 >= 0) {
        for (int i = 0; i <= exp10 || i < nd; i++) {
            if (i == exp10 + 1) {
                out[o++] = '.';
            }
            out[o++] = i < nd ? digits[i] : '0';
        }
    } else {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -exp10 - 1; i++) {
            out[o++] = '0';
        }
        memcpy(out + o, digits, (size_t)nd);
        o += (size_t)nd;
    }
    out[o] = '\0';
    snprintf(buf, size, "%s", out);
}

void pg_debug_put_hex(struct pg_debug_buf *b, const uint8_t *p, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    bool zero = true;
    char pair[2];

    /* pdata prints an all-zero (empty) id as "". */
    for (size_t i = 0; i < n; i++) {
        zero = zero && p[i] == 0;
    }
    if (zero) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        pair[0] = hx[p[i] >> 4];
        pair[1] = hx[p[i] & 15];
        pg_debug_buf_append(b, pair, 2);
    }
}

static void put_base64(struct pg_debug_buf *b, const uint8_t *p, size_t n)
{
    char q[257]; /* 192 bytes in (a multiple of 3, so no padding inside) -> 256 out */

    for (size_t i = 0; i < n; i += 192) {
        size_t k = n - i < 192 ? n - i : 192;
        long m = pg_base64_encode(p + i, k, q, sizeof(q));

        pg_debug_buf_append(b, q, (size_t)m);
    }
}

const char *pg_debug_dict_str(const pg_otlp_dict *d, int32_t i)
{
    if (d == NULL || i < 0 || (size_t)i >= d->n_string_table) {
        return NULL;
    }
    return pg_debug_str0(d->string_table[i]);
}

static const char *value_type(const pg_otlp_anyvalue *v)
{
    if (v == NULL) {
        return "Empty";
    }
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR:
    case PG_OTLP_ANYVALUE_STRINDEX: return "Str";
    case PG_OTLP_ANYVALUE_BOOL: return "Bool";
    case PG_OTLP_ANYVALUE_INT: return "Int";
    case PG_OTLP_ANYVALUE_DOUBLE: return "Double";
    case PG_OTLP_ANYVALUE_ARRAY: return "Slice";
    case PG_OTLP_ANYVALUE_KVLIST: return "Map";
    case PG_OTLP_ANYVALUE_BYTES: return "Bytes";
    default: return "Empty";
    }
}

static void put_json_string(struct pg_debug_buf *b, const char *s)
{
    char esc[8];

    pg_debug_put(b, "\"");
    for (const unsigned char *p = (const unsigned char *)pg_debug_str0(s); *p != '\0'; p++) {
        switch (*p) {
        case '"': pg_debug_put(b, "\\\""); break;
        case '\\': pg_debug_put(b, "\\\\"); break;
        case '\n': pg_debug_put(b, "\\n"); break;
        case '\r': pg_debug_put(b, "\\r"); break;
        case '\t': pg_debug_put(b, "\\t"); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof(esc), "\\u%04x", *p);
                pg_debug_put(b, esc);
            } else {
                pg_debug_buf_append(b, (const char *)p, 1);
            }
        }
    }
    pg_debug_put(b, "\"");
}

/* Nesting is bounded by protobuf-c's unpack recursion limit, and we stop at
 * 64 anyway so a hand-built cycle cannot run away. */
static void put_json_value(struct pg_debug_buf *b, const pg_otlp_anyvalue *v,
                           const pg_otlp_dict *d, int depth);

static int kv_key_cmp(const void *a, const void *c)
{
    const pg_otlp_kv *x = *(const pg_otlp_kv *const *)a;
    const pg_otlp_kv *y = *(const pg_otlp_kv *const *)c;

    return strcmp(pg_debug_str0(x->key), pg_debug_str0(y->key));
}

const char *pg_debug_kv_key(const pg_otlp_kv *kv, const pg_otlp_dict *d)
{
    const char *k;

    if (kv->key != NULL && kv->key[0] != '\0') {
        return kv->key;
    }
    k = kv->key_strindex > 0 ? pg_debug_dict_str(d, kv->key_strindex) : NULL;
    return k ? k : pg_debug_str0(kv->key);
}

static void put_json_value(struct pg_debug_buf *b, const pg_otlp_anyvalue *v,
                           const pg_otlp_dict *d, int depth)
{
    char num[64];

    if (v == NULL || depth > 64) {
        pg_debug_put(b, "null");
        return;
    }
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR: put_json_string(b, v->string_value); break;
    case PG_OTLP_ANYVALUE_STRINDEX:
        put_json_string(b, pg_debug_dict_str(d, v->string_value_strindex));
        break;
    case PG_OTLP_ANYVALUE_BOOL: pg_debug_put(b, v->bool_value ? "true" : "false"); break;
    case PG_OTLP_ANYVALUE_INT: pg_debug_buf_printf(b, "%lld", (long long)v->int_value); break;
    case PG_OTLP_ANYVALUE_DOUBLE:
        if (isnan(v->double_value) || isinf(v->double_value)) {
            pg_debug_put(b, "null");
        } else {
            pg_debug_es6_double(num, sizeof(num), v->double_value);
            pg_debug_put(b, num);
        }
        break;
    case PG_OTLP_ANYVALUE_BYTES:
        pg_debug_put(b, "\"");
        put_base64(b, v->bytes_value.data, v->bytes_value.len);
        pg_debug_put(b, "\"");
        break;
    case PG_OTLP_ANYVALUE_ARRAY:
        pg_debug_put(b, "[");
        for (size_t i = 0; v->array_value && i < v->array_value->n_values; i++) {
            if (i) {
                pg_debug_put(b, ",");
            }
            put_json_value(b, v->array_value->values[i], d, depth + 1);
        }
        pg_debug_put(b, "]");
        break;
    case PG_OTLP_ANYVALUE_KVLIST: {
        size_t n = v->kvlist_value ? v->kvlist_value->n_values : 0;
        const pg_otlp_kv **sorted = n ? malloc(n * sizeof(*sorted)) : NULL;

        /* Go's encoding/json writes map keys sorted. */
        pg_debug_put(b, "{");
        if (sorted != NULL) {
            memcpy(sorted, v->kvlist_value->values, n * sizeof(*sorted));
            qsort(sorted, n, sizeof(*sorted), kv_key_cmp);
            for (size_t i = 0; i < n; i++) {
                if (i) {
                    pg_debug_put(b, ",");
                }
                put_json_string(b, pg_debug_kv_key(sorted[i], d));
                pg_debug_put(b, ":");
                put_json_value(b, sorted[i]->value, d, depth + 1);
            }
            free(sorted);
        }
        pg_debug_put(b, "}");
        break;
    }
    default: pg_debug_put(b, "null"); break;
    }
}

/* pcommon Value.AsString() */
void pg_debug_put_as_string(struct pg_debug_buf *b, const pg_otlp_anyvalue *v,
                            const pg_otlp_dict *d)
{
    char num[64];

    if (v == NULL) {
        return;
    }
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR: pg_debug_put(b, pg_debug_str0(v->string_value)); break;
    case PG_OTLP_ANYVALUE_STRINDEX: {
        const char *s = pg_debug_dict_str(d, v->string_value_strindex);
        pg_debug_put(b, s ? s : "");
        break;
    }
    case PG_OTLP_ANYVALUE_BOOL: pg_debug_put(b, v->bool_value ? "true" : "false"); break;
    case PG_OTLP_ANYVALUE_INT: pg_debug_buf_printf(b, "%lld", (long long)v->int_value); break;
    case PG_OTLP_ANYVALUE_DOUBLE:
        pg_debug_es6_double(num, sizeof(num), v->double_value);
        pg_debug_put(b, num);
        break;
    case PG_OTLP_ANYVALUE_BYTES: put_base64(b, v->bytes_value.data, v->bytes_value.len); break;
    case PG_OTLP_ANYVALUE_ARRAY:
    case PG_OTLP_ANYVALUE_KVLIST: put_json_value(b, v, d, 0); break;
    default: break;
    }
}

/* "Type(AsString)" */
void pg_debug_put_typed(struct pg_debug_buf *b, const pg_otlp_anyvalue *v, const pg_otlp_dict *d)
{
    pg_debug_put(b, value_type(v));
    pg_debug_put(b, "(");
    pg_debug_put_as_string(b, v, d);
    pg_debug_put(b, ")");
}

