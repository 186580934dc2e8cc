/* SPDX-License-Identifier: Apache-2.0
 * The pprof receiver's translation jobs: a body is decoded and translated
 * inline on the loop (small pushes) or on a pool of worker threads (two
 * lanes by estimated cost: cheap jobs first, one worker kept for them; and
 * a third, lowest lane of background work, struct pg_work: scrapes), then
 * delivered to the pipeline and answered on the thread of the loop that read
 * it (each loop has its own held queue and done list); while an
 * exporter with block_on_overflow is full, finished jobs wait in the held
 * queue, unanswered, oldest first. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/cgroup.h"
#include "core/clock.h"
#include "core/memlimit.h"
#include "core/thread_sched.h"
#include "receiver/pprof_internal.h"

/* Bodies up to this size are translated on the loop even with workers: an
 * SDK push costs ~150 us, less than the hand-off, and it never queues behind
 * a large profile (small pushes keep their latency under a flood). */
#define INLINE_MAX_BODY (64 * 1024)
/* What a job costs grows with what it inflates to, not with what arrived: a
 * 23 KB gzip body can inflate to 12 MB (1e6 samples, ~1.7 s of CPU). Jobs
 * estimated above this go to the pool's large lane, never inline. */
#define SMALL_COST ((size_t)1 << 20)

/* Worker threads: a locked todo list in (from every loop), and out a
 * locked done list per loop (rx_loop.done) with an eventfd that wakes that
 * loop when its list becomes non-empty. */
struct rx_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Two lanes, under mu: small jobs first, and one worker (of two or
     * more) only ever runs small ones, so a cheap push never waits behind
     * expensive ones. */
    struct rx_job *todo, **todo_tail;   /* small */
    struct rx_job *big, **big_tail;     /* large (by estimated cost) */
    size_t big_running;
    const char **big_peers;             /* n_threads: the peers of running large jobs */
    /* Background work (pg_work_lane): taken only when neither request lane
     * has a job a worker may take, and never by the last free worker. */
    struct pg_work *low, **low_tail;
    size_t low_running;
    const void **low_owners;            /* n_threads: owners of running background work */
    pthread_cond_t low_cv;              /* a background work ended (cancel waits) */
    bool stop;                        /* under mu */
    pthread_t *threads;
    size_t n_threads;
    size_t in_flight;                 /* atomic: queued, running or done, all loops */
};


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
static void job_free(struct rx_job *job)
{
    struct rx_loop *lp = job->loop;

    pg_memlimit_release(job->admitted);
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

/* Worker side (or inline): everything that needs neither the request nor
 * the pipeline. Touches only @job, read-only config and atomic metrics. */
static void job_run(struct rx *rx, struct rx_job *job)
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
    job_free(job);
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
    job_free(job);
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
    job_free(job);
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
        job_free(job);
        return;
    }
    /* The batch is all that is left of the admission's estimate (body and
     * scratch are gone): it replaces it, charged until the last exporter drops
     * it. Counting both refused lone bodies the estimate had admitted. */
    pg_memlimit_release(job->admitted);
    job->admitted = 0;
    (void)pg_memlimit_charge_arena(batch->arena, pg_arena_footprint(batch->arena));
    /* Behind requests already held, a new one queues up too: oldest first. */
    if (lp->held != NULL || pg_consumer_would_block(rx->next, batch, &job->st)) {
        hold(lp, job); /* keeps job->batch; answered by on_held_timer() */
        return;
    }
    deliver(job);
}

/* Workers run at a lower priority than the loop (Linux nice is per
 * thread): a flood of large bodies then cannot starve accepting, answering
 * and the small pushes the loop translates itself. */
#define WORKER_NICE 5
/* Scheduler slice (Linux 6.12+): a short one bounds how long the loop
 * (pprof.c sets its own) waits for a core the workers hold (the default is
 * ~3 ms, paid at every wakeup of a request). */
#define WORKER_SLICE_NS (500u * 1000u)

/* Under mu: may one more worker start a large job or background work? Not
 * the last free one. */
static bool big_allowed(const struct rx_pool *pool)
{
    return pool->n_threads < 2 || pool->big_running + pool->low_running + 1 < pool->n_threads;
}

/* Under mu: a worker's next background work, or NULL. */
static struct pg_work *take_low(struct rx_pool *pool)
{
    struct pg_work *w = pool->low;

    if (w == NULL || !big_allowed(pool)) {
        return NULL;
    }
    pool->low = w->next;
    if (pool->low == NULL) {
        pool->low_tail = &pool->low;
    }
    pool->low_owners[pool->low_running++] = w->owner;
    return w;
}

