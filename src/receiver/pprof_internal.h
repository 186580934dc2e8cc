/* SPDX-License-Identifier: Apache-2.0
 * What the files of the push receivers (pprof, pyroscope) share and nobody
 * else sees: their state, the job one POST body becomes, and the calls
 * between the jobs: the component (pprof.c: create/start/shutdown, the
 * shared-listener registry), the HTTP handler (pprof_handler.c: routes,
 * head checks, admission, answers), the worker pool (pprof_workers.c:
 * lanes, threads, the way back to the loop) and one job's life
 * (pprof_jobs.c: run, delivery, held queue). The pyroscope receiver
 * (pyroscope.c, pyroscope_ingest.c) plugs in through the two hooks of
 * struct rx (translate, job_done). Calls go one way: pprof.c, pyroscope.c
 * -> pprof_handler.c -> pprof_workers.c -> pprof_jobs.c -> the hooks. */
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
#include "core/membudget.h"
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
#define PYRO_INGEST_PATH "/ingest"
#define PYRO_PUSH_PATH "/push.v1.PusherService/Push"

/* Which endpoint a request came to: what its body is and how it is answered. */
enum rx_route { RX_ROUTE_PPROF = 0, RX_ROUTE_INGEST, RX_ROUTE_PUSH };
/* What a receiver serves: the pprof push path, or Pyroscope's two. */
enum rx_flavor { RX_FLAVOR_PPROF = 0, RX_FLAVOR_PYROSCOPE };
/* Receivers that may join one listener besides its owner. */
#define RX_MAX_JOINED 4

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
    struct pg_rxh_codes codes[1 + RX_MAX_JOINED], refused_codes[1 + RX_MAX_JOINED];
    /* [0] the owner's, [1 + i] its joined[i]'s (rx.join_slot). */
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
    enum rx_flavor flavor;
    /* Shared listener: a receiver naming the endpoint another one already
     * serves joins it (pprof.c's registry) instead of listening: @owner is
     * then that receiver (whose loops, server, TLS and workers serve both),
     * else NULL. The owner lists its joiners in @joined (written on the main
     * thread at start, @n_joined published last: loops read it atomically).
     * A joiner outlives its owner's workers: its destroy is deferred to the
     * owner's while the owner lives (@dead, under the registry lock). */
    struct rx *owner;
    struct rx *joined[RX_MAX_JOINED];
    size_t n_joined;               /* atomic */
    size_t join_slot;              /* a joiner: 1 + its index in owner->joined; else 0 */
    bool dead;
    /* Turns one job's body (Content-Encoding removed) into an OTLP request
     * in job->arena: pg_pprof_translate_owned for pprof, Pyroscope's
     * formats for pyroscope. Takes *@body_arena (destroyed, set NULL, as
     * soon as @body is dead). Worker thread or loop; touches only @job and
     * read-only config. */
    enum pg_err (*translate)(struct rx *rx, struct rx_job *job, struct pg_arena **body_arena,
                             const uint8_t *body, size_t len, struct pg_otlp_request **out);
    /* Optional, loop thread: judges a routed request's head before its body
     * is read (Pyroscope: format, Content-Type, Connect version); an error
     * is answered with its status and @st's reason. */
    enum pg_err (*check_head)(struct rx *rx, enum rx_route route, const struct pg_httpd_req *req,
                              struct pg_status *st);
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
    bool draining;                 /* main thread writes; loops read it (atomic) */

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
     * pprof_jobs.c reports without naming the handler. Loop thread. */
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
    struct rx *rx;                 /* whose pipeline it feeds (the loop's, or a joiner) */
    enum rx_route route;
    /* Pyroscope: the query string (cut in place by its parse) and
     * Content-Type, copied (arena) at on_request; NULL for pprof. */
    char *query;
    const char *ctype;
    bool connect_json;             /* Push API: the request (and its answer) is JSON */
    struct pg_httpd_req *req;      /* borrowed from the server; loop thread only */
    struct pg_membudget budget;    /* admitted at on_head, charged as the job grows; given
                                    * back when the batch is charged (or the job ends) */
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

/* ---- pprof.c: the component, shared by both flavors -------------------- */

/* Creates a receiver of @flavor binding @fields; the flavor's create sets
 * its hooks after. */
enum pg_err pg_rx_create(const struct pg_component_ctx *ctx, const struct pg_field *fields,
                         enum rx_flavor flavor, void **state);
