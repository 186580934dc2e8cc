/* SPDX-License-Identifier: Apache-2.0
 * One translation job's life, wherever it runs: made from the loop's cache,
 * run (body decoded, translated, a batch built: pg_rx_job_run, on a worker or
 * inline), finished on the loop thread that read it (delivered to the
 * pipeline and answered, dropped when the client left, or held, unanswered,
 * oldest first, while an exporter with block_on_overflow is full), and freed
 * back into the cache. The pool that runs jobs (pprof_workers.c) calls in
 * here; nothing here names the pool. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/memlimit.h"
#include "receiver/pprof_internal.h"

/* Jobs a loop keeps for reuse: as many as it has requests in flight at
 * once in the common case, so memory stays bounded and small. */
#define JOB_CACHE 8

struct rx_job *pg_rx_job_new(struct rx_loop *lp)
{
    struct rx_job *job = lp->free_jobs;

    if (job == NULL) {
        return calloc(1, sizeof(*job));
    }
    lp->free_jobs = job->next;
    lp->n_free_jobs--;
    memset(job, 0, sizeof(*job));
    return job;
}

void pg_rx_job_cache_free(struct rx_loop *lp)
{
    while (lp->free_jobs != NULL) {
        struct rx_job *job = lp->free_jobs;

        lp->free_jobs = job->next;
        free(job);
    }
    lp->n_free_jobs = 0;
}

/* Ends a job: gives back its memory admission and frees it (into its
 * loop's cache when there is room). Loop thread, or the main thread once
 * every other loop's thread has ended. */
void pg_rx_job_free(struct rx_job *job)
{
    struct rx_loop *lp = job->loop;

    pg_membudget_end(&job->budget);
    pg_arena_destroy(job->scratch);
    pg_arena_destroy(job->arena);
    pg_batch_unref(job->batch);
    if (lp != NULL && lp->n_free_jobs < JOB_CACHE) {
        job->next = lp->free_jobs;
        lp->free_jobs = job;
        lp->n_free_jobs++;
        return;
    }
    free(job);
}

/* Enough of a body's first bytes to tell JSON or an OTLP request from pprof. */
#define BODY_HEAD_LEN 16

/* A body the pprof decoder refused: when its first bytes (@head, @len) say
 * it is JSON or an OTLP ExportProfilesServiceRequest, names that, else NULL.
 * Only on the error path. OTLP's first field (resource_profiles, 1, LEN)
 * opens with a LEN field (resource or scope_profiles); pprof's field 1 is a
 * ValueType, which opens with a varint (type, unit). */
static const char *not_pprof_kind(const uint8_t *head, size_t len)
{
    size_t i = 0;

    while (i < len && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n')) {
        i++;
    }
    if (i < len && (head[i] == '{' || head[i] == '[')) {
        return "JSON";
    }
    if (len >= 3 && head[0] == 0x0a) {
        size_t j = 1;

        while (j < len && (head[j] & 0x80) != 0) { /* the length varint */
            j++;
        }
        if (j + 1 < len && (head[j + 1] & 0x07) == 2) {
            return "an OTLP export request (protobuf)";
        }
    }
    return NULL;
}

static void job_work(struct rx *rx, struct rx_job *job);

/* Worker side (or inline): the work, with the job's memory budget current so that what
 * the arenas and the buffer pool take for it is charged to it (core/membudget.h). A
 * charge the memory limiter refused failed an allocation: its words replace whatever
 * the allocation's failure said, and nothing of the request goes on. */
void pg_rx_job_run(struct rx *rx, struct rx_job *job)
{
    struct pg_membudget *prev = pg_membudget_enter(&job->budget);

    job_work(rx, job);
    job->err = pg_membudget_leave_work(&job->budget, prev, job->err, &job->st, rx->log_name);
}

/* Everything that needs neither the request nor the pipeline. Touches only @job,
 * read-only config and atomic metrics. */
