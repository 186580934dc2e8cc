/* SPDX-License-Identifier: Apache-2.0
 * The codec table: names and aliases found case-insensitively (and only
 * whole), unknown codings not found, sets and the lists messages print,
 * and each row's decoder removing its own framing and refusing another. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "codec/codec.h"
#include "codec/zstd.h"
#include "core/arena.h"
#include "pg_test.h"
#include "pg_test_zlib.h"

PG_TEST(test_codec_find)
{
    /* n < 0: strlen(name); want: the row's canonical name, NULL = unknown. */
    static const struct {
        const char *name;
        int n;
        const char *want;
    } cases[] = {
        {"", -1, "identity"},
        {"identity", -1, "identity"},
        {"IDENTITY", -1, "identity"},
        {"gzip", -1, "gzip"},
        {"GZip", -1, "gzip"},
        {"x-gzip", -1, "gzip"},
        {"X-GZIP", -1, "gzip"},
        {"deflate", -1, "deflate"},
        {"Deflate", -1, "deflate"},
        {"zlib", -1, "zlib"},
        {"ZLIB", -1, "zlib"},
        {"zstd", -1, "zstd"},
        {"ZSTD", -1, "zstd"},
        /* what pprofgate cannot decode */
        {"br", -1, NULL},
        {"snappy", -1, NULL},
        {"lz4", -1, NULL},
        {"compress", -1, NULL},
        /* whole names only: no prefixes, no padding (the parser trims) */
        {"gzi", -1, NULL},
        {"gzipx", -1, NULL},
        {"gzip ", -1, NULL},
        {"x-gzi", -1, NULL},
        {"identit", -1, NULL},
        /* the name is @name[0..n): a slice of a Content-Encoding list */
        {"gzip, identity", 4, "gzip"},
        {"deflate,zlib", 7, "deflate"},
        {"identity", 0, "identity"},
        {"gzip", 3, NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = cases[i].n < 0 ? strlen(cases[i].name) : (size_t)cases[i].n;
        const struct pg_codec *c = pg_codec_find(cases[i].name, n);

        if (cases[i].want == NULL) {
            CHECK(c == NULL);
        } else {
            CHECK(c != NULL);
            CHECK_STR(c != NULL ? c->name : NULL, cases[i].want);
        }
        if ((c == NULL) != (cases[i].want == NULL)) {
            fprintf(stderr, "  case %zu (\"%s\", %zu)\n", i, cases[i].name, n);
        }
    }
}

/* Every row: a bit of its own inside pg_codec_all(); a decoder unless it is
 * identity (the parser counts on that to drop identity layers). */
PG_TEST(test_codec_rows)
{
    static const char *const names[] = {"identity", "gzip", "deflate", "zlib", "zstd"};
    unsigned seen = 0;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const struct pg_codec *c = pg_codec_find(names[i], strlen(names[i]));
        unsigned bit;

        PG_REQUIRE(c != NULL);
        bit = pg_codec_bit(c);
        CHECK(bit != 0 && (bit & (bit - 1)) == 0);
        CHECK((seen & bit) == 0);
        CHECK((pg_codec_all() & bit) != 0);
        seen |= bit;
        CHECK((c->decode == NULL) == (strcmp(names[i], "identity") == 0));
    }
    CHECK_INT(seen, pg_codec_all());
    /* An alias is the same row as its name. */
    CHECK(pg_codec_find("x-gzip", 6) == pg_codec_find("gzip", 4));
    CHECK(pg_codec_find("", 0) == pg_codec_find("identity", 8));
}

static unsigned bit_of(const char *name)
{
    const struct pg_codec *c = pg_codec_find(name, strlen(name));

    return c != NULL ? pg_codec_bit(c) : 0;
}

PG_TEST(test_codec_list)
{
    const struct {
        unsigned set;
        bool aliases;
        const char *want;
    } cases[] = {
        {pg_codec_all(), false, "identity, gzip, deflate, zlib, zstd"},
        {pg_codec_all(), true, "identity, \"\", gzip, x-gzip, deflate, zlib, zstd"},
        {bit_of("gzip"), false, "gzip"},
        {bit_of("gzip"), true, "gzip, x-gzip"},
        {bit_of("zlib") | bit_of("identity"), false, "identity, zlib"},
        {bit_of("deflate"), true, "deflate"},
        {0, true, ""},
    };
    char buf[96];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pg_codec_list(cases[i].set, cases[i].aliases, buf, sizeof(buf));
        CHECK_STR(buf, cases[i].want);
    }
    pg_codec_list(pg_codec_all(), true, buf, 10); /* cut short, still terminated */
    CHECK(strlen(buf) < 10);
    buf[0] = 'x';
    pg_codec_list(pg_codec_all(), true, buf, 0); /* no room: untouched */
    CHECK(buf[0] == 'x');
}

/* Each decoding row removes its own framing (HTTP "deflate" is zlib's),
 * refuses the other one, and stops at the cap. */
