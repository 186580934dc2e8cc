/* SPDX-License-Identifier: Apache-2.0
 * core/clock.h: nanoseconds to the timeval libevent's timers take. */
#include "pg_test.h"

#include <stdint.h>

#include "core/clock.h"

PG_TEST(test_ns_to_tv_table)
{
    static const struct {
        int64_t ns;
        long sec, usec;
    } cases[] = {
        {0, 0, 0},
        {999, 0, 0},                   /* below a microsecond: truncated */
        {1000, 0, 1},
        {1500000000LL, 1, 500000},
        {PG_NS_PER_SEC - 1, 0, 999999},
        {30 * PG_NS_PER_SEC, 30, 0},
        {-1, 0, 0},                    /* a deadline already past: now */
        {-5 * PG_NS_PER_SEC, 0, 0},
        {INT64_MAX, INT64_MAX / PG_NS_PER_SEC, INT64_MAX % PG_NS_PER_SEC / 1000},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct timeval tv = pg_ns_to_tv(cases[i].ns);

        if ((long)tv.tv_sec != cases[i].sec || (long)tv.tv_usec != cases[i].usec) {
            fprintf(stderr, "  case %zu: %ld.%06ld, want %ld.%06ld\n", i, (long)tv.tv_sec,
                    (long)tv.tv_usec, cases[i].sec, cases[i].usec);
        }
        CHECK((long)tv.tv_sec == cases[i].sec && (long)tv.tv_usec == cases[i].usec);
    }
}

PG_TEST_MAIN(PG_CASE(test_ns_to_tv_table))
