/* SPDX-License-Identifier: Apache-2.0
 * HTTP/1.1 server on bufferevents (see http_server.h): the connection's life
 * and the server that holds the connections. Each connection is a small
 * state machine with one deadline timer:
 *   HEAD  - waiting for / reading a request head (idle or header deadline)
 *   BODY  - reading the body (read_timeout, minimum rate)
 *   CALL  - the handler has the request; nothing is read (pipelined bytes
 *           wait in the socket)
 *   WRITE - the answer is being written (write_timeout)
 *   LINGER- a refusal was sent with the body unread: our side is shut, what
 *           still arrives is dropped unbuffered for a moment so the client
 *           reads the answer instead of a reset, then the socket closes.
 * This file owns the events (socket reads, writes, the timer, the flush of
 * held answers) and moves the machine; the phases below it never call back
 * (http_server_internal.h has the order): httpd_read.c reads a request and
 * says what comes next, httpd_reply.c answers, httpd_input.c holds the
 * bytes, http/acceptor.c accepts under the caps. The connection owns its
 * request; the handler borrows it between on_head and on_done. Loop thread
 * only. */
#include "http/http_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "http/http_request.h"
#include "http/http_server_internal.h"
#include "http/httpd_input.h"
#include "http/httpd_read.h"
#include "http/httpd_reply.h"
#include "http/tls.h"

/* How long a refused upload is drained after its answer (see LINGER). */
#define LINGER_S 1.0

const char *const pg_httpd_event_names[] = {
    "max_connections", "per_peer", "accept_error", "read_header_timeout",
    "read_timeout",    "min_body_rate", "write_timeout", "idle_timeout",
};
_Static_assert(sizeof(pg_httpd_event_names) / sizeof(pg_httpd_event_names[0]) == PG_HTTPD_N_EVENTS,
               "one name per event");

static void process(struct pg_httpd_conn *c);
static void conn_close(struct pg_httpd_conn *c);

static void event_report(struct pg_httpd *s, int ev, const char *peer)
{
    if (s->ops.on_conn_event != NULL) {
        s->ops.on_conn_event(ev, peer, s->arg);
    }
}

/* ---- deadlines --------------------------------------------------------- */

static void idle_deadline(struct pg_httpd_conn *c, bool first)
{
    const struct pg_httpd_limits *l = &c->srv->lim;
    int64_t t = first && l->read_header_timeout_ns > 0 ? l->read_header_timeout_ns
                                                       : l->idle_timeout_ns;

    if (t <= 0) {
        t = l->read_header_timeout_ns;
    }
    httpd_set_deadline(c, t > 0 ? pg_mono_s() + httpd_ns_s(t) : 0);
}

/* The deadline judges the client, not the loop's backlog: bytes the client
 * sent in time may still sit in the socket because the loop was busy. Reads
 * them now (plain TCP, bounded by what the phase may still take) and runs
 * the state machine; true when the phase is over. */
static bool catch_up(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;
    size_t open_before = s->open;
    enum conn_state before = c->state;
    uint64_t got = c->body_got;
    size_t room;

    if (s->ssl_ctx != NULL) {
        return false;
    }
    if (before == S_HEAD) {
        size_t have = httpd_in_have(c);

        room = have < s->lim.max_header_bytes + 1 ? s->lim.max_header_bytes + 1 - have : 0;
    } else if (c->req != NULL && !c->req->h.chunked &&
               c->req->h.content_length != PG_HTTP_NO_LENGTH) {
        room = (size_t)(c->req->h.content_length - c->body_got);
    } else {
        room = (size_t)s->lim.max_body;
    }
    while (room > 0) {
        int n = httpd_sock_read(c, room > HTTPD_BULK_READ_BYTES ? HTTPD_BULK_READ_BYTES
                                                                : (int)room);

        if (n <= 0) {
            break;
        }
        room -= (size_t)n;
    }
    process(c);
    if (s->open < open_before) {
        return true; /* closed on the way (out of memory): @c is gone */
    }
    return c->state != before ||
           (before == S_BODY && c->body_got != got && c->deadline > pg_mono_s()) ||
           (before == S_HEAD && c->req != NULL);
}

