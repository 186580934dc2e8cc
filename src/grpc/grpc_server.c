/* SPDX-License-Identifier: Apache-2.0
 * The unary gRPC server's connections: accepted by http/acceptor under the
 * caps siblings share, plain or TLS (ALPN h2) bufferevents, one nghttp2
 * server session each through the h2/ pump with nghttp2's flood limits, and
 * the connection timers (handshake, keepalive PINGs, max_connection_idle /
 * age / age_grace via GOAWAY). What the client sends is grpc_session.c's. */
#include "grpc/grpc_server_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "grpc/grpc_server_test.h"
#include "http/http_request.h"
#include "http/tls.h"

#define ACCEPT_BATCH 32
#define SEC_NS 1000000000LL
#define DEFAULT_STREAMS 100
#define DEFAULT_HEADER_LIST (16u << 10)
#define DEFAULT_HANDSHAKE_NS (10 * SEC_NS)
#define DEFAULT_KA_TIME_NS (2LL * 3600 * SEC_NS)
#define DEFAULT_KA_TIMEOUT_NS (20 * SEC_NS)
#define DEFAULT_MIN_PING_NS (300 * SEC_NS)
/* The final GOAWAY waits this long for the drain PING's ACK at most. */
#define DRAIN_PING_WAIT_NS (1 * SEC_NS)
/* Flow control: DATA is consumed as it arrives (copied into the capped
 * reader or dropped), so windows only pace the client. */
#define STREAM_WINDOW (1 << 20)
#define CONN_WINDOW (8 << 20)
/* Plain TCP reads: one recv() of up to this much (several SDK calls of all
 * of a client's streams), at most READS_PER_PASS of them per loop pass so
 * one busy connection does not starve the others. */
#define RBUF_BYTES (128u << 10)
#define READS_PER_PASS 4

const char *const pg_grpc_server_event_names[] = {
    "max_connections",   "per_peer",          "accept_paused",
    "handshake_timeout", "idle",              "age",
    "keepalive_timeout", "too_many_pings",    "protocol",
};
_Static_assert(sizeof(pg_grpc_server_event_names) / sizeof(pg_grpc_server_event_names[0]) ==
                   PG_GRPC_N_EVENTS,
               "one name per event");

static void server_event(struct pg_grpc_server *s, int ev, const char *peer)
{
    if (s->ops.on_conn_event != NULL) {
        s->ops.on_conn_event(ev, peer, s->arg);
    }
}

/* ---- closing -------------------------------------------------------------- */

static void conn_close(struct gconn *c)
{
    struct pg_grpc_server *s = c->srv;

    if (c->close_event >= 0) {
        server_event(s, c->close_event, c->peer);
    }
    while (c->calls != NULL) {
        grpc_call_end(c->calls);
    }
    pg_h2_end(&c->h2);
    if (c->read_ev != NULL) {
        event_free(c->read_ev); /* before the bufferevent closes the socket */
    }
    if (c->bev != NULL) {
        bufferevent_free(c->bev);
    }
    if (c->hs_ev != NULL) {
        event_free(c->hs_ev);
    }
    if (c->ka_ev != NULL) {
        event_free(c->ka_ev);
    }
    if (c->idle_ev != NULL) {
        event_free(c->idle_ev);
    }
    if (c->age_ev != NULL) {
        event_free(c->age_ev);
    }
    if (c->defer_ev != NULL) {
        event_free(c->defer_ev);
    }
    if (c->goaway_ev != NULL) {
        event_free(c->goaway_ev);
    }
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        s->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    s->n_conns--;
    if (c->counted) {
        pg_acceptor_uncount(&s->acc, &c->key);
    }
    free(c);
}

/* Writes what nghttp2 queued; closes the connection once it is finished
 * (GOAWAY both ways, nghttp2's own termination, or ours) and written. */
