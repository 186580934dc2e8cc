/* SPDX-License-Identifier: Apache-2.0
 * The pprof receiver's HTTP side, on the loop thread: the head is judged
 * before any body byte is read (route, authentication, method,
 * Content-Encoding, size, memory admission), the body becomes a job
 * (pprof_jobs.c, run by pprof_workers.c), and every answer is counted and, when it refuses,
 * logged with its reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "codec/inflate.h"
#include "core/clock.h"
#include "core/memlimit.h"
#include "http/http_parse.h"
#include "receiver/pprof_internal.h"
#include "receiverhelper/connect.h"

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
    /* Counted and logged as the receiver the route feeds (req->user, set
     * by on_head), else as the listener's owner. */
    struct rx *rx = r != NULL && r->user != NULL ? r->user : lp->rx;
    size_t slot = rx == lp->rx ? 0 : rx->join_slot;
    unsigned long suppressed = 0;

    pg_rxh_count(&lp->codes[slot], "pprofgate_receiver_http_requests_total",
                 "HTTP requests by status code.", rx->id, NULL, code);
    if (code < 400) {
        return;
    }
    pg_rxh_count(&lp->refused_codes[slot], "otelcol_receiver_refused_requests_total",
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

/* A Push API error: Connect's JSON form with the status its code maps to
 * (405 and 415 stay plain: Connect answers them at the HTTP level). */
static void reply_connect_error(struct rx_loop *lp, struct pg_httpd_req *req, int code,
                                const char *text)
{
    char body[1024];
    int status;
    size_t n = pg_rxh_connect_error_json(code, text, body, sizeof(body), &status);

    pg_httpd_reply_body(req, status, "application/json", body, n);
    /* pg_httpd_reply_body does not report the answer: on_answer here. */
    on_answer(req, status, text, req->peer, lp);
}

/* Sends the answer: 204 empty, else a one-line text/plain reason (a Push
 * API error in Connect's form), with @rx's response_headers. */
void pg_rx_reply(struct rx_loop *lp, struct rx *rx, enum rx_route route,
                 struct pg_httpd_req *req, int code, const char *text)
{
    const struct rx_server_cfg *s = &rx->cfg.server;

    for (size_t i = 0; i < s->response_headers.n; i++) {
        evhttp_add_header(req->out, s->response_headers.keys[i], s->response_headers.values[i]);
    }
    if (route == RX_ROUTE_PUSH && code >= 400 && code != 405 && code != 415) {
        reply_connect_error(lp, req, code, text);
        return;
    }
    pg_httpd_reply(req, code, text ? text : "");
}

void pg_rx_reply_body(struct rx_loop *lp, struct rx *rx, struct pg_httpd_req *req, int code,
                      const char *ctype, const void *body, size_t len)
{
    const struct rx_server_cfg *s = &rx->cfg.server;

    for (size_t i = 0; i < s->response_headers.n; i++) {
        evhttp_add_header(req->out, s->response_headers.keys[i], s->response_headers.values[i]);
    }
    pg_httpd_reply_body(req, code, ctype, body, len);
    on_answer(req, code, NULL, req->peer, lp);
}

void pg_rx_fail(struct rx_loop *lp, struct rx *rx, enum rx_route route,
                struct pg_httpd_req *req, enum pg_err err, const struct pg_status *st)
{
    int code = pg_rxh_http_status(err); /* never below 400 */
    const char *msg = pg_status_text(st);

    if (code == 503 || code == 429) {
        evhttp_add_header(req->out, "Retry-After", "1");
    }
    pg_rx_reply(lp, rx, route, req, code, msg);
}

void pg_rx_job_done(struct rx_job *job, enum pg_err err, const struct pg_status *st)
{
    if (err == PG_ERR_OK) {
        pg_rx_reply(job->loop, job->rx, job->route, job->req, 204, NULL);
    } else {
        pg_rx_fail(job->loop, job->rx, job->route, job->req, err, st);
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

/* Pyroscope's tenant header (X-Scope-OrgID, as Alloy forwards it) goes
 * into the request metadata even without include_metadata: transform and
 * the exporters' headers_setter read it there. Its absence is no error. */
static void tenant_metadata(struct pg_arena *a, const struct evkeyvalq *in, struct pg_metadata *md)
{
    const char *org = pg_http_find_header(in, "X-Scope-OrgID");
    struct pg_metadata_entry *e;

    if (org == NULL || (e = pg_arena_alloc(a, sizeof(*e))) == NULL) {
        return;
    }
    e->key = "X-Scope-OrgID";
    e->value = pg_arena_strdup(a, org);
    if (e->value != NULL) {
        md->entries = e;
        md->n = 1;
    }
}

/* What a request costs while it is decoded and translated, measured as the bytes the
 * arenas and pool blocks hold at its peak (core/membudget.h; bench/goodput.sh prints
 * estimate against peak): the body, then ADMIT_RAW_FACTOR times the raw pprof (inflated
 * bytes, the translator's tables, the OTLP message and its batch). Before the body is
 * read the raw size is a guess, ADMIT_GZIP_RATIO times the Content-Length (pprof gzips
 * 3-5x), capped at the per-layer limit; once it is in, a gzip's ISIZE says it. A sample-
 * heavy profile costs more per raw byte than this: its charges grow the reservation as
 * it works. Capped at the soft limit so a lone request always fits an idle gateway. */
#define ADMIT_RAW_FACTOR 3
#define ADMIT_GZIP_RATIO 4
static size_t cost_estimate(const struct rx *rx, uint64_t len, uint64_t raw)
{
    uint64_t layer = rx->topts.limits.max_inflated_bytes;
    uint64_t est = len + ADMIT_RAW_FACTOR * (raw < layer ? raw : layer);
    uint64_t soft = pg_memlimit_soft_limit();

    if (soft > 0 && est > soft) {
        est = soft;
    }
    return (size_t)est;
}

static size_t admission_estimate(const struct rx *rx, uint64_t len)
{
    return cost_estimate(rx, len, len * ADMIT_GZIP_RATIO);
}

/* The same from the body itself: a gzip says its inflated size in its last four bytes
 * (a lie or a nested layer only moves what the charges correct later). */
static size_t body_estimate(const struct rx *rx, const uint8_t *body, size_t len)
{
    uint64_t raw = len * ADMIT_GZIP_RATIO;

    if (body != NULL && len >= 18 && pg_is_gzip(body, len)) {
        raw = (uint64_t)body[len - 4] | (uint64_t)body[len - 3] << 8 |
              (uint64_t)body[len - 2] << 16 | (uint64_t)body[len - 1] << 24;
    } else if (body != NULL && len > 0 && (body[0] == '{' || body[0] == '[')) {
        /* JSON (Pyroscope): json-c's tree is on the heap, uncharged, and costs up to
         * ~25x the text (core/json_cost.h): what the estimate was before charging */
        raw = len * 2 * ADMIT_GZIP_RATIO;
    } else if (body != NULL && len > 0 && body[0] != 0x1f && body[0] != 0x28 &&
               body[0] != 0x78) {
        raw = len; /* not gzip, zstd or zlib: plain protobuf */
    }
    return cost_estimate(rx, len, raw);
}

/* Loop thread: checks, copies what the batch needs from the request, then
 * starts the job (inline or on a worker) on the body where the server read
 * it (it stays until the answer, which comes after the job), or, for a body
 * larger than the server's pooled buffer, on a copy in the job's scratch
 * arena (freed once the pprof is translated). Owns
 * @admitted bytes of the memory budget (released when the job ends). */
static void handle_push(struct rx_loop *lp, struct pg_httpd_req *req, size_t admitted)
{
    struct rx *rx = req->user != NULL ? req->user : lp->rx;
    struct evkeyvalq *in = req->in;
    enum rx_route route = RX_ROUTE_PPROF;
    const size_t max = (size_t)rx->cfg.server.max_request_body_size;
    size_t len = req->body_len;
    struct rx_job *job;
    enum pg_err err;

    job = pg_rx_job_new(lp);
    if (job == NULL) {
        struct pg_status st;

        pg_status_set(&st, PG_ERR_NOMEM, "no memory for a %zu-byte request", len);
        (void)pg_rx_route(lp->rx, req->path, &route);
        pg_rx_fail(lp, rx, route, req, PG_ERR_NOMEM, &st);
        pg_memlimit_release(admitted);
        return;
    }
    job->req = req;
    job->loop = lp;
    job->rx = rx;
    if (pg_rx_route(lp->rx, req->path, &job->route) == NULL) {
        job->route = RX_ROUTE_PPROF; /* on_head routed it: cannot happen */
    }
    pg_membudget_init(&job->budget, admitted);
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
    /* The body is in: a gzip's ISIZE tells what it inflates to, a better estimate than
     * the Content-Length's guess (in both directions), before any work is spent on it. */
    if (!pg_membudget_reserve(&job->budget, body_estimate(rx, (const uint8_t *)req->body, len),
                              &job->st)) {
        job->err = job->st.code;
        goto finish;
    }
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
        struct pg_membudget *prev = pg_membudget_enter(&job->budget);
        uint8_t *copy = pg_arena_alloc(job->scratch, len);

        pg_membudget_leave(prev); /* not across drop_body: the server's buffer is not ours */
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
        } else if (rx->flavor == RX_FLAVOR_PYROSCOPE) {
            tenant_metadata(job->arena, in, &job->md);
        }
        if (job->route != RX_ROUTE_PPROF) {
            const char *q = strchr(req->target, '?');
            const char *ct = pg_http_find_header(in, "Content-Type");

            job->query = pg_arena_strdup(job->arena, q != NULL ? q + 1 : "");
            job->ctype = ct != NULL ? pg_arena_strdup(job->arena, ct) : NULL;
            job->connect_json = job->route == RX_ROUTE_PUSH && ct != NULL &&
                                strncasecmp(ct, "application/json", 16) == 0;
            if (job->query == NULL || (ct != NULL && job->ctype == NULL)) {
                job->err = pg_status_set(&job->st, PG_ERR_NOMEM, "no memory for a request");
                goto finish;
            }
        }
    }
    pg_rx_job_start(lp, job);
    return;
finish:
    pg_rx_job_finish(lp, job, false);
}

static bool admit(struct rx_loop *lp, struct rx *rx, enum rx_route route,
                  struct pg_httpd_req *req, size_t bytes)
{
    struct pg_status mst;

    if (!pg_memlimit_admit(bytes, &mst)) {
        evhttp_add_header(req->out, "Connection", "close");
        pg_rx_fail(lp, rx, route, req, mst.code, &mst);
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
    struct rx *own = lp->rx, *rx;
    enum rx_route route = RX_ROUTE_PPROF;
    struct pg_http_codings codings;
    struct pg_status st;
    char msg[160];
    enum pg_err err;

    if (strcmp(req->path, "/") == 0 && strcmp(req->method, "GET") == 0) {
        /* What this port is for (wait loops and curious operators poll /);
         * no credentials needed: it names the endpoints and nothing else. */
        char routes[320], text[800];

        pg_rx_routes_text(own, routes, sizeof(routes));
        snprintf(text, sizeof(text),
                 "pprofgate push receiver\n%s\n"
                 "POST " PPROF_PATH ": a pprof profile (plain or gzip'd), 204 when accepted; "
                 "/ingest and " PYRO_PUSH_PATH ": Pyroscope SDKs and agents\n"
                 "OTLP goes to the otlp receiver (:4317 gRPC, :4318 /v1development/profiles)\n",
                 routes);
        pg_rx_reply(lp, own, RX_ROUTE_PPROF, req, 200, text);
        return false;
    }
    rx = pg_rx_route(own, req->path, &route);
    if (rx == NULL) {
        pg_rx_reply(lp, own, RX_ROUTE_PPROF, req, 404, "404 page not found");
        return false;
    }
    req->user = rx; /* the route's receiver, for on_request and on_answer */
    if (rx != own && __atomic_load_n(&rx->draining, __ATOMIC_ACQUIRE)) { /* joiner stopped */
        evhttp_add_header(req->out, "Retry-After", "1");
        pg_rx_reply(lp, rx, route, req, 503, "shutting down; retry later");
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
            pg_rx_reply(lp, rx, route, req, 400, "more than one Authorization header");
            return false;
        }

        /* One lock for every loop: the per-peer budget is global (the
         * listener's, whichever route), and pg_auth reloads its credential
         * files when they change. */
        bool blocked, ok = false;

        pthread_mutex_lock(&own->auth_mu);
        blocked = pg_peer_ratelimit_blocked(own->auth_rl, key, now);
        if (!blocked) {
            ok = pg_auth_check(rx->auth, evhttp_find_header(req->in, "Authorization"), &st);
            if (!ok) {
                pg_peer_ratelimit_hit(own->auth_rl, key, now);
            }
        }
        pthread_mutex_unlock(&own->auth_mu);
        if (blocked) {
            evhttp_add_header(req->out, "Retry-After", "1");
            pg_rx_reply(lp, rx, route, req, 429,
                        "too many failed authentication attempts; retry later");
            return false;
        }
        if (!ok) {
            evhttp_add_header(req->out, "WWW-Authenticate", pg_auth_challenge(rx->auth));
            pg_rx_reply(lp, rx, route, req, 401, pg_status_text(&st));
            return false;
        }
    }
    if (strcmp(req->method, "POST") != 0) {
        evhttp_add_header(req->out, "Allow", "POST");
        snprintf(msg, sizeof(msg), "method %.20s not allowed, supported: [POST]", req->method);
        pg_rx_reply(lp, rx, route, req, 405, msg);
        return false;
    }
    if (rx->check_head != NULL && (err = rx->check_head(rx, route, req, &st)) != PG_ERR_OK) {
        pg_rx_fail(lp, rx, route, req, err, &st);
        return false;
    }
    err = request_codings(rx, req->in, &codings, &st);
    if (err != PG_ERR_OK) {
        pg_rx_fail(lp, rx, route, req, err, &st);
        return false;
    }
    if (!req->chunked && req->content_length != PG_HTTP_NO_LENGTH &&
        req->content_length > rx->cfg.server.max_request_body_size) {
        snprintf(msg, sizeof(msg), "request body of %llu bytes exceeds max_request_body_size "
                 "(%llu bytes)", (unsigned long long)req->content_length,
                 (unsigned long long)rx->cfg.server.max_request_body_size);
        pg_rx_reply(lp, rx, route, req, 413, msg);
        return false;
    }
    /* Memory before the body: from Content-Length now, or step by step as
     * chunks arrive (on_body). */
    if (!admit(lp, rx, route, req,
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
    struct rx *rx = req->user != NULL ? req->user : lp->rx;
    enum rx_route route = RX_ROUTE_PPROF;

    (void)pg_rx_route(lp->rx, req->path, &route);
    while (req->chunked && admission_estimate(rx, received) > req->reserved) {
        size_t more = admission_estimate(rx, received + CHUNKED_RESERVE_STEP) - req->reserved;

        if (more == 0 || !admit(lp, rx, route, req, more)) {
            return more == 0;
        }
    }
    return true;
}

static void on_request(struct pg_httpd_req *req, void *arg)
{
    size_t admitted = req->reserved;

    req->reserved = 0; /* the job owns the admission from here */
    handle_push(arg, req, admitted); /* releases it when the request ends */
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
