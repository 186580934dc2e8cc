/* SPDX-License-Identifier: Apache-2.0
 * gRPC wire helpers: grpc-timeout formatting/parsing, status code names,
 * HTTP->gRPC mapping and the OTLP retry rule, grpc-message percent decoding,
 * base64, google.rpc.Status/RetryInfo decoding, the length-prefixed reader
 * (fed at every split point) and gzip with its cap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/gzip.h"
#include "grpc/grpc_wire.h"
#include "pg_test.h"

PG_TEST(timeout_format)
{
    static const struct {
        int64_t ns;
        const char *want;
    } cases[] = {
        {1, "1n"},
        {0, "1n"},
        {-5, "1n"},
        {99999999, "99999999n"},
        {100000000, "100000u"},
        {5000000000LL, "5000000u"},
        {300000000000LL, "300000m"},
        {123456789012LL, "123457m"}, /* 9 digits in n and u: ms, rounded up */
        {3600000000000LL * 24 * 365 * 100, "52560000M"},
        {INT64_MAX, "2562048H"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[16];
        int64_t back = 0;
        size_t n = pg_grpc_timeout_format(cases[i].ns, buf, sizeof(buf));

        CHECK_STR(buf, cases[i].want);
        CHECK_INT(n, strlen(buf));
        CHECK(n <= 9);
        if (cases[i].ns < INT64_MAX / 2) {
            /* Round trip (INT64_MAX rounded up no longer fits an int64). */
            CHECK(pg_grpc_timeout_parse(buf, n, &back));
            CHECK(back >= (cases[i].ns > 0 ? cases[i].ns : 1));
        }
    }
}

PG_TEST(timeout_parse_rejects)
{
    static const char *bad[] = {"", "5", "S", "123456789S", "5x", "-5S", "5 S"};
    int64_t v;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(!pg_grpc_timeout_parse(bad[i], strlen(bad[i]), &v));
    }
    CHECK(pg_grpc_timeout_parse("2M", 2, &v));
    CHECK_INT(v, 120000000000LL);
}

