/* SPDX-License-Identifier: Apache-2.0
 * The gRPC client's connection: one nghttp2 client session on a libevent
 * bufferevent (plain or OpenSSL with ALPN h2), connect with timeout, backoff
 * between attempts, keepalive pings while calls are in flight, GOAWAY drain,
 * and the send/receive pump; what happens to each call on its stream is
 * grpc_client_call.c's. */
#include "grpc/grpc_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "core/clock.h"
#include "core/log.h"
#include "grpc/grpc_client_internal.h"
#include "http/tls_client.h"


static void conn_send(struct pg_grpc_conn *c);
static void conn_fail(struct pg_grpc_conn *c, int code, const char *why);

static int frame_recv_cb(nghttp2_session *s, const nghttp2_frame *frame, void *ud)
{
    struct pg_grpc_conn *c = ((struct pg_h2 *)ud)->owner;

    (void)s;
    if (pg_h2_frame_seen(&c->h2, frame)) {
        return 0;
    }
    if (frame->hd.type == NGHTTP2_GOAWAY) {
        if (!c->goaway) {
            pg_log_info(c->cfg.log_name, "server sent GOAWAY (%s, last stream %d): draining",
                        nghttp2_http2_strerror(frame->goaway.error_code),
                        frame->goaway.last_stream_id);
        }
        c->goaway = true;
    }
    return 0;
}

