/* SPDX-License-Identifier: Apache-2.0
 * A small HTTP/1.1 server on libevent bufferevents, for receivers that face
 * hostile clients. evhttp 2.1 cannot do what they need: it has one
 * inactivity timeout that every trickled byte resets, accepts every
 * connection, reads a whole body before the handler sees its headers, and
 * answers 100 Continue by itself. Here:
 *  - connections are counted and refused at accept (total and per peer),
 *    and an fd shortage (EMFILE) pauses accepting instead of spinning;
 *  - each phase has an absolute deadline: read_header_timeout from a
 *    request's first byte to the end of its head, read_timeout from that
 *    first byte to the end of its body, a minimum body rate, write_timeout
 *    for the answer, idle_timeout between requests;
 *  - the handler sees the head before any body byte is read (auth,
 *    admission), 100 Continue is sent only once it said yes, and a refusal
 *    closes the connection without reading the body into memory;
 *  - every answer, the server's own included (400, 408, 413, 414, 431,
 *    501, 505), is a one-line text/plain reason reported to on_answer.
 * One instance serves one listening socket on one event loop. Siblings
 * (pg_httpd_new_sibling: one per loop, each on its own SO_REUSEPORT socket)
 * share the connection caps, per-peer counts and the linger budget under
 * one lock taken per connection, never per request; everything else is the
 * instance's own loop thread's. */
#ifndef PG_HTTP_HTTP_SERVER_H
#define PG_HTTP_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

struct event_base;
struct evkeyvalq;
struct pg_httpd;
struct pg_httpd_conn;

struct pg_httpd_limits {
    int64_t read_header_timeout_ns; /* 0 = none (idle_timeout still applies) */
    int64_t read_timeout_ns;        /* head + body of one request; 0 = none */
    int64_t write_timeout_ns;       /* writing one answer; 0 = none */
    int64_t idle_timeout_ns;        /* between requests; 0 = read_header_timeout */
    uint64_t min_body_rate;         /* body bytes/s after a grace period; 0 = off */
    uint64_t max_body;              /* 413 past it (Content-Length or as chunks arrive) */
    size_t max_header_bytes;        /* request line + headers (431 past it) */
    size_t max_target;              /* request-target bytes (414 past it) */
    size_t max_headers;             /* header lines (431 past it) */
    size_t max_connections;         /* open at once; 0 = only the fd headroom rule */
    size_t max_connections_per_peer;/* 0 = no limit */
    size_t max_requests_per_connection; /* 0 = no limit */
    bool keep_alives;
};

/* One request. The server owns it; the handler may keep the pointer from
 * on_head until on_done. Strings and lists live as long as the request. */
struct pg_httpd_req {
    struct pg_httpd_conn *conn;  /* private */
    const char *method;
    const char *target;          /* as sent */
    const char *path;            /* target without the query */
    int minor;                   /* HTTP/1.<minor> */
    struct evkeyvalq *in;        /* request headers */
    struct evkeyvalq *out;       /* response headers the handler adds */
    const char *body;            /* the whole body when on_request runs, body_len bytes; */
    size_t body_len;             /* the server's (the connection's input buffer), valid
                                  * until the answer is sent: never past pg_httpd_reply */
    uint64_t content_length;     /* PG_HTTP_NO_LENGTH when chunked or absent */
    bool chunked;
    const char *peer_addr;       /* "127.0.0.1", "::1", "unix" */
    unsigned peer_port;
    const char *peer;            /* "127.0.0.1:5555" / "[::1]:5555" / "unix" for logs */
    const char *peer_hostport;   /* pg_http_hostport(peer_addr, peer_port), formatted once
                                  * per connection: "unix:0" for a unix socket */
    const void *peer_key;        /* struct pg_peer_key (http/conn_limits.h) */
    size_t reserved;             /* free for the handler (admitted bytes) */
    void *user;                  /* free for the handler */
};

struct pg_httpd_ops {
    /* The head is in, no body byte read. Return true to read the body (a
     * 100 Continue goes out first when asked for), or answer now with
     * pg_httpd_reply() and return false: the body is then never buffered
     * and the connection closes. */
    bool (*on_head)(struct pg_httpd_req *r, void *arg);
    /* Optional: called as body bytes arrive (@received so far). Return false
     * after answering with pg_httpd_reply() to stop reading (the connection
     * closes). */
    bool (*on_body)(struct pg_httpd_req *r, uint64_t received, void *arg);
    /* The whole body is in r->body. Answer with pg_httpd_reply(), now or
     * later from the same loop. */
    void (*on_request)(struct pg_httpd_req *r, void *arg);
    /* Every answer sent, with its reason (NULL for success codes), the
     * server's own included (a deadline passed mid-request: 408). */
    void (*on_answer)(const struct pg_httpd_req *r, int code, const char *reason,
                      const char *peer, void *arg);
    /* Optional: a connection refused or closed by a limit (see enum). */
    void (*on_conn_event)(int event, const char *peer, void *arg);
    /* Optional: the request is over (answer written or connection lost). */
    void (*on_done)(struct pg_httpd_req *r, void *arg);
    /* Optional: a connection was accepted (past the caps). */
    void (*on_conn_open)(void *arg);
};

