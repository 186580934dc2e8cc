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
#include "core/utf8.h"

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

static char *lower_dup(struct pg_arena *arena, const char *s)
{
    size_t n = strlen(s);
    char *d = pg_arena_alloc(arena, n + 1);

    if (d == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        d[i] = (char)tolower((unsigned char)s[i]);
    }
    d[n] = '\0';
    return d;
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
    size_t n = 0, i = 0;
    bool have_host = false;

    md->n = 0;
    md->entries = NULL;
    if (headers != NULL) {
        TAILQ_FOREACH(kv, headers, next)
        {
            n++;
            if (strcasecmp(kv->key, "host") == 0) {
                have_host = true;
            }
        }
    }
    if (!have_host && host != NULL) {
        n++;
    }
    if (n == 0) {
        return PG_ERR_OK;
    }
    md->entries = pg_arena_calloc(arena, n, sizeof(*md->entries));
    if (md->entries == NULL) {
        return arena_fail(arena, st, "request metadata");
    }
    if (headers != NULL) {
        TAILQ_FOREACH(kv, headers, next)
        {
            /* Header bytes are the client's: made valid UTF-8 (core/utf8)
             * before anything can copy them into an OTLP string. */
            size_t vlen = strlen(kv->value);
            const char *v = pg_utf8_clean(arena, kv->value, &vlen, "request header");
            char *k = lower_dup(arena, kv->key);
            size_t klen = k != NULL ? strlen(k) : 0;
            md->entries[i].key = k != NULL ? (char *)pg_utf8_clean(arena, k, &klen, "request header")
                                           : NULL;
            md->entries[i].value = v == kv->value ? pg_arena_strdup(arena, v) : (char *)v;
            if (md->entries[i].key == NULL || md->entries[i].value == NULL) {
                return arena_fail(arena, st, "request metadata");
            }
            i++;
        }
    }
    if (!have_host && host != NULL) {
        md->entries[i].key = "host";
        md->entries[i].value = pg_arena_strdup(arena, host);
        if (md->entries[i].value == NULL) {
            return arena_fail(arena, st, "request metadata");
        }
        i++;
    }
    md->n = i;
    return PG_ERR_OK;
}

int pg_http_hostport(char *buf, size_t size, const char *addr, unsigned port)
{
    return snprintf(buf, size, strchr(addr, ':') != NULL ? "[%s]:%u" : "%s:%u", addr, port);
}

char *pg_http_format_peer(struct pg_arena *arena, const char *addr, unsigned port)
{
    int n;
    char *s;

    if (addr == NULL) {
        return NULL;
    }
    n = pg_http_hostport(NULL, 0, addr, port);
    s = n >= 0 ? pg_arena_alloc(arena, (size_t)n + 1) : NULL;
    if (s != NULL) {
        pg_http_hostport(s, (size_t)n + 1, addr, port);
    }
    return s;
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
