/* SPDX-License-Identifier: Apache-2.0
 * What the files of the otlp receiver share and nobody else sees: its
 * state and the calls between its jobs: the component (otlp.c:
 * create/start/shutdown), the two transports (otlp_http.c on the HTTP/1.1
 * server, otlp_grpc.c on the gRPC server), and the one path both hand a
 * message to (otlp_ingest.c: decode, validate, batch, pipeline). Calls go
 * one way: otlp.c -> otlp_http.c, otlp_grpc.c -> otlp_ingest.c ->
 * otlp_held.c (requests waiting while an exporter with block_on_overflow is
 * full; they answer through the function their transport left them).
 * Threading: `loops` event loops, each with its own SO_REUSEPORT socket
 * per protocol (loop 0 is the host's main loop, the others a thread
 * "pg-otlp-N" each); a request or call stays on the loop that accepted it
 * from accept to answer. What a loop owns is its thread's; the refusal
 * log, auth budget and metrics are shared (locked or atomic). */
#ifndef PG_RECEIVER_OTLP_INTERNAL_H
#define PG_RECEIVER_OTLP_INTERNAL_H

/* A profile with this many samples keeps them in wire form when the pipelines allow it
 * (otlp/otlp_lazy.h): SDK-sized profiles (tens to hundreds) are unpacked as always. */
#define OTLP_LAZY_MIN_SAMPLES 2048

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/arena.h"
#include "core/err.h"
#include "core/metrics.h"
#include "http/auth.h"
#include "http/conn_limits.h"
#include "http/http_server.h"
#include "otlp/otlp_decode.h"
#include "pipeline/batch.h"
#include "pipeline/component.h"
#include "receiver/otlp_config.h"
#include "receiverhelper/answer.h"
#include "receiverhelper/refusal_log.h"

struct event;
struct event_base;

struct pg_grpc_server;
struct otlp_held;

enum otlp_transport { OTLP_GRPC = 0, OTLP_HTTP, OTLP_N_TRANSPORTS };
extern const char *const otlp_transport_names[]; /* "grpc", "http" */

/* Per transport: its listener, credentials and counters (read-only once
 * started, but for the atomic metrics). */
struct otlp_side {
    char listen_host[256];         /* unix: the socket path */
    unsigned listen_port;
    bool unix_path;                /* a socket file we created, removed at shutdown */
    unsigned allowed;              /* codings accepted (codec set) */
    size_t max_msg;                /* one message / body, as sent and decoded */
    SSL_CTX *ssl_ctx;              /* owned; NULL without tls */
    struct pg_auth *auth;          /* owned; NULL without auth */
    bool include_metadata;
    struct pg_metric *m_accepted, *m_refused, *m_bytes, *m_requests_ok;
};

#define OTLP_MAX_LOOPS 8
#define OTLP_LOOP_LINE 64

/* One event loop serving both protocols. Everything here is its thread's
 * unless marked. */
struct otlp_loop {
    _Alignas(OTLP_LOOP_LINE) struct otlp_rx *rx;
    unsigned idx;
    struct event_base *base;       /* loop 0: the host's (borrowed); else owned */
    struct pg_httpd *httpd;        /* owned; NULL without protocols.http */
    struct pg_grpc_server *grpcd;  /* owned; NULL without protocols.grpc */
    pthread_t thread;              /* idx > 0 */
    bool thread_started;
    int cmd_fd;                    /* eventfd: the main thread's STOP/EXIT (idx > 0) */
    struct event *cmd_ev, *drain_ev;
    int cmd;                       /* atomic: OTLP_LOOP_RUN, _STOP or _EXIT */
    bool drained;                  /* atomic: stopped, nothing open any more */
    /* Answers by code, per transport: the series are the receiver's. */
    struct pg_rxh_codes codes[OTLP_N_TRANSPORTS], refused_codes[OTLP_N_TRANSPORTS];
    /* Requests held while an exporter with block_on_overflow is full, oldest
     * first (owned), and the timer that polls them while any wait. */
    struct otlp_held *held, **held_tail;
    struct event *held_ev;
};
enum { OTLP_LOOP_RUN = 0, OTLP_LOOP_STOP, OTLP_LOOP_EXIT };

struct otlp_rx {
    struct otlp_cfg cfg;
    struct pg_host *host;          /* borrowed */
    const char *id;                /* borrowed (ctx) */
    const char *log_name;          /* borrowed (ctx) */
    struct pg_consumer *next;      /* borrowed */
    struct pg_otlp_limits limits;
    struct pg_otlp_decode_opts dopts;
    struct otlp_side side[OTLP_N_TRANSPORTS];
    struct otlp_loop *loops;       /* owned, n_loops of them; loops[0] on the host's base */
    size_t n_loops;
    struct pg_peer_ratelimit *auth_rl; /* owned, under auth_mu: failed attempts per peer */
    pthread_mutex_t auth_mu;       /* pg_auth (reloads its files) and auth_rl */
    struct pg_rxh_reasons reasons; /* one refusal line per reason per interval */
    struct pg_metric *m_utf8, *m_latency, *m_held;
    bool draining;
};

