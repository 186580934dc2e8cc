/* SPDX-License-Identifier: Apache-2.0
 * The otlp receiver's held requests: while an exporter with
 * block_on_overflow is full, a decoded request waits unanswered on the loop
 * that read it (as a Go handler blocks in the Collector, and as the pprof
 * receiver holds its pushes), oldest first, polled by a timer: delivered
 * once there is room, answered UNAVAILABLE / 503 when its deadline comes
 * (grpc-timeout, or the HTTP write_timeout), dropped when its client leaves.
 * Loop thread only; each loop has its own list. */
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "receiver/otlp_internal.h"

#define HELD_POLL_MS 10

static void held_arm(struct otlp_loop *lp)
{
    struct timeval tv = {0, HELD_POLL_MS * 1000};

    if (lp->held_ev != NULL && !evtimer_pending(lp->held_ev, NULL)) {
        evtimer_add(lp->held_ev, &tv);
    }
}

static void held_unlink(struct otlp_loop *lp, struct otlp_held *h)
{
    for (struct otlp_held **pp = &lp->held; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == h) {
            *pp = h->next;
            if (lp->held_tail == &h->next) {
                lp->held_tail = pp;
            }
            h->next = NULL;
            return;
        }
    }
}

/* Ends @h (unlinked): its batch, unless delivered, is dropped and its
 * samples counted refused. */
static void held_free(struct otlp_held *h, bool refused)
{
    if (refused) {
        pg_metric_add(h->lp->rx->side[h->t].m_refused, h->samples);
    }
    pg_batch_unref(h->batch);
    free(h);
}

/* Answers @h (unlinked) with @err (its reason in @why) without delivering it. */
static void held_refuse(struct otlp_held *h, enum pg_err err, const char *why)
{
    struct pg_status st;

    pg_status_set(&st, err, "%s", why);
    h->done(h, err, &st);
    held_free(h, true);
}

static void held_deliver(struct otlp_held *h)
{
    struct otlp_rx *rx = h->lp->rx;
    struct pg_batch *batch = h->batch;
    struct pg_status st;
    enum pg_err err;

    pg_status_clear(&st);
    h->batch = NULL;
    err = pg_consumer_consume(rx->next, batch, &st); /* takes our reference */
    pg_metric_add(err == PG_ERR_OK ? rx->side[h->t].m_accepted : rx->side[h->t].m_refused,
                  h->samples);
    h->done(h, err, &st);
    held_free(h, false);
}

/* Oldest first: drops requests whose client left, delivers while there is
 * room, answers those past their deadline; the rest wait behind the first
 * that still may. */
static void on_held_timer(evutil_socket_t fd, short what, void *arg)
{
    struct otlp_loop *lp = arg;
    struct otlp_rx *rx = lp->rx;
    struct otlp_held *h;

    (void)fd;
    (void)what;
    while ((h = lp->held) != NULL) {
        struct pg_status st;
        char why[PG_STATUS_MSG_MAX];

        if (h->gone != NULL && h->gone(h)) {
            held_unlink(lp, h);
            pg_log_debug(rx->log_name, "%s: client went away while held; request dropped",
                         otlp_transport_names[h->t]);
            h->done(h, PG_ERR_UNAVAILABLE, NULL); /* lets the server end it; not an answer */
            held_free(h, true);
            continue;
        }
        pg_status_clear(&st);
        if (!pg_consumer_would_block(rx->next, h->batch, &st)) {
            held_unlink(lp, h);
            held_deliver(h);
            continue;
        }
        if (h->until > 0 && pg_mono_s() >= h->until) {
            held_unlink(lp, h);
            snprintf(why, sizeof(why), "%.200s; held %.1f s (%s), retry later",
                     pg_status_text(&h->st), pg_mono_s() - h->since,
                     h->t == OTLP_GRPC ? "the call's deadline" : "write_timeout");
            held_refuse(h, PG_ERR_BUSY, why);
            continue;
        }
        break; /* still full: the ones behind it wait too */
    }
    if (lp->held != NULL) {
        held_arm(lp);
    }
}

struct otlp_held *otlp_held_new(struct otlp_loop *lp, enum otlp_transport t,
                                struct pg_batch *batch, size_t samples,
                                const struct pg_status *why)
{
    struct otlp_held *h = calloc(1, sizeof(*h));

    if (h == NULL) {
        return NULL;
    }
    h->lp = lp;
    h->t = t;
    h->batch = batch;
    h->samples = samples;
    h->st = *why;
    return h;
}

void otlp_hold(struct otlp_held *h)
{
    struct otlp_loop *lp = h->lp;
    struct otlp_rx *rx = lp->rx;
    unsigned long suppressed = 0;

    if (lp->held == NULL &&
        pg_rxh_reason_log_ok(&rx->reasons, 4000, "holding requests", &suppressed)) {
        pg_log_info(rx->log_name, "%s: holding requests: %s" PG_LOG_SUPPRESSED_FMT,
                    otlp_transport_names[h->t], pg_status_text(&h->st),
                    PG_LOG_SUPPRESSED(suppressed));
    }
    h->since = pg_mono_s();
    h->next = NULL;
    *lp->held_tail = h;
    lp->held_tail = &h->next;
    pg_metric_add(rx->m_held, 1);
    held_arm(lp);
}

void otlp_held_forget(struct otlp_held *h)
{
    held_unlink(h->lp, h);
    held_free(h, true);
}

void otlp_held_drain(struct otlp_loop *lp)
{
    struct otlp_held *h;

    while ((h = lp->held) != NULL) {
        held_unlink(lp, h);
        held_refuse(h, PG_ERR_UNAVAILABLE, "shutting down; retry later");
    }
}

bool otlp_held_init(struct otlp_loop *lp)
{
    lp->held = NULL;
    lp->held_tail = &lp->held;
    lp->held_ev = evtimer_new(lp->base, on_held_timer, lp);
    return lp->held_ev != NULL;
}

void otlp_held_free(struct otlp_loop *lp)
{
    otlp_held_drain(lp);
    if (lp->held_ev != NULL) {
        event_free(lp->held_ev);
        lp->held_ev = NULL;
    }
}
