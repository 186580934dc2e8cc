/* SPDX-License-Identifier: Apache-2.0
 * The sending queue: admission of a push against queue_size in the sizer's
 * unit, merging pushes into one item (sending_queue.batch), the FIFO the
 * consumers drain, the exporter metrics, and the lifecycle (start, drain on
 * shutdown until shutdown_timeout, abort). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/storage.h"
#include "core/vec.h"
#include "exporterhelper/internal.h"

void pg_exph_count_drop(struct pg_exph *h, const char *reason, size_t samples)
{
    char labels[256];

    snprintf(labels, sizeof(labels), "%s,reason=\"%s\"", h->labels, reason);
    pg_metric_add(pg_metric_counter("pprofgate_exporter_dropped_profile_samples",
                                    "Samples the exporter gave up on, by reason", labels),
                  samples);
    pg_metric_add(h->m_failed, samples);
}

void pg_exph_item_free(struct pg_exph *h, struct pg_exph_item *it)
{
    if (it == NULL) {
        return;
    }
    h->q_used -= it->units;
    /* Delivered or dropped for good => off the spool. */
    for (size_t i = 0; h->spool != NULL && !it->keep_spooled && i < it->n_spool_ids; i++) {
        struct pg_status st;

        if (pg_spool_ack(h->spool, it->spool_ids[i], &st) != PG_ERR_OK) {
            pg_log_warn(h->log, "%s", pg_status_text(&st));
        }
    }
    free(it->spool_ids);
    free(it->raw);
    for (size_t i = 0; i < it->n_batches; i++) {
        pg_batch_unref(it->batches[i]);
    }
    free(it->batches);
    free(it);
}

bool pg_exph_item_add(struct pg_exph_item *it, struct pg_batch *b, size_t samples)
{
    if (!PG_VEC_GROW(NULL, it->batches, it->cap_batches, it->n_batches, 4, 0)) {
        return false;
    }
    it->batches[it->n_batches++] = pg_batch_ref(b);
    it->samples += samples;
    return true;
}

/* Gauges are pushed on every change (a render-time callback could outlive us). */
void pg_exph_update_gauges(struct pg_exph *h)
{
    if (h->m_qsize != NULL) {
        pg_metric_set(h->m_qsize, h->sizer == PG_EXPH_SIZER_REQUESTS
                                      ? (int64_t)(h->q_len + (h->pending != NULL))
                                      : (int64_t)h->q_used);
        pg_metric_set(h->m_inflight, (int64_t)h->busy);
    }
}

/* Queues @it; consumers pick it up from the loop, so the receiver's answer
 * is never delayed by encoding or splitting. */
static void enqueue(struct pg_exph *h, struct pg_exph_item *it)
{
    it->next = NULL;
    if (h->q_tail != NULL) {
        h->q_tail->next = it;
    } else {
        h->q_head = it;
    }
    h->q_tail = it;
    h->q_len++;
    if (h->pump_ev != NULL) {
        event_active(h->pump_ev, 0, 0);
    }
    pg_exph_update_gauges(h);
}

static void flush_pending(struct pg_exph *h)
{
    struct pg_exph_item *it = h->pending;

    if (it == NULL) {
        return;
    }
    h->pending = NULL;
    evtimer_del(h->flush_timer);
    enqueue(h, it);
}

static void on_flush_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pg_exph_lock(arg);
    flush_pending(arg);
    pg_exph_unlock(arg);
}

/* Both the pump event and the replay pause timer: consumers look for work. */
static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pg_exph_lock(arg);
    pg_exph_pump(arg);
    pg_exph_unlock(arg);
}

/* What one push counts against queue_size. Without storage, bytes are the
 * memory the decoded batch holds (what the budget is for); with storage the
 * encoded size on disk (@enc_len, 0 before encoding: then the memory size
 * stands in as an upper bound). */
static uint64_t push_units(const struct pg_exph *h, const struct pg_batch *b, size_t samples,
                           size_t enc_len)
{
    switch (h->sizer) {
    case PG_EXPH_SIZER_ITEMS:
        return samples;
    case PG_EXPH_SIZER_BYTES:
        return enc_len > 0 ? enc_len : pg_arena_footprint(b->arena);
    default:
        return 1;
    }
}

