/* SPDX-License-Identifier: Apache-2.0
 * Text rendering of OTLP profiles for the debug exporter, line for line in
 * the collector's formats (otlp-profiles.md §3) plus pprofgate's additions in
 * `detailed`. Input may come from any receiver, so every dictionary index is
 * range-checked and printed as the collector's "[Missing ...]" text. */
#include "exporter/debug_format.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
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

static void put(struct pg_debug_buf *b, const char *s)
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

static const char *s_or_empty(const char *s)
{
    return s ? s : "";
}

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

static void put_hex(struct pg_debug_buf *b, const uint8_t *p, size_t n)
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

static const char *dict_str(const pg_otlp_dict *d, int32_t i)
{
    if (d == NULL || i < 0 || (size_t)i >= d->n_string_table) {
        return NULL;
    }
    return s_or_empty(d->string_table[i]);
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

    put(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s_or_empty(s); *p != '\0'; p++) {
        switch (*p) {
        case '"': put(b, "\\\""); break;
        case '\\': put(b, "\\\\"); break;
        case '\n': put(b, "\\n"); break;
        case '\r': put(b, "\\r"); break;
        case '\t': put(b, "\\t"); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof(esc), "\\u%04x", *p);
                put(b, esc);
            } else {
                pg_debug_buf_append(b, (const char *)p, 1);
            }
        }
    }
    put(b, "\"");
}

/* Nesting is bounded by protobuf-c's unpack recursion limit, and we stop at
 * 64 anyway so a hand-built cycle cannot run away. */
static void put_json_value(struct pg_debug_buf *b, const pg_otlp_anyvalue *v,
                           const pg_otlp_dict *d, int depth);

static int kv_key_cmp(const void *a, const void *c)
{
    const pg_otlp_kv *x = *(const pg_otlp_kv *const *)a;
    const pg_otlp_kv *y = *(const pg_otlp_kv *const *)c;

    return strcmp(s_or_empty(x->key), s_or_empty(y->key));
}

static const char *kv_key(const pg_otlp_kv *kv, const pg_otlp_dict *d)
{
    const char *k;

    if (kv->key != NULL && kv->key[0] != '\0') {
        return kv->key;
    }
    k = kv->key_strindex > 0 ? dict_str(d, kv->key_strindex) : NULL;
    return k ? k : s_or_empty(kv->key);
}

static void put_json_value(struct pg_debug_buf *b, const pg_otlp_anyvalue *v,
                           const pg_otlp_dict *d, int depth)
{
    char num[64];

    if (v == NULL || depth > 64) {
        put(b, "null");
        return;
    }
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR: put_json_string(b, v->string_value); break;
    case PG_OTLP_ANYVALUE_STRINDEX: put_json_string(b, dict_str(d, v->string_value_strindex)); break;
    case PG_OTLP_ANYVALUE_BOOL: put(b, v->bool_value ? "true" : "false"); break;
    case PG_OTLP_ANYVALUE_INT: pg_debug_buf_printf(b, "%lld", (long long)v->int_value); break;
    case PG_OTLP_ANYVALUE_DOUBLE:
        if (isnan(v->double_value) || isinf(v->double_value)) {
            put(b, "null");
        } else {
            pg_debug_es6_double(num, sizeof(num), v->double_value);
            put(b, num);
        }
        break;
    case PG_OTLP_ANYVALUE_BYTES:
        put(b, "\"");
        put_base64(b, v->bytes_value.data, v->bytes_value.len);
        put(b, "\"");
        break;
    case PG_OTLP_ANYVALUE_ARRAY:
        put(b, "[");
        for (size_t i = 0; v->array_value && i < v->array_value->n_values; i++) {
            if (i) {
                put(b, ",");
            }
            put_json_value(b, v->array_value->values[i], d, depth + 1);
        }
        put(b, "]");
        break;
    case PG_OTLP_ANYVALUE_KVLIST: {
        size_t n = v->kvlist_value ? v->kvlist_value->n_values : 0;
        const pg_otlp_kv **sorted = n ? malloc(n * sizeof(*sorted)) : NULL;

        /* Go's encoding/json writes map keys sorted. */
        put(b, "{");
        if (sorted != NULL) {
            memcpy(sorted, v->kvlist_value->values, n * sizeof(*sorted));
            qsort(sorted, n, sizeof(*sorted), kv_key_cmp);
            for (size_t i = 0; i < n; i++) {
                if (i) {
                    put(b, ",");
                }
                put_json_string(b, kv_key(sorted[i], d));
                put(b, ":");
                put_json_value(b, sorted[i]->value, d, depth + 1);
            }
            free(sorted);
        }
        put(b, "}");
        break;
    }
    default: put(b, "null"); break;
    }
}