static void job_work(struct rx *rx, struct rx_job *job)
{
    const size_t max = (size_t)rx->cfg.server.max_request_body_size;
    struct pg_otlp_request *otlp = NULL;
    const uint8_t *body;
    size_t body_len = 0, inflated = 0;
    enum pg_err err;

    body = job->raw;
    body_len = job->len;
    if (job->codings.n > 0 && job->raw_in_scratch) {
        /* A large body's copy is alone in scratch: the decoded layers go to an
         * arena of their own and the copy goes as soon as it is inflated, so
         * the two never wait out translation together. */
        struct pg_arena *dec = pg_arena_create(pg_arena_cap(job->scratch));

        err = dec == NULL ? pg_status_set(&job->st, PG_ERR_NOMEM, "no memory to decode the body")
                          : pg_http_decode_body(dec, job->raw, job->len, &job->codings, max,
                                                &body, &body_len, &inflated, &job->st);
        pg_arena_destroy(job->scratch);
        job->scratch = dec;
        job->raw = NULL;
    } else if (job->codings.n > 0) {
        /* Decoded layers go to scratch; the raw body is the server's. */
        err = pg_http_decode_body(job->scratch, job->raw, job->len, &job->codings, max, &body,
                                  &body_len, &inflated, &job->st);
    } else {
        err = PG_ERR_OK;
    }
    if (err == PG_ERR_OK) {
        /* The translator frees the body: its first bytes are kept for the
         * hint a refused body gets. */
        uint8_t head[BODY_HEAD_LEN];
        size_t head_len = body_len < sizeof(head) ? body_len : sizeof(head);
        const char *kind;

        memcpy(head, body, head_len);
        /* Takes job->scratch: the body dies before the Sample structs are built. */
        err = rx->translate(rx, job, &job->scratch, body, body_len, &otlp);
        pg_metric_add(rx->m_inflated, inflated + job->stats.inflated_bytes);
        pg_metric_observe(rx->m_latency, pg_mono_s() - job->t0);
        if (err == PG_ERR_MALFORMED && job->route == RX_ROUTE_PPROF &&
            (kind = not_pprof_kind(head, head_len)) != NULL) {
            pg_status_set(&job->st, err,
                          "this is not pprof (plain or gzip'd) but looks like %s; OTLP goes to "
                          "the otlp receiver (:4317 gRPC, :4318 /v1development/profiles)",
                          kind);
        }
    }
    pg_arena_destroy(job->scratch);
    job->scratch = NULL;
    if (err != PG_ERR_OK) {
        job->err = err;
        return;
    }
    pg_metric_add(rx->m_links, job->stats.links);
    if (job->md_err != PG_ERR_OK) {
        job->err = job->md_err;
        job->st = job->md_st;
        return;
    }
    job->batch = pg_batch_new(job->arena, otlp); /* takes the arena, also on failure */
    job->arena = NULL;
    if (job->batch == NULL) {
        job->err = pg_status_set(&job->st, PG_ERR_NOMEM, "no memory for a batch");
        return;
    }
    job->batch->raw_bytes = job->len;
    job->batch->received_unix_nano = (uint64_t)pg_real_ns();
    job->batch->receiver_id = rx->id;
    job->batch->default_service_name = rx->cfg.server.default_service_name;
    job->batch->metadata = job->md;
    job->err = PG_ERR_OK;
}

/* True when the client closed its connection while the job was in flight:
 * the server does not read while a request waits for its answer, so look at
 * the socket itself. EOF counts as gone (as Go's server cancels the request on it). */
static bool client_gone(struct pg_httpd_req *req)
{
    return pg_httpd_client_gone(req);
}

/* Loop thread: the client closed its connection before its answer. Nobody
 * will read it: drop the batch (the client retries or not; either way it did
 * not see a 204). The reply (not counted as an answer) only lets the server
 * end the request and the connection. Frees @job. */
static void abandon(struct rx_job *job)
{
    struct rx *rx = job->rx;

    pg_metric_add(rx->m_abandoned, 1);
    if (job->err == PG_ERR_OK) {
        pg_metric_add(rx->m_refused, job->stats.sample_records);
    }
    pg_log_debug(rx->log_name, "client went away before its answer; request dropped");
    /* Not a refusal anyone reads: not counted as an answer. */
    pg_httpd_reply_body(job->req, 503, NULL, NULL, 0);
    pg_rx_job_free(job);
}

/* Loop thread: hands job->batch to the pipeline and answers. Frees @job.
 * Any loop may call the pipeline: the service serialises its entry
 * (service.c), the heavy part (decode, translate) is already done. */
static void deliver(struct rx_job *job)
{
    struct rx *rx = job->rx;
    struct pg_batch *batch = job->batch;
    enum pg_err err;

    job->batch = NULL;
    err = pg_consumer_consume(rx->next, batch, &job->st); /* takes our reference */
    if (err != PG_ERR_OK) {
        pg_metric_add(rx->m_refused, job->stats.sample_records);
        rx->job_done(job, err, &job->st);
    } else {
        pg_metric_add(rx->m_accepted, job->stats.sample_records);
        rx->job_done(job, PG_ERR_OK, NULL);
    }
    pg_rx_job_free(job);
}

#define HELD_POLL_MS 10

static void held_arm(struct rx_loop *lp)
{
    struct timeval tv = {0, HELD_POLL_MS * 1000};

    if (lp->held_ev != NULL && !evtimer_pending(lp->held_ev, NULL)) {
        evtimer_add(lp->held_ev, &tv);
    }
}