/* No room for @units more. With the requests sizer and no storage: the
 * waiting room (queue_size requests; none when the queue is disabled) and
 * every idle consumer are taken, as before. Otherwise what is held (queued,
 * merging and in flight; with storage, what waits on disk, the previous
 * run's backlog included) plus @units would pass queue_size. */
static bool queue_full(const struct pg_exph *h, uint64_t units)
{
    if (!h->cfg->queue.enabled || (h->sizer == PG_EXPH_SIZER_REQUESTS && h->spool == NULL)) {
        return h->q_len + h->reserved >=
               (h->cfg->queue.enabled ? h->q_cap : 0) + (h->n_consumers - h->busy);
    }
    if (h->spool != NULL && h->sizer != PG_EXPH_SIZER_ITEMS) {
        struct pg_spool_stats ss;

        pg_spool_get_stats(h->spool, &ss);
        return (h->sizer == PG_EXPH_SIZER_REQUESTS ? ss.pending : ss.pending_bytes) +
                   h->reserved + units >
               h->q_limit;
    }
    return h->q_used + h->reserved + units > h->q_limit;
}

/* With batching, @samples more still fit the open merge (no queue slot needed). */
static bool fits_pending(const struct pg_exph *h, size_t samples)
{
    return h->pending != NULL &&
           (h->cfg->queue.batch.max_size == 0 ||
            h->pending->samples + samples <= (size_t)h->cfg->queue.batch.max_size);
}

static bool batching(const struct pg_exph *h)
{
    return h->cfg->queue.has_batch && h->cfg->queue.enabled;
}

/* Room for the push: with the requests sizer a push merging into the open
 * batch takes no slot; every other sizer counts each push. */
static bool push_blocked(const struct pg_exph *h, size_t samples, uint64_t units)
{
    if (batching(h) && fits_pending(h, samples) && h->sizer == PG_EXPH_SIZER_REQUESTS) {
        return false;
    }
    return queue_full(h, h->sizer == PG_EXPH_SIZER_REQUESTS ? 1 : units);
}

/* block_on_overflow: would_block() answering "room" sets the room aside for
 * this thread's push until its consume() (or the end of its pipeline entry,
 * pg_exph_entry_end(), when a processor refused it first): a loop checks,
 * then consumes, and another loop must not take the room in between. One
 * ticket per helper per thread; a loop has one push in the entry at a time. */
#define MAX_TICKETS 8
struct ticket {
    const struct pg_exph *h;
    uint64_t units;
};
static __thread struct ticket tl_tickets[MAX_TICKETS];
static __thread size_t tl_n_tickets;

/* Under h->mu: returns this thread's room on @h, if any. */
static void ticket_release(struct pg_exph *h)
{
    for (size_t i = 0; i < tl_n_tickets; i++) {
        if (tl_tickets[i].h == h) {
            h->reserved -= tl_tickets[i].units;
            tl_tickets[i] = tl_tickets[--tl_n_tickets];
            return;
        }
    }
}

static bool ticket_held(const struct pg_exph *h)
{
    for (size_t i = 0; i < tl_n_tickets; i++) {
        if (tl_tickets[i].h == h) {
            return true;
        }
    }
    return false;
}

/* Under h->mu. */
static void ticket_take(struct pg_exph *h, uint64_t units)
{
    if (tl_n_tickets == MAX_TICKETS) {
        return; /* no room set aside: the push is admitted as before */
    }
    tl_tickets[tl_n_tickets++] = (struct ticket){h, units};
    h->reserved += units;
}

void pg_exph_entry_end(struct pg_exph *h)
{
    if (h == NULL || !ticket_held(h)) {
        return; /* the common case: no lock */
    }
    pg_exph_lock(h);
    ticket_release(h);
    pg_exph_unlock(h);
}

