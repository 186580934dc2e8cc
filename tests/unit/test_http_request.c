/* SPDX-License-Identifier: Apache-2.0
 * The pprof receiver's socket-free helpers: Content-Encoding lists, the
 * capped decoding chain (including a gzip bomb), headers -> metadata with
 * repeated lines and the host fallback, peer formatting, header checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "pg_test.h"
#include "pg_test_zlib.h"
#include "codec/codec.h"
#include "http/http_request.h"

/* The codec set of the comma-separated @names; NULL = every coding. */
static unsigned set_of(const char *names)
{
    unsigned set = 0;

    if (names == NULL) {
        return pg_codec_all();
    }
    for (const char *p = names;; p++) {
        const char *e = strchr(p, ',');
        size_t n = e != NULL ? (size_t)(e - p) : strlen(p);
        const struct pg_codec *c = pg_codec_find(p, n);

        CHECK(c != NULL); /* a typo in a case below */
        set |= c != NULL ? pg_codec_bit(c) : 0;
        if (e == NULL) {
            return set;
        }
        p = e;
    }
}

PG_TEST(test_parse_content_encoding)
{
    /* allowed: codings by name, NULL = all; c0, c1: the rows parsed (NULL = none). */
    static const struct {
        const char *value;
        const char *allowed;
        enum pg_err want;
        size_t n;
        const char *c0, *c1;
        const char *msg_part;
    } cases[] = {
        {NULL, NULL, PG_ERR_OK, 0, NULL, NULL, NULL},
        {"", NULL, PG_ERR_OK, 0, NULL, NULL, NULL},
        {"identity", NULL, PG_ERR_OK, 0, NULL, NULL, NULL},
        {"gzip", NULL, PG_ERR_OK, 1, "gzip", NULL, NULL},
        {"GZIP", NULL, PG_ERR_OK, 1, "gzip", NULL, NULL},
        {"x-gzip", "gzip", PG_ERR_OK, 1, "gzip", NULL, NULL},
        {" gzip ,\tdeflate ", NULL, PG_ERR_OK, 2, "gzip", "deflate", NULL},
        {"gzip, identity", NULL, PG_ERR_OK, 1, "gzip", NULL, NULL},
        {"zlib", NULL, PG_ERR_OK, 1, "zlib", NULL, NULL},
        {"br", NULL, PG_ERR_UNSUPPORTED, 0, NULL, NULL,
         "unsupported Content-Encoding \"br\" (supported: identity, gzip, deflate, zlib, zstd)"},
        {"snappy", NULL, PG_ERR_UNSUPPORTED, 0, NULL, NULL, "\"snappy\" (supported: identity"},
        {"zstd", NULL, PG_ERR_OK, 1, "zstd", NULL, NULL},
        {"gzip", "identity", PG_ERR_UNSUPPORTED, 0, NULL, NULL, "(supported: identity)"},
        {"deflate", "zlib", PG_ERR_UNSUPPORTED, 0, NULL, NULL, "(supported: zlib)"},
        {"", "gzip", PG_ERR_UNSUPPORTED, 0, NULL, NULL, "\"\" (supported: gzip)"},
        {"gzip,gzip,gzip,gzip,gzip", NULL, PG_ERR_LIMIT, 0, NULL, NULL, "layers"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL, PG_ERR_UNSUPPORTED, 0,
         NULL, NULL, "unsupported"},
        {"\x01\x7f" "bad", NULL, PG_ERR_UNSUPPORTED, 0, NULL, NULL, "\"??bad\""},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_http_codings c;
        struct pg_status st;
        enum pg_err err;

        memset(&c, 0, sizeof(c));
        pg_status_clear(&st);
        err = pg_http_parse_content_encoding(cases[i].value, set_of(cases[i].allowed), &c, &st);
        CHECK_INT(err, cases[i].want);
        if (err != cases[i].want) {
            fprintf(stderr, "  case %zu (%s): %s\n", i, cases[i].value ? cases[i].value : "NULL",
                    st.msg);
        }
        if (err == PG_ERR_OK) {
            CHECK_INT(c.n, cases[i].n);
            if (c.n > 0) {
                CHECK_STR(c.v[0]->name, cases[i].c0);
            }
            if (c.n > 1) {
                CHECK_STR(c.v[1]->name, cases[i].c1);
            }
        } else if (cases[i].msg_part != NULL) {
            CHECK(strstr(st.msg, cases[i].msg_part) != NULL);
            if (strstr(st.msg, cases[i].msg_part) == NULL) {
                fprintf(stderr, "  case %zu message: %s\n", i, st.msg);
            }
        }
    }
}