PG_TEST(codes_and_retry_rule)
{
    static const struct {
        int code;
        bool retry_plain;
        bool retry_with_info;
        const char *name;
    } cases[] = {
        {0, false, false, "OK"},
        {1, true, true, "CANCELLED"},
        {2, false, false, "UNKNOWN"},
        {3, false, false, "INVALID_ARGUMENT"},
        {4, true, true, "DEADLINE_EXCEEDED"},
        {5, false, false, "NOT_FOUND"},
        {6, false, false, "ALREADY_EXISTS"},
        {7, false, false, "PERMISSION_DENIED"},
        {8, false, true, "RESOURCE_EXHAUSTED"},
        {9, false, false, "FAILED_PRECONDITION"},
        {10, true, true, "ABORTED"},
        {11, true, true, "OUT_OF_RANGE"},
        {12, false, false, "UNIMPLEMENTED"},
        {13, false, false, "INTERNAL"},
        {14, true, true, "UNAVAILABLE"},
        {15, true, true, "DATA_LOSS"},
        {16, false, false, "UNAUTHENTICATED"},
        {17, false, false, "UNKNOWN_CODE"},
        {-1, false, false, "UNKNOWN_CODE"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHECK_INT(pg_grpc_code_retryable(cases[i].code, false), cases[i].retry_plain);
        CHECK_INT(pg_grpc_code_retryable(cases[i].code, true), cases[i].retry_with_info);
        CHECK_STR(pg_grpc_code_name(cases[i].code), cases[i].name);
    }
}

PG_TEST(http_status_mapping)
{
    static const int cases[][2] = {
        {400, PG_GRPC_INTERNAL}, {401, PG_GRPC_UNAUTHENTICATED}, {403, PG_GRPC_PERMISSION_DENIED},
        {404, PG_GRPC_UNIMPLEMENTED}, {429, PG_GRPC_UNAVAILABLE}, {502, PG_GRPC_UNAVAILABLE},
        {503, PG_GRPC_UNAVAILABLE}, {504, PG_GRPC_UNAVAILABLE}, {500, PG_GRPC_UNKNOWN},
        {200, PG_GRPC_UNKNOWN},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHECK_INT(pg_grpc_code_from_http(cases[i][0]), cases[i][1]);
    }
}

PG_TEST(status_parse)
{
    int code = -1;

    CHECK(pg_grpc_status_parse("14", 2, &code));
    CHECK_INT(code, 14);
    CHECK(!pg_grpc_status_parse("", 0, &code));
    CHECK(!pg_grpc_status_parse("1a", 2, &code));
    CHECK(!pg_grpc_status_parse("99999999999", 11, &code));
}

PG_TEST(message_decode)
{
    static const char *cases[][2] = {
        {"plain", "plain"},
        {"a%20b", "a b"},
        {"100%25", "100%"},
        {"bad%zzescape", "bad%zzescape"},
        {"trail%2", "trail%2"},
        {"%E2%9C%93", "\xe2\x9c\x93"},
        {"%", "%"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        size_t n = pg_grpc_message_decode(cases[i][0], strlen(cases[i][0]), out);

        CHECK_STR(out, cases[i][1]);
        CHECK_INT(n, strlen(cases[i][1]));
    }
}

/* google.rpc.Status{code 8, message "m", details [Any{RetryInfo{1.5s}}, Any{other}]}. */
static const uint8_t status_with_retry[] = {
    0x08, 0x08, 0x12, 0x01, 'm',
    0x1a, 0x36,
    0x0a, 0x28, 't', 'y', 'p', 'e', '.', 'g', 'o', 'o', 'g', 'l', 'e', 'a', 'p', 'i', 's', '.', 'c',
    'o', 'm', '/', 'g', 'o', 'o', 'g', 'l', 'e', '.', 'r', 'p', 'c', '.', 'R', 'e', 't', 'r', 'y',
    'I', 'n', 'f', 'o',
    0x12, 0x0a, 0x0a, 0x08, 0x08, 0x01, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01,
    0x1a, 0x07, 0x0a, 0x01, 'x', 0x12, 0x02, 0x08, 0x01,
};

PG_TEST(status_details)
{
    struct pg_grpc_status_details d;

    CHECK(pg_grpc_status_details_parse(status_with_retry, sizeof(status_with_retry), &d));
    CHECK_INT(d.code, 8);
    CHECK(d.has_retry_info);
    CHECK_INT(d.retry_delay_ns, 1500000000LL);
    /* Without the RetryInfo detail. */
    CHECK(pg_grpc_status_details_parse(status_with_retry, 5, &d));
    CHECK(!d.has_retry_info);
    /* Every truncation is either rejected or parsed without reading past the end. */
    for (size_t n = 0; n < sizeof(status_with_retry); n++) {
        uint8_t *copy = malloc(n ? n : 1);

        memcpy(copy, status_with_retry, n);
        (void)pg_grpc_status_details_parse(copy, n, &d);
        free(copy);
    }
}

PG_TEST(reader_all_split_points)
{
    uint8_t msg[5 + 7];
    struct pg_status st;

    pg_grpc_prefix_write(msg, false, 7);
    memcpy(msg + 5, "\x0a\x05hello", 7);
    for (size_t cut = 0; cut <= sizeof(msg); cut++) {
        struct pg_grpc_reader r;

        pg_grpc_reader_init(&r, 100);
        pg_status_clear(&st);
        CHECK_INT(pg_grpc_reader_feed(&r, msg, cut, &st), PG_ERR_OK);
        CHECK_INT(pg_grpc_reader_done(&r), cut == sizeof(msg));
        CHECK_INT(pg_grpc_reader_feed(&r, msg + cut, sizeof(msg) - cut, &st), PG_ERR_OK);
        CHECK(pg_grpc_reader_done(&r));
        CHECK(!pg_grpc_reader_partial(&r));
        CHECK_INT(r.got, 7);
        CHECK(memcmp(r.buf, "\x0a\x05hello", 7) == 0);
        pg_grpc_reader_free(&r);
    }
}

PG_TEST(reader_errors)
{
    struct pg_grpc_reader r;
    struct pg_status st;
    uint8_t two[10];
    uint8_t big[5];
    uint8_t flag[5] = {2, 0, 0, 0, 0};

    pg_grpc_prefix_write(two, false, 0);
    pg_grpc_prefix_write(two + 5, false, 0);
    pg_grpc_reader_init(&r, 100);
    CHECK_INT(pg_grpc_reader_feed(&r, two, sizeof(two), &st), PG_ERR_MALFORMED);
    pg_grpc_reader_free(&r);

    pg_grpc_prefix_write(big, true, 101);
    pg_grpc_reader_init(&r, 100);
    CHECK_INT(pg_grpc_reader_feed(&r, big, sizeof(big), &st), PG_ERR_LIMIT);
    pg_grpc_reader_free(&r);

    pg_grpc_reader_init(&r, 100);
    CHECK_INT(pg_grpc_reader_feed(&r, flag, sizeof(flag), &st), PG_ERR_MALFORMED);
    pg_grpc_reader_free(&r);

    /* A cut message is partial, not done. */
    pg_grpc_prefix_write(big, false, 10);
    pg_grpc_reader_init(&r, 100);
    CHECK_INT(pg_grpc_reader_feed(&r, big, sizeof(big), &st), PG_ERR_OK);
    CHECK(!pg_grpc_reader_done(&r));
    CHECK(pg_grpc_reader_partial(&r));
    pg_grpc_reader_free(&r);
}

PG_TEST(gzip_roundtrip_and_cap)
{
    uint8_t in[10000];
    uint8_t *z = NULL;
    uint8_t *out = NULL;
    size_t zn = 0;
    size_t on = 0;
    struct pg_status st;

    for (size_t i = 0; i < sizeof(in); i++) {
        in[i] = (uint8_t)(i % 17);
    }
    CHECK_INT(pg_gzip_compress(NULL, in, sizeof(in), PG_GZIP_LEVEL_DEFAULT, &z, &zn, &st), PG_ERR_OK);
    CHECK(zn < sizeof(in) / 4);
    CHECK(z[0] == 0x1f && z[1] == 0x8b);
    CHECK_INT(pg_gzip_decompress(z, zn, sizeof(in), &out, &on, &st), PG_ERR_OK);
    CHECK_INT(on, sizeof(in));
    CHECK(out != NULL && memcmp(out, in, sizeof(in)) == 0);
    free(out);
    CHECK_INT(pg_gzip_decompress(z, zn, sizeof(in) - 1, &out, &on, &st), PG_ERR_LIMIT);
    CHECK_INT(pg_gzip_decompress(z, zn / 2, sizeof(in), &out, &on, &st), PG_ERR_MALFORMED);
    free(z);

    /* The arena form (the heap sampler's) gives the same stream. */
    struct pg_arena *a = pg_arena_create(0);
    uint8_t *za = NULL;
    size_t zan = 0;
    CHECK(a != NULL);
    CHECK_INT(pg_gzip_compress(a, in, sizeof(in), PG_GZIP_LEVEL_DEFAULT, &za, &zan, &st), PG_ERR_OK);
    CHECK(za != NULL && za[0] == 0x1f && za[1] == 0x8b);
    CHECK_INT(pg_gzip_decompress(za, zan, sizeof(in), &out, &on, &st), PG_ERR_OK);
    CHECK(on == sizeof(in) && memcmp(out, in, sizeof(in)) == 0);
    free(out);
    pg_arena_destroy(a);
}

PG_TEST(message_encode_roundtrip)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain text", "plain text"},
        {"100% done", "100%25 done"},
        {"line\nbreak", "line%0Abreak"},
        {"caf\xc3\xa9", "caf%C3%A9"},
        {"", ""},
    };
    char enc[64], dec[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = pg_grpc_message_encode(cases[i].in, enc, sizeof(enc));

        CHECK_STR(enc, cases[i].want);
        CHECK_INT(n, strlen(cases[i].want));
        pg_grpc_message_decode(enc, n, dec);
        CHECK_STR(dec, cases[i].in);
    }
    /* Cut short at a whole escape, always terminated. */
    CHECK_INT(pg_grpc_message_encode("ab%", enc, 5), 2);
    CHECK_STR(enc, "ab");
}