/* Under h->mu. @enc: the push encoded for the spool (with storage). */
static enum pg_err consume_locked(struct pg_exph *h, struct pg_batch *batch, const uint8_t *enc,
                                  size_t enc_len, struct pg_status *st)
{
    size_t samples = pg_batch_sample_count(batch);
    bool merge = batching(h);
    uint64_t units = push_units(h, batch, samples, 0);
    struct pg_exph_item *it;
    uint64_t sid = 0;

    ticket_release(h); /* the room would_block() set aside is this push's */
    if (h->shutting_down) {
        pg_metric_add(h->m_enqueue_failed, samples);
        return pg_status_set(st, PG_ERR_UNAVAILABLE, "exporter %s is shutting down", h->id);
    }
    if (h->sizer != PG_EXPH_SIZER_REQUESTS && h->cfg->queue.enabled && units > h->q_limit) {
        /* Could never fit, even in an empty queue: a retry cannot help. */
        pg_metric_add(h->m_enqueue_failed, samples);
        return pg_status_set(st, PG_ERR_LIMIT,
                             "exporter %s: a request of %" PRIu64 " %s is larger than the whole "
                             "sending queue (queue_size %" PRIu64 ")",
                             h->id, units, h->sizer == PG_EXPH_SIZER_ITEMS ? "samples" : "bytes",
                             h->q_limit);
    }
    if (push_blocked(h, samples, units)) {
        goto full;
    }
    if (merge && h->pending != NULL && !fits_pending(h, samples)) {
        flush_pending(h);
        if (h->sizer == PG_EXPH_SIZER_REQUESTS && queue_full(h, 1)) {
            goto full;
        }
    }
    if (h->spool != NULL) {
        /* On disk before the 204; the batch itself is not kept. */
        enum pg_err serr = pg_spool_append(h->spool, enc, enc_len, &sid, st);

        if (serr != PG_ERR_OK) {
            pg_metric_add(h->m_enqueue_failed, samples);
            return serr;
        }
        units = push_units(h, batch, samples, enc_len);
    }
    if (merge && h->pending == NULL) {
        struct timeval tv = pg_ns_to_tv(h->cfg->queue.batch.flush_timeout);

        h->pending = calloc(1, sizeof(*h->pending));
        if (h->pending == NULL) {
            goto nomem;
        }
        evtimer_add(h->flush_timer, &tv);
    }
    it = merge ? h->pending : calloc(1, sizeof(*it));
    if (it == NULL) {
        goto nomem;
    }
    if (h->spool != NULL ? !pg_exph_item_add_spool_id(it, sid)
                         : !pg_exph_item_add(it, batch, samples)) {
        if (!merge) {
            pg_exph_item_free(h, it);
        }
        goto nomem;
    }
    if (h->spool != NULL) {
        it->samples += samples;
    }
    it->units += units;
    h->q_used += units;
    if (!merge) {
        enqueue(h, it);
    } else if (h->pending->samples >= (size_t)h->cfg->queue.batch.min_size) {
        flush_pending(h);
    } else {
        pg_exph_update_gauges(h);
    }
    return PG_ERR_OK;

nomem:
    pg_metric_add(h->m_enqueue_failed, samples);
    if (h->spool != NULL) {
        struct pg_status ack_st;

        /* Not acknowledged to the client either, who retries: drop the
         * record, or a restart would send it a second time. */
        if (pg_spool_ack(h->spool, sid, &ack_st) != PG_ERR_OK) {
            pg_log_warn(h->log, "record %" PRIu64 " refused for lack of memory stays spooled "
                        "(sent again after a restart): %s", sid, pg_status_text(&ack_st));
        }
    }
    return pg_status_set(st, PG_ERR_NOMEM, "no memory to queue an export");

full:
    pg_metric_add(h->m_enqueue_failed, samples);
    if (h->sizer == PG_EXPH_SIZER_REQUESTS && h->spool == NULL) {
        return pg_status_set(st, PG_ERR_BUSY,
                             "exporter %s: sending queue is full (%zu requests waiting, %zu in "
                             "flight)",
                             h->id, h->q_len, h->busy);
    }
    {
        char backlog[96] = "";

        if (h->spool != NULL) {
            struct pg_spool_stats ss;

            /* The previous run's backlog counts against queue_size too: say
             * how much of it is left, so a full queue during a replay reads
             * as what it is. */
            pg_spool_get_stats(h->spool, &ss);
            if (ss.replay_pending > 0) {
                snprintf(backlog, sizeof(backlog),
                         ", counted on disk, %" PRIu64 " request(s) of it left by the previous run",
                         ss.replay_pending);
            } else {
                snprintf(backlog, sizeof(backlog), ", counted on disk");
            }
        }
        return pg_status_set(st, PG_ERR_BUSY,
                             "exporter %s: sending queue is full (%s sizer, queue_size %" PRIu64
                             "%s)",
                             h->id, pg_exph_sizer_name(h->sizer), h->q_limit, backlog);
    }
}