static void teardown(struct pg_grpc_conn *c)
{
    struct client_call *call;

    if (c->h2.ng != NULL) {
        for (call = c->active; call != NULL; call = call->next) {
            if (call->stream_id > 0) {
                nghttp2_session_set_stream_user_data(c->h2.ng, call->stream_id, NULL);
            }
        }
    }
    pg_h2_end(&c->h2);
    if (c->bev != NULL) {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    evtimer_del(c->connect_timer);
    evtimer_del(c->keepalive_timer);
    c->goaway = false;
    c->state = ST_IDLE;
}

static void start_connect(struct pg_grpc_conn *c);

static void on_backoff(evutil_socket_t fd, short what, void *arg)
{
    struct pg_grpc_conn *c = arg;

    (void)fd;
    (void)what;
    c->state = ST_IDLE;
    if (c->n_active > 0) {
        start_connect(c);
    }
}

/* The connection failed or was lost: every call not yet completed fails with
 * @code (they may or may not have reached the server: the exporter's retry
 * decides), and the next attempt waits for the backoff. */
static void conn_fail(struct pg_grpc_conn *c, int code, const char *why)
{
    struct timeval tv;
    bool was_ready = c->state == ST_READY;

    /* A failed attempt is the exporter's to report (once per outage, with
     * the reason its calls fail with); a working connection lost is news. */
    if (was_ready) {
        pg_log_warn(c->cfg.log_name, "connection to %s: %s%s", c->authority, why,
                    c->n_active ? " (failing in-flight calls)" : "");
    } else {
        pg_log_debug(c->cfg.log_name, "connection to %s: %s", c->authority, why);
    }
    teardown(c);
    while (c->active != NULL) {
        pg_grpcc_finish(c->active, code, "connection to %s: %s", c->authority, why);
    }
    if (was_ready) {
        /* A connection that worked: try again soon, from the first step. */
        c->backoff_ns = c->cfg.backoff_initial_ns;
    }
    tv = pg_ns_to_tv(c->backoff_ns);
    c->state = ST_BACKOFF;
    evtimer_add(c->backoff_timer, &tv);
    c->backoff_ns *= 2;
    if (c->backoff_ns > c->cfg.backoff_max_ns) {
        c->backoff_ns = c->cfg.backoff_max_ns;
    }
}

static void maybe_close_drained(struct pg_grpc_conn *c)
{
    bool busy = false;

    if (c->h2.ng == NULL) {
        return;
    }
    for (struct client_call *call = c->active; call != NULL; call = call->next) {
        if (call->stream_id > 0) {
            busy = true;
        }
    }
    if ((c->goaway && !busy) ||
        pg_h2_finished(&c->h2)) {
        /* Graceful end: reconnect at once for the calls still waiting. */
        teardown(c);
        if (c->n_active > 0) {
            start_connect(c);
        }
    }
}

static void conn_send(struct pg_grpc_conn *c)
{
    struct pg_status st;

    if (c->h2.ng == NULL || c->h2.in_send) {
        return;
    }
    pg_status_clear(&st);
    if (pg_h2_send(&c->h2, &st) != PG_ERR_OK) {
        conn_fail(c, PG_GRPC_UNAVAILABLE, pg_status_text(&st));
        return;
    }
    maybe_close_drained(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct pg_grpc_conn *c = arg;
    struct pg_status st;

    (void)bev;
    pg_status_clear(&st);
    if (c->h2.ng != NULL && pg_h2_recv(&c->h2, &st) != PG_ERR_OK) {
        conn_fail(c, PG_GRPC_UNAVAILABLE, pg_status_text(&st));
        return;
    }
    pg_grpcc_submit_pending(c);
    conn_send(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    conn_send(arg);
}

static void on_keepalive(evutil_socket_t fd, short what, void *arg)
{
    struct pg_grpc_conn *c = arg;

    (void)fd;
    (void)what;
    /* Only with calls in flight: servers punish idle pings (ENHANCE_YOUR_CALM). */
    if (c->h2.ng == NULL || c->h2.ping_out || c->n_active == 0) {
        return;
    }
    if (pg_h2_ping(&c->h2, c->cfg.keepalive_timeout_ns)) {
        conn_send(c);
    }
}

static void on_ping_timeout(void *owner)
{
    conn_fail(owner, PG_GRPC_UNAVAILABLE, "keepalive ping not acknowledged in time");
}

static void on_connect_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_fail(arg, PG_GRPC_UNAVAILABLE, "connect timed out");
}

static bool session_start(struct pg_grpc_conn *c, char *why, size_t cap)
{
    nghttp2_session_callbacks *cbs;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
    };
    struct pg_h2_params p = {
        .server = false,
        .settings = iv,
        .n_settings = sizeof(iv) / sizeof(iv[0]),
        /* A larger connection window so many concurrent responses/requests flow. */
        .conn_window = 8 << 20,
        .on_ping_timeout = on_ping_timeout,
    };
    struct pg_status st;
    enum pg_err err;

    if (nghttp2_session_callbacks_new(&cbs) != 0) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    pg_grpcc_stream_callbacks(cbs);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, frame_recv_cb);
    pg_status_clear(&st);
    err = pg_h2_start(&c->h2, c->bev, cbs, &p, c, &st);
    nghttp2_session_callbacks_del(cbs);
    if (err != PG_ERR_OK) {
        snprintf(why, cap, "%s", pg_status_text(&st));
        return false;
    }
    return true;
}

