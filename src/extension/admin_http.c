/* SPDX-License-Identifier: Apache-2.0
 * The admin extensions' shared lifecycle, evhttp listener, authentication
 * gate and reply helpers. They bind loopback unless the operator writes
 * another host, because what they serve (heap profiles, symbols, metrics) is
 * about the gateway itself; with `auth:` they also require credentials. */
#include "extension/admin_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "core/log.h"
#include "core/metrics.h"
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

/* Every request passes here: credentials first (when configured), so no
 * route of any admin extension is reachable without them. */
static void on_admin_request(struct evhttp_request *req, void *arg)
{
    struct pg_admin_http *h = arg;
    if (h->auth != NULL) {
        static struct pg_log_ratelimit rl = PG_LOG_RATELIMIT_INIT(1.0, 5.0);
        struct pg_status st = {0};
        const char *authz =
            evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
        if (!pg_auth_check(h->auth, authz, &st)) {
            unsigned long suppressed = 0;
            if (pg_log_ratelimit_ok(&rl, &suppressed)) {
                char *peer = NULL; /* owned by the connection */
                ev_uint16_t peer_port = 0;
                struct evhttp_connection *c = evhttp_request_get_connection(req);
                if (c != NULL) {
                    evhttp_connection_get_peer(c, &peer, &peer_port);
                }
                pg_log_warn(h->log_name, "401 for %s from %s: %s (%lu similar lines suppressed)",
                            evhttp_request_get_uri(req), peer ? peer : "?",
                            pg_status_text(&st), suppressed);
            }
            evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                              pg_auth_challenge(h->auth));
            pg_admin_reply_text(h, req, 401, pg_status_text(&st));
            return;
        }
    }
    h->spec->on_request(req, h);
}

enum pg_err pg_admin_ext_start(void *state, struct pg_status *st)
{
    struct pg_admin_http *h = state;
    const char *endpoint = h->cfg.endpoint;
    char host[256];
    unsigned port;
    if (!pg_admin_split_endpoint(endpoint, host, sizeof(host), &port)) {
        return pg_status_set(st, PG_ERR_CONFIG, "endpoint \"%s\" is not host:port", endpoint);
    }
    h->http = evhttp_new(h->host->base);
    if (h->http == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "cannot create an HTTP server");
    }
    evhttp_set_timeout(h->http, h->spec->timeout_s);
    evhttp_set_max_body_size(h->http, (ev_ssize_t)h->spec->max_body);
    evhttp_set_max_headers_size(h->http, 64 * 1024);
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
    evhttp_set_gencb(h->http, on_admin_request, h);
    h->sock = evhttp_bind_socket_with_handle(h->http, host, (ev_uint16_t)port);
    if (h->sock == NULL) {
        int e = errno;
        evhttp_free(h->http);
        h->http = NULL;
        return pg_status_set(st, PG_ERR_IO, "cannot listen on %s: %s", endpoint,
                             e ? strerror(e) : "bind failed");
    }
    /* Logged with the bound port (endpoint :0 in tests). Worded "serving",
     * not "listening on", so receiver port discovery does not pick it up. */
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char addr[INET6_ADDRSTRLEN] = "?";
    unsigned bound = port;
    if (getsockname(evhttp_bound_socket_get_fd(h->sock), (struct sockaddr *)&ss, &sl) == 0) {
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
    pg_log_info(h->log_name, "serving %s on %s:%u%s", h->spec->what, addr, bound,
                h->auth != NULL ? " (auth required)" : "");
    return PG_ERR_OK;
}

void pg_admin_ext_shutdown(void *state)
{
    struct pg_admin_http *h = state;
    if (h != NULL && h->http != NULL) {
        evhttp_free(h->http);
        h->http = NULL;
        h->sock = NULL;
    }
}

void pg_admin_ext_destroy(void *state)
{
    struct pg_admin_http *h = state;
    if (h == NULL) {
        return;
    }
    pg_admin_ext_shutdown(h);
    pg_auth_free(h->auth);
    free(h);
}

void pg_admin_reply(const struct pg_admin_http *h, struct evhttp_request *req, int code,
                    const char *ctype, const void *body, size_t len)
{
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    if (ctype != NULL) {
        evhttp_add_header(oh, "Content-Type", ctype);
    }
    evhttp_add_header(oh, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(oh, "Cache-Control", "no-store");
    struct evbuffer *b = evbuffer_new();
    if (b != NULL && body != NULL && len > 0) {
        evbuffer_add(b, body, len);
    }
    evhttp_send_reply(req, code, NULL, b);
    if (b != NULL) {
        evbuffer_free(b);
    }
    char labels[128];
    snprintf(labels, sizeof(labels), "extension=\"%s\",code=\"%d\"", h->spec->metric_label,
             code);
    pg_metric_add(pg_metric_counter("pprofgate_admin_http_requests",
                                    "Requests answered by the admin extensions, by status code.",
                                    labels),
                  1);
}

void pg_admin_reply_text(const struct pg_admin_http *h, struct evhttp_request *req, int code,
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

bool pg_admin_require_get(const struct pg_admin_http *h, struct evhttp_request *req)
{
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    if (m == EVHTTP_REQ_GET || m == EVHTTP_REQ_HEAD) {
        return true;
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
    pg_admin_reply_text(h, req, 405, "method not allowed: use GET");
    return false;
}

bool pg_admin_request_path(struct evhttp_request *req, char *buf, size_t size)
{
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = u ? evhttp_uri_get_path(u) : NULL;
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