PG_TEST(test_codec_decoders)
{
    static const struct {
        const char *name;
        int own_bits, other_bits;
    } cases[] = {
        {"gzip", PG_TEST_GZIP_BITS, PG_TEST_ZLIB_BITS},
        {"x-gzip", PG_TEST_GZIP_BITS, PG_TEST_ZLIB_BITS},
        {"deflate", PG_TEST_ZLIB_BITS, PG_TEST_GZIP_BITS},
        {"zlib", PG_TEST_ZLIB_BITS, PG_TEST_GZIP_BITS},
    };
    static const char text[] = "pprofgate pprofgate pprofgate pprofgate pprofgate pprofgate";
    const size_t tl = sizeof(text) - 1;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct pg_codec *c = pg_codec_find(cases[i].name, strlen(cases[i].name));
        struct pg_arena *arena = pg_arena_create(1u << 20);
        size_t own_len, other_len, out_len = 0;
        uint8_t *own = pg_test_squeeze((const uint8_t *)text, tl, cases[i].own_bits, &own_len);
        uint8_t *other =
            pg_test_squeeze((const uint8_t *)text, tl, cases[i].other_bits, &other_len);
        uint8_t *out = NULL;
        struct pg_status st;

        CHECK(c != NULL && c->decode != NULL);
        if (c != NULL && c->decode != NULL) {
            CHECK_INT(c->decode(arena, own, own_len, 4096, &out, &out_len, &st), PG_ERR_OK);
            CHECK(out_len == tl && out != NULL && memcmp(out, text, tl) == 0);
            pg_status_clear(&st);
            CHECK_INT(c->decode(arena, other, other_len, 4096, &out, &out_len, &st),
                      PG_ERR_MALFORMED);
            CHECK(st.msg[0] != '\0');
            CHECK_INT(c->decode(arena, own, own_len, tl - 1, &out, &out_len, &st), PG_ERR_LIMIT);
        }
        free(own);
        free(other);
        pg_arena_destroy(arena);
    }
}

/* zstd: what pg_zstd_compress makes decodes back at every level; the cap
 * holds, also for frames without a content size (two frames back to
 * back); garbage, a truncated frame and gzip bytes are MALFORMED. */
PG_TEST(test_codec_zstd)
{
    const struct pg_codec *c = pg_codec_find("zstd", 4);
    static const int levels[] = {-5, 0, 1, 3, 19, 99};
    static const uint8_t junk[] = {0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3};
    size_t n = 200000;
    uint8_t *text = malloc(n);

    PG_REQUIRE(c != NULL && c->decode != NULL && text != NULL);
    for (size_t i = 0; i < n; i++) {
        text[i] = (uint8_t)("pprofgate zstd "[i % 15] + (i / 4096) % 3);
    }
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        struct pg_arena *arena = pg_arena_create(8u << 20);
        uint8_t *z = NULL, *out = NULL, *two;
        size_t zl = 0, out_len = 0;
        struct pg_status st;

        pg_status_clear(&st);
        CHECK_INT(pg_zstd_compress(text, n, levels[i], &z, &zl, &st), PG_ERR_OK);
        PG_REQUIRE(z != NULL);
        CHECK(zl < n / 10);
        CHECK_INT(c->decode(arena, z, zl, n, &out, &out_len, &st), PG_ERR_OK);
        CHECK(out_len == n && memcmp(out, text, n) == 0);
        CHECK_INT(c->decode(arena, z, zl, n - 1, &out, &out_len, &st), PG_ERR_LIMIT);
        CHECK_INT(c->decode(arena, z, zl / 2, n, &out, &out_len, &st), PG_ERR_MALFORMED);
        /* two frames: the first frame's size no longer bounds the output */
        two = malloc(2 * zl);
        PG_REQUIRE(two != NULL);
        memcpy(two, z, zl);
        memcpy(two + zl, z, zl);
        CHECK_INT(c->decode(arena, two, 2 * zl, 2 * n, &out, &out_len, &st), PG_ERR_OK);
        CHECK(out_len == 2 * n && memcmp(out + n, text, n) == 0);
        CHECK_INT(c->decode(arena, two, 2 * zl, 2 * n - 1, &out, &out_len, &st), PG_ERR_LIMIT);
        free(two);
        free(z);
        pg_arena_destroy(arena);
    }
    {
        struct pg_arena *arena = pg_arena_create(1u << 20);
        uint8_t *out = NULL;
        size_t out_len = 0;
        struct pg_status st;
        size_t gl = 0;
        uint8_t *gz = pg_test_squeeze(text, 100, PG_TEST_GZIP_BITS, &gl);

        pg_status_clear(&st);
        CHECK_INT(c->decode(arena, junk, sizeof(junk), 4096, &out, &out_len, &st),
                  PG_ERR_MALFORMED);
        CHECK(strstr(st.msg, "zstd") != NULL);
        CHECK_INT(c->decode(arena, gz, gl, 4096, &out, &out_len, &st), PG_ERR_MALFORMED);
        CHECK_INT(c->decode(arena, (const uint8_t *)"", 0, 4096, &out, &out_len, &st),
                  PG_ERR_MALFORMED);
        free(gz);
        pg_arena_destroy(arena);
    }
    free(text);
}

PG_TEST_MAIN(PG_CASE(test_codec_find), PG_CASE(test_codec_rows), PG_CASE(test_codec_list),
             PG_CASE(test_codec_decoders), PG_CASE(test_codec_zstd))
