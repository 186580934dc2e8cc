/* SPDX-License-Identifier: Apache-2.0
 * The process-wide memory budget (see memlimit.h). All state is atomics so
 * receivers on any thread can admit and release without a lock; the RSS
 * reading is refreshed lazily by whichever caller finds it stale. */
#include "core/memlimit.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"

#define DEFAULT_CHECK_NS 1000000000ll
#define MIB (1024.0 * 1024.0)

static _Atomic uint64_t limit_b;      /* 0 = unlimited */
static _Atomic uint64_t spike_b;
static _Atomic int64_t check_ns = DEFAULT_CHECK_NS;
static _Atomic uint64_t inflight_b;
static _Atomic uint64_t replay_b;     /* of inflight_b, held by spool replays */
static _Atomic uint64_t rss_b;        /* last reading */
static _Atomic int64_t rss_at_ns;     /* when it was taken; 0 = never */
static _Atomic uint64_t peak_rss_b;
/* RSS minus the in-flight bytes at the last reading: what the process holds outside
 * requests (idle heap, stacks, kept pool blocks), which a request's growth must fit
 * beside (pg_memlimit_grow). */
static _Atomic uint64_t untracked_b;
static size_t (*_Atomic reclaim_fn)(void);  /* pg_memlimit_set_reclaim */

static struct pg_metric *m_refused_inflight, *m_refused_rss, *m_refused_size;
static atomic_bool metrics_ready;

static int64_t gauge_inflight(void *arg)
{
    (void)arg;
    return (int64_t)atomic_load(&inflight_b);
}

static int64_t gauge_replay(void *arg)
{
    (void)arg;
    return (int64_t)atomic_load(&replay_b);
}

static int64_t gauge_rss(void *arg)
{
    (void)arg;
    return (int64_t)pg_memlimit_read_rss();
}

static void metrics_init(void)
{
    bool expect = false;
    if (!atomic_compare_exchange_strong(&metrics_ready, &expect, true)) {
        return;
    }
    m_refused_inflight = pg_metric_counter("pprofgate_memory_limiter_refused_total",
                                           "Requests refused by the memory limiter, by reason",
                                           "reason=\"inflight\"");
    m_refused_rss = pg_metric_counter("pprofgate_memory_limiter_refused_total",
                                      "Requests refused by the memory limiter, by reason",
                                      "reason=\"rss\"");
    m_refused_size = pg_metric_counter("pprofgate_memory_limiter_refused_total",
                                       "Requests refused by the memory limiter, by reason",
                                       "reason=\"too_large\"");
    pg_metric_gauge_fn("pprofgate_memory_inflight_bytes",
                       "Bytes held by requests in flight (compressed, inflated, translated)", NULL,
                       gauge_inflight, NULL);
    pg_metric_gauge_fn("pprofgate_memory_replay_bytes",
                       "Of the in-flight bytes, those a spool replay holds (read back, "
                       "being sent, encoded copies)", NULL, gauge_replay, NULL);
    pg_metric_gauge_fn("pprofgate_process_rss_bytes", "Resident set size of the process", NULL,
                       gauge_rss, NULL);
}

void pg_memlimit_configure(uint64_t limit_bytes, uint64_t spike_bytes, int64_t check_interval_ns)
{
    uint64_t cur = atomic_load(&limit_b);

    metrics_init();
    if (spike_bytes >= limit_bytes) {
        spike_bytes = limit_bytes / 5; /* callers validate; never leave a zero soft limit */
    }
    /* Tightest soft limit wins when several limiters configure it. */
    if (cur == 0 || limit_bytes - spike_bytes < cur - atomic_load(&spike_b)) {
        atomic_store(&limit_b, limit_bytes);
        atomic_store(&spike_b, spike_bytes);
    }
    if (check_interval_ns > 0) {
        atomic_store(&check_ns, check_interval_ns);
    }
}

void pg_memlimit_reset(void)
{
    atomic_store(&limit_b, 0);
    atomic_store(&spike_b, 0);
    atomic_store(&check_ns, DEFAULT_CHECK_NS);
    atomic_store(&inflight_b, 0);
    atomic_store(&replay_b, 0);
    atomic_store(&rss_at_ns, 0);
    atomic_store(&untracked_b, 0);
}

uint64_t pg_memlimit_read_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0;
    uint64_t rss = 0;
    long page = sysconf(_SC_PAGESIZE);

    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%llu %llu", &size, &resident) == 2 && page > 0) {
        rss = (uint64_t)resident * (uint64_t)page;
    }
    fclose(f);
    return rss;
}

static void note_peak(uint64_t rss)
{
    uint64_t peak = atomic_load(&peak_rss_b);
    while (rss > peak && !atomic_compare_exchange_weak(&peak_rss_b, &peak, rss)) {
    }
}