PG_TEST(test_decode_chain)
{
    const char *text = "hello pprofgate, hello pprofgate, hello pprofgate";
    size_t tl = strlen(text), g1_len, g2_len, z_len;
    uint8_t *g1 = pg_test_squeeze((const uint8_t *)text, tl, PG_TEST_GZIP_BITS, &g1_len);
    uint8_t *g2 = pg_test_squeeze(g1, g1_len, PG_TEST_GZIP_BITS, &g2_len);
    uint8_t *z = pg_test_squeeze((const uint8_t *)text, tl, PG_TEST_ZLIB_BITS, &z_len);
    struct pg_arena *arena = pg_arena_create(1 << 20);
    struct pg_http_codings c;
    struct pg_status st;
    const uint8_t *out;
    size_t out_len, inflated = 0;

    /* gzip, gzip: a gzip'd file sent with Content-Encoding: gzip, gzip */
    memset(&c, 0, sizeof(c));
    CHECK_INT(pg_http_parse_content_encoding("gzip, gzip", pg_codec_all(), &c, &st), PG_ERR_OK);
    CHECK_INT(pg_http_decode_body(arena, g2, g2_len, &c, 4096, &out, &out_len, &inflated, &st),
              PG_ERR_OK);
    CHECK_INT(out_len, tl);
    CHECK(out != NULL && memcmp(out, text, tl) == 0);
    CHECK_INT(inflated, g1_len + tl);

    /* deflate = zlib framing */
    memset(&c, 0, sizeof(c));
    pg_http_parse_content_encoding("deflate", pg_codec_all(), &c, &st);
    CHECK_INT(pg_http_decode_body(arena, z, z_len, &c, 4096, &out, &out_len, NULL, &st), PG_ERR_OK);
    CHECK(out_len == tl && memcmp(out, text, tl) == 0);

    /* identity hands back the input itself */
    memset(&c, 0, sizeof(c));
    CHECK_INT(pg_http_decode_body(arena, z, z_len, &c, 4096, &out, &out_len, NULL, &st), PG_ERR_OK);
    CHECK(out == z && out_len == z_len);

    /* gzip header on a zlib body */
    memset(&c, 0, sizeof(c));
    pg_http_parse_content_encoding("gzip", pg_codec_all(), &c, &st);
    CHECK_INT(pg_http_decode_body(arena, z, z_len, &c, 4096, &out, &out_len, NULL, &st),
              PG_ERR_MALFORMED);
    CHECK(st.msg[0] != '\0');
    /* truncated gzip */
    CHECK_INT(pg_http_decode_body(arena, g1, g1_len / 2, &c, 4096, &out, &out_len, NULL, &st),
              PG_ERR_MALFORMED);
    /* layer over the cap */
    CHECK_INT(pg_http_decode_body(arena, g1, g1_len, &c, 10, &out, &out_len, NULL, &st),
              PG_ERR_LIMIT);
    free(g1);
    free(g2);
    free(z);
    pg_arena_destroy(arena);
}

/* 16 MiB of zeros gzip to ~16 KiB; with a 1 MiB cap the arena stays small. */
PG_TEST(test_gzip_bomb)
{
    size_t big = 16u << 20, g_len;
    uint8_t *zeros = calloc(1, big);
    uint8_t *g = pg_test_squeeze(zeros, big, PG_TEST_GZIP_BITS, &g_len);
    struct pg_arena *arena = pg_arena_create(64u << 20);
    struct pg_http_codings c = {1, {pg_codec_find("gzip", 4)}};
    struct pg_status st;
    const uint8_t *out;
    size_t out_len;

    CHECK(g_len < 64 * 1024);
    CHECK_INT(pg_http_decode_body(arena, g, g_len, &c, 1u << 20, &out, &out_len, NULL, &st),
              PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "max_request_body_size") != NULL);
    CHECK(pg_arena_used(arena) < (4u << 20));
    free(zeros);
    free(g);
    pg_arena_destroy(arena);
}

