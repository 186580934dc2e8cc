/* SPDX-License-Identifier: Apache-2.0
 * Kept-alive POST connections on evhttp (see client_post.h). Ownership: the
 * pool owns its connections (each its evhttp_connection, and with it the
 * bufferevent and SSL) and the calls not yet finished; evhttp owns a
 * request once it is made and frees it after the request callback. A
 * connection that closed is retired: freed from a zero-delay event, never
 * from inside evhttp's own callbacks. */
#include "http/client_post.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>

#include "core/clock.h"
#include "http/tls_client.h"

struct post_conn;

struct post_call {
    struct pg_http_pool *pool;
    struct post_conn *conn;          /* NULL while queued */
    struct evhttp_request *req;      /* owned by evhttp once made */
    struct event *timer;             /* owned: the whole-call deadline */
    struct pg_http_post post;        /* path and body borrowed (the caller's until the
                                      * callback); headers point into hdrs */
    struct pg_http_header *hdrs;     /* owned: the headers and their strings, one block (a
                                      * queued call starts after the caller's frame is gone) */
    pg_http_post_fn done;
    void *arg;
    uint8_t *body;                   /* owned: the kept response bytes */
    size_t len;
    bool truncated;
    int ev_error;                    /* last evhttp error, -1 = none */
    bool saw_headers;
    struct post_call *next;          /* the pool's queue */
};

struct post_conn {
    struct pg_http_pool *pool;
    struct evhttp_connection *evcon; /* owned */
    struct post_call *call;          /* in flight, or NULL (idle) */
    bool closed;                     /* retire it: never reuse */
    unsigned uses;                   /* requests started on it */
    int64_t idle_since;
    bool tls;
    struct post_conn *next;
};

struct pg_http_pool {
    struct event_base *base;
    struct pg_http_pool_opts o;      /* host and server_name point at the copies below */
    char *host;
    char *server_name;
    char host_header[300];
    struct post_conn *conns;         /* open, idle or busy */
    size_t n_conns;
    struct post_conn *retired;       /* waiting for the reaper */
    struct event *reaper;
    struct post_call *q_head, *q_tail;
    uint64_t connects;
};

static void call_start(struct pg_http_pool *p, struct post_call *c);

/* ---- connections ----------------------------------------------------------- */

static void reap(evutil_socket_t fd, short what, void *arg)
{
    struct pg_http_pool *p = arg;

    (void)fd;
    (void)what;
    while (p->retired != NULL) {
        struct post_conn *k = p->retired;

        p->retired = k->next;
        evhttp_connection_free(k->evcon);
        free(k);
    }
}

/* Takes @k out of service; freed later from the reaper. */
static void conn_retire(struct post_conn *k)
{
    struct pg_http_pool *p = k->pool;
    struct post_conn **pp = &p->conns;
    struct timeval zero = {0, 0};

    while (*pp != NULL && *pp != k) {
        pp = &(*pp)->next;
    }
    if (*pp == NULL) {
        return;
    }
    *pp = k->next;
    p->n_conns--;
    k->next = p->retired;
    p->retired = k;
    event_add(p->reaper, &zero);
}

static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    struct post_conn *k = arg;

    (void)evcon;
    k->closed = true;
    if (k->call == NULL) {
        conn_retire(k);
    }
}

static struct post_conn *conn_open(struct pg_http_pool *p, struct pg_status *st)
{
    struct post_conn *k = calloc(1, sizeof(*k));
    struct bufferevent *bev = NULL;

