/* SPDX-License-Identifier: Apache-2.0
 * core/hex.h: trace/span id decoding, the SSE2 path and the table path giving the same
 * answer on every case (and on every single-byte corruption of a valid id). */
#include "pg_test.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/hex.h"

PG_TEST(test_hex_id_table)
{
    static const struct {
        const char *s;
        size_t n;
        bool ok;
        const char *want; /* n raw bytes */
    } cases[] = {
        {"4bf92f3577b34da6a3ce929d0e0e4736", 16, true,
         "\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36"},
        {"4BF92F3577B34DA6A3CE929D0E0E4736", 16, true,
         "\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36"},
        {"00f067aa0ba902b7", 8, true, "\x00\xf0\x67\xaa\x0b\xa9\x02\xb7"},
        {"ffFFffFFffFFffFF", 8, true, "\xff\xff\xff\xff\xff\xff\xff\xff"},
        {"0000000000000001", 8, true, "\x00\x00\x00\x00\x00\x00\x00\x01"},
        {"00000000000000000000000000000000", 16, false, NULL}, /* all zero: invalid id */
        {"0000000000000000", 8, false, NULL},
        {"4bf92f3577b34da6a3ce929d0e0e473", 16, false, NULL}, /* one digit short */
        {"4bf92f3577b34da6a3ce929d0e0e47360", 16, false, NULL},
        {"4bf92f3577b34da6a3ce929d0e0e473g", 16, false, NULL},
        {"g0f067aa0ba902b7", 8, false, NULL},
        {"00f067aa0ba9 2b7", 8, false, NULL},
        {"00f067aa0ba9:2b7", 8, false, NULL}, /* ':' follows '9' */
        {"00f067aa0ba9/2b7", 8, false, NULL}, /* '/' precedes '0' */
        {"00f067aa0ba9@2b7", 8, false, NULL}, /* '@' precedes 'A' */
        {"00f067aa0ba9`2b7", 8, false, NULL}, /* '`' precedes 'a' */
        {"00f067aa0ba9G2b7", 8, false, NULL},
        {"0123456789abcdef", 8, true, "\x01\x23\x45\x67\x89\xab\xcd\xef"},
        {"abcd", 2, true, "\xab\xcd"}, /* other lengths: the table path */
        {"", 0, false, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t a[16], b[16];
        size_t len = strlen(cases[i].s);
        bool ra = pg_hex_id(cases[i].s, len, a, cases[i].n);
        bool rb = pg_hex_id_scalar(cases[i].s, len, b, cases[i].n);
        if (ra != cases[i].ok || rb != cases[i].ok) {
            fprintf(stderr, "  case %zu (%s): %d/%d, want %d\n", i, cases[i].s, ra, rb,
                    cases[i].ok);
        }
        CHECK(ra == cases[i].ok);
        CHECK(rb == cases[i].ok);
        if (cases[i].ok) {
            CHECK(memcmp(a, cases[i].want, cases[i].n) == 0);
            CHECK(memcmp(b, cases[i].want, cases[i].n) == 0);
        }
    }
}

/* Every byte value at every position of a valid trace id: both paths agree, and accept
 * exactly the hex digits. */
PG_TEST(test_hex_id_every_byte)
{
    char s[33];
    size_t mismatches = 0;

    for (size_t pos = 0; pos < 32; pos++) {
        for (unsigned c = 0; c < 256; c++) {
            uint8_t a[16], b[16];
            bool ra, rb;
            memcpy(s, "4bf92f3577b34da6a3ce929d0e0e4736", 33);
            s[pos] = (char)c;
            ra = pg_hex_id(s, 32, a, 16);
            rb = pg_hex_id_scalar(s, 32, b, 16);
            mismatches += ra != rb || ra != (pg_hex_digit((int)c) >= 0) ||
                          (ra && memcmp(a, b, 16) != 0);
        }
    }
    CHECK_INT(mismatches, 0);
}

PG_TEST_MAIN(PG_CASE(test_hex_id_table), PG_CASE(test_hex_id_every_byte))