/* A phase's deadline passed: the server's 408 (plain TCP), the event, the close. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct pg_httpd_conn *c = arg;
    struct pg_httpd *s = c->srv;
    char why[160];
    int ev;

    (void)fd;
    (void)what;
    c->armed = 0;
    if (c->deadline <= 0) {
        return; /* none any more */
    }
    if (pg_mono_s() + 0.0005 < c->deadline) {
        httpd_set_deadline(c, c->deadline); /* moved later meanwhile */
        return;
    }
    if ((c->state == S_HEAD && c->started) || c->state == S_BODY) {
        if (catch_up(c)) {
            return;
        }
    }
    switch (c->state) {
    case S_HEAD:
        if (!c->started) {
            event_report(s, PG_HTTPD_CLOSED_IDLE, c->peer);
            break;
        }
        snprintf(why, sizeof(why), "request head not complete within read_header_timeout (%.3g s)",
                 httpd_ns_s(s->lim.read_header_timeout_ns));
        httpd_raw_answer(s, c->fd, 408, why);
        event_report(s, PG_HTTPD_CLOSED_HEADER_TIMEOUT, c->peer);
        s->ops.on_answer(c->req ? &c->req->pub : NULL, 408, why, c->peer, s->arg);
        break;
    case S_BODY:
        ev = s->lim.read_timeout_ns > 0 &&
                     pg_mono_s() + 0.001 >= c->req_start + httpd_ns_s(s->lim.read_timeout_ns)
                 ? PG_HTTPD_CLOSED_READ_TIMEOUT
                 : PG_HTTPD_CLOSED_BODY_RATE;
        if (ev == PG_HTTPD_CLOSED_READ_TIMEOUT) {
            snprintf(why, sizeof(why), "request body not complete within read_timeout (%.3g s)",
                     httpd_ns_s(s->lim.read_timeout_ns));
        } else {
            snprintf(why, sizeof(why), "request body slower than min_body_rate (%llu bytes/s)",
                     (unsigned long long)s->lim.min_body_rate);
        }
        httpd_raw_answer(s, c->fd, 408, why);
        event_report(s, ev, c->peer);
        s->ops.on_answer(c->req ? &c->req->pub : NULL, 408, why, c->peer, s->arg);
        break;
    case S_WRITE:
        event_report(s, PG_HTTPD_CLOSED_WRITE_TIMEOUT, c->peer);
        break;
    case S_LINGER:
    case S_CALL:
        break;
    }
    conn_close(c);
}

/* ---- the state machine ------------------------------------------------- */

/* The request is whole: the handler has it. Reading stops while it holds
 * the request (answered later, from a worker); one answered already keeps
 * it on, saving two epoll changes per request. */
static void request_ready(struct pg_httpd_conn *c)
{
    c->srv->ops.on_request(&c->req->pub, c->srv->arg);
    if (c->state == S_CALL) {
        httpd_read_off(c);
    }
}

/* Runs the state machine over what is buffered. */
static void process(struct pg_httpd_conn *c)
{
    for (;;) {
        enum httpd_step step;

        switch (c->state) {
        case S_HEAD:
            step = httpd_read_head(c);
            break;
        case S_BODY:
            step = httpd_read_body(c);
            break;
        case S_LINGER:
            if (!httpd_linger_read(c)) {
                conn_close(c);
            }
            return;
        default:
            return;
        }
        switch (step) {
        case HTTPD_STEP_NEXT:
            continue; /* a body that came with its head is taken now */
        case HTTPD_STEP_REQUEST:
            request_ready(c);
            return;
        case HTTPD_STEP_CLOSE:
            conn_close(c);
            return;
        case HTTPD_STEP_WAIT:
            return;
        }
    }
}

