/* SPDX-License-Identifier: Apache-2.0
 * Receiver `pprof`: the collector's push endpoint POST /v1/pprof on
 * pprofgate's HTTP/1.1 server (http_server.h: absolute deadlines, connection
 * caps at accept, the head judged before any body byte is read). Each
 * request gets its own arenas: the body and its Content-Encoding
 * layers live in a scratch arena that dies with the request; the translated
 * OTLP request lives in the batch arena handed to the pipeline. Status codes
 * follow the error enum (docs/receiver.md lists where they differ from the
 * collector's and why). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "core/arena.h"
#include "core/thread_sched.h"
#include "pipeline/batch.h"
#include "core/cgroup.h"
#include "core/clock.h"
#include "pipeline/component.h"
#include "core/config.h"
#include "core/log.h"
#include "core/memlimit.h"
#include "core/metrics.h"
#include "pprof/translate.h"
#include "http/http_request.h"
#include "http/listener.h"
#include "receiver/pprof_self.h"
#include "http/auth.h"
#include "http/conn_limits.h"
#include "http/http_parse.h"
#include "http/http_server.h"
#include "http/tls.h"
#include "receiver/pprof_config.h"
#include "scrape/scrape.h"

#define PPROF_PATH "/v1/pprof"
/* The cap on one request's head (Go's default is 1 MiB; a push needs a few
 * KiB, and every open connection may hold this much). */
#define MAX_HEADER_BYTES (64 * 1024)
#define MAX_TARGET_BYTES (8 * 1024)
/* Failed authentications per peer: a burst, then one per second. */
#define AUTH_FAIL_BURST 10.0
#define AUTH_FAIL_PER_SEC 1.0
/* Bodies up to this size are translated on the loop even with workers: an
 * SDK push costs ~150 us, less than the hand-off, and it never queues behind
 * a large profile (small pushes keep their latency under a flood). */
#define INLINE_MAX_BODY (64 * 1024)
/* Chunked bodies reserve memory in steps of this many body bytes. */
#define CHUNKED_RESERVE_STEP (256 * 1024)
/* The batch arena may grow to this many times max_request_body_size. */
#define BATCH_ARENA_FACTOR 8
/* Go's net.Listen asks for the kernel's maximum (net.core.somaxconn caps it). */
#define LISTEN_BACKLOG (SOMAXCONN > 4096 ? SOMAXCONN : 4096)

/* ---- state ----------------------------------------------------------- */

struct code_metric {
    int code;
    struct pg_metric *m;
};

struct rx {
    struct rx_cfg cfg;
    struct pg_host *host;          /* borrowed */
    const char *id;                /* borrowed (ctx), lives until destroy */
    const char *log_name;          /* borrowed (ctx) */
    struct pg_consumer *next;      /* borrowed */
    struct pg_translate_opts topts;
    unsigned allowed;              /* PG_HTTP_ALLOW_* bits */
    char listen_host[256]; /* unix: the socket path */
    unsigned listen_port;
    bool unix_path;        /* listen_host is a socket file we created */

    struct pg_pprof_self *self;    /* owned; NULL without `self:` */
    SSL_CTX *ssl_ctx;              /* owned; NULL without server.tls */
    struct pg_auth *auth;          /* owned; NULL without server.auth */
    struct pg_peer_ratelimit *auth_rl; /* owned; failed attempts per peer */
    struct pg_httpd *httpd;        /* owned */
    bool draining;

    struct pg_metric *m_accepted, *m_refused, *m_bytes, *m_inflated, *m_links, *m_latency;
    struct pg_metric *m_abandoned;
    struct code_metric codes[16], refused_codes[16];
    size_t n_codes, n_refused_codes;
    struct pg_metric *m_conn_events[PG_HTTPD_N_EVENTS];
    struct pg_log_ratelimit rl;
    /* One refusal log line per reason per interval (loop thread). */
    struct {
        uint64_t key;
        double last;
        unsigned long suppressed;
    } reasons[32];
    struct rx_pool *pool;          /* owned; NULL with server.workers 0 (inline) */
    /* Requests held while an exporter with block_on_overflow is full, oldest
     * first; owned, loop thread only. The timer polls them while any wait. */
    struct rx_job *held, **held_tail;
    struct event *held_ev;
    struct pg_metric *m_held;
    struct pg_scrape_config scrape_cfg; /* owned (pull mode) */
    struct pg_scraper *scraper;         /* owned; NULL without scrape:/remote: */
};

static void apply_limits(struct rx *rx)
{
    const struct rx_limits_cfg *l = &rx->cfg.limits;
    struct pg_pprof_limits *o = &rx->topts.limits;

    o->max_inflated_bytes =
        l->max_inflated_bytes ? l->max_inflated_bytes : rx->cfg.server.max_request_body_size;
#define OVR(f)                                                                                     \
    if (l->f > 0) {                                                                                \
        o->f = (size_t)l->f;                                                                       \
    }
    OVR(max_gzip_layers)
    OVR(max_samples)
    OVR(max_locations)
    OVR(max_functions)
    OVR(max_mappings)
    OVR(max_strings)
    OVR(max_string_bytes)
    OVR(max_stack_depth)
    OVR(max_labels_per_sample)
    OVR(max_sample_types)
#undef OVR
}

static enum pg_err rx_create(const struct pg_component_ctx *ctx, void **state)
{
    struct rx *rx = calloc(1, sizeof(*rx));
    char path[256];
    size_t problems;