/* pcommon Value.AsString() */
static void put_as_string(struct pg_debug_buf *b, const pg_otlp_anyvalue *v, const pg_otlp_dict *d)
{
    char num[64];

    if (v == NULL) {
        return;
    }
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR: put(b, s_or_empty(v->string_value)); break;
    case PG_OTLP_ANYVALUE_STRINDEX: {
        const char *s = dict_str(d, v->string_value_strindex);
        put(b, s ? s : "");
        break;
    }
    case PG_OTLP_ANYVALUE_BOOL: put(b, v->bool_value ? "true" : "false"); break;
    case PG_OTLP_ANYVALUE_INT: pg_debug_buf_printf(b, "%lld", (long long)v->int_value); break;
    case PG_OTLP_ANYVALUE_DOUBLE:
        pg_debug_es6_double(num, sizeof(num), v->double_value);
        put(b, num);
        break;
    case PG_OTLP_ANYVALUE_BYTES: put_base64(b, v->bytes_value.data, v->bytes_value.len); break;
    case PG_OTLP_ANYVALUE_ARRAY:
    case PG_OTLP_ANYVALUE_KVLIST: put_json_value(b, v, d, 0); break;
    default: break;
    }
}

/* "Type(AsString)" */
static void put_typed(struct pg_debug_buf *b, const pg_otlp_anyvalue *v, const pg_otlp_dict *d)
{
    put(b, value_type(v));
    put(b, "(");
    put_as_string(b, v, d);
    put(b, ")");
}

static void put_int_list(struct pg_debug_buf *b, const int32_t *v, size_t n)
{
    put(b, "[");
    for (size_t i = 0; i < n; i++) {
        pg_debug_buf_printf(b, i ? " %d" : "%d", v[i]);
    }
    put(b, "]");
}

/* ---- pprofgate annotations: what a profile holds ---------------------- */

/* "type/unit" of @vt into @out; "?" for a part that is unset or missing. */
static const char *value_type_name(char *out, size_t size, const pg_otlp_dict *d,
                                   const pg_otlp_valuetype *vt)
{
    const char *t = vt ? dict_str(d, vt->type_strindex) : NULL;
    const char *u = vt ? dict_str(d, vt->unit_strindex) : NULL;

    snprintf(out, size, "%s/%s", t && t[0] ? t : "?", u && u[0] ? u : "?");
    return out;
}

static bool value_type_set(const pg_otlp_valuetype *vt)
{
    return vt != NULL && (vt->type_strindex != 0 || vt->unit_strindex != 0);
}

/* @v in @vt's unit: a Go duration for nanoseconds (`40ms`), else the
 * number as it is (bytes and counts stay exact). */
static const char *quantity(char *out, size_t size, const pg_otlp_dict *d,
                            const pg_otlp_valuetype *vt, long long v)
{
    const char *unit = vt ? dict_str(d, vt->unit_strindex) : NULL;

    if (unit != NULL && strcmp(unit, "nanoseconds") == 0) {
        pg_debug_go_duration(out, size, v);
    } else {
        snprintf(out, size, "%lld", v);
    }
    return out;
}

/* A sample's value: the sum of its values, or one per timestamp when it
 * has only timestamps (the OTLP rule). Saturates instead of wrapping. */
static long long sample_value(const pg_otlp_sample *s)
{
    long long sum = 0;

    if (s->n_values == 0) {
        return (long long)s->n_timestamps_unix_nano;
    }
    for (size_t v = 0; v < s->n_values; v++) {
        if (__builtin_add_overflow(sum, (long long)s->values[v], &sum)) {
            return s->values[v] < 0 ? LLONG_MIN : LLONG_MAX;
        }
    }
    return sum;
}

static long long profile_total(const pg_otlp_profile *p)
{
    long long sum = 0;

    for (size_t s = 0; s < p->n_samples; s++) {
        long long v = p->samples[s] ? sample_value(p->samples[s]) : 0;

        if (__builtin_add_overflow(sum, v, &sum)) {
            return v < 0 ? LLONG_MIN : LLONG_MAX;
        }
    }
    return sum;
}

static long long duration_ns(uint64_t d)
{
    return d > (uint64_t)LLONG_MAX ? LLONG_MAX : (long long)d;
}

/* normal: the profile line's fields after `samples=N`. */
static void put_profile_fields(struct pg_debug_buf *b, const pg_otlp_dict *d,
                               const pg_otlp_profile *p)
{
    char name[256], q[64], t[64];

    pg_debug_buf_printf(b, " sample_type=%s",
                        value_type_name(name, sizeof(name), d, p->sample_type));
    pg_debug_buf_printf(b, " total=%s",
                        quantity(q, sizeof(q), d, p->sample_type, profile_total(p)));
    if (p->period != 0 || value_type_set(p->period_type)) {
        pg_debug_buf_printf(b, " period=%s period_type=%s",
                            quantity(q, sizeof(q), d, p->period_type, p->period),
                            value_type_name(name, sizeof(name), d, p->period_type));
    }
    pg_debug_rfc3339(t, sizeof(t), (unsigned long long)p->time_unix_nano);
    pg_debug_go_duration(q, sizeof(q), duration_ns(p->duration_nano));
    pg_debug_buf_printf(b, " start=%s duration=%s", t, q);
}

/* pprof.scope.sample_type_order: entry k is the index, in the pprof the
 * profiles came from, of profile k's sample type. Returns its inverse
 * (pprof index -> profile index; malloc'd, @n entries), or NULL when the
 * scope has no such attribute or it does not match the profiles (a
 * processor dropped some): then nothing is decoded. */
