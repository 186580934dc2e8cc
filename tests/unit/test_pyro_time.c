/* SPDX-License-Identifier: Apache-2.0
 * pyroscope/pyro_time.c: `from`/`until` values as Pyroscope's attime reads them, table-driven:
 * the unit told by the digit count, YYYYMMDD dates, now with offsets; and the refusals. */
#include "pg_test.h"

#include "pyroscope/pyro_time.h"

#define NOW 1796217364000000000LL /* 2026-12-02 */

PG_TEST(test_time_good)
{
    static const struct {
        const char *in;
        int64_t want;
    } cases[] = {
        {"", NOW},
        {"1796217364000000000", 1796217364000000000LL},   /* ns: pyroscope-go v1.5.0 */
        {"1796217364", 1796217364000000000LL},            /* s: older agents */
        {"1796217364123", 1796217364123000000LL},         /* ms */
        {"1796217364123456", 1796217364123456000LL},      /* us */
        {"0", 0},
        {"20261202", 1796169600000000000LL},              /* a date, midnight UTC */
        {"20240229", 1709164800000000000LL},              /* leap day */
        {"22620411", 9223286400000000000LL},              /* the last date that fits */
        {"20230229", 20230229LL * 1000000000LL},          /* no such day: seconds */
        {"18991231", 18991231LL * 1000000000LL},          /* year not after 1900: seconds */
        {"1_796_217_364", 1796217364000000000LL},         /* '_' ',' ' ' dropped */
        {" 1,796,217,364 ", 1796217364000000000LL},
        {"now", NOW},
        {"now-1h", NOW - 3600LL * 1000000000LL},
        {"-30s", NOW - 30LL * 1000000000LL},
        {"now+1d2h", NOW + (86400LL + 7200) * 1000000000LL},
        {"now-5min", NOW - 300LL * 1000000000LL},
        {"now-1mon", NOW - 30LL * 86400 * 1000000000LL},
        {"now-1M", NOW - 30LL * 86400 * 1000000000LL},
        {"now-2w", NOW - 14LL * 86400 * 1000000000LL},
        {"now-0s", NOW},
        {"now-200y", NOW - 200LL * 365 * 86400 * 1000000000LL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_status st = {0};
        int64_t got = -1;
        enum pg_err err = pg_pyro_time_parse(cases[i].in, strlen(cases[i].in), NOW, &got, &st);
        if (err != PG_ERR_OK || got != cases[i].want) {
            fprintf(stderr, "  \"%s\": %d %s %lld\n", cases[i].in, err, st.msg, (long long)got);
        }
        CHECK_INT(err, PG_ERR_OK);
        CHECK_INT(got, cases[i].want);
    }
}

PG_TEST(test_time_bad)
{
    static const struct {
        const char *in, *msg;
    } cases[] = {
        {"abc", "want Unix seconds"},
        {"yesterday-1h", "want Unix seconds"},
        {"now-", "an offset wants digits and a unit"},
        {"now-1", "an offset wants digits and a unit"},
        {"now-1x", "an offset wants digits and a unit"},
        {"now-h", "an offset wants digits and a unit"},
        {"99999999999999999999", "does not fit int64"},
        {"9999999999999999", "does not fit int64 nanoseconds"}, /* 16 digits: us */
        {"99999999999", "does not fit int64 nanoseconds"},
        {"24261202", "a date past int64 nanoseconds"}, /* found by fuzz_pyro_name */
        {"22620412", "a date past int64 nanoseconds"},
        {"now-99999999999y", "offset too large"},
        {"now-201y", "offset too large"},
        {"now+250y", "offset too large"},
        {"12345678901234567890123456789012345678901234567890123456789012345", "too long"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_status st = {0};
        int64_t got = 0;
        enum pg_err err = pg_pyro_time_parse(cases[i].in, strlen(cases[i].in), NOW, &got, &st);
        if (err != PG_ERR_MALFORMED || strstr(st.msg, cases[i].msg) == NULL) {
            fprintf(stderr, "  \"%s\": %d \"%s\"\n", cases[i].in, err, st.msg);
        }
        CHECK_INT(err, PG_ERR_MALFORMED);
        CHECK(strstr(st.msg, cases[i].msg) != NULL);
    }
}

PG_TEST_MAIN(PG_CASE(test_time_good), PG_CASE(test_time_bad))