PG_TEST(status_details_encode_roundtrip)
{
    static const int64_t delays[] = {0, 1, 999999999, 1000000000, 1500000000, 3600000000000LL};
    uint8_t buf[256];
    struct pg_grpc_status_details d;

    for (size_t i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
        size_t n = pg_grpc_status_details_encode(PG_GRPC_UNAVAILABLE, "busy", delays[i], buf,
                                                 sizeof(buf));

        CHECK(n > 0);
        CHECK(pg_grpc_status_details_parse(buf, n, &d));
        CHECK_INT(d.code, PG_GRPC_UNAVAILABLE);
        CHECK(d.has_retry_info);
        CHECK_INT(d.retry_delay_ns, delays[i]);
    }
    /* No delay: a bare Status, no RetryInfo. */
    {
        size_t n = pg_grpc_status_details_encode(PG_GRPC_RESOURCE_EXHAUSTED, NULL, -1, buf,
                                                 sizeof(buf));

        CHECK(n > 0);
        CHECK(pg_grpc_status_details_parse(buf, n, &d));
        CHECK_INT(d.code, PG_GRPC_RESOURCE_EXHAUSTED);
        CHECK(!d.has_retry_info);
    }
    /* Too small a buffer: 0, nothing claimed. */
    CHECK_INT(pg_grpc_status_details_encode(PG_GRPC_UNAVAILABLE, "busy", 5, buf, 10), 0);
}