static size_t *sample_type_order_inverse(const pg_otlp_scopeprof *sp, size_t *n)
{
    const pg_otlp_anyvalue *v = NULL;
    const pg_otlp_array *arr;
    size_t *inv;

    for (size_t i = 0; sp->scope != NULL && i < sp->scope->n_attributes; i++) {
        const pg_otlp_kv *kv = sp->scope->attributes[i];

        if (kv != NULL && kv->key != NULL &&
            strcmp(kv->key, "pprof.scope.sample_type_order") == 0) {
            v = kv->value;
        }
    }
    if (v == NULL || v->value_case != PG_OTLP_ANYVALUE_ARRAY || v->array_value == NULL) {
        return NULL;
    }
    arr = v->array_value;
    if (arr->n_values == 0 || arr->n_values != sp->n_profiles ||
        (inv = malloc(arr->n_values * sizeof(*inv))) == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < arr->n_values; i++) {
        inv[i] = SIZE_MAX;
    }
    for (size_t k = 0; k < arr->n_values; k++) {
        const pg_otlp_anyvalue *e = arr->values[k];

        if (e == NULL || e->value_case != PG_OTLP_ANYVALUE_INT || e->int_value < 0 ||
            (uint64_t)e->int_value >= arr->n_values || inv[e->int_value] != SIZE_MAX ||
            sp->profiles[k] == NULL) {
            free(inv);
            return NULL;
        }
        inv[e->int_value] = k;
    }
    *n = arr->n_values;
    return inv;
}

/* normal: ` pprof_sample_types=samples/count,cpu/nanoseconds` (pprof's order). */
static void put_scope_fields(struct pg_debug_buf *b, const pg_otlp_dict *d,
                             const pg_otlp_scopeprof *sp)
{
    size_t n = 0;
    size_t *inv = sample_type_order_inverse(sp, &n);
    char name[256];

    if (inv == NULL) {
        return;
    }
    put(b, " pprof_sample_types=");
    for (size_t i = 0; i < n; i++) {
        pg_debug_buf_printf(b, "%s%s", i ? "," : "",
                            value_type_name(name, sizeof(name), d, sp->profiles[inv[i]]->sample_type));
    }
    free(inv);
}

/* detailed: `pprof sample types: [0] samples/count = Profile #1, ...`. */
static void put_scope_lines(struct pg_debug_buf *b, const pg_otlp_dict *d,
                            const pg_otlp_scopeprof *sp)
{
    size_t n = 0;
    size_t *inv = sample_type_order_inverse(sp, &n);
    char name[256];

    if (inv == NULL) {
        return;
    }
    put(b, "pprof sample types:");
    for (size_t i = 0; i < n; i++) {
        pg_debug_buf_printf(b, "%s [%zu] %s = Profile #%zu", i ? "," : "", i,
                            value_type_name(name, sizeof(name), d, sp->profiles[inv[i]]->sample_type),
                            inv[i]);
    }
    put(b, "\n");
    free(inv);
}

/* A frame as the stack lines and the top frames print it. */
enum frame_kind { FRAME_NO_STACK, FRAME_MISSING_STACK, FRAME_MISSING_LOCATION, FRAME_ADDRESS,
                  FRAME_LINE };

struct frame_key {
    enum frame_kind kind;
    long long a, b; /* MISSING_*: the index; ADDRESS: mapping, address; LINE: function, line */
};

static void put_frame(struct pg_debug_buf *b, const pg_otlp_dict *d, const struct frame_key *k)
{
    switch (k->kind) {
    case FRAME_NO_STACK: put(b, "(no stack)"); break;
    case FRAME_MISSING_STACK:
        pg_debug_buf_printf(b, "[Missing Dictionary StackTable Item #%lld]", k->a);
        break;
    case FRAME_MISSING_LOCATION:
        pg_debug_buf_printf(b, "[Missing Dictionary LocationTable Item #%lld]", k->a);
        break;
    case FRAME_ADDRESS: {
        const char *file = NULL;

        if (k->a > 0 && (size_t)k->a < d->n_mapping_table && d->mapping_table[k->a] != NULL) {
            file = dict_str(d, d->mapping_table[k->a]->filename_strindex);
        }
        pg_debug_buf_printf(b, "0x%llx%s%s", (unsigned long long)k->b, file && file[0] ? " " : "",
                            file && file[0] ? file : "");
        break;
    }
    case FRAME_LINE: {
        const char *name = NULL, *file = NULL;

        if (k->a >= 0 && (size_t)k->a < d->n_function_table && d->function_table[k->a] != NULL) {
            name = dict_str(d, d->function_table[k->a]->name_strindex);
            file = dict_str(d, d->function_table[k->a]->filename_strindex);
        }
        pg_debug_buf_printf(b, "%s %s:%lld", name && name[0] ? name : "??",
                            file && file[0] ? file : "??", k->b);
        break;
    }
    }
}

static struct frame_key line_frame(const pg_otlp_line *ln)
{
    return (struct frame_key){FRAME_LINE, ln->function_index, (long long)ln->line};
}

/* Location @li, or NULL with @k set to its one frame (missing, or an
 * address without lines); a location with lines has one frame per line,
 * leaf first (inline frames in pprof's order, callee first). */
static const pg_otlp_location *location_or_frame(const pg_otlp_dict *d, int32_t li,
                                                 struct frame_key *k)
{
    const pg_otlp_location *l;