/* ---- otlp_ingest.c: one message into the pipeline (loop thread) --------- */

/* Memory a message of @len bytes (compressed when @coded) may cost while it
 * is decoded and forwarded, capped at the soft limit: what is admitted
 * (core/memlimit.h) before its bytes are read. */
size_t otlp_admission_estimate(const struct otlp_rx *rx, uint64_t len, bool coded, size_t max);

/* One message of @transport: @msg (@len bytes, decoded from any
 * Content-/grpc-encoding; borrowed) as protobuf or, @json, OTLP/JSON;
 * @raw_len as it came. Decodes into a batch arena, validates, hands the
 * batch to the pipeline with @md copied (may be NULL) and @peer; counts
 * accepted/refused samples. A request without samples is answered OK and
 * not forwarded, as the Collector does. @admitted bytes of the memory
 * budget are the caller's; the batch's arena is charged instead once it
 * exists. Errors come with the reason in @st. */
/* @msg_done (may be NULL) runs with @msg_arg as soon as @msg is decoded, so
 * the transport can free the wire bytes before the pipeline (an exporter
 * encoding on its own thread) runs.
 * With @held non-NULL the caller can hold the request: when an exporter
 * with block_on_overflow is full (or requests are held on @lp already), the
 * batch goes into a new *@held (otlp_held.c) instead of being refused, and
 * PG_ERR_BUSY comes back; the caller sets its answer and calls otlp_hold. */
enum pg_err otlp_ingest(struct otlp_loop *lp, enum otlp_transport t, const uint8_t *msg,
                        size_t len, bool json, size_t raw_len, const struct pg_metadata *md,
                        const char *peer, struct otlp_held **held,
                        void (*msg_done)(void *arg), void *msg_arg, struct pg_status *st);

/* ---- otlp_held.c: requests waiting for room (loop thread) --------------- */

/* One held request. The transport owns @req (its pg_httpd_req or
 * pg_grpc_call) and points req->user here until @done or forget. */
struct otlp_held {
    struct otlp_held *next;
    struct otlp_loop *lp;
    enum otlp_transport t;
    struct pg_batch *batch;        /* owned until delivered */
    size_t samples;
    struct pg_status st;           /* why it waits */
    double since;                  /* mono s */
    double until;                  /* mono s: answered UNAVAILABLE / 503 then; 0 = none */
    void *req;                     /* borrowed */
    /* The outcome: PG_ERR_OK (delivered), a pipeline error, BUSY past the
     * deadline, UNAVAILABLE at shutdown; @st NULL when the client left (no
     * answer anyone reads). The transport answers and forgets @req->user;
     * the entry is freed after. */
    void (*done)(struct otlp_held *h, enum pg_err err, const struct pg_status *st);
    /* Optional: true when the client has gone (HTTP: the socket's EOF). */
    bool (*gone)(struct otlp_held *h);
};
/* A zeroed entry for @batch (taken) with @samples and @why; NULL on OOM. */
struct otlp_held *otlp_held_new(struct otlp_loop *lp, enum otlp_transport t,
                                struct pg_batch *batch, size_t samples,
                                const struct pg_status *why);
/* Queues @h (done, gone, until and req set) behind the others on its loop. */
void otlp_hold(struct otlp_held *h);
/* The request ended on its own (reset, deadline answered by the server,
 * connection lost): unlinked, its batch dropped, samples counted refused. */
void otlp_held_forget(struct otlp_held *h);
/* Answers every held request of @lp UNAVAILABLE (shutdown). */
void otlp_held_drain(struct otlp_loop *lp);
/* The poll timer; false on OOM. */
bool otlp_held_init(struct otlp_loop *lp);
/* Drains and frees the timer (destroy, before the servers go). */
void otlp_held_free(struct otlp_loop *lp);

/* Every answer of @t on loop @lp: counted by code, a refusal logged with
 * its reason (info; warn for server-side codes), rate-limited per reason. */
void otlp_count_answer(struct otlp_loop *lp, enum otlp_transport t, int code, bool refused,
                       bool server_error, const char *reason, const char *peer);

/* Checks an `authorization` value against @t's auth under the shared
 * per-peer failure budget. 0 when allowed; else 401 (bad credentials,
 * reason in @st) or 429 (too many failures from @peer_key). */
int otlp_auth_check(struct otlp_rx *rx, enum otlp_transport t, const void *peer_key,
                    const char *authorization, struct pg_status *st);

/* ---- otlp_http.c / otlp_grpc.c: the transports -------------------------- */

/* The HTTP server's callbacks; their arg is the struct otlp_loop. */
extern const struct pg_httpd_ops otlp_httpd_ops;
/* Starts @lp's gRPC server on @fd (owned): loop 0's first, the others as
 * its siblings (shared connection caps). */
enum pg_err otlp_grpc_start(struct otlp_loop *lp, int fd, struct pg_status *st);

#endif