static void conn_flush(struct gconn *c)
{
    struct pg_status st;

    if (c->h2.in_recv || c->h2.in_send) {
        return;
    }
    pg_status_clear(&st);
    /* Plain TCP: nghttp2 stops at the output's high-water mark; while the
     * socket takes it all it goes on (nothing else would wake it: the
     * bufferevent's write event is on only while output waits). */
    for (;;) {
        bool produced;

        if (c->h2.ng != NULL && pg_h2_send(&c->h2, &st) != PG_ERR_OK) {
            pg_log_debug("grpc", "%s: %s", c->peer, pg_status_text(&st));
            if (c->close_event < 0) {
                c->close_event = PG_GRPC_CLOSED_PROTOCOL;
            }
            conn_close(c);
            return;
        }
        if (c->read_ev == NULL) {
            break;
        }
        produced = pg_h2_out_pending(&c->h2) > 0;
        if (pg_h2_write_fd(&c->h2, &st) != PG_ERR_OK) {
            pg_log_debug("grpc", "%s: %s", c->peer, pg_status_text(&st));
            conn_close(c); /* the peer is gone (EPIPE, ECONNRESET) */
            return;
        }
        /* A pass that made nothing ends it too: want_write alone could
         * stay true for a frame nghttp2 cannot send yet. */
        if (!produced || pg_h2_out_pending(&c->h2) > 0 || c->h2.ng == NULL ||
            !nghttp2_session_want_write(c->h2.ng)) {
            break;
        }
    }
    if (c->h2.ng != NULL && !c->closing && !pg_h2_finished(&c->h2)) {
        return;
    }
    if (c->h2.ng == NULL && !c->closing) {
        return; /* TLS handshake still running */
    }
    if (pg_h2_out_pending(&c->h2) == 0) {
        conn_close(c);
        return;
    }
    /* The last frames (GOAWAY) go out first; on_write closes at empty. */
    c->closing = true;
    if (c->read_ev != NULL) {
        event_del(c->read_ev);
    }
    bufferevent_disable(c->bev, EV_READ);
    bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
    bufferevent_enable(c->bev, EV_WRITE);
}

/* Graceful end in two steps, as grpc-go and nghttp2 advise: a shutdown
 * notice (GOAWAY with the highest stream id) and a PING; its ACK proves the
 * client saw the notice, and the final GOAWAY then names the last stream
 * taken, so no call the client sent in between is lost. */
static void conn_goaway(struct gconn *c, int event)
{
    struct timeval tv = pg_ns_to_tv(DRAIN_PING_WAIT_NS);

    if (c->goaway || c->h2.ng == NULL) {
        return;
    }
    c->goaway = true;
    if (c->close_event < 0) {
        c->close_event = event;
    }
    if (nghttp2_submit_shutdown_notice(c->h2.ng) != 0 ||
        nghttp2_submit_ping(c->h2.ng, NGHTTP2_FLAG_NONE, (const uint8_t *)GRPC_DRAIN_PING) != 0) {
        grpc_session_final_goaway(c);
    } else {
        evtimer_add(c->goaway_ev, &tv);
    }
    conn_flush(c);
}

static void on_goaway_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct gconn *c = arg;

    (void)fd;
    (void)what;
    grpc_session_final_goaway(c);
    conn_flush(c);
}

/* ---- timers --------------------------------------------------------------- */

static void on_handshake_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct gconn *c = arg;

    (void)fd;
    (void)what;
    c->close_event = PG_GRPC_CLOSED_HANDSHAKE_TIMEOUT;
    conn_close(c);
}

static void on_ping_timeout(void *owner)
{
    struct gconn *c = owner;

    c->close_event = PG_GRPC_CLOSED_KEEPALIVE_TIMEOUT;
    conn_close(c);
}

/* grpc-go's keepalive loop: a PING after `time` without reading anything. */
static void on_keepalive(evutil_socket_t fd, short what, void *arg)
{
    struct gconn *c = arg;
    const struct pg_grpc_server_limits *lim = &c->srv->lim;
    struct timeval tv;

    (void)fd;
    (void)what;
    if (c->last_read_ns > c->ka_seen_ns) {
        int64_t left = c->last_read_ns + lim->keepalive_time_ns - pg_mono_ns();

        c->ka_seen_ns = c->last_read_ns;
        tv = pg_ns_to_tv(left > 0 ? left : 1);
        evtimer_add(c->ka_ev, &tv);
        return;
    }
    if (pg_h2_ping(&c->h2, lim->keepalive_timeout_ns)) {
        conn_flush(c);
    }
    tv = pg_ns_to_tv(lim->keepalive_time_ns);
    evtimer_add(c->ka_ev, &tv);
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    struct gconn *c = arg;
    int64_t idle = c->srv->lim.max_connection_idle_ns;
    int64_t left = idle;
    struct timeval tv;

    (void)fd;
    (void)what;
    if (c->idle_since_ns != 0) {
        left = c->idle_since_ns + idle - pg_mono_ns();
        if (left <= 0) {
            conn_goaway(c, PG_GRPC_CLOSED_IDLE);
            return;
        }
    }
    tv = pg_ns_to_tv(left);
    evtimer_add(c->idle_ev, &tv);
}