    if (li < 0 || (size_t)li >= d->n_location_table || d->location_table[li] == NULL) {
        *k = (struct frame_key){FRAME_MISSING_LOCATION, li, 0};
        return NULL;
    }
    l = d->location_table[li];
    if (l->n_lines == 0) {
        *k = (struct frame_key){FRAME_ADDRESS, l->mapping_index, (long long)l->address};
        return NULL;
    }
    return l;
}

/* The frame a sample's self value belongs to: its stack's first (leaf)
 * frame. */
static struct frame_key leaf_frame(const pg_otlp_dict *d, const pg_otlp_sample *s)
{
    struct frame_key k = {FRAME_NO_STACK, 0, 0};
    const pg_otlp_stack *st;

    if (s->stack_index == 0) {
        return k;
    }
    if (d == NULL || s->stack_index < 0 || (size_t)s->stack_index >= d->n_stack_table ||
        d->stack_table[s->stack_index] == NULL) {
        return (struct frame_key){FRAME_MISSING_STACK, s->stack_index, 0};
    }
    st = d->stack_table[s->stack_index];
    for (size_t i = 0; i < st->n_location_indices; i++) {
        const pg_otlp_location *l = location_or_frame(d, st->location_indices[i], &k);

        if (l == NULL) {
            return k;
        }
        for (size_t j = 0; j < l->n_lines; j++) {
            if (l->lines[j] != NULL) {
                return line_frame(l->lines[j]);
            }
        }
    }
    return (struct frame_key){FRAME_NO_STACK, 0, 0};
}

#define TOP_FRAMES 5
/* The frame table's slots stop growing here; leaf frames past it (never
 * seen in practice: one per distinct leaf line) are left out and said so. */
#define MAX_FRAME_SLOTS (1u << 22)

struct frame_slot {
    struct frame_key k;
    long long value;
    bool used;
};

/* Self value per leaf frame of one profile: open addressing, writer-thread
 * scratch reused between profiles (malloc'd, freed after the batch). */
struct frame_table {
    struct frame_slot *v;
    size_t cap, n;
    bool incomplete; /* a frame did not fit */
};

static size_t frame_hash(const struct frame_key *k)
{
    uint64_t h = (uint64_t)k->kind * 0x9e3779b97f4a7c15ULL;

    h = (h ^ (uint64_t)k->a) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (uint64_t)k->b) * 0x94d049bb133111ebULL;
    return (size_t)(h ^ (h >> 31));
}

static bool frame_eq(const struct frame_key *x, const struct frame_key *y)
{
    return x->kind == y->kind && x->a == y->a && x->b == y->b;
}

static struct frame_slot *frame_find(struct frame_slot *v, size_t cap, const struct frame_key *k)
{
    size_t i = frame_hash(k) & (cap - 1);

    while (v[i].used && !frame_eq(&v[i].k, k)) {
        i = (i + 1) & (cap - 1);
    }
    return &v[i];
}

static bool frame_grow(struct frame_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 256;
    struct frame_slot *v;

    if (cap > MAX_FRAME_SLOTS || (v = calloc(cap, sizeof(*v))) == NULL) {
        return false;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (t->v[i].used) {
            *frame_find(v, cap, &t->v[i].k) = t->v[i];
        }
    }
    free(t->v);
    t->v = v;
    t->cap = cap;
    return true;
}

static void frame_add(struct frame_table *t, const struct frame_key *k, long long value)
{
    struct frame_slot *s;

    if ((t->n + 1) * 2 > t->cap && !frame_grow(t) && t->n + 1 >= t->cap) {
        t->incomplete = true;
        return;
    }
    s = frame_find(t->v, t->cap, k);
    if (!s->used) {
        s->used = true;
        s->k = *k;
        s->value = 0;
        t->n++;
    }
    if (__builtin_add_overflow(s->value, value, &s->value)) {
        s->value = value < 0 ? LLONG_MIN : LLONG_MAX;
    }
}

/* Larger value first; equal values in key order, so the text is stable. */
static bool frame_before(const struct frame_slot *x, const struct frame_slot *y)
{
    if (x->value != y->value) {
        return x->value > y->value;
    }
    if (x->k.kind != y->k.kind) {
        return x->k.kind < y->k.kind;
    }
    return x->k.a != y->k.a ? x->k.a < y->k.a : x->k.b < y->k.b;
}

/* Display columns of UTF-8 @s (µ is two bytes, one column). */
static size_t columns(const char *s)
{
    size_t n = 0;

    for (; *s != '\0'; s++) {
        n += ((unsigned char)*s & 0xC0) != 0x80;
    }
    return n;
}

