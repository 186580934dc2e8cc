/* SPDX-License-Identifier: Apache-2.0
 * retry_on_failure policy: exponential growth by the multiplier capped at
 * max_interval, jitter within +-randomization_factor, RetryInfo delays taking
 * precedence when longer, max_elapsed_time ending the retries, disabled
 * meaning no retry at all. */
#include "exporterhelper/retry.h"
#include "pg_test.h"

static const int64_t S = 1000000000LL;

PG_TEST(growth_without_jitter)
{
    struct pg_retry_config c = {true, 5 * S, 30 * S, 300 * S, 1.5, 0};
    struct pg_retry_state s;
    static const int64_t want[] = {5000, 7500, 11250, 16875, 25312, 30000, 30000};
    int64_t now = 0;
    int64_t wait;

    pg_retry_begin(&s, &c, now, 1);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        CHECK(pg_retry_next(&s, &c, now, -1, &wait));
        CHECK_INT(wait / 1000000, want[i]);
        now += wait;
    }
    CHECK_INT(s.attempts, 7);
}

PG_TEST(jitter_bounds)
{
    struct pg_retry_config c = {true, 1 * S, 1 * S, 0, 1.0, 0.5};
    struct pg_retry_state s;
    int64_t lo = INT64_MAX;
    int64_t hi = 0;
    int64_t wait;

    pg_retry_begin(&s, &c, 0, 42);
    for (int i = 0; i < 2000; i++) {
        CHECK(pg_retry_next(&s, &c, 0, -1, &wait));
        lo = wait < lo ? wait : lo;
        hi = wait > hi ? wait : hi;
    }
    CHECK(lo >= S / 2);
    CHECK(hi <= S * 3 / 2);
    /* The draws really spread over the range. */
    CHECK(lo < S * 6 / 10);
    CHECK(hi > S * 14 / 10);
}

PG_TEST(max_elapsed_gives_up)
{
    struct pg_retry_config c = {true, 5 * S, 30 * S, 20 * S, 1.5, 0};
    struct pg_retry_state s;
    int64_t now = 0;
    int64_t wait;
    int n = 0;

    pg_retry_begin(&s, &c, now, 1);
    while (pg_retry_next(&s, &c, now, -1, &wait)) {
        now += wait;
        n++;
    }
    /* 5 + 7.5 = 12.5 s; the next 11.25 s wait would pass 20 s. */
    CHECK_INT(n, 2);
}

PG_TEST(zero_max_elapsed_is_forever)
{
    struct pg_retry_config c = {true, 5 * S, 30 * S, 0, 1.5, 0};
    struct pg_retry_state s;
    int64_t now = 0;
    int64_t wait;

    pg_retry_begin(&s, &c, now, 1);
    for (int i = 0; i < 1000; i++) {
        CHECK(pg_retry_next(&s, &c, now, -1, &wait));
        now += wait;
    }
}

PG_TEST(throttle_takes_precedence)
{
    struct pg_retry_config c = {true, 1 * S, 30 * S, 300 * S, 1.5, 0};
    struct pg_retry_state s;
    int64_t wait;

    pg_retry_begin(&s, &c, 0, 1);
    CHECK(pg_retry_next(&s, &c, 0, 10 * S, &wait));
    CHECK_INT(wait, 10 * S);
    /* A shorter RetryInfo than the backoff does not shorten the wait. */
    CHECK(pg_retry_next(&s, &c, 0, S / 10, &wait));
    CHECK_INT(wait, 3 * S / 2);
    /* A throttle that would pass max_elapsed ends the retries. */
    CHECK(!pg_retry_next(&s, &c, 0, 400 * S, &wait));
}

PG_TEST(disabled_never_retries)
{
    struct pg_retry_config c = {false, 5 * S, 30 * S, 300 * S, 1.5, 0.5};
    struct pg_retry_state s;
    int64_t wait;

    pg_retry_begin(&s, &c, 0, 1);
    CHECK(!pg_retry_next(&s, &c, 0, -1, &wait));
}

PG_TEST_MAIN(PG_CASE(growth_without_jitter), PG_CASE(jitter_bounds), PG_CASE(max_elapsed_gives_up),
             PG_CASE(zero_max_elapsed_is_forever), PG_CASE(throttle_takes_precedence),
             PG_CASE(disabled_never_retries))