    *state = NULL;
    if (rx == NULL) {
        pg_diag_add(ctx->diag, ctx->config, ctx->id, "out of memory");
        return PG_ERR_CONFIG;
    }
    rx->held_tail = &rx->held;
    snprintf(path, sizeof(path), "receivers::%s", ctx->id);
    problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, pg_pprof_rx_fields, &rx->cfg, path);
    problems += pg_scrape_config_parse(ctx->config_arena, ctx->diag, rx->cfg.scrape,
                                       rx->cfg.remote, path, &rx->scrape_cfg);
    if (!rx->cfg.has_server && !rx->cfg.has_self && rx->cfg.scrape == NULL &&
        rx->cfg.remote == NULL) {
        /* The collector refuses an empty receiver; an operator writing
         * `pprof:` means the push endpoint, so give them that. */
        rx->cfg.has_server = true;
    }
    if (rx->cfg.has_server) {
        const struct rx_server_cfg *s = &rx->cfg.server;

        if (s->transport == PG_TRANSPORT_UNIX) {
            snprintf(rx->listen_host, sizeof(rx->listen_host), "%s", s->endpoint ? s->endpoint : "");
            if (!pg_listen_host_ok(PG_TRANSPORT_UNIX, rx->listen_host)) {
                pg_diag_add(ctx->diag, ctx->config, path,
                            "server::endpoint \"%s\": with transport unix, a socket file path of "
                            "1 to 107 bytes",
                            s->endpoint ? s->endpoint : "");
                problems++;
            }
        } else if (s->endpoint == NULL ||
                   !pg_hostport_split(s->endpoint, rx->listen_host, sizeof(rx->listen_host),
                                      &rx->listen_port)) {
            pg_diag_add(ctx->diag, ctx->config, path,
                        "server::endpoint \"%s\" is not host:port (e.g. localhost:4040, :4040, "
                        "[::1]:4040)",
                        s->endpoint ? s->endpoint : "");
            problems++;
        } else if (!pg_listen_host_ok((enum pg_transport)s->transport, rx->listen_host)) {
            pg_diag_add(ctx->diag, ctx->config, path,
                        "server::endpoint \"%s\" is not an address of transport %s",
                        s->endpoint, pg_transport_names[s->transport]);
            problems++;
        }
        for (size_t i = 0; i < s->compression_algorithms.n; i++) {
            unsigned bit = pg_http_coding_bit_from_name(s->compression_algorithms.v[i]);

            if (bit == 0) {
                pg_diag_add(ctx->diag, ctx->config, path,
                            "server::compression_algorithms: \"%s\" is not supported by pprofgate; "
                            "supported: \"\", identity, gzip, x-gzip, deflate, zlib",
                            s->compression_algorithms.v[i]);
                problems++;
            }
            rx->allowed |= bit;
        }
        if (s->compression_algorithms.n == 0) {
            rx->allowed = PG_HTTP_ALLOW_ALL;
        }
        for (size_t i = 0; i < s->response_headers.n; i++) {
            if (!pg_http_header_ok(s->response_headers.keys[i], s->response_headers.values[i])) {
                pg_diag_add(ctx->diag, ctx->config, path,
                            "server::response_headers: \"%s\" is not a valid header",
                            s->response_headers.keys[i]);
                problems++;
            }
        }
    }
    if (problems == 0 && rx->cfg.has_server && rx->cfg.server.has_tls) {
        /* Load certificates now, so `validate` reports bad files. */
        struct pg_status tst;

        if (pg_tls_server_ctx_new(&rx->cfg.server.tls, &rx->ssl_ctx, &tst) != PG_ERR_OK) {
            pg_diag_add(ctx->diag, ctx->config, path, "server::%s", pg_status_text(&tst));
            problems++;
        }
    }
    if (problems == 0 && rx->cfg.has_server && rx->cfg.server.has_auth) {
        struct pg_status ast;

        rx->cfg.server.auth.log_name = ctx->log_name;
        if (pg_auth_new(&rx->cfg.server.auth, &rx->auth, &ast) != PG_ERR_OK) {
            pg_diag_add(ctx->diag, ctx->config, path, "server::auth: %s", pg_status_text(&ast));
            problems++;
        }
    }
    if (problems > 0) {
        if (rx->ssl_ctx != NULL) {
            SSL_CTX_free(rx->ssl_ctx);
        }
        pg_scrape_config_free(&rx->scrape_cfg);
        free(rx);
        return PG_ERR_CONFIG;
    }
    rx->host = ctx->host;
    rx->id = ctx->id;
    rx->log_name = ctx->log_name;
    rx->next = ctx->next;
    pg_translate_opts_default(&rx->topts);
    rx->topts.trace_id_label = rx->cfg.trace_id_label;
    rx->topts.span_id_label = rx->cfg.span_id_label;
    rx->topts.include_original_payload = rx->cfg.include_original_payload;
    if (ctx->host != NULL && ctx->host->version != NULL) {
        rx->topts.scope_version = ctx->host->version;
    }
    apply_limits(rx);
    rx->rl = (struct pg_log_ratelimit)PG_LOG_RATELIMIT_INIT(1.0, 10.0);
    if (rx->cfg.has_self) {
        rx->self = pg_pprof_self_create(ctx->host, ctx->next, rx->cfg.self.collection_interval,
                                        &rx->topts);
        if (rx->self == NULL) {
            pg_diag_add(ctx->diag, ctx->config, path, "self: out of memory");
            free(rx);
            return PG_ERR_CONFIG;
        }
    }
    if (rx->scrape_cfg.n_jobs > 0) {
        size_t cap = (size_t)(rx->cfg.has_server ? rx->cfg.server.max_request_body_size
                                                 : 20u << 20);

        for (size_t i = 0; i < rx->scrape_cfg.n_jobs; i++) {
            char desc[1024];

            /* The effective profile set, here so `validate` shows it too. */
            pg_scrape_job_describe(&rx->scrape_cfg.jobs[i], desc, sizeof(desc));
            pg_log_info(ctx->log_name, "scrape job %s: %s", rx->scrape_cfg.jobs[i].job_name, desc);
        }
        rx->scraper = pg_scraper_create(ctx->host, ctx->next, &rx->scrape_cfg, &rx->topts, ctx->id,
                                        cap, rx->cfg.server.default_service_name);
        if (rx->scraper == NULL) {
            pg_diag_add(ctx->diag, ctx->config, path, "scrape: out of memory");
            pg_scrape_config_free(&rx->scrape_cfg);
            free(rx);
            return PG_ERR_CONFIG;
        }
    }
    *state = rx;
    return PG_ERR_OK;
}

/* ---- metrics ---------------------------------------------------------- */

