/* SPDX-License-Identifier: Apache-2.0
 * Relabel regex parity with RE2 (what Prometheus and Parca compile with):
 * repeat counts over 1000 are refused, Unicode classes \p{..} / \pL and
 * \x{..} escapes are accepted (and match), and the refusal words name the
 * real reason. */
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"

#include "scrape/relabel.h"

static bool full_match(pcre2_code *re, const char *s)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);

    pcre2_match_data_free(md);
    return rc >= 0;
}

static void test_re2_syntax_table(void)
{
    static const struct {
        const char *re;
        const char *why; /* NULL: accepted */
    } cases[] = {
        {"a{1000}", NULL},
        {"a{1001}", "repeat count over 1000"},
        {"a{2,1001}", "repeat count over 1000"},
        {"a{1001,}", "repeat count over 1000"},
        {"(ab){0,1000}", NULL},
        {"a{99999999999999999999}", "repeat count over 1000"},
        {"a{,1001}", NULL},   /* not a repeat in RE2: literal braces */
        {"a{x}", NULL},
        {"[{1001}]", NULL},   /* inside a class */
        {"\\{1001}", NULL},   /* escaped brace */
        {"\\p{Greek}+", NULL},
        {"\\P{Greek}+", NULL},
        {"\\pL+", NULL},
        {"[\\p{Lu}]+", NULL},
        {"\\x{263a}+", NULL},
        {"\\p{Greek", "missing closing }"},
        {"a++", "possessive"},
        {"a{2}+", "possessive"},
        {"(a)\\1", "backreferences"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = pg_relabel_re2_check(cases[i].re);

        if (cases[i].why == NULL) {
            CHECK(got == NULL);
            if (got != NULL) {
                fprintf(stderr, "  %s refused: %s\n", cases[i].re, got);
            }
        } else {
            CHECK(got != NULL && strstr(got, cases[i].why) != NULL);
            if (got == NULL || strstr(got, cases[i].why) == NULL) {
                fprintf(stderr, "  %s: got %s, want %s\n", cases[i].re, got ? got : "(accepted)",
                        cases[i].why);
            }
        }
    }
}

static void test_unicode_classes_match(void)
{
    char why[300] = "";
    pcre2_code *greek = pg_relabel_compile("\\p{Greek}+", why, sizeof(why));
    pcre2_code *smile = pg_relabel_compile("x\\x{263a}", why, sizeof(why));
    pcre2_code *big = pg_relabel_compile("a{1001}", why, sizeof(why));

    CHECK(greek != NULL);
    CHECK(smile != NULL);
    if (greek != NULL) {
        CHECK(full_match(greek, "\xce\xb1\xce\xb2\xce\xb3")); /* αβγ */
        CHECK(!full_match(greek, "abc"));
    }
    if (smile != NULL) {
        CHECK(full_match(smile, "x\xe2\x98\xba"));
    }
    CHECK(big == NULL);
    CHECK(strstr(why, "a{1001}") != NULL && strstr(why, "over 1000") != NULL);
    pcre2_code_free(greek);
    pcre2_code_free(smile);
}

PG_TEST_MAIN(PG_CASE(test_re2_syntax_table), PG_CASE(test_unicode_classes_match))
