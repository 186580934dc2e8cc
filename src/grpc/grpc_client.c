/* SPDX-License-Identifier: Apache-2.0
 * gRPC unary calls over one nghttp2 client session on a libevent
 * bufferevent (plain or OpenSSL). Completions are queued and delivered from a
 * deferred event so user callbacks never run inside nghttp2 callbacks and may
 * start new calls freely. */
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

#include "codec/gzip.h"
#include "core/base64.h"
#include "core/clock.h"
#include "core/log.h"
#include "grpc/grpc_wire.h"
#include "h2/h2_session.h"
#include "http/tls_client.h"

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

static void conn_send(struct pg_grpc_conn *c);
static void conn_fail(struct pg_grpc_conn *c, int code, const char *why);
static void submit_pending(struct pg_grpc_conn *c);

static void list_add(struct client_call **head, struct client_call *call)
{
    call->prev = NULL;
    call->next = *head;
    if (*head != NULL) {
        (*head)->prev = call;
    }
    *head = call;
}

static void list_del(struct client_call **head, struct client_call *call)
{
    if (call->prev != NULL) {
        call->prev->next = call->next;
    } else {
        *head = call->next;
    }
    if (call->next != NULL) {
        call->next->prev = call->prev;
    }
    call->prev = call->next = NULL;
}

static void call_free(struct client_call *call)
{
    if (call->deadline != NULL) {
        event_free(call->deadline);
    }
    free(call->nv);
    free(call->nv_block);
    free(call->grpc_message);
    free(call->details_bin);
    free(call->res_message);
    free(call->res_body);
    pg_grpc_reader_free(&call->reader);
    free(call);
}