/* Any loop's thread. With storage the push is encoded first, outside the
 * lock (wasted only when it is then refused); admission, the spool append
 * and the enqueue are one step under h->mu, so concurrent pushes cannot
 * pass queue_size together. */
enum pg_err pg_exph_consume(struct pg_exph *h, struct pg_batch *batch, struct pg_status *st)
{
    struct pg_arena *enc_arena = NULL;
    uint8_t *enc = NULL;
    size_t enc_len = 0;
    enum pg_err err;

    if (h->spool != NULL) {
        err = pg_exph_spool_encode(h, batch, &enc_arena, &enc, &enc_len, st);
        if (err != PG_ERR_OK) {
            pg_metric_add(h->m_enqueue_failed, pg_batch_sample_count(batch));
            pg_arena_destroy(enc_arena);
            return err;
        }
    }
    pg_exph_lock(h);
    err = consume_locked(h, batch, enc, enc_len, st);
    pg_exph_unlock(h);
    if (enc_arena != NULL) {
        pg_arena_destroy(enc_arena);
    }
    return err;
}

/* Mirrors the "full" exit of pg_exph_consume() (a batch that still fits the
 * pending merge is never held). */
bool pg_exph_would_block(struct pg_exph *h, const struct pg_batch *batch)
{
    size_t samples;
    uint64_t units;
    bool blocked;

    if (h == NULL || !h->cfg->queue.block_on_overflow) {
        return false;
    }
    samples = pg_batch_sample_count(batch);
    units = push_units(h, batch, samples, 0);
    pg_exph_lock(h);
    ticket_release(h); /* an earlier answer for this thread is void */
    blocked = !h->shutting_down && push_blocked(h, samples, units);
    if (!blocked && !h->shutting_down && h->cfg->queue.enabled &&
        !(batching(h) && fits_pending(h, samples) && h->sizer == PG_EXPH_SIZER_REQUESTS)) {
        ticket_take(h, h->sizer == PG_EXPH_SIZER_REQUESTS ? 1 : units);
    }
    pg_exph_unlock(h);
    return blocked;
}

struct pg_exph *pg_exph_new(const struct pg_exph_params *p)
{
    struct pg_exph *h = calloc(1, sizeof(*h));

    if (h == NULL) {
        return NULL;
    }
    h->id = p->id;
    h->log = p->log;
    h->cfg = p->cfg;
    h->max_request_bytes = p->max_request_bytes;
    h->ops = p->ops;
    h->exporter = p->exporter;
    h->q_cap = (size_t)p->cfg->queue.queue_size;
    h->q_limit = (uint64_t)p->cfg->queue.queue_size;
    h->sizer = p->cfg->queue.sizer;
    h->n_consumers = (size_t)p->cfg->queue.num_consumers;
    h->seed = (uint64_t)pg_mono_ns();
    {
        pthread_mutexattr_t ma;

        pthread_mutexattr_init(&ma);
        pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&h->mu, &ma);
        pthread_mutexattr_destroy(&ma);
    }
    snprintf(h->labels, sizeof(h->labels), "exporter=\"%s\"", p->id);
    return h;
}