/* Worker: runs background work @w and hands it to its loop. */
static void run_low(struct rx_pool *pool, struct pg_work *w)
{
    struct rx_loop *lp = w->lane_loop;
    bool wake;

    w->next = NULL;
    w->run(w);
    pthread_mutex_lock(&pool->mu);
    for (size_t i = 0; i < pool->low_running; i++) {
        if (pool->low_owners[i] == w->owner) {
            pool->low_owners[i] = pool->low_owners[--pool->low_running];
            break;
        }
    }
    wake = lp->done == NULL && lp->work_done == NULL;
    w->next = lp->work_done;
    lp->work_done = w;
    pthread_cond_broadcast(&pool->low_cv);
    if (pool->big != NULL || pool->low != NULL) {
        pthread_cond_broadcast(&pool->cv); /* a waiting worker may take one now */
    }
    pthread_mutex_unlock(&pool->mu);
    if (wake) {
        uint64_t one = 1;

        (void)!write(lp->done_efd, &one, sizeof(one));
    }
}

/* Same client: "ip:port" up to the last colon (a connection's port differs). */
static bool same_host(const char *a, const char *b)
{
    const char *ca = a != NULL ? strrchr(a, ':') : NULL, *cb = b != NULL ? strrchr(b, ':') : NULL;

    if (ca == NULL || cb == NULL) {
        return a == b;
    }
    return ca - a == cb - b && memcmp(a, b, (size_t)(ca - a)) == 0;
}

/* Under mu, big lane not empty: the oldest job of the client with the fewest
 * large jobs running, so one client looping expensive bodies over many
 * connections gets a share of the workers, not all of them. */
static struct rx_job *take_big(struct rx_pool *pool)
{
    struct rx_job **best = NULL, *job;
    size_t best_n = SIZE_MAX;

    for (struct rx_job **pp = &pool->big; *pp != NULL && best_n > 0; pp = &(*pp)->next) {
        size_t n = 0;

        for (size_t i = 0; i < pool->big_running; i++) {
            n += same_host(pool->big_peers[i], (*pp)->md.peer_addr);
        }
        if (n < best_n) {
            best_n = n;
            best = pp;
        }
    }
    job = *best;
    *best = job->next;
    if (pool->big_tail == &job->next) {
        pool->big_tail = best;
    }
    pool->big_peers[pool->big_running++] = job->md.peer_addr;
    return job;
}

static void *worker_main(void *arg)
{
    struct rx *rx = arg;
    struct rx_pool *pool = rx->pool;

    pg_sched_bulk_thread(WORKER_NICE, WORKER_SLICE_NS);

    for (;;) {
        struct rx_job *job;
        bool wake;

        bool big = false;

        struct pg_work *w = NULL;

        pthread_mutex_lock(&pool->mu);
        while (pool->todo == NULL && !pool->stop &&
               ((pool->big == NULL && pool->low == NULL) || !big_allowed(pool))) {
            pthread_cond_wait(&pool->cv, &pool->mu);
        }
        if (pool->stop) {
            pthread_mutex_unlock(&pool->mu);
            return NULL;
        }
        if (pool->todo == NULL && pool->big == NULL && (w = take_low(pool)) != NULL) {
            pthread_mutex_unlock(&pool->mu);
            run_low(pool, w);
            continue;
        }
        if (pool->todo != NULL) {
            job = pool->todo;
            pool->todo = job->next;
            if (pool->todo == NULL) {
                pool->todo_tail = &pool->todo;
            }
        } else {
            job = take_big(pool);
            big = true;
        }
        pthread_mutex_unlock(&pool->mu);

        job->next = NULL;
        job_run(job->rx, job);
        if (big) {
            pthread_mutex_lock(&pool->mu);
            for (size_t i = 0; i < pool->big_running; i++) {
                if (pool->big_peers[i] == job->md.peer_addr) {
                    pool->big_peers[i] = pool->big_peers[pool->big_running - 1];
                    break;
                }
            }
            pool->big_running--;
            if (pool->big != NULL) {
                pthread_cond_broadcast(&pool->cv); /* a waiting worker may take it now */
            }
            pthread_mutex_unlock(&pool->mu);
        }

        {
            struct rx_loop *lp = job->loop;

            pthread_mutex_lock(&pool->mu);
            wake = lp->done == NULL;
            *lp->done_tail = job;
            lp->done_tail = &job->next;
            pthread_mutex_unlock(&pool->mu);
            if (wake) {
                uint64_t one = 1;

                /* Cannot fail short of a counter overflow; the loop drains it. */
                (void)!write(lp->done_efd, &one, sizeof(one));
            }
        }
    }
}

