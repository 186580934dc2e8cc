/* SPDX-License-Identifier: Apache-2.0
 * ParseKeyValue and ParseResourceAttributes on plain strings. The first is a
 * faithful port of the collector's behaviour (parseutils.SplitString +
 * ParseKeyValuePairs), quirks included, so configs copied from a collector
 * give the same attributes; the second is what the SDKs' header format needs. */
#include "processor/ottl_kv.h"

#include "core/hex.h"
#include "core/utf8.h"
#include "core/vec.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static enum pg_err oom(struct pg_arena *a, struct pg_status *st)
{
    return pg_status_set(st, pg_arena_hit_cap(a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                         "no memory to parse key/value pairs");
}

static uint32_t key_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *s; s++) {
        h = (h ^ (uint8_t)*s) * 16777619u;
    }
    return h;
}

const char *pg_ottl_kv_get(const struct pg_ottl_kv_list *list, const char *key)
{
    uint32_t h = key_hash(key);

    for (size_t i = 0; i < list->n; i++) {
        if (list->v[i].hash == h && strcmp(list->v[i].key, key) == 0) {
            return list->v[i].value;
        }
    }
    return NULL;
}

enum pg_err pg_ottl_kv_put(struct pg_arena *a, struct pg_ottl_kv_list *list, const char *key,
                           const char *value, struct pg_status *st)
{
    uint32_t h = key_hash(key);

    for (size_t i = 0; i < list->n; i++) {
        if (list->v[i].hash == h && strcmp(list->v[i].key, key) == 0) {
            list->v[i].value = value; /* last duplicate wins */
            return PG_ERR_OK;
        }
    }
    if (list->n >= PG_OTTL_KV_MAX_PAIRS) {
        return pg_status_set(st, PG_ERR_LIMIT, "more than %d key/value pairs",
                             PG_OTTL_KV_MAX_PAIRS);
    }
    if (list->n >= list->cap &&
        !PG_VEC_GROW(a, list->v, list->cap, list->n, 16, PG_OTTL_KV_MAX_PAIRS)) {
        return oom(a, st);
    }
    list->v[list->n].key = key;
    list->v[list->n].value = value;
    list->v[list->n].hash = h;
    list->n++;
    return PG_ERR_OK;
}

/* Length of the Unicode white space (Go's unicode.IsSpace) starting at @s, or 0. */
static size_t space_at(const unsigned char *s, size_t n)
{
    if (n >= 1 && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r'))) {
        return 1;
    }
    if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0)) {
        return 2;
    }
    if (n >= 3 && s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80) {
        return 3; /* U+1680 */
    }
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 &&
        (s[2] <= 0x8A || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF)) {
        return 3; /* U+2000..200A, 2028, 2029, 202F */
    }
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) {
        return 3; /* U+205F */
    }
    if (n >= 3 && s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80) {
        return 3; /* U+3000 */
    }
    return 0;
}

/* Trims like Go's strings.TrimSpace; returns the start and sets *@len. */
static const char *trim_space(const char *s, size_t *len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = *len;
    size_t k;

    while (n > 0 && (k = space_at(p, n)) > 0) {
        p += k;
        n -= k;
    }
    /* Common case: the text ends in a printable ASCII byte, no space. */
    if (n > 0 && p[n - 1] > ' ' && p[n - 1] < 0x7f) {
        *len = n;
        return (const char *)p;
    }
    for (;;) {
        bool cut = false;
        for (k = 1; k <= 3 && k <= n; k++) {
            if (space_at(p + n - k, k) == k) {
                n -= k;
                cut = true;
                break;
            }
        }
        if (!cut) {
            break;
        }
    }
    *len = n;
    return (const char *)p;
}

/* Appends Go's %q rendering of @s (ASCII subset) to @out at *@pos, bounded.
 * Sources longer than QUOTE_MAX bytes are cut with "..." so that the reason
 * after them still fits in a status message. */
#define QUOTE_MAX 64
static void go_quote(char *out, size_t cap, size_t *pos, const char *s)
{
    size_t seen = 0;

    static const char hex[] = "0123456789abcdef";
    size_t p = *pos;

#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (p + 1 < cap) {                                                                         \
            out[p++] = (c);                                                                        \
        }                                                                                          \
    } while (0)
    PUT('"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (++seen > QUOTE_MAX) {
            PUT('.');
            PUT('.');
            PUT('.');
            break;
        }
        if (*c == '"' || *c == '\\') {
            PUT('\\');
            PUT((char)*c);
        } else if (*c == '\n') {
            PUT('\\');
            PUT('n');
        } else if (*c == '\t') {
            PUT('\\');
            PUT('t');
        } else if (*c == '\r') {
            PUT('\\');
            PUT('r');
        } else if (*c < 0x20 || *c == 0x7f) {
            PUT('\\');
            PUT('x');
            PUT(hex[*c >> 4]);
            PUT(hex[*c & 15]);
        } else {
            PUT((char)*c);
        }
    }
    PUT('"');