enum pg_err pg_exph_start(struct pg_exph *h, struct event_base *base, struct pg_status *st)
{
    h->base = base;
    h->consumers = calloc(h->n_consumers, sizeof(*h->consumers));
    h->flush_timer = evtimer_new(base, on_flush_timer, h);
    h->pump_ev = event_new(base, -1, 0, on_pump, h);
    h->replay_timer = evtimer_new(base, on_pump, h);
    if (h->consumers == NULL || h->flush_timer == NULL || h->pump_ev == NULL ||
        h->replay_timer == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "exporter %s: out of memory", h->id);
    }
    for (size_t i = 0; i < h->n_consumers; i++) {
        h->consumers[i].h = h;
        h->consumers[i].timer = evtimer_new(base, pg_exph_on_retry_timer, &h->consumers[i]);
        if (h->consumers[i].timer == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "exporter %s: out of memory", h->id);
        }
    }
    h->m_sent = pg_metric_counter("otelcol_exporter_sent_profile_samples",
                                  "Profile samples successfully sent to destination", h->labels);
    h->m_failed = pg_metric_counter("otelcol_exporter_send_failed_profile_samples",
                                    "Profile samples the exporter failed to send", h->labels);
    h->m_enqueue_failed =
        pg_metric_counter("otelcol_exporter_enqueue_failed_profile_samples",
                          "Profile samples refused because the sending queue was full", h->labels);
    h->m_retries = pg_metric_counter("pprofgate_exporter_retries",
                                     "Export attempts retried after a retryable failure",
                                     h->labels);
    h->m_sent_requests = pg_metric_counter("pprofgate_exporter_sent_requests",
                                           "Export requests accepted by the destination",
                                           h->labels);
    h->m_capacity = pg_metric_gauge("otelcol_exporter_queue_capacity",
                                    "Fixed capacity of the sending queue, in sizer units",
                                    h->labels);
    pg_metric_set(h->m_capacity, (int64_t)h->q_limit);
    h->m_qsize = pg_metric_gauge("otelcol_exporter_queue_size",
                                 "Current size of the sending queue, in sizer units", h->labels);
    h->m_inflight = pg_metric_gauge("otelcol_exporter_in_flight_requests", "Exports in flight",
                                    h->labels);
    if (h->cfg->queue.storage != NULL) {
        struct pg_spool_stats ss;
        enum pg_err serr = pg_storage_open(h->cfg->queue.storage, h->log, &h->spool, st);

        if (serr != PG_ERR_OK) {
            return serr;
        }
        pg_spool_get_stats(h->spool, &ss);
        pg_log_info(h->log,
                    "persistent queue on %s: %" PRIu64 " request(s) (%" PRIu64
                    " bytes) to replay, read back within a memory budget",
                    h->cfg->queue.storage, ss.replay_pending, ss.pending_bytes);
        pg_exph_replay_start(h);
    }
    pg_exph_update_gauges(h);
    h->started = true;
    /* Replay starts from the loop, once every component (the receiver
     * included) is up: start-up never waits for the backlog. */
    event_active(h->pump_ev, 0, 0);
    return PG_ERR_OK;
}

void pg_exph_describe(const struct pg_exph *h, char *buf, size_t len)
{
    snprintf(buf, len, "%zu consumers, queue %" PRIu64 " %s", h->n_consumers, h->q_limit,
             pg_exph_sizer_name(h->sizer));
}

/* Gives up on everything still queued or in flight (shutdown deadline, stop).
 * With storage nothing is lost: each item stays in the spool and is replayed
 * at the next start. Without it the samples are gone: counted as dropped
 * (@reason) and returned. Under h->mu. */
static size_t abort_all(struct pg_exph *h, const char *reason)
{
    size_t held = 0;

    h->aborted = true;
    if (h->pending != NULL) {
        h->pending->keep_spooled = true; /* replayed at the next start */
        held += h->pending->samples;
        pg_exph_item_free(h, h->pending);
        h->pending = NULL;
    }
    while (h->q_head != NULL) {
        struct pg_exph_item *it = h->q_head;

        h->q_head = it->next;
        held += it->samples;
        it->keep_spooled = true;
        pg_exph_item_free(h, it);
    }
    h->q_tail = NULL;
    h->q_len = 0;
    for (size_t i = 0; h->consumers != NULL && i < h->n_consumers; i++) {
        struct pg_exph_consumer *c = &h->consumers[i];

        if (c->item != NULL && !c->abandoned) {
            c->item->keep_spooled = true;
            for (size_t p = c->cur; p < c->n_parts; p++) {
                held += c->parts[p].samples;
            }
            if (c->timer != NULL) {
                evtimer_del(c->timer);
            }
            if (c->in_call) {
                c->abandoned = true;
            } else {
                pg_exph_consumer_release(c);
            }
        }
    }
    pg_exph_update_gauges(h);
    if (held > 0 && h->spool == NULL) {
        pg_exph_count_drop(h, reason, held);
    }
    return held;
}

