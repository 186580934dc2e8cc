/* SPDX-License-Identifier: Apache-2.0
 * One-shot GET on evhttp (see client.h). Ownership: the call owns its
 * connection (and with it the bufferevent and SSL); evhttp owns the request
 * and frees it after the request callback. The connection is freed from a
 * zero-delay event, never from inside evhttp's own callbacks. */
#include "http/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "core/clock.h"
#include "http/tls_client.h"

/* Go's http.Transport gives up after this many 1xx responses. */
#define MAX_CONTINUE 5

struct pg_http_call {
    struct event_base *base;          /* borrowed */
    struct evhttp_connection *evcon;  /* owned */
    struct evhttp_request *req;       /* owned by evcon until the callback */
    struct event *timer;              /* owned: the whole-request deadline */
    struct event *reaper;             /* owned: frees the call outside evhttp */
    struct event *poke;               /* owned: resumes reading after a 100 Continue */
    int n_continue;                   /* 100 Continue responses seen */
    pg_http_done_fn done;
    void *arg;
    bool finished;                    /* done() ran or was cancelled */
    bool aborting;                    /* on_data said stop: the timer ends the call */
    bool (*on_data)(void *arg, int status, const uint8_t *p, size_t n);
    int ev_error;                     /* last evhttp error, -1 = none */
    enum pg_http_fail fail;
    char why[200];
    bool tls;
};

/* Why this connection's TLS failed, for the log. */
static void tls_why(const struct pg_http_call *c, unsigned long e, char *out, size_t cap)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(c->evcon);
    SSL *ssl = bev != NULL ? bufferevent_openssl_get_ssl(bev) : NULL;
    long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
    char buf[160];

    if (v != X509_V_OK) {
        snprintf(out, cap, "tls: certificate verify failed: %s",
                 X509_verify_cert_error_string(v));
    } else if (ERR_GET_LIB(e) != 0) {
        ERR_error_string_n(e, buf, sizeof(buf));
        snprintf(out, cap, "tls: %s", buf);
    } else {
        snprintf(out, cap, "tls: handshake failed");
    }
}

/* The OpenSSL error of this connection (not the thread's queue, which other
 * connections on the loop share); 0 when none. */
static unsigned long conn_tls_error(const struct pg_http_call *c)
{
    struct bufferevent *bev;
    unsigned long e = 0, last;

    if (!c->tls || c->evcon == NULL ||
        (bev = evhttp_connection_get_bufferevent(c->evcon)) == NULL) {
        return 0;
    }
    while ((last = bufferevent_get_openssl_error(bev)) != 0) {
        e = last;
    }
    return e;
}

static const char *const fail_names[] = {"ok",  "connect",  "timeout",     "too_large",
                                         "read", "tls",     "internal", "bad_response"};

const char *pg_http_fail_name(enum pg_http_fail f)
{
    return (unsigned)f < sizeof(fail_names) / sizeof(fail_names[0]) ? fail_names[f] : "?";
}

static void reap(evutil_socket_t fd, short what, void *arg)
{
    struct pg_http_call *c = arg;

    (void)fd;
    (void)what;
    if (c->evcon != NULL) {
        evhttp_connection_free(c->evcon);
    }
    if (c->timer != NULL) {
        event_free(c->timer);
    }
    if (c->poke != NULL) {
        event_free(c->poke);
    }
    event_free(c->reaper);
    free(c);
}

static void schedule_reap(struct pg_http_call *c)
{
    struct timeval zero = {0, 0};

    if (c->timer != NULL) {
        event_del(c->timer);
    }
    if (c->poke != NULL) {
        event_del(c->poke);
    }
    event_add(c->reaper, &zero);
}