/* The answer is out: next request, linger, or close. */
static void written(struct pg_httpd_conn *c)
{
    httpd_req_end(c);
    if (c->close_after) {
        if (c->linger && c->srv->ssl_ctx == NULL) {
            c->state = S_LINGER;
            httpd_read_size(c, HTTPD_BULK_READ_BYTES);
            shutdown(c->fd, SHUT_WR);
            httpd_set_deadline(c, pg_mono_s() + LINGER_S);
            httpd_read_on(c);
            if (!httpd_linger_read(c)) {
                conn_close(c);
            }
            return;
        }
        conn_close(c);
        return;
    }
    c->state = S_HEAD;
    c->started = false;
    httpd_read_size(c, 0); /* the default again */
    idle_deadline(c, false);
    httpd_read_on(c);
    if (httpd_in_have(c) > 0) {
        process(c); /* pipelined */
    } else {
        httpd_in_release(c);
    }
}

/* Sends the held answers. It runs after every connection the loop found
 * ready (each answered one is queued while the others are read), so a
 * client with several connections is woken once for all their answers
 * rather than once per answer: on a busy gateway that shares its cores
 * with its clients, each wakeup also preempts a loop. An answer the socket
 * does not take whole goes to the output buffer as usual. */
static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct pg_httpd *s = arg;
    struct pg_httpd_conn *c;

    (void)fd;
    (void)what;
    while ((c = httpd_flush_next(s)) != NULL) {
        if (httpd_flush_send(c)) {
            written(c);
        }
    }
}

/* ---- connection events ------------------------------------------------- */

/* TLS: what the bufferevent decrypted moves to the input buffer. */
static void on_read(struct bufferevent *bev, void *arg)
{
    struct pg_httpd_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    if (evbuffer_get_length(in) == 0) {
        return;
    }
    if (!httpd_in_from_evbuffer(c, in)) {
        conn_close(c);
        return;
    }
    process(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct pg_httpd_conn *c = arg;

    if (evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
        return;
    }
    /* Off again, so the next answer's bytes do not arm the write event
     * before pg_httpd_reply_body tries to write them at once. */
    bufferevent_disable(bev, EV_WRITE);
    if (c->state == S_WRITE) {
        written(c);
    }
}

static void on_written(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    written(arg);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct pg_httpd_conn *c = arg;

    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
        /* A request the handler holds stays until it answers: only then can
         * the connection go (its answer will fail to write). */
        if (c->state == S_CALL ||
            (c->state == S_WRITE &&
             (c->flush_queued || event_pending(c->written_ev, EV_WRITE, NULL)))) {
            httpd_read_off(c);
            return;
        }
        conn_close(c); /* half a request then EOF: nothing to answer */
    }
}

/* Plain TCP: the socket is readable. */
static void on_sock_read(evutil_socket_t fd, short what, void *arg)
{
    struct pg_httpd_conn *c = arg;
    int n;

    (void)fd;
    (void)what;
    n = httpd_sock_read_next(c);
    if (n > 0) {
        process(c);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return;
    }
    /* As the bufferevent would: reading stops, then the event decides. */
    httpd_read_off(c);
    on_event(c->bev, BEV_EVENT_READING | (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR), c);
}

/* ---- connections ------------------------------------------------------- */

static void conn_close(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;

    httpd_req_end(c);
    httpd_flush_unlink(c);
    if (c->timer != NULL) {
        event_free(c->timer);
    }
    if (c->written_ev != NULL) {
        event_free(c->written_ev);
    }
    if (c->read_ev != NULL) {
        event_free(c->read_ev);
    }
    httpd_in_free(c);
    free(c->hbuf);
    if (c->bev != NULL) {
        bufferevent_free(c->bev); /* closes the fd */
    } else if (c->fd >= 0) {
        close(c->fd);
    }
    pg_acceptor_uncount(&s->acc, &c->key);
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        s->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    s->open--;
    free(c);
}