/* Completes @call: moves it from active to done and schedules its callback. */
static void finish(struct client_call *call, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void finish(struct client_call *call, int code, const char *fmt, ...)
{
    struct pg_grpc_conn *c = call->conn;
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (call->stream_id > 0 && c->h2.ng != NULL) {
        nghttp2_session_set_stream_user_data(c->h2.ng, call->stream_id, NULL);
    }
    if (call->deadline != NULL) {
        evtimer_del(call->deadline);
    }
    call->res_code = code;
    free(call->res_message);
    call->res_message = strdup(msg);
    list_del(&c->active, call);
    c->n_active--;
    list_add(&c->done, call);
    event_active(c->done_ev, 0, 0);
}

static void on_done_ev(evutil_socket_t fd, short what, void *arg)
{
    struct pg_grpc_conn *c = arg;

    (void)fd;
    (void)what;
    while (c->done != NULL) {
        struct client_call *call = c->done;
        struct pg_grpc_result res;

        list_del(&c->done, call);
        memset(&res, 0, sizeof(res));
        res.code = call->res_code;
        res.message = call->res_message ? call->res_message : "";
        res.has_retry_info = call->res_retry_info;
        res.retry_delay_ns = call->res_retry_ns;
        res.response = call->res_body;
        res.response_len = call->res_body_len;
        res.http_status = call->http_status;
        call->cb(call->arg, &res);
        call_free(call);
    }
}

/* ---- nghttp2 callbacks --------------------------------------------------- */

static ssize_t body_read_cb(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                            uint32_t *data_flags, nghttp2_data_source *source, void *ud)
{
    struct client_call *call = source->ptr;
    size_t total = call->body_len + 5;
    size_t n = 0;

    (void)s;
    (void)stream_id;
    (void)ud;
    while (n < length && call->sent < total) {
        size_t take;

        if (call->sent < 5) {
            uint8_t prefix[5];

            pg_grpc_prefix_write(prefix, call->compressed, (uint32_t)call->body_len);
            take = 5 - call->sent;
            take = take < length - n ? take : length - n;
            memcpy(buf + n, prefix + call->sent, take);
        } else {
            take = total - call->sent;
            take = take < length - n ? take : length - n;
            memcpy(buf + n, call->body + (call->sent - 5), take);
        }
        n += take;
        call->sent += take;
    }
    if (call->sent == total) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return (ssize_t)n;
}

static struct client_call *stream_call(nghttp2_session *s, int32_t id)
{
    return nghttp2_session_get_stream_user_data(s, id);
}

static char *dupn(const uint8_t *v, size_t n)
{
    char *p = malloc(n + 1);

    if (p != NULL) {
        memcpy(p, v, n);
        p[n] = '\0';
    }
    return p;
}

static int header_cb(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud)
{
    struct client_call *call;

    (void)flags;
    (void)ud;
    if (frame->hd.type != NGHTTP2_HEADERS) {
        return 0;
    }
    call = stream_call(s, frame->hd.stream_id);
    if (call == NULL) {
        return 0;
    }
#define IS(lit) (namelen == sizeof(lit) - 1 && memcmp(name, lit, namelen) == 0)
    if (IS(":status")) {
        int v = 0;

        for (size_t i = 0; i < valuelen && i < 3; i++) {
            v = v * 10 + (value[i] >= '0' && value[i] <= '9' ? value[i] - '0' : 0);
        }
        call->http_status = v;
    } else if (IS("grpc-status")) {
        int code;

        call->grpc_status = pg_grpc_status_parse((const char *)value, valuelen, &code)
                                ? code
                                : PG_GRPC_UNKNOWN;
    } else if (IS("grpc-message")) {
        free(call->grpc_message);
        call->grpc_message = malloc(valuelen + 1);
        if (call->grpc_message != NULL) {
            pg_grpc_message_decode((const char *)value, valuelen, call->grpc_message);
        }
    } else if (IS("grpc-status-details-bin")) {
        free(call->details_bin);
        call->details_bin = dupn(value, valuelen);
    } else if (IS("content-type")) {
        call->grpc_content = valuelen >= 16 && memcmp(value, "application/grpc", 16) == 0 &&
                             (valuelen == 16 || value[16] == '+' || value[16] == ';');
    } else if (IS("grpc-encoding")) {
        call->gzip_encoding = valuelen == 4 && memcmp(value, "gzip", 4) == 0;
    }
#undef IS
    return 0;
}

static int data_chunk_cb(nghttp2_session *s, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *ud)
{
    struct client_call *call = stream_call(s, stream_id);
    struct pg_status st;
    enum pg_err err;

    (void)flags;
    (void)ud;
    if (call == NULL) {
        return 0;
    }
    if (call->http_status != 200 || !call->grpc_content) {
        return 0; /* not a gRPC body (a proxy's error page): the status decides */
    }
    pg_status_clear(&st);
    err = pg_grpc_reader_feed(&call->reader, data, len, &st);
    if (err != PG_ERR_OK) {
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
        finish(call, err == PG_ERR_LIMIT ? PG_GRPC_RESOURCE_EXHAUSTED : PG_GRPC_INTERNAL,
               "bad response: %s", pg_status_text(&st));
    }
    return 0;
}

/* grpc-go's mapping of HTTP/2 RST_STREAM codes. */
static int code_from_h2(uint32_t e)
{
    switch (e) {
    case NGHTTP2_REFUSED_STREAM:
        return PG_GRPC_UNAVAILABLE;
    case NGHTTP2_CANCEL:
        return PG_GRPC_CANCELLED;
    case NGHTTP2_ENHANCE_YOUR_CALM:
        return PG_GRPC_RESOURCE_EXHAUSTED;
    case NGHTTP2_INADEQUATE_SECURITY:
        return PG_GRPC_PERMISSION_DENIED;
    default:
        return PG_GRPC_INTERNAL;
    }
}

/* Builds the final result of a stream that closed normally or by reset. */
static void complete_stream(struct pg_grpc_conn *c, struct client_call *call, uint32_t h2err)
{
    struct pg_grpc_status_details det;
    struct pg_status st;

    if (call->grpc_status >= 0) {
        if (call->details_bin != NULL) {
            size_t n = strlen(call->details_bin), cap = pg_base64_decoded_max(n);
            uint8_t *bin = malloc(cap);
            long blen = bin != NULL ? pg_base64_decode(call->details_bin, n, PG_BASE64_LENIENT,
                                                       bin, cap)
                                    : -1;

            if (blen >= 0 && pg_grpc_status_details_parse(bin, (size_t)blen, &det) &&
                det.has_retry_info) {
                call->res_retry_info = true;
                call->res_retry_ns = det.retry_delay_ns;
            }
            free(bin);
        }
        if (call->grpc_status == PG_GRPC_OK && pg_grpc_reader_done(&call->reader)) {
            pg_status_clear(&st);
            if (call->reader.compressed) {
                uint8_t *out;
                size_t out_len;

                if (!call->gzip_encoding ||
                    pg_gzip_decompress(call->reader.buf, call->reader.got,
                                       c->cfg.max_response_bytes, &out, &out_len,
                                       &st) != PG_ERR_OK) {
                    finish(call, PG_GRPC_INTERNAL, "cannot decompress the response: %s",
                           call->gzip_encoding ? pg_status_text(&st) : "unknown grpc-encoding");
                    return;
                }
                call->res_body = out;
                call->res_body_len = out_len;
            } else {
                call->res_body = call->reader.buf;
                call->res_body_len = call->reader.got;
                call->reader.buf = NULL;
            }
        } else if (call->grpc_status == PG_GRPC_OK && pg_grpc_reader_partial(&call->reader)) {
            finish(call, PG_GRPC_INTERNAL, "response message cut short");
            return;
        }
        finish(call, call->grpc_status, "%s", call->grpc_message ? call->grpc_message : "");
        return;
    }
    if (call->http_status != 0 && call->http_status != 200) {
        finish(call, pg_grpc_code_from_http(call->http_status), "unexpected HTTP status %d",
               call->http_status);
        return;
    }
    if (call->http_status == 200 && !call->grpc_content) {
        finish(call, PG_GRPC_UNKNOWN, "response is not gRPC (content-type is not application/grpc)");
        return;
    }
    if (h2err != NGHTTP2_NO_ERROR) {
        finish(call, code_from_h2(h2err), "stream reset by the server: %s",
               nghttp2_http2_strerror(h2err));
        return;
    }
    finish(call, PG_GRPC_INTERNAL, "server closed the stream without a grpc-status");
}

static int stream_close_cb(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *ud)
{
    struct pg_grpc_conn *c = ((struct pg_h2 *)ud)->owner;
    struct client_call *call = stream_call(s, stream_id);

    if (call == NULL) {
        return 0;
    }
    nghttp2_session_set_stream_user_data(s, stream_id, NULL);
    if (error_code == NGHTTP2_REFUSED_STREAM && call->http_status == 0 && !call->resubmitted) {
        /* Never processed by the server (e.g. above a GOAWAY's last stream):
         * safe to send again transparently, as grpc-go does once. */
        call->resubmitted = true;
        call->stream_id = 0;
        call->sent = 0;
        return 0;
    }
    complete_stream(c, call, error_code);
    return 0;
}

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

/* ---- connection lifecycle ------------------------------------------------ */

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

    pg_log_warn(c->cfg.log_name, "connection to %s: %s%s", c->authority, why,
                c->n_active ? " (failing in-flight calls)" : "");
    teardown(c);
    while (c->active != NULL) {
        finish(c->active, code, "connection to %s: %s", c->authority, why);
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
    submit_pending(c);
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
    nghttp2_session_callbacks_set_on_header_callback(cbs, header_cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, data_chunk_cb);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, stream_close_cb);
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
        submit_pending(c);
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

/* Puts every call without a stream on one, if the session can take it. */
static void submit_pending(struct pg_grpc_conn *c)
{
    struct client_call *call;
    struct client_call *next;

    if (c->state != ST_READY || c->h2.ng == NULL || c->goaway) {
        return;
    }
    for (call = c->active; call != NULL; call = next) {
        nghttp2_data_provider dp;
        int32_t id;

        next = call->next;
        if (call->stream_id != 0) {
            continue;
        }
        /* nghttp2 itself holds streams beyond the server's
         * MAX_CONCURRENT_STREAMS until earlier ones close. */
        dp.source.ptr = call;
        dp.read_callback = body_read_cb;
        id = nghttp2_submit_request(c->h2.ng, NULL, call->nv, call->n_nv, &dp, call);
        if (id < 0) {
            finish(call, PG_GRPC_UNAVAILABLE, "cannot open a stream: %s", nghttp2_strerror(id));
            continue;
        }
        call->stream_id = id;
    }
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
    finish(call, PG_GRPC_DEADLINE_EXCEEDED, "deadline of %lld ms exceeded%s",
           (long long)(call->timeout_ns / 1000000), call->stream_id > 0 ? "" : " (never sent: not connected)");
    conn_send(c);
}

enum pg_err pg_grpc_conn_call(struct pg_grpc_conn *c, const struct pg_grpc_request *req,
                              pg_grpc_done_fn cb, void *arg, struct pg_status *st)
{
    struct client_call *call = calloc(1, sizeof(*call));
    char timeout[16];
    size_t block = 0;
    size_t n_nv = 4 + req->n_headers + 1;
    char *p;
    size_t i;
    struct timeval tv;

    if (call == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "no memory for a gRPC call");
    }
    pg_grpc_timeout_format(req->timeout_ns, timeout, sizeof(timeout));
    /* Names and values of the five fixed headers, each with two NULs. */
    block += sizeof(":method") + sizeof("POST") + sizeof(":scheme") + sizeof("https") +
             sizeof(":authority") + strlen(c->authority) + 1 + sizeof(":path") +
             strlen(req->path) + 1 + sizeof("grpc-timeout") + strlen(timeout) + 1;
    for (i = 0; i < req->n_headers; i++) {
        block += strlen(req->headers[i].name) + strlen(req->headers[i].value) + 2;
    }
    call->nv = calloc(n_nv, sizeof(nghttp2_nv));
    call->nv_block = malloc(block);
    call->deadline = evtimer_new(c->base, on_deadline, call);
    if (call->nv == NULL || call->nv_block == NULL || call->deadline == NULL) {
        call_free(call);
        return pg_status_set(st, PG_ERR_NOMEM, "no memory for a gRPC call");
    }
    p = call->nv_block;
#define ADD(n, v)                                                                                  \
    do {                                                                                           \
        size_t nl_ = strlen(n), vl_ = strlen(v);                                                   \
        memcpy(p, n, nl_ + 1);                                                                     \
        call->nv[call->n_nv].name = (uint8_t *)p;                                                  \
        call->nv[call->n_nv].namelen = nl_;                                                        \
        p += nl_ + 1;                                                                              \
        memcpy(p, v, vl_ + 1);                                                                     \
        call->nv[call->n_nv].value = (uint8_t *)p;                                                 \
        call->nv[call->n_nv].valuelen = vl_;                                                       \
        p += vl_ + 1;                                                                              \
        call->nv[call->n_nv].flags = NGHTTP2_NV_FLAG_NONE;                                         \
        call->n_nv++;                                                                              \
    } while (0)
    ADD(":method", "POST");
    ADD(":scheme", c->cfg.tls ? "https" : "http");
    ADD(":authority", c->authority);
    ADD(":path", req->path);
    ADD("grpc-timeout", timeout);
    for (i = 0; i < req->n_headers; i++) {
        ADD(req->headers[i].name, req->headers[i].value);
    }
#undef ADD
    call->conn = c;
    call->body = req->body;
    call->body_len = req->body_len;
    call->compressed = req->compressed;
    call->timeout_ns = req->timeout_ns;
    call->cb = cb;
    call->arg = arg;
    call->grpc_status = -1;
    pg_grpc_reader_init(&call->reader, c->cfg.max_response_bytes);
    list_add(&c->active, call);
    c->n_active++;
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
        submit_pending(c);
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
    c->done_ev = event_new(base, -1, 0, on_done_ev, c);
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
    while (c->active != NULL) {
        struct client_call *call = c->active;

        list_del(&c->active, call);
        call_free(call);
    }
    while (c->done != NULL) {
        struct client_call *call = c->done;

        list_del(&c->done, call);
        call_free(call);
    }
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
