/* SPDX-License-Identifier: Apache-2.0
 * What the admin extensions (pprof, health_check, telemetry_metrics) share:
 * the config keys `endpoint` (loopback by default) and `auth`, the component
 * lifecycle (bind and check the config, listen, stop, free), a listener on
 * the main loop (the receiver's HTTP/1.1 server, so the same absolute
 * deadlines and connection cap) that authenticates every request on its
 * headers, before any body byte is read and before an extension's routes
 * see it, request counting, and plain replies. */
#ifndef PG_EXTENSION_ADMIN_HTTP_H
#define PG_EXTENSION_ADMIN_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline/component.h"
#include "core/config.h"
#include "core/err.h"
#include "http/auth.h"

struct pg_httpd;
struct pg_httpd_req;
struct pg_peer_ratelimit;

/* The keys every admin extension takes (bound by PG_ADMIN_HTTP_FIELDS). */
struct pg_admin_cfg {
    char *endpoint;               /* in the config arena */
    struct pg_auth_options auth;  /* the receiver's auth keys; strings in the config arena */
    bool has_auth;                /* an `auth:` section was written */
    int64_t read_header_timeout;  /* ns, absolute from a request's first byte */
    int64_t read_timeout;         /* ns, head + body */
    int64_t write_timeout;        /* ns, writing one answer (held requests wait before it) */
    int64_t idle_timeout;         /* ns between requests */
    int64_t max_connections;      /* open at once, refused at accept past it */
};

/* One admin extension kind: what its listener looks like and its routes. */
struct pg_admin_spec {
    const char *what;             /* "/debug/pprof/", ...: in the "serving ... on" log line */
    const char *metric_label;     /* "pprof", ...: label of the request counter */
    const char *config_path;      /* diag prefix; NULL = "extensions::<id>" */
    const char *endpoint_word;    /* "endpoint" or "address": how the diag names the key */
    const char *endpoint_example; /* "localhost:1777": in the diag for a bad endpoint */
    size_t max_body;              /* request body cap (413 before reading past it) */
    /* Called for every authenticated request, its body read, with the
     * extension's state (which starts with struct pg_admin_http). It answers
     * now or later from the loop (a held request). */
    void (*on_request)(struct pg_httpd_req *req, void *state);
    /* Optional: @req is over (answered, or its connection lost): a held
     * request must be forgotten here. */
    void (*on_done)(struct pg_httpd_req *req, void *state);
};

/* The first member of every admin extension's state: the generic lifecycle
 * functions below take that state as a struct pg_admin_http. */
struct pg_admin_http {
    struct pg_admin_cfg cfg;          /* bound from the component's config */
    const struct pg_admin_spec *spec; /* static */
    struct pg_host *host;             /* borrowed: lives longer than the extension */
    const char *log_name;             /* borrowed (ctx->log_name lives until destroy) */
    struct pg_auth *auth;             /* owned; NULL when no `auth:` was configured */
    struct pg_peer_ratelimit *auth_rl;/* owned with auth: failed attempts per peer */
    struct pg_httpd *httpd;           /* owned; NULL when not listening */
};

/* The `endpoint` and `auth` rows of an admin extension's field table (the
 * table binds into the extension's state, whose first member is the
 * struct pg_admin_http). */
#define PG_ADMIN_HTTP_FIELDS(default_endpoint, endpoint_doc)                                       \
    PG_FIELD(struct pg_admin_http, "endpoint", PG_FT_STR, cfg.endpoint, default_endpoint,          \
             endpoint_doc),                                                                        \
    PG_FIELD_SECTION_PRESENT(struct pg_admin_http, "auth", cfg.auth, pg_auth_fields, cfg.has_auth, \
                             "require a bearer token or basic auth like the receiver's (401); "    \
                             "off by default"),                                                    \
    PG_FIELD(struct pg_admin_http, "read_header_timeout", PG_FT_DURATION, cfg.read_header_timeout, \
             "10s",                                                                                \
             "deadline from a request's first byte to the end of its headers (408 and close)"),    \
    PG_FIELD(struct pg_admin_http, "read_timeout", PG_FT_DURATION, cfg.read_timeout, "30s",        \
             "deadline for a request's headers and body"),                                         \
    PG_FIELD(struct pg_admin_http, "write_timeout", PG_FT_DURATION, cfg.write_timeout, "30s",      \
             "deadline for writing one answer, from when it is ready (a ?seconds=N profile "       \
             "waits first)"),                                                                      \
    PG_FIELD(struct pg_admin_http, "idle_timeout", PG_FT_DURATION, cfg.idle_timeout, "1m",         \
             "how long a keep-alive connection may wait for its next request"),                    \
    PG_FIELD_RANGE(struct pg_admin_http, "max_connections", PG_FT_INT, cfg.max_connections, "64",  \
                   1, 1e6, "connections open at once; more are refused at accept")

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
/* shutdown(): stops listening; open connections finish their answer (all
 * closed by destroy). Idempotent. */
void pg_admin_ext_shutdown(void *state);
/* destroy(): shutdown, then frees the credentials and the state. NULL-safe. */
void pg_admin_ext_destroy(void *state);

/* The diag path pg_admin_ext_create used ("extensions::pprof", ...). */
void pg_admin_config_path(const struct pg_component_ctx *ctx, const struct pg_admin_spec *spec,
                          char *buf, size_t size);

/* Sends @body (@len bytes, may be NULL) with @code and @ctype, and counts it
 * in pprofgate_admin_http_requests{extension,code}. */
void pg_admin_reply(const struct pg_admin_http *h, struct pg_httpd_req *req, int code,
                    const char *ctype, const void *body, size_t len);
/* Plain-text one-line reply (a newline is appended). */
/* The same, taking @body (malloc'd; sent in place, freed when written). */
void pg_admin_reply_take(const struct pg_admin_http *h, struct pg_httpd_req *req, int code,
                         const char *ctype, char *body, size_t len);
void pg_admin_reply_text(const struct pg_admin_http *h, struct pg_httpd_req *req, int code,
                         const char *text);
/* True for GET and HEAD; otherwise answers 405 with `Allow: GET, HEAD`. */
bool pg_admin_require_get(const struct pg_admin_http *h, struct pg_httpd_req *req);

/* The request path without the query, into @buf; false when unparsable. */
bool pg_admin_request_path(struct pg_httpd_req *req, char *buf, size_t size);
/* The query of the request target (after '?'), borrowed from @req; NULL
 * when there is none. */
const char *pg_admin_request_query(const struct pg_httpd_req *req);

#endif