/* Loop thread: the eventfd fired; finish every completed job. */
static void on_jobs_done(evutil_socket_t fd, short what, void *arg)
{
    struct rx_loop *lp = arg;
    struct rx_pool *pool = lp->rx->pool;
    struct rx_job *list;
    uint64_t n;

    (void)what;
    (void)!read(fd, &n, sizeof(n));
    struct pg_work *works;

    pthread_mutex_lock(&pool->mu);
    list = lp->done;
    lp->done = NULL;
    lp->done_tail = &lp->done;
    works = lp->work_done;
    lp->work_done = NULL;
    pthread_mutex_unlock(&pool->mu);
    while (list != NULL) {
        struct rx_job *job = list;

        list = job->next;
        __atomic_sub_fetch(&pool->in_flight, 1, __ATOMIC_RELEASE);
        pg_rx_job_finish(lp, job, true);
    }
    while (works != NULL) {
        struct pg_work *w = works;

        works = w->next;
        w->next = NULL;
        w->done(w);
    }
}

/* ---- the background lane (struct pg_work_lane) -------------------------- */

static bool lane_submit(void *arg, struct event_base *base, struct pg_work *w)
{
    struct rx *rx = arg;
    struct rx_pool *pool = rx->pool;
    struct rx_loop *lp = NULL;

    for (size_t i = 0; pool != NULL && i < rx->n_loops && lp == NULL; i++) {
        lp = rx->loops[i].base == base ? &rx->loops[i] : NULL;
    }
    if (lp == NULL || pool->n_threads == 0) {
        return false;
    }
    w->lane_loop = lp;
    w->next = NULL;
    pthread_mutex_lock(&pool->mu);
    *pool->low_tail = w;
    pool->low_tail = &w->next;
    pthread_cond_broadcast(&pool->cv); /* only some workers may take it */
    pthread_mutex_unlock(&pool->mu);
    return true;
}

/* Moves @owner's work out of *@pp onto *@out. Under mu. */
static void take_owned(struct pg_work **pp, const void *owner, struct pg_work **out)
{
    while (*pp != NULL) {
        struct pg_work *w = *pp;

        if (w->owner == owner) {
            *pp = w->next;
            w->next = *out;
            *out = w;
        } else {
            pp = &w->next;
        }
    }
}

static struct pg_work *lane_cancel(void *arg, const void *owner)
{
    struct rx *rx = arg;
    struct rx_pool *pool = rx->pool;
    struct pg_work *out = NULL;
    bool running = true;

    if (pool == NULL) {
        return NULL;
    }
    pthread_mutex_lock(&pool->mu);
    while (running) {
        running = false;
        for (size_t i = 0; i < pool->low_running; i++) {
            running = running || pool->low_owners[i] == owner;
        }
        if (running) {
            pthread_cond_wait(&pool->low_cv, &pool->mu);
        }
    }
    take_owned(&pool->low, owner, &out);
    pool->low_tail = &pool->low;
    while (*pool->low_tail != NULL) {
        pool->low_tail = &(*pool->low_tail)->next;
    }
    for (size_t i = 0; i < rx->n_loops; i++) {
        take_owned(&rx->loops[i].work_done, owner, &out);
    }
    pthread_mutex_unlock(&pool->mu);
    return out;
}

struct pg_work_lane pg_rx_work_lane(struct rx *rx)
{
    struct pg_work_lane lane = {rx, lane_submit, lane_cancel};

    return lane;
}

bool pg_rx_pool_attach(struct rx *rx, struct rx_loop *lp)
{
    lp->done_tail = &lp->done;
    lp->done_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (lp->done_efd < 0) {
        return false;
    }
    (void)rx;
    lp->done_ev = event_new(lp->base, lp->done_efd, EV_READ | EV_PERSIST, on_jobs_done, lp);
    return lp->done_ev != NULL && event_add(lp->done_ev, NULL) == 0;
}

/* What the process can use (affinity and cgroup quota), capped. */
static int worker_default(void)
{
    int n = pg_usable_cpus();

    return n > MAX_WORKERS ? MAX_WORKERS : n;
}

enum pg_err pg_rx_pool_start(struct rx *rx, int64_t workers, struct pg_status *st)
{
    size_t n = workers < 0 ? (size_t)worker_default() : (size_t)workers;
    struct rx_pool *pool = calloc(1, sizeof(*pool));

