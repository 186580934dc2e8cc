/* SPDX-License-Identifier: Apache-2.0
 * The otlp receiver's OTLP/HTTP side on pprofgate's HTTP/1.1 server, in
 * the Collector's order: CORS preflight, authentication, route, method
 * (405 + Allow: POST), Content-Type (application/x-protobuf or
 * application/json, parameters ignored; else 415), Content-Encoding (the
 * codec table's rows in compression_algorithms), size (413) and memory
 * admission, all on the head before any body byte is read; then the body
 * is decoded, validated and forwarded (otlp_ingest.c) and answered 200 with
 * an ExportProfilesServiceResponse, or with a google.rpc.Status, both in
 * the request's encoding (429/503 carry Retry-After). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/membudget.h"
#include "core/memlimit.h"
#include "http/http_parse.h"
#include "http/http_request.h"
#include "receiver/otlp_internal.h"

#define PB_CTYPE "application/x-protobuf"
#define JSON_CTYPE "application/json"
/* Chunked bodies reserve memory in steps of this many body bytes. */
#define CHUNKED_RESERVE_STEP (256 * 1024)

enum body_enc { ENC_NONE = 0, ENC_PB, ENC_JSON };

/* The media type of a Content-Type value, parameters and case ignored. */
static enum body_enc enc_of(const char *ctype)
{
    size_t n;

    if (ctype == NULL) {
        return ENC_NONE;
    }
    while (*ctype == ' ' || *ctype == '\t') {
        ctype++;
    }
    n = strcspn(ctype, "; \t");
    if (n == strlen(PB_CTYPE) && strncasecmp(ctype, PB_CTYPE, n) == 0) {
        return ENC_PB;
    }
    if (n == strlen(JSON_CTYPE) && strncasecmp(ctype, JSON_CTYPE, n) == 0) {
        return ENC_JSON;
    }
    return ENC_NONE;
}

static void add_response_headers(struct otlp_rx *rx, struct pg_httpd_req *req)
{
    const struct pg_strmap *h = &rx->cfg.protocols.http.response_headers;

    for (size_t i = 0; i < h->n; i++) {
        evhttp_add_header(req->out, h->keys[i], h->values[i]);
    }
}

/* A plain-text answer (404, 405, 415: what the Collector's mux writes);
 * pg_httpd_reply counts it through on_answer. */
static void reply_text(struct otlp_rx *rx, struct pg_httpd_req *req, int code, const char *text)
{
    add_response_headers(rx, req);
    pg_httpd_reply(req, code, text);
}

