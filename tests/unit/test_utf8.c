/* SPDX-License-Identifier: Apache-2.0
 * core/utf8: the validity rule (overlong forms, surrogates, past U+10FFFF,
 * cut sequences, stray continuation bytes, NUL) and the repair to U+FFFD,
 * one table; the metric counts the replacements. */
#include <string.h>

#include "core/arena.h"
#include "core/utf8.h"
#include "otlp/otlp_utf8.h"
#include "pg_test.h"

static const struct {
    const char *name;
    const char *in;
    size_t len;
    const char *want; /* repaired */
    size_t bad;
} cases[] = {
    {"ascii", "abc", 3, "abc", 0},
    {"empty", "", 0, "", 0},
    {"2-byte", "\xc3\xa9", 2, "\xc3\xa9", 0},
    {"3-byte", "\xe2\x82\xac", 3, "\xe2\x82\xac", 0},
    {"4-byte", "\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80", 0},
    {"max code point", "\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf", 0},
    {"0xff", "a\xff" "b", 3, "a\xef\xbf\xbd" "b", 1},
    {"0xfe", "\xfe", 1, "\xef\xbf\xbd", 1},
    {"stray continuation", "\x80", 1, "\xef\xbf\xbd", 1},
    {"overlong slash C0", "\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd", 2},
    {"overlong 3-byte", "\xe0\x80\xaf", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 3},
    {"overlong 4-byte", "\xf0\x80\x80\xaf", 4,
     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 4},
    {"surrogate D800", "\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 3},
    {"surrogate DFFF", "\xed\xbf\xbf", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 3},
    {"past 10FFFF", "\xf4\x90\x80\x80", 4,
     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 4},
    {"cut 3-byte at end", "x\xe2\x82", 3, "x\xef\xbf\xbd\xef\xbf\xbd", 2},
    {"NUL inside", "a\0b", 3, "a\xef\xbf\xbd" "b", 1},
    {"valid after bad", "\xff\xc3\xa9", 3, "\xef\xbf\xbd\xc3\xa9", 1},
    /* eight bytes at a time over ASCII: a NUL or a high byte anywhere in a word */
    {"long ascii", "abcdefghijklmnopq", 17, "abcdefghijklmnopq", 0},
    {"NUL in 1st word", "abcdefg\0ijklmnop", 16, "abcdefg\xef\xbf\xbdijklmnop", 1},
    {"NUL starts 2nd word", "abcdefgh\0jklmnop", 16, "abcdefgh\xef\xbf\xbdjklmnop", 1},
    {"bad in 2nd word", "abcdefghij\xffklmnop", 17, "abcdefghij\xef\xbf\xbdklmnop", 1},
    {"2-byte across words", "abcdefg\xc3\xa9ijklmno", 16, "abcdefg\xc3\xa9ijklmno", 0},
};

PG_TEST(test_table)
{
    struct pg_arena *a = pg_arena_create(0);
    uint64_t before = pg_utf8_replaced_total();
    size_t total_bad = 0;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = cases[i].len;
        const char *out = pg_utf8_clean(a, cases[i].in, &n, "test string");
        bool ok = out != NULL && n == strlen(cases[i].want) && memcmp(out, cases[i].want, n) == 0;

        if (!ok) {
            fprintf(stderr, "  case %s: repaired wrong (len %zu)\n", cases[i].name, n);
        }
        CHECK(ok);
        CHECK(pg_utf8_valid(cases[i].in, cases[i].len) == (cases[i].bad == 0));
        CHECK(out != NULL && pg_utf8_valid(out, n));
        /* Valid input is returned as is, not copied. */
        CHECK((out == cases[i].in) == (cases[i].bad == 0));
        total_bad += cases[i].bad;
    }
    CHECK_INT(pg_utf8_replaced_total() - before, total_bad);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_table))
