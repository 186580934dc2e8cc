/* SPDX-License-Identifier: Apache-2.0
 * The admin extensions' shared evhttp listener and reply helpers. They bind
 * loopback unless the operator writes another host, because what they serve
 * (heap profiles, symbols, metrics) is about the gateway itself. */
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

bool pg_admin_split_endpoint(const char *ep, char *host, size_t host_size, unsigned *port)
{
    if (ep == NULL) {
        return false;
    }
    const char *colon = strrchr(ep, ':');
    if (colon == NULL) {
        return false;
    }
    const char *h = ep;
    size_t hlen = (size_t)(colon - ep);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen >= host_size) {
        return false;
    }
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno != 0 || end == colon + 1 || *end != '\0' || p < 0 || p > 65535) {
        return false;
    }
    if (hlen == 0) {
        snprintf(host, host_size, "0.0.0.0");
    } else {
        memcpy(host, h, hlen);
        host[hlen] = '\0';
    }
    *port = (unsigned)p;
    return true;
}

enum pg_err pg_admin_http_listen(struct pg_admin_http *h, struct event_base *base,
                                 const char *endpoint, int timeout_s, size_t max_body,
                                 void (*cb)(struct evhttp_request *, void *), void *arg,
                                 struct pg_status *st)
{
    char host[256];
    unsigned port;
    if (!pg_admin_split_endpoint(endpoint, host, sizeof(host), &port)) {
        return pg_status_set(st, PG_ERR_CONFIG, "endpoint \"%s\" is not host:port", endpoint);
    }
    h->http = evhttp_new(base);
    if (h->http == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "cannot create an HTTP server");
    }
    evhttp_set_timeout(h->http, timeout_s);
    evhttp_set_max_body_size(h->http, (ev_ssize_t)max_body);
    evhttp_set_max_headers_size(h->http, 64 * 1024);
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
    evhttp_set_gencb(h->http, cb, arg);
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
    pg_log_info(h->log_name, "serving %s on %s:%u", h->what ? h->what : "admin endpoint", addr,
                bound);
    return PG_ERR_OK;
}

void pg_admin_http_close(struct pg_admin_http *h)
{
    if (h != NULL && h->http != NULL) {
        evhttp_free(h->http);
        h->http = NULL;
        h->sock = NULL;
    }
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
    snprintf(labels, sizeof(labels), "extension=\"%s\",code=\"%d\"",
             h->metric_label ? h->metric_label : "", code);
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