/* @s as the inside of a JSON string into @out (capacity @cap, NUL-terminated). */
static void json_escape(char *out, size_t cap, const char *s)
{
    size_t o = 0;

    for (; *s != '\0' && o + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* A google.rpc.Status {code, message} in @enc, with Retry-After when the
 * answer is backpressure. */
static void reply_status(struct otlp_loop *lp, struct pg_httpd_req *req, enum body_enc enc,
                         int http_code, const char *msg, int retry_after_s)
{
    struct otlp_rx *rx = lp->rx;
    int grpc_code = pg_rxh_grpc_code_for_http(http_code);

    /* pg_httpd_reply_body does not report to on_answer: counted here. */
    otlp_count_answer(lp, OTLP_HTTP, http_code, true, http_code >= 500, msg, req->peer);
    add_response_headers(rx, req);
    if ((http_code == 429 || http_code == 503) && retry_after_s >= 0) {
        char ra[16];

        snprintf(ra, sizeof(ra), "%d", retry_after_s);
        evhttp_add_header(req->out, "Retry-After", ra);
    }
    if (enc == ENC_PB) {
        uint8_t buf[PG_STATUS_MSG_MAX + 32];
        size_t n = 0, mlen = strlen(msg);

        if (mlen > PG_STATUS_MSG_MAX) {
            mlen = PG_STATUS_MSG_MAX;
        }
        if (grpc_code != 0) {
            buf[n++] = 0x08; /* code = 1, varint */
            n += put_varint(buf + n, (uint64_t)grpc_code);
        }
        if (mlen > 0) {
            buf[n++] = 0x12; /* message = 2, bytes */
            n += put_varint(buf + n, mlen);
            memcpy(buf + n, msg, mlen);
            n += mlen;
        }
        pg_httpd_reply_body(req, http_code, PB_CTYPE, buf, n);
        return;
    }
    {
        /* JSON also when the request named no known type (as the Collector's
         * error handler falls back to). */
        char esc[PG_STATUS_MSG_MAX * 6 + 8];
        char body[sizeof(esc) + 64];
        int n;

        json_escape(esc, sizeof(esc), msg);
        n = snprintf(body, sizeof(body), "{\"code\":%d,\"message\":\"%s\"}", grpc_code, esc);
        pg_httpd_reply_body(req, http_code, JSON_CTYPE, body, (size_t)n);
    }
}

static void reply_err(struct otlp_loop *lp, struct pg_httpd_req *req, enum body_enc enc,
                      enum pg_err err, const struct pg_status *st)
{
    reply_status(lp, req, enc, pg_rxh_http_status(err), pg_status_text(st),
                 pg_rxh_retry_after_s(err));
}

/* ---- CORS, as confighttp's rs/cors handler ------------------------------ */

/* @origin against allowed_origins ("*", exact, or one '*' wildcard). */
static bool cors_origin_ok(const struct otlp_cors_cfg *c, const char *origin, bool *all)
{
    size_t olen = strlen(origin);

    *all = false;
    for (size_t i = 0; i < c->allowed_origins.n; i++) {
        const char *a = c->allowed_origins.v[i];
        const char *star = strchr(a, '*');

        if (strcmp(a, "*") == 0) {
            *all = true;
            return true;
        }
        if (star == NULL) {
            if (strcasecmp(a, origin) == 0) {
                return true;
            }
            continue;
        }
        {
            size_t pre = (size_t)(star - a), suf = strlen(star + 1);

            if (olen >= pre + suf && strncasecmp(origin, a, pre) == 0 &&
                strcasecmp(origin + olen - suf, star + 1) == 0) {
                return true;
            }
        }
    }
    return false;
}

/* Every header named in @list (comma-separated) is allowed: the defaults
 * (accept, content-type, x-requested-with) or allowed_headers ("*" = any). */
static bool cors_headers_ok(const struct otlp_cors_cfg *c, const char *list)
{
    static const char *const defaults[] = {"accept", "content-type", "x-requested-with"};
    const char *p = list;

    for (size_t i = 0; i < c->allowed_headers.n; i++) {
        if (strcmp(c->allowed_headers.v[i], "*") == 0) {
            return true;
        }
    }
    while (*p != '\0') {
        size_t n;
        bool ok = false;

        p += strspn(p, " \t,");
        n = strcspn(p, " \t,");
        if (n == 0) {
            break;
        }
        if (c->allowed_headers.n == 0) {
            for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]) && !ok; i++) {
                ok = strlen(defaults[i]) == n && strncasecmp(defaults[i], p, n) == 0;
            }
        }
        for (size_t i = 0; i < c->allowed_headers.n && !ok; i++) {
            ok = strlen(c->allowed_headers.v[i]) == n &&
                 strncasecmp(c->allowed_headers.v[i], p, n) == 0;
        }
        if (!ok) {
            return false;
        }
        p += n;
    }
    return true;
}

static bool cors_on(const struct otlp_rx *rx)
{
    return rx->cfg.protocols.http.has_cors && rx->cfg.protocols.http.cors.allowed_origins.n > 0;
}

/* A preflight (OPTIONS with Access-Control-Request-Method): answered 204
 * here, before authentication, with the allow headers when the origin,
 * method and headers pass. */
