/* SPDX-License-Identifier: Apache-2.0
 * The pprof receiver's HTTP side, on the loop thread: the head is judged
 * before any body byte is read (route, authentication, method,
 * Content-Encoding, size, memory admission), the body becomes a job
 * (pprof_workers.c), and every answer is counted and, when it refuses,
 * logged with its reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "core/clock.h"
#include "core/memlimit.h"
#include "http/http_parse.h"
#include "receiver/pprof_internal.h"

/* Chunked bodies reserve memory in steps of this many body bytes. */
#define CHUNKED_RESERVE_STEP (256 * 1024)
/* The batch arena may grow to this many times max_request_body_size. */
#define BATCH_ARENA_FACTOR 8

/* ---- answers: counted by code, refusals logged ------------------------- */

/* Every answer, the HTTP layer's own included: counted by code, and a
 * refusal (4xx/5xx) logged with its reason and peer (info; warn for 5xx). */
static void on_answer(const struct pg_httpd_req *r, int code, const char *reason,
                      const char *peer, void *arg)
{
    struct rx_loop *lp = arg;
    struct rx *rx = lp->rx;
    unsigned long suppressed = 0;

    (void)r;
    pg_rxh_count(&lp->codes, "pprofgate_receiver_http_requests_total",
                 "HTTP requests by status code.", rx->id, NULL, code);
    if (code < 400) {
        return;
    }
    pg_rxh_count(&lp->refused_codes, "otelcol_receiver_refused_requests_total",
                 "HTTP requests answered with a 4xx or 5xx status, by code.", rx->id, NULL, code);
    if (!pg_rxh_reason_log_ok(&rx->reasons, code, reason, &suppressed)) {
        return;
    }
    if (code >= 500) {
        pg_log_warn(rx->log_name, "answered %d: %s (peer=%s" PG_LOG_SUPPRESSED_FMT ")", code,
                    reason ? reason : "", peer ? peer : "?", PG_LOG_SUPPRESSED(suppressed));
    } else {
        pg_log_info(rx->log_name, "answered %d: %s (peer=%s" PG_LOG_SUPPRESSED_FMT ")", code,
                    reason ? reason : "", peer ? peer : "?", PG_LOG_SUPPRESSED(suppressed));
    }
}

static void on_conn_event(int ev, const char *peer, void *arg)
{
    struct rx *rx = ((struct rx_loop *)arg)->rx;
    unsigned long suppressed = 0;

    if (ev < 0 || ev >= PG_HTTPD_N_EVENTS) {
        return;
    }
    pg_metric_add(rx->m_conn_events[ev], 1);
    if (ev <= PG_HTTPD_ACCEPT_PAUSED &&
        pg_rxh_reason_log_ok(&rx->reasons, 1000 + ev, pg_httpd_event_names[ev], &suppressed)) {
        pg_log_info(rx->log_name, "%s %s (%s" PG_LOG_SUPPRESSED_FMT ")",
                    ev == PG_HTTPD_ACCEPT_PAUSED ? "accept paused:" : "connection refused from",
                    peer ? peer : "?", pg_httpd_event_names[ev], PG_LOG_SUPPRESSED(suppressed));
    }
}

/* ---- requests ---------------------------------------------------------- */

/* Sends the answer: 204 empty, else a one-line text/plain reason, with the
 * configured response_headers. */
static void rx_reply(struct rx_loop *lp, struct pg_httpd_req *req, int code, const char *text)
{
    const struct rx_server_cfg *s = &lp->rx->cfg.server;

    for (size_t i = 0; i < s->response_headers.n; i++) {
        evhttp_add_header(req->out, s->response_headers.keys[i], s->response_headers.values[i]);
    }
    pg_httpd_reply(req, code, text ? text : "");
}

/* Answers @err with its status code (never below 400) and @st's reason. */
static void rx_fail(struct rx_loop *lp, struct pg_httpd_req *req, enum pg_err err,
                    const struct pg_status *st)
{
    int code = pg_rxh_http_status(err); /* never below 400 */
    const char *msg = pg_status_text(st);

    if (code == 503 || code == 429) {
        evhttp_add_header(req->out, "Retry-After", "1");
    }
    rx_reply(lp, req, code, msg);
}

