/* SPDX-License-Identifier: Apache-2.0
 * What the admin extensions (pprof, health_check, telemetry_metrics) share:
 * a small evhttp listener on the main loop bound to a "host:port" endpoint
 * (loopback by default), request counting, and plain replies. */
#ifndef PG_EXTENSION_ADMIN_HTTP_H
#define PG_EXTENSION_ADMIN_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

struct event_base;
struct evhttp;
struct evhttp_request;
struct evhttp_bound_socket;

struct pg_admin_http {
    struct evhttp *http;              /* owned */
    struct evhttp_bound_socket *sock; /* owned by http */
    const char *log_name;             /* borrowed (ctx->log_name lives until destroy) */
    const char *metric_label;         /* "pprof", ...: label of the request counter */
    const char *what;                 /* "/debug/pprof/", ...: for the start log line */
};

/* Splits "host:port", "[::1]:port" or ":port" (all interfaces). False when
 * malformed. @host gets "0.0.0.0" for an empty host. */
bool pg_admin_split_endpoint(const char *ep, char *host, size_t host_size, unsigned *port);

/* Binds @endpoint on @base and routes every request to @cb(req, arg).
 * @timeout_s: connection inactivity timeout. */
enum pg_err pg_admin_http_listen(struct pg_admin_http *h, struct event_base *base,
                                 const char *endpoint, int timeout_s, size_t max_body,
                                 void (*cb)(struct evhttp_request *, void *), void *arg,
                                 struct pg_status *st);
/* Stops listening and frees evhttp (pending requests are dropped). NULL-safe. */
void pg_admin_http_close(struct pg_admin_http *h);

/* Sends @body (@len bytes, may be NULL) with @code and @ctype, and counts it
 * in pprofgate_admin_http_requests{extension,code}. */
void pg_admin_reply(const struct pg_admin_http *h, struct evhttp_request *req, int code,
                    const char *ctype, const void *body, size_t len);
/* Plain-text one-line reply (a newline is appended). */
void pg_admin_reply_text(const struct pg_admin_http *h, struct evhttp_request *req, int code,
                         const char *text);

/* The request path without the query, into @buf; false when unparsable. */
bool pg_admin_request_path(struct evhttp_request *req, char *buf, size_t size);

#endif