static void on_event(struct bufferevent *bev, short events, void *arg)
{
    struct pg_grpc_conn *c = arg;
    char why[512];

    if (events & BEV_EVENT_CONNECTED) {
        evtimer_del(c->connect_timer);
        if (c->cfg.tls) {
            const unsigned char *alpn = NULL;
            unsigned alpn_len = 0;

            SSL_get0_alpn_selected(bufferevent_openssl_get_ssl(bev), &alpn, &alpn_len);
            if (alpn_len != 2 || memcmp(alpn, "h2", 2) != 0) {
                conn_fail(c, PG_GRPC_UNAVAILABLE, "TLS server did not negotiate ALPN h2");
                return;
            }
        }
        if (!session_start(c, why, sizeof(why))) {
            conn_fail(c, PG_GRPC_UNAVAILABLE, why);
            return;
        }
        c->state = ST_READY;
        c->connects++;
        c->backoff_ns = c->cfg.backoff_initial_ns;
        if (c->cfg.keepalive_time_ns > 0) {
            struct timeval tv = {c->cfg.keepalive_time_ns / 1000000000LL,
                                 (c->cfg.keepalive_time_ns % 1000000000LL) / 1000};

            evtimer_add(c->keepalive_timer, &tv);
        }
        pg_log_debug(c->cfg.log_name, "connected to %s%s", c->authority,
                     c->cfg.tls ? " (TLS, h2)" : "");
        pg_grpcc_submit_pending(c);
        conn_send(c);
        return;
    }
    if (events & (BEV_EVENT_ERROR | BEV_EVENT_EOF | BEV_EVENT_TIMEOUT)) {
        int err = EVUTIL_SOCKET_ERROR();
        int dns_err = bufferevent_socket_get_dns_error(bev);

        SSL *ssl = c->cfg.tls ? bufferevent_openssl_get_ssl(bev) : NULL;
        unsigned long e = c->cfg.tls ? bufferevent_get_openssl_error(bev) : 0;
        long vr = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;

        if (dns_err != 0) {
            snprintf(why, sizeof(why), "cannot resolve %s: %s", c->cfg.host,
                     evutil_gai_strerror(dns_err));
        } else if (c->state == ST_CONNECTING && vr != X509_V_OK) {
            snprintf(why, sizeof(why), "TLS: server certificate verification failed: %s",
                     X509_verify_cert_error_string(vr));
        } else if (e != 0) {
            char tlserr[256];

            ERR_error_string_n(e, tlserr, sizeof(tlserr));
            snprintf(why, sizeof(why), "TLS: %s%s", tlserr,
                     c->state == ST_CONNECTING ? " (during the handshake: a client certificate "
                                                 "or protocol problem?)"
                                               : "");
        } else if (events & BEV_EVENT_EOF) {
            snprintf(why, sizeof(why), "%s", c->state == ST_READY ? "connection closed by server"
                                                                  : "closed during connect");
        } else {
            snprintf(why, sizeof(why), "%s", err ? evutil_socket_error_to_string(err)
                                                 : "connection error");
        }
        conn_fail(c, PG_GRPC_UNAVAILABLE, why);
    }
}