PG_TEST(reader_prefix_before_buffer)
{
    struct pg_grpc_reader r;
    struct pg_status st;
    uint8_t prefix[5];

    pg_grpc_reader_init(&r, 100);
    pg_grpc_prefix_write(prefix, false, 3);
    CHECK_INT(pg_grpc_reader_prefix_want(&r), 5);
    CHECK_INT(pg_grpc_reader_feed(&r, prefix, 2, &st), PG_ERR_OK);
    CHECK_INT(pg_grpc_reader_prefix_want(&r), 3);
    CHECK_INT(pg_grpc_reader_feed(&r, prefix + 2, 3, &st), PG_ERR_OK);
    /* The declared length is known, nothing is buffered yet. */
    CHECK_INT(pg_grpc_reader_prefix_want(&r), 0);
    CHECK_INT(r.need, 3);
    CHECK(r.buf == NULL);
    CHECK_INT(pg_grpc_reader_feed(&r, (const uint8_t *)"abc", 3, &st), PG_ERR_OK);
    CHECK(pg_grpc_reader_done(&r));
    CHECK(r.buf != NULL && memcmp(r.buf, "abc", 3) == 0);
    pg_grpc_reader_free(&r);
    /* A zero-length message completes with its prefix. */
    pg_grpc_reader_init(&r, 100);
    pg_grpc_prefix_write(prefix, false, 0);
    CHECK_INT(pg_grpc_reader_feed(&r, prefix, 5, &st), PG_ERR_OK);
    CHECK(pg_grpc_reader_done(&r));
    CHECK_INT(r.got, 0);
    pg_grpc_reader_free(&r);
}

PG_TEST_MAIN(PG_CASE(timeout_format), PG_CASE(timeout_parse_rejects), PG_CASE(codes_and_retry_rule),
             PG_CASE(http_status_mapping), PG_CASE(status_parse), PG_CASE(message_decode),
             PG_CASE(status_details), PG_CASE(reader_all_split_points),
             PG_CASE(reader_errors), PG_CASE(gzip_roundtrip_and_cap),
             PG_CASE(message_encode_roundtrip), PG_CASE(status_details_encode_roundtrip),
             PG_CASE(reader_prefix_before_buffer))