void pg_rx_job_done(struct rx_job *job, enum pg_err err, const struct pg_status *st)
{
    if (err == PG_ERR_OK) {
        rx_reply(job->loop, job->req, 204, NULL);
    } else {
        rx_fail(job->loop, job->req, err, st);
    }
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

/* Loop thread: checks, copies what the batch needs from the request, then
 * starts the job (inline or on a worker) on the body where the server read
 * it (it stays until the answer, which comes after the job), or, for a body
 * larger than the server's pooled buffer, on a copy in the job's scratch
 * arena (freed once the pprof is translated). Owns
 * @admitted bytes of the memory budget (released when the job ends). */
static void handle_pprof(struct rx_loop *lp, struct pg_httpd_req *req, size_t admitted)
{
    struct rx *rx = lp->rx;
    struct evkeyvalq *in = req->in;
    const size_t max = (size_t)rx->cfg.server.max_request_body_size;
    size_t len = req->body_len;
    struct rx_job *job;
    enum pg_err err;

    job = pg_rx_job_new(lp);
    if (job == NULL) {
        struct pg_status st;

        pg_status_set(&st, PG_ERR_NOMEM, "no memory for a %zu-byte request", len);
        rx_fail(lp, req, PG_ERR_NOMEM, &st);
        pg_memlimit_release(admitted);
        return;
    }
    job->req = req;
    job->loop = lp;
    job->admitted = admitted;
    job->t0 = pg_mono_s();
    job->err = PG_ERR_INTERNAL;
    pg_status_clear(&job->st);
    pg_status_clear(&job->md_st);
    if (lp->codings_req == req) {
        job->codings = lp->codings;
        err = PG_ERR_OK;
    } else {
        err = request_codings(rx, in, &job->codings, &job->st);
    }
    lp->codings_req = NULL;
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
    if (job->arena == NULL || job->scratch == NULL) {
        job->err = pg_status_set(&job->st, PG_ERR_NOMEM, "no memory for a %zu-byte request", len);
        goto finish;
    }
    job->raw = (const uint8_t *)req->body;
    job->len = len;
    if (len > PG_HTTPD_POOLED_BODY) {
        /* A large body moves into scratch, which the translator frees as
         * soon as the pprof bytes are dead: the connection's copy would
         * otherwise stay until the answer, beside the translated request. */
        uint8_t *copy = pg_arena_alloc(job->scratch, len);

        if (copy == NULL) {
            job->err = pg_status_set(&job->st, PG_ERR_NOMEM,
                                     "no memory for a %zu-byte request", len);
            goto finish;
        }
        memcpy(copy, req->body, len);
        job->raw = copy;
        job->raw_in_scratch = true;
        pg_httpd_drop_body(req);
    }
    {
        /* The request belongs to the server and the loop: copy what the
         * batch keeps now (a metadata failure is reported after
         * translation, as it always was). */
        job->md.peer_addr = pg_arena_strdup(job->arena, req->peer_hostport);
        if (rx->cfg.server.include_metadata) {
            job->md_err = pg_http_metadata_from_headers(job->arena, in, NULL, &job->md,
                                                        &job->md_st);
        }
    }
    pg_rx_job_start(lp, job);
    return;
finish:
    pg_rx_job_finish(lp, job, false);
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

static bool admit(struct rx_loop *lp, struct pg_httpd_req *req, size_t bytes)
{
    struct pg_status mst;

    if (!pg_memlimit_admit(bytes, &mst)) {
        evhttp_add_header(req->out, "Connection", "close");
        rx_fail(lp, req, mst.code, &mst);
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
    struct rx_loop *lp = arg;
    struct rx *rx = lp->rx;
    struct pg_http_codings codings;
    struct pg_status st;
    char msg[160];
    enum pg_err err;

    if (strcmp(req->path, "/") == 0 && strcmp(req->method, "GET") == 0) {
        /* What this port is for (wait loops and curious operators poll /);
         * no credentials needed: it names the endpoint and nothing else. */
        rx_reply(lp, req, 200,
                    "pprofgate pprof receiver\n"
                    "POST " PPROF_PATH "  a pprof profile (plain or gzip'd); 204 when accepted\n"
                    "OTLP goes to the otlp receiver (:4317 gRPC, :4318 /v1development/profiles)\n");
        return false;
    }
    if (strcmp(req->path, PPROF_PATH) != 0) {
        rx_reply(lp, req, 404, "404 page not found");
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
            rx_reply(lp, req, 400, "more than one Authorization header");
            return false;
        }

        /* One lock for every loop: the per-peer budget is global, and
         * pg_auth reloads its credential files when they change. */
        bool blocked, ok = false;

        pthread_mutex_lock(&rx->auth_mu);
        blocked = pg_peer_ratelimit_blocked(rx->auth_rl, key, now);
        if (!blocked) {
            ok = pg_auth_check(rx->auth, evhttp_find_header(req->in, "Authorization"), &st);
            if (!ok) {
                pg_peer_ratelimit_hit(rx->auth_rl, key, now);
            }
        }
        pthread_mutex_unlock(&rx->auth_mu);
        if (blocked) {
            evhttp_add_header(req->out, "Retry-After", "1");
            rx_reply(lp, req, 429, "too many failed authentication attempts; retry later");
            return false;
        }
        if (!ok) {
            evhttp_add_header(req->out, "WWW-Authenticate", pg_auth_challenge(rx->auth));
            rx_reply(lp, req, 401, pg_status_text(&st));
            return false;
        }
    }
    if (strcmp(req->method, "POST") != 0) {
        evhttp_add_header(req->out, "Allow", "POST");
        snprintf(msg, sizeof(msg), "method %.20s not allowed, supported: [POST]", req->method);
        rx_reply(lp, req, 405, msg);
        return false;
    }
    err = request_codings(rx, req->in, &codings, &st);
    if (err != PG_ERR_OK) {
        rx_fail(lp, req, err, &st);
        return false;
    }
    if (!req->chunked && req->content_length != PG_HTTP_NO_LENGTH &&
        req->content_length > rx->cfg.server.max_request_body_size) {
        snprintf(msg, sizeof(msg), "request body of %llu bytes exceeds max_request_body_size "
                 "(%llu bytes)", (unsigned long long)req->content_length,
                 (unsigned long long)rx->cfg.server.max_request_body_size);
        rx_reply(lp, req, 413, msg);
        return false;
    }
    /* Memory before the body: from Content-Length now, or step by step as
     * chunks arrive (on_body). */
    if (!admit(lp, req,
               admission_estimate(rx, req->chunked                                ? CHUNKED_RESERVE_STEP
                                      : req->content_length == PG_HTTP_NO_LENGTH ? 0
                                                                                 : req->content_length))) {
        return false;
    }
    lp->codings_req = req;
    lp->codings = codings;
    return true;
}

static bool on_body(struct pg_httpd_req *req, uint64_t received, void *arg)
{
    struct rx_loop *lp = arg;
    struct rx *rx = lp->rx;

    while (req->chunked && admission_estimate(rx, received) > req->reserved) {
        size_t more = admission_estimate(rx, received + CHUNKED_RESERVE_STEP) - req->reserved;

        if (more == 0 || !admit(lp, req, more)) {
            return more == 0;
        }
    }
    return true;
}

static void on_request(struct pg_httpd_req *req, void *arg)
{
    size_t admitted = req->reserved;

    req->reserved = 0; /* the job owns the admission from here */
    handle_pprof(arg, req, admitted); /* releases it when the request ends */
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

static void on_conn_open(void *arg)
{
    pg_metric_add(((struct rx_loop *)arg)->m_conns, 1);
}

const struct pg_httpd_ops pg_rx_httpd_ops = {
    .on_head = on_head,
    .on_body = on_body,
    .on_request = on_request,
    .on_answer = on_answer,
    .on_conn_event = on_conn_event,
    .on_done = on_done,
    .on_conn_open = on_conn_open,
};
