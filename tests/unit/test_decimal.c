/* SPDX-License-Identifier: Apache-2.0
 * core/decimal.h: pg_fmt_u64 writes what printf's %llu writes, at every digit count. */
#include "pg_test.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/decimal.h"

PG_TEST(test_fmt_u64_table)
{
    static const uint64_t cases[] = {0, 1, 9, 10, 99, 100, 4040, 65535, 4294967295u,
                                     4294967296u, 9999999999999999999u, UINT64_MAX};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char got[PG_DECIMAL_U64_MAX + 1], want[32];
        size_t n = pg_fmt_u64(got, cases[i]);

        got[n] = '\0';
        snprintf(want, sizeof(want), "%" PRIu64, cases[i]);
        CHECK_STR(got, want);
        CHECK_INT((int)n, (int)strlen(want));
    }
}

PG_TEST(test_fmt_u64_powers)
{
    /* Every digit count: 10^k - 1 and 10^k, and no byte written past the count. */
    uint64_t p = 1;

    for (int k = 0; k < 20; k++) {
        uint64_t vals[2] = {p - 1, p};

        for (int j = 0; j < 2; j++) {
            char got[PG_DECIMAL_U64_MAX + 1], want[32];
            size_t n;

            memset(got, 'x', sizeof(got));
            n = pg_fmt_u64(got, vals[j]);
            CHECK(n == PG_DECIMAL_U64_MAX || got[n] == 'x');
            got[n] = '\0';
            snprintf(want, sizeof(want), "%" PRIu64, vals[j]);
            CHECK_STR(got, want);
        }
        if (k < 19) {
            p *= 10;
        }
    }
}

PG_TEST_MAIN(PG_CASE(test_fmt_u64_table), PG_CASE(test_fmt_u64_powers))
