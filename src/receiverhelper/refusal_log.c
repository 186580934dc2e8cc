/* SPDX-License-Identifier: Apache-2.0
 * One refusal log line per reason per interval (refusal_log.h). */
#include "receiverhelper/refusal_log.h"

#include <string.h>

#include "core/clock.h"

void pg_rxh_reasons_init(struct pg_rxh_reasons *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
}

void pg_rxh_reasons_destroy(struct pg_rxh_reasons *r)
{
    pthread_mutex_destroy(&r->mu);
}

bool pg_rxh_reason_log_ok(struct pg_rxh_reasons *r, int code, const char *reason,
                          unsigned long *suppressed)
{
    uint64_t key = UINT64_C(1469598103934665603) ^ (uint64_t)code;
    double now = pg_mono_s();
    size_t slot;
    bool ok;

    for (const char *p = reason ? reason : ""; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            key = (key ^ (unsigned char)*p) * UINT64_C(1099511628211);
        }
    }
    slot = (size_t)(key % PG_RXH_REASON_SLOTS);
    pthread_mutex_lock(&r->mu);
    ok = !(r->slot[slot].key == key && r->slot[slot].last > 0 &&
           now - r->slot[slot].last < PG_RXH_REASON_INTERVAL_S);
    if (!ok) {
        r->slot[slot].suppressed++;
    } else {
        *suppressed = r->slot[slot].key == key ? r->slot[slot].suppressed : 0;
        r->slot[slot].key = key;
        r->slot[slot].last = now;
        r->slot[slot].suppressed = 0;
    }
    pthread_mutex_unlock(&r->mu);
    return ok;
}
