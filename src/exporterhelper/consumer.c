/* SPDX-License-Identifier: Apache-2.0
 * The consumers (num_consumers): each takes one item at a time (the previous
 * run's backlog and this run's queue alternately), sends its parts one after the
 * other through the exporter's send(), retries retryable outcomes with
 * backoff (the destination's delay honoured) and, when a request merged from
 * several pushes is rejected for good, bisects it so one bad push cannot
 * drop the others. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/memlimit.h"
#include "exporterhelper/internal.h"

static void consumer_run(struct pg_exph_consumer *c);

/* An outage is said again after 1 minute, then at doubling gaps up to 10. */
#define OUTAGE_REPORT_FIRST_NS (60LL * 1000000000LL)
#define OUTAGE_REPORT_MAX_NS (600LL * 1000000000LL)

/* "2m10s", "45s", "1h3m": a duration in an operator's words. */
static void outage_duration(int64_t ns, char *buf, size_t len)
{
    int64_t s = ns / 1000000000LL;

    if (s < 60) {
        snprintf(buf, len, "%.1fs", (double)ns / 1e9);
    } else if (s < 3600) {
        snprintf(buf, len, s % 60 ? "%lldm%llds" : "%lldm", (long long)(s / 60),
                 (long long)(s % 60));
    } else {
        snprintf(buf, len, "%lldh%lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    }
}

/* Requests the exporter holds for the destination: queued, merging and in
 * flight; with storage, every record not yet delivered. Under h->mu. */
static uint64_t outage_waiting(const struct pg_exph *h)
{
    if (h->spool != NULL) {
        struct pg_spool_stats ss;

        pg_spool_get_stats(h->spool, &ss);
        return ss.pending;
    }
    return (uint64_t)h->q_len + (h->pending != NULL) + h->busy;
}

static const char *outage_word(const struct pg_exph_result *r)
{
    return r->status != NULL &&
                   (strcmp(r->status, "UNAVAILABLE") == 0 ||
                    strcmp(r->status, "DEADLINE_EXCEEDED") == 0)
               ? "unreachable"
               : "not accepting exports";
}

/* A retryable failure: one line when an outage begins and one at each
 * report time while it lasts, instead of a line per attempt. */
static void outage_failed(struct pg_exph *h, const struct pg_exph_result *r, int64_t now)
{
    char dur[32];

    h->outage_failures++;
    if (h->outage_since_ns == 0) {
        h->outage_since_ns = now;
        h->outage_gap_ns = OUTAGE_REPORT_FIRST_NS;
        h->outage_next_ns = now + h->outage_gap_ns;
        pg_log_warn(h->log,
                    "destination %s (%s: %s); retrying with backoff, %" PRIu64
                    " request(s) waiting (said again while it lasts, at most every 10m; "
                    "each attempt at debug level)",
                    outage_word(r), r->status, r->message, outage_waiting(h));
        return;
    }
    if (now < h->outage_next_ns) {
        return;
    }
    outage_duration(now - h->outage_since_ns, dur, sizeof(dur));
    pg_log_warn(h->log, "destination %s for %s, %" PRIu64 " request(s) waiting (%" PRIu64
                " failed attempts; last: %s: %s)",
                outage_word(r), dur, outage_waiting(h), h->outage_failures, r->status, r->message);
    h->outage_gap_ns = h->outage_gap_ns * 2 > OUTAGE_REPORT_MAX_NS ? OUTAGE_REPORT_MAX_NS
                                                                    : h->outage_gap_ns * 2;
    h->outage_next_ns = now + h->outage_gap_ns;
}

/* An export went through: an outage, if there was one, is over. */
static void outage_over(struct pg_exph *h)
{
    char dur[32];

    if (h->outage_since_ns == 0) {
        return;
    }
    outage_duration(pg_mono_ns() - h->outage_since_ns, dur, sizeof(dur));
    pg_log_info(h->log, "delivering again after a %s outage (%" PRIu64 " failed attempts, %" PRIu64
                " request(s) waiting)", dur, h->outage_failures, outage_waiting(h));
    h->outage_since_ns = 0;
    h->outage_failures = 0;
}

void *pg_exph_consumer_exporter(const struct pg_exph_consumer *c)
{
    return c->h->exporter;
}

void pg_exph_consumer_release(struct pg_exph_consumer *c)
{
    struct pg_exph *h = c->h;

    for (size_t i = 0; i < c->n_parts; i++) {
        free(c->parts[i].body);
    }
    free(c->parts);
    c->parts = NULL;
    c->n_parts = 0;
    c->cur = 0;
    pg_exph_item_free(h, c->item);
    c->item = NULL;
    h->busy--;
    c->replay_len = 0;
    if (c->replay_bytes > 0) {
        pg_exph_replay_charge(c, 0);
        if (h->pump_ev != NULL) {
            event_active(h->pump_ev, 0, 0); /* the replay held back by its budget */
        }
    }
    if (c->win_bytes > 0) {
        h->win_used -= c->win_bytes;
        pg_memlimit_release((size_t)c->win_bytes);
        c->win_bytes = 0;
        if (h->pump_ev != NULL) {
            event_active(h->pump_ev, 0, 0); /* consumers held back by the window */
        }
    }
}

static void send_part(struct pg_exph_consumer *c)
{
    struct pg_exph *h = c->h;
    struct pg_exph_part *p = &c->parts[c->cur];
    struct pg_status st;
    enum pg_err err;

    pg_status_clear(&st);
    c->in_call = true;
    /* The part is this consumer's: pushes may queue meanwhile. */
    pg_exph_unlock(h);
    err = h->ops->send(h->exporter, c, p->body, p->len, &st);
    pg_exph_lock(h);
    if (err != PG_ERR_OK) {
        c->in_call = false;
        pg_log_error(h->log, "cannot start an export: %s", pg_status_text(&st));
        pg_exph_count_drop(h, "internal", p->samples);
        c->cur++;
        consumer_run(c);
    }
}

void pg_exph_on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    struct pg_exph_consumer *c = arg;

    (void)fd;
    (void)what;
    pg_exph_lock(c->h);
    send_part(c);
    pg_exph_unlock(c->h);
}

/* A permanent rejection of an item merged from several pushes: instead of
 * dropping all of them for one bad request, its sources go back to the head
 * of the queue in two halves (each half again, down to the single culprit). */
static bool bisect(struct pg_exph_consumer *c, const char *why)
{
    struct pg_exph *h = c->h;
    struct pg_exph_item *it = c->item;
    size_t n = it->n_batches > 0 ? it->n_batches : it->n_spool_ids;
    struct pg_exph_item *half_items[2];
    size_t half = n / 2;

    if (n < 2 || it->raw != NULL) {
        return false;
    }
    half_items[0] = calloc(1, sizeof(*half_items[0]));
    half_items[1] = calloc(1, sizeof(*half_items[1]));
    if (half_items[0] == NULL || half_items[1] == NULL) {
        free(half_items[0]);
        free(half_items[1]);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        struct pg_exph_item *d = half_items[i < half ? 0 : 1];
        bool ok = it->n_batches > 0 ? pg_exph_item_add(d, it->batches[i],
                                                       pg_batch_sample_count(it->batches[i]))
                                    : pg_exph_item_add_spool_id(d, it->spool_ids[i]);
        if (!ok) {
            pg_exph_item_free(h, half_items[0]); /* nothing moved yet: the originals stay */
            pg_exph_item_free(h, half_items[1]);
            return false;
        }
    }
    if (it->n_batches == 0) {
        half_items[0]->count_samples = half_items[1]->count_samples = true;
        it->n_spool_ids = 0; /* moved: not acked with @it */
    }
    half_items[0]->units = it->units / 2;
    half_items[1]->units = it->units - half_items[0]->units;
    it->units = 0;
    pg_log_warn(h->log,
                "export of %zu samples from %zu requests rejected, not retryable (%s); retrying "
                "them in two halves so one bad request cannot drop the others",
                it->samples, n, why);
    half_items[1]->next = h->q_head;
    half_items[0]->next = half_items[1];
    h->q_head = half_items[0];
    if (h->q_tail == NULL) {
        h->q_tail = half_items[1];
    }
    h->q_len += 2;
    return true;
}

static void send_done_locked(struct pg_exph_consumer *c, const struct pg_exph_result *r)
{
    struct pg_exph *h = c->h;
    struct pg_exph_part *p;
    int64_t wait;

    c->in_call = false;
    if (c->abandoned) {
        /* The body was borrowed by the send until now: release it only here. */
        c->abandoned = false;
        pg_exph_consumer_release(c);
        pg_exph_update_gauges(h);
        return;
    }
    p = &c->parts[c->cur];
    if (r->outcome == PG_EXPH_SENT) {
        outage_over(h);
        pg_metric_add(h->m_sent, p->samples);
        pg_metric_add(h->m_sent_requests, 1);
        c->cur++;
        consumer_run(c);
        return;
    }
    if (r->outcome == PG_EXPH_PERMANENT) {
        if (c->cur == 0 && c->n_parts == 1 && bisect(c, r->status)) {
            pg_exph_consumer_release(c);
            consumer_run(c);
            pg_exph_pump(h);
            return;
        }
        pg_log_error(h->log, "export of %zu samples rejected, not retryable: %s: %s", p->samples,
                     r->status, r->message);
        pg_exph_count_drop(h, r->reason != NULL ? r->reason : "permanent", p->samples);
        c->cur++;
        consumer_run(c);
        return;
    }
    if (!pg_retry_next(&c->retry, &h->cfg->retry, pg_mono_ns(), r->retry_after_ns, &wait)) {
        pg_log_error(h->log, "export of %zu samples failed%s: %s: %s", p->samples,
                     h->cfg->retry.enabled ? ", retries exhausted" : " (retry_on_failure disabled)",
                     r->status, r->message);
        pg_exph_count_drop(h, h->cfg->retry.enabled ? "retry_exhausted" : "retry_disabled",
                           p->samples);
        c->cur++;
        consumer_run(c);
        return;
    }
    outage_failed(h, r, pg_mono_ns());
    pg_log_debug(h->log, "export of %zu samples failed (%s: %s); retrying in %lld ms", p->samples,
                 r->status, r->message, (long long)(wait / 1000000));
    pg_metric_add(h->m_retries, 1);
    {
        struct timeval tv = pg_ns_to_tv(wait);

        evtimer_add(c->timer, &tv);
    }
}

void pg_exph_send_done(struct pg_exph_consumer *c, const struct pg_exph_result *r)
{
    struct pg_exph *h = c->h;

    pg_exph_lock(h);
    send_done_locked(c, r);
    pg_exph_unlock(h);
}

/* Takes the previous run's next record for @c, within the replay's budget. */
static bool take_replayed(struct pg_exph_consumer *c)
{
    struct pg_exph *h = c->h;

    if (!pg_exph_replay_room(h)) {
        return false;
    }
    c->item = pg_exph_replay_take(h);
    if (c->item == NULL) {
        return false;
    }
    h->live_turn = true;
    c->replay_len = c->item->raw_len;
    if (h->max_request_bytes > 0 && c->replay_len > h->max_request_bytes) {
        c->rss_before = pg_memlimit_read_rss(); /* to learn what decoding it takes */
    }
    pg_exph_replay_charge(c, pg_exph_replay_footprint(h, c->item->raw_len));
    return true;
}

/* Takes this run's queue head for @c, its records within the window. */
static bool take_live(struct pg_exph_consumer *c)
{
    struct pg_exph *h = c->h;

    if (h->q_head == NULL) {
        return false;
    }
    if (h->spool != NULL && h->q_head->n_spool_ids > 0) {
        uint64_t need = 0;

        for (size_t i = 0; i < h->q_head->n_spool_ids; i++) {
            need += pg_spool_record_len(h->spool, h->q_head->spool_ids[i]);
        }
        if (h->win_used > 0 && h->win_used + need > h->win_limit) {
            return false;
        }
        c->win_bytes = need;
        h->win_used += need;
        pg_memlimit_charge((size_t)need);
    }
    c->item = h->q_head;
    h->q_head = c->item->next;
    if (h->q_head == NULL) {
        h->q_tail = NULL;
    }
    h->q_len--;
    h->live_turn = false;
    return true;
}

/* Takes the next item for @c. While the previous run's backlog replays,
 * its records and this run's queue alternate (live_turn), so new pushes
 * are not sent after the whole backlog; either goes alone when the other
 * has nothing or no room (the replay's budget, the window). False when
 * there is nothing to take now (a release or the replay timer pumps
 * again). At shutdown the replay stops: the rest waits for the next start. */
static bool take(struct pg_exph_consumer *c)
{
    struct pg_exph *h = c->h;
    bool replaying = h->spool != NULL && !h->replay_done && !h->shutting_down;

    if (!replaying) {
        return take_live(c);
    }
    return h->live_turn ? take_live(c) || take_replayed(c) : take_replayed(c) || take_live(c);
}

/* Sends the current part, or finishes the item and picks up the next. */
static void consumer_run(struct pg_exph_consumer *c)
{
    struct pg_exph *h = c->h;
    bool prepared;

    for (;;) {
        if (c->item != NULL && c->cur < c->n_parts) {
            pg_retry_begin(&c->retry, &h->cfg->retry, pg_mono_ns(),
                           h->seed++ * 0x9e3779b97f4a7c15ULL);
            send_part(c);
            return;
        }
        if (c->item != NULL) {
            pg_exph_consumer_release(c);
        }
        if (h->aborted) {
            pg_exph_update_gauges(h);
            return;
        }
        if (h->spool != NULL && h->win_limit == 0) {
            pg_exph_window_init(h);
        }
        if (!take(c)) {
            pg_exph_update_gauges(h);
            return;
        }
        h->busy++;
        c->prep_bytes = 0;
        /* Encoding and splitting the taken item is the heavy part: pushes
         * from the loops queue meanwhile. */
        pg_exph_unlock(h);
        prepared = pg_exph_prepare(c);
        pg_exph_lock(h);
        if (!prepared) {
            pg_exph_consumer_release(c);
        } else if (c->replay_bytes > 0) {
            pg_exph_replay_prepared(c);
        }
    }
}

static bool has_work(const struct pg_exph *h)
{
    return h->q_head != NULL ||
           (h->spool != NULL && !h->replay_done && !h->shutting_down && !h->aborted);
}

void pg_exph_pump(struct pg_exph *h)
{
    for (size_t i = 0; i < h->n_consumers && has_work(h); i++) {
        if (h->consumers[i].item == NULL) {
            consumer_run(&h->consumers[i]);
        }
    }
}