static void cors_preflight(struct otlp_rx *rx, struct pg_httpd_req *req)
{
    const struct otlp_cors_cfg *c = &rx->cfg.protocols.http.cors;
    const char *origin = evhttp_find_header(req->in, "Origin");
    const char *method = evhttp_find_header(req->in, "Access-Control-Request-Method");
    const char *hdrs = evhttp_find_header(req->in, "Access-Control-Request-Headers");
    bool all;

    evhttp_add_header(req->out, "Vary",
                      "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
    if (origin != NULL && origin[0] != '\0' && cors_origin_ok(c, origin, &all) &&
        (strcmp(method, "POST") == 0 || strcmp(method, "GET") == 0 ||
         strcmp(method, "HEAD") == 0) &&
        (hdrs == NULL || cors_headers_ok(c, hdrs))) {
        evhttp_add_header(req->out, "Access-Control-Allow-Origin", all ? "*" : origin);
        evhttp_add_header(req->out, "Access-Control-Allow-Methods", method);
        if (hdrs != NULL && hdrs[0] != '\0') {
            evhttp_add_header(req->out, "Access-Control-Allow-Headers", hdrs);
        }
        evhttp_add_header(req->out, "Access-Control-Allow-Credentials", "true");
        if (c->max_age > 0) {
            char age[24];

            snprintf(age, sizeof(age), "%lld", (long long)c->max_age);
            evhttp_add_header(req->out, "Access-Control-Max-Age", age);
        }
    }
    add_response_headers(rx, req);
    pg_httpd_reply(req, 204, NULL);
}

/* An actual cross-origin request: the allow headers go on its answer. */
static void cors_actual(struct otlp_rx *rx, struct pg_httpd_req *req)
{
    const struct otlp_cors_cfg *c = &rx->cfg.protocols.http.cors;
    const char *origin = evhttp_find_header(req->in, "Origin");
    bool all;

    evhttp_add_header(req->out, "Vary", "Origin");
    if (origin == NULL || origin[0] == '\0' || !cors_origin_ok(c, origin, &all) ||
        strcmp(req->method, "POST") != 0) {
        return;
    }
    evhttp_add_header(req->out, "Access-Control-Allow-Origin", all ? "*" : origin);
    evhttp_add_header(req->out, "Access-Control-Allow-Credentials", "true");
    if (c->exposed_headers.n > 0) {
        char list[512];
        size_t o = 0;

        list[0] = '\0';
        for (size_t i = 0; i < c->exposed_headers.n && o < sizeof(list); i++) {
            o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
                                  c->exposed_headers.v[i]);
        }
        evhttp_add_header(req->out, "Access-Control-Expose-Headers", list);
    }
}

/* ---- the request ------------------------------------------------------- */

static enum pg_err request_codings(struct otlp_rx *rx, const struct evkeyvalq *in,
                                   struct pg_http_codings *c, struct pg_status *st)
{
    const struct evkeyval *kv;

    memset(c, 0, sizeof(*c));
    TAILQ_FOREACH(kv, in, next)
    {
        if (strcasecmp(kv->key, "Content-Encoding") == 0) {
            enum pg_err err =
                pg_http_parse_content_encoding(kv->value, rx->side[OTLP_HTTP].allowed, c, st);

            if (err != PG_ERR_OK) {
                return err;
            }
        }
    }
    return PG_ERR_OK;
}

static bool admit(struct otlp_loop *lp, struct pg_httpd_req *req, enum body_enc enc, size_t bytes)
{
    struct pg_status mst;

    if (!pg_memlimit_admit(bytes, &mst)) {
        evhttp_add_header(req->out, "Connection", "close");
        reply_err(lp, req, enc, mst.code, &mst);
        return false;
    }
    req->reserved += bytes;
    return true;
}

static bool on_head(struct pg_httpd_req *req, void *arg)
{
    struct otlp_loop *lp = arg;
    struct otlp_rx *rx = lp->rx;
    const struct otlp_http_cfg *h = &rx->cfg.protocols.http;
    enum body_enc enc = enc_of(evhttp_find_header(req->in, "Content-Type"));
    struct pg_http_codings codings;
    struct pg_status st;
    char msg[200];
    enum pg_err err;

    if (cors_on(rx)) {
        if (strcmp(req->method, "OPTIONS") == 0 &&
            evhttp_find_header(req->in, "Access-Control-Request-Method") != NULL) {
            cors_preflight(rx, req);
            return false;
        }
        cors_actual(rx, req);
    }
    if (rx->side[OTLP_HTTP].auth != NULL) {
        const struct evkeyval *kv;
        int n_auth = 0, code;

        TAILQ_FOREACH(kv, req->in, next)
        {
            n_auth += strcasecmp(kv->key, "Authorization") == 0;
        }
        if (n_auth > 1) {
            reply_status(lp, req, enc, 400, "more than one Authorization header", -1);
            return false;
        }
        code = otlp_auth_check(rx, OTLP_HTTP, req->peer_key,
                               evhttp_find_header(req->in, "Authorization"), &st);
        if (code == 401) {
            evhttp_add_header(req->out, "WWW-Authenticate",
                              pg_auth_challenge(rx->side[OTLP_HTTP].auth));
        }
        if (code != 0) {
            reply_status(lp, req, enc, code, pg_status_text(&st), 1);
            return false;
        }
    }
    if (strcmp(req->path, h->profiles_url_path) != 0) {
        reply_text(rx, req, 404, "404 page not found");
        return false;
    }
    if (strcmp(req->method, "POST") != 0) {
        evhttp_add_header(req->out, "Allow", "POST");
        reply_text(rx, req, 405, "405 method not allowed, supported: [POST]");
        return false;
    }
    if (enc == ENC_NONE) {
        reply_text(rx, req, 415,
                   "415 unsupported media type, supported: [" JSON_CTYPE ", " PB_CTYPE "]");
        return false;
    }
    err = request_codings(rx, req->in, &codings, &st);
    if (err != PG_ERR_OK) {
        reply_err(lp, req, enc, err, &st);
        return false;
    }
    if (!req->chunked && req->content_length != PG_HTTP_NO_LENGTH &&
        req->content_length > h->max_request_body_size) {
        snprintf(msg, sizeof(msg), "request body of %llu bytes exceeds max_request_body_size "
                 "(%llu bytes)", (unsigned long long)req->content_length,
                 (unsigned long long)h->max_request_body_size);
        reply_status(lp, req, enc, 413, msg, -1);
        return false;
    }
    /* Memory before the body: from Content-Length now, or step by step as
     * chunks arrive (on_body). */
    return admit(lp, req, enc,
                 otlp_admission_estimate(rx,
                                         req->chunked ? CHUNKED_RESERVE_STEP
                                         : req->content_length == PG_HTTP_NO_LENGTH
                                             ? 0
                                             : req->content_length,
                                         codings.n > 0, rx->side[OTLP_HTTP].max_msg));
}