/* @addr, @port and @peer ("addr:port", "[v6]:port" or "unix") of an
 * accepted peer; true for an IP peer. */
static bool format_peer(const struct sockaddr_storage *ss, char addr[INET6_ADDRSTRLEN],
                        unsigned *port, char peer[INET6_ADDRSTRLEN + 10])
{
    bool ip = true;

    *port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

        inet_ntop(AF_INET, &a->sin_addr, addr, INET6_ADDRSTRLEN);
        *port = ntohs(a->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

        inet_ntop(AF_INET6, &a->sin6_addr, addr, INET6_ADDRSTRLEN);
        *port = ntohs(a->sin6_port);
    } else {
        snprintf(addr, INET6_ADDRSTRLEN, "unix");
        ip = false;
    }
    if (ip) {
        pg_http_hostport(peer, INET6_ADDRSTRLEN + 10, addr, *port);
    } else {
        snprintf(peer, INET6_ADDRSTRLEN + 10, "unix");
    }
    return ip;
}

/* The acceptor's on_conn: @fd, counted, becomes a connection. */
static void conn_new(void *arg, int fd, const struct sockaddr_storage *ss,
                     const struct pg_peer_key *key)
{
    struct pg_httpd *s = arg;
    struct pg_httpd_conn *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        pg_acceptor_uncount(&s->acc, key);
        close(fd);
        return;
    }
    c->srv = s;
    c->fd = fd;
    c->key = *key;
    c->ss_family_ip = format_peer(ss, c->addr, &c->port, c->peer);
    c->next = s->conns;
    if (s->conns != NULL) {
        s->conns->prev = c;
    }
    s->conns = c;
    s->open++;
    __atomic_add_fetch(&s->accepted, 1, __ATOMIC_RELAXED);
    if (s->ssl_ctx != NULL) {
        c->bev = pg_tls_server_bev(s->base, fd, s->ssl_ctx);
    } else {
        c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    c->timer = evtimer_new(s->base, on_timer, c);
    c->written_ev = event_new(s->base, -1, 0, on_written, c);
    if (s->ssl_ctx == NULL) {
        c->read_max = HTTPD_HEAD_READ_BYTES;
        c->read_ev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_sock_read, c);
    }
    if (c->bev == NULL || c->timer == NULL || c->written_ev == NULL ||
        (s->ssl_ctx == NULL && c->read_ev == NULL)) {
        conn_close(c);
        return;
    }
    if (s->ops.on_conn_open != NULL) {
        s->ops.on_conn_open(s->arg);
    }
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    bufferevent_disable(c->bev, EV_WRITE); /* armed only for an answer not written at once */
    httpd_read_on(c);
    c->state = S_HEAD;
    idle_deadline(c, true);
}

/* The acceptor's on_refused: a 503 saying which cap (plain TCP), and the event. */
static void conn_refused(void *arg, int fd, const struct sockaddr_storage *ss,
                         enum pg_accept_refusal why)
{
    struct pg_httpd *s = arg;
    char addr[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN + 10];
    unsigned port;

    (void)format_peer(ss, addr, &port, peer);
    if (why == PG_ACCEPT_REFUSED_PER_PEER) {
        httpd_raw_answer(s, fd, 503, "too many connections from this peer "
                                     "(max_connections_per_peer); retry later");
        event_report(s, PG_HTTPD_REFUSED_PER_PEER, peer);
    } else {
        httpd_raw_answer(s, fd, 503, "too many connections (max_connections); retry later");
        event_report(s, PG_HTTPD_REFUSED_MAX_CONNECTIONS, peer);
    }
}

static void accept_paused(void *arg, int err)
{
    event_report(arg, PG_HTTPD_ACCEPT_PAUSED, strerror(err));
}

