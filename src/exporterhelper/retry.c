/* SPDX-License-Identifier: Apache-2.0
 * Exponential backoff with jitter, as the collector's retry_on_failure. */
#include "exporterhelper/retry.h"

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ULL;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

void pg_retry_begin(struct pg_retry_state *s, const struct pg_retry_config *c, int64_t now_ns,
                    uint64_t seed)
{
    s->current_ns = c->initial_interval_ns;
    s->started_ns = now_ns;
    s->attempts = 0;
    s->rng = seed | 1;
}

bool pg_retry_next(struct pg_retry_state *s, const struct pg_retry_config *c, int64_t now_ns,
                   int64_t throttle_ns, int64_t *wait_ns)
{
    double interval = (double)s->current_ns;
    double f = c->randomization_factor;
    double wait;
    double next;

    *wait_ns = 0;
    if (!c->enabled) {
        return false;
    }
    s->attempts++;
    if (f > 0) {
        double u = (double)(xorshift(&s->rng) >> 11) / (double)(1ULL << 53); /* [0,1) */

        wait = interval * (1.0 - f) + u * (2.0 * f * interval);
    } else {
        wait = interval;
    }
    if (wait < 0) {
        wait = 0;
    }
    if (throttle_ns >= 0 && (double)throttle_ns > wait) {
        wait = (double)throttle_ns;
    }
    next = interval * (c->multiplier > 0 ? c->multiplier : 1.0);
    if (c->max_interval_ns > 0 && next > (double)c->max_interval_ns) {
        next = (double)c->max_interval_ns;
    }
    s->current_ns = (int64_t)next;
    if (c->max_elapsed_ns > 0 &&
        (double)(now_ns - s->started_ns) + wait > (double)c->max_elapsed_ns) {
        return false;
    }
    *wait_ns = (int64_t)wait;
    return true;
}