enum pg_err pg_rx_start(void *state, struct pg_status *st);
void pg_rx_shutdown(void *state);
bool pg_rx_idle(void *state);
void pg_rx_destroy(void *state);
const char *pg_rx_metadata_use(void *state);
/* ---- rx_share.c: one listener, several receivers ------------------------ */

/* At start, before listening: when a receiver of the other flavor already
 * listens on @rx's endpoint, @rx joins it (*@owner_out = that receiver, no
 * socket of its own); else @rx is registered as the endpoint's owner
 * (*@owner_out = NULL). CONFIG when the endpoint is taken by the same flavor
 * or the listener's keys differ (the message names the key). Main thread. */
enum pg_err pg_rx_share_join(struct rx *rx, struct rx **owner_out, struct pg_status *st);
/* The receiver serving @path on @owner's listener (the owner or a joiner),
 * and its route; NULL when none does. Loop thread. */
struct rx *pg_rx_route(struct rx *owner, const char *path, enum rx_route *route);
/* "POST /v1/pprof (pprof), POST /ingest, ... (pyroscope)" for the log. */
size_t pg_rx_routes_text(struct rx *owner, char *buf, size_t size);
/* pg_rx_destroy of a joiner whose owner lives: marks it dead and returns
 * true (the owner destroys it once its workers are gone). */
bool pg_rx_share_defer_destroy(struct rx *rx);
/* The owner's destroy, its workers and loops gone: leaves the registry
 * and destroys the joiners already dead. */
void pg_rx_share_release(struct rx *owner);

/* ---- pprof_handler.c: the HTTP side (loop thread) ----------------------- */

/* The callbacks the receiver's HTTP server runs (head, body, request, answer). */
extern const struct pg_httpd_ops pg_rx_httpd_ops;
/* rx->job_done: answers @job's request, 204 on PG_ERR_OK, else @err's status
 * code (never below 400) and @st's reason. Does not free @job. */
void pg_rx_job_done(struct rx_job *job, enum pg_err err, const struct pg_status *st);
/* Answers @req with @code and a one-line text @text, with @rx's
 * response_headers; a Push API request's error in Connect's JSON form. */
void pg_rx_reply(struct rx_loop *lp, struct rx *rx, enum rx_route route,
                 struct pg_httpd_req *req, int code, const char *text);
/* A success answer with a body (@ctype may be NULL when @len is 0), counted
 * like every other. */
void pg_rx_reply_body(struct rx_loop *lp, struct rx *rx, struct pg_httpd_req *req, int code,
                      const char *ctype, const void *body, size_t len);
/* Answers @err with its status code (never below 400) and @st's reason. */
void pg_rx_fail(struct rx_loop *lp, struct rx *rx, enum rx_route route,
                struct pg_httpd_req *req, enum pg_err err, const struct pg_status *st);

/* ---- pprof_jobs.c: one translation job's life ---------------------------- */

/* A zeroed job for a request on @lp (from its cache when it has one);
 * NULL on OOM. Loop thread. */
struct rx_job *pg_rx_job_new(struct rx_loop *lp);
/* Frees @lp's cached jobs (teardown, once no job can end any more). */
void pg_rx_job_cache_free(struct rx_loop *lp);
/* Decodes and translates @job's body into job->batch (or sets job->err and
 * job->st). Touches only @job, read-only config and atomic metrics: any
 * thread. */
void pg_rx_job_run(struct rx *rx, struct rx_job *job);
/* Gives back @job's memory admission and frees it (into its loop's cache
 * when there is room). Loop thread, or the main thread once every other
 * loop's thread has ended. */
void pg_rx_job_free(struct rx_job *job);
/* Loop thread: runs the pipeline (or holds the job while an exporter is
 * full) and answers; @async when it came back from a worker. Takes @job. */
void pg_rx_job_finish(struct rx_loop *lp, struct rx_job *job, bool async);
/* The timer that polls @lp's held requests; false on OOM. */
bool pg_rx_held_init(struct rx_loop *lp);
/* Answers every request @lp holds 503 (exporters take no more data). */
void pg_rx_held_drain(struct rx_loop *lp);

/* ---- pprof_workers.c: the worker pool ------------------------------------ */

/* Translates @job inline (small bodies, or no workers) or queues it for a
 * worker; either way the job is finished on the loop thread. Takes @job. */
void pg_rx_job_start(struct rx_loop *lp, struct rx_job *job);
/* True when a body of @len bytes will be translated by a worker. */
bool pg_rx_job_queued(const struct rx *rx, size_t len);
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

#endif
