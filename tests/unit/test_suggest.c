/* SPDX-License-Identifier: Apache-2.0
 * core/suggest: the edit distance and which candidate a misspelling gets. */
#include <string.h>

#include "core/suggest.h"
#include "pg_test.h"

PG_TEST(test_distance)
{
    static const struct {
        const char *a, *b;
        size_t want;
    } cases[] = {
        {"", "", 0},           {"abc", "abc", 0},         {"endpont", "endpoint", 1},
        {"transfrom", "transform", 1}, /* a swap is one edit */
        {"servce", "service", 1}, {"detialed", "detailed", 1}, {"kitten", "sitting", 3},
        {"", "abc", 3},        {"abc", "", 3},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHECK_INT(pg_suggest_distance(cases[i].a, cases[i].b), cases[i].want);
    }
    char longw[80];
    memset(longw, 'a', sizeof(longw) - 1);
    longw[sizeof(longw) - 1] = '\0';
    CHECK_INT(pg_suggest_distance(longw, "a"), 99);
}

PG_TEST(test_best)
{
    static const char *const keys[] = {"endpoint", "transport", "include_metadata", "tls", NULL};
    static const struct {
        const char *word;
        const char *want; /* NULL: nothing close enough */
    } cases[] = {
        {"endpont", "endpoint"}, {"tsl", "tls"},   {"trnasport", "transport"},
        {"xyz", NULL},           {"endpoint", NULL}, /* the word itself is no hint */
        {"metadata", NULL},                           /* 8 edits from include_metadata */
        {"ab", NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_suggest sg;
        pg_suggest_init(&sg, cases[i].word);
        for (size_t k = 0; keys[k] != NULL; k++) {
            pg_suggest_offer(&sg, keys[k]);
        }
        pg_suggest_offer(&sg, NULL);
        const char *got = pg_suggest_best(&sg);
        if (cases[i].want == NULL) {
            CHECK(got == NULL);
        } else {
            CHECK(got != NULL && strcmp(got, cases[i].want) == 0);
        }
    }
}

PG_TEST_MAIN(PG_CASE(test_distance), PG_CASE(test_best))