/* detailed: the profile's top TOP_FRAMES leaf frames by self value. */
static void put_top_frames(struct pg_debug_buf *b, const pg_otlp_dict *d, const pg_otlp_profile *p,
                           long long total, struct frame_table *t)
{
    struct frame_slot top[TOP_FRAMES];
    char vals[TOP_FRAMES][64];
    size_t n_top = 0, width = 0;

    if (p->n_samples == 0) {
        return;
    }
    if (t->v != NULL) {
        memset(t->v, 0, t->cap * sizeof(*t->v));
    }
    t->n = 0;
    t->incomplete = false;
    for (size_t s = 0; s < p->n_samples; s++) {
        if (p->samples[s] != NULL) {
            struct frame_key k = leaf_frame(d, p->samples[s]);

            frame_add(t, &k, sample_value(p->samples[s]));
        }
    }
    for (size_t i = 0; i < t->cap; i++) {
        size_t j;

        if (!t->v[i].used) {
            continue;
        }
        for (j = n_top; j > 0 && frame_before(&t->v[i], &top[j - 1]); j--) {
            if (j < TOP_FRAMES) {
                top[j] = top[j - 1];
            }
        }
        if (j < TOP_FRAMES) {
            top[j] = t->v[i];
            n_top += n_top < TOP_FRAMES;
        }
    }
    pg_debug_buf_printf(b, "    %-15s: top %zu of %zu leaf frames by self value%s\n", "Top frames",
                        n_top, t->n, t->incomplete ? " (table full: some frames left out)" : "");
    for (size_t i = 0; i < n_top; i++) {
        quantity(vals[i], sizeof(vals[i]), d, p->sample_type, top[i].value);
        width = columns(vals[i]) > width ? columns(vals[i]) : width;
    }
    for (size_t i = 0; i < n_top; i++) {
        pg_debug_buf_printf(b, "        %*s%s", (int)(width - columns(vals[i])), "", vals[i]);
        if (total != 0) {
            pg_debug_buf_printf(b, " %5.1f%%  ", 100.0 * (double)top[i].value / (double)total);
        } else {
            put(b, "      -  ");
        }
        put_frame(b, d, &top[i].k);
        put(b, "\n");
    }
}

/* detailed: what the profile holds, after the collector's header lines. */
static void put_profile_lines(struct pg_debug_buf *b, const pg_otlp_dict *d,
                              const pg_otlp_profile *p, struct frame_table *t)
{
    char name[256], q[64];
    long long total = profile_total(p);

    pg_debug_buf_printf(b, "    %-15s: %s\n", "Sample type",
                        value_type_name(name, sizeof(name), d, p->sample_type));
    if (p->period != 0 || value_type_set(p->period_type)) {
        pg_debug_buf_printf(b, "    %-15s: %s (%s)\n", "Period",
                            quantity(q, sizeof(q), d, p->period_type, p->period),
                            value_type_name(name, sizeof(name), d, p->period_type));
    } else {
        pg_debug_buf_printf(b, "    %-15s: none\n", "Period");
    }
    pg_debug_go_duration(q, sizeof(q), duration_ns(p->duration_nano));
    pg_debug_buf_printf(b, "    %-15s: %s\n", "Duration", q);
    pg_debug_buf_printf(b, "    %-15s: %s in %zu samples\n", "Total",
                        quantity(q, sizeof(q), d, p->sample_type, total), p->n_samples);
    if (d != NULL) {
        put_top_frames(b, d, p, total, t);
    }
}

/* ---- summary --------------------------------------------------------- */

size_t pg_debug_resource_profiles(const struct pg_otlp_request *req)
{
    return req ? req->n_resource_profiles : 0;
}

size_t pg_debug_sample_records(const struct pg_otlp_request *req)
{
    size_t n = 0;

    for (size_t i = 0; req && i < req->n_resource_profiles; i++) {
        const pg_otlp_resprof *rp = req->resource_profiles[i];

        for (size_t j = 0; rp && j < rp->n_scope_profiles; j++) {
            const pg_otlp_scopeprof *sp = rp->scope_profiles[j];

            for (size_t k = 0; sp && k < sp->n_profiles; k++) {
                n += sp->profiles[k] ? sp->profiles[k]->n_samples : 0;
            }
        }
    }
    return n;
}

void pg_debug_format_summary(struct pg_debug_buf *b, size_t resource_profiles,
                             size_t sample_records)
{
    pg_debug_buf_printf(b, "Profiles\t{\"resource profiles\": %zu, \"sample records\": %zu}\n",
                        resource_profiles, sample_records);
}

/* ---- normal ---------------------------------------------------------- */

static void put_kv_pairs(struct pg_debug_buf *b, pg_otlp_kv *const *kvs, size_t n,
                         const pg_otlp_dict *d)
{
    for (size_t i = 0; i < n; i++) {
        if (kvs[i] == NULL) {
            continue;
        }
        pg_debug_buf_printf(b, " %s=", kv_key(kvs[i], d));
        put_as_string(b, kvs[i]->value, d);
    }
}

