/* SPDX-License-Identifier: Apache-2.0
 * core/base64.c: both decoding dialects and the encoder, table-driven. */
#include "pg_test.h"

#include "core/base64.h"

PG_TEST(test_decode_table)
{
    static const struct {
        const char *in;
        long strict; /* decoded length, -1 = refused */
        long lenient;
        const char *want;
    } cases[] = {
        {"", 0, 0, ""},
        {"aGVsbG8=", 5, 5, "hello"},
        {"aGVsbG8", -1, 5, "hello"},      /* padding optional only when lenient */
        {"aGVsbG8==", -1, 5, "hello"},    /* extra '=': length not a multiple of 4 */
        {"aGk=", 2, 2, "hi"},
        {"aA==", 1, 1, "h"},
        {"aA", -1, 1, "h"},
        {"b3BzOnB3MQ==", 7, 7, "ops:pw1"},
        {"+/+/", 3, 3, "\xfb\xff\xbf"},
        {"-_-_", -1, 3, "\xfb\xff\xbf"},  /* URL-safe alphabet */
        {"a", -1, -1, NULL},               /* a lone character carries no byte */
        {"aGVsb", -1, -1, NULL},
        {"a===", -1, -1, NULL},
        {"====", -1, 0, ""},
        {"ab=c", -1, -1, NULL},            /* '=' inside */
        {"aGVs=bG8", -1, -1, NULL},
        {"aG!s", -1, -1, NULL},
        {"aGVs\nbG8=", -1, -1, NULL},
        {"aGVsbG8=aGk=", -1, -1, NULL},    /* padding only at the very end */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t out[32];
        size_t n = strlen(cases[i].in);
        long s = pg_base64_decode(cases[i].in, n, PG_BASE64_STRICT, out, sizeof(out));

        if (s != cases[i].strict) {
            fprintf(stderr, "  strict \"%s\": %ld\n", cases[i].in, s);
        }
        CHECK_INT(s, cases[i].strict);
        if (s > 0) {
            CHECK(memcmp(out, cases[i].want, (size_t)s) == 0);
        }
        long l = pg_base64_decode(cases[i].in, n, PG_BASE64_LENIENT, out, sizeof(out));
        if (l != cases[i].lenient) {
            fprintf(stderr, "  lenient \"%s\": %ld\n", cases[i].in, l);
        }
        CHECK_INT(l, cases[i].lenient);
        if (l > 0) {
            CHECK(memcmp(out, cases[i].want, (size_t)l) == 0);
        }
    }
}

PG_TEST(test_decode_respects_cap)
{
    uint8_t out[5];

    CHECK_INT(pg_base64_decode("aGVsbG8=", 8, PG_BASE64_STRICT, out, 5), 5);
    CHECK_INT(pg_base64_decode("aGVsbG8=", 8, PG_BASE64_STRICT, out, 4), -1);
    CHECK_INT(pg_base64_decode("aGVsbG8", 7, PG_BASE64_LENIENT, out, 4), -1);
    CHECK_INT(pg_base64_decoded_max(8), 9);
}

PG_TEST(test_encode_table)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"", ""}, {"h", "aA=="}, {"hi", "aGk="}, {"hello", "aGVsbG8="}, {"ops:pw1", "b3BzOnB3MQ=="},
        {"\xfb\xff\xbf", "+/+/"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[32];
        size_t n = strlen(cases[i].in);

        CHECK_INT(pg_base64_encode((const uint8_t *)cases[i].in, n, out, sizeof(out)),
                  strlen(cases[i].want));
        CHECK_STR(out, cases[i].want);
        CHECK_INT(pg_base64_encoded_len(n), strlen(cases[i].want));
    }
    char small[8];
    CHECK_INT(pg_base64_encode((const uint8_t *)"hello", 5, small, sizeof(small)), -1);
    char fits[9];
    CHECK_INT(pg_base64_encode((const uint8_t *)"hello", 5, fits, sizeof(fits)), 8);
}

PG_TEST_MAIN(PG_CASE(test_decode_table), PG_CASE(test_decode_respects_cap),
             PG_CASE(test_encode_table))