static void finish(struct pg_http_call *c, struct evhttp_request *req)
{
    struct pg_http_response r;

    if (c->finished) {
        return;
    }
    c->finished = true;
    memset(&r, 0, sizeof(r));
    r.fail = c->fail;
    snprintf(r.why, sizeof(r.why), "%s", c->why);
    if (req != NULL && r.fail == PG_HTTP_OK && evhttp_request_get_response_code(req) == 0) {
        /* evhttp reports a refused or dropped connection with status 0. */
        unsigned long e = conn_tls_error(c);

        r.fail = c->why[0] == 'H' ? PG_HTTP_READ : e != 0 ? PG_HTTP_TLS : PG_HTTP_CONNECT;
        if (r.fail == PG_HTTP_TLS) {
            tls_why(c, e, r.why, sizeof(r.why));
        } else {
            snprintf(r.why, sizeof(r.why), "%s",
                     r.fail == PG_HTTP_READ ? "connection closed before the body was complete"
                                            : "connection refused or closed before a response");
        }
    } else if (req != NULL && r.fail == PG_HTTP_OK) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);

        r.status = evhttp_request_get_response_code(req);
        if (r.status < 100 || r.status > 999) {
            /* evhttp keeps what atoi made of the code (a 20-digit one is -1). */
            r.fail = PG_HTTP_BAD_RESPONSE;
            r.status = 0;
            snprintf(r.why, sizeof(r.why), "invalid status line (the code is not 3 digits)");
        } else {
            r.len = evbuffer_get_length(in);
            r.body = r.len ? evbuffer_pullup(in, -1) : NULL;
            r.go_pprof = evhttp_find_header(evhttp_request_get_input_headers(req), "X-Go-Pprof");
            r.location = evhttp_find_header(evhttp_request_get_input_headers(req), "Location");
            if (r.len > 0 && r.body == NULL) {
                r.fail = PG_HTTP_INTERNAL;
                snprintf(r.why, sizeof(r.why), "out of memory for the body");
            }
        }
    } else if (r.fail == PG_HTTP_OK) {
        unsigned long e = conn_tls_error(c);

        r.fail = PG_HTTP_CONNECT;
        if (c->ev_error == EVREQ_HTTP_DATA_TOO_LONG && c->why[0] != 'H') {
            /* The limit hit before the headers ended is the header cap. */
            r.fail = PG_HTTP_BAD_RESPONSE;
            snprintf(r.why, sizeof(r.why), "response header block larger than 64 KiB");
        } else if (c->ev_error == EVREQ_HTTP_DATA_TOO_LONG) {
            r.fail = PG_HTTP_TOO_LARGE;
            snprintf(r.why, sizeof(r.why), "response body larger than the size cap");
        } else if (c->ev_error == EVREQ_HTTP_INVALID_HEADER) {
            /* An HTTP/0.9-style reply, a bad status line, a negative or
             * malformed Content-Length: the target answered, wrongly. */
            r.fail = PG_HTTP_BAD_RESPONSE;
            snprintf(r.why, sizeof(r.why), "invalid status line or header in the response (or a header block over 64 KiB)");
        } else if (c->req != NULL && c->ev_error == EVREQ_HTTP_EOF && c->fail == PG_HTTP_OK &&
                   c->why[0] == 'H') {
            r.fail = PG_HTTP_READ; /* headers were seen ("HEADERS"): closed mid-body */
            snprintf(r.why, sizeof(r.why), "connection closed before the body was complete");
        } else if (e != 0) {
            r.fail = PG_HTTP_TLS;
            tls_why(c, e, r.why, sizeof(r.why));
        } else {
            snprintf(r.why, sizeof(r.why), "connection failed or closed before a response");
        }
    }
    c->done(c->arg, &r);
    schedule_reap(c);
}

static void on_error(enum evhttp_request_error err, void *arg)
{
    struct pg_http_call *c = arg;

    c->ev_error = (int)err;
}

/* After a 100 Continue evhttp waits for its (empty) request output to
 * drain before it reads again, which never signals: the final response
 * already buffered would wait for more bytes and meet EOF. Poking the write
 * side makes evhttp go back to reading what it holds. */