/* The line that says what became of @held samples the exporter gave up on
 * (@why: "shutdown_timeout (10s) passed"): with storage they, and whatever
 * of the previous run was not replayed yet, wait in the spool; without it
 * they are dropped (counted by abort_all). */
static void log_given_up(struct pg_exph *h, const char *why, size_t held)
{
    if (h->spool != NULL) {
        struct pg_spool_stats ss;

        pg_spool_get_stats(h->spool, &ss);
        if (held > 0) {
            pg_log_info(h->log,
                        "%s: %zu samples left in the spool for the next start (%" PRIu64
                        " request(s), %" PRIu64 " bytes, undelivered requests of the previous "
                        "run included)",
                        why, held, ss.pending, ss.pending_bytes);
        } else if (ss.pending > 0) {
            /* Only the previous run's backlog, not replayed yet. */
            pg_log_info(h->log,
                        "%s: %" PRIu64 " request(s) (%" PRIu64 " bytes) left in the spool for "
                        "the next start",
                        why, ss.pending, ss.pending_bytes);
        }
        return;
    }
    if (held > 0) {
        pg_log_error(h->log,
                     "%s: dropped %zu samples not yet delivered (no sending_queue.storage to keep "
                     "them; counted in otelcol_exporter_send_failed_profile_samples)",
                     why, held);
    }
}

static void on_shutdown_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct pg_exph *h = arg;
    char why[96];
    size_t held;

    (void)fd;
    (void)what;
    pg_exph_lock(h);
    held = abort_all(h, "shutdown");
    pg_exph_unlock(h);
    snprintf(why, sizeof(why), "shutdown_timeout (%.0fs) passed",
             (double)h->cfg->shutdown_timeout / 1e9);
    log_given_up(h, why, held);
}

void pg_exph_shutdown(struct pg_exph *h)
{
    struct timeval tv = pg_ns_to_tv(h->cfg->shutdown_timeout);

    pg_exph_lock(h);
    if (h->shutting_down) {
        pg_exph_unlock(h);
        return;
    }
    h->shutting_down = true;
    if (!h->started) {
        pg_exph_unlock(h);
        return;
    }
    flush_pending(h);
    pg_exph_unlock(h);
    h->shutdown_timer = evtimer_new(h->base, on_shutdown_deadline, h);
    if (h->shutdown_timer != NULL) {
        evtimer_add(h->shutdown_timer, &tv);
    }
}

bool pg_exph_idle(const struct pg_exph *h)
{
    bool idle;

    pg_exph_lock(h);
    idle = h->aborted || !h->started || (h->q_len == 0 && h->pending == NULL && h->busy == 0);
    pg_exph_unlock(h);
    return idle;
}

void pg_exph_stop(struct pg_exph *h)
{
    size_t held;
    bool said;

    pg_exph_lock(h);
    said = h->aborted; /* the shutdown deadline said it already */
    held = abort_all(h, "shutdown");
    pg_exph_unlock(h);
    if (!said) {
        log_given_up(h, "exporter stopped", held);
    }
}

void pg_exph_free(struct pg_exph *h)
{
    if (h == NULL) {
        return;
    }
    if (!h->aborted) {
        pg_exph_stop(h);
    }
    for (size_t i = 0; h->consumers != NULL && i < h->n_consumers; i++) {
        if (h->consumers[i].item != NULL) {
            pg_exph_consumer_release(&h->consumers[i]);
        }
        if (h->consumers[i].timer != NULL) {
            event_free(h->consumers[i].timer);
        }
    }
    free(h->consumers);
    if (h->flush_timer != NULL) {
        event_free(h->flush_timer);
    }
    if (h->pump_ev != NULL) {
        event_free(h->pump_ev);
    }
    if (h->replay_timer != NULL) {
        event_free(h->replay_timer);
    }
    if (h->shutdown_timer != NULL) {
        event_free(h->shutdown_timer);
    }
    pg_spool_close(h->spool); /* after every item released */
    pthread_mutex_destroy(&h->mu);
    free(h);
}
