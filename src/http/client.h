/* SPDX-License-Identifier: Apache-2.0
 * A one-shot HTTP/1.1 GET on the event loop: libevent's evhttp client over a
 * plain or OpenSSL bufferevent. One connection per request (targets are many
 * and scraped seconds apart, so keep-alive buys little and a fresh
 * connection cannot inherit a half-read body). The body is capped while it
 * arrives; the callback runs exactly once, unless the call is cancelled. */
#ifndef PG_HTTP_CLIENT_H
#define PG_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/err.h"

struct event_base;

enum pg_http_fail {
    PG_HTTP_OK = 0,       /* a response arrived (any status) */
    PG_HTTP_CONNECT,      /* no connection or no response header */
    PG_HTTP_TIMEOUT,
    PG_HTTP_TOO_LARGE,    /* body past max_body */
    PG_HTTP_READ,         /* connection closed mid-body */
    PG_HTTP_TLS,
    PG_HTTP_INTERNAL,
    PG_HTTP_BAD_RESPONSE, /* bytes came back that are not an HTTP/1.x response we accept */
};

struct pg_http_header {
    const char *name, *value;
};

struct pg_http_get_opts {
    const char *host;          /* name or IP literal (no brackets) */
    unsigned port;
    const char *path_query;    /* "/debug/pprof/profile?seconds=10" */
    const char *host_header;   /* Host: value; NULL = host[:port] */
    int64_t timeout_ns;        /* whole request */
    size_t max_body;
    SSL_CTX *ssl_ctx;          /* borrowed; NULL = plain http */
    const char *server_name;   /* TLS name to verify; NULL = host */
    bool verify;               /* check the certificate name */
    const struct pg_http_header *headers;
    size_t n_headers;
    /* Streaming (watch): when set, body bytes go here as they arrive and
     * are not kept (max_body is then not applied; the caller caps what it
     * buffers). Returning false aborts the call (fail READ, why = "aborted"). */
    bool (*on_data)(void *arg, int status, const uint8_t *p, size_t n);
    /* Inactivity timeout between reads; 0 = timeout_ns. */
    int64_t idle_timeout_ns;
};

struct pg_http_response {
    enum pg_http_fail fail;
    int status;                /* 0 without a response */
    const uint8_t *body;       /* valid during the callback only */
    size_t len;
    const char *go_pprof;      /* X-Go-Pprof header or NULL (callback only) */
    const char *location;      /* Location header or NULL (callback only) */
    char why[200];             /* set when fail != OK */
};

typedef void (*pg_http_done_fn)(void *arg, const struct pg_http_response *r);

struct pg_http_call;

/* Starts the request. NULL (with @st set) when it cannot even start; the
 * callback is then never called. */
struct pg_http_call *pg_http_get(struct event_base *base, const struct pg_http_get_opts *o,
                                 pg_http_done_fn done, void *arg, struct pg_status *st);
/* Aborts a call whose callback has not run; the callback will not run. */
void pg_http_call_cancel(struct pg_http_call *c);
const char *pg_http_fail_name(enum pg_http_fail f);

#endif
