/* SPDX-License-Identifier: Apache-2.0
 * The gRPC client's structures, shared by the connection (grpc_client.c:
 * connect, TLS, backoff, keepalive, send/receive) and the calls on it
 * (grpc_client_call.c: request headers, streams, results, delivery). Calls go
 * one way: the connection uses the call functions below; the call side only
 * reads the connection's fields. One loop thread per connection. */
#ifndef PG_GRPC_GRPC_CLIENT_INTERNAL_H
#define PG_GRPC_GRPC_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>
#include <nghttp2/nghttp2.h>

#include "grpc/grpc_client.h"
#include "grpc/grpc_wire.h"
#include "h2/h2_session.h"

struct bufferevent;
struct evdns_base;
struct event;

enum conn_state { ST_IDLE = 0, ST_CONNECTING, ST_READY, ST_BACKOFF };

struct client_call {
    struct pg_grpc_conn *conn;
    struct client_call *prev, *next; /* in conn->active or conn->done */
    int32_t stream_id;                /* 0 until submitted */
    bool resubmitted;                 /* refused once and moved to a new stream */

    /* Request (headers copied into one block; body borrowed). */
    nghttp2_nv *nv;
    size_t n_nv;
    char *nv_block;
    const uint8_t *body;
    size_t body_len;
    bool compressed;
    size_t sent; /* bytes of prefix+body handed to nghttp2 */
    int64_t timeout_ns;

    struct event *deadline;
    pg_grpc_done_fn cb;
    void *arg;

    /* Response. */
    int http_status;
    int grpc_status; /* -1 until seen */
    char *grpc_message;
    char *details_bin;
    bool gzip_encoding;
    bool grpc_content; /* content-type application/grpc[+proto|...] */
    struct pg_grpc_reader reader;

    /* Final result, filled by finish(). */
    int res_code;
    char *res_message;
    bool res_retry_info;
    int64_t res_retry_ns;
    uint8_t *res_body;
    size_t res_body_len;
};

struct pg_grpc_conn {
    struct event_base *base;
    struct pg_grpc_conn_config cfg;
    char authority[300];
    enum conn_state state;
    struct bufferevent *bev;
    struct evdns_base *dns;
    struct pg_h2 h2; /* the session and its pump (h2.ng NULL when down) */
    bool goaway;
    struct event *connect_timer;
    struct event *backoff_timer;
    struct event *keepalive_timer;
    struct event *done_ev;
    int64_t backoff_ns;
    uint64_t connects;
    struct client_call *active; /* not completed: pending or on a stream */
    struct client_call *done;   /* completed, callback not yet run */
    size_t n_active;
};

/* Makes a call of @req on @c (headers copied; body borrowed), on c->active
 * with its deadline timer (@on_deadline, not yet added). NULL when out of
 * memory (@st says so). */
struct client_call *pg_grpcc_call_new(struct pg_grpc_conn *c, const struct pg_grpc_request *req,
                                      pg_grpc_done_fn cb, void *arg,
                                      event_callback_fn on_deadline, struct pg_status *st);
/* Completes @call: moves it from active to done and schedules its callback. */
void pg_grpcc_finish(struct client_call *call, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* c->done_ev's callback: runs the callbacks of every completed call. */
void pg_grpcc_deliver(evutil_socket_t fd, short what, void *arg);
/* Puts every call without a stream on one, if the session can take it. */
void pg_grpcc_submit_pending(struct pg_grpc_conn *c);
/* The per-stream nghttp2 callbacks (headers, data, stream close). */
void pg_grpcc_stream_callbacks(nghttp2_session_callbacks *cbs);
/* Frees every call, completed or not, without running callbacks. */
void pg_grpcc_free_all(struct pg_grpc_conn *c);

#endif
