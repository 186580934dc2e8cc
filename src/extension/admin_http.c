/* SPDX-License-Identifier: Apache-2.0
 * The admin extensions' shared lifecycle, listener (the receiver's HTTP/1.1
 * server: absolute deadlines, a connection cap at accept), authentication
 * gate on the headers and reply helpers. They bind loopback unless the operator writes
 * another host, because what they serve (heap profiles, symbols, metrics) is
 * about the gateway itself; with `auth:` they also require credentials. */
#include "extension/admin_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <strings.h>
#include <time.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "http/conn_limits.h"
#include "http/http_parse.h"
#include "http/http_server.h"
#include "http/listener.h"

bool pg_admin_split_endpoint(const char *ep, char *host, size_t host_size, unsigned *port)
{
    if (!pg_hostport_split(ep, host, host_size, port)) {
        return false;
    }
    if (host[0] == '\0') {
        snprintf(host, host_size, "0.0.0.0");
    }
    return true;
}

void pg_admin_config_path(const struct pg_component_ctx *ctx, const struct pg_admin_spec *spec,
                          char *buf, size_t size)
{
    if (spec->config_path != NULL) {
        snprintf(buf, size, "%s", spec->config_path);
    } else {
        snprintf(buf, size, "extensions::%s", ctx->id);
    }
}

enum pg_err pg_admin_ext_create(const struct pg_component_ctx *ctx,
                                const struct pg_admin_spec *spec, const struct pg_field *fields,
                                size_t size, void **state)
{
    struct pg_admin_http *h = calloc(1, size);
    if (h == NULL) {
        return PG_ERR_NOMEM;
    }
    h->spec = spec;
    h->host = ctx->host;
    h->log_name = ctx->log_name;
    char path[256];
    pg_admin_config_path(ctx, spec, path, sizeof(path));
    size_t problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, fields, h, path);
    char host[256];
    unsigned port;
    if (problems == 0 && !pg_admin_split_endpoint(h->cfg.endpoint, host, sizeof(host), &port)) {
        pg_diag_add(ctx->diag, ctx->config ? pg_cfg_get(ctx->config, "endpoint") : NULL, path,
                    "%s \"%s\" is not host:port (e.g. %s)", spec->endpoint_word,
                    h->cfg.endpoint ? h->cfg.endpoint : "", spec->endpoint_example);
        problems++;
    }
    if (problems == 0 && h->cfg.has_auth) {
        /* Loaded now, so `pprofgate validate` reports a missing token file. */
        struct pg_status ast = {0};
        h->cfg.auth.log_name = ctx->log_name;
        if (pg_auth_new(&h->cfg.auth, &h->auth, &ast) != PG_ERR_OK) {
            pg_diag_add(ctx->diag, ctx->config ? pg_cfg_get(ctx->config, "auth") : NULL, path,
                        "auth: %s", pg_status_text(&ast));
            problems++;
        }
    }
    if (problems > 0) {
        pg_auth_free(h->auth);
        free(h);
        return PG_ERR_CONFIG;
    }
    *state = h;
    return PG_ERR_OK;
}

/* Admin paths, queries and headers are short; anything longer is hostile. */
#define ADMIN_MAX_HEADER_BYTES (16u * 1024)
#define ADMIN_MAX_TARGET (8u * 1024)
#define ADMIN_MAX_HEADERS 64
#define ADMIN_LISTEN_BACKLOG 128
/* Failed credentials per peer: a burst of 10, then one a second (429). */
#define ADMIN_AUTH_FAIL_BURST 10.0
#define ADMIN_AUTH_FAIL_PER_SEC 1.0

static void count_answer(const struct pg_admin_http *h, int code)
{
    char labels[128];
    snprintf(labels, sizeof(labels), "extension=\"%s\",code=\"%d\"", h->spec->metric_label,
             code);
    pg_metric_add(pg_metric_counter("pprofgate_admin_http_requests",
                                    "Requests answered by the admin extensions, by status code.",
                                    labels),
                  1);
}

/* Every request passes here with its headers only: credentials first (when
 * configured), so no route of any admin extension is reachable, and no body
 * byte is read, without them; then the body cap from Content-Length. */
