/* SPDX-License-Identifier: Apache-2.0
 * UTF-8 validation and repair (see utf8.h). */
#include "core/utf8.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/log.h"
#include "core/metrics.h"

size_t pg_utf8_seq(const uint8_t *p, size_t n)
{
    uint8_t c;

    if (n == 0) {
        return 0;
    }
    c = p[0];
    if (c >= 0x01 && c < 0x80) {
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
    }
    if (c >= 0xe0 && c <= 0xef) {
        if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80) {
            return 0;
        }
        if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f)) {
            return 0; /* overlong, or a UTF-16 surrogate */
        }
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80) {
            return 0;
        }
        if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f)) {
            return 0; /* overlong, or past U+10FFFF */
        }
        return 4;
    }
    return 0; /* NUL, continuation byte, C0/C1 (always overlong), F5..FF */
}

bool pg_utf8_valid(const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0;

    /* ASCII without NUL, eight bytes per step: most strings are all of it */
    for (; n - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (((w | ((w - 0x0101010101010101ull) & ~w)) & 0x8080808080808080ull) != 0) {
            break; /* a byte >= 0x80 or a zero byte: the loop below decides */
        }
    }
    while (i < n) {
        size_t k;
        if (p[i] >= 0x01 && p[i] < 0x80) {
            i++; /* the common case, kept cheap */
            continue;
        }
        k = pg_utf8_seq(p + i, n - i);
        if (k == 0) {
            return false;
        }
        i += k;
    }
    return true;
}

size_t pg_utf8_repair(char *dst, const char *s, size_t n, size_t *bad)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0, o = 0;

    while (i < n) {
        size_t k = pg_utf8_seq(p + i, n - i);
        if (k == 0) {
            memcpy(dst + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
            (*bad)++;
        } else {
            memcpy(dst + o, p + i, k);
            o += k;
            i += k;
        }
    }
    return o;
}

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