static void format_normal(struct pg_debug_buf *b, const struct pg_otlp_request *req,
                          bool annotate)
{
    const pg_otlp_dict *d = req->dictionary;

    for (size_t i = 0; i < req->n_resource_profiles; i++) {
        const pg_otlp_resprof *rp = req->resource_profiles[i];

        if (rp == NULL) {
            continue;
        }
        pg_debug_buf_printf(b, "ResourceProfiles #%zu", i);
        if (rp->schema_url && rp->schema_url[0]) {
            pg_debug_buf_printf(b, " [%s]", rp->schema_url);
        }
        if (rp->resource) {
            put_kv_pairs(b, rp->resource->attributes, rp->resource->n_attributes, d);
        }
        put(b, "\n");
        for (size_t j = 0; j < rp->n_scope_profiles; j++) {
            const pg_otlp_scopeprof *sp = rp->scope_profiles[j];

            if (sp == NULL) {
                continue;
            }
            pg_debug_buf_printf(b, "ScopeProfiles #%zu", j);
            if (sp->scope && sp->scope->name && sp->scope->name[0]) {
                pg_debug_buf_printf(b, " %s", sp->scope->name);
            }
            if (sp->scope && sp->scope->version && sp->scope->version[0]) {
                pg_debug_buf_printf(b, "@%s", sp->scope->version);
            }
            if (sp->schema_url && sp->schema_url[0]) {
                pg_debug_buf_printf(b, " [%s]", sp->schema_url);
            }
            if (sp->scope) {
                put_kv_pairs(b, sp->scope->attributes, sp->scope->n_attributes, d);
            }
            if (annotate) {
                put_scope_fields(b, d, sp);
            }
            put(b, "\n");
            for (size_t k = 0; k < sp->n_profiles; k++) {
                const pg_otlp_profile *p = sp->profiles[k];

                if (p == NULL) {
                    continue;
                }
                put_hex(b, p->profile_id.data, p->profile_id.len);
                pg_debug_buf_printf(b, " samples=%zu", p->n_samples);
                if (annotate) {
                    put_profile_fields(b, d, p);
                }
                if (p->n_attribute_indices > 0) {
                    for (size_t a = 0; a < p->n_attribute_indices; a++) {
                        int32_t ai = p->attribute_indices[a];
                        const pg_otlp_kvu *kvu;
                        const char *key;

                        put(b, " ");
                        if (d == NULL || ai < 0 || (size_t)ai >= d->n_attribute_table ||
                            d->attribute_table[ai] == NULL) {
                            pg_debug_buf_printf(b, "[Missing Dictionary AttributeTable Item #%d]",
                                                ai);
                            continue;
                        }
                        kvu = d->attribute_table[ai];
                        key = dict_str(d, kvu->key_strindex);
                        if (key == NULL) {
                            pg_debug_buf_printf(b, "[Missing Dictionary Key String Item #%d]=",
                                                kvu->key_strindex);
                        } else {
                            pg_debug_buf_printf(b, "%s=", key);
                        }
                        put_as_string(b, kvu->value, d);
                    }
                }
                put(b, "\n");
            }
        }
    }
}

/* ---- detailed -------------------------------------------------------- */

static void put_attr_line(struct pg_debug_buf *b, const char *indent, const pg_otlp_dict *d,
                          int32_t ai)
{
    const pg_otlp_kvu *kvu;
    const char *key;

    if (d == NULL || ai < 0 || (size_t)ai >= d->n_attribute_table ||
        d->attribute_table[ai] == NULL) {
        pg_debug_buf_printf(b, "%s-> [Missing Dictionary AttributeTable Item #%d]\n", indent, ai);
        return;
    }
    kvu = d->attribute_table[ai];
    key = dict_str(d, kvu->key_strindex);
    if (key == NULL) {
        pg_debug_buf_printf(b, "%s-> [Missing Dictionary Key String Item #%d]: ", indent,
                            kvu->key_strindex);
    } else {
        pg_debug_buf_printf(b, "%s-> %s: ", indent, key);
    }
    put_typed(b, kvu->value, d);
    put(b, "\n");
}

static void put_kv_block(struct pg_debug_buf *b, const char *title, pg_otlp_kv *const *kvs,
                         size_t n, const pg_otlp_dict *d)
{
    if (n == 0) {
        return;
    }
    pg_debug_buf_printf(b, "%s\n", title);
    for (size_t i = 0; i < n; i++) {
        if (kvs[i] == NULL) {
            continue;
        }
        pg_debug_buf_printf(b, "     -> %s: ", kv_key(kvs[i], d));
        put_typed(b, kvs[i]->value, d);
        put(b, "\n");
    }
}

/* The collector's attribute and link tables: it writes every entry's
 * fields into one map, so only the last entry's values show (each field in
 * first-insertion order). */
static void format_tables_as_collector(struct pg_debug_buf *b, const pg_otlp_dict *d)
{
    const pg_otlp_kvu *a = d->n_attribute_table > 0 ? d->attribute_table[d->n_attribute_table - 1]
                                                    : NULL;
    const pg_otlp_link *l = d->n_link_table > 0 ? d->link_table[d->n_link_table - 1] : NULL;

    if (a != NULL) {
        pg_debug_buf_printf(b, "Attribute table:\n     -> Key: Int(%d)\n     -> Value: Str(",
                            a->key_strindex);
        put_as_string(b, a->value, d);
        pg_debug_buf_printf(b, ")\n     -> unit: Int(%d)\n", a->unit_strindex);
    }
    if (l != NULL) {
        put(b, "Link table:\n     -> Trace ID: Str(");
        put_hex(b, l->trace_id.data, l->trace_id.len);
        put(b, ")\n     -> Span ID: Str(");
        put_hex(b, l->span_id.data, l->span_id.len);
        put(b, ")\n");
    }
}

