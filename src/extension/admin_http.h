/* SPDX-License-Identifier: Apache-2.0
 * What the admin extensions (pprof, health_check, telemetry_metrics) share:
 * the config keys `endpoint` (loopback by default) and `auth`, the component
 * lifecycle (bind and check the config, listen, stop, free), an evhttp
 * listener on the main loop that authenticates every request before an
 * extension's routes see it, request counting, and plain replies. */
#ifndef PG_EXTENSION_ADMIN_HTTP_H
#define PG_EXTENSION_ADMIN_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "pipeline/component.h"
#include "core/config.h"
#include "core/err.h"
#include "http/auth.h"

struct event_base;
struct evhttp;
struct evhttp_request;
struct evhttp_bound_socket;

/* The keys every admin extension takes (bound by PG_ADMIN_HTTP_FIELDS). */
struct pg_admin_cfg {
    char *endpoint;               /* in the config arena */
    struct pg_auth_options auth;  /* the receiver's auth keys; strings in the config arena */
    bool has_auth;                /* an `auth:` section was written */
};

/* One admin extension kind: what its listener looks like and its routes. */
struct pg_admin_spec {
    const char *what;             /* "/debug/pprof/", ...: in the "serving ... on" log line */
    const char *metric_label;     /* "pprof", ...: label of the request counter */
    const char *config_path;      /* diag prefix; NULL = "extensions::<id>" */
    const char *endpoint_word;    /* "endpoint" or "address": how the diag names the key */
    const char *endpoint_example; /* "localhost:1777": in the diag for a bad endpoint */
    int timeout_s;                /* connection inactivity timeout */
    size_t max_body;              /* request body cap */
    /* Called for every authenticated request with the extension's state
     * (which starts with struct pg_admin_http). */
    void (*on_request)(struct evhttp_request *req, void *state);
};

/* The first member of every admin extension's state: the generic lifecycle
 * functions below take that state as a struct pg_admin_http. */
struct pg_admin_http {
    struct pg_admin_cfg cfg;          /* bound from the component's config */
    const struct pg_admin_spec *spec; /* static */
    struct pg_host *host;             /* borrowed: lives longer than the extension */
    const char *log_name;             /* borrowed (ctx->log_name lives until destroy) */
    struct pg_auth *auth;             /* owned; NULL when no `auth:` was configured */
    struct evhttp *http;              /* owned; NULL when not listening */
    struct evhttp_bound_socket *sock; /* owned by http */
};

/* The `endpoint` and `auth` rows of an admin extension's field table (the
 * table binds into the extension's state, whose first member is the
 * struct pg_admin_http). */
#define PG_ADMIN_HTTP_FIELDS(default_endpoint, endpoint_doc)                                        \
    {"endpoint", PG_FT_STR, offsetof(struct pg_admin_http, cfg.endpoint), default_endpoint, 0, 0,  \
     NULL, NULL, PG_NO_PRESENT, endpoint_doc},                                                      \
    {"auth", PG_FT_SECTION, offsetof(struct pg_admin_http, cfg.auth), NULL, 0, 0, pg_auth_fields,  \
     NULL, offsetof(struct pg_admin_http, cfg.has_auth),                                            \
     "require a bearer token or basic auth like the receiver's (401); off by default"}

/* Splits "host:port", "[::1]:port" or ":port" (all interfaces). False when
 * malformed. @host gets "0.0.0.0" for an empty host. */
bool pg_admin_split_endpoint(const char *ep, char *host, size_t host_size, unsigned *port);

/* create(): allocates a zeroed state of @size bytes (first member a
 * struct pg_admin_http), binds ctx->config through @fields into it, checks the
 * endpoint and loads the credentials of `auth:`. Every problem goes to
 * ctx->diag; then PG_ERR_CONFIG and nothing is allocated. */
enum pg_err pg_admin_ext_create(const struct pg_component_ctx *ctx,
                                const struct pg_admin_spec *spec, const struct pg_field *fields,
                                size_t size, void **state);
/* start(): listens on the endpoint; requests go through authentication to
 * spec->on_request(req, state). */
enum pg_err pg_admin_ext_start(void *state, struct pg_status *st);
/* shutdown(): stops listening (pending requests are dropped). Idempotent. */
void pg_admin_ext_shutdown(void *state);
/* destroy(): shutdown, then frees the credentials and the state. NULL-safe. */
void pg_admin_ext_destroy(void *state);

/* The diag path pg_admin_ext_create used ("extensions::pprof", ...). */
void pg_admin_config_path(const struct pg_component_ctx *ctx, const struct pg_admin_spec *spec,
                          char *buf, size_t size);

/* Sends @body (@len bytes, may be NULL) with @code and @ctype, and counts it
 * in pprofgate_admin_http_requests{extension,code}. */
void pg_admin_reply(const struct pg_admin_http *h, struct evhttp_request *req, int code,
                    const char *ctype, const void *body, size_t len);
/* Plain-text one-line reply (a newline is appended). */
void pg_admin_reply_text(const struct pg_admin_http *h, struct evhttp_request *req, int code,
                         const char *text);
/* True for GET and HEAD; otherwise answers 405 with `Allow: GET, HEAD`. */
bool pg_admin_require_get(const struct pg_admin_http *h, struct evhttp_request *req);

/* The request path without the query, into @buf; false when unparsable. */
bool pg_admin_request_path(struct evhttp_request *req, char *buf, size_t size);

#endif