static void on_continue(evutil_socket_t fd, short what, void *arg)
{
    struct pg_http_call *c = arg;
    struct bufferevent *bev;

    (void)fd;
    (void)what;
    if (!c->finished && c->evcon != NULL &&
        (bev = evhttp_connection_get_bufferevent(c->evcon)) != NULL) {
        bufferevent_trigger(bev, EV_WRITE, 0);
    }
}

/* evhttp calls this once headers arrived: marks that a response started.
 * 100 Continue is skipped as Go's client skips 1xx, and like Go (at most 5)
 * a target that keeps sending them is refused. */
static int on_headers(struct evhttp_request *req, void *arg)
{
    struct pg_http_call *c = arg;

    if (evhttp_request_get_response_code(req) == 100) {
        if (++c->n_continue > MAX_CONTINUE) {
            c->fail = PG_HTTP_BAD_RESPONSE;
            snprintf(c->why, sizeof(c->why), "too many 1xx informational responses (over %d)",
                     MAX_CONTINUE);
            return -1;
        }
        /* Active now, so it runs before the loop polls again (and sees EOF). */
        event_active(c->poke, EV_TIMEOUT, 0);
        return 0;
    }
    snprintf(c->why, sizeof(c->why), "HEADERS");
    return 0;
}

/* Streaming: hands what arrived to the caller; evhttp drains it after. */
static void on_chunk(struct evhttp_request *req, void *arg)
{
    struct pg_http_call *c = arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    const uint8_t *p = n ? evbuffer_pullup(in, -1) : NULL;

    if (c->aborting || c->finished || n == 0) {
        return;
    }
    if (p == NULL || !c->on_data(c->arg, evhttp_request_get_response_code(req), p, n)) {
        struct timeval zero = {0, 0};

        /* Not from inside evhttp's read path: end the call from the timer. */
        c->aborting = true;
        event_del(c->timer);
        evtimer_add(c->timer, &zero);
    }
}

static void on_done(struct evhttp_request *req, void *arg)
{
    struct pg_http_call *c = arg;

    if (req != NULL && c->fail == PG_HTTP_OK) {
        c->why[0] = '\0';
    }
    finish(c, req);
    c->req = NULL; /* evhttp frees it after this returns */
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct pg_http_call *c = arg;

    (void)fd;
    (void)what;
    if (c->finished) {
        return;
    }
    if (c->aborting) {
        c->fail = PG_HTTP_READ;
        snprintf(c->why, sizeof(c->why), "aborted");
    } else {
        c->fail = PG_HTTP_TIMEOUT;
        snprintf(c->why, sizeof(c->why), "no complete response within the timeout");
    }
    if (c->req != NULL) {
        struct evhttp_request *req = c->req;

        c->req = NULL;
        evhttp_cancel_request(req); /* frees the request; on_done is not called */
    }
    finish(c, NULL);
}

