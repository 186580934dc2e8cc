/* SPDX-License-Identifier: Apache-2.0
 * A unary gRPC server over HTTP/2 (nghttp2's server API) on a libevent loop:
 * h2c with prior knowledge, or h2 over TLS chosen by ALPN. It serves what a
 * receiver needs and nothing else: one request message, one response
 * message, the status in trailers. Like the HTTP/1.1 server
 * (http/http_server.h) it faces hostile clients, so:
 *  - connections are counted and refused at accept (total and per peer,
 *    shared by siblings on other loops);
 *  - a connection must send its preface and first SETTINGS within
 *    handshake_timeout, and every call's message must be complete within
 *    call_read_timeout after its HEADERS (slowloris);
 *  - streams past max_concurrent_streams are refused by nghttp2 itself
 *    (REFUSED_STREAM), header blocks are capped, and nghttp2's own
 *    SETTINGS/PING/RST flood limits are configured;
 *  - the handler sees a call's headers (route, auth) and then the declared
 *    length of its message (memory admission) before the message is
 *    buffered; a refused call is answered trailers-only and its DATA is
 *    discarded as it arrives, never kept;
 *  - grpc-encoding identity and the codec table's rows allowed by the
 *    receiver), the decoded message capped at max_recv_msg_size;
 *  - grpc-timeout gives the call a deadline: past it the server answers
 *    DEADLINE_EXCEEDED itself and the handler's late answer is dropped;
 *  - keepalive as grpc-go's server: PINGs after `time` idle, closed after
 *    `timeout` without ACK; max_connection_idle / age / age_grace end
 *    connections with GOAWAY; a client pinging more often than min_time
 *    (or without streams unless permit_without_stream) gets GOAWAY
 *    ENHANCE_YOUR_CALM "too_many_pings".
 * One instance serves one listening socket on one event loop; everything
 * but the shared caps is that loop's thread's. */
#ifndef PG_GRPC_GRPC_SERVER_H
#define PG_GRPC_GRPC_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/err.h"

struct event_base;
struct pg_grpc_server;

struct pg_grpc_server_limits {
    size_t max_recv_msg_size;        /* one message, as sent and once decoded; RESOURCE_EXHAUSTED past it */
    uint32_t max_concurrent_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS; 0 = 100 */
    size_t max_header_list_size;     /* bytes of one header block; 0 = 16 KiB */
    size_t max_connections;          /* open at once over every sibling; 0 = fd headroom only */
    size_t max_connections_per_peer; /* 0 = no limit */
    int64_t handshake_timeout_ns;    /* accept (and TLS) to the client's SETTINGS; 0 = 10 s */
    int64_t call_read_timeout_ns;    /* HEADERS to the end of the message; 0 = none */
    unsigned allowed_codings;        /* grpc-encoding values accepted (codec/codec.h bit set); identity always */
    /* keepalive.server_parameters (0 = off / grpc-go's default) */
    int64_t max_connection_idle_ns;
    int64_t max_connection_age_ns;
    int64_t max_connection_age_grace_ns;
    int64_t keepalive_time_ns;       /* 0 = 2 h, as grpc-go */
    int64_t keepalive_timeout_ns;    /* 0 = 20 s */
    /* keepalive.enforcement_policy */
    int64_t min_ping_interval_ns;    /* min_time; 0 = 5 min, as grpc-go */
    bool permit_without_stream;
};

/* One metadata entry: lower-case name, value as sent (binary -bin values
 * still base64). */
struct pg_grpc_md {
    const char *name;
    const char *value;
};

/* One unary call. The server owns it; the handler may keep the pointer from
 * on_headers until on_done. Strings live as long as the call. */
struct pg_grpc_call {
    const char *path;            /* ":path", e.g. "/pkg.Service/Method" */
    const struct pg_grpc_md *md; /* every request header but the pseudo-headers */
    size_t n_md;
    const char *authority;       /* ":authority" or NULL */
    const uint8_t *msg;          /* on_call: the decoded message, msg_len bytes, */
    size_t msg_len;              /* the server's until the answer */
    size_t wire_len;             /* the message as it came (compressed size) */
    int64_t deadline_ns;         /* monotonic (core/clock.h), 0 = none */
    const char *peer_addr;       /* "127.0.0.1", "::1", "unix" */
    unsigned peer_port;
    const char *peer;            /* "127.0.0.1:5555" for logs */
    const void *peer_key;        /* struct pg_peer_key (http/conn_limits.h) */
    bool tls;
    size_t reserved;             /* free for the handler (admitted bytes) */
    void *user;                  /* free for the handler */
};

