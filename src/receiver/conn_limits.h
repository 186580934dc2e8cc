/* SPDX-License-Identifier: Apache-2.0
 * Per-connection limits for an evhttp server: max_connections (connections
 * that have sent a request and are still open) and max_requests_per_connection
 * (keep-alive requests before the server asks the client to reconnect).
 * libevent 2.1's evhttp cannot refuse at accept time, so a connection past
 * the cap is told at its first request: 503 Retry-After and Connection:
 * close. Connections that never finish their headers are bounded by
 * read_header_timeout instead. */
#ifndef PG_RECEIVER_CONN_LIMITS_H
#define PG_RECEIVER_CONN_LIMITS_H

#include <stddef.h>

struct evhttp_connection;
struct pg_conn_limits;

enum pg_conn_verdict {
    PG_CONN_OK = 0,   /* serve it */
    PG_CONN_LAST,     /* serve it with Connection: close (request cap reached) */
    PG_CONN_REFUSE,   /* answer 503 + Retry-After + Connection: close (too many connections) */
};

/* 0 = no limit for either. NULL on OOM. Owned by the caller; free it only
 * after the evhttp server (whose connections point at it) is freed. */
struct pg_conn_limits *pg_conn_limits_new(size_t max_connections, size_t max_requests);
void pg_conn_limits_free(struct pg_conn_limits *l);

/* Counts a request on @evcon (registering the connection on its first one,
 * with a close callback that forgets it) and says how to answer. */
enum pg_conn_verdict pg_conn_limits_on_request(struct pg_conn_limits *l,
                                               struct evhttp_connection *evcon);

/* Connections currently tracked. */
size_t pg_conn_limits_open(const struct pg_conn_limits *l);

#endif
