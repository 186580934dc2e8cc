/* SPDX-License-Identifier: Apache-2.0
 * The exporter helper's lifecycle on top of its parts: create (metrics,
 * consumers), start (timers, storage, the replay), describe, shutdown with
 * its drain until shutdown_timeout, abort, stop and free. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/vec.h"
#include "exporterhelper/internal.h"
#include "storage/storage.h"

static void on_flush_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pg_exph_lock(arg);
    pg_exph_flush_pending(arg);
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
    pg_exph_flush_pending(h);
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
    pg_storage_close(h->spool); /* after every item released */
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* ---- component ops for a state that starts with its helper ------------- */

static struct pg_exph *state_helper(void *state)
{
    return state != NULL ? *(struct pg_exph **)state : NULL;
}

enum pg_err pg_exph_op_consume(void *state, struct pg_batch *batch, struct pg_status *st)
{
    return pg_exph_consume(state_helper(state), batch, st);
}

bool pg_exph_op_would_block(void *state, const struct pg_batch *batch)
{
    return state != NULL && pg_exph_would_block(state_helper(state), batch);
}

void pg_exph_op_entry_end(void *state)
{
    if (state != NULL) {
        pg_exph_entry_end(state_helper(state));
    }
}

void pg_exph_op_shutdown(void *state)
{
    if (state != NULL) {
        pg_exph_shutdown(state_helper(state));
    }
}

bool pg_exph_op_idle(void *state)
{
    return pg_exph_idle(state_helper(state));
}