static void metrics_init(struct rx *rx)
{
    static const double lat_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                         0.05,   0.1,   0.25,   0.5,   1.0,  2.5};
    char labels[200];

    snprintf(labels, sizeof(labels), "receiver=\"%s\",transport=\"http\"", rx->id);
    rx->m_accepted = pg_metric_counter("otelcol_receiver_accepted_profile_samples",
                                       "Profile sample records pushed into the pipeline.", labels);
    rx->m_refused = pg_metric_counter("otelcol_receiver_refused_profile_samples",
                                      "Profile sample records the pipeline refused.", labels);
    rx->m_bytes = pg_metric_counter("pprofgate_receiver_received_bytes_total",
                                    "Request body bytes as received.", labels);
    rx->m_inflated = pg_metric_counter("pprofgate_receiver_inflated_bytes_total",
                                       "Bytes produced by Content-Encoding and gzip layers.",
                                       labels);
    rx->m_links = pg_metric_counter("pprofgate_receiver_links_total",
                                    "Links created from trace/span id labels.", labels);
    rx->m_latency = pg_metric_histogram("pprofgate_receiver_translate_seconds",
                                        "Time to decode and translate one request.", labels,
                                        lat_buckets, sizeof(lat_buckets) / sizeof(lat_buckets[0]));
    rx->m_abandoned = pg_metric_counter("pprofgate_receiver_abandoned_requests_total",
                                        "Requests dropped because the client closed its "
                                        "connection before the answer.", labels);
    rx->m_held = pg_metric_counter("pprofgate_receiver_held_requests_total",
                                   "Requests held unanswered while an exporter with "
                                   "block_on_overflow had a full queue.", labels);
    for (int e = 0; e < PG_HTTPD_N_EVENTS; e++) {
        snprintf(labels, sizeof(labels), "receiver=\"%s\",reason=\"%s\"", rx->id,
                 pg_httpd_event_names[e]);
        rx->m_conn_events[e] = pg_metric_counter(
            e <= PG_HTTPD_ACCEPT_PAUSED ? "pprofgate_receiver_refused_connections_total"
                                        : "pprofgate_receiver_closed_connections_total",
            e <= PG_HTTPD_ACCEPT_PAUSED
                ? "Connections refused at accept (caps) or accept pauses (fd exhaustion)."
                : "Connections closed by a deadline or the minimum body rate.",
            labels);
    }
}

/* Adds one to the counter of @code in @tab (series created on first use). */
static void count_in(struct code_metric *tab, size_t *n, size_t cap, const char *name,
                     const char *help, const char *id, int code)
{
    char labels[240];

    for (size_t i = 0; i < *n; i++) {
        if (tab[i].code == code) {
            pg_metric_add(tab[i].m, 1);
            return;
        }
    }
    snprintf(labels, sizeof(labels), "receiver=\"%s\",code=\"%d\"", id, code);
    if (*n < cap) {
        tab[*n].code = code;
        tab[*n].m = pg_metric_counter(name, help, labels);
        pg_metric_add(tab[(*n)++].m, 1);
        return;
    }
    pg_metric_add(pg_metric_counter(name, help, labels), 1);
}

/* One log line per reason per interval: the key is the code and the reason
 * with its digits left out (sizes and counts vary, the reason does not). */
#define REASON_LOG_INTERVAL_S 10.0
static bool reason_log_ok(struct rx *rx, int code, const char *reason, unsigned long *suppressed)
{
    uint64_t key = 1469598103934665603ULL ^ (uint64_t)code;
    double now = pg_mono_s();
    size_t slot;

    for (const char *p = reason ? reason : ""; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            key = (key ^ (unsigned char)*p) * 1099511628211ULL;
        }
    }
    slot = (size_t)(key % (sizeof(rx->reasons) / sizeof(rx->reasons[0])));
    if (rx->reasons[slot].key == key && rx->reasons[slot].last > 0 &&
        now - rx->reasons[slot].last < REASON_LOG_INTERVAL_S) {
        rx->reasons[slot].suppressed++;
        return false;
    }
    *suppressed = rx->reasons[slot].key == key ? rx->reasons[slot].suppressed : 0;
    rx->reasons[slot].key = key;
    rx->reasons[slot].last = now;
    rx->reasons[slot].suppressed = 0;
    return true;
}

/* Every answer, the HTTP layer's own included: counted by code, and a
 * refusal (4xx/5xx) logged with its reason and peer (info; warn for 5xx). */
static void on_answer(const struct pg_httpd_req *r, int code, const char *reason,
                      const char *peer, void *arg)
{
    struct rx *rx = arg;
    unsigned long suppressed = 0;

    (void)r;
    count_in(rx->codes, &rx->n_codes, sizeof(rx->codes) / sizeof(rx->codes[0]),
             "pprofgate_receiver_http_requests_total", "HTTP requests by status code.", rx->id,
             code);
    if (code < 400) {
        return;
    }
    count_in(rx->refused_codes, &rx->n_refused_codes,
             sizeof(rx->refused_codes) / sizeof(rx->refused_codes[0]),
             "otelcol_receiver_refused_requests_total",
             "HTTP requests answered with a 4xx or 5xx status, by code.", rx->id, code);
    if (!reason_log_ok(rx, code, reason, &suppressed)) {
        return;
    }
    if (code >= 500) {
        pg_log_warn(rx->log_name, "answered %d: %s (peer=%s, %lu similar lines suppressed)", code,
                    reason ? reason : "", peer ? peer : "?", suppressed);
    } else {
        pg_log_info(rx->log_name, "answered %d: %s (peer=%s, %lu similar lines suppressed)", code,
                    reason ? reason : "", peer ? peer : "?", suppressed);
    }
}

static void on_conn_event(int ev, const char *peer, void *arg)
{
    struct rx *rx = arg;
    unsigned long suppressed = 0;

    if (ev < 0 || ev >= PG_HTTPD_N_EVENTS) {
        return;
    }
    pg_metric_add(rx->m_conn_events[ev], 1);
    if (ev <= PG_HTTPD_ACCEPT_PAUSED &&
        reason_log_ok(rx, 1000 + ev, pg_httpd_event_names[ev], &suppressed)) {
        pg_log_info(rx->log_name, "%s %s (%s; %lu similar lines suppressed)",
                    ev == PG_HTTPD_ACCEPT_PAUSED ? "accept paused:" : "connection refused from",
                    peer ? peer : "?", pg_httpd_event_names[ev], suppressed);
    }
}