#undef PUT
    out[p < cap ? p : cap - 1] = '\0';
    *pos = p;
}

/* Appends @s at *@pos, truncating at @cap - 1; always NUL-terminates. */
static void append(char *out, size_t cap, size_t *pos, const char *s)
{
    size_t n = strlen(s);

    if (*pos >= cap - 1) {
        return;
    }
    if (n > cap - 1 - *pos) {
        n = cap - 1 - *pos;
    }
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = '\0';
}

struct tokens {
    size_t n;
    size_t cap;
    char **v;
};

static bool tokens_push(struct pg_arena *a, struct tokens *t, char *s)
{
    if (t->n >= t->cap && !PG_VEC_GROW(a, t->v, t->cap, t->n, 16, 0)) {
        return false;
    }
    t->v[t->n++] = s;
    return true;
}

/* The collector's SplitString: splits on @delim outside quotes, strips the
 * quotes, drops empty tokens, handles backslashes the way the newest
 * parseutils does. Returns NULL on success or a static error text. Sets
 * *@oom on allocation failure. */
static const char *split_string(struct pg_arena *a, const char *in, const char *delim,
                                struct tokens *out, bool *oomp)
{
    size_t len = strlen(in);
    size_t dl = strlen(delim);
    /* Every token is at most the input plus a NUL; a put-back backslash
     * replaces the one consumed, so 2*len+2 bytes cover all tokens. */
    char *buf = pg_arena_alloc(a, 2 * len + 2);
    char *cur;
    size_t cl = 0;
    char quote = 0;
    bool escaped = false;
    /* The bytes that end a run outside and inside quotes (strcspn scans 16 at a time); a
     * NUL delimiter is the end of the string anyway, so it is left out of the set. */
    char stop_out[5] = {'"', '\'', '\\', delim[0], '\0'};
    char stop_in[3] = {0, '\\', '\0'};

    *oomp = false;
    if (buf == NULL) {
        *oomp = true;
        return NULL;
    }
    cur = buf;
    for (size_t i = 0; i < len; i++) {
        if (!escaped) {
            /* A run of bytes none of the rules below look at is copied whole. */
            size_t j;

            if (quote == 0) {
                j = i + strcspn(in + i, stop_out);
            } else {
                stop_in[0] = quote;
                j = i + strcspn(in + i, stop_in);
            }
            if (j > i) {
                memcpy(cur + cl, in + i, j - i);
                cl += j - i;
                i = j - 1;
                continue;
            }
        }
        if (quote == 0 && in[i] == delim[0] && i + dl <= len && memcmp(in + i, delim, dl) == 0) {
            i += dl - 1;
            if (cl == 0) {
                continue; /* leading, trailing or repeated delimiter */
            }
            cur[cl] = '\0';
            if (!tokens_push(a, out, cur)) {
                *oomp = true;
                return NULL;
            }
            cur += cl + 1;
            cl = 0;
            continue;
        }
        if (!escaped) {
            if (quote == 0 && (in[i] == '"' || in[i] == '\'')) {
                quote = in[i];
                continue;
            }
            if (quote != 0 && in[i] == quote) {
                quote = 0;
                continue;
            }
            if (in[i] == '\\') {
                escaped = true;
                continue;
            }
        } else {
            /* Outside quotes the active quote is "" so any character but a
             * backslash gets its backslash back, as upstream. */
            if ((quote == 0 || in[i] != quote) && in[i] != '\\') {
                cur[cl++] = '\\';
            }
            escaped = false;
        }
        cur[cl++] = in[i];
    }
    if (escaped) {
        return "found a trailing escape character";
    }
    if (quote != 0) {
        return "never reached the end of a quoted value";
    }
    if (cl > 0) {
        cur[cl] = '\0';
        if (!tokens_push(a, out, cur)) {
            *oomp = true;
            return NULL;
        }
    }
    return NULL;
}

enum pg_err pg_ottl_parse_key_value(struct pg_arena *a, const char *src, const char *delim,
                                    const char *pair_delim, struct pg_ottl_kv_list *out,
                                    struct pg_status *st)
{
    struct tokens toks = {0, 0, NULL};
    struct pg_ottl_kv_list res = {0, 0, NULL};
    const char *serr;
    bool is_oom;
    size_t dl = strlen(delim);
    char msg[PG_STATUS_MSG_MAX];
    size_t mpos = 0;
    size_t nbad = 0;

