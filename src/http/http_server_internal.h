/* SPDX-License-Identifier: Apache-2.0
 * What the HTTP/1.1 server's files share: the server and connection structs
 * and the few inline helpers every phase uses (reads on/off, the deadline).
 * Calls go one way, down this list (each file's header names what it offers
 * the ones above it):
 *   http_server.c  the connection's life: events, state machine, deadlines,
 *                  the server and its connections (accepted by http/acceptor)
 *   httpd_read.c   one request in: head, Content-Length/chunked body,
 *                  refusals, the linger drain; returns a step to the caller
 *   httpd_reply.c  answers: status line and head, held answers, writev
 *   httpd_input.c  the flat input buffer, its spares, socket reads
 * Everything here is the loop thread's (the acceptor's shared block aside). */
#ifndef PG_HTTP_HTTP_SERVER_INTERNAL_H
#define PG_HTTP_HTTP_SERVER_INTERNAL_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/keyvalq_struct.h>

#include "core/clock.h"
#include "http/acceptor.h"
#include "http/conn_limits.h"
#include "http/http_parse.h"
#include "http/http_server.h"

/* Plain TCP reads itself (one readv() of up to read_max bytes, where the
 * bufferevent asked FIONREAD and read 4 KiB at a time); TLS keeps the
 * bufferevent's (the filter reads records). This is a head's read size. */
#define HTTPD_HEAD_READ_BYTES (16 * 1024)
/* Single read size for large bodies and for draining a refused upload (the
 * bufferevent default is 16 KiB): a 4 MB body then costs the loop 16
 * wakeups, read()s and deadline updates instead of 256. */
#define HTTPD_BULK_READ_BYTES (256 * 1024)
/* The input buffer's standard size (a head, a push of a few KiB), and how
 * many empty ones a server keeps for its connections to share. */
#define HTTPD_IN_BUF_BYTES HTTPD_HEAD_READ_BYTES
#define HTTPD_IN_SPARES 32
/* Answers up to this size (a 204, a refusal's line) are held and sent
 * together once the loop has run every ready connection (on_flush). */
#define HTTPD_ANSWER_HOLD_BYTES 512

enum conn_state { S_HEAD = 0, S_BODY, S_CALL, S_WRITE, S_LINGER };

/* Lives in its connection and is reused by each of its requests: between
 * requests nothing in it is valid. */
struct req_priv {
    struct pg_httpd_req pub;
    struct evkeyvalq in, out; /* in: slots in the connection's head buffer; out: evhttp's */
    struct pg_http_head h;
    bool answered;
};

struct pg_httpd_conn {
    struct pg_httpd *srv;
    struct pg_httpd_conn *prev, *next; /* srv->conns */
    struct bufferevent *bev;
    evutil_socket_t fd;
    struct event *timer;
    struct event *written_ev; /* WRITE: the answer went out at once (plain TCP) */
    struct event *read_ev;    /* plain TCP: reads, instead of the bufferevent's */
    int read_max;             /* plain TCP: bytes per read() */
    int last_read;            /* plain TCP: what the last read() got */
    struct pg_peer_key key;
    char addr[INET6_ADDRSTRLEN];
    unsigned port;
    char peer[INET6_ADDRSTRLEN + 10];
    bool ss_family_ip;     /* peer is "addr:port" (else "unix") */
    enum conn_state state;
    bool started;          /* HEAD: a byte of this request arrived */
    bool close_after;      /* WRITE: close (or linger) once written */
    bool linger;           /* WRITE: the body was left unread */
    bool body_done;
    size_t scanned;        /* HEAD: bytes already searched for the blank line */
    double req_start, body_start, deadline;
    double armed;          /* when the timer fires (0 = not pending): see httpd_set_deadline */
    uint64_t body_got, lingered;
    unsigned n_requests;
    struct pg_http_chunked ch;
    struct req_priv *req;  /* &rq while a request is on, else NULL */
    struct req_priv rq;
    /* owned: the input buffer (NULL while none is needed), laid out as
     *   [0, body_off)                    consumed
     *   [body_off, body_off + body_got)  BODY..: the body so far (chunked: data only)
     *   [in_off, in_len)                 read, not parsed yet
     * An empty standard-size one goes back to the server's spares between
     * requests, so waiting connections hold none. One of PG_BUFPOOL_MIN or
     * more (a large body) comes from core/bufpool and goes back there
     * (in_pooled), its first in_hwm bytes written. */
    char *in;
    size_t in_cap, in_off, in_len, body_off, in_hwm;
    bool in_pooled;
    struct pg_httpd_conn *flush_next; /* srv->flush list while an answer waits in @ans */
    bool flush_queued;
    size_t ans_len;
    char ans[HTTPD_ANSWER_HOLD_BYTES]; /* an answer held for the loop's flush (plain TCP) */
    char *hbuf;            /* owned: header slots, head bytes, path (httpd_read.c) */
    size_t hcap;
};

/* Siblings are allocated together and each written per request by its own
 * loop: each on cache lines of its own. */
#define HTTPD_LINE 64

struct pg_httpd {
    _Alignas(HTTPD_LINE) struct pg_acceptor acc; /* the listening socket, caps shared by siblings */
    struct event_base *base;
    SSL_CTX *ssl_ctx;
    struct pg_httpd_limits lim;
    struct pg_httpd_ops ops;
    void *arg;
    struct pg_httpd_conn *conns;
    /* Connections whose answer waits in their @ans, oldest first, and the
     * event that sends them once the loop ran every ready connection. */
    struct pg_httpd_conn *flush_head, **flush_tail;
    struct event *flush_ev;
    char *spares[HTTPD_IN_SPARES]; /* owned: empty input buffers of HTTPD_IN_BUF_BYTES */
    size_t n_spares;
    size_t open; /* this server's connections (loop thread) */
    uint64_t accepted; /* atomic: connections this server accepted */
    bool draining;
};

static inline double httpd_ns_s(int64_t ns)
{
    return (double)ns / 1e9;
}

/* Bytes read and not parsed yet. */
static inline size_t httpd_in_have(const struct pg_httpd_conn *c)
{
    return c->in_len - c->in_off;
}

static inline void httpd_read_on(struct pg_httpd_conn *c)
{
    if (c->read_ev != NULL) {
        event_add(c->read_ev, NULL);
    } else {
        bufferevent_enable(c->bev, EV_READ);
    }
}

static inline void httpd_read_off(struct pg_httpd_conn *c)
{
    if (c->read_ev != NULL) {
        event_del(c->read_ev);
    } else {
        bufferevent_disable(c->bev, EV_READ);
    }
}

/* Bytes per read; 0 = the default. */
static inline void httpd_read_size(struct pg_httpd_conn *c, int n)
{
    if (c->read_ev != NULL) {
        c->read_max = n > 0 ? n : HTTPD_HEAD_READ_BYTES;
    } else {
        (void)bufferevent_set_max_single_read(c->bev, (size_t)n);
    }
}

/* The phase's deadline (monotonic seconds, 0 = none). The timer is moved
 * only when a deadline comes earlier than the one it is armed for: a later
 * one (or none) waits for it to fire, and the timer's callback then re-arms
 * it or does nothing. A request then costs no timer changes (it set four:
 * header, body, none, idle). */
static inline void httpd_set_deadline(struct pg_httpd_conn *c, double at)
{
    c->deadline = at;
    if (at > 0 && (c->armed <= 0 || at < c->armed)) {
        struct timeval tv = pg_ns_to_tv((int64_t)((at - pg_mono_s()) * 1e9));

        c->armed = at;
        evtimer_add(c->timer, &tv);
    }
}

#endif