static void format_tables(struct pg_debug_buf *b, const pg_otlp_dict *d, bool annotate)
{
    for (size_t i = 0; i < d->n_mapping_table; i++) {
        const pg_otlp_mapping *m = d->mapping_table[i];

        if (m == NULL) {
            continue;
        }
        pg_debug_buf_printf(b,
                            "Mapping #%zu\n    Memory start: %llu\n    Memory limit: %llu\n"
                            "    File offset: %llu\n    File name: %d\n    Attributes: ",
                            i, (unsigned long long)m->memory_start,
                            (unsigned long long)m->memory_limit,
                            (unsigned long long)m->file_offset, m->filename_strindex);
        put_int_list(b, m->attribute_indices, m->n_attribute_indices);
        put(b, "\n");
    }
    for (size_t i = 0; i < d->n_location_table; i++) {
        const pg_otlp_location *l = d->location_table[i];

        if (l == NULL) {
            continue;
        }
        pg_debug_buf_printf(b, "Location #%zu\n    Mapping index: %d\n    Address: %llu\n", i,
                            l->mapping_index, (unsigned long long)l->address);
        for (size_t j = 0; j < l->n_lines; j++) {
            const pg_otlp_line *ln = l->lines[j];

            if (ln == NULL) {
                continue;
            }
            pg_debug_buf_printf(b,
                                "    Line #%zu\n        Function index: %d\n        Line: %lld\n"
                                "        Column: %lld\n",
                                j, ln->function_index, (long long)ln->line,
                                (long long)ln->column);
        }
        put(b, "    Attributes: ");
        put_int_list(b, l->attribute_indices, l->n_attribute_indices);
        put(b, "\n");
    }
    for (size_t i = 0; i < d->n_function_table; i++) {
        const pg_otlp_function *f = d->function_table[i];

        if (f == NULL) {
            continue;
        }
        pg_debug_buf_printf(b,
                            "Function #%zu\n    Name: %d\n    System name: %d\n    Filename: %d\n"
                            "    Start line: %lld\n",
                            i, f->name_strindex, f->system_name_strindex, f->filename_strindex,
                            (long long)f->start_line);
    }
    if (!annotate) {
        format_tables_as_collector(b, d);
    }
    /* pprofgate: every entry (the collector prints only the last one). */
    if (annotate && d->n_attribute_table > 0) {
        put(b, "Attribute table:\n");
        for (size_t i = 0; i < d->n_attribute_table; i++) {
            const pg_otlp_kvu *a = d->attribute_table[i];

            if (a == NULL) {
                continue;
            }
            pg_debug_buf_printf(b, "    Attribute #%zu\n         -> Key: Int(%d)\n"
                                   "         -> Value: Str(",
                                i, a->key_strindex);
            put_as_string(b, a->value, d);
            pg_debug_buf_printf(b, ")\n         -> unit: Int(%d)\n", a->unit_strindex);
        }
    }
    if (annotate && d->n_link_table > 0) {
        put(b, "Link table:\n");
        for (size_t i = 0; i < d->n_link_table; i++) {
            const pg_otlp_link *l = d->link_table[i];

            if (l == NULL) {
                continue;
            }
            pg_debug_buf_printf(b, "    Link #%zu\n         -> Trace ID: Str(", i);
            put_hex(b, l->trace_id.data, l->trace_id.len);
            put(b, ")\n         -> Span ID: Str(");
            put_hex(b, l->span_id.data, l->span_id.len);
            put(b, ")\n");
        }
    }
    if (d->n_string_table > 0) {
        put(b, "String table:\n");
        for (size_t i = 0; i < d->n_string_table; i++) {
            pg_debug_buf_printf(b, "    %s\n", s_or_empty(d->string_table[i]));
        }
    }
}

/* pprofgate: one line per frame, leaf first; inline frames in line order. */
static void format_stack(struct pg_debug_buf *b, const pg_otlp_dict *d, int32_t si)
{
    const pg_otlp_stack *s;

    if (si == 0) {
        return;
    }
    if (d == NULL || si < 0 || (size_t)si >= d->n_stack_table || d->stack_table[si] == NULL) {
        pg_debug_buf_printf(b, "        Stack: [Missing Dictionary StackTable Item #%d]\n", si);
        return;
    }
    s = d->stack_table[si];
    pg_debug_buf_printf(b, "        Stack #%d:\n", si);
    for (size_t i = 0; i < s->n_location_indices; i++) {
        struct frame_key k;
        const pg_otlp_location *l = location_or_frame(d, s->location_indices[i], &k);

        for (size_t j = 0; l != NULL && j < l->n_lines; j++) {
            if (l->lines[j] != NULL) {
                k = line_frame(l->lines[j]);
                put(b, "            ");
                put_frame(b, d, &k);
                put(b, "\n");
            }
        }
        if (l == NULL) {
            put(b, "            ");
            put_frame(b, d, &k);
            put(b, "\n");
        }
    }
}

/* @type_name: the profile's "type/unit" to name next to the values, or
 * NULL for the collector's text. */
static void format_sample(struct pg_debug_buf *b, const pg_otlp_dict *d, const pg_otlp_sample *s,
                          size_t idx, const char *type_name)
{
    pg_debug_buf_printf(b, "    Sample #%zu\n        Values: [", idx);
    for (size_t v = 0; v < s->n_values; v++) {
        pg_debug_buf_printf(b, v ? " %lld" : "%lld", (long long)s->values[v]);
    }
    put(b, "]");
    if (type_name != NULL) {
        pg_debug_buf_printf(b, " %s", type_name);
    }
    put(b, "\n");
    if (s->n_attribute_indices > 0) {
        put(b, "        Attributes:\n");
        for (size_t a = 0; a < s->n_attribute_indices; a++) {
            put_attr_line(b, "             ", d, s->attribute_indices[a]);
        }
    }
    /* pprofgate additions below. */
    if (type_name == NULL) {
        return;
    }
    if (s->link_index != 0) {
        if (d == NULL || s->link_index < 0 || (size_t)s->link_index >= d->n_link_table ||
            d->link_table[s->link_index] == NULL) {
            pg_debug_buf_printf(b, "        Link: [Missing Dictionary LinkTable Item #%d]\n",
                                s->link_index);
        } else {
            const pg_otlp_link *l = d->link_table[s->link_index];

            pg_debug_buf_printf(b, "        Link #%d: trace_id=", s->link_index);
            put_hex(b, l->trace_id.data, l->trace_id.len);
            put(b, " span_id=");
            put_hex(b, l->span_id.data, l->span_id.len);
            put(b, "\n");
        }
    }
    format_stack(b, d, s->stack_index);
}