static bool on_body(struct pg_httpd_req *req, uint64_t received, void *arg)
{
    struct otlp_loop *lp = arg;
    struct otlp_rx *rx = lp->rx;
    size_t max = rx->side[OTLP_HTTP].max_msg;

    while (req->chunked && otlp_admission_estimate(rx, received, true, max) > req->reserved) {
        size_t more = otlp_admission_estimate(rx, received + CHUNKED_RESERVE_STEP, true, max) -
                      req->reserved;

        if (more == 0 ||
            !admit(lp, req, enc_of(evhttp_find_header(req->in, "Content-Type")), more)) {
            return more == 0;
        }
    }
    return true;
}

/* The 200 of a request whose batch the pipeline took. */
static void reply_ok(struct otlp_loop *lp, struct pg_httpd_req *req, enum body_enc enc)
{
    otlp_count_answer(lp, OTLP_HTTP, 200, false, false, NULL, req->peer);
    add_response_headers(lp->rx, req);
    if (enc == ENC_JSON) {
        pg_httpd_reply_body(req, 200, JSON_CTYPE, "{}", 2);
    } else {
        pg_httpd_reply_body(req, 200, PB_CTYPE, "", 0); /* an empty response message */
    }
}

/* A held request's outcome (otlp_held.c); @st NULL: its client left, and
 * the reply (not counted) only lets the server end the request. */
static void held_done(struct otlp_held *h, enum pg_err err, const struct pg_status *st)
{
    struct pg_httpd_req *req = h->req;
    enum body_enc enc = enc_of(evhttp_find_header(req->in, "Content-Type"));

    req->user = NULL; /* before the reply: on_done must not forget @h again */
    if (st == NULL) {
        pg_httpd_reply_body(req, 503, NULL, NULL, 0);
    } else if (err != PG_ERR_OK) {
        reply_err(h->lp, req, enc, err, st);
    } else {
        reply_ok(h->lp, req, enc);
    }
}

/* The server does not read while a request waits: the socket's EOF says
 * its client left. */
static bool held_gone(struct otlp_held *h)
{
    return pg_httpd_client_gone(h->req);
}

/* The request is decoded: the server's copy of its body (and for a coded body
 * its decoded layers' source) goes now, not at the answer, so it never waits
 * out the pipeline together with the batch. */
static void drop_body(void *arg)
{
    /* the server's buffer was never charged to the request's budget */
    struct pg_membudget *prev = pg_membudget_enter(NULL);

    pg_httpd_drop_body(arg);
    pg_membudget_leave(prev);
}

/* The body is in: decode its Content-Encoding, then ingest, then answer.
 * Runs on the loop (inline): the scratch arena (decoded layers, metadata)
 * dies here; the batch arena goes to the pipeline. While an exporter with
 * block_on_overflow is full the request is held unanswered (otlp_held.c),
 * up to write_timeout. */