static void on_age(evutil_socket_t fd, short what, void *arg)
{
    struct gconn *c = arg;
    int64_t grace = c->srv->lim.max_connection_age_grace_ns;

    (void)fd;
    (void)what;
    if (c->age_fired) {
        c->close_event = PG_GRPC_CLOSED_AGE;
        conn_close(c);
        return;
    }
    c->age_fired = true;
    if (grace > 0) {
        struct timeval tv = pg_ns_to_tv(grace);

        evtimer_add(c->age_ev, &tv);
    }
    conn_goaway(c, PG_GRPC_CLOSED_AGE);
}

static void on_defer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_flush(arg);
}

/* ---- the session ---------------------------------------------------------- */

static bool session_start(struct gconn *c)
{
    struct pg_grpc_server *s = c->srv;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->lim.max_concurrent_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)s->lim.max_header_list_size},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW},
    };
    struct pg_h2_params p = {
        .server = true,
        .option = s->opt,
        .settings = iv,
        .n_settings = sizeof(iv) / sizeof(iv[0]),
        .conn_window = CONN_WINDOW,
        .on_ping_timeout = on_ping_timeout,
    };
    struct pg_status st;
    struct timeval tv;
    int64_t now = pg_mono_ns();

    pg_status_clear(&st);
    if (pg_h2_start(&c->h2, c->bev, s->cbs, &p, c, &st) != PG_ERR_OK) {
        pg_log_warn("grpc", "%s: cannot start an HTTP/2 session: %s", c->peer,
                    pg_status_text(&st));
        return false;
    }
    c->last_read_ns = c->ka_seen_ns = now;
    c->idle_since_ns = now;
    tv = pg_ns_to_tv(s->lim.keepalive_time_ns);
    evtimer_add(c->ka_ev, &tv);
    if (s->lim.max_connection_idle_ns > 0) {
        tv = pg_ns_to_tv(s->lim.max_connection_idle_ns);
        evtimer_add(c->idle_ev, &tv);
    }
    if (s->lim.max_connection_age_ns > 0) {
        /* +-10 % as grpc-go, so connections made together do not all
         * reconnect together. */
        int64_t age = s->lim.max_connection_age_ns;
        uint64_t x = (uint64_t)now ^ (uint64_t)(uintptr_t)c;

        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        age += (int64_t)(x % 2001) * (age / 10) / 1000 - age / 10;
        tv = pg_ns_to_tv(age);
        evtimer_add(c->age_ev, &tv);
    }
    return true;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct gconn *c = arg;
    struct pg_status st;

    (void)bev;
    if (c->closing) {
        evbuffer_drain(bufferevent_get_input(c->bev), SIZE_MAX);
        return;
    }
    if (c->h2.ng == NULL) {
        return; /* TLS up but the session not yet: on_event feeds it */
    }
    c->last_read_ns = pg_mono_ns();
    pg_status_clear(&st);
    if (pg_h2_recv(&c->h2, &st) != PG_ERR_OK) {
        /* A bad preface (HTTP/1.1, garbage), a frame error or a flood. */
        pg_log_debug("grpc", "%s: %s", c->peer, pg_status_text(&st));
        c->close_event = PG_GRPC_CLOSED_PROTOCOL;
        conn_close(c);
        return;
    }
    conn_flush(c);
}

/* Plain TCP: recv() straight into the server's buffer and on to nghttp2.
 * What the calls answered goes out from defer_ev, after every connection
 * this loop pass found ready was read, so a client with several
 * connections is woken once for all their answers. */
static void on_sock_read(evutil_socket_t fd, short what, void *arg)
{
    struct gconn *c = arg;
    struct pg_status st;
    bool got = false;
    enum pg_err err;

    (void)fd;
    (void)what;
    if (c->closing) {
        return;
    }
    pg_status_clear(&st);
    err = pg_h2_recv_fd(&c->h2, c->srv->rbuf, RBUF_BYTES, READS_PER_PASS, &got, &st);
    if (got) {
        c->last_read_ns = pg_mono_ns();
    }
    if (err != PG_ERR_OK) {
        /* The peer closed or reset (as the bufferevent's EOF / error), or
         * nghttp2 refused what it sent (bad preface, frame error, flood). */
        pg_log_debug("grpc", "%s: %s", c->peer, pg_status_text(&st));
        if (err == PG_ERR_MALFORMED) {
            c->close_event = PG_GRPC_CLOSED_PROTOCOL;
        }
        conn_close(c);
        return;
    }
    event_active(c->defer_ev, 0, 0);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct gconn *c = arg;

    (void)bev;
    if (c->closing && pg_h2_out_pending(&c->h2) == 0) {
        struct pg_status st;

        pg_status_clear(&st);
        if (c->h2.ng != NULL) {
            (void)pg_h2_send(&c->h2, &st);
        }
        if (pg_h2_out_pending(&c->h2) == 0) {
            conn_close(c);
        }
        return;
    }
    conn_flush(c);
}

