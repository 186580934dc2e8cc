/* SPDX-License-Identifier: Apache-2.0
 * The exporter's retry_on_failure policy (the collector's exporterhelper
 * backoff): exponential intervals with jitter, capped per wait and in total
 * elapsed time, and a server-sent RetryInfo delay taking precedence when it
 * is longer. Pure arithmetic so it is unit-testable without a clock. */
#ifndef PG_EXPORTERHELPER_RETRY_H
#define PG_EXPORTERHELPER_RETRY_H

#include <stdbool.h>
#include <stdint.h>

struct pg_retry_config {
    bool enabled;
    int64_t initial_interval_ns;  /* 5s */
    int64_t max_interval_ns;      /* 30s */
    int64_t max_elapsed_ns;       /* 300s; 0 = retry forever */
    double multiplier;            /* 1.5 */
    double randomization_factor;  /* 0.5: the wait is drawn from [i*(1-f), i*(1+f)] */
};

/* Per-request backoff state. */
struct pg_retry_state {
    int64_t current_ns;  /* the un-jittered interval for the next wait */
    int64_t started_ns;  /* monotonic time of the first attempt */
    unsigned attempts;   /* failures so far */
    uint64_t rng;        /* xorshift state for jitter */
};

void pg_retry_begin(struct pg_retry_state *s, const struct pg_retry_config *c, int64_t now_ns,
                    uint64_t seed);

/* After a retryable failure at @now_ns: returns true and the wait in
 * *@wait_ns, or false when the policy gives up (disabled, or the next attempt
 * would start after max_elapsed). @throttle_ns (< 0 = none) is a RetryInfo
 * delay; the wait is at least that long. */
bool pg_retry_next(struct pg_retry_state *s, const struct pg_retry_config *c, int64_t now_ns,
                   int64_t throttle_ns, int64_t *wait_ns);

#endif
