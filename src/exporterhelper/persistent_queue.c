/* SPDX-License-Identifier: Apache-2.0
 * The persistent queue (sending_queue.storage): a push is appended to the
 * file_storage spool before consume() returns OK, queue items carry record
 * ids only, and the previous run's backlog is replayed one record per take.
 * What consumers read back of this run's records is bounded by a memory
 * window; the replay has its own budget (everything a replayed record takes
 * until answered), under which live pushes' memory counts too. */
#include <inttypes.h>
#include <stdlib.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/memlimit.h"
#include "core/vec.h"
#include "exporterhelper/internal.h"

/* Encodes @batch for the spool, outside the queue's lock (on the caller's
 * loop); the caller appends the bytes under the lock once the push is
 * admitted, so the record is on disk before the 204. The encoding is the
 * only one: the consumer sends these bytes back from disk. *@arena (owned
 * by the caller) holds *@enc. */
enum pg_err pg_exph_spool_encode(struct pg_exph *h, struct pg_batch *batch,
                                 struct pg_arena **arena, uint8_t **enc, size_t *enc_len,
                                 struct pg_status *st)
{
    *enc = NULL;
    *enc_len = 0;
    *arena = pg_arena_create(0);
    if (*arena == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "exporter %s: no memory to spool", h->id);
    }
    return pg_batch_encode(batch, *arena, enc, enc_len, st);
}

#define MIB (1024.0 * 1024.0)
/* What a compressor and the buffers around one record add, beyond copies of it. */
#define FOOTPRINT_SLACK (256u << 10)
/* Progress lines at most this often while a replay runs. */
#define PROGRESS_EVERY_NS (10LL * 1000000000LL)

/* The replay's budget, once its backlog is known (or while a background
 * scan of a large earlier spool still runs). */
static void replay_budget_log(struct pg_exph *h)
{
    const char *why = h->cfg->queue.replay_memory != 0 ? ""
                      : pg_memlimit_soft_limit() > 0 ? ": half of memory_limiter's soft limit"
                                                     : ": default";

    if (h->replay_total == 0 && pg_spool_recovering(h->spool)) {
        /* Its size is known when the scan ends, the budget now. */
        pg_log_info(h->log,
                    "replay of the previous run's spool (still being indexed) may hold %.1f MiB "
                    "(sending_queue::replay_memory%s), less what live pushes hold; "
                    "this run's pushes are sent alternately with it",
                    (double)h->replay_limit / MIB, why);
    } else if (h->replay_total > h->replayed) {
        pg_log_info(h->log,
                    "replay of %" PRIu64 " request(s) (%.1f MiB) may hold %.1f MiB "
                    "(sending_queue::replay_memory%s), less what live pushes hold; "
                    "this run's pushes are sent alternately with it",
                    h->replay_total - h->replayed, (double)h->replay_total_bytes / MIB,
                    (double)h->replay_limit / MIB, why);
    }
}

/* Set once every component started (memory_limiter starts after exporters).
 * The window of this run's queued records: 64 MiB, at most the bytes budget
 * and a quarter of memory_limiter's soft limit. The replay's budget:
 * sending_queue.replay_memory, or half the soft limit (64 MiB without a
 * limiter), never above the soft limit: the rest is for live pushes. */
void pg_exph_window_init(struct pg_exph *h)
{
    uint64_t soft = pg_memlimit_soft_limit();

    h->win_limit = 64u << 20;
    if (h->sizer == PG_EXPH_SIZER_BYTES && h->q_limit < h->win_limit) {
        h->win_limit = h->q_limit;
    }
    if (soft > 0 && soft / 4 < h->win_limit) {
        h->win_limit = soft / 4;
    }
    if (h->win_limit == 0) {
        h->win_limit = 1; /* one record at a time */
    }
    h->replay_limit = h->cfg->queue.replay_memory;
    if (h->replay_limit == 0) {
        h->replay_limit = soft > 0 ? soft / 2 : 64u << 20;
    }
    if (soft > 0 && h->replay_limit > soft) {
        h->replay_limit = soft;
    }
    if (h->replay_limit == 0) {
        h->replay_limit = 1;
    }
    pg_log_info(h->log,
                "persistent queue: at most %" PRIu64 " bytes of this run's spooled "
                "requests read back into memory at a time (one larger request alone)",
                h->win_limit);
    replay_budget_log(h);
}