/* RSS no older than the check interval. Past the soft limit, gives freed
 * heap back to the system once (glibc keeps it otherwise) and reads again,
 * the way the collector forces a GC before refusing. */
static uint64_t current_rss(uint64_t soft)
{
    int64_t now = pg_mono_ns();
    int64_t at = atomic_load(&rss_at_ns);
    uint64_t rss;

    if (at != 0 && now - at < atomic_load(&check_ns)) {
        return atomic_load(&rss_b);
    }
    rss = pg_memlimit_read_rss();
    if (soft != 0 && rss > soft) {
        size_t (*fn)(void) = atomic_load(&reclaim_fn);

        if (fn != NULL) {
            fn();
        }
        malloc_trim(0);
        rss = pg_memlimit_read_rss();
    }
    note_peak(rss);
    {
        uint64_t inflight = atomic_load(&inflight_b);

        atomic_store(&untracked_b, rss > inflight ? rss - inflight : 0);
    }
    atomic_store(&rss_b, rss);
    atomic_store(&rss_at_ns, now);
    return rss;
}

void pg_memlimit_set_reclaim(size_t (*fn)(void))
{
    atomic_store(&reclaim_fn, fn);
}

uint64_t pg_memlimit_limit(void)
{
    return atomic_load(&limit_b);
}

uint64_t pg_memlimit_soft_limit(void)
{
    uint64_t l = atomic_load(&limit_b);
    return l == 0 ? 0 : l - atomic_load(&spike_b);
}

uint64_t pg_memlimit_inflight(void)
{
    return atomic_load(&inflight_b);
}

uint64_t pg_memlimit_rss_trimmed(uint64_t above)
{
    static _Atomic int64_t trimmed_at_ns;
    uint64_t rss = pg_memlimit_read_rss();
    int64_t now = pg_mono_ns();
    int64_t at = atomic_load(&trimmed_at_ns);

    /* At most once a second: a trim over a large heap takes the caller's
     * loop milliseconds. */
    if (rss > above && now - at >= 1000000000ll &&
        atomic_compare_exchange_strong(&trimmed_at_ns, &at, now)) {
        malloc_trim(0);
        rss = pg_memlimit_read_rss();
    }
    note_peak(rss);
    return rss;
}

uint64_t pg_memlimit_peak_rss(void)
{
    note_peak(pg_memlimit_read_rss());
    return atomic_load(&peak_rss_b);
}

/* " (a spool replay holds 12.0 MiB of it)" when one holds any: a refusal
 * while a backlog drains names the replay's share, and only with it. */
static void replay_share(char *buf, size_t len)
{
    uint64_t r = atomic_load(&replay_b);

    buf[0] = '\0';
    if (r > 0) {
        snprintf(buf, len, " (a spool replay holds %.1f MiB of it)", (double)r / MIB);
    }
}

static bool refuse_rss(uint64_t soft, struct pg_status *st)
{
    uint64_t rss = current_rss(soft);
    char share[64];

    if (rss > soft) {
        if (m_refused_rss != NULL) {
            pg_metric_add(m_refused_rss, 1);
        }
        replay_share(share, sizeof(share));
        pg_status_set(st, PG_ERR_BUSY,
                      "memory limit reached: RSS %.1f MiB%s is over the soft limit %.1f MiB "
                      "(limit_mib %.1f - spike_limit_mib %.1f); retry later",
                      (double)rss / MIB, share, (double)soft / MIB,
                      (double)pg_memlimit_limit() / MIB, (double)atomic_load(&spike_b) / MIB);
        return true;
    }
    return false;
}

bool pg_memlimit_admit(size_t bytes, struct pg_status *st)
{
    uint64_t soft = pg_memlimit_soft_limit();
    uint64_t cur;
    char share[64];

    if (soft == 0) {
        atomic_fetch_add(&inflight_b, bytes);
        return true;
    }
    if (bytes > soft) {
        if (m_refused_size != NULL) {
            pg_metric_add(m_refused_size, 1);
        }
        pg_status_set(st, PG_ERR_LIMIT,
                      "request needs %.1f MiB, more than the memory limiter's soft limit of "
                      "%.1f MiB", (double)bytes / MIB, (double)soft / MIB);
        return false;
    }
    if (refuse_rss(soft, st)) {
        return false;
    }
    cur = atomic_load(&inflight_b);
    do {
        if (cur + bytes > soft) {
            if (m_refused_inflight != NULL) {
                pg_metric_add(m_refused_inflight, 1);
            }
            replay_share(share, sizeof(share));
            pg_status_set(st, PG_ERR_BUSY,
                          "memory limit reached: %.1f MiB in flight%s + %.1f MiB for this "
                          "request would pass the soft limit of %.1f MiB; retry later",
                          (double)cur / MIB, share, (double)bytes / MIB, (double)soft / MIB);
            return false;
        }
    } while (!atomic_compare_exchange_weak(&inflight_b, &cur, cur + bytes));
    return true;
}

