/* SPDX-License-Identifier: Apache-2.0
 * A gRPC client connection: one long-lived HTTP/2 session (nghttp2) over a
 * libevent bufferevent, plain TCP or OpenSSL with ALPN h2, multiplexing unary
 * calls. It connects on demand, sends keepalive PINGs while calls are in
 * flight, follows GOAWAY by draining and reconnecting, and backs off between
 * failed connection attempts. Every call ends in exactly one callback, always
 * from the event loop (never from inside pg_grpc_conn_call). */
#ifndef PG_GRPC_GRPC_CLIENT_H
#define PG_GRPC_GRPC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/err.h"

struct event_base;
struct pg_grpc_conn;

struct pg_grpc_conn_config {
    const char *host;          /* borrowed for the connection's lifetime */
    int port;
    bool tls;
    SSL_CTX *ssl_ctx;          /* borrowed; required when tls */
    const char *server_name;   /* SNI and certificate name; defaults to host */
    bool verify;               /* check the certificate name */
    int64_t keepalive_time_ns;    /* PING interval while calls are active; 0 = off */
    int64_t keepalive_timeout_ns; /* no ACK within this -> connection dropped */
    int64_t connect_timeout_ns;   /* TCP + TLS handshake */
    int64_t backoff_initial_ns;   /* wait after a failed connection, doubling */
    int64_t backoff_max_ns;
    size_t max_response_bytes;    /* cap on a response message */
    const char *log_name;      /* borrowed */
};

struct pg_grpc_header {
    const char *name;  /* lower-case */
    const char *value;
};

struct pg_grpc_request {
    const char *path;
    const struct pg_grpc_header *headers; /* copied by the call */
    size_t n_headers;
    const uint8_t *body;       /* borrowed until the callback: the message */
    size_t body_len;
    bool compressed;           /* body is gzip (sets the prefix flag) */
    int64_t timeout_ns;        /* deadline for the call; also sent as grpc-timeout */
};

struct pg_grpc_result {
    int code;                  /* gRPC status */
    const char *message;       /* decoded grpc-message or a local reason; never NULL */
    bool has_retry_info;
    int64_t retry_delay_ns;    /* RetryInfo delay, when has_retry_info */
    const uint8_t *response;   /* decompressed response message, or NULL */
    size_t response_len;
    int http_status;           /* 0 when no response headers arrived */
};

/* @res and everything it points to are valid only during the callback. */
typedef void (*pg_grpc_done_fn)(void *arg, const struct pg_grpc_result *res);

/* Copies nothing from @cfg but the scalars: strings and ssl_ctx must outlive
 * the connection. Returns NULL on OOM. */
struct pg_grpc_conn *pg_grpc_conn_new(struct event_base *base, const struct pg_grpc_conn_config *cfg);
/* Frees the connection; calls still pending are dropped without callback. */
void pg_grpc_conn_free(struct pg_grpc_conn *c);
/* Starts connecting now (otherwise the first call does). */
void pg_grpc_conn_connect(struct pg_grpc_conn *c);

/* Starts a unary call. Returns OK (the callback will run) or NOMEM. */
enum pg_err pg_grpc_conn_call(struct pg_grpc_conn *c, const struct pg_grpc_request *req,
                              pg_grpc_done_fn cb, void *arg, struct pg_status *st);

/* Calls not yet completed. */
size_t pg_grpc_conn_calls(const struct pg_grpc_conn *c);
/* True while an HTTP/2 session is up. */
bool pg_grpc_conn_ready(const struct pg_grpc_conn *c);
/* Connections established so far (for tests and metrics). */
uint64_t pg_grpc_conn_connects(const struct pg_grpc_conn *c);

#endif