static void on_event(struct bufferevent *bev, short events, void *arg)
{
    struct gconn *c = arg;

    if (events & BEV_EVENT_CONNECTED) {
        const unsigned char *alpn = NULL;
        unsigned alpn_len = 0;

        /* TLS is up. A client that offered ALPN got h2 (or a fatal alert);
         * one that offered none is held to the HTTP/2 preface. */
        SSL_get0_alpn_selected(bufferevent_openssl_get_ssl(bev), &alpn, &alpn_len);
        if ((alpn_len != 0 && (alpn_len != 2 || memcmp(alpn, "h2", 2) != 0)) ||
            !session_start(c)) {
            c->close_event = PG_GRPC_CLOSED_PROTOCOL;
            conn_close(c);
            return;
        }
        on_read(bev, c); /* anything that came with the handshake */
        return;
    }
    if (events & (BEV_EVENT_ERROR | BEV_EVENT_EOF | BEV_EVENT_TIMEOUT)) {
        if (c->tls && c->h2.ng == NULL && c->close_event < 0) {
            c->close_event = PG_GRPC_CLOSED_PROTOCOL; /* the TLS handshake failed */
        }
        conn_close(c);
    }
}

/* ---- accept --------------------------------------------------------------- */

static void peer_format(struct gconn *c, const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

        inet_ntop(AF_INET, &a->sin_addr, c->peer_addr, sizeof(c->peer_addr));
        c->peer_port = ntohs(a->sin_port);
        pg_http_hostport(c->peer, sizeof(c->peer), c->peer_addr, c->peer_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

        inet_ntop(AF_INET6, &a->sin6_addr, c->peer_addr, sizeof(c->peer_addr));
        c->peer_port = ntohs(a->sin6_port);
        pg_http_hostport(c->peer, sizeof(c->peer), c->peer_addr, c->peer_port);
    } else {
        snprintf(c->peer_addr, sizeof(c->peer_addr), "unix");
        snprintf(c->peer, sizeof(c->peer), "unix");
    }
}

/* Sets up a connection on @bev (owned from here). */
static struct gconn *conn_new(struct pg_grpc_server *s, struct bufferevent *bev, bool tls)
{
    struct gconn *c = calloc(1, sizeof(*c));
    struct timeval tv;

    if (c == NULL) {
        bufferevent_free(bev);
        return NULL;
    }
    c->srv = s;
    c->bev = bev;
    c->tls = tls;
    c->close_event = -1;
    c->next = s->conns;
    if (s->conns != NULL) {
        s->conns->prev = c;
    }
    s->conns = c;
    s->n_conns++;
    c->hs_ev = evtimer_new(s->base, on_handshake_timeout, c);
    c->ka_ev = evtimer_new(s->base, on_keepalive, c);
    c->idle_ev = evtimer_new(s->base, on_idle, c);
    c->age_ev = evtimer_new(s->base, on_age, c);
    c->defer_ev = event_new(s->base, -1, 0, on_defer, c);
    c->goaway_ev = evtimer_new(s->base, on_goaway_timeout, c);
    c->fd = tls ? -1 : bufferevent_getfd(bev);
    if (c->fd >= 0) {
        if (s->rbuf == NULL) {
            s->rbuf = malloc(RBUF_BYTES);
        }
        c->read_ev = event_new(s->base, c->fd, EV_READ | EV_PERSIST, on_sock_read, c);
    }
    if (c->hs_ev == NULL || c->ka_ev == NULL || c->idle_ev == NULL || c->age_ev == NULL ||
        c->defer_ev == NULL || c->goaway_ev == NULL ||
        (c->fd >= 0 && (s->rbuf == NULL || c->read_ev == NULL))) {
        conn_close(c);
        return NULL;
    }
    if (c->read_ev != NULL) {
        /* The bufferevent writes only what the socket did not take (sock_write). */
        bufferevent_setcb(bev, NULL, on_write, on_event, c);
        bufferevent_disable(bev, EV_READ | EV_WRITE);
        event_add(c->read_ev, NULL);
    } else {
        bufferevent_setcb(bev, on_read, on_write, on_event, c);
        bufferevent_enable(bev, EV_READ | EV_WRITE);
    }
    tv = pg_ns_to_tv(s->lim.handshake_timeout_ns);
    evtimer_add(c->hs_ev, &tv);
    return c;
}