static void on_request(struct pg_httpd_req *req, void *arg)
{
    struct otlp_loop *lp = arg;
    struct otlp_rx *rx = lp->rx;
    struct otlp_side *sd = &rx->side[OTLP_HTTP];
    enum body_enc enc = enc_of(evhttp_find_header(req->in, "Content-Type"));
    struct pg_http_codings codings;
    struct pg_arena *scratch = NULL;
    struct pg_metadata md = {0};
    struct otlp_held *held = NULL;
    const uint8_t *body = (const uint8_t *)req->body;
    size_t body_len = req->body_len;
    struct pg_membudget budget, *prev;
    struct pg_status st;
    enum pg_err err;

    /* The admission's estimate, corrected as decoding grows (core/membudget.h). */
    pg_membudget_init(&budget, req->reserved);
    req->reserved = 0;
    prev = pg_membudget_enter(&budget);
    pg_status_clear(&st);
    err = request_codings(rx, req->in, &codings, &st);
    if (err == PG_ERR_OK && body_len > sd->max_msg) {
        err = pg_status_set(&st, PG_ERR_LIMIT, "request body of %zu bytes exceeds "
                            "max_request_body_size (%zu bytes)", body_len, sd->max_msg);
    }
    if (err == PG_ERR_OK && (codings.n > 0 || sd->include_metadata)) {
        scratch = pg_arena_create(sd->max_msg * (PG_HTTP_MAX_CODINGS + 1) + (1u << 20));
        if (scratch == NULL) {
            err = pg_status_set(&st, PG_ERR_NOMEM, "no memory for a %zu-byte request", body_len);
        }
    }
    if (err == PG_ERR_OK && codings.n > 0) {
        err = pg_http_decode_body(scratch, (const uint8_t *)req->body, req->body_len, &codings,
                                  sd->max_msg, &body, &body_len, NULL, &st);
    }
    if (err == PG_ERR_OK && sd->include_metadata) {
        err = pg_http_metadata_from_headers(scratch, req->in, NULL, &md, &st);
    }
    if (err == PG_ERR_OK) {
        err = otlp_ingest(lp, OTLP_HTTP, body, body_len, enc == ENC_JSON, req->body_len,
                          sd->include_metadata ? &md : NULL, req->peer_hostport, &held,
                          req->body_len > PG_HTTPD_POOLED_BODY ? drop_body : NULL, req, &st);
    }
    pg_arena_destroy(scratch);
    err = pg_membudget_leave_work(&budget, prev, err, &st, rx->log_name);
    /* The estimate's work is done (the batch, if any, is charged on its
     * own until the exporters drop it): give it back before answering. */
    pg_membudget_end(&budget);
    if (held != NULL) {
        /* The batch is all the request still needs: its body goes now. */
        if (req->body != NULL) {
            pg_httpd_drop_body(req);
        }
        held->req = req;
        held->done = held_done;
        held->gone = held_gone;
        if (rx->cfg.protocols.http.write_timeout > 0) {
            held->until = pg_mono_s() + (double)rx->cfg.protocols.http.write_timeout / 1e9;
        }
        req->user = held;
        otlp_hold(held);
        return;
    }
    if (err != PG_ERR_OK) {
        reply_err(lp, req, enc, err, &st);
        return;
    }
    reply_ok(lp, req, enc);
}

static void on_answer(const struct pg_httpd_req *r, int code, const char *reason, const char *peer,
                      void *arg)
{
    (void)r;
    otlp_count_answer(arg, OTLP_HTTP, code, code >= 400, code >= 500, reason, peer);
}

static void on_conn_event(int ev, const char *peer, void *arg)
{
    struct otlp_rx *rx = ((struct otlp_loop *)arg)->rx;
    unsigned long suppressed = 0;

    if (ev >= 0 && ev <= PG_HTTPD_ACCEPT_PAUSED &&
        pg_rxh_reason_log_ok(&rx->reasons, 2000 + ev, pg_httpd_event_names[ev], &suppressed)) {
        pg_log_info(rx->log_name, "http: %s %s (%s" PG_LOG_SUPPRESSED_FMT ")",
                    ev == PG_HTTPD_ACCEPT_PAUSED ? "accept paused:" : "connection refused from",
                    peer ? peer : "?", pg_httpd_event_names[ev], PG_LOG_SUPPRESSED(suppressed));
    }
}

/* The request is over: what it still holds of the memory budget goes back
 * (the batch, if any, is charged on its own). */
static void on_done(struct pg_httpd_req *req, void *arg)
{
    (void)arg;
    if (req->user != NULL) {
        otlp_held_forget(req->user); /* the connection ended while held */
        req->user = NULL;
    }
    if (req->reserved > 0) {
        pg_memlimit_release(req->reserved);
        req->reserved = 0;
    }
}

const struct pg_httpd_ops otlp_httpd_ops = {
    .on_head = on_head,
    .on_body = on_body,
    .on_request = on_request,
    .on_answer = on_answer,
    .on_conn_event = on_conn_event,
    .on_done = on_done,
    .on_conn_open = NULL,
};