/* At start, after the spool is open: what the previous run left. */
void pg_exph_replay_start(struct pg_exph *h)
{
    struct pg_spool_stats ss;

    pg_spool_get_stats(h->spool, &ss);
    h->replay_total = ss.replay_pending;
    h->replay_total_bytes = ss.pending_bytes; /* nothing of this run yet */
    h->replay_start_ns = pg_mono_ns();
    h->replay_log_ns = h->replay_start_ns + PROGRESS_EVERY_NS;
    h->replay_pause_rl = (struct pg_log_ratelimit)PG_LOG_RATELIMIT_INIT(0.1, 1);
    h->m_replay_left = pg_metric_gauge("pprofgate_exporter_replay_pending_requests",
                                       "Requests of the previous run not yet read back",
                                       h->labels);
    h->m_replay_left_bytes = pg_metric_gauge("pprofgate_exporter_replay_pending_bytes",
                                             "Spooled bytes of the previous run not yet read back",
                                             h->labels);
    h->m_replay_mem = pg_metric_gauge("pprofgate_exporter_replay_memory_bytes",
                                      "Memory the replay holds (read back, in flight, copies)",
                                      h->labels);
    h->m_replayed = pg_metric_counter("pprofgate_exporter_replayed_requests",
                                      "Requests of the previous run read back for sending",
                                      h->labels);
    h->m_replayed_bytes = pg_metric_counter("pprofgate_exporter_replayed_bytes",
                                            "Spooled bytes of the previous run read back",
                                            h->labels);
    pg_metric_set(h->m_replay_left, (int64_t)h->replay_total);
    pg_metric_set(h->m_replay_left_bytes, (int64_t)h->replay_total_bytes);
}

/* Memory one replayed record of @len stored bytes takes while prepared:
 * the record as read and its body (a compressed copy is smaller, an
 * uncompressed one a copy); a record over max_request_bytes is decoded and
 * split first, and protobuf-c's model of a profile is ~11 times its wire
 * size (a 5.8 MB record: a 63 MB arena), learnt per exporter. */
uint64_t pg_exph_replay_footprint(const struct pg_exph *h, size_t len)
{
    uint64_t ratio16 = h->max_request_bytes == 0 || len <= h->max_request_bytes
                           ? 2 * 16
                           : (h->split_ratio16 > 0 ? h->split_ratio16 : 12 * 16);

    return ratio16 * (uint64_t)len / 16 + FOOTPRINT_SLACK;
}

void pg_exph_replay_prepared(struct pg_exph_consumer *c)
{
    struct pg_exph *h = c->h;
    uint64_t bodies = 0;

    if (c->replay_len > 0 && h->max_request_bytes > 0 && c->replay_len > h->max_request_bytes) {
        /* The arena and bodies, or what RSS grew by (temporaries outside
         * the arena, the compressor's buffers), whichever is more, and the
         * record as read. */
        uint64_t rss = pg_memlimit_read_rss();
        uint64_t grew = rss > c->rss_before ? rss - c->rss_before : 0;
        uint64_t peak = (c->prep_bytes > grew ? c->prep_bytes : grew) + c->replay_len;
        uint64_t seen = peak * 16 / c->replay_len + 1;

        if (seen > (h->split_ratio16 > 0 ? h->split_ratio16 : 12 * 16)) {
            h->split_ratio16 = seen;
        }
    }
    /* Read back and encoded: what stays until the answer is the bodies. */
    for (size_t i = 0; i < c->n_parts; i++) {
        bodies += c->parts[i].len;
    }
    pg_exph_replay_charge(c, bodies > 0 ? bodies : 1);
}

void pg_exph_replay_charge(struct pg_exph_consumer *c, uint64_t bytes)
{
    struct pg_exph *h = c->h;

    if (bytes > c->replay_bytes) {
        pg_memlimit_charge_replay((size_t)(bytes - c->replay_bytes));
        h->replay_used += bytes - c->replay_bytes;
    } else {
        pg_memlimit_release_replay((size_t)(c->replay_bytes - bytes));
        h->replay_used -= c->replay_bytes - bytes;
    }
    c->replay_bytes = bytes;
    if (h->m_replay_mem != NULL) {
        pg_metric_set(h->m_replay_mem, (int64_t)h->replay_used);
    }
}