static void format_detailed(struct pg_debug_buf *b, const struct pg_otlp_request *req,
                            bool annotate)
{
    const pg_otlp_dict *d = req->dictionary;
    char tbuf[64], type_name[256];
    struct frame_table frames = {0};

    if (d != NULL) {
        format_tables(b, d, annotate);
    }
    for (size_t i = 0; i < req->n_resource_profiles; i++) {
        const pg_otlp_resprof *rp = req->resource_profiles[i];
        const pg_otlp_resource *r;

        if (rp == NULL) {
            continue;
        }
        r = rp->resource;
        pg_debug_buf_printf(b, "ResourceProfiles #%zu\nResource SchemaURL: %s\n", i,
                            s_or_empty(rp->schema_url));
        if (r != NULL) {
            put_kv_block(b, "Resource attributes:", r->attributes, r->n_attributes, d);
            if (r->n_entity_refs > 0) {
                put(b, "Resource entity refs:\n");
                for (size_t e = 0; e < r->n_entity_refs; e++) {
                    const Opentelemetry__Proto__Common__V1__EntityRef *er = r->entity_refs[e];

                    if (er == NULL) {
                        continue;
                    }
                    pg_debug_buf_printf(b, "     -> Entity ref #%zu:\n          -> Type: %s\n", e,
                                        s_or_empty(er->type));
                    if (er->schema_url && er->schema_url[0]) {
                        pg_debug_buf_printf(b, "          -> Schema URL: %s\n", er->schema_url);
                    }
                    if (er->n_id_keys > 0) {
                        put(b, "          -> ID keys:\n");
                        for (size_t k = 0; k < er->n_id_keys; k++) {
                            pg_debug_buf_printf(b, "               -> %s\n",
                                                s_or_empty(er->id_keys[k]));
                        }
                    }
                    if (er->n_description_keys > 0) {
                        put(b, "          -> Description keys:\n");
                        for (size_t k = 0; k < er->n_description_keys; k++) {
                            pg_debug_buf_printf(b, "               -> %s\n",
                                                s_or_empty(er->description_keys[k]));
                        }
                    }
                }
            }
        }
        for (size_t j = 0; j < rp->n_scope_profiles; j++) {
            const pg_otlp_scopeprof *sp = rp->scope_profiles[j];

            if (sp == NULL) {
                continue;
            }
            pg_debug_buf_printf(b, "ScopeProfiles #%zu\nScopeProfiles SchemaURL: %s\n", j,
                                s_or_empty(sp->schema_url));
            pg_debug_buf_printf(b, "InstrumentationScope %s %s\n",
                                sp->scope ? s_or_empty(sp->scope->name) : "",
                                sp->scope ? s_or_empty(sp->scope->version) : "");
            if (sp->scope != NULL) {
                put_kv_block(b, "InstrumentationScope attributes:", sp->scope->attributes,
                             sp->scope->n_attributes, d);
            }
            if (annotate) {
                put_scope_lines(b, d, sp);
            }
            for (size_t k = 0; k < sp->n_profiles; k++) {
                const pg_otlp_profile *p = sp->profiles[k];

                if (p == NULL) {
                    continue;
                }
                pg_debug_buf_printf(b, "Profile #%zu\n    %-15s: ", k, "Profile ID");
                put_hex(b, p->profile_id.data, p->profile_id.len);
                pg_debug_go_time(tbuf, sizeof(tbuf), (unsigned long long)p->time_unix_nano);
                pg_debug_buf_printf(b, "\n    %-15s: %s\n    %-15s: %llu\n"
                                       "    Dropped attributes count: %u\n",
                                    "Start time", tbuf, "DurationNano",
                                    (unsigned long long)p->duration_nano,
                                    p->dropped_attributes_count);
                if (annotate) {
                    put_profile_lines(b, d, p, &frames);
                    value_type_name(type_name, sizeof(type_name), d, p->sample_type);
                }
                for (size_t s = 0; s < p->n_samples; s++) {
                    if (p->samples[s] != NULL) {
                        format_sample(b, d, p->samples[s], s, annotate ? type_name : NULL);
                    }
                }
            }
        }
    }
    free(frames.v);
}

void pg_debug_format_text(struct pg_debug_buf *b, const struct pg_otlp_request *req,
                          enum pg_debug_verbosity v, bool annotate)
{
    if (req == NULL) {
        return;
    }
    if (v == PG_DEBUG_NORMAL) {
        format_normal(b, req, annotate);
    } else if (v == PG_DEBUG_DETAILED) {
        format_detailed(b, req, annotate);
    }
}