struct pg_http_call *pg_http_get(struct event_base *base, const struct pg_http_get_opts *o,
                                 pg_http_done_fn done, void *arg, struct pg_status *st)
{
    struct pg_http_call *c = calloc(1, sizeof(*c));
    struct bufferevent *bev = NULL;
    struct evkeyvalq *h;
    struct timeval tv;
    char hostbuf[300];

    if (c == NULL) {
        pg_status_set(st, PG_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->base = base;
    c->done = done;
    c->arg = arg;
    c->ev_error = -1;
    c->reaper = event_new(base, -1, 0, reap, c);
    c->timer = evtimer_new(base, on_timeout, c);
    c->poke = evtimer_new(base, on_continue, c);
    if (c->reaper == NULL || c->timer == NULL || c->poke == NULL) {
        goto nomem;
    }
    if (o->ssl_ctx != NULL) {
        SSL *ssl = pg_tls_client_ssl_new(o->ssl_ctx, o->server_name ? o->server_name : o->host,
                                         o->verify, st);
        static const unsigned char alpn_h1[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

        if (ssl == NULL) {
            goto fail;
        }
        SSL_set_alpn_protos(ssl, alpn_h1, sizeof(alpn_h1)); /* the context offers h2 */
        bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                             BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
        if (bev == NULL) {
            SSL_free(ssl);
            goto nomem;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
        c->tls = true;
    }
    c->evcon = evhttp_connection_base_bufferevent_new(base, NULL, bev, o->host,
                                                      (ev_uint16_t)o->port);
    if (c->evcon == NULL) {
        if (bev != NULL) {
            bufferevent_free(bev);
        }
        pg_status_set(st, PG_ERR_IO, "cannot create a connection to %s:%u", o->host, o->port);
        goto fail;
    }
    c->on_data = o->on_data;
    evhttp_connection_set_max_body_size(c->evcon, o->on_data != NULL ? EV_SSIZE_MAX
                                                                     : (ev_ssize_t)o->max_body);
    evhttp_connection_set_max_headers_size(c->evcon, 64 * 1024);
    tv = pg_ns_to_tv(o->timeout_ns);
    {
        int64_t idle = o->idle_timeout_ns > 0 ? o->idle_timeout_ns : o->timeout_ns;
        struct timeval itv = pg_ns_to_tv(idle);

        evhttp_connection_set_timeout_tv(c->evcon, &itv);
    }
    c->req = evhttp_request_new(on_done, c);
    if (c->req == NULL) {
        goto nomem;
    }
    if (o->on_data != NULL) {
        evhttp_request_set_chunked_cb(c->req, on_chunk);
    }
    evhttp_request_set_error_cb(c->req, on_error);
    evhttp_request_set_header_cb(c->req, on_headers);
    h = evhttp_request_get_output_headers(c->req);
    if (o->host_header != NULL) {
        snprintf(hostbuf, sizeof(hostbuf), "%s", o->host_header);
    } else if (strchr(o->host, ':') != NULL) {
        snprintf(hostbuf, sizeof(hostbuf), "[%s]:%u", o->host, o->port);
    } else {
        snprintf(hostbuf, sizeof(hostbuf), "%s:%u", o->host, o->port);
    }
    evhttp_add_header(h, "Host", hostbuf);
    evhttp_add_header(h, "User-Agent", "pprofgate/" PG_VERSION);
    evhttp_add_header(h, "Accept", "application/octet-stream, */*;q=0.5");
    evhttp_add_header(h, "Connection", "close");
    for (size_t i = 0; i < o->n_headers; i++) {
        evhttp_add_header(h, o->headers[i].name, o->headers[i].value);
    }
    if (evhttp_make_request(c->evcon, c->req, EVHTTP_REQ_GET, o->path_query) != 0) {
        c->req = NULL; /* freed by evhttp on failure */
        pg_status_set(st, PG_ERR_IO, "cannot send a request to %s:%u", o->host, o->port);
        goto fail;
    }
    evtimer_add(c->timer, &tv);
    return c;
nomem:
    pg_status_set(st, PG_ERR_NOMEM, "out of memory");
fail:
    if (c->req != NULL) {
        evhttp_request_free(c->req);
    }
    if (c->evcon != NULL) {
        evhttp_connection_free(c->evcon);
    }
    if (c->timer != NULL) {
        event_free(c->timer);
    }
    if (c->reaper != NULL) {
        event_free(c->reaper);
    }
    if (c->poke != NULL) {
        event_free(c->poke);
    }
    free(c);
    return NULL;
}

void pg_http_call_cancel(struct pg_http_call *c)
{
    if (c == NULL || c->finished) {
        return;
    }
    c->finished = true;
    if (c->req != NULL) {
        struct evhttp_request *req = c->req;

        c->req = NULL;
        evhttp_cancel_request(req);
    }
    schedule_reap(c);
}