/* The replay waits: when it holds nothing, no release will pump again, so
 * the timer does; the line says why, at most every 10 s. */
static bool replay_wait(struct pg_exph *h, const char *why)
{
    unsigned long suppressed = 0;

    if (h->replay_used == 0) {
        struct timeval tv = {0, 250000};

        if (h->replay_timer != NULL) {
            evtimer_add(h->replay_timer, &tv);
        }
        if (pg_log_ratelimit_ok(&h->replay_pause_rl, &suppressed)) {
            pg_log_info(h->log, "replay paused to leave room for live pushes: %s" PG_LOG_SUPPRESSED_FMT,
                        why, PG_LOG_SUPPRESSED(suppressed));
        }
    }
    return false;
}

bool pg_exph_replay_room(struct pg_exph *h)
{
    uint64_t id, need, inflight, soft, ceiling, rss;
    size_t len;
    bool alone;
    char why[256];

    if (!pg_spool_peek_replay(h->spool, h->replay_after, &id, &len)) {
        return true; /* the take finds the end */
    }
    need = pg_exph_replay_footprint(h, len);
    inflight = pg_memlimit_inflight();
    /* Live pushes' bytes count against the budget too: it shrinks while
     * they hold memory. A record larger than the whole budget goes alone,
     * when the replay holds nothing and live pushes leave part of it. */
    alone = h->replay_used == 0 && need > h->replay_limit;
    if (alone ? inflight >= h->replay_limit : inflight + need > h->replay_limit) {
        snprintf(why, sizeof(why),
                 "%.1f MiB in flight (%.1f MiB of it this replay's) + %.1f MiB for the next "
                 "record would pass its budget of %.1f MiB",
                 (double)inflight / MIB, (double)h->replay_used / MIB, (double)need / MIB,
                 (double)h->replay_limit / MIB);
        return replay_wait(h, why);
    }
    soft = pg_memlimit_soft_limit();
    if (soft == 0) {
        return true;
    }
    /* The process as a whole (allocator slack included): the replay stops
     * halfway between its budget and the soft limit, so what live pushes
     * are admitted against is never taken by the replay. */
    ceiling = soft - (soft - (h->replay_limit < soft ? h->replay_limit : soft)) / 2;
    if (alone) {
        /* Larger than the budget: alone, while RSS leaves it room under the
         * soft limit. One that never finds the room goes after 5 s of
         * waiting, while RSS is under the line (liveness over the budget). */
        int64_t now = pg_mono_ns();

        rss = pg_memlimit_rss_trimmed(need < soft ? soft - need : 0);
        if (rss + need <= soft) {
            h->replay_alone_since_ns = 0;
            return true;
        }
        if (h->replay_alone_since_ns == 0) {
            h->replay_alone_since_ns = now;
        } else if (now - h->replay_alone_since_ns > 5000000000LL && rss <= ceiling) {
            pg_log_warn(h->log,
                        "a spooled request needing ~%.1f MiB to send is replayed although RSS "
                        "%.1f MiB leaves it no room under the soft limit of %.1f MiB (waited "
                        "5s); live pushes may be refused meanwhile",
                        (double)need / MIB, (double)rss / MIB, (double)soft / MIB);
            h->replay_alone_since_ns = 0;
            return true;
        }
        snprintf(why, sizeof(why),
                 "RSS %.1f MiB + ~%.1f MiB to decode and split the next record (larger than "
                 "max_request_bytes) would pass the soft limit of %.1f MiB",
                 (double)rss / MIB, (double)need / MIB, (double)soft / MIB);
        return replay_wait(h, why);
    }
    rss = pg_memlimit_rss_trimmed(need < ceiling ? ceiling - need : 0);
    if (rss + need > ceiling) {
        snprintf(why, sizeof(why),
                 "RSS %.1f MiB + %.1f MiB for the next record would pass %.1f MiB (halfway "
                 "from its budget of %.1f MiB to the soft limit of %.1f MiB)",
                 (double)rss / MIB, (double)need / MIB, (double)ceiling / MIB,
                 (double)h->replay_limit / MIB, (double)soft / MIB);
        return replay_wait(h, why);
    }
    return true;
}