static bool on_admin_head(struct pg_httpd_req *req, void *arg)
{
    struct pg_admin_http *h = arg;
    if (h->auth != NULL) {
        static struct pg_log_ratelimit rl = PG_LOG_RATELIMIT_INIT(1.0, 5.0);
        struct pg_status st = {0};
        double now = pg_mono_s();
        int n_auth = 0;
        const struct evkeyval *kv;
        TAILQ_FOREACH(kv, req->in, next)
        {
            n_auth += strcasecmp(kv->key, "Authorization") == 0;
        }
        if (n_auth > 1) {
            /* Which one counts would differ between a proxy and us. */
            pg_admin_reply_text(h, req, 400, "more than one Authorization header");
            return false;
        }
        if (pg_peer_ratelimit_blocked(h->auth_rl, req->peer_key, now)) {
            evhttp_add_header(req->out, "Retry-After", "1");
            pg_admin_reply_text(h, req, 429, "too many failed authentication attempts; retry later");
            return false;
        }
        if (!pg_auth_check(h->auth, evhttp_find_header(req->in, "Authorization"), &st)) {
            pg_peer_ratelimit_hit(h->auth_rl, req->peer_key, now);
            unsigned long suppressed = 0;
            if (pg_log_ratelimit_ok(&rl, &suppressed)) {
                pg_log_warn(h->log_name, "401 for %.200s from %s: %s" PG_LOG_SUPPRESSED_FMT,
                            req->target, req->peer ? req->peer : "?", pg_status_text(&st),
                            PG_LOG_SUPPRESSED(suppressed));
            }
            evhttp_add_header(req->out, "WWW-Authenticate", pg_auth_challenge(h->auth));
            pg_admin_reply_text(h, req, 401, pg_status_text(&st));
            return false;
        }
    }
    if (!req->chunked && req->content_length != PG_HTTP_NO_LENGTH &&
        req->content_length > h->spec->max_body) {
        pg_admin_reply_text(h, req, 413, "request body too large");
        return false;
    }
    return true;
}

static void on_admin_request(struct pg_httpd_req *req, void *arg)
{
    struct pg_admin_http *h = arg;
    h->spec->on_request(req, h);
}

/* The server's own answers (400, 413 past the cap mid-body, 431, ...) are
 * counted like the extensions' (whose pg_admin_reply goes through
 * pg_httpd_reply_body, which does not call this). */
static void on_admin_answer(const struct pg_httpd_req *req, int code, const char *reason,
                            const char *peer, void *arg)
{
    (void)req;
    (void)peer;
    (void)reason;
    count_answer(arg, code);
}

static void on_admin_conn_event(int event, const char *peer, void *arg)
{
    struct pg_admin_http *h = arg;
    static struct pg_log_ratelimit rl = PG_LOG_RATELIMIT_INIT(1.0, 5.0);
    unsigned long suppressed = 0;
    if (event < 0 || event >= PG_HTTPD_N_EVENTS) {
        return;
    }
    char labels[128];
    snprintf(labels, sizeof(labels), "extension=\"%s\",reason=\"%s\"", h->spec->metric_label,
             pg_httpd_event_names[event]);
    pg_metric_add(pg_metric_counter("pprofgate_admin_http_connections_refused",
                                    "Admin connections refused at accept or closed by a "
                                    "deadline, by reason.",
                                    labels),
                  1);
    if (pg_log_ratelimit_ok(&rl, &suppressed)) {
        pg_log_warn(h->log_name, "connection from %s: %s" PG_LOG_SUPPRESSED_FMT,
                    peer ? peer : "?", pg_httpd_event_names[event], PG_LOG_SUPPRESSED(suppressed));
    }
}

static void on_admin_done(struct pg_httpd_req *req, void *arg)
{
    struct pg_admin_http *h = arg;
    if (h->spec->on_done != NULL) {
        h->spec->on_done(req, h);
    }
}