/* The acceptor's on_conn: @fd, counted, becomes a connection. */
static void accept_one(void *arg, int fd, const struct sockaddr_storage *ss,
                       const struct pg_peer_key *key)
{
    struct pg_grpc_server *s = arg;
    struct gconn tmp;
    struct gconn *c;
    struct bufferevent *bev;

    memset(&tmp, 0, sizeof(tmp));
    peer_format(&tmp, ss);
    bev = s->ssl_ctx != NULL ? pg_tls_server_bev(s->base, fd, s->ssl_ctx)
                             : bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        close(fd);
        pg_acceptor_uncount(&s->acc, key);
        return;
    }
    c = conn_new(s, bev, s->ssl_ctx != NULL);
    if (c == NULL) {
        pg_acceptor_uncount(&s->acc, key);
        return;
    }
    c->counted = true;
    c->key = *key;
    memcpy(c->peer_addr, tmp.peer_addr, sizeof(c->peer_addr));
    memcpy(c->peer, tmp.peer, sizeof(c->peer));
    c->peer_port = tmp.peer_port;
    if (!c->tls) {
        if (!session_start(c)) {
            conn_close(c);
            return;
        }
        conn_flush(c);
    }
}

/* The acceptor's on_refused: no HTTP/2 to answer in yet, the client sees
 * the connection end. */
static void accept_refused(void *arg, int fd, const struct sockaddr_storage *ss,
                           enum pg_accept_refusal why)
{
    struct gconn tmp;

    (void)fd;
    memset(&tmp, 0, sizeof(tmp));
    peer_format(&tmp, ss);
    server_event(arg, why == PG_ACCEPT_REFUSED_PER_PEER ? PG_GRPC_REFUSED_PER_PEER
                                                       : PG_GRPC_REFUSED_MAX_CONNECTIONS,
                 tmp.peer);
}

static void accept_paused(void *arg, int err)
{
    server_event(arg, PG_GRPC_ACCEPT_PAUSED, strerror(err));
}

static const struct pg_accept_ops grpc_accept_ops = {
    .on_conn = accept_one,
    .on_refused = accept_refused,
    .on_paused = accept_paused,
};

/* ---- the server ----------------------------------------------------------- */

/* ALPN: h2 or nothing (a client offering only http/1.1 gets an alert). */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char h2[] = {2, 'h', '2'};

    (void)ssl;
    (void)arg;
    if (SSL_select_next_proto((unsigned char **)out, outlen, h2, sizeof(h2), in, inlen) !=
        OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    return SSL_TLSEXT_ERR_OK;
}

static void limits_fill(struct pg_grpc_server_limits *l)
{
    if (l->max_recv_msg_size == 0) {
        l->max_recv_msg_size = 4u << 20;
    }
    if (l->max_concurrent_streams == 0) {
        l->max_concurrent_streams = DEFAULT_STREAMS;
    }
    if (l->max_header_list_size == 0) {
        l->max_header_list_size = DEFAULT_HEADER_LIST;
    }
    if (l->handshake_timeout_ns <= 0) {
        l->handshake_timeout_ns = DEFAULT_HANDSHAKE_NS;
    }
    if (l->keepalive_time_ns <= 0) {
        l->keepalive_time_ns = DEFAULT_KA_TIME_NS;
    }
    if (l->keepalive_timeout_ns <= 0) {
        l->keepalive_timeout_ns = DEFAULT_KA_TIMEOUT_NS;
    }
    if (l->min_ping_interval_ns <= 0) {
        l->min_ping_interval_ns = DEFAULT_MIN_PING_NS;
    }
    l->allowed_codings |= 1u; /* identity, row 0 */
}

