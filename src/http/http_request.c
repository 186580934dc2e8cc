/* SPDX-License-Identifier: Apache-2.0
 * Socket-free helpers of the pprof HTTP receiver: Content-Encoding lists,
 * the capped decoding chain, headers -> metadata. Every input here is
 * request-controlled, so each loop is bounded and each size checked. */
#include "http/http_request.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "codec/codec.h"
#include "core/decimal.h"
#include "otlp/otlp_utf8.h"

/* Room for any inet_ntop() address (INET6_ADDRSTRLEN is 46). */
#define INET6_ADDRSTRLEN_MAX 46

/* Copies at most @cap-1 printable bytes of @s[0..n) into @dst for messages. */
static void printable(char *dst, size_t cap, const char *s, size_t n)
{
    size_t o = 0;

    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        dst[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    dst[o] = '\0';
}

enum pg_err pg_http_parse_content_encoding(const char *value, unsigned allowed,
                                           struct pg_http_codings *out, struct pg_status *st)
{
    const char *p = value ? value : "";
    char list[64];

    for (;;) {
        const char *start, *end;
        const struct pg_codec *codec;
        size_t n;

        while (*p == ' ' || *p == '\t') {
            p++;
        }
        start = p;
        while (*p != '\0' && *p != ',') {
            p++;
        }
        end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t')) {
            end--;
        }
        n = (size_t)(end - start);
        codec = pg_codec_find(start, n);
        if (codec == NULL || (allowed & pg_codec_bit(codec)) == 0) {
            char shown[48];

            printable(shown, sizeof(shown), start, n);
            pg_codec_list(allowed, false, list, sizeof(list));
            return pg_status_set(st, PG_ERR_UNSUPPORTED,
                                 "unsupported Content-Encoding \"%s\" (supported: %s)", shown,
                                 list);
        }
        if (codec->decode != NULL) { /* identity adds no layer */
            if (out->n >= PG_HTTP_MAX_CODINGS) {
                return pg_status_set(st, PG_ERR_LIMIT,
                                     "more than %d Content-Encoding layers", PG_HTTP_MAX_CODINGS);
            }
            out->v[out->n++] = codec;
        }
        if (*p == '\0') {
            return PG_ERR_OK;
        }
        p++; /* the comma */
    }
}

enum pg_err pg_http_decode_body(struct pg_arena *arena, const uint8_t *in, size_t len,
                                const struct pg_http_codings *codings, size_t max_layer,
                                const uint8_t **out, size_t *out_len, size_t *inflated_bytes,
                                struct pg_status *st)
{
    const uint8_t *cur = in;
    size_t cur_len = len;

    *out = NULL;
    *out_len = 0;
    for (size_t i = codings->n; i > 0; i--) {
        uint8_t *next = NULL;
        size_t next_len = 0;
        enum pg_err err =
            codings->v[i - 1]->decode(arena, cur, cur_len, max_layer, &next, &next_len, st);

        if (err != PG_ERR_OK) {
            return err;
        }
        cur = next;
        cur_len = next_len;
        if (inflated_bytes != NULL) {
            *inflated_bytes += next_len;
        }
    }
    *out = cur;
    *out_len = cur_len;
    return PG_ERR_OK;
}

/* True when @s[0..n) is plain ASCII (valid UTF-8 as it is), 8 bytes a step. */
static bool is_ascii(const char *s, size_t n)
{
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t w;

        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ULL) {
            return false;
        }
    }
    for (; i < n; i++) {
        if ((unsigned char)s[i] & 0x80) {
            return false;
        }
    }
    return true;
}

/* @dst = @s lower-cased (ASCII letters; the C locale's rule), NUL added;
 * true when every byte was ASCII. Eight bytes a step while they are ASCII:
 * a byte b < 0x80 is a capital when b + 0x3f carries into bit 7 and
 * b + 0x25 does not; that bit, shifted to 0x20, lower-cases it. */
