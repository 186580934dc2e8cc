/* SPDX-License-Identifier: Apache-2.0
 * The data path: a receiver's consumer (struct fanout) hands each batch to
 * every pipeline that lists the receiver, each pipeline runs its processors
 * and then offers the batch to its exporters (by reference). Any receiver
 * loop's thread; reads the service's state, never changes it. */
#include <stdio.h>

#include "core/err.h"
#include "pipeline/batch.h"
#include "pipeline/service_internal.h"
#include "pipeline/service_name.h"

/* Takes the caller's reference on @b. */
static enum pg_err run_pipeline(struct pg_service *svc, struct pipeline *p, struct pg_batch *b,
                                struct pg_status *st)
{
    enum pg_err first = PG_ERR_OK;
    struct pg_status est;

    for (size_t i = 0; i < p->n_procs; i++) {
        struct instance *pi = p->procs[i];
        enum pg_err err = pi->ops->process(pi->state, &b, st);
        if (err != PG_ERR_OK) {
            if (st != NULL && st->msg[0] == '\0') {
                pg_status_set(st, err, "%s: %s", pi->log_name, pg_strerror(err));
            }
            pg_batch_unref(b);
            return err;
        }
    }
    if (pg_service_name_missing(b)) {
        enum pg_err err = pg_batch_make_mutable(&b, st);
        if (err != PG_ERR_OK) {
            pg_batch_unref(b);
            return err;
        }
        pg_service_name_ensure(b, svc->m_fallbacks);
    }
    for (size_t i = 0; i < p->n_exps; i++) {
        struct instance *ei = p->exps[i];
        enum pg_err err;
        pg_status_clear(&est);
        err = ei->ops->consume(ei->state, b, &est);
        if (err != PG_ERR_OK && first == PG_ERR_OK) {
            first = err;
            if (st != NULL) {
                pg_status_set(st, err, "%s: %s", ei->log_name, pg_status_text(&est));
            }
        }
    }
    pg_batch_unref(b);
    return first;
}

/* What exporters set aside for this thread's push (would_block) and the
 * push did not use is given back once its entry is over. */
static void fanout_entry_end(const struct fanout *f)
{
    for (size_t i = 0; i < f->n; i++) {
        const struct pipeline *p = f->pipes[i];

        for (size_t j = 0; j < p->n_exps; j++) {
            const struct instance *ei = p->exps[j];

            if (ei->ops->entry_end != NULL) {
                ei->ops->entry_end(ei->state);
            }
        }
    }
}

/* Any receiver loop's thread; no lock: each caller brings its own batch. */
static enum pg_err fanout_consume(struct pg_consumer *self, struct pg_batch *batch,
                                  struct pg_status *st)
{
    struct fanout *f = (struct fanout *)self;
    enum pg_err first = PG_ERR_OK;
    enum svc_state state = pg_svc_state(f->svc);

    if (state != SVC_RUNNING && state != SVC_DELAYING && state != SVC_DRAINING) {
        fanout_entry_end(f);
        pg_batch_unref(batch);
        return pg_status_set(st, PG_ERR_UNAVAILABLE, "pprofgate is not running yet");
    }
    if (f->n == 0) {
        pg_batch_unref(batch);
        return PG_ERR_OK;
    }
    for (size_t i = 0; i < f->n; i++) {
        struct pg_status pst;
        enum pg_err err;
        /* Every pipeline but the last gets its own reference; the last one
         * gets the caller's, so a single pipeline mutates without copying. */
        struct pg_batch *b = i + 1 < f->n ? pg_batch_ref(batch) : batch;
        pg_status_clear(&pst);
        err = run_pipeline(f->svc, f->pipes[i], b, &pst);
        if (err != PG_ERR_OK && first == PG_ERR_OK) {
            first = err;
            if (st != NULL) {
                *st = pst;
            }
        }
    }
    fanout_entry_end(f);
    if (state == SVC_DELAYING && first == PG_ERR_OK) {
        __atomic_add_fetch(&f->svc->delay_accepted, 1, __ATOMIC_RELAXED);
    }
    return first;
}

/* Asks every exporter of every pipeline fed by this receiver; the first one
 * that would make the sender wait names itself in @st. Processors are not
 * asked: they never hold data back. */
static bool fanout_would_block(struct pg_consumer *self, const struct pg_batch *batch,
                               struct pg_status *st)
{
    struct fanout *f = (struct fanout *)self;

    enum svc_state state = pg_svc_state(f->svc);

    if (state != SVC_RUNNING && state != SVC_DELAYING) {
        return false; /* consume() answers for a service that is not running */
    }
    for (size_t i = 0; i < f->n; i++) {
        const struct pipeline *p = f->pipes[i];

        for (size_t j = 0; j < p->n_exps; j++) {
            const struct instance *ei = p->exps[j];

            if (ei->ops->would_block != NULL && ei->ops->would_block(ei->state, batch)) {
                if (st != NULL) {
                    pg_status_set(st, PG_ERR_BUSY,
                                  "%s: sending queue is full (block_on_overflow: the request "
                                  "waits for room)", ei->log_name);
                }
                fanout_entry_end(f); /* held: room the others set aside goes back */
                return true;
            }
        }
    }
    return false;
}

/* Every processor and exporter behind this receiver must take calls from
 * several loops at once (pg_component_ops.any_thread). */
static bool instance_any_thread(const struct instance *in, char *why, size_t why_size)
{
    if (in->ops->any_thread) {
        return true;
    }
    snprintf(why, why_size, "%s takes data on the main loop only", in->log_name);
    return false;
}

static bool fanout_any_thread(struct pg_consumer *self, char *why, size_t why_size)
{
    struct fanout *f = (struct fanout *)self;

    for (size_t i = 0; i < f->n; i++) {
        const struct pipeline *p = f->pipes[i];

        for (size_t j = 0; j < p->n_procs; j++) {
            if (!instance_any_thread(p->procs[j], why, why_size)) {
                return false;
            }
        }
        for (size_t j = 0; j < p->n_exps; j++) {
            if (!instance_any_thread(p->exps[j], why, why_size)) {
                return false;
            }
        }
    }
    return true;
}

/* Lazy samples reach a pipeline only when each of its processors and exporters says it takes
 * them (pg_component_ops.lazy_samples); one that does not makes the receiver unpack. */
static bool fanout_lazy_samples(struct pg_consumer *self)
{
    struct fanout *f = (struct fanout *)self;

    for (size_t i = 0; i < f->n; i++) {
        const struct pipeline *p = f->pipes[i];

        for (size_t j = 0; j < p->n_procs + p->n_exps; j++) {
            const struct instance *in = j < p->n_procs ? p->procs[j] : p->exps[j - p->n_procs];
            if (in->ops->lazy_samples == NULL || !in->ops->lazy_samples(in->state)) {
                return false;
            }
        }
    }
    return f->n > 0;
}

void pg_svc_fanout_init(struct fanout *f, struct pg_service *svc)
{
    f->base.consume = fanout_consume;
    f->base.would_block = fanout_would_block;
    f->base.any_thread = fanout_any_thread;
    f->base.lazy_samples = fanout_lazy_samples;
    f->svc = svc;
}