    if (k == NULL) {
        pg_status_set(st, PG_ERR_NOMEM, "out of memory");
        return NULL;
    }
    k->pool = p;
    if (p->o.ssl_ctx != NULL) {
        static const unsigned char alpn_h1[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
        SSL *ssl = pg_tls_client_ssl_new(p->o.ssl_ctx, p->server_name ? p->server_name : p->host,
                                         p->o.verify, st);

        if (ssl == NULL) {
            free(k);
            return NULL;
        }
        SSL_set_alpn_protos(ssl, alpn_h1, sizeof(alpn_h1)); /* the context offers h2 */
        bev = bufferevent_openssl_socket_new(p->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                             BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
        if (bev == NULL) {
            SSL_free(ssl);
            free(k);
            pg_status_set(st, PG_ERR_NOMEM, "out of memory");
            return NULL;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
        k->tls = true;
    }
    k->evcon = evhttp_connection_base_bufferevent_new(p->base, NULL, bev, p->host,
                                                      (ev_uint16_t)p->o.port);
    if (k->evcon == NULL) {
        if (bev != NULL) {
            bufferevent_free(bev);
        }
        free(k);
        pg_status_set(st, PG_ERR_IO, "cannot create a connection to %s:%u", p->host, p->o.port);
        return NULL;
    }
    /* The body is streamed through on_chunk and capped there. */
    evhttp_connection_set_max_body_size(k->evcon, EV_SSIZE_MAX);
    evhttp_connection_set_max_headers_size(k->evcon, 64 * 1024);
    evhttp_connection_set_retries(k->evcon, 0);
    evhttp_connection_set_closecb(k->evcon, on_conn_close, k);
    k->next = p->conns;
    p->conns = k;
    p->n_conns++;
    p->connects++;
    return k;
}

/* An idle connection that may carry the next request, or NULL. */
static struct post_conn *conn_idle(struct pg_http_pool *p)
{
    int64_t now = pg_mono_ns();
    struct post_conn *k = p->conns;

    while (k != NULL) {
        struct post_conn *next = k->next;

        if (k->call == NULL && !k->closed && p->o.idle_timeout_ns > 0 &&
            now - k->idle_since > p->o.idle_timeout_ns) {
            conn_retire(k); /* the server has likely dropped it already */
        } else if (k->call == NULL && !k->closed) {
            return k;
        }
        k = next;
    }
    return NULL;
}

/* ---- calls ----------------------------------------------------------------- */

static void call_free(struct post_call *c)
{
    if (c->timer != NULL) {
        event_free(c->timer);
    }
    free(c->body);
    free(c->hdrs);
    free(c);
}

/* Copies @req's headers, names and values into one block owned by @c. */
static bool copy_headers(struct post_call *c, const struct pg_http_post *req)
{
    size_t bytes = req->n_headers * sizeof(struct pg_http_header);
    char *strs;

    for (size_t i = 0; i < req->n_headers; i++) {
        bytes += strlen(req->headers[i].name) + strlen(req->headers[i].value) + 2;
    }
    if (req->n_headers == 0) {
        return true;
    }
    c->hdrs = malloc(bytes);
    if (c->hdrs == NULL) {
        return false;
    }
    strs = (char *)(c->hdrs + req->n_headers);
    for (size_t i = 0; i < req->n_headers; i++) {
        size_t nl = strlen(req->headers[i].name) + 1, vl = strlen(req->headers[i].value) + 1;

        c->hdrs[i].name = memcpy(strs, req->headers[i].name, nl);
        c->hdrs[i].value = memcpy(strs + nl, req->headers[i].value, vl);
        strs += nl + vl;
    }
    c->post.headers = c->hdrs;
    return true;
}

/* The connection @c used is free again (or retired); the queue moves on. */
static void conn_release(struct post_call *c, bool reusable)
{
    struct post_conn *k = c->conn;
    struct pg_http_pool *p = c->pool;

    c->conn = NULL;
    if (k == NULL) {
        return;
    }
    k->call = NULL;
    k->idle_since = pg_mono_ns();
    if (!reusable || k->closed || !p->o.keep_alive) {
        k->closed = true;
        conn_retire(k);
    }
    while (p->q_head != NULL && (conn_idle(p) != NULL || p->n_conns < p->o.max_conns)) {
        struct post_call *q = p->q_head;

        p->q_head = q->next;
        if (p->q_head == NULL) {
            p->q_tail = NULL;
        }
        q->next = NULL;
        call_start(p, q);
    }
}

static void finish(struct post_call *c, struct pg_http_post_result *r, bool reusable)
{
    if (c->timer != NULL) {
        event_del(c->timer);
    }
    r->reused = c->conn != NULL && c->conn->uses > 1;
    conn_release(c, reusable);
    c->done(c->arg, r);
    call_free(c);
}

static void fail_now(struct post_call *c, enum pg_http_fail f, const char *why)
{
    struct pg_http_post_result r;

    memset(&r, 0, sizeof(r));
    r.fail = f;
    snprintf(r.why, sizeof(r.why), "%s", why);
    finish(c, &r, false);
}

/* The OpenSSL error of @k's connection (0 when none). */
static unsigned long conn_tls_error(const struct post_conn *k)
{
    struct bufferevent *bev;
    unsigned long e = 0, last;

    if (k == NULL || !k->tls || (bev = evhttp_connection_get_bufferevent(k->evcon)) == NULL) {
        return 0;
    }
    while ((last = bufferevent_get_openssl_error(bev)) != 0) {
        e = last;
    }
    return e;
}

static void on_error(enum evhttp_request_error err, void *arg)
{
    struct post_call *c = arg;

    c->ev_error = (int)err;
}

static int on_headers(struct evhttp_request *req, void *arg)
{
    struct post_call *c = arg;

    (void)req;
    c->saw_headers = true;
    return 0;
}

/* Keeps the first max_response bytes; evhttp drains the buffer after. */
static void on_chunk(struct evhttp_request *req, void *arg)
{
    struct post_call *c = arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    size_t room = c->pool->o.max_response - c->len;
    size_t take = n < room ? n : room;

    if (take > 0) {
        if (c->body == NULL) {
            c->body = malloc(c->pool->o.max_response);
        }
        if (c->body != NULL) {
            evbuffer_copyout(in, c->body + c->len, take);
            c->len += take;
        }
    }
    c->truncated = c->truncated || take < n;
}

static void on_done(struct evhttp_request *req, void *arg)
{
    struct post_call *c = arg;
    struct pg_http_post_result r;
    unsigned long e;

    c->req = NULL; /* evhttp frees it after this returns */
    memset(&r, 0, sizeof(r));
    if (req != NULL && evhttp_request_get_response_code(req) != 0) {
        const char *conn_hdr =
            evhttp_find_header(evhttp_request_get_input_headers(req), "Connection");

        r.status = evhttp_request_get_response_code(req);
        r.body = c->body;
        r.len = c->len;
        r.truncated = c->truncated;
        r.headers_ = evhttp_request_get_input_headers(req);
        finish(c, &r, conn_hdr == NULL || strcasecmp(conn_hdr, "close") != 0);
        return;
    }
    e = conn_tls_error(c->conn);
    if (e != 0) {
        char buf[160];

        ERR_error_string_n(e, buf, sizeof(buf));
        r.fail = PG_HTTP_TLS;
        snprintf(r.why, sizeof(r.why), "tls: %s", buf);
    } else if (c->saw_headers) {
        r.fail = PG_HTTP_READ;
        snprintf(r.why, sizeof(r.why), "connection closed before the body was complete");
    } else {
        r.fail = PG_HTTP_CONNECT;
        snprintf(r.why, sizeof(r.why), "connection refused or closed before a response");
    }
    finish(c, &r, false);
}

/* Takes @c out of the pool's queue (it waited for a connection). */
static void queue_remove(struct pg_http_pool *p, struct post_call *c)
{
    struct post_call **pp = &p->q_head;

    p->q_tail = NULL;
    while (*pp != NULL) {
        if (*pp == c) {
            *pp = c->next;
            c->next = NULL;
        }
        if (*pp == NULL) {
            break;
        }
        p->q_tail = *pp;
        pp = &(*pp)->next;
    }
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct post_call *c = arg;

    (void)fd;
    (void)what;
    if (c->conn == NULL) {
        queue_remove(c->pool, c);
    }
    if (c->req != NULL) {
        struct evhttp_request *req = c->req;

        c->req = NULL;
        evhttp_cancel_request(req); /* frees the request; on_done is not called */
    }
    fail_now(c, PG_HTTP_TIMEOUT, "no complete response within the timeout");
}

static void call_start(struct pg_http_pool *p, struct post_call *c)
{
    struct pg_status st;
    struct post_conn *k = conn_idle(p);
    struct evkeyvalq *h;
    char clen[32];

    pg_status_clear(&st);
    if (k == NULL && (k = conn_open(p, &st)) == NULL) {
        fail_now(c, PG_HTTP_INTERNAL, pg_status_text(&st));
        return;
    }
    k->call = c;
    k->uses++;
    c->conn = k;
    c->req = evhttp_request_new(on_done, c);
    if (c->req == NULL) {
        fail_now(c, PG_HTTP_INTERNAL, "out of memory");
        return;
    }
    evhttp_request_set_chunked_cb(c->req, on_chunk);
    evhttp_request_set_error_cb(c->req, on_error);
    evhttp_request_set_header_cb(c->req, on_headers);
    h = evhttp_request_get_output_headers(c->req);
    evhttp_add_header(h, "Host", p->host_header);
    snprintf(clen, sizeof(clen), "%zu", c->post.len);
    evhttp_add_header(h, "Content-Length", clen);
    if (!p->o.keep_alive) {
        evhttp_add_header(h, "Connection", "close");
    }
    for (size_t i = 0; i < c->post.n_headers; i++) {
        evhttp_remove_header(h, c->post.headers[i].name); /* configured headers win */
        evhttp_add_header(h, c->post.headers[i].name, c->post.headers[i].value);
    }
    if (c->post.len > 0) {
        evbuffer_add_reference(evhttp_request_get_output_buffer(c->req), c->post.body,
                               c->post.len, NULL, NULL);
    }
    if (evhttp_make_request(k->evcon, c->req, EVHTTP_REQ_POST, c->post.path) != 0) {
        c->req = NULL; /* freed by evhttp on failure */
        fail_now(c, PG_HTTP_CONNECT, "cannot send the request");
        return;
    }
    if (c->post.timeout_ns > 0) {
        /* evhttp's own (per read/write) a second later: the call's deadline
         * decides, and says "timeout". */
        struct timeval tv = pg_ns_to_tv(c->post.timeout_ns + 1000000000LL);

        evhttp_connection_set_timeout_tv(k->evcon, &tv);
    }
}

enum pg_err pg_http_pool_post(struct pg_http_pool *p, const struct pg_http_post *req,
                              pg_http_post_fn done, void *arg, struct pg_status *st)
{
    struct post_call *c = calloc(1, sizeof(*c));

    if (c == NULL || (c->timer = evtimer_new(p->base, on_timeout, c)) == NULL) {
        free(c);
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
    }
    c->pool = p;
    c->post = *req;
    if (!copy_headers(c, req)) {
        event_free(c->timer);
        free(c);
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
    }
    c->done = done;
    c->arg = arg;
    c->ev_error = -1;
    if (req->timeout_ns > 0) {
        struct timeval tv = pg_ns_to_tv(req->timeout_ns);

        evtimer_add(c->timer, &tv); /* the deadline counts time spent queued */
    }
    if (conn_idle(p) == NULL && p->n_conns >= p->o.max_conns) {
        if (p->q_tail != NULL) {
            p->q_tail->next = c;
        } else {
            p->q_head = c;
        }
        p->q_tail = c;
        return PG_ERR_OK;
    }
    call_start(p, c);
    return PG_ERR_OK;
}

const char *pg_http_post_header(const struct pg_http_post_result *r, const char *name)
{
    return r->headers_ != NULL
               ? evhttp_find_header((const struct evkeyvalq *)r->headers_, name)
               : NULL;
}

uint64_t pg_http_pool_connects(const struct pg_http_pool *p)
{
    return p->connects;
}

struct pg_http_pool *pg_http_pool_new(struct event_base *base, const struct pg_http_pool_opts *o)
{
    struct pg_http_pool *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        return NULL;
    }
    p->base = base;
    p->o = *o;
    if (p->o.max_conns == 0) {
        p->o.max_conns = 1;
    }
    p->host = strdup(o->host);
    p->server_name = o->server_name != NULL ? strdup(o->server_name) : NULL;
    p->reaper = event_new(base, -1, 0, reap, p);
    if (p->host == NULL || p->reaper == NULL ||
        (o->server_name != NULL && p->server_name == NULL)) {
        pg_http_pool_free(p);
        return NULL;
    }
    if (strchr(o->host, ':') != NULL) {
        snprintf(p->host_header, sizeof(p->host_header), "[%s]:%u", o->host, o->port);
    } else {
        snprintf(p->host_header, sizeof(p->host_header), "%s:%u", o->host, o->port);
    }
    return p;
}

void pg_http_pool_free(struct pg_http_pool *p)
{
    if (p == NULL) {
        return;
    }
    while (p->q_head != NULL) {
        struct post_call *c = p->q_head;

        p->q_head = c->next;
        call_free(c);
    }
    while (p->conns != NULL) {
        struct post_conn *k = p->conns;

        p->conns = k->next;
        if (k->call != NULL) {
            /* Freeing the connection frees its request without on_done. */
            call_free(k->call);
        }
        evhttp_connection_free(k->evcon);
        free(k);
    }
    if (p->reaper != NULL) {
        reap(-1, 0, p);
        event_free(p->reaper);
    }
    free(p->host);
    free(p->server_name);
    free(p);
}