static void start_connect(struct pg_grpc_conn *c)
{
    struct timeval tv;
    struct pg_status st;

    if (c->state != ST_IDLE) {
        return;
    }
    pg_status_clear(&st);
    if (c->cfg.tls) {
        SSL *ssl = pg_tls_client_ssl_new(c->cfg.ssl_ctx, c->cfg.server_name, c->cfg.verify, &st);

        if (ssl == NULL) {
            c->state = ST_CONNECTING;
            conn_fail(c, PG_GRPC_UNAVAILABLE, pg_status_text(&st));
            return;
        }
        c->bev = bufferevent_openssl_socket_new(c->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                BEV_OPT_CLOSE_ON_FREE);
        if (c->bev == NULL) {
            SSL_free(ssl);
        } else {
            bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
        }
    } else {
        c->bev = bufferevent_socket_new(c->base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    c->state = ST_CONNECTING;
    if (c->bev == NULL) {
        conn_fail(c, PG_GRPC_UNAVAILABLE, "cannot create a socket");
        return;
    }
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    tv = pg_ns_to_tv(c->cfg.connect_timeout_ns);
    evtimer_add(c->connect_timer, &tv);
    ERR_clear_error();
    if (bufferevent_socket_connect_hostname(c->bev, c->dns, AF_UNSPEC, c->cfg.host,
                                            c->cfg.port) != 0) {
        conn_fail(c, PG_GRPC_UNAVAILABLE, "connect failed at once");
    }
}

void pg_grpc_conn_connect(struct pg_grpc_conn *c)
{
    start_connect(c);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct client_call *call = arg;
    struct pg_grpc_conn *c = call->conn;

    (void)fd;
    (void)what;
    if (call->stream_id > 0 && c->h2.ng != NULL) {
        nghttp2_submit_rst_stream(c->h2.ng, NGHTTP2_FLAG_NONE, call->stream_id, NGHTTP2_CANCEL);
    }
    pg_grpcc_finish(call, PG_GRPC_DEADLINE_EXCEEDED, "deadline of %lld ms exceeded%s",
           (long long)(call->timeout_ns / 1000000), call->stream_id > 0 ? "" : " (never sent: not connected)");
    conn_send(c);
}

enum pg_err pg_grpc_conn_call(struct pg_grpc_conn *c, const struct pg_grpc_request *req,
                              pg_grpc_done_fn cb, void *arg, struct pg_status *st)
{
    struct client_call *call = pg_grpcc_call_new(c, req, cb, arg, on_deadline, st);
    struct timeval tv;

    if (call == NULL) {
        return PG_ERR_NOMEM;
    }
    tv = pg_ns_to_tv(req->timeout_ns);
    /* The loop's cached time may predate a long encode/split: refresh it so
     * the deadline counts from now. */
    event_base_update_cache_time(c->base);
    evtimer_add(call->deadline, &tv);
    switch (c->state) {
    case ST_IDLE:
        start_connect(c);
        break;
    case ST_READY:
        pg_grpcc_submit_pending(c);
        conn_send(c);
        break;
    default:
        break; /* waits for the connection in progress or the backoff */
    }
    return PG_ERR_OK;
}

struct pg_grpc_conn *pg_grpc_conn_new(struct event_base *base, const struct pg_grpc_conn_config *cfg)
{
    struct pg_grpc_conn *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        return NULL;
    }
    c->base = base;
    c->cfg = *cfg;
    if (c->cfg.server_name == NULL || c->cfg.server_name[0] == '\0') {
        c->cfg.server_name = c->cfg.host;
    }
    if (c->cfg.connect_timeout_ns <= 0) {
        c->cfg.connect_timeout_ns = 10000000000LL;
    }
    if (c->cfg.backoff_initial_ns <= 0) {
        c->cfg.backoff_initial_ns = 100000000LL;
    }
    if (c->cfg.backoff_max_ns < c->cfg.backoff_initial_ns) {
        c->cfg.backoff_max_ns = c->cfg.backoff_initial_ns;
    }
    if (c->cfg.keepalive_timeout_ns <= 0) {
        c->cfg.keepalive_timeout_ns = 10000000000LL;
    }
    if (c->cfg.max_response_bytes == 0) {
        c->cfg.max_response_bytes = 4u << 20;
    }
    c->backoff_ns = c->cfg.backoff_initial_ns;
    if (strchr(cfg->host, ':') != NULL) {
        snprintf(c->authority, sizeof(c->authority), "[%s]:%d", cfg->host, cfg->port);
    } else {
        snprintf(c->authority, sizeof(c->authority), "%s:%d", cfg->host, cfg->port);
    }
    c->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                      EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    c->connect_timer = evtimer_new(base, on_connect_timeout, c);
    c->backoff_timer = evtimer_new(base, on_backoff, c);
    c->keepalive_timer = event_new(base, -1, EV_PERSIST, on_keepalive, c);
    c->done_ev = event_new(base, -1, 0, pg_grpcc_deliver, c);
    if (c->connect_timer == NULL || c->backoff_timer == NULL || c->keepalive_timer == NULL ||
c->done_ev == NULL) {
        pg_grpc_conn_free(c);
        return NULL;
    }
    return c;
}

void pg_grpc_conn_free(struct pg_grpc_conn *c)
{
    if (c == NULL) {
        return;
    }
    if (c->connect_timer != NULL) {
        teardown(c);
    }
    pg_grpcc_free_all(c);
    if (c->connect_timer) {
        event_free(c->connect_timer);
    }
    if (c->backoff_timer) {
        event_free(c->backoff_timer);
    }
    if (c->keepalive_timer) {
        event_free(c->keepalive_timer);
    }
    if (c->done_ev) {
        event_free(c->done_ev);
    }
    if (c->dns != NULL) {
        evdns_base_free(c->dns, 0);
    }
    free(c);
}

size_t pg_grpc_conn_calls(const struct pg_grpc_conn *c)
{
    return c->n_active;
}

bool pg_grpc_conn_ready(const struct pg_grpc_conn *c)
{
    return c->state == ST_READY;
}

uint64_t pg_grpc_conn_connects(const struct pg_grpc_conn *c)
{
    return c->connects;
}
