/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the pprof receiver's request helpers: Content-Encoding
 * parsing, the capped decoding chain, headers -> metadata and the
 * response-header check, with invariants rather than mere survival.
 * Input: byte 0 = allowed-codings set (bit i = codec table row i); then "<content-encoding>\n",
 * header lines "Name: value\n" up to an empty line, then the body. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "codec/codec.h"
#include "core/arena.h"
#include "pipeline/batch.h"
#include "core/utf8.h"
#include "http/http_request.h"

#define MAX_LAYER (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

/* Copies the next line (without '\n') into a NUL-terminated malloc'd string. */
static char *next_line(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    size_t n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
    char *s = malloc(n + 1);

    memcpy(s, *p, n);
    s[n] = '\0';
    *p = nl ? nl + 1 : end;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data + 1, *end = data + size;
    struct pg_arena *arena;
    struct pg_http_codings c;
    struct pg_status st;
    struct evkeyvalq h;
    struct pg_metadata md;
    unsigned allowed;
    size_t n_headers = 0;
    bool have_host = false;
    char *ce;
    enum pg_err err;

    if (size < 1) {
        return 0;
    }
    allowed = data[0] & pg_codec_all();
    arena = pg_arena_create(8 * MAX_LAYER + (1u << 20));

    /* Content-Encoding */
    ce = next_line(&p, end);
    memset(&c, 0, sizeof(c));
    pg_status_clear(&st);
    err = pg_http_parse_content_encoding(ce, allowed, &c, &st);
    check(c.n <= PG_HTTP_MAX_CODINGS);
    for (size_t i = 0; i < c.n; i++) {
        /* an allowed row of the codec table, never identity */
        check(c.v[i] != NULL && c.v[i]->decode != NULL && (allowed & pg_codec_bit(c.v[i])) != 0);
        check(pg_codec_find(c.v[i]->name, strlen(c.v[i]->name)) == c.v[i]);
    }
    if (err != PG_ERR_OK) {
        check(err == PG_ERR_UNSUPPORTED || err == PG_ERR_LIMIT);
        check(st.msg[0] != '\0' && strchr(st.msg, '\n') == NULL);
    }

    /* Headers */
    TAILQ_INIT(&h);
    while (p < end && *p != '\n') {
        char *line = next_line(&p, end);
        char *colon = strchr(line, ':');

        if (colon != NULL) {
            *colon = '\0';
            if (evhttp_add_header(&h, line, colon + 1) == 0) {
                n_headers++;
                have_host = have_host || strcasecmp(line, "host") == 0;
                /* The config check must refuse whatever could split a response. */
                if (pg_http_header_ok(line, colon + 1)) {
                    check(strpbrk(colon + 1, "\r\n") == NULL && line[0] != '\0');
                    check(strpbrk(line, " \t:\r\n") == NULL);
                }
            }
        }
        free(line);
    }
    if (p < end) {
        p++; /* the empty line */
    }
    err = pg_http_metadata_from_headers(arena, &h, "fallback:1", &md, &st);
    check(err == PG_ERR_OK || err == PG_ERR_LIMIT || err == PG_ERR_NOMEM);
    if (err == PG_ERR_OK) {
        const struct evkeyval *kv;
        size_t i = 0;

        check(md.n == n_headers + (have_host ? 0 : 1));
        TAILQ_FOREACH(kv, &h, next)
        {
            /* Keys and values are kept, made valid UTF-8 (core/utf8). */
            size_t kn = strlen(kv->key), vn = strlen(kv->value), bad = 0;
            char *kw = malloc(kn * 3 + 1), *vw = malloc(vn * 3 + 1);

            kw[pg_utf8_repair(kw, kv->key, kn, &bad)] = '\0';
            vw[pg_utf8_repair(vw, kv->value, vn, &bad)] = '\0';
            check(strcasecmp(md.entries[i].key, kw) == 0);
            check(strcmp(md.entries[i].value, vw) == 0);
            check(pg_utf8_valid(md.entries[i].key, strlen(md.entries[i].key)));
            check(pg_utf8_valid(md.entries[i].value, strlen(md.entries[i].value)));
            free(vw);
            for (const char *k = md.entries[i].key; *k; k++) {
                check(!isupper((unsigned char)*k));
            }
            check(pg_metadata_get(&md, kw, 0) != NULL);
            free(kw);
            i++;
        }
        check(pg_metadata_count(&md, "host") >= 1);
    }
    evhttp_clear_headers(&h);

    /* Body through the decoding chain (the codings parsed so far). */
    {
        const uint8_t *out = NULL;
        size_t out_len = 0, inflated = 0;

        pg_status_clear(&st);
        err = pg_http_decode_body(arena, p, (size_t)(end - p), &c, MAX_LAYER, &out, &out_len,
                                  &inflated, &st);
        if (err == PG_ERR_OK) {
            check(out != NULL || (size_t)(end - p) == 0);
            if (c.n == 0) {
                check(out == p && out_len == (size_t)(end - p));
            } else {
                check(out_len <= MAX_LAYER);
                check(inflated <= c.n * (size_t)MAX_LAYER);
            }
        } else {
            check(err == PG_ERR_MALFORMED || err == PG_ERR_LIMIT || err == PG_ERR_NOMEM);
            check(st.msg[0] != '\0');
        }
    }
    free(ce);
    pg_arena_destroy(arena);
    return 0;
}
