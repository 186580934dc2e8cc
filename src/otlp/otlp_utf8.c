/* SPDX-License-Identifier: Apache-2.0
 * The policy for a string on its way into an OTLP string field: repaired into
 * the arena when invalid, and each repair counted and logged (see otlp_utf8.h). */
#include "otlp/otlp_utf8.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/log.h"
#include "core/metrics.h"
#include "core/utf8.h"

const char *pg_utf8_clean(struct pg_arena *a, const char *s, size_t *len, const char *where)
{
    size_t n = *len, bad = 0;
    char *out;

    if (pg_utf8_valid(s, n)) {
        return s;
    }
    if (n > (SIZE_MAX - 1) / 3) {
        return NULL;
    }
    out = pg_arena_alloc(a, n * 3 + 1);
    if (out == NULL) {
        return NULL;
    }
    *len = pg_utf8_repair(out, s, n, &bad);
    out[*len] = '\0';
    pg_utf8_note(bad, where);
    return out;
}

static _Atomic uint64_t replaced_total;
static pthread_mutex_t note_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pg_log_ratelimit note_rl = PG_LOG_RATELIMIT_INIT(0.2, 3);
static struct pg_metric *note_metric;

void pg_utf8_note(size_t bad, const char *where)
{
    unsigned long suppressed = 0;
    bool say;

    if (bad == 0) {
        return;
    }
    atomic_fetch_add_explicit(&replaced_total, bad, memory_order_relaxed);
    pthread_mutex_lock(&note_mu);
    if (note_metric == NULL) {
        note_metric = pg_metric_counter("pprofgate_invalid_utf8_replaced",
                                        "Bytes of invalid UTF-8 replaced with U+FFFD before "
                                        "reaching an OTLP string field", "");
    }
    say = pg_log_ratelimit_ok(&note_rl, &suppressed);
    pthread_mutex_unlock(&note_mu);
    pg_metric_add(note_metric, bad);
    if (say) {
        pg_log_warn("utf8",
                    "replaced %zu invalid UTF-8 byte(s) in a %s with U+FFFD (OTLP strings must "
                    "be valid UTF-8); %lu similar line(s) suppressed",
                    bad, where, suppressed);
    }
}

uint64_t pg_utf8_replaced_total(void)
{
    return atomic_load_explicit(&replaced_total, memory_order_relaxed);
}
