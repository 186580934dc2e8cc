/* SPDX-License-Identifier: Apache-2.0
 * The pprof receiver's worker pool: where a translation job runs. Small
 * pushes inline on the loop; the rest on worker threads, in two lanes by
 * estimated cost (cheap jobs first, one worker kept for them; large ones
 * shared fairly between clients) and a third, lowest lane of background
 * work, struct pg_work: scrapes. A finished job goes back to the loop that
 * read it (a done list and an eventfd per loop), which finishes it through
 * pprof_jobs.c. */
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
        pg_rx_job_run(job->rx, job);
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
            pg_rx_job_free(job);
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
    pg_rx_job_run(job->rx, job);
    pg_rx_job_finish(lp, job, false);
}