/* ---- HTTP ------------------------------------------------------------- */

/* Sends the answer: 204 empty, else a one-line text/plain reason. */
static void reply(struct rx *rx, struct pg_httpd_req *req, int code, const char *text)
{
    const struct rx_server_cfg *s = &rx->cfg.server;

    for (size_t i = 0; i < s->response_headers.n; i++) {
        evhttp_add_header(req->out, s->response_headers.keys[i], s->response_headers.values[i]);
    }
    pg_httpd_reply(req, code, text ? text : "");
}

static void fail(struct rx *rx, struct pg_httpd_req *req, enum pg_err err,
                 const struct pg_status *st)
{
    int code = pg_err_http_status(err);
    const char *msg = pg_status_text(st);

    if (code < 400) {
        code = 500; /* an error must never look like success */
    }
    if (code == 503 || code == 429) {
        evhttp_add_header(req->out, "Retry-After", "1");
    }
    reply(rx, req, code, msg);
}

/* Content-Encoding over every header line that carries it. */
static enum pg_err request_codings(struct rx *rx, struct evkeyvalq *in, struct pg_http_codings *c,
                                   struct pg_status *st)
{
    const struct evkeyval *kv;

    memset(c, 0, sizeof(*c));
    TAILQ_FOREACH(kv, in, next)
    {
        if (strcasecmp(kv->key, "Content-Encoding") == 0) {
            enum pg_err err = pg_http_parse_content_encoding(kv->value, rx->allowed, c, st);

            if (err != PG_ERR_OK) {
                return err;
            }
        }
    }
    return PG_ERR_OK;
}

/* One POST body on its way through translation. The loop thread fills the
 * inputs and owns the job until it is queued; a worker then owns it (and its
 * arenas) until it is on the done list; the loop thread finishes it. @req is
 * only ever touched on the loop thread. */
struct rx_job {
    struct rx_job *next;
    struct pg_httpd_req *req;      /* borrowed from the server; loop thread only */
    size_t admitted;               /* pg_memlimit_admit()ed; released when the batch is charged */
    double t0;
    /* inputs */
    struct pg_arena *scratch;      /* owned: raw body + decoded layers */
    struct pg_arena *arena;        /* owned: becomes the batch's arena */
    const uint8_t *raw;            /* in scratch */
    size_t len;
    struct evbuffer *body;         /* owned: a queued body, copied into scratch by the worker */
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

/* Worker threads: a locked todo list in, a locked done list out, and an
 * eventfd that wakes the loop when the done list becomes non-empty. */
struct rx_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct rx_job *todo, **todo_tail; /* under mu */
    struct rx_job *done, **done_tail; /* under mu */
    bool stop;                        /* under mu */
    pthread_t *threads;
    size_t n_threads;
    int efd;
    struct event *ev;                 /* persistent EV_READ on efd */
    size_t in_flight;                 /* loop thread only: queued, running or done */
};

