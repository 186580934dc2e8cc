/* SPDX-License-Identifier: Apache-2.0
 * The persistent queue (sending_queue.storage): a push is appended to the
 * file_storage spool before consume() returns OK, queue items carry record
 * ids only, and the previous run's backlog is replayed one record per take.
 * What consumers read back is bounded by a memory window. */
#include <inttypes.h>
#include <stdlib.h>

#include <event2/event.h>

#include "core/log.h"
#include "core/memlimit.h"
#include "core/vec.h"
#include "exporterhelper/internal.h"

/* Records @id as carried by @it (acked when @it is freed). */
bool pg_exph_item_add_spool_id(struct pg_exph_item *it, uint64_t id)
{
    if (!PG_VEC_GROW(NULL, it->spool_ids, it->cap_spool_ids, it->n_spool_ids, 4, 0)) {
        return false;
    }
    it->spool_ids[it->n_spool_ids++] = id;
    return true;
}

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

/* Set once every component started (memory_limiter starts after exporters):
 * 64 MiB, at most the bytes budget and a quarter of memory_limiter's soft
 * limit (the rest is for requests being received). */
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
    pg_log_info(h->log,
                "persistent queue: at most %" PRIu64 " bytes of spooled "
                "requests read back into memory at a time (one larger request alone)",
                h->win_limit);
}

/* The next record the previous run left, read from disk as one item, or
 * NULL: replay finished (replay_done) or paused while the process is past
 * memory_limiter's soft limit (a timer resumes it). Only what consumers
 * hold is in memory: start-up and memory do not grow with the backlog. */
struct pg_exph_item *pg_exph_replay_take(struct pg_exph *h)
{
    static struct pg_log_ratelimit rl = PG_LOG_RATELIMIT_INIT(0.2, 1);
    struct pg_status st;
    uint64_t id = 0;
    uint8_t *data = NULL;
    size_t len = 0;
    struct pg_exph_item *it;

    pg_status_clear(&st);
    if (pg_memlimit_over(&st)) {
        struct timeval tv = {0, 250000};

        if (pg_log_ratelimit_ok(&rl, NULL)) {
            pg_log_info(h->log, "replay paused: %s", pg_status_text(&st));
        }
        if (h->replay_timer != NULL) {
            evtimer_add(h->replay_timer, &tv);
        }
        return NULL;
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
        if (h->replayed > 0) {
            pg_log_info(h->log, "replayed %zu spooled request(s) from the previous run",
                        h->replayed);
        }
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
    return it;
}