enum pg_err pg_admin_ext_start(void *state, struct pg_status *st)
{
    struct pg_admin_http *h = state;
    const struct pg_admin_cfg *c = &h->cfg;
    const char *endpoint = c->endpoint;
    char host[256];
    unsigned port;
    if (!pg_admin_split_endpoint(endpoint, host, sizeof(host), &port)) {
        return pg_status_set(st, PG_ERR_CONFIG, "endpoint \"%s\" is not host:port", endpoint);
    }
    static const struct pg_httpd_ops ops = {
        .on_head = on_admin_head,
        .on_body = NULL,
        .on_request = on_admin_request,
        .on_answer = on_admin_answer,
        .on_conn_event = on_admin_conn_event,
        .on_done = on_admin_done,
    };
    struct pg_httpd_limits lim = {
        .read_header_timeout_ns = c->read_header_timeout,
        .read_timeout_ns = c->read_timeout,
        .write_timeout_ns = c->write_timeout,
        .idle_timeout_ns = c->idle_timeout,
        .min_body_rate = 0, /* bodies are 1 MiB at most, read_timeout bounds them */
        .max_body = h->spec->max_body,
        .max_header_bytes = ADMIN_MAX_HEADER_BYTES,
        .max_target = ADMIN_MAX_TARGET,
        .max_headers = ADMIN_MAX_HEADERS,
        .max_connections = (size_t)c->max_connections,
        .max_connections_per_peer = 0, /* loopback scrapers share one address */
        .max_requests_per_connection = 0,
        .keep_alives = true,
    };
    if (h->auth != NULL && h->auth_rl == NULL) {
        h->auth_rl = calloc(1, sizeof(*h->auth_rl));
        if (h->auth_rl == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
        }
        pg_peer_ratelimit_init(h->auth_rl, ADMIN_AUTH_FAIL_PER_SEC, ADMIN_AUTH_FAIL_BURST);
    }
    char why[256];
    int fd = pg_listen(PG_TRANSPORT_TCP, host, port, ADMIN_LISTEN_BACKLOG, why, sizeof(why));
    if (fd < 0) {
        return pg_status_set(st, PG_ERR_IO, "cannot listen on %s: %s", endpoint, why);
    }
    h->httpd = pg_httpd_new(h->host->base, fd, NULL, &lim, &ops, h);
    if (h->httpd == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "cannot create an HTTP server");
    }
    /* Logged with the bound port (endpoint :0 in tests). Worded "serving",
     * not "listening on", so receiver port discovery does not pick it up. */
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char addr[INET6_ADDRSTRLEN] = "?";
    unsigned bound = port;
    if (getsockname(pg_httpd_fd(h->httpd), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &in4->sin_addr, addr, sizeof(addr));
            bound = ntohs(in4->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
            bound = ntohs(in6->sin6_port);
        }
    }
    /* The cap as "max N connections": "N connections at most" is the
     * receiver's line, which tests read. */
    pg_log_info(h->log_name, "serving %s on %s:%u%s (max %zu connections)", h->spec->what, addr,
                bound, h->auth != NULL ? " (auth required)" : "",
                pg_httpd_connection_cap(h->httpd));
    return PG_ERR_OK;
}

/* Stops accepting; with nothing open the server goes now, otherwise open
 * connections (a 503 just written to a held request) finish in the loop
 * until destroy. */
void pg_admin_ext_shutdown(void *state)
{
    struct pg_admin_http *h = state;
    if (h == NULL || h->httpd == NULL) {
        return;
    }
    pg_httpd_stop_accepting(h->httpd);
    pg_httpd_set_draining(h->httpd);
    if (pg_httpd_open_connections(h->httpd) == 0) {
        pg_httpd_free(h->httpd);
        h->httpd = NULL;
    }
}

void pg_admin_ext_destroy(void *state)
{
    struct pg_admin_http *h = state;
    if (h == NULL) {
        return;
    }
    pg_admin_ext_shutdown(h);
    pg_httpd_free(h->httpd); /* ends what is still open (on_done) */
    h->httpd = NULL;
    pg_auth_free(h->auth);
    free(h->auth_rl);
    free(h);
}

void pg_admin_reply(const struct pg_admin_http *h, struct pg_httpd_req *req, int code,
                    const char *ctype, const void *body, size_t len)
{
    evhttp_add_header(req->out, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(req->out, "Cache-Control", "no-store");
    pg_httpd_reply_body(req, code, ctype, body, len);
    count_answer(h, code);
}

void pg_admin_reply_take(const struct pg_admin_http *h, struct pg_httpd_req *req, int code,
                         const char *ctype, char *body, size_t len)
{
    evhttp_add_header(req->out, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(req->out, "Cache-Control", "no-store");
    pg_httpd_reply_take(req, code, ctype, body, len);
    count_answer(h, code);
}

void pg_admin_reply_text(const struct pg_admin_http *h, struct pg_httpd_req *req, int code,
                         const char *text)
{
    size_t n = strlen(text);
    char *line = malloc(n + 2);
    if (line == NULL) {
        pg_admin_reply(h, req, code, "text/plain; charset=utf-8", text, n);
        return;
    }
    memcpy(line, text, n);
    line[n] = '\n';
    pg_admin_reply(h, req, code, "text/plain; charset=utf-8", line, n + 1);
    free(line);
}

bool pg_admin_require_get(const struct pg_admin_http *h, struct pg_httpd_req *req)
{
    if (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0) {
        return true;
    }
    evhttp_add_header(req->out, "Allow", "GET, HEAD");
    pg_admin_reply_text(h, req, 405, "method not allowed: use GET");
    return false;
}

bool pg_admin_request_path(struct pg_httpd_req *req, char *buf, size_t size)
{
    const char *path = req->path;
    if (path == NULL || path[0] == '\0') {
        path = "/";
    }
    size_t n = strlen(path);
    if (n >= size) {
        return false;
    }
    memcpy(buf, path, n + 1);
    return true;
}

const char *pg_admin_request_query(const struct pg_httpd_req *req)
{
    const char *q = req->target != NULL ? strchr(req->target, '?') : NULL;
    if (q == NULL) {
        return NULL;
    }
    q++;
    size_t n = strcspn(q, "#");
    return q[n] == '\0' ? q : NULL; /* a fragment is not sent by clients */
}
