/* SPDX-License-Identifier: Apache-2.0
 * The strict HTTP/1.x request parser: heads that must parse (and what they
 * say), heads that must be refused with their status (smuggling shapes,
 * NULs, folding, versions, sizes), and the chunked decoder fed whole and
 * byte by byte, valid and malformed. Also the per-peer tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <netinet/in.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "pg_test.h"
#include "http/conn_limits.h"
#include "http/http_parse.h"

struct head_case {
    const char *name;
    const char *head;
    size_t len; /* 0 = strlen */
    int code;   /* 0 = parses */
    uint64_t content_length;
    bool chunked, keep_alive, expect;
};

#define NL PG_HTTP_NO_LENGTH
static const struct head_case heads[] = {
    {"simple POST", "POST /v1/pprof HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", 0, 0, 5,
     false, true, false},
    {"LF only", "POST /v1/pprof HTTP/1.1\nHost: x\nContent-Length: 5\n\n", 0, 0, 5, false, true,
     false},
    {"leading blank line", "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 0, 0, NL, false, true, false},
    {"chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 0, NL, true,
     true, false},
    {"chunked, case and OWS", "POST / HTTP/1.1\r\nHost: x\r\ntransfer-encoding:  Chunked \r\n\r\n",
     0, 0, NL, true, true, false},
    {"HTTP/1.0 closes", "POST / HTTP/1.0\r\nContent-Length: 1\r\n\r\n", 0, 0, 1, false, false,
     false},
    {"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 0, 0, NL, false,
     true, false},
    {"HTTP/1.1 close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0, 0, NL, false,
     false, false},
    {"Expect 100-continue", "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\n"
     "Content-Length: 9\r\n\r\n", 0, 0, 9, false, true, true},
    {"identical duplicate CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
     "Content-Length: 3\r\n\r\n", 0, 0, 3, false, true, false},
    {"obs-text in a value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: caf\xc3\xa9\r\n\r\n", 0, 0, NL,
     false, true, false},
    /* refusals */
    {"CL + TE", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked"
     "\r\n\r\n", 0, 400, 0, false, false, false},
    {"TE + CL", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3"
     "\r\n\r\n", 0, 400, 0, false, false, false},
    {"differing CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
     0, 400, 0, false, false, false},
    {"CL with sign", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\n", 0, 400, 0, false,
     false, false},
    {"CL list", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\n", 0, 400, 0, false,
     false, false},
    {"CL too big", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 0,
     400, 0, false, false, false},
    {"TE gzip", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 0, 501,
     0, false, false, false},
    {"TE chunked twice", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
     "Transfer-Encoding: chunked\r\n\r\n", 0, 400, 0, false, false, false},
    {"TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 400, 0, false,
     false, false},
    {"TE with a space before the colon", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : "
     "chunked\r\n\r\n", 0, 400, 0, false, false, false},
    {"obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n", 0, 400, 0, false, false,
     false},
    {"NUL in a value", "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\0junk\r\n\r\n", 57,
     400, 0, false, false, false},
    {"bare CR", "GET / HTTP/1.1\r\nHost: x\rX-A: 1\r\n\r\n", 0, 400, 0, false, false, false},
    {"control byte", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01\r\n\r\n", 0, 400, 0, false, false,
     false},
    {"missing Host", "GET / HTTP/1.1\r\n\r\n", 0, 400, 0, false, false, false},
    {"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 0, 400, 0, false, false, false},
    {"HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 0, 505, 0, false, false, false},
    {"HTTP/1.2", "GET / HTTP/1.2\r\nHost: x\r\n\r\n", 0, 505, 0, false, false, false},
    {"bad version", "GET / HTTX/1.1\r\nHost: x\r\n\r\n", 0, 400, 0, false, false, false},
    {"two spaces", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 0, 400, 0, false, false, false},
    {"space in target", "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 0, 400, 0, false, false, false},
    {"Expect other", "POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n", 0, 417, 0, false,
     false, false},
    {"no colon", "GET / HTTP/1.1\r\nHost x\r\n\r\n", 0, 400, 0, false, false, false},
};

PG_TEST(test_heads)
{
    struct pg_http_parse_limits lim = {64, 8};

    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        const struct head_case *c = &heads[i];
        size_t len = c->len ? c->len : strlen(c->head);
        char *buf = malloc(len + 1);
        struct evkeyvalq h;
        struct pg_http_head out;
        char why[160] = "";
        int code;

        TAILQ_INIT(&h);
        memcpy(buf, c->head, len);
        buf[len] = '\0';
        code = pg_http_parse_head(buf, len, &lim, &h, &out, why, sizeof(why));
        if (code != c->code) {
            fprintf(stderr, "  %s: code %d (%s), want %d\n", c->name, code, why, c->code);
        }
        CHECK_INT(code, c->code);
        if (code == 0) {
            CHECK(out.content_length == c->content_length);
            CHECK(out.chunked == c->chunked);
            CHECK(out.keep_alive == c->keep_alive);
            CHECK(out.expect_continue == c->expect);
        } else {
            CHECK(why[0] != '\0');
        }
        {
            /* The allocation-free variant gives the same answer and the
             * same header list, its entries pointing into the buffer. */
            char *buf2 = malloc(len + 1);
            size_t lines = pg_http_head_lines(c->head, len);
            struct evkeyval *slots = calloc(lines + 1, sizeof(*slots));
            struct evkeyvalq h2;
            struct pg_http_head out2;
            char why2[160] = "";
            const struct evkeyval *a, *b;

            TAILQ_INIT(&h2);
            memcpy(buf2, c->head, len);
            buf2[len] = '\0';
            CHECK_INT(pg_http_parse_head_in(buf2, len, &lim, &h2, slots, lines, &out2, why2,
                                            sizeof(why2)),
                      code);
            CHECK_STR(why2, why);
            for (a = TAILQ_FIRST(&h), b = TAILQ_FIRST(&h2); code == 0 && a != NULL;
                 a = TAILQ_NEXT(a, next), b = TAILQ_NEXT(b, next)) {
                CHECK(b != NULL && b->key >= buf2 && b->key < buf2 + len);
                if (b == NULL) {
                    break;
                }
                CHECK_STR(b->key, a->key);
                CHECK_STR(b->value, a->value);
            }
            free(slots);
            free(buf2);
        }
        evhttp_clear_headers(&h);
        free(buf);
    }
}

PG_TEST(test_head_limits)
{
    struct pg_http_parse_limits lim = {16, 2};
    char a[] = "GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\nHost: x\r\n\r\n";
    char b[] = "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n\r\n";
    char c[] = "GET /p?q=1 HTTP/1.1\r\nHost: x\r\nX-Key:  v  \r\n\r\n";
    struct evkeyvalq h;
    struct pg_http_head out;
    char why[160];

    TAILQ_INIT(&h);
    CHECK_INT(pg_http_parse_head(a, strlen(a), &lim, &h, &out, why, sizeof(why)), 414);
    evhttp_clear_headers(&h);
    CHECK_INT(pg_http_parse_head(b, strlen(b), &lim, &h, &out, why, sizeof(why)), 431);
    evhttp_clear_headers(&h);
    CHECK_INT(pg_http_parse_head(c, strlen(c), &lim, &h, &out, why, sizeof(why)), 0);
    CHECK_STR(out.method, "GET");
    CHECK_STR(out.target, "/p?q=1");
    CHECK_STR(evhttp_find_header(&h, "x-key"), "v");
    evhttp_clear_headers(&h);
    {
        /* Fewer slots than header lines: refused, never written past. */
        char d[] = "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\n\r\n";
        struct evkeyval one[1];
        struct pg_http_parse_limits many = {16, 0};

        TAILQ_INIT(&h);
        CHECK_INT(pg_http_head_lines(d, strlen(d)), 4);
        CHECK_INT(pg_http_parse_head_in(d, strlen(d), &many, &h, one, 1, &out, why, sizeof(why)),
                  431);
        CHECK_STR(TAILQ_FIRST(&h)->key, "Host");
    }
}

/* Feeds @in in pieces of @step bytes; returns the body or NULL on error. */
static char *dechunk(const char *in, size_t len, size_t step, int *rc_out, size_t *rest)
{
    struct pg_http_chunked ch = {0};
    char *body = calloc(1, len + 1);
    size_t pos = 0, blen = 0;
    char why[128];
    enum pg_http_chunk_rc rc = PG_HTTP_CHUNK_MORE;

    while (pos < len && rc == PG_HTTP_CHUNK_MORE) {
        size_t n = len - pos < step ? len - pos : step;
        size_t used, data;

        rc = pg_http_chunked_feed(&ch, (const uint8_t *)in + pos, n, &used, &data, why,
                                  sizeof(why));
        if (data > 0) {
            memcpy(body + blen, in + pos, data);
            blen += data;
        }
        pos += used;
    }
    *rc_out = rc;
    *rest = len - pos;
    if (rc == PG_HTTP_CHUNK_ERROR) {
        free(body);
        return NULL;
    }
    return body;
}

PG_TEST(test_chunked)
{
    static const struct {
        const char *in;
        int rc;
        const char *body;
        size_t rest;
    } cases[] = {
        {"5\r\nhello\r\n0\r\n\r\n", PG_HTTP_CHUNK_DONE, "hello", 0},
        {"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT", PG_HTTP_CHUNK_DONE,
         "hello world", 4},
        {"A\r\n0123456789\r\n0\r\n\r\n", PG_HTTP_CHUNK_DONE, "0123456789", 0},
        {"5\r\nhel", PG_HTTP_CHUNK_MORE, "hel", 0},
        {"5\r\nhelloX\r\n", PG_HTTP_CHUNK_ERROR, NULL, 0},
        {"-5\r\nhello\r\n0\r\n\r\n", PG_HTTP_CHUNK_ERROR, NULL, 0},
        {"0x5\r\nhello\r\n0\r\n\r\n", PG_HTTP_CHUNK_ERROR, NULL, 0},
        {" 5\r\nhello\r\n0\r\n\r\n", PG_HTTP_CHUNK_ERROR, NULL, 0},
        {"5 \r\nhello\r\n0\r\n\r\n", PG_HTTP_CHUNK_ERROR, NULL, 0},
        {"\r\nhello\r\n", PG_HTTP_CHUNK_ERROR, NULL, 0},
        {"5\nhello\r\n", PG_HTTP_CHUNK_ERROR, NULL, 0},
        {"fffffffffffffffff\r\n", PG_HTTP_CHUNK_ERROR, NULL, 0},
        {"5\r\nhello\r\n0\r\nX: a\rb\r\n\r\n", PG_HTTP_CHUNK_ERROR, NULL, 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (size_t step = 1; step <= 64; step *= 4) {
            int rc;
            size_t rest;
            char *b = dechunk(cases[i].in, strlen(cases[i].in), step, &rc, &rest);

            if (rc != cases[i].rc) {
                fprintf(stderr, "  case %zu step %zu: rc %d want %d\n", i, step, rc, cases[i].rc);
            }
            CHECK_INT(rc, cases[i].rc);
            if (cases[i].body != NULL) {
                CHECK_STR(b, cases[i].body);
                CHECK_INT((int)rest, (int)cases[i].rest);
            }
            free(b);
        }
    }
}

PG_TEST(test_peer_tables)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000002)};
    struct pg_peer_key ka, kb;
    struct pg_peer_counts *t = pg_peer_counts_new();
    struct pg_peer_ratelimit *rl = calloc(1, sizeof(*rl));

    pg_peer_key_from_sockaddr((struct sockaddr *)&a, &ka);
    pg_peer_key_from_sockaddr((struct sockaddr *)&b, &kb);
    CHECK(pg_peer_counts_inc(t, &ka));
    CHECK(pg_peer_counts_inc(t, &ka));
    CHECK(pg_peer_counts_inc(t, &kb));
    CHECK_INT((int)pg_peer_counts_get(t, &ka), 2);
    pg_peer_counts_dec(t, &ka);
    pg_peer_counts_dec(t, &kb);
    CHECK_INT((int)pg_peer_counts_get(t, &ka), 1);
    CHECK_INT((int)pg_peer_counts_get(t, &kb), 0);
    pg_peer_counts_free(t);

    pg_peer_ratelimit_init(rl, 1.0, 3.0);
    for (int i = 0; i < 3; i++) {
        CHECK(!pg_peer_ratelimit_blocked(rl, &ka, 100.0));
        pg_peer_ratelimit_hit(rl, &ka, 100.0);
    }
    CHECK(pg_peer_ratelimit_blocked(rl, &ka, 100.0));
    CHECK(!pg_peer_ratelimit_blocked(rl, &kb, 100.0)); /* another peer is not affected */
    CHECK(!pg_peer_ratelimit_blocked(rl, &ka, 101.1)); /* refilled one per second */
    free(rl);
}

PG_TEST_MAIN(PG_CASE(test_heads), PG_CASE(test_head_limits), PG_CASE(test_chunked),
             PG_CASE(test_peer_tables))