    if (pool == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", rx->log_name);
    }
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->cv, NULL);
    pthread_cond_init(&pool->low_cv, NULL);
    pool->todo_tail = &pool->todo;
    pool->big_tail = &pool->big;
    pool->low_tail = &pool->low;
    pool->threads = calloc(n, sizeof(*pool->threads));
    pool->big_peers = calloc(n + 1, sizeof(*pool->big_peers));
    pool->low_owners = calloc(n + 1, sizeof(*pool->low_owners));
    rx->pool = pool;
    if (pool->threads == NULL || pool->big_peers == NULL || pool->low_owners == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot set up worker threads: %s",
                             rx->log_name, strerror(errno));
    }
    for (size_t i = 0; i < rx->n_loops; i++) {
        if (!pg_rx_pool_attach(rx, &rx->loops[i])) {
            return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot watch a worker eventfd: %s",
                                 rx->log_name, strerror(errno));
        }
    }
    for (size_t i = 0; i < n; i++) {
        int e = pthread_create(&pool->threads[i], NULL, worker_main, rx);

        if (e != 0) {
            return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot start worker thread %zu: %s",
                                 rx->log_name, i + 1, strerror(e));
        }
        pool->n_threads++;
    }
    return PG_ERR_OK;
}

/* Joins the workers; jobs not finished by then are answered 503 (the
 * shutdown deadline passed) and freed. Loop thread, before pg_httpd_free. */
void pg_rx_pool_destroy(struct rx *rx)
{
    struct rx_pool *pool = rx->pool;

    if (pool == NULL) {
        return;
    }
    pthread_mutex_lock(&pool->mu);
    pool->stop = true;
    pthread_cond_broadcast(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
    for (size_t i = 0; i < pool->n_threads; i++) {
        pthread_join(pool->threads[i], NULL);
    }
    for (size_t l = 0; l <= rx->n_loops + 1; l++) {
        struct rx_job *list = l < rx->n_loops    ? rx->loops[l].done
                              : l == rx->n_loops ? pool->todo
                                                 : pool->big;

        if (l < rx->n_loops) {
            rx->loops[l].done = NULL;
            rx->loops[l].done_tail = &rx->loops[l].done;
        }
        while (list != NULL) {
            struct rx_job *job = list;
            struct pg_status st;

            list = job->next;
            pg_status_set(&st, PG_ERR_UNAVAILABLE, "shutting down; retry later");
            job->rx->job_done(job, PG_ERR_UNAVAILABLE, &st);
            job_free(job);
        }
    }
    for (size_t l = 0; l < rx->n_loops; l++) {
        struct rx_loop *lp = &rx->loops[l];

        if (lp->done_ev != NULL) {
            event_free(lp->done_ev);
            lp->done_ev = NULL;
        }
        if (lp->done_efd >= 0) {
            close(lp->done_efd);
            lp->done_efd = -1;
        }
    }
    pthread_cond_destroy(&pool->cv);
    pthread_cond_destroy(&pool->low_cv);
    pthread_mutex_destroy(&pool->mu);
    free(pool->threads);
    free(pool->big_peers);
    free(pool->low_owners);
    free(pool);
    rx->pool = NULL;
}

size_t pg_rx_pool_threads(const struct rx *rx)
{
    return rx->pool != NULL ? rx->pool->n_threads : 0;
}

bool pg_rx_pool_busy(const struct rx *rx)
{
    return rx->pool != NULL && __atomic_load_n(&rx->pool->in_flight, __ATOMIC_ACQUIRE) > 0;
}

bool pg_rx_job_queued(const struct rx *rx, size_t len)
{
    return rx->pool != NULL && len > INLINE_MAX_BODY;
}

/* What @job will inflate to, known before inflating: a gzip body's last four
 * bytes hold its uncompressed size (mod 2^32; the decoder's caps bound the
 * rest). Other bodies: their length. */
static size_t job_cost(const struct rx_job *job)
{
    const uint8_t *b = job->raw;
    size_t n = job->len;

    if (b != NULL && n >= 18 && b[0] == 0x1f && b[1] == 0x8b) {
        size_t isize = (size_t)b[n - 4] | (size_t)b[n - 3] << 8 | (size_t)b[n - 2] << 16 |
                       (size_t)b[n - 1] << 24;

        return isize > n ? isize : n;
    }
    return n;
}

void pg_rx_job_start(struct rx_loop *lp, struct rx_job *job)
{
    struct rx *rx = lp->rx;

    size_t cost = job_cost(job);

    if (pg_rx_job_queued(rx, job->len) || (rx->pool != NULL && cost > SMALL_COST)) {
        struct rx_pool *pool = rx->pool;

        __atomic_add_fetch(&pool->in_flight, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&pool->mu);
        if (cost > SMALL_COST) {
            *pool->big_tail = job;
            pool->big_tail = &job->next;
            pthread_cond_broadcast(&pool->cv); /* only some workers may take it */
        } else {
            *pool->todo_tail = job;
            pool->todo_tail = &job->next;
            pthread_cond_signal(&pool->cv);
        }
        pthread_mutex_unlock(&pool->mu);
        return;
    }
    job_run(job->rx, job);
    pg_rx_job_finish(lp, job, false);
}
