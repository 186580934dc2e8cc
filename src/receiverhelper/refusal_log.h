/* SPDX-License-Identifier: Apache-2.0
 * The rate limit on a receiver's refusal log lines: one line per reason per
 * interval over every loop of the receiver, the next one saying how many
 * similar lines it stood for. A reason's key is its code and its text with
 * the digits left out (sizes and counts vary, the reason does not). Any
 * thread; one lock, taken for refusals only. */
#ifndef PG_RECEIVERHELPER_REFUSAL_LOG_H
#define PG_RECEIVERHELPER_REFUSAL_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define PG_RXH_REASON_SLOTS 32
#define PG_RXH_REASON_INTERVAL_S 10.0

struct pg_rxh_reasons {
    pthread_mutex_t mu;
    struct {
        uint64_t key;
        double last;
        unsigned long suppressed;
    } slot[PG_RXH_REASON_SLOTS]; /* under mu */
};

void pg_rxh_reasons_init(struct pg_rxh_reasons *r);
void pg_rxh_reasons_destroy(struct pg_rxh_reasons *r);
/* True when a line for (@code, @reason) may be logged now; *@suppressed
 * gets how many were held back since the last one. */
bool pg_rxh_reason_log_ok(struct pg_rxh_reasons *r, int code, const char *reason,
                          unsigned long *suppressed);

#endif