PG_TEST(test_metadata_from_headers)
{
    struct evkeyvalq h;
    struct pg_arena *arena = pg_arena_create(0);
    struct pg_metadata md = {0};
    struct pg_status st;

    TAILQ_INIT(&h);
    evhttp_add_header(&h, "Content-Type", "application/octet-stream");
    evhttp_add_header(&h, "X-Scope-OrgID", "t1");
    evhttp_add_header(&h, "x-scope-orgid", "t2");
    evhttp_add_header(&h, "Otel-Resource-Attributes", "service.name=checkout,a=b");
    CHECK_INT(pg_http_metadata_from_headers(arena, &h, "gw:4040", &md, &st), PG_ERR_OK);
    CHECK_INT(md.n, 5);
    CHECK_STR(md.entries[0].key, "content-type");
    CHECK_STR(md.entries[1].key, "x-scope-orgid");
    CHECK_STR(md.entries[2].key, "x-scope-orgid");
    CHECK_INT(pg_metadata_count(&md, "X-Scope-OrgID"), 2);
    CHECK_STR(pg_metadata_get(&md, "X-SCOPE-ORGID", 0), "t1");
    CHECK_STR(pg_metadata_get(&md, "x-scope-orgid", 1), "t2");
    CHECK(pg_metadata_get(&md, "x-scope-orgid", 2) == NULL);
    CHECK_STR(pg_metadata_get(&md, "otel-resource-attributes", 0), "service.name=checkout,a=b");
    CHECK_STR(pg_metadata_get(&md, "host", 0), "gw:4040");

    /* A Host header wins over the fallback and is not duplicated. */
    evhttp_add_header(&h, "Host", "real:1");
    CHECK_INT(pg_http_metadata_from_headers(arena, &h, "gw:4040", &md, &st), PG_ERR_OK);
    CHECK_INT(pg_metadata_count(&md, "host"), 1);
    CHECK_STR(pg_metadata_get(&md, "host", 0), "real:1");
    evhttp_clear_headers(&h);

    evhttp_clear_headers(&h);
    /* Non-ASCII bytes: valid UTF-8 kept as sent, invalid bytes replaced,
     * keys lower-cased (ASCII letters only). */
    TAILQ_INIT(&h);
    evhttp_add_header(&h, "X-Caf\xc3\xa9", "caf\xc3\xa9");
    evhttp_add_header(&h, "X-Bad", "a\xff" "b");
    evhttp_add_header(&h, "X-Long-Ascii", "0123456789abcdefghijklmnopqrstuvwxyz");
    CHECK_INT(pg_http_metadata_from_headers(arena, &h, NULL, &md, &st), PG_ERR_OK);
    CHECK_INT(md.n, 3);
    CHECK_STR(md.entries[0].key, "x-caf\xc3\xa9");
    CHECK_STR(md.entries[0].value, "caf\xc3\xa9");
    CHECK_STR(md.entries[1].value, "a\xef\xbf\xbd" "b");
    CHECK_STR(md.entries[2].key, "x-long-ascii");
    CHECK_STR(md.entries[2].value, "0123456789abcdefghijklmnopqrstuvwxyz");
    CHECK(md.entries[2].value != TAILQ_LAST(&h, evkeyvalq)->value); /* a copy */
    evhttp_clear_headers(&h);
    TAILQ_INIT(&h);

    /* Lower-casing eight bytes a step: only A-Z change, the bytes around
     * them ('@', '[', '`', '{') and a non-ASCII tail stay as sent. */
    evhttp_add_header(&h, "@ABCDEFGHIJKLMNOPQRSTUVWXYZ[`az{~0189-_.Caf\xc3\x89", "v");
    CHECK_INT(pg_http_metadata_from_headers(arena, &h, NULL, &md, &st), PG_ERR_OK);
    CHECK_STR(md.entries[0].key, "@abcdefghijklmnopqrstuvwxyz[`az{~0189-_.caf\xc3\x89");
    evhttp_clear_headers(&h);
    TAILQ_INIT(&h);

    /* More headers than the length memo holds: every one copied whole. */
    for (int k = 0; k < 40; k++) {
        char key[16], val[24];

        snprintf(key, sizeof(key), "X-H%d", k);
        snprintf(val, sizeof(val), "value-%d", k * 7);
        evhttp_add_header(&h, key, val);
    }
    CHECK_INT(pg_http_metadata_from_headers(arena, &h, "gw:1", &md, &st), PG_ERR_OK);
    CHECK_INT(md.n, 41);
    CHECK_STR(md.entries[39].key, "x-h39");
    CHECK_STR(md.entries[39].value, "value-273");
    CHECK_STR(md.entries[40].value, "gw:1");
    evhttp_clear_headers(&h);
    TAILQ_INIT(&h);

    /* No headers and no host: empty metadata. */
    CHECK_INT(pg_http_metadata_from_headers(arena, &h, NULL, &md, &st), PG_ERR_OK);
    CHECK_INT(md.n, 0);
    pg_arena_destroy(arena);

    /* An arena too small for the copy reports LIMIT, not a crash. */
    arena = pg_arena_create(64);
    TAILQ_INIT(&h);
    evhttp_add_header(&h, "X-Long", "0123456789012345678901234567890123456789012345678901234567890123456789");
    CHECK_INT(pg_http_metadata_from_headers(arena, &h, NULL, &md, &st), PG_ERR_LIMIT);
    evhttp_clear_headers(&h);
    pg_arena_destroy(arena);
}