/* Requests and bytes left, and the rate so far: every PROGRESS_EVERY_NS
 * while the replay runs, and once at its end. */
static void replay_progress(struct pg_exph *h, bool done)
{
    int64_t now = pg_mono_ns();
    double secs = (double)(now - h->replay_start_ns) / 1e9;
    double rate = secs > 0 ? (double)h->replay_read_bytes / 1e6 / secs : 0;
    uint64_t left = h->replay_total > h->replayed ? h->replay_total - h->replayed : 0;
    uint64_t left_bytes = h->replay_total_bytes > h->replay_read_bytes
                              ? h->replay_total_bytes - h->replay_read_bytes
                              : 0;

    pg_metric_set(h->m_replay_left, (int64_t)(done ? 0 : left));
    pg_metric_set(h->m_replay_left_bytes, (int64_t)(done ? 0 : left_bytes));
    if (done) {
        if (h->replayed > 0) {
            pg_log_info(h->log,
                        "replayed %zu spooled request(s) (%.1f MiB) from the previous run: all "
                        "read back in %.1fs (%.1f MB/s); the last ones may still be in flight",
                        h->replayed, (double)h->replay_read_bytes / MIB, secs, rate);
        }
        return;
    }
    if (now < h->replay_log_ns) {
        return;
    }
    h->replay_log_ns = now + PROGRESS_EVERY_NS;
    pg_log_info(h->log,
                "replay: %zu of %" PRIu64 " request(s) read back (%.1f of %.1f MiB, %.1f MB/s); "
                "%" PRIu64 " request(s), %.1f MiB left; holding %.1f MiB of its %.1f MiB budget",
                h->replayed, h->replay_total, (double)h->replay_read_bytes / MIB,
                (double)h->replay_total_bytes / MIB, rate, left, (double)left_bytes / MIB,
                (double)h->replay_used / MIB, (double)h->replay_limit / MIB);
}

/* The next record the previous run left, read from disk as one item, or
 * NULL: replay finished (replay_done). The caller checked
 * pg_exph_replay_room(). Only what consumers hold is in memory: start-up
 * and memory do not grow with the backlog. */
struct pg_exph_item *pg_exph_replay_take(struct pg_exph *h)
{
    struct pg_status st;
    uint64_t id = 0;
    uint8_t *data = NULL;
    size_t len = 0;
    struct pg_exph_item *it;

    pg_status_clear(&st);
    if (h->replay_total == 0 && !h->replay_sized && !pg_spool_recovering(h->spool)) {
        /* The background scan has ended: what it found is the backlog
         * (progress lines and the pending gauges count against it). */
        struct pg_spool_stats ss;

        pg_spool_get_stats(h->spool, &ss);
        h->replay_sized = true;
        h->replay_total = ss.replay_pending + h->replayed;
        h->replay_total_bytes = ss.pending_bytes;
        replay_budget_log(h); /* now with what the scan found */
    }
    if (pg_spool_next_replay(h->spool, h->replay_after, &id, &data, &len, &st) != PG_ERR_OK) {
        pg_log_error(h->log, "replay stopped: %s", pg_status_text(&st));
        h->replay_done = true;
        return NULL;
    }
    if (data == NULL && pg_spool_recovering(h->spool)) {
        /* The earlier run's segments are still being indexed: look again. */
        struct timeval tv = {0, 250000};

        if (h->replay_timer != NULL) {
            evtimer_add(h->replay_timer, &tv);
        }
        return NULL;
    }
    if (data == NULL) {
        h->replay_done = true;
        replay_progress(h, true);
        return NULL;
    }
    h->replay_after = id;
    it = calloc(1, sizeof(*it));
    if (it == NULL || !pg_exph_item_add_spool_id(it, id)) {
        /* Out of memory: it stays on disk for the next start. */
        free(data);
        if (it != NULL) {
            it->keep_spooled = true;
        }
        pg_exph_item_free(h, it);
        h->replay_done = true;
        return NULL;
    }
    it->raw = data;
    it->raw_len = len;
    it->count_samples = true;
    h->replayed++;
    h->replay_read_bytes += len;
    pg_metric_add(h->m_replayed, 1);
    pg_metric_add(h->m_replayed_bytes, len);
    replay_progress(h, false);
    return it;
}