struct pg_grpc_server_ops {
    /* HEADERS are in. Return PG_GRPC_OK to go on, or a gRPC code with its
     * reason in @st (e.g. UNIMPLEMENTED for an unknown path,
     * UNAUTHENTICATED): the server answers trailers-only at once. */
    int (*on_headers)(struct pg_grpc_call *c, struct pg_status *st, void *arg);
    /* The message's 5-byte prefix is in: @len bytes (compressed when
     * @compressed), none buffered yet. Same return rule (memory admission:
     * RESOURCE_EXHAUSTED / UNAVAILABLE). Optional. */
    int (*on_length)(struct pg_grpc_call *c, size_t len, bool compressed, struct pg_status *st,
                     void *arg);
    /* The whole message is in c->msg. Answer with pg_grpc_call_reply(),
     * now or later from the same loop, once. */
    void (*on_call)(struct pg_grpc_call *c, void *arg);
    /* Every answer, the server's own included (UNIMPLEMENTED, DEADLINE_EXCEEDED,
     * RESOURCE_EXHAUSTED for a message over the cap, ...), with its reason
     * (NULL for OK). For counting and logging. */
    void (*on_answer)(const struct pg_grpc_call *c, int code, const char *reason, void *arg);
    /* The call is over (answered, reset by the client, deadline, connection
     * lost): the handler forgets @c. Optional. Runs once for every call
     * whose on_headers ran, never for the server's own refusals before it
     * (method, content-type, grpc-encoding, grpc-timeout, header cap:
     * those get on_answer only). */
    void (*on_done)(struct pg_grpc_call *c, void *arg);
    /* Optional: a connection refused or closed by a limit; @event is one of
     * enum pg_grpc_server_event. */
    void (*on_conn_event)(int event, const char *peer, void *arg);
};

enum pg_grpc_server_event {
    PG_GRPC_REFUSED_MAX_CONNECTIONS = 0,
    PG_GRPC_REFUSED_PER_PEER,
    PG_GRPC_ACCEPT_PAUSED,
    PG_GRPC_CLOSED_HANDSHAKE_TIMEOUT,
    PG_GRPC_CLOSED_IDLE,              /* max_connection_idle */
    PG_GRPC_CLOSED_AGE,               /* max_connection_age (+ grace) */
    PG_GRPC_CLOSED_KEEPALIVE_TIMEOUT, /* PING not acknowledged */
    PG_GRPC_CLOSED_TOO_MANY_PINGS,
    PG_GRPC_CLOSED_PROTOCOL,          /* bad preface, flood, protocol error */
    PG_GRPC_N_EVENTS
};
extern const char *const pg_grpc_server_event_names[];

/* Serves @fd (listening, non-blocking; owned from here, also on failure) on
 * @base (-1: no listener; grpc/grpc_server_test.h hands it connections). @ssl_ctx (borrowed, may be NULL) makes every connection TLS; the
 * server installs its ALPN selection ("h2") on it. NULL on OOM. */
struct pg_grpc_server *pg_grpc_server_new(struct event_base *base, int fd, SSL_CTX *ssl_ctx,
                                          const struct pg_grpc_server_limits *lim,
                                          const struct pg_grpc_server_ops *ops, void *arg);
/* Another server like @first on loop @base and socket @fd, sharing its
 * connection caps. NULL on OOM (@fd closed). */
struct pg_grpc_server *pg_grpc_server_new_sibling(struct pg_grpc_server *first,
                                                  struct event_base *base, int fd, void *arg);
/* Stops accepting (pg_grpc_server_fd is -1 after); sends GOAWAY on every
 * connection: calls in flight finish, then the connections close. */
void pg_grpc_server_stop_accepting(struct pg_grpc_server *s);
/* Closes everything; calls still held by the handler end (on_done). */
void pg_grpc_server_free(struct pg_grpc_server *s);
int pg_grpc_server_fd(const struct pg_grpc_server *s);
size_t pg_grpc_server_open_connections(const struct pg_grpc_server *s);
/* Calls between on_headers and on_done. */
size_t pg_grpc_server_open_calls(const struct pg_grpc_server *s);

/* Answers @c: response headers, the message @resp (@len bytes, identity; NULL
 * when @code is not OK), then trailers grpc-status / grpc-message (percent
 * coded). @retry_delay_ns >= 0 adds a google.rpc.Status with RetryInfo in
 * grpc-status-details-bin (UNAVAILABLE / RESOURCE_EXHAUSTED under
 * backpressure). @resp is copied. Once per call, from its loop; also from
 * inside on_headers / on_length / on_call. */
void pg_grpc_call_reply(struct pg_grpc_call *c, int code, const char *message, const uint8_t *resp,
                        size_t len, int64_t retry_delay_ns);
/* From on_call, on the loop's thread: the server frees @c's message buffer now
 * (c->msg becomes NULL), so a handler done with it (decoded) does not keep a large
 * message until its answer. A gunzipped message's inflated copy stays (the call's). */
void pg_grpc_call_drop_msg(struct pg_grpc_call *c);

#endif