PG_TEST(test_peer_and_header_checks)
{
    char peer[64];

    pg_http_hostport(peer, sizeof(peer), "127.0.0.1", 5678);
    CHECK_STR(peer, "127.0.0.1:5678");
    pg_http_hostport(peer, sizeof(peer), "::1", 80);
    CHECK_STR(peer, "[::1]:80");
    pg_http_hostport(peer, sizeof(peer), "unix", 0);
    CHECK_STR(peer, "unix:0");
    {
        /* snprintf's contract: the full length returned, the output cut
         * to the buffer and always terminated. */
        static const struct {
            const char *addr;
            unsigned port;
        } hp[] = {{"127.0.0.1", 5678}, {"::1", 80}, {"unix", 0}, {"", 65535},
                  {"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", 4294967295u}};

        for (size_t i = 0; i < sizeof(hp) / sizeof(hp[0]); i++) {
            for (size_t size = 0; size < 64; size++) {
                char want[64], got[64];
                int wn = snprintf(want, size, strchr(hp[i].addr, ':') ? "[%s]:%u" : "%s:%u",
                                  hp[i].addr, hp[i].port);
                int gn;

                memset(got, 'x', sizeof(got));
                gn = pg_http_hostport(size ? got : NULL, size, hp[i].addr, hp[i].port);
                CHECK_INT(gn, wn);
                if (size > 0) {
                    CHECK_STR(got, want);
                }
                CHECK(size == 0 || (size_t)gn + 1 < size || got[size - 1] == '\0');
                CHECK(size >= sizeof(got) || got[size] == 'x' || size == 0);
            }
        }
    }
    CHECK(pg_http_header_ok("X-Gateway", "pprofgate"));
    CHECK(pg_http_header_ok("Strict-Transport-Security", "max-age=1"));
    CHECK(!pg_http_header_ok("Bad Header", "x"));
    CHECK(!pg_http_header_ok("X-Inject", "a\r\nSet-Cookie: x"));
    CHECK(!pg_http_header_ok("", "x"));
}

PG_TEST_MAIN(PG_CASE(test_parse_content_encoding),
             PG_CASE(test_decode_chain), PG_CASE(test_gzip_bomb),
             PG_CASE(test_metadata_from_headers), PG_CASE(test_peer_and_header_checks))
