/* SPDX-License-Identifier: Apache-2.0
 * core/hex.h: trace/span id decoding, the SSE2 path and the table path giving the same
 * answer on every case (and on every single-byte corruption of a valid id); the same for the
 * trace + span pair decoder's CPU variants. */
#include "pg_test.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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

/* The pair decoder pg_hex_link_ids's variants (the one chosen at start-up, the base, SSSE3,
 * AVX2 where the CPU has them) against two table-path pg_hex_id_scalar calls: every byte value
 * at every position of the trace and the span id, both all-zero ids, wrong lengths. */
static size_t pair_mismatches(bool (*f)(const char *, size_t, const char *, size_t, uint8_t *),
                              const char *t, size_t tl, const char *s, size_t sl)
{
    uint8_t a[24], b[24];
    bool ra = f(t, tl, s, sl, a);
    bool rb = pg_hex_id_scalar(t, tl, b, 16) && pg_hex_id_scalar(s, sl, b + 16, 8);
    return ra != rb || (ra && memcmp(a, b, 24) != 0);
}

PG_TEST(test_hex_link_ids_variants)
{
    static const char *const names[] = {"base", "ssse3", "avx2"};
    static const char tr[] = "4bf92f3577b34da6a3ce929d0e0e4736", sp[] = "00f067aa0ba902b7";
    static const struct {
        const char *t, *s;
        bool ok;
    } cases[] = {
        {tr, sp, true},
        {"4BF92F3577B34DA6A3CE929D0E0E4736", "00F067AA0BA902B7", true},
        {"0123456789abcdefABCDEF0123456789", "fedcbaFEDCBA9876", true},
        {"00000000000000000000000000000001", "0000000000000001", true},
        {"00000000000000000000000000000000", sp, false},
        {tr, "0000000000000000", false},
        {"4bf92f3577b34da6a3ce929d0e0e473", sp, false}, /* a digit short */
        {tr, "00f067aa0ba902b", false},
        {"4bf92f3577b34da6a3ce929d0e0e47360", sp, false},
        {tr, "00f067aa0ba902b70", false},
        {"", "", false},
    };
    size_t tested = 0;

    CHECK(pg_hex_link_ids != NULL);
    CHECK(pg_hex_link_ids_variant("base") != NULL);
    CHECK(pg_hex_link_ids_variant("sse9") == NULL);
    for (size_t v = 0; v <= sizeof(names) / sizeof(names[0]); v++) {
        bool (*f)(const char *, size_t, const char *, size_t, uint8_t *) =
            v == 0 ? pg_hex_link_ids : pg_hex_link_ids_variant(names[v - 1]);
        size_t mismatches = 0;
        char t[40], s[24];

        if (f == NULL) {
            fprintf(stderr, "  %s: not on this CPU\n", names[v - 1]);
            continue;
        }
        tested++;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            uint8_t out[24];
            /* the inputs copied into exact-size heap blocks: reads stay within them (ASan) */
            size_t tl = strlen(cases[i].t), sl = strlen(cases[i].s);
            char *th = malloc(tl + 1), *sh = malloc(sl + 1);
            CHECK(th != NULL && sh != NULL);
            memcpy(th, cases[i].t, tl + 1);
            memcpy(sh, cases[i].s, sl + 1);
            CHECK(f(th, tl, sh, sl, out) == cases[i].ok);
            mismatches += pair_mismatches(f, th, tl, sh, sl);
            free(th);
            free(sh);
        }
        for (size_t pos = 0; pos < 48; pos++) {
            for (unsigned c = 0; c < 256; c++) {
                memcpy(t, tr, 33);
                memcpy(s, sp, 17);
                if (pos < 32) {
                    t[pos] = (char)c;
                } else {
                    s[pos - 32] = (char)c;
                }
                mismatches += pair_mismatches(f, t, 32, s, 16);
            }
        }
        CHECK_INT(mismatches, 0);
    }
    CHECK(tested >= 2);
}

PG_TEST_MAIN(PG_CASE(test_hex_id_table), PG_CASE(test_hex_id_every_byte),
             PG_CASE(test_hex_link_ids_variants))
