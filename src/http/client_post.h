/* SPDX-License-Identifier: Apache-2.0
 * HTTP/1.1 POSTs to one origin over kept-alive connections (the otlphttp
 * exporter's transport): each connection carries one request at a time and
 * is reused by the next one while the server keeps it open; at most
 * max_conns are open. Built on evhttp over a plain or OpenSSL bufferevent
 * (http/tls_client.h). A connection the server closed, or one a failed
 * request left behind, is replaced by a fresh one (a TLS session is never
 * reconnected in place). The response body is kept up to max_response
 * bytes and the rest discarded, so a status and its first bytes always
 * arrive. Everything runs on the pool's event loop; the callback runs
 * exactly once per started call, unless the pool is freed first. */
#ifndef PG_HTTP_CLIENT_POST_H
#define PG_HTTP_CLIENT_POST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/err.h"
#include "http/client.h"

struct event_base;

struct pg_http_pool_opts {
    const char *host;           /* name or IP literal (no brackets); copied */
    unsigned port;
    SSL_CTX *ssl_ctx;           /* borrowed, outlives the pool; NULL = plain http */
    const char *server_name;    /* TLS name to verify; NULL = host; copied */
    bool verify;                /* check the certificate name */
    size_t max_conns;           /* connections open at once (>= 1) */
    int64_t idle_timeout_ns;    /* an idle connection older than this is not reused; 0 = none */
    size_t max_response;        /* response body bytes kept (the rest is read and dropped) */
    bool keep_alive;            /* false: "Connection: close", a connection per request */
};

struct pg_http_post {
    const char *path;           /* "/v1development/profiles" (with any query) */
    const struct pg_http_header *headers; /* copied by pg_http_pool_post (names and values) */
    size_t n_headers;
    const uint8_t *body;        /* borrowed until the callback */
    size_t len;
    int64_t timeout_ns;         /* connect, send and the whole response; 0 = none */
};

struct pg_http_post_result {
    enum pg_http_fail fail;     /* OK: a response arrived (any status) */
    int status;                 /* 0 without a response */
    const uint8_t *body;        /* the first max_response bytes; callback only */
    size_t len;
    bool truncated;             /* the body was longer than max_response */
    bool reused;                /* sent on a connection an earlier request used */
    char why[200];              /* set when fail != OK */
    const void *headers_;       /* for pg_http_post_header() only */
};

typedef void (*pg_http_post_fn)(void *arg, const struct pg_http_post_result *r);

struct pg_http_pool;

struct pg_http_pool *pg_http_pool_new(struct event_base *base, const struct pg_http_pool_opts *o);
/* Closes every connection; calls still in flight end without their callback. */
void pg_http_pool_free(struct pg_http_pool *p);

/* Starts @req on an idle connection, a new one, or (all max_conns busy)
 * queues it. Non-OK (NOMEM): not started, the callback will not run. */
enum pg_err pg_http_pool_post(struct pg_http_pool *p, const struct pg_http_post *req,
                              pg_http_post_fn done, void *arg, struct pg_status *st);

/* A response header (case-insensitive name; the first if repeated) or NULL;
 * during the callback only. */
const char *pg_http_post_header(const struct pg_http_post_result *r, const char *name);

/* Connections opened so far (for the exporter's log and tests of reuse). */
uint64_t pg_http_pool_connects(const struct pg_http_pool *p);

#endif