    out->n = 0;
    if (src[0] == '\0') {
        return pg_status_set(st, PG_ERR_PROCESSING, "cannot parse from empty target");
    }
    serr = split_string(a, src, pair_delim, &toks, &is_oom);
    if (is_oom) {
        return oom(a, st);
    }
    if (serr != NULL) {
        size_t p = 0;
        go_quote(msg, sizeof(msg), &p, src);
        return pg_status_set(st, PG_ERR_PROCESSING, "splitting source %s into pairs failed: %s",
                             msg, serr);
    }
    for (size_t i = 0; i < toks.n; i++) {
        char *tok = toks.v[i];
        char *d = strstr(tok, delim);
        const char *k;
        const char *v;
        size_t kl;
        size_t vl;
        enum pg_err err;

        if (d == NULL) {
            /* Collect every bad token like multierr, then fail the call. */
            if (nbad == 0) {
                mpos = 0;
                append(msg, sizeof(msg), &mpos, "failed to split pairs into key-values: ");
            } else {
                append(msg, sizeof(msg), &mpos, "; ");
            }
            append(msg, sizeof(msg), &mpos, "cannot split ");
            go_quote(msg, sizeof(msg), &mpos, tok);
            append(msg, sizeof(msg), &mpos, " into 2 items, got 1 item(s)");
            nbad++;
            continue;
        }
        kl = (size_t)(d - tok);
        k = trim_space(tok, &kl);
        v = d + dl;
        vl = strlen(v);
        v = trim_space(v, &vl);
        /* Trimming in place: the token buffer is ours. */
        ((char *)k)[kl] = '\0';
        ((char *)v)[vl] = '\0';
        err = pg_ottl_kv_put(a, &res, k, v, st);
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    if (nbad > 0) {
        return pg_status_set(st, PG_ERR_PROCESSING, "%s", msg);
    }
    *out = res;
    return PG_ERR_OK;
}

/* Percent-decodes @s[0..n) into @dst (NUL-terminated). False on a bad escape,
 * a decoded NUL or invalid UTF-8 (decodeURIComponent would throw). */
static bool pct_decode(const char *s, size_t n, char *dst)
{
    size_t o = 0;
    bool ascii = true;

    if (memchr(s, '%', n) == NULL) {
        /* Common case: nothing to decode; only non-ASCII needs the UTF-8 check. */
        for (size_t i = 0; i < n; i++) {
            ascii = ascii && (unsigned char)s[i] < 0x80;
        }
        memcpy(dst, s, n);
        dst[n] = '\0';
        return ascii || pg_utf8_valid(dst, n);
    }

    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi;
            int lo;
            if (i + 2 >= n) {
                return false;
            }
            hi = pg_hex_digit((unsigned char)s[i + 1]);
            lo = pg_hex_digit((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                return false;
            }
            dst[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            dst[o++] = s[i];
        }
    }
    dst[o] = '\0';
    return pg_utf8_valid(dst, o);
}

enum pg_err pg_ottl_parse_resource_attributes(struct pg_arena *a, const char *src,
                                              struct pg_ottl_kv_list *out, size_t *skipped,
                                              struct pg_status *st)
{
    const char *p = src;
    size_t bad = 0;

    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t plen = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', plen);

        if (eq == NULL) {
            size_t tl = plen;
            trim_space(p, &tl);
            if (tl > 0) {
                bad++; /* an empty entry (",,", trailing ",") is not an error */
            }
        } else {
            size_t kl = (size_t)(eq - p);
            size_t vl = plen - kl - 1;
            const char *k = trim_space(p, &kl);
            const char *v = trim_space(eq + 1, &vl);
            char *kd = pg_arena_alloc(a, kl + vl + 2);
            char *vd;

            if (kd == NULL) {
                return oom(a, st);
            }
            vd = kd + kl + 1;
            if (kl == 0 || !pct_decode(k, kl, kd) || kd[0] == '\0' || !pct_decode(v, vl, vd)) {
                bad++;
            } else {
                enum pg_err err = pg_ottl_kv_put(a, out, kd, vd, st);
                if (err != PG_ERR_OK) {
                    return err;
                }
            }
        }
        if (end == NULL) {
            break;
        }
        p = end + 1;
    }
    if (skipped != NULL) {
        *skipped = bad;
    }
    return PG_ERR_OK;
}