static bool lower_copy(char *dst, const char *s, size_t n)
{
    const uint64_t hi = 0x8080808080808080ULL;
    bool ascii = true;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t w;

        memcpy(&w, s + i, 8);
        if (w & hi) {
            break;
        }
        w |= (((w + 0x3f3f3f3f3f3f3f3fULL) & ~(w + 0x2525252525252525ULL)) & hi) >> 2;
        memcpy(dst + i, &w, 8);
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        ascii = ascii && c < 0x80;
        dst[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    dst[n] = '\0';
    return ascii;
}

static enum pg_err arena_fail(struct pg_arena *arena, struct pg_status *st, const char *what)
{
    return pg_status_set(st, pg_arena_hit_cap(arena) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                         "no memory for %s", what);
}

enum pg_err pg_http_metadata_from_headers(struct pg_arena *arena, const struct evkeyvalq *headers,
                                          const char *host, struct pg_metadata *md,
                                          struct pg_status *st)
{
    const struct evkeyval *kv;
    size_t n = 0, i = 0, bytes = 0;
    bool have_host = false;
    char *p;
    /* Lengths measured in the counting pass, kept for the copy (the first
     * LEN_MEMO headers; any later one is measured again). */
    enum { LEN_MEMO = 32 };
    size_t klens[LEN_MEMO], vlens[LEN_MEMO];

    md->n = 0;
    md->entries = NULL;
    if (headers != NULL) {
        TAILQ_FOREACH(kv, headers, next)
        {
            size_t kl = strlen(kv->key), vl = strlen(kv->value);

            if (n < LEN_MEMO) {
                klens[n] = kl;
                vlens[n] = vl;
            }
            n++;
            bytes += kl + vl + 2;
            if (kl == 4 && strcasecmp(kv->key, "host") == 0) {
                have_host = true;
            }
        }
    }
    if (!have_host && host != NULL) {
        n++;
        bytes += strlen(host) + 1;
    }
    if (n == 0) {
        return PG_ERR_OK;
    }
    /* The entries, then every key and value copied into one block. */
    md->entries = pg_arena_calloc(arena, n, sizeof(*md->entries));
    p = md->entries != NULL ? pg_arena_alloc(arena, bytes) : NULL;
    if (p == NULL) {
        return arena_fail(arena, st, "request metadata");
    }
    if (headers != NULL) {
        TAILQ_FOREACH(kv, headers, next)
        {
            /* Header bytes are the client's: made valid UTF-8 (core/utf8)
             * before anything can copy them into an OTLP string. ASCII,
             * nearly every header, is valid as it is. */
            size_t klen = i < LEN_MEMO ? klens[i] : strlen(kv->key);
            size_t vlen = i < LEN_MEMO ? vlens[i] : strlen(kv->value);
            const char *k = p, *v;

            bool key_ascii = lower_copy(p, kv->key, klen);

            p += klen + 1;
            if (!key_ascii) {
                k = pg_utf8_clean(arena, k, &klen, "request header");
            }
            v = is_ascii(kv->value, vlen) ? kv->value
                                          : pg_utf8_clean(arena, kv->value, &vlen, "request header");
            if (v == kv->value) {
                memcpy(p, v, vlen + 1);
                v = p;
                p += vlen + 1;
            }
            md->entries[i].key = (char *)k;
            md->entries[i].value = (char *)v;
            if (k == NULL || v == NULL) {
                return arena_fail(arena, st, "request metadata");
            }
            i++;
        }
    }
    if (!have_host && host != NULL) {
        size_t hlen = strlen(host);

        memcpy(p, host, hlen + 1);
        md->entries[i].key = "host";
        md->entries[i].value = p;
        i++;
    }
    md->n = i;
    return PG_ERR_OK;
}

int pg_http_hostport(char *buf, size_t size, const char *addr, unsigned port)
{
    /* snprintf's contract without its cost: formatted once per connection
     * and once per push for the batch's peer address. */
    char tmp[INET6_ADDRSTRLEN_MAX + 16];
    size_t alen = strlen(addr), n = 0;
    bool v6 = memchr(addr, ':', alen) != NULL;
    char num[PG_DECIMAL_U64_MAX];
    size_t nlen = pg_fmt_u64(num, port);
    size_t total = alen + nlen + 1 + (v6 ? 2 : 0);
    char *out = size > total ? buf : tmp;

    if (total > INT32_MAX) {
        return -1;
    }
    if (out == tmp && total >= sizeof(tmp)) {
        /* Only a caller's odd address is this long: the slow way. */
        return snprintf(buf, size, v6 ? "[%s]:%u" : "%s:%u", addr, port);
    }
    if (v6) {
        out[n++] = '[';
    }
    memcpy(out + n, addr, alen);
    n += alen;
    if (v6) {
        out[n++] = ']';
    }
    out[n++] = ':';
    memcpy(out + n, num, nlen);
    n += nlen;
    out[n] = '\0';
    if (out == tmp && size > 0) {
        memcpy(buf, tmp, size - 1);
        buf[size - 1] = '\0';
    }
    return (int)total;
}

bool pg_http_header_ok(const char *name, const char *value)
{
    /* RFC 9110 tchar */
    static const char tchar_extra[] = "!#$%&'*+-.^_`|~";

    if (name == NULL || value == NULL || name[0] == '\0') {
        return false;
    }
    for (const char *p = name; *p != '\0'; p++) {
        if (!isalnum((unsigned char)*p) && strchr(tchar_extra, *p) == NULL) {
            return false;
        }
    }
    for (const char *p = value; *p != '\0'; p++) {
        if (*p == '\r' || *p == '\n') {
            return false;
        }
    }
    return true;
}
