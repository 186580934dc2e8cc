/* SPDX-License-Identifier: Apache-2.0
 * The HTTP/1.1 server's answers (see httpd_reply.h and pg_httpd_reply* in
 * http_server.h): the status line and head put together without printf,
 * whether the connection stays, and how the bytes leave: a short answer is
 * held for the loop's flush (one send per connection, a client woken once
 * for several), a longer one goes to the socket in one writev with its
 * body, and what the socket does not take waits in the bufferevent. */
#include "http/httpd_reply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "core/decimal.h"
#include "http/http_server_internal.h"

static const char *status_text(int code)
{
    switch (code) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Request Entity Too Large";
    case 414: return "Request-URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
    }
}

void httpd_raw_answer(const struct pg_httpd *s, int fd, int code, const char *reason)
{
    char buf[320];
    int n;

    if (s->ssl_ctx != NULL) {
        return;
    }
    n = snprintf(buf, sizeof(buf),
                 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 "%sConnection: close\r\nContent-Length: %zu\r\n\r\n%s\n",
                 code, code == 408 ? "Request Timeout" : "Service Unavailable",
                 code == 503 ? "Retry-After: 1\r\n" : "", strlen(reason) + 1, reason);
    if (n > 0 && (size_t)n < sizeof(buf)) {
        (void)!send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
}

static bool header_says_close(struct evkeyvalq *h)
{
    const char *v = evhttp_find_header(h, "Connection");

    return v != NULL && strcasecmp(v, "close") == 0;
}

/* Body bytes the request announced that were not read. */
static bool body_unread(const struct pg_httpd_conn *c)
{
    const struct req_priv *r = c->req;

    if (r == NULL || c->body_done) {
        return false;
    }
    return r->h.chunked || (r->h.content_length != PG_HTTP_NO_LENGTH &&
                            r->h.content_length > c->body_got);
}

/* The Date header's value, formatted once a second per thread. */
static const char *http_date(void)
{
    static __thread time_t at = -1;
    static __thread char buf[40];
    time_t t = time(NULL);

    if (t != at) {
        struct tm tm;

        gmtime_r(&t, &tm);
        strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        at = t;
    }
    return buf;
}

/* An answer's head, gathered in a stack buffer and added to @ev in one
 * evbuffer_add (more than one only for very long configured headers). */
struct head_out {
    struct evbuffer *ev;
    size_t n;
    bool spilled; /* part of the head is in @ev already */
    char b[512];
};

static void head_flush(struct head_out *h)
{
    if (h->n > 0) {
        evbuffer_add(h->ev, h->b, h->n);
        h->n = 0;
        h->spilled = true;
    }
}

static void head_put(struct head_out *h, const char *s, size_t n)
{
    if (h->n + n > sizeof(h->b)) {
        head_flush(h);
        if (n > sizeof(h->b)) {
            evbuffer_add(h->ev, s, n);
            return;
        }
    }
    memcpy(h->b + h->n, s, n);
    h->n += n;
}

static void head_put_str(struct head_out *h, const char *s)
{
    head_put(h, s, strlen(s));
}

/* The status line and headers of @r's answer on @c (@no_body: no Content-Type
 * or Content-Length). */
static void head_write(struct head_out *h, const struct pg_httpd_conn *c,
                       const struct req_priv *r, int code, const char *ctype, size_t len,
                       bool no_body)
{
    const struct evkeyval *kv;
    char num[24];

    head_put_str(h, "HTTP/1.1 ");
    head_put(h, num, pg_fmt_u64(num, (uint64_t)(code < 0 ? 0 : code)));
    head_put(h, " ", 1);
    head_put_str(h, status_text(code));
    head_put_str(h, "\r\nDate: ");
    head_put_str(h, http_date());
    head_put(h, "\r\n", 2);
    TAILQ_FOREACH(kv, &r->out, next)
    {
        if (strcasecmp(kv->key, "Connection") != 0 &&
            strcasecmp(kv->key, "Content-Length") != 0) {
            head_put_str(h, kv->key);
            head_put(h, ": ", 2);
            head_put_str(h, kv->value);
            head_put(h, "\r\n", 2);
        }
    }
    if (c->close_after) {
        head_put_str(h, "Connection: close\r\n");
    } else if (r->h.minor == 0) {
        head_put_str(h, "Connection: keep-alive\r\n");
    }
    if (!no_body) {
        if (ctype != NULL) {
            head_put_str(h, "Content-Type: ");
            head_put_str(h, ctype);
            head_put(h, "\r\n", 2);
        }
        head_put_str(h, "Content-Length: ");
        head_put(h, num, pg_fmt_u64(num, len));
        head_put(h, "\r\n", 2);
    }
    head_put(h, "\r\n", 2);
}

/* The answer's rest waits in the output buffer: reading pauses and the
 * bufferevent writes it, within write_timeout. */
static void wait_writable(struct pg_httpd_conn *c)
{
    const struct pg_httpd_limits *l = &c->srv->lim;

    httpd_read_off(c);
    bufferevent_enable(c->bev, EV_WRITE);
    httpd_set_deadline(c, l->write_timeout_ns > 0
                              ? pg_mono_s() + httpd_ns_s(l->write_timeout_ns) : 0);
}

/* Holds @c's answer for the loop's flush. */
static void flush_queue(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;

    c->flush_next = NULL;
    c->flush_queued = true;
    *s->flush_tail = c;
    s->flush_tail = &c->flush_next;
    if (s->flush_head == c) {
        event_active(s->flush_ev, EV_WRITE, 1);
    }
}

void httpd_flush_unlink(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;
    struct pg_httpd_conn **pp = &s->flush_head;

    if (!c->flush_queued) {
        return;
    }
    while (*pp != c) {
        pp = &(*pp)->flush_next;
    }
    *pp = c->flush_next;
    if (s->flush_tail == &c->flush_next) {
        s->flush_tail = pp;
    }
    c->flush_queued = false;
}

/* One at a time off the list's head, so a connection the list still holds
 * can close meanwhile (httpd_flush_unlink) and an answer queued while the
 * caller finishes one (a pipelined request) goes out in the same pass. */
struct pg_httpd_conn *httpd_flush_next(struct pg_httpd *s)
{
    struct pg_httpd_conn *c = s->flush_head;

    if (c == NULL) {
        return NULL;
    }
    s->flush_head = c->flush_next;
    if (s->flush_head == NULL) {
        s->flush_tail = &s->flush_head;
    }
    c->flush_queued = false;
    return c;
}

bool httpd_flush_send(struct pg_httpd_conn *c)
{
    ssize_t n = send(c->fd, c->ans, c->ans_len, MSG_NOSIGNAL | MSG_DONTWAIT);

    if (n == (ssize_t)c->ans_len) {
        return true;
    }
    n = n > 0 ? n : 0;
    evbuffer_add(bufferevent_get_output(c->bev), c->ans + n, c->ans_len - (size_t)n);
    wait_writable(c);
    return false;
}

void httpd_flush_abandon(struct pg_httpd *s)
{
    for (struct pg_httpd_conn *c; (c = s->flush_head) != NULL;) {
        s->flush_head = c->flush_next;
        c->flush_queued = false;
        (void)!send(c->fd, c->ans, c->ans_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    s->flush_tail = &s->flush_head;
}

/* One sendmsg of @head and @body: bytes the socket took (0 when it took
 * none or failed; the bufferevent's own write then meets the error). */
static ssize_t send_head_body(int fd, const void *head, size_t hlen, const void *body, size_t blen)
{
    struct iovec iov[2] = {{(void *)head, hlen}, {(void *)body, blen}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = blen > 0 ? 2 : 1};
    ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);

    return n > 0 ? n : 0;
}

/* Plain TCP with nothing queued before it (nearly every answer): a short
 * one is held for this loop pass's flush (true), a longer one goes straight
 * to the socket, so the output buffer needs no chain; what the socket does
 * not take is queued as usual. */
/* evbuffer_add_reference's cleanup: @extra is the taken body's start. */
static void free_taken(const void *data, size_t len, void *extra)
{
    (void)data;
    (void)len;
    free(extra);
}

/* @taken: @body is malloc'd and ours (pg_httpd_reply_take); what the socket
 * did not take at once is then referenced, not copied (a 40 MB /metrics
 * page is 10 000 page faults of copying on the loop), and *@taken is
 * cleared once the buffer owns it. */
static bool answer_out(struct pg_httpd_conn *c, struct head_out *h, const void *body,
                       size_t blen, bool *taken)
{
    struct evbuffer *out = h->ev;
    ssize_t sent = 0;

    if (c->srv->ssl_ctx == NULL && !h->spilled && evbuffer_get_length(out) == 0) {
        if (h->n + blen <= sizeof(c->ans)) {
            memcpy(c->ans, h->b, h->n);
            if (blen > 0) {
                memcpy(c->ans + h->n, body, blen);
            }
            c->ans_len = h->n + blen;
            return true;
        }
        sent = send_head_body(c->fd, h->b, h->n, body, blen);
    }
    if ((size_t)sent < h->n) {
        evbuffer_add(out, h->b + sent, h->n - (size_t)sent);
        sent = 0;
    } else {
        sent -= (ssize_t)h->n;
    }
    if ((size_t)sent < blen) {
        if (*taken && evbuffer_add_reference(out, (const char *)body + sent, blen - (size_t)sent,
                                             free_taken, (void *)body) == 0) {
            *taken = false;
        } else {
            evbuffer_add(out, (const char *)body + sent, blen - (size_t)sent);
        }
    }
    return false;
}

static void reply_body(struct pg_httpd_req *pub, int code, const char *ctype, const void *body,
                       size_t len, bool *taken)
{
    struct req_priv *r = (struct req_priv *)pub;
    struct pg_httpd_conn *c = pub->conn;
    struct pg_httpd *s = c->srv;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    const struct pg_httpd_limits *l = &s->lim;
    bool no_body = code == 204 || code == 304 || (code >= 100 && code < 200);
    struct head_out h = {.ev = out};
    size_t blen = 0;

    if (r->answered) {
        return;
    }
    r->answered = true;
    c->linger = body_unread(c);
    c->close_after = c->linger || !r->h.keep_alive || !l->keep_alives || s->draining ||
                     header_says_close(&r->out) ||
                     (l->max_requests_per_connection > 0 &&
                      c->n_requests >= l->max_requests_per_connection);
    head_write(&h, c, r, code, ctype, len, no_body);
    if (!no_body && len > 0 && strcmp(r->pub.method, "HEAD") != 0) {
        blen = len;
    }
    c->state = S_WRITE;
    if (answer_out(c, &h, body, blen, taken)) {
        httpd_set_deadline(c, 0);
        flush_queue(c);
        return;
    }
    /* Plain TCP: write now. An answer the socket takes whole (nearly every
     * one) then costs one writev and no epoll changes; it completes from
     * the loop (written_ev), not here, where the caller still holds the
     * request. */
    if (s->ssl_ctx == NULL) {
        int n = 0;

        if (evbuffer_get_length(out) > 0) {
            /* The bufferevent keeps its output's start frozen except while it
             * writes itself, as here. */
            evbuffer_unfreeze(out, 1);
            n = evbuffer_write(out, c->fd);
            evbuffer_freeze(out, 1);
        }
        if (n >= 0 && evbuffer_get_length(out) == 0) {
            httpd_set_deadline(c, 0);
            event_active(c->written_ev, EV_WRITE, 1);
            return;
        }
    }
    wait_writable(c);
}

void pg_httpd_reply_body(struct pg_httpd_req *pub, int code, const char *ctype, const void *body,
                         size_t len)
{
    bool taken = false;

    reply_body(pub, code, ctype, body, len, &taken);
}

void pg_httpd_reply_take(struct pg_httpd_req *pub, int code, const char *ctype, char *body,
                         size_t len)
{
    bool taken = body != NULL;

    reply_body(pub, code, ctype, body, len, &taken);
    if (taken) {
        free(body);
    }
}

void pg_httpd_reply(struct pg_httpd_req *pub, int code, const char *text)
{
    struct req_priv *r = (struct req_priv *)pub;
    struct pg_httpd_conn *c = pub->conn;
    char *line = NULL;
    size_t n = 0;

    if (r->answered) {
        return;
    }
    if (code != 204 && text != NULL) {
        n = strlen(text);
        line = malloc(n + 1);
        if (line != NULL) {
            memcpy(line, text, n);
            line[n++] = '\n';
        } else {
            n = 0;
        }
    }
    if (code != 204) {
        evhttp_add_header(&r->out, "X-Content-Type-Options", "nosniff");
    }
    pg_httpd_reply_body(pub, code, code != 204 ? "text/plain; charset=utf-8" : NULL, line, n);
    free(line);
    c->srv->ops.on_answer(pub, code, code >= 400 ? text : NULL, c->peer, c->srv->arg);
}

bool pg_httpd_client_gone(const struct pg_httpd_req *pub)
{
    char b;
    ssize_t n;

    if (pub->conn == NULL || pub->conn->fd < 0) {
        return true;
    }
    n = recv(pub->conn->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}
