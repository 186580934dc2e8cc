/* SPDX-License-Identifier: Apache-2.0
 * What the files of the pprof receiver share and nobody else sees: its
 * state, the job one POST body becomes, and the calls between the three
 * jobs: the component (pprof.c: create/start/shutdown), the HTTP handler
 * (pprof_handler.c: head checks, admission, answers) and the translation
 * jobs (pprof_workers.c: worker pool, held queue, delivery). */
#ifndef PG_RECEIVER_PPROF_INTERNAL_H
#define PG_RECEIVER_PPROF_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include <event2/event.h>

#include "core/arena.h"
#include "core/err.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/work.h"
#include "http/auth.h"
#include "http/conn_limits.h"
#include "http/http_request.h"
#include "http/http_server.h"
#include "pipeline/batch.h"
#include "pipeline/component.h"
#include "pprof/translate.h"
#include "receiver/pprof_config.h"
#include "receiver/pprof_self.h"
#include "receiverhelper/answer.h"
#include "receiverhelper/refusal_log.h"
#include "scrape/scrape.h"

#define PPROF_PATH "/v1/pprof"

struct rx_pool; /* pprof_workers.c */

#define RX_LOOP_LINE 64 /* cache line */
struct rx_job;

/* One event loop serving the endpoint: loop 0 is the host's (the main
 * thread, which also serves the admin endpoints and the exporters), the
 * others run a thread each ("pg-loop-N") with their own event base and
 * SO_REUSEPORT socket. A request lives on the loop that accepted it, from
 * accept to answer; only large bodies visit a worker. Everything here is
 * that loop's thread's unless marked. */
struct rx_loop {
    /* Each loop on cache lines of its own (the array is line-aligned):
     * what one writes per request never shares a line the other reads. */
    _Alignas(RX_LOOP_LINE) struct rx *rx;
    unsigned idx;
    struct event_base *base;       /* loop 0: the host's (borrowed); else owned */
    struct pg_httpd *httpd;        /* owned */
    pthread_t thread;              /* idx > 0 */
    bool thread_started;
    int cmd_fd;                    /* eventfd: the main thread's STOP/EXIT (idx > 0) */
    struct event *cmd_ev, *drain_ev;
    int cmd;                       /* atomic: LOOP_RUN, LOOP_STOP or LOOP_EXIT */
    bool drained;                  /* atomic: stopped, no connection left */
    /* Requests held while an exporter with block_on_overflow is full, oldest
     * first; owned. The timer polls them while any wait. */
    struct rx_job *held, **held_tail;
    struct event *held_ev;
    /* Jobs the workers finished for this loop (under the pool's lock) and
     * the eventfd that wakes it. */
    struct rx_job *done, **done_tail;
    struct pg_work *work_done;     /* background work finished for this loop (pg_work_lane) */
    int done_efd;
    struct event *done_ev;
    /* Answers by code: the series are the receiver's (one per code), the
     * lookup tables this loop's. */
    struct pg_rxh_codes codes, refused_codes;
    struct pg_metric *m_conns;     /* connections this loop accepted */
    /* Ended jobs kept for the next requests (at most JOB_CACHE), owned:
     * a push then allocates no job. */
    struct rx_job *free_jobs;
    size_t n_free_jobs;
    /* The Content-Encoding list on_head parsed for @codings_req (admitted),
     * for its on_request to reuse: the body nearly always comes with its
     * head, so nothing runs in between. Compared, never dereferenced. */
    const struct pg_httpd_req *codings_req;
    struct pg_http_codings codings;
};

enum { LOOP_RUN = 0, LOOP_STOP, LOOP_EXIT };
_Static_assert(sizeof(struct rx_loop) % RX_LOOP_LINE == 0, "loops share no cache line");

struct rx {
    struct rx_cfg cfg;
    struct pg_host *host;          /* borrowed */
    const char *id;                /* borrowed (ctx), lives until destroy */
    const char *log_name;          /* borrowed (ctx) */
    struct pg_consumer *next;      /* borrowed */
    struct pg_translate_opts topts;
    unsigned allowed;              /* codings Content-Encoding may name (codec set) */
    char listen_host[256]; /* unix: the socket path */
    unsigned listen_port;
    bool unix_path;        /* listen_host is a socket file we created */

    struct pg_pprof_self *self;    /* owned; NULL without `self:` */
    SSL_CTX *ssl_ctx;              /* owned; NULL without server.tls */
    struct pg_auth *auth;          /* owned; NULL without server.auth */
    struct pg_peer_ratelimit *auth_rl; /* owned, under auth_mu: failed attempts per peer */
    pthread_mutex_t auth_mu;       /* pg_auth (reloads its files) and auth_rl, any loop */
    struct rx_loop *loops;         /* owned, n_loops of them; loops[0] on the host's base */
    size_t n_loops;
    bool draining;