/* Ends a job: gives back its memory admission and frees it. */
static void job_free(struct rx_job *job)
{
    pg_memlimit_release(job->admitted);
    if (job->body != NULL) {
        evbuffer_free(job->body);
    }
    pg_arena_destroy(job->scratch);
    pg_arena_destroy(job->arena);
    pg_batch_unref(job->batch);
    free(job);
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

    if (job->body != NULL) {
        uint8_t *raw = pg_arena_alloc(job->scratch, job->len);

        if (raw == NULL || evbuffer_remove(job->body, raw, job->len) != (int)job->len) {
            job->err = pg_status_set(&job->st, PG_ERR_NOMEM, "no memory for a %zu-byte request",
                                     job->len);
            return;
        }
        evbuffer_free(job->body);
        job->body = NULL;
        job->raw = raw;
    }
    body = job->raw;
    body_len = job->len;
    if (job->codings.n > 0) {
        /* Decoded layers go to an arena of their own so the raw body can go
         * as soon as it is inflated: the two never wait out translation together. */
        struct pg_arena *dec = pg_arena_create(pg_arena_cap(job->scratch));

        err = dec == NULL ? pg_status_set(&job->st, PG_ERR_NOMEM, "no memory to decode the body")
                          : pg_http_decode_body(dec, job->raw, job->len, &job->codings, max,
                                                &body, &body_len, &inflated, &job->st);
        pg_arena_destroy(job->scratch);
        job->scratch = dec;
    } else {
        err = PG_ERR_OK;
    }
    if (err == PG_ERR_OK) {
        /* Takes job->scratch: the pprof bytes die before the Sample structs are built. */
        err = pg_pprof_translate_owned(job->arena, &job->scratch, body, body_len, &rx->topts,
                                       &otlp, &job->stats, &job->st);
        pg_metric_add(rx->m_inflated, inflated + job->stats.inflated_bytes);
        pg_metric_observe(rx->m_latency, pg_mono_s() - job->t0);
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
static void abandon(struct rx *rx, struct rx_job *job)
{
    pg_metric_add(rx->m_abandoned, 1);
    if (job->err == PG_ERR_OK) {
        pg_metric_add(rx->m_refused, job->stats.sample_records);
    }
    pg_log_debug(rx->log_name, "client went away before its answer; request dropped");
    /* Not a refusal anyone reads: not counted as an answer. */
    pg_httpd_reply_body(job->req, 503, NULL, NULL, 0);
    job_free(job);
}

/* Loop thread: hands job->batch to the pipeline and answers. Frees @job. */
static void deliver(struct rx *rx, struct rx_job *job)
{
    struct pg_httpd_req *req = job->req;
    struct pg_batch *batch = job->batch;
    enum pg_err err;

    job->batch = NULL;
    err = pg_consumer_consume(rx->next, batch, &job->st); /* takes our reference */
    if (err != PG_ERR_OK) {
        pg_metric_add(rx->m_refused, job->stats.sample_records);
        fail(rx, req, err, &job->st);
    } else {
        pg_metric_add(rx->m_accepted, job->stats.sample_records);
        reply(rx, req, 204, NULL);
    }
    job_free(job);
}

#define HELD_POLL_MS 10

static void held_arm(struct rx *rx)
{
    struct timeval tv = {0, HELD_POLL_MS * 1000};

    if (rx->held_ev != NULL && !evtimer_pending(rx->held_ev, NULL)) {
        evtimer_add(rx->held_ev, &tv);
    }
}

/* An exporter with block_on_overflow is full: the request waits, unanswered,
 * as a Go handler would block in the collector. The client's connection
 * stays open; its memory stays charged. */
static void hold(struct rx *rx, struct rx_job *job)
{
    unsigned long suppressed = 0;

    if (rx->held == NULL && pg_log_ratelimit_ok(&rx->rl, &suppressed)) {
        pg_log_info(rx->log_name, "holding requests: %s (%lu similar lines suppressed)",
                    pg_status_text(&job->st), suppressed);
    }
    job->held_since = pg_mono_s();
    job->next = NULL;
    *rx->held_tail = job;
    rx->held_tail = &job->next;
    pg_metric_add(rx->m_held, 1);
    held_arm(rx);
}

static struct rx_job *held_pop(struct rx *rx)
{
    struct rx_job *job = rx->held;

    rx->held = job->next;
    if (rx->held == NULL) {
        rx->held_tail = &rx->held;
    }
    job->next = NULL;
    return job;
}

/* Answers a held request without delivering it. Frees @job. */
static void held_refuse(struct rx *rx, struct rx_job *job, enum pg_err err, const char *why)
{
    struct pg_status st;

    pg_metric_add(rx->m_refused, job->stats.sample_records);
    pg_status_set(&st, err, "%s", why);
    fail(rx, job->req, err, &st);
    job_free(job);
}

/* Oldest first: delivers while there is room, drops requests whose client
 * left, and answers 503 to those held longer than write_timeout (Go's
 * deadline for answering a request; 0 = wait as long as the client does). */
static void on_held_timer(evutil_socket_t fd, short what, void *arg)
{
    struct rx *rx = arg;
    const double limit = (double)rx->cfg.server.write_timeout / 1e9;

    (void)fd;
    (void)what;
    while (rx->held != NULL) {
        struct rx_job *job = rx->held;
        char why[160];

        if (client_gone(job->req)) {
            abandon(rx, held_pop(rx));
            continue;
        }
        if (!pg_consumer_would_block(rx->next, job->batch, &job->st)) {
            deliver(rx, held_pop(rx));
            continue;
        }
        if (limit > 0 && pg_mono_s() - job->held_since >= limit) {
            held_pop(rx);
            snprintf(why, sizeof(why), "%s; held %.0f s (write_timeout), retry later",
                     pg_status_text(&job->st), limit);
            held_refuse(rx, job, PG_ERR_BUSY, why);
            continue;
        }
        break; /* still full: the ones behind it wait too */
    }
    if (rx->held != NULL) {
        held_arm(rx);
    }
}

/* Shutdown: exporters stop taking data now, so nobody held gets room. */
static void held_drain(struct rx *rx)
{
    while (rx->held != NULL) {
        held_refuse(rx, held_pop(rx), PG_ERR_UNAVAILABLE, "shutting down; retry later");
    }
}

/* Loop thread: runs the pipeline and answers. Frees @job. */
static void job_finish(struct rx *rx, struct rx_job *job, bool async)
{
    struct pg_httpd_req *req = job->req;
    struct pg_batch *batch = job->batch;
    enum pg_err err = job->err;

    if (async && client_gone(req)) {
        abandon(rx, job);
        return;
    }
    if (err != PG_ERR_OK) {
        fail(rx, req, err, &job->st);
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
    if (rx->held != NULL || pg_consumer_would_block(rx->next, batch, &job->st)) {
        hold(rx, job); /* keeps job->batch; answered by on_held_timer() */
        return;
    }
    deliver(rx, job);
}

/* Workers run at a lower priority than the loop (Linux nice is per
 * thread): a flood of large bodies then cannot starve accepting, answering
 * and the small pushes the loop translates itself. */
#define WORKER_NICE 5
/* Scheduler slices (Linux 6.12+): the loop's short one makes it run first
 * when it wakes; the workers' short one bounds how long it waits for a core
 * they hold (the default is ~3 ms, paid at every wakeup of a request). */
#define LOOP_SLICE_NS (500u * 1000u)
#define WORKER_SLICE_NS (500u * 1000u)

static void *worker_main(void *arg)
{
    struct rx *rx = arg;
    struct rx_pool *pool = rx->pool;

    pg_sched_bulk_thread(WORKER_NICE, WORKER_SLICE_NS);

    for (;;) {
        struct rx_job *job;
        bool wake;

        pthread_mutex_lock(&pool->mu);
        while (pool->todo == NULL && !pool->stop) {
            pthread_cond_wait(&pool->cv, &pool->mu);
        }
        if (pool->stop) {
            pthread_mutex_unlock(&pool->mu);
            return NULL;
        }
        job = pool->todo;
        pool->todo = job->next;
        if (pool->todo == NULL) {
            pool->todo_tail = &pool->todo;
        }
        pthread_mutex_unlock(&pool->mu);

        job->next = NULL;
        job_run(rx, job);

        pthread_mutex_lock(&pool->mu);
        wake = pool->done == NULL;
        *pool->done_tail = job;
        pool->done_tail = &job->next;
        pthread_mutex_unlock(&pool->mu);
        if (wake) {
            uint64_t one = 1;

            /* Cannot fail short of a counter overflow; the loop drains it. */
            (void)!write(pool->efd, &one, sizeof(one));
        }
    }
}

/* Loop thread: the eventfd fired; finish every completed job. */
static void on_jobs_done(evutil_socket_t fd, short what, void *arg)
{
    struct rx *rx = arg;
    struct rx_pool *pool = rx->pool;
    struct rx_job *list;
    uint64_t n;

    (void)what;
    (void)!read(fd, &n, sizeof(n));
    pthread_mutex_lock(&pool->mu);
    list = pool->done;
    pool->done = NULL;
    pool->done_tail = &pool->done;
    pthread_mutex_unlock(&pool->mu);
    while (list != NULL) {
        struct rx_job *job = list;

        list = job->next;
        pool->in_flight--;
        job_finish(rx, job, true);
    }
}

/* What the process can use (affinity and cgroup quota), capped. */
static int worker_default(void)
{
    int n = pg_usable_cpus();

    return n > MAX_WORKERS ? MAX_WORKERS : n;
}

static enum pg_err pool_start(struct rx *rx, size_t n, struct pg_status *st)
{
    struct rx_pool *pool = calloc(1, sizeof(*pool));

    if (pool == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", rx->log_name);
    }
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->cv, NULL);
    pool->todo_tail = &pool->todo;
    pool->done_tail = &pool->done;
    pool->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pool->threads = calloc(n, sizeof(*pool->threads));
    rx->pool = pool;
    if (pool->efd < 0 || pool->threads == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot set up worker threads: %s",
                             rx->log_name, strerror(errno));
    }
    pool->ev = event_new(rx->host->base, pool->efd, EV_READ | EV_PERSIST, on_jobs_done, rx);
    if (pool->ev == NULL || event_add(pool->ev, NULL) != 0) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot watch the worker eventfd",
                             rx->log_name);
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
static void pool_destroy(struct rx *rx)
{
    struct rx_pool *pool = rx->pool;
    struct rx_job *lists[2];

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
    lists[0] = pool->done;
    lists[1] = pool->todo;
    for (size_t l = 0; l < 2; l++) {
        while (lists[l] != NULL) {
            struct rx_job *job = lists[l];
            struct pg_status st;

            lists[l] = job->next;
            pg_status_set(&st, PG_ERR_UNAVAILABLE, "shutting down; retry later");
            fail(rx, job->req, PG_ERR_UNAVAILABLE, &st);
            job_free(job);
        }
    }
    if (pool->ev != NULL) {
        event_free(pool->ev);
    }
    if (pool->efd >= 0) {
        close(pool->efd);
    }
    pthread_cond_destroy(&pool->cv);
    pthread_mutex_destroy(&pool->mu);
    free(pool->threads);
    free(pool);
    rx->pool = NULL;
}

/* Loop thread: checks, moves the body out of the request, copies what the
 * batch needs from it, then translates inline or queues the job. Owns
 * @admitted bytes of the memory budget (released when the job ends). */
static void handle_pprof(struct rx *rx, struct pg_httpd_req *req, size_t admitted)
{
    struct evkeyvalq *in = req->in;
    struct evbuffer *buf = req->body;
    const size_t max = (size_t)rx->cfg.server.max_request_body_size;
    size_t len = evbuffer_get_length(buf);
    struct rx_job *job;
    enum pg_err err;
    uint8_t *raw;
    bool to_pool;

    job = calloc(1, sizeof(*job));
    if (job == NULL) {
        struct pg_status st;

        pg_status_set(&st, PG_ERR_NOMEM, "no memory for a %zu-byte request", len);
        fail(rx, req, PG_ERR_NOMEM, &st);
        pg_memlimit_release(admitted);
        return;
    }
    job->req = req;
    job->admitted = admitted;
    job->t0 = pg_mono_s();
    job->err = PG_ERR_INTERNAL;
    pg_status_clear(&job->st);
    pg_status_clear(&job->md_st);
    err = request_codings(rx, in, &job->codings, &job->st);
    if (err != PG_ERR_OK) {
        job->err = err;
        goto finish;
    }
    if (len > max) { /* the server enforces this too; keep the check local */
        job->err = pg_status_set(&job->st, PG_ERR_LIMIT, "request body of %zu bytes exceeds "
                                 "max_request_body_size (%zu bytes)", len, max);
        goto finish;
    }
    pg_metric_add(rx->m_bytes, len);
    /* Raw body + up to PG_HTTP_MAX_CODINGS decoded layers, plus zlib state. */
    job->scratch = pg_arena_create(max * (PG_HTTP_MAX_CODINGS + 1) + (1u << 20));
    job->arena = pg_arena_create(max * BATCH_ARENA_FACTOR);
    /* A body for the workers moves to the job as it is (the chains, no copy):
     * copying and faulting in megabytes would stall the loop. */
    to_pool = rx->pool != NULL && len > INLINE_MAX_BODY;
    if (to_pool) {
        raw = NULL;
        job->body = evbuffer_new();
    } else {
        raw = job->scratch ? pg_arena_alloc(job->scratch, len ? len : 1) : NULL;
    }
    if (job->arena == NULL || job->scratch == NULL || (to_pool ? job->body == NULL : raw == NULL)) {
        job->err = pg_status_set(&job->st, PG_ERR_NOMEM, "no memory for a %zu-byte request", len);
        goto finish;
    }
    if (to_pool ? evbuffer_add_buffer(job->body, buf) != 0
                : evbuffer_remove(buf, raw, len) != (int)len) {
        job->err = pg_status_set(&job->st, PG_ERR_INTERNAL, "could not read the request body");
        goto finish;
    }
    job->raw = raw;
    job->len = len;
    {
        /* The request belongs to the server and the loop: copy what the
         * batch keeps now (a metadata failure is reported after
         * translation, as it always was). */
        job->md.peer_addr = pg_http_format_peer(job->arena, req->peer_addr, req->peer_port);
        if (rx->cfg.server.include_metadata) {
            job->md_err = pg_http_metadata_from_headers(job->arena, in, NULL, &job->md,
                                                        &job->md_st);
        }
    }
    if (to_pool) {
        struct rx_pool *pool = rx->pool;

        pool->in_flight++;
        pthread_mutex_lock(&pool->mu);
        *pool->todo_tail = job;
        pool->todo_tail = &job->next;
        pthread_cond_signal(&pool->cv);
        pthread_mutex_unlock(&pool->mu);
        return;
    }
    job_run(rx, job);
finish:
    job_finish(rx, job, false);
}

/* What a body of @len bytes may cost while it is decoded and translated:
 * the body (and its copy), then ADMIT_INFLATED_FACTOR times its inflated
 * size (inflated bytes, the translator's tables, the OTLP message and its
 * batch: a 2 MB gzip of 7.5 MB raw raises VmHWM by ~45 MB), the inflated
 * size estimated as 4x the body (pprof gzips 3-5x) capped at the per-layer
 * limit. Capped at the soft limit so a lone request always fits an idle
 * gateway. */
#define ADMIT_INFLATED_FACTOR 6
static size_t admission_estimate(const struct rx *rx, uint64_t len)
{
    uint64_t layer = rx->topts.limits.max_inflated_bytes;
    uint64_t inflated = len * 4 < layer ? len * 4 : layer;
    uint64_t est = len + ADMIT_INFLATED_FACTOR * inflated;
    uint64_t soft = pg_memlimit_soft_limit();

    if (soft > 0 && est > soft) {
        est = soft;
    }
    return (size_t)est;
}

static bool admit(struct rx *rx, struct pg_httpd_req *req, size_t bytes)
{
    struct pg_status mst;

    if (!pg_memlimit_admit(bytes, &mst)) {
        evhttp_add_header(req->out, "Connection", "close");
        fail(rx, req, mst.code, &mst);
        return false;
    }
    req->reserved += bytes;
    return true;
}

/* The head is in and no body byte has been read: route, authenticate,
 * check the method and Content-Encoding, and reserve the body's memory.
 * Every refusal here closes the connection without reading the body. */
static bool on_head(struct pg_httpd_req *req, void *arg)
{
    struct rx *rx = arg;
    struct pg_http_codings codings;
    struct pg_status st;
    char msg[160];
    enum pg_err err;

    if (strcmp(req->path, PPROF_PATH) != 0) {
        reply(rx, req, 404, "404 page not found");
        return false;
    }
    if (rx->auth != NULL) {
        const struct pg_peer_key *key = req->peer_key;
        double now = pg_mono_s();
        const struct evkeyval *kv;
        int n_auth = 0;

        TAILQ_FOREACH(kv, req->in, next)
        {
            n_auth += strcasecmp(kv->key, "Authorization") == 0;
        }
        if (n_auth > 1) {
            /* Which one counts would differ between a proxy and us. */
            reply(rx, req, 400, "more than one Authorization header");
            return false;
        }

        if (pg_peer_ratelimit_blocked(rx->auth_rl, key, now)) {
            evhttp_add_header(req->out, "Retry-After", "1");
            reply(rx, req, 429, "too many failed authentication attempts; retry later");
            return false;
        }
        if (!pg_auth_check(rx->auth, evhttp_find_header(req->in, "Authorization"), &st)) {
            pg_peer_ratelimit_hit(rx->auth_rl, key, now);
            evhttp_add_header(req->out, "WWW-Authenticate", pg_auth_challenge(rx->auth));
            reply(rx, req, 401, pg_status_text(&st));
            return false;
        }
    }
    if (strcmp(req->method, "POST") != 0) {
        evhttp_add_header(req->out, "Allow", "POST");
        snprintf(msg, sizeof(msg), "method %.20s not allowed, supported: [POST]", req->method);
        reply(rx, req, 405, msg);
        return false;
    }
    err = request_codings(rx, req->in, &codings, &st);
    if (err != PG_ERR_OK) {
        fail(rx, req, err, &st);
        return false;
    }
    if (!req->chunked && req->content_length != PG_HTTP_NO_LENGTH &&
        req->content_length > rx->cfg.server.max_request_body_size) {
        snprintf(msg, sizeof(msg), "request body of %llu bytes exceeds max_request_body_size "
                 "(%llu bytes)", (unsigned long long)req->content_length,
                 (unsigned long long)rx->cfg.server.max_request_body_size);
        reply(rx, req, 413, msg);
        return false;
    }
    /* Memory before the body: from Content-Length now, or step by step as
     * chunks arrive (on_body). */
    return admit(rx, req,
                 admission_estimate(rx, req->chunked                                ? CHUNKED_RESERVE_STEP
                                        : req->content_length == PG_HTTP_NO_LENGTH ? 0
                                                                                   : req->content_length));
}

static bool on_body(struct pg_httpd_req *req, uint64_t received, void *arg)
{
    struct rx *rx = arg;

    while (req->chunked && admission_estimate(rx, received) > req->reserved) {
        size_t more = admission_estimate(rx, received + CHUNKED_RESERVE_STEP) - req->reserved;

        if (more == 0 || !admit(rx, req, more)) {
            return more == 0;
        }
    }
    return true;
}

static void on_request(struct pg_httpd_req *req, void *arg)
{
    struct rx *rx = arg;
    size_t admitted = req->reserved;

    req->reserved = 0; /* the job owns the admission from here */
    handle_pprof(rx, req, admitted); /* releases it when the request ends */
}

/* A request that ends before its job took its admission (refused, or the
 * client went away mid-body) gives it back. */
static void on_done(struct pg_httpd_req *req, void *arg)
{
    (void)arg;
    if (req->reserved > 0) {
        pg_memlimit_release(req->reserved);
        req->reserved = 0;
    }
}

static enum pg_err rx_start(void *state, struct pg_status *st)
{
    struct rx *rx = state;
    const struct rx_server_cfg *s = &rx->cfg.server;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char addr[INET6_ADDRSTRLEN] = "?";
    char where[sizeof(rx->listen_host) + 8]; /* unix:PATH or HOST:PORT, for the log */
    unsigned port = rx->listen_port;
    uint64_t max_body = s->max_request_body_size;

    metrics_init(rx);
    if (rx->self != NULL) {
        enum pg_err err = pg_pprof_self_start(rx->self, st);

        if (err != PG_ERR_OK) {
            return err;
        }
    }
    if (rx->scraper != NULL) {
        enum pg_err err = pg_scraper_start(rx->scraper, st);

        if (err != PG_ERR_OK) {
            return err;
        }
    }
    if (!rx->cfg.has_server) {
        return PG_ERR_OK;
    }
    {
        static const struct pg_httpd_ops ops = {
            .on_head = on_head,
            .on_body = on_body,
            .on_request = on_request,
            .on_answer = on_answer,
            .on_conn_event = on_conn_event,
            .on_done = on_done,
        };
        struct pg_httpd_limits lim = {
            .read_header_timeout_ns = s->read_header_timeout,
            .read_timeout_ns = s->read_timeout,
            .write_timeout_ns = s->write_timeout,
            .idle_timeout_ns = s->idle_timeout,
            .min_body_rate = s->min_body_rate,
            .max_body = max_body,
            .max_header_bytes = MAX_HEADER_BYTES,
            .max_target = MAX_TARGET_BYTES,
            .max_headers = (size_t)s->max_request_headers,
            .max_connections = (size_t)s->max_connections,
            .max_connections_per_peer = (size_t)s->max_connections_per_peer,
            .max_requests_per_connection = (size_t)s->max_requests_per_connection,
            .keep_alives = s->keep_alives_enabled,
        };
        char why[256];
        /* Plain tcp with no host listens on every IPv4 address, as before. */
        const char *host = s->transport == PG_TRANSPORT_TCP && rx->listen_host[0] == '\0'
                               ? "0.0.0.0"
                               : rx->listen_host;
        int fd = pg_listen((enum pg_transport)s->transport, host, port, LISTEN_BACKLOG, why,
                           sizeof(why));

        if (fd < 0) {
            return pg_status_set(st, PG_ERR_IO, "%s: cannot listen on %s (%s): %s", rx->log_name,
                                 s->endpoint, pg_transport_names[s->transport], why);
        }
        rx->unix_path = s->transport == PG_TRANSPORT_UNIX; /* ours to remove at shutdown */
        rx->auth_rl = calloc(1, sizeof(*rx->auth_rl));
        if (rx->auth_rl == NULL) {
            close(fd);
            return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", rx->log_name);
        }
        pg_peer_ratelimit_init(rx->auth_rl, AUTH_FAIL_PER_SEC, AUTH_FAIL_BURST);
        rx->httpd = pg_httpd_new(rx->host->base, fd, rx->ssl_ctx, &lim, &ops, rx);
        if (rx->httpd == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot create the HTTP server",
                                 rx->log_name);
        }
    }
    /* This (the loop) thread accepts, answers and translates small pushes
     * for every client: a short scheduler slice lets it run as soon as it
     * wakes instead of after the current holder of the CPU (a worker, a
     * busy neighbour) used up its default ~3 ms slice. */
    (void)pg_sched_latency_thread(LOOP_SLICE_NS);
    rx->held_ev = evtimer_new(rx->host->base, on_held_timer, rx);
    if (rx->held_ev == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", rx->log_name);
    }

    if (getsockname(pg_httpd_fd(rx->httpd), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;

            inet_ntop(AF_INET, &in4->sin_addr, addr, sizeof(addr));
            port = ntohs(in4->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

            inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
            port = ntohs(in6->sin6_port);
        }
    }
    if (s->workers != 0) {
        size_t n = s->workers < 0 ? (size_t)worker_default() : (size_t)s->workers;
        enum pg_err err = pool_start(rx, n, st);

        if (err != PG_ERR_OK) {
            return err; /* rx_destroy joins what started */
        }
    }
    if (rx->unix_path) {
        snprintf(where, sizeof(where), "unix:%s", rx->listen_host);
    } else {
        pg_http_hostport(where, sizeof(where), addr, port);
    }
    /* Integration tests read the bound port from this line (endpoint :0). */
    pg_log_info(rx->log_name, "listening on %s (POST %s, max body %llu bytes, %zu workers, "
                "%zu connections at most)", where, PPROF_PATH, (unsigned long long)max_body,
                rx->pool != NULL ? rx->pool->n_threads : 0, pg_httpd_connection_cap(rx->httpd));
    return PG_ERR_OK;
}

/* Go's unix listener removes its socket file on close; so does pprofgate. */
static void remove_socket_file(struct rx *rx)
{
    if (rx->unix_path) {
        unlink(rx->listen_host);
        rx->unix_path = false;
    }
}

static void rx_shutdown(void *state)
{
    struct rx *rx = state;

    if (rx == NULL || rx->draining) {
        return;
    }
    rx->draining = true;
    pg_pprof_self_stop(rx->self);
    pg_scraper_stop(rx->scraper);
    held_drain(rx);
    /* Stop accepting; open connections finish their request and get
     * Connection: close. Jobs on the workers complete into the pipeline
     * while the service drains (rx_idle); rx_destroy answers the rest. */
    pg_httpd_stop_accepting(rx->httpd);
    remove_socket_file(rx);
}

static bool rx_idle(void *state)
{
    const struct rx *rx = state;

    return rx == NULL || ((rx->pool == NULL || rx->pool->in_flight == 0) &&
                          pg_scraper_idle(rx->scraper));
}

static void rx_destroy(void *state)
{
    struct rx *rx = state;

    if (rx == NULL) {
        return;
    }
    pg_pprof_self_destroy(rx->self);
    pg_scraper_destroy(rx->scraper);
    pg_scrape_config_free(&rx->scrape_cfg);
    held_drain(rx);   /* before pg_httpd_free: held jobs hold requests */
    if (rx->held_ev != NULL) {
        event_free(rx->held_ev);
    }
    pool_destroy(rx); /* before pg_httpd_free: jobs hold requests */
    pg_httpd_free(rx->httpd);
    remove_socket_file(rx);
    if (rx->ssl_ctx != NULL) { /* after the connections using it */
        SSL_CTX_free(rx->ssl_ctx);
    }
    free(rx->auth_rl);
    pg_auth_free(rx->auth);
    free(rx);
}

static const char *rx_metadata_use(void *state)
{
    const struct rx *rx = state;
    return rx->cfg.server.include_metadata ? "include_metadata: true" : NULL;
}

const struct pg_component_ops pg_receiver_pprof = {
    .type = "pprof",
    .alias = NULL,
    .kind = PG_KIND_RECEIVER,
    .fields = pg_pprof_rx_fields,
    .doc = "POST /v1/pprof push endpoint (collector pprofreceiver server mode)",
    .create = rx_create,
    .start = rx_start,
    .process = NULL,
    .consume = NULL,
    .shutdown = rx_shutdown,
    .idle = rx_idle,
    .destroy = rx_destroy,
    .metadata_use = rx_metadata_use,
};