/* An exporter with block_on_overflow is full: the request waits, unanswered,
 * as a Go handler would block in the collector. The client's connection
 * stays open; its memory stays charged. */
static void hold(struct rx_loop *lp, struct rx_job *job)
{
    struct rx *rx = job->rx;
    unsigned long suppressed = 0;
    bool log;

    pthread_mutex_lock(&rx->log_mu);
    log = lp->held == NULL && pg_log_ratelimit_ok(&rx->rl, &suppressed);
    pthread_mutex_unlock(&rx->log_mu);
    if (log) {
        pg_log_info(rx->log_name, "holding requests: %s" PG_LOG_SUPPRESSED_FMT,
                    pg_status_text(&job->st), PG_LOG_SUPPRESSED(suppressed));
    }
    job->held_since = pg_mono_s();
    job->next = NULL;
    *lp->held_tail = job;
    lp->held_tail = &job->next;
    pg_metric_add(rx->m_held, 1);
    held_arm(lp);
}

static struct rx_job *held_pop(struct rx_loop *lp)
{
    struct rx_job *job = lp->held;

    lp->held = job->next;
    if (lp->held == NULL) {
        lp->held_tail = &lp->held;
    }
    job->next = NULL;
    return job;
}

/* Answers a held request without delivering it. Frees @job. */
static void held_refuse(struct rx_job *job, enum pg_err err, const char *why)
{
    struct pg_status st;

    pg_metric_add(job->rx->m_refused, job->stats.sample_records);
    pg_status_set(&st, err, "%s", why);
    job->rx->job_done(job, err, &st);
    pg_rx_job_free(job);
}

/* Oldest first: delivers while there is room, drops requests whose client
 * left, and answers 503 to those held longer than write_timeout (Go's
 * deadline for answering a request; 0 = wait as long as the client does). */
static void on_held_timer(evutil_socket_t fd, short what, void *arg)
{
    struct rx_loop *lp = arg;
    struct rx *rx = lp->rx;
    const double limit = (double)rx->cfg.server.write_timeout / 1e9;

    (void)fd;
    (void)what;
    while (lp->held != NULL) {
        struct rx_job *job = lp->held;
        char why[160];

        if (client_gone(job->req)) {
            abandon(held_pop(lp));
            continue;
        }
        if (!pg_consumer_would_block(job->rx->next, job->batch, &job->st)) {
            deliver(held_pop(lp));
            continue;
        }
        if (limit > 0 && pg_mono_s() - job->held_since >= limit) {
            held_pop(lp);
            snprintf(why, sizeof(why), "%s; held %.0f s (write_timeout), retry later",
                     pg_status_text(&job->st), limit);
            held_refuse(job, PG_ERR_BUSY, why);
            continue;
        }
        break; /* still full: the ones behind it wait too */
    }
    if (lp->held != NULL) {
        held_arm(lp);
    }
}

/* Shutdown: exporters stop taking data now, so nobody held gets room. */
void pg_rx_held_drain(struct rx_loop *lp)
{
    while (lp->held != NULL) {
        held_refuse(held_pop(lp), PG_ERR_UNAVAILABLE, "shutting down; retry later");
    }
}

bool pg_rx_held_init(struct rx_loop *lp)
{
    lp->held_tail = &lp->held;
    lp->held_ev = evtimer_new(lp->base, on_held_timer, lp);
    return lp->held_ev != NULL;
}

/* Loop thread: runs the pipeline and answers. Frees @job. */
void pg_rx_job_finish(struct rx_loop *lp, struct rx_job *job, bool async)
{
    struct rx *rx = job->rx;
    struct pg_httpd_req *req = job->req;
    struct pg_batch *batch = job->batch;
    enum pg_err err = job->err;

    if (async && client_gone(req)) {
        abandon(job);
        return;
    }
    if (err != PG_ERR_OK) {
        rx->job_done(job, err, &job->st);
        pg_rx_job_free(job);
        return;
    }
    /* The batch is all that is left of the admission's estimate (body and
     * scratch are gone): it replaces it, charged until the last exporter drops
     * it. Counting both refused lone bodies the estimate had admitted. */
    pg_membudget_end(&job->budget);
    (void)pg_memlimit_charge_arena(batch->arena, pg_arena_footprint(batch->arena));
    /* Behind requests already held, a new one queues up too: oldest first. */
    if (lp->held != NULL || pg_consumer_would_block(rx->next, batch, &job->st)) {
        hold(lp, job); /* keeps job->batch; answered by on_held_timer() */
        return;
    }
    deliver(job);
}