/* ---- the server -------------------------------------------------------- */

static const struct pg_accept_ops httpd_accept_ops = {
    .on_conn = conn_new,
    .on_refused = conn_refused,
    .on_paused = accept_paused,
};

static struct pg_httpd *server_new(struct pg_httpd *first, struct event_base *base, int fd,
                                   SSL_CTX *ssl_ctx, const struct pg_httpd_limits *lim,
                                   const struct pg_httpd_ops *ops, void *arg)
{
    struct pg_httpd *s = aligned_alloc(HTTPD_LINE, sizeof(*s));
    struct pg_accept_limits al = {
        .max_connections = lim->max_connections,
        .max_per_peer = lim->max_connections_per_peer,
    };
    bool ok;

    if (s == NULL) {
        close(fd);
        return NULL;
    }
    memset(s, 0, sizeof(*s));
    s->base = base;
    s->ssl_ctx = ssl_ctx;
    s->lim = *lim;
    s->ops = *ops;
    s->arg = arg;
    s->flush_tail = &s->flush_head;
    s->flush_ev = event_new(base, -1, 0, on_flush, s);
    /* Last: accepting starts here. */
    ok = pg_acceptor_init(&s->acc, first != NULL ? &first->acc : NULL, base, fd, &al,
                          &httpd_accept_ops, s);
    if (!ok || s->flush_ev == NULL) {
        pg_httpd_free(s);
        return NULL;
    }
    return s;
}

struct pg_httpd *pg_httpd_new(struct event_base *base, int fd, SSL_CTX *ssl_ctx,
                              const struct pg_httpd_limits *lim, const struct pg_httpd_ops *ops,
                              void *arg)
{
    return server_new(NULL, base, fd, ssl_ctx, lim, ops, arg);
}

struct pg_httpd *pg_httpd_new_sibling(struct pg_httpd *first, struct event_base *base, int fd,
                                      void *arg)
{
    return server_new(first, base, fd, first->ssl_ctx, &first->lim, &first->ops, arg);
}

void pg_httpd_stop_accepting(struct pg_httpd *s)
{
    if (s == NULL || pg_acceptor_fd(&s->acc) < 0) {
        return;
    }
    pg_acceptor_stop(&s->acc);
    s->draining = true;
    /* Idle keep-alive connections have nothing left to do. */
    for (struct pg_httpd_conn *c = s->conns, *next; c != NULL; c = next) {
        next = c->next;
        if (c->state == S_HEAD && !c->started) {
            conn_close(c);
        }
    }
}

void pg_httpd_set_draining(struct pg_httpd *s)
{
    if (s != NULL) {
        s->draining = true;
    }
}

void pg_httpd_free(struct pg_httpd *s)
{
    if (s == NULL) {
        return;
    }
    pg_httpd_stop_accepting(s);
    /* Answers given since the loop last ran (a shutdown's 503s) go out
     * before their connections close, as far as the sockets take them;
     * nothing else runs (no pipelined request): the loop will not run again. */
    httpd_flush_abandon(s);
    while (s->conns != NULL) {
        conn_close(s->conns);
    }
    if (s->flush_ev != NULL) {
        event_free(s->flush_ev);
    }
    httpd_in_spares_free(s);
    pg_acceptor_fini(&s->acc);
    free(s);
}

int pg_httpd_fd(const struct pg_httpd *s)
{
    return s != NULL ? pg_acceptor_fd(&s->acc) : -1;
}

size_t pg_httpd_open_connections(const struct pg_httpd *s)
{
    return s != NULL ? s->open : 0;
}

uint64_t pg_httpd_accepted(const struct pg_httpd *s)
{
    return s != NULL ? __atomic_load_n(&s->accepted, __ATOMIC_RELAXED) : 0;
}

size_t pg_httpd_connection_cap(const struct pg_httpd *s)
{
    return s != NULL ? s->acc.cap : 0;
}