static bool server_h2_setup(struct pg_grpc_server *s)
{
    if (nghttp2_option_new(&s->opt) != 0 || nghttp2_session_callbacks_new(&s->cbs) != 0) {
        return false;
    }
    /* nghttp2's own abuse limits: SETTINGS entries per frame, queued
     * SETTINGS/PING ACKs, CONTINUATION frames per header block, the
     * RST_STREAM rate (rapid reset), and no closed-stream bookkeeping. */
    nghttp2_option_set_max_settings(s->opt, 32);
    nghttp2_option_set_max_outbound_ack(s->opt, 1000);
    nghttp2_option_set_max_continuations(s->opt, 8);
    nghttp2_option_set_stream_reset_rate_limit(s->opt, 1000, 33);
    nghttp2_option_set_no_closed_streams(s->opt, 1);
    nghttp2_option_set_max_send_header_block_length(s->opt, 64u << 10);
    grpc_session_callbacks(s->cbs);
    return true;
}

static struct pg_grpc_server *server_new(struct pg_grpc_server *first, struct event_base *base,
                                         int fd, SSL_CTX *ssl_ctx,
                                         const struct pg_grpc_server_limits *lim,
                                         const struct pg_grpc_server_ops *ops, void *arg)
{
    struct pg_grpc_server *s = calloc(1, sizeof(*s));
    struct pg_accept_limits al = {
        .max_connections = lim->max_connections,
        .max_per_peer = lim->max_connections_per_peer,
        .batch = ACCEPT_BATCH,
    };

    if (s == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    s->acc.lfd = fd; /* closed by pg_grpc_server_free until the acceptor has it */
    s->base = base;
    s->ssl_ctx = ssl_ctx;
    s->lim = *lim;
    limits_fill(&s->lim);
    s->ops = *ops;
    s->arg = arg;
    pg_codec_list(s->lim.allowed_codings, false, s->accept_enc, sizeof(s->accept_enc));
    if (ssl_ctx != NULL && first == NULL) {
        /* Once, by the first server (siblings share the context). */
        SSL_CTX_set_alpn_select_cb(ssl_ctx, alpn_select, NULL);
    }
    /* Accepting starts last (fd -1: a server fed by pg_grpc_server_adopt). */
    if (!server_h2_setup(s) ||
        !pg_acceptor_init(&s->acc, first != NULL ? &first->acc : NULL, base, fd, &al,
                          &grpc_accept_ops, s)) {
        pg_grpc_server_free(s);
        return NULL;
    }
    return s;
}

struct pg_grpc_server *pg_grpc_server_new(struct event_base *base, int fd, SSL_CTX *ssl_ctx,
                                          const struct pg_grpc_server_limits *lim,
                                          const struct pg_grpc_server_ops *ops, void *arg)
{
    return server_new(NULL, base, fd, ssl_ctx, lim, ops, arg);
}

struct pg_grpc_server *pg_grpc_server_new_sibling(struct pg_grpc_server *first,
                                                  struct event_base *base, int fd, void *arg)
{
    return server_new(first, base, fd, first->ssl_ctx, &first->lim, &first->ops, arg);
}

void pg_grpc_server_stop_accepting(struct pg_grpc_server *s)
{
    if (s == NULL) {
        return;
    }
    pg_acceptor_stop(&s->acc);
    s->stopping = true;
    for (struct gconn *c = s->conns, *next; c != NULL; c = next) {
        next = c->next;
        if (c->h2.ng == NULL) {
            conn_close(c); /* still in its TLS handshake: nothing to finish */
        } else {
            conn_goaway(c, -1);
        }
    }
}

void pg_grpc_server_free(struct pg_grpc_server *s)
{
    if (s == NULL) {
        return;
    }
    pg_acceptor_stop(&s->acc);
    while (s->conns != NULL) {
        conn_close(s->conns);
    }
    if (s->opt != NULL) {
        nghttp2_option_del(s->opt);
    }
    if (s->cbs != NULL) {
        nghttp2_session_callbacks_del(s->cbs);
    }
    free(s->rbuf);
    pg_acceptor_fini(&s->acc);
    free(s);
}

int pg_grpc_server_fd(const struct pg_grpc_server *s)
{
    return pg_acceptor_fd(&s->acc);
}

size_t pg_grpc_server_open_connections(const struct pg_grpc_server *s)
{
    return s->n_conns;
}

size_t pg_grpc_server_open_calls(const struct pg_grpc_server *s)
{
    return s->n_calls;
}

bool pg_grpc_server_adopt(struct pg_grpc_server *s, struct bufferevent *bev, const char *peer)
{
    struct gconn *c = conn_new(s, bev, false);

    if (c == NULL) {
        return false;
    }
    snprintf(c->peer_addr, sizeof(c->peer_addr), "%s", peer);
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    if (!session_start(c)) {
        conn_close(c);
        return false;
    }
    conn_flush(c);
    return true;
}