enum pg_httpd_event {
    PG_HTTPD_REFUSED_MAX_CONNECTIONS = 0, /* at accept: max_connections (or fd headroom) */
    PG_HTTPD_REFUSED_PER_PEER,            /* at accept: max_connections_per_peer */
    PG_HTTPD_ACCEPT_PAUSED,               /* accept failed (EMFILE, ...): paused 100 ms */
    PG_HTTPD_CLOSED_HEADER_TIMEOUT,
    PG_HTTPD_CLOSED_READ_TIMEOUT,
    PG_HTTPD_CLOSED_BODY_RATE,
    PG_HTTPD_CLOSED_WRITE_TIMEOUT,
    PG_HTTPD_CLOSED_IDLE,
    PG_HTTPD_N_EVENTS
};
/* "max_connections", "per_peer", "accept_error", "read_header_timeout", ... */
extern const char *const pg_httpd_event_names[];

/* Serves @fd (a listening socket, non-blocking; owned by the server from
 * here, also on failure) on @base. @ssl_ctx (borrowed, may be NULL) makes
 * every connection TLS. NULL on OOM. */
struct pg_httpd *pg_httpd_new(struct event_base *base, int fd, SSL_CTX *ssl_ctx,
                              const struct pg_httpd_limits *lim, const struct pg_httpd_ops *ops,
                              void *arg);
/* Another server like @first (same TLS context, limits and callbacks, with
 * @arg) on its own loop @base and listening socket @fd, sharing @first's
 * caps: max_connections and max_connections_per_peer hold for all of them
 * together. Each is then used from its own loop's thread only; free them in
 * any order. NULL on OOM (@fd closed). */
struct pg_httpd *pg_httpd_new_sibling(struct pg_httpd *first, struct event_base *base, int fd,
                                      void *arg);
/* Stops accepting (closes the listening socket); open connections finish
 * their request and close. */
void pg_httpd_stop_accepting(struct pg_httpd *s);
/* Closes everything; requests still held by the handler are ended (on_done). */
void pg_httpd_free(struct pg_httpd *s);
/* The listening fd (for getsockname), -1 after stop_accepting. */
int pg_httpd_fd(const struct pg_httpd *s);
/* Connections this server accepted so far (any thread). */
uint64_t pg_httpd_accepted(const struct pg_httpd *s);
/* Connections open now. */
size_t pg_httpd_open_connections(const struct pg_httpd *s);
/* The connection cap in force: max_connections, or less when the fd limit
 * (RLIMIT_NOFILE minus a headroom for health checks, exporters and files)
 * is lower. */
size_t pg_httpd_connection_cap(const struct pg_httpd *s);
/* Connection: close on every later answer (shutdown). */
void pg_httpd_set_draining(struct pg_httpd *s);

/* Answers @r: @code, the headers in r->out, and for codes other than 204
 * and 304 a text/plain body "@text\n" (@text NULL = empty). Once per request. */
void pg_httpd_reply(struct pg_httpd_req *r, int code, const char *text);
/* The same with any body and content type (@ctype NULL = none). */
void pg_httpd_reply_body(struct pg_httpd_req *r, int code, const char *ctype, const void *body,
                         size_t len);
/* The same, taking @body (malloc'd): what the socket does not take at once
 * is sent from it in place, not copied, and it is freed when written (or
 * now). For large pages rendered off the loop. */
void pg_httpd_reply_take(struct pg_httpd_req *r, int code, const char *ctype, char *body,
                         size_t len);

/* Bodies up to this size are read into a pooled per-connection buffer.
 * A handler that goes on working on a larger body after on_request returns
 * may copy it into memory of its own and call pg_httpd_drop_body, so the
 * server's copy is not held until the answer (large uploads' peak RSS). */
#define PG_HTTPD_POOLED_BODY (16 * 1024)
/* From on_request only, on the loop's thread: the server frees @r's body
 * buffer now (bytes pipelined behind the body are kept); r->body becomes
 * NULL. */
void pg_httpd_drop_body(struct pg_httpd_req *r);

/* True when the client has closed its side (checked on the socket, for
 * requests waiting on a worker). */
bool pg_httpd_client_gone(const struct pg_httpd_req *r);

#endif