    struct pg_metric *m_accepted, *m_refused, *m_bytes, *m_inflated, *m_links, *m_latency;
    struct pg_metric *m_abandoned;
    struct pg_metric *m_conn_events[PG_HTTPD_N_EVENTS];
    pthread_mutex_t log_mu;        /* rl, shared by the loops */
    struct pg_log_ratelimit rl;
    /* One refusal log line per reason per interval (every loop together). */
    struct pg_rxh_reasons reasons;
    struct rx_pool *pool;          /* owned; NULL with server.workers 0 (inline) */
    /* Answers a finished job's request (204 on PG_ERR_OK, else @err's status
     * and @st's reason): pprof_handler.c's pg_rx_job_done, set at create, so
     * pprof_workers.c reports without naming the handler. Loop thread. */
    void (*job_done)(struct rx_job *job, enum pg_err err, const struct pg_status *st);
    struct pg_metric *m_held;
    struct pg_scrape_config scrape_cfg; /* owned (pull mode) */
    struct pg_scraper *scraper;         /* owned; NULL without scrape:/remote: */
};

/* One POST body on its way through translation. Its loop's thread fills the
 * inputs and owns the job until it is queued; a worker then owns it (and its
 * arenas) until it is on that loop's done list; the loop's thread finishes
 * it. @req is only ever touched on that loop's thread. */
struct rx_job {
    struct rx_job *next;
    struct rx_loop *loop;          /* where the request lives and the job ends */
    struct pg_httpd_req *req;      /* borrowed from the server; loop thread only */
    size_t admitted;               /* pg_memlimit_admit()ed; released when the batch is charged */
    double t0;
    /* inputs */
    struct pg_arena *scratch;      /* owned: decoded layers */
    struct pg_arena *arena;        /* owned: becomes the batch's arena */
    const uint8_t *raw;            /* req->body: the server's, kept until the answer; */
    bool raw_in_scratch;           /* or, large, a copy in scratch, freed once inflated */
    size_t len;
    struct pg_http_codings codings;
    struct pg_metadata md;         /* in arena: peer address, headers */
    enum pg_err md_err;            /* a metadata failure, reported after translation */
    struct pg_status md_st;
    /* outputs */
    enum pg_err err;
    struct pg_status st;
    double held_since;             /* loop thread: when it started waiting for queue room */
    struct pg_batch *batch;        /* owned until handed to the pipeline */
    struct pg_translate_stats stats;
};

/* ---- pprof_handler.c: the HTTP side (loop thread) ----------------------- */

/* The callbacks the receiver's HTTP server runs (head, body, request, answer). */
extern const struct pg_httpd_ops pg_rx_httpd_ops;
/* rx->job_done: answers @job's request, 204 on PG_ERR_OK, else @err's status
 * code (never below 400) and @st's reason. Does not free @job. */
void pg_rx_job_done(struct rx_job *job, enum pg_err err, const struct pg_status *st);

/* ---- pprof_workers.c: translation jobs ----------------------------------- */

/* A zeroed job for a request on @lp (from its cache when it has one);
 * NULL on OOM. Loop thread. */
struct rx_job *pg_rx_job_new(struct rx_loop *lp);
/* Frees @lp's cached jobs (teardown, once no job can end any more). */
void pg_rx_job_cache_free(struct rx_loop *lp);
/* Translates @job inline (small bodies, or no workers) or queues it for a
 * worker; either way the job is finished on the loop thread. Takes @job. */
void pg_rx_job_start(struct rx_loop *lp, struct rx_job *job);
/* True when a body of @len bytes will be translated by a worker. */
bool pg_rx_job_queued(const struct rx *rx, size_t len);
/* Loop thread: runs the pipeline (or holds the job while an exporter is
 * full) and answers; @async when it came back from a worker. Takes @job. */
void pg_rx_job_finish(struct rx_loop *lp, struct rx_job *job, bool async);
/* Starts @workers threads (negative: one per usable CPU, capped at
 * MAX_WORKERS). On failure what started is joined by pg_rx_pool_destroy. */
enum pg_err pg_rx_pool_start(struct rx *rx, int64_t workers, struct pg_status *st);
/* Watches @lp's completion eventfd; false on failure. */
bool pg_rx_pool_attach(struct rx *rx, struct rx_loop *lp);
/* Joins the workers; jobs not finished by then are answered 503. Main
 * thread, once every other loop's thread has ended, before pg_httpd_free
 * (jobs hold requests). */
void pg_rx_pool_destroy(struct rx *rx);
/* Worker threads started (0 without a pool). */
size_t pg_rx_pool_threads(const struct rx *rx);
/* True while a job is queued, running or waiting on the done list. */
bool pg_rx_pool_busy(const struct rx *rx);
/* The pool's background lane (core/work.h) for the scraper: below every
 * push job, never on the worker kept for small jobs. Inline (submit false)
 * while the pool has no workers. */
struct pg_work_lane pg_rx_work_lane(struct rx *rx);
/* The timer that polls @lp's held requests; false on OOM. */
bool pg_rx_held_init(struct rx_loop *lp);
/* Answers every request @lp holds 503 (exporters take no more data). */
void pg_rx_held_drain(struct rx_loop *lp);

#endif