bool pg_memlimit_grow(size_t bytes, size_t own, struct pg_status *st)
{
    uint64_t limit = pg_memlimit_limit();
    uint64_t cur, base;

    if (limit == 0) {
        atomic_fetch_add(&inflight_b, bytes);
        return true;
    }
    if (own + atomic_load(&untracked_b) > limit) {
        if (m_refused_size != NULL) {
            pg_metric_add(m_refused_size, 1);
        }
        pg_status_set(st, PG_ERR_LIMIT,
                      "memory limiter: this request needs more than %.1f MiB, which with the "
                      "%.1f MiB the process holds outside requests passes limit_mib %.1f on "
                      "its own (admitted on an estimate, refused as it grew)",
                      (double)own / MIB, (double)atomic_load(&untracked_b) / MIB,
                      (double)limit / MIB);
        return false;
    }
    base = atomic_load(&untracked_b);
    cur = atomic_load(&inflight_b);
    do {
        if (cur + bytes + base > limit) {
            char share[64];

            if (m_refused_inflight != NULL) {
                pg_metric_add(m_refused_inflight, 1);
            }
            replay_share(share, sizeof(share));
            pg_status_set(st, PG_ERR_BUSY,
                          "memory limit reached: %.1f MiB in flight%s + %.1f MiB more for this "
                          "request (%.1f MiB in all) + %.1f MiB outside requests would pass "
                          "limit_mib %.1f; retry later",
                          (double)cur / MIB, share, (double)bytes / MIB, (double)own / MIB,
                          (double)base / MIB, (double)limit / MIB);
            return false;
        }
    } while (!atomic_compare_exchange_weak(&inflight_b, &cur, cur + bytes));
    return true;
}

void pg_memlimit_charge(size_t bytes)
{
    atomic_fetch_add(&inflight_b, bytes);
}

/* Never wraps below zero, whatever a caller's arithmetic did. */
static void sub_floor(_Atomic uint64_t *v, size_t bytes)
{
    uint64_t cur = atomic_load(v);
    uint64_t next;
    do {
        next = cur >= bytes ? cur - bytes : 0;
    } while (!atomic_compare_exchange_weak(v, &cur, next));
}

void pg_memlimit_release(size_t bytes)
{
    sub_floor(&inflight_b, bytes);
}

void pg_memlimit_charge_replay(size_t bytes)
{
    atomic_fetch_add(&replay_b, bytes);
    atomic_fetch_add(&inflight_b, bytes);
}

void pg_memlimit_release_replay(size_t bytes)
{
    sub_floor(&replay_b, bytes);
    sub_floor(&inflight_b, bytes);
}

uint64_t pg_memlimit_replay(void)
{
    return atomic_load(&replay_b);
}

static void release_cb(void *arg)
{
    pg_memlimit_release((size_t)(uintptr_t)arg);
}

bool pg_memlimit_charge_arena(struct pg_arena *arena, size_t bytes)
{
    if (pg_arena_cleanup_add(arena, release_cb, (void *)(uintptr_t)bytes) != 0) {
        return false;
    }
    pg_memlimit_charge(bytes);
    return true;
}

bool pg_memlimit_over(struct pg_status *st)
{
    uint64_t soft = pg_memlimit_soft_limit();
    uint64_t cur;

    if (soft == 0) {
        return false;
    }
    if (refuse_rss(soft, st)) {
        return true;
    }
    cur = atomic_load(&inflight_b);
    if (cur > soft) {
        char share[64];

        if (m_refused_inflight != NULL) {
            pg_metric_add(m_refused_inflight, 1);
        }
        replay_share(share, sizeof(share));
        pg_status_set(st, PG_ERR_BUSY,
                      "memory limit reached: %.1f MiB in flight%s is over the soft limit of "
                      "%.1f MiB; retry later", (double)cur / MIB, share, (double)soft / MIB);
        return true;
    }
    return false;
}

uint64_t pg_memlimit_total_memory(void)
{
    uint64_t total = 0, cg;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];

    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL) {
            unsigned long long kb;
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
                total = (uint64_t)kb * 1024u;
                break;
            }
        }
        fclose(f);
    }
    /* A container's limit is what the OOM killer enforces (its own cgroup's
     * or an ancestor's). v1 reports a huge number when unlimited; only a
     * value below MemTotal counts. */
    cg = pg_cgroup_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup", "/sys/fs/cgroup/memory");
    if (cg != 0 && (total == 0 || cg < total)) {
        total = cg;
    }
    return total;
}
