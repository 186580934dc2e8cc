/* SPDX-License-Identifier: Apache-2.0
 * HTTP/1.1 server on bufferevents (see http_server.h). Each connection is a
 * small state machine with one deadline timer:
 *   HEAD  - waiting for / reading a request head (idle or header deadline)
 *   BODY  - reading the body (read_timeout, minimum rate)
 *   CALL  - the handler has the request; nothing is read (pipelined bytes
 *           wait in the socket)
 *   WRITE - the answer is being written (write_timeout)
 *   LINGER- a refusal was sent with the body unread: our side is shut, what
 *           still arrives is dropped unbuffered for a moment so the client
 *           reads the answer instead of a reset, then the socket closes.
 * The connection owns its request; the handler borrows it between on_head
 * and on_done. Loop thread only.
 *
 * Input goes to one flat buffer per connection (plain TCP reads straight
 * into it; TLS copies what its bufferevent decrypted): a head is copied out
 * and parsed, the body stays where it was read and is what the handler
 * sees, so a push costs no allocation and no copy of its body here. */
#define _GNU_SOURCE /* accept4 */
#include "http/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "core/clock.h"
#include "core/decimal.h"
#include "http/conn_limits.h"
#include "http/http_parse.h"
#include "http/http_request.h"
#include "http/tls.h"

/* fds kept free below RLIMIT_NOFILE for everything that is not a client
 * connection: health_check and admin listeners, exporters, spool files. */
#define FD_HEADROOM 64
#define ACCEPT_BATCH 64
#define ACCEPT_PAUSE_US 100000
#define LINGER_S 1.0
#define LINGER_MAX_BYTES (64u << 20)
/* Bytes all lingering connections together may drop per second (and at
 * once): a lone refused upload is drained so its client reads the answer;
 * a flood of them is cut off (reset) instead of costing the loop its CPU. */
#define LINGER_BUDGET_PER_S (32.0 * 1024 * 1024)
/* Single read size for large bodies and for draining a refused upload (the
 * bufferevent default is 16 KiB): a 4 MB body then costs the loop 16 wakeups,
 * read()s and deadline updates instead of 256. Headers keep the default. */
#define BULK_READ_BYTES (256 * 1024)
#define BULK_BODY_BYTES (64 * 1024)
/* The minimum body rate is judged after this long, so a slow start (TCP
 * slow start, a client preparing its stream) is not penalised. */
#define BODY_RATE_GRACE_S 2.0

const char *const pg_httpd_event_names[] = {
    "max_connections", "per_peer", "accept_error", "read_header_timeout",
    "read_timeout",    "min_body_rate", "write_timeout", "idle_timeout",
};

enum conn_state { S_HEAD = 0, S_BODY, S_CALL, S_WRITE, S_LINGER };

/* Lives in its connection and is reused by each of its requests: between
 * requests nothing in it is valid. */
struct req_priv {
    struct pg_httpd_req pub;
    struct evkeyvalq in, out; /* in: slots in the connection's head buffer; out: evhttp's */
    struct pg_http_head h;
    bool answered;
};

/* A connection keeps its head buffer (head bytes, path, header slots) for
 * the next request up to this size; a larger one (a head near
 * max_request_header_bytes) is given back when its request ends. */
#define HEAD_BUF_KEEP (8 * 1024)
/* The input buffer's standard size (a head, a push of a few KiB), and how
 * many empty ones a server keeps for its connections to share. */
#define IN_BUF_BYTES HEAD_READ_BYTES
#define IN_SPARES 32
/* A read asks for at least this much room (else the buffer grows). */
#define IN_MIN_READ 4096
/* Answers up to this size (a 204, a refusal's line) are held and sent
 * together once the loop has run every ready connection (see on_flush). */
#define ANSWER_HOLD_BYTES 512

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
    double armed;          /* when the timer fires (0 = not pending): see set_deadline */
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
     * requests, so waiting connections hold none. */
    char *in;
    size_t in_cap, in_off, in_len, body_off;
    struct pg_httpd_conn *flush_next; /* srv->flush list while an answer waits in @ans */
    bool flush_queued;
    size_t ans_len;
    char ans[ANSWER_HOLD_BYTES]; /* an answer held for the loop's flush (plain TCP) */
    char *hbuf;            /* owned: header slots, head bytes, path; see HEAD_BUF_KEEP */
    size_t hcap;
};

/* What sibling servers (one per event loop, each with its own listening
 * socket) share so the caps hold for all of them together. Touched once per
 * connection (accept, close) and per lingering read, never per request. */
struct httpd_shared {
    pthread_mutex_t mu;
    struct pg_peer_counts *peers;      /* under mu */
    size_t open;                       /* under mu: connections of every sibling */
    double linger_tokens, linger_last; /* under mu: the shared drain budget */
    int refs;                          /* under mu: servers using it */
};

/* Siblings are allocated together and each written per request by its own
 * loop: each on cache lines of its own. */
#define HTTPD_LINE 64

struct pg_httpd {
    _Alignas(HTTPD_LINE) struct httpd_shared *sh; /* shared with siblings; freed by the last */
    struct event_base *base;
    SSL_CTX *ssl_ctx;
    struct pg_httpd_limits lim;
    struct pg_httpd_ops ops;
    void *arg;
    int lfd;
    struct event *accept_ev, *retry_ev;
    struct pg_httpd_conn *conns;
    /* Connections whose answer waits in their @ans, oldest first, and the
     * event that sends them once the loop ran every ready connection. */
    struct pg_httpd_conn *flush_head, **flush_tail;
    struct event *flush_ev;
    char *spares[IN_SPARES]; /* owned: empty input buffers of IN_BUF_BYTES */
    size_t n_spares;
    size_t open, cap; /* open: this server's connections (loop thread) */
    uint64_t accepted; /* atomic: connections this server accepted */
    bool draining;
};

static double ns_s(int64_t ns)
{
    return (double)ns / 1e9;
}

static void process(struct pg_httpd_conn *c);
static void conn_close(struct pg_httpd_conn *c);

/* ---- socket reads ------------------------------------------------------ */

/* Plain TCP reads itself: the bufferevent's read asks FIONREAD first and
 * reads at most 4 KiB, so an SDK push cost two ioctl()s and two readv()s;
 * here it is one readv() of up to read_max bytes. TLS keeps the
 * bufferevent's (the filter reads records). */
#define HEAD_READ_BYTES (16 * 1024)

static void read_on(struct pg_httpd_conn *c)
{
    if (c->read_ev != NULL) {
        event_add(c->read_ev, NULL);
    } else {
        bufferevent_enable(c->bev, EV_READ);
    }
}

static void read_off(struct pg_httpd_conn *c)
{
    if (c->read_ev != NULL) {
        event_del(c->read_ev);
    } else {
        bufferevent_disable(c->bev, EV_READ);
    }
}

/* 0 = the default. */
static void read_size(struct pg_httpd_conn *c, int n)
{
    if (c->read_ev != NULL) {
        c->read_max = n > 0 ? n : HEAD_READ_BYTES;
    } else {
        (void)bufferevent_set_max_single_read(c->bev, (size_t)n);
    }
}

/* Bytes read and not parsed yet. */
static size_t in_have(const struct pg_httpd_conn *c)
{
    return c->in_len - c->in_off;
}

/* At least @want bytes of room after in_len: a spare buffer, the consumed
 * bytes dropped, or a larger buffer (doubling; a body of known length gets
 * its exact size). False on OOM. */
static bool in_room(struct pg_httpd_conn *c, size_t want)
{
    struct pg_httpd *s = c->srv;
    size_t keep, need, cap;
    char *b;

    if (c->in_cap - c->in_len >= want) {
        return true;
    }
    if (c->in == NULL && want <= IN_BUF_BYTES && s->n_spares > 0) {
        c->in = s->spares[--s->n_spares];
        c->in_cap = IN_BUF_BYTES;
        c->in_off = c->in_len = c->body_off = 0;
        return true;
    }
    keep = c->state == S_BODY ? c->body_off : c->in_off; /* a body being read stays */
    if (keep > 0) {
        memmove(c->in, c->in + keep, c->in_len - keep);
        c->in_len -= keep;
        c->in_off -= keep;
        c->body_off = c->state == S_BODY ? c->body_off - keep : 0;
        if (c->in_cap - c->in_len >= want) {
            return true;
        }
    }
    need = c->in_len + want;
    cap = c->in_cap > 0 ? 2 * c->in_cap : IN_BUF_BYTES;
    if (c->state == S_BODY && c->req != NULL && !c->req->h.chunked &&
        c->req->h.content_length != PG_HTTP_NO_LENGTH) {
        /* A body of known (admitted, capped) length gets its size at once:
         * doubling towards it would copy it several times and leave the
         * last step up to twice as large. */
        cap = (size_t)(c->body_off + c->req->h.content_length);
    }
    cap = cap > need ? cap : need;
    b = realloc(c->in, cap);
    if (b == NULL) {
        return false;
    }
    c->in = b;
    c->in_cap = cap;
    return true;
}

/* Between requests: an empty buffer goes back to the spares (or is freed). */
static void in_release(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;

    if (c->in == NULL || c->in_off < c->in_len) {
        return;
    }
    if (c->in_cap == IN_BUF_BYTES && s->n_spares < IN_SPARES) {
        s->spares[s->n_spares++] = c->in;
    } else {
        free(c->in);
    }
    c->in = NULL;
    c->in_cap = c->in_off = c->in_len = c->body_off = 0;
}

_Static_assert(IN_BUF_BYTES == PG_HTTPD_POOLED_BODY, "http_server.h names the pooled size");

void pg_httpd_drop_body(struct pg_httpd_req *pub)
{
    struct pg_httpd_conn *c = pub->conn;
    size_t rest;
    char *b;

    pub->body = NULL;
    pub->body_len = 0;
    if (c == NULL || c->in == NULL || c->state != S_CALL) {
        return;
    }
    rest = c->in_len - c->in_off; /* pipelined bytes behind the body */
    if (rest == 0) {
        in_release(c);
        return;
    }
    memmove(c->in, c->in + c->in_off, rest);
    c->in_off = c->body_off = 0;
    c->in_len = rest;
    if (c->in_cap > IN_BUF_BYTES && rest <= IN_BUF_BYTES &&
        (b = realloc(c->in, IN_BUF_BYTES)) != NULL) {
        c->in = b;
        c->in_cap = IN_BUF_BYTES;
    }
}

/* One read() into the input buffer, of up to @max bytes (less when the
 * buffer has IN_MIN_READ bytes of room but not @max): bytes read, 0 at EOF,
 * -1 on error (errno; EAGAIN when nothing was there, ENOMEM). */
static int sock_read(struct pg_httpd_conn *c, int max)
{
    size_t want = (size_t)max, room;
    ssize_t n;

    if (c->in_off == c->in_len && c->state != S_BODY) {
        c->in_off = c->in_len = 0; /* all parsed: start over */
    }
    room = c->in_cap - c->in_len;
    if (room < want && room >= IN_MIN_READ) {
        want = room;
    }
    if (!in_room(c, want)) {
        errno = ENOMEM;
        return -1;
    }
    n = read(c->fd, c->in + c->in_len, want);
    if (n > 0) {
        c->in_len += (size_t)n;
    }
    return (int)n;
}

/* ---- deadlines --------------------------------------------------------- */

/* The timer is moved only when a deadline comes earlier than the one it
 * is armed for: a later one (or none) waits for it to fire, and on_timer
 * then re-arms it or does nothing. A request then costs no timer changes
 * (it set four: header, body, none, idle). */
static void set_deadline(struct pg_httpd_conn *c, double at)
{
    c->deadline = at;
    if (at > 0 && (c->armed <= 0 || at < c->armed)) {
        struct timeval tv = pg_ns_to_tv((int64_t)((at - pg_mono_s()) * 1e9));

        c->armed = at;
        evtimer_add(c->timer, &tv);
    }
}

/* The earlier of two deadlines, 0 meaning none. */
static double earlier(double a, double b)
{
    if (a <= 0) {
        return b;
    }
    if (b <= 0) {
        return a;
    }
    return a < b ? a : b;
}

static double body_deadline(const struct pg_httpd_conn *c)
{
    const struct pg_httpd_limits *l = &c->srv->lim;
    double d = 0;

    if (l->read_timeout_ns > 0) {
        d = c->req_start + ns_s(l->read_timeout_ns);
    }
    if (l->min_body_rate > 0) {
        d = earlier(d, c->body_start + BODY_RATE_GRACE_S +
                           (double)c->body_got / (double)l->min_body_rate);
    }
    return d;
}

static void idle_deadline(struct pg_httpd_conn *c, bool first)
{
    const struct pg_httpd_limits *l = &c->srv->lim;
    int64_t t = first && l->read_header_timeout_ns > 0 ? l->read_header_timeout_ns
                                                       : l->idle_timeout_ns;

    if (t <= 0) {
        t = l->read_header_timeout_ns;
    }
    set_deadline(c, t > 0 ? pg_mono_s() + ns_s(t) : 0);
}

static void event_report(struct pg_httpd *s, int ev, const char *peer)
{
    if (s->ops.on_conn_event != NULL) {
        s->ops.on_conn_event(ev, peer, s->arg);
    }
}

/* Plain TCP only: a short answer written straight to the socket before it
 * closes (nothing waits for it to drain). */
static void raw_answer(struct pg_httpd_conn *c, int code, const char *reason)
{
    char buf[320];
    int n;

    if (c->srv->ssl_ctx != NULL) {
        return;
    }
    n = snprintf(buf, sizeof(buf),
                 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 "%sConnection: close\r\nContent-Length: %zu\r\n\r\n%s\n",
                 code, code == 408 ? "Request Timeout" : "Service Unavailable",
                 code == 503 ? "Retry-After: 1\r\n" : "", strlen(reason) + 1, reason);
    if (n > 0 && (size_t)n < sizeof(buf)) {
        (void)!send(c->fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
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

    if (c->srv->ssl_ctx != NULL) {
        return false;
    }
    if (before == S_HEAD) {
        size_t have = in_have(c);

        room = have < c->srv->lim.max_header_bytes + 1 ? c->srv->lim.max_header_bytes + 1 - have
                                                       : 0;
    } else if (c->req != NULL && !c->req->h.chunked &&
               c->req->h.content_length != PG_HTTP_NO_LENGTH) {
        room = (size_t)(c->req->h.content_length - c->body_got);
    } else {
        room = (size_t)c->srv->lim.max_body;
    }
    while (room > 0) {
        int n = sock_read(c, room > BULK_READ_BYTES ? BULK_READ_BYTES : (int)room);

        if (n <= 0) {
            break;
        }
        room -= (size_t)n;
    }
    process(c);
    if (s->open < open_before) {
        return true; /* closed on the way (out of memory): @c is gone */
    }
    return c->state != before || (before == S_BODY && c->body_got != got && c->deadline > pg_mono_s()) ||
           (before == S_HEAD && c->req != NULL);
}

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
        set_deadline(c, c->deadline); /* moved later meanwhile */
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
                 ns_s(s->lim.read_header_timeout_ns));
        raw_answer(c, 408, why);
        event_report(s, PG_HTTPD_CLOSED_HEADER_TIMEOUT, c->peer);
        s->ops.on_answer(c->req ? &c->req->pub : NULL, 408, why, c->peer, s->arg);
        break;
    case S_BODY:
        ev = s->lim.read_timeout_ns > 0 &&
                     pg_mono_s() + 0.001 >= c->req_start + ns_s(s->lim.read_timeout_ns)
                 ? PG_HTTPD_CLOSED_READ_TIMEOUT
                 : PG_HTTPD_CLOSED_BODY_RATE;
        if (ev == PG_HTTPD_CLOSED_READ_TIMEOUT) {
            snprintf(why, sizeof(why), "request body not complete within read_timeout (%.3g s)",
                     ns_s(s->lim.read_timeout_ns));
        } else {
            snprintf(why, sizeof(why), "request body slower than min_body_rate (%llu bytes/s)",
                     (unsigned long long)s->lim.min_body_rate);
        }
        raw_answer(c, 408, why);
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

/* ---- requests ------------------------------------------------------------ */

static void req_end(struct pg_httpd_conn *c)
{
    struct req_priv *r = c->req;

    if (r == NULL) {
        return;
    }
    c->req = NULL;
    if (c->srv->ops.on_done != NULL) {
        c->srv->ops.on_done(&r->pub, c->srv->arg);
    }
    /* r->in's entries are slots in c->hbuf: nothing to free. */
    evhttp_clear_headers(&r->out);
    if (c->hcap > HEAD_BUF_KEEP) {
        free(c->hbuf);
        c->hbuf = NULL;
        c->hcap = 0;
    }
}

static struct req_priv *req_new(struct pg_httpd_conn *c)
{
    struct req_priv *r = &c->rq;

    memset(r, 0, sizeof(*r));
    TAILQ_INIT(&r->in);
    TAILQ_INIT(&r->out);
    r->pub.conn = c;
    r->pub.method = "";
    r->pub.target = "";
    r->pub.path = "";
    r->pub.minor = 1;
    r->pub.in = &r->in;
    r->pub.out = &r->out;
    r->pub.content_length = PG_HTTP_NO_LENGTH;
    r->pub.peer_addr = c->addr;
    r->pub.peer_port = c->port;
    r->pub.peer = c->peer;
    r->pub.peer_hostport = c->ss_family_ip ? c->peer : "unix:0";
    r->pub.peer_key = &c->key;
    r->h.minor = 1;
    c->req = r;
    return r;
}

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

static void put_flush(struct head_out *h)
{
    if (h->n > 0) {
        evbuffer_add(h->ev, h->b, h->n);
        h->n = 0;
        h->spilled = true;
    }
}

static void put(struct head_out *h, const char *s, size_t n)
{
    if (h->n + n > sizeof(h->b)) {
        put_flush(h);
        if (n > sizeof(h->b)) {
            evbuffer_add(h->ev, s, n);
            return;
        }
    }
    memcpy(h->b + h->n, s, n);
    h->n += n;
}

static void put_str(struct head_out *h, const char *s)
{
    put(h, s, strlen(s));
}

static void written(struct pg_httpd_conn *c);

/* The answer's rest waits in the output buffer: reading pauses and the
 * bufferevent writes it, within write_timeout. */
static void wait_writable(struct pg_httpd_conn *c)
{
    const struct pg_httpd_limits *l = &c->srv->lim;

    read_off(c);
    bufferevent_enable(c->bev, EV_WRITE);
    set_deadline(c, l->write_timeout_ns > 0 ? pg_mono_s() + ns_s(l->write_timeout_ns) : 0);
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

/* A closing connection leaves the flush list. */
static void flush_unlink(struct pg_httpd_conn *c)
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
    /* One at a time off the list's head, so a connection the list still
     * holds can close meanwhile (flush_unlink) and an answer queued by
     * written() (a pipelined request) goes out in this pass too. */
    while ((c = s->flush_head) != NULL) {
        ssize_t n;

        s->flush_head = c->flush_next;
        if (s->flush_head == NULL) {
            s->flush_tail = &s->flush_head;
        }
        c->flush_queued = false;
        n = send(c->fd, c->ans, c->ans_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == (ssize_t)c->ans_len) {
            written(c);
            continue;
        }
        n = n > 0 ? n : 0;
        evbuffer_add(bufferevent_get_output(c->bev), c->ans + n, c->ans_len - (size_t)n);
        wait_writable(c);
    }
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

void pg_httpd_reply_body(struct pg_httpd_req *pub, int code, const char *ctype, const void *body,
                         size_t len)
{
    struct req_priv *r = (struct req_priv *)pub;
    struct pg_httpd_conn *c = pub->conn;
    struct pg_httpd *s = c->srv;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    const struct pg_httpd_limits *l = &s->lim;
    const struct evkeyval *kv;
    bool no_body = code == 204 || code == 304 || (code >= 100 && code < 200);

    if (r->answered) {
        return;
    }
    r->answered = true;
    c->linger = body_unread(c);
    c->close_after = c->linger || !r->h.keep_alive || !l->keep_alives || s->draining ||
                     header_says_close(&r->out) ||
                     (l->max_requests_per_connection > 0 &&
                      c->n_requests >= l->max_requests_per_connection);
    /* The head is put together here and added once (no printf: every
     * answer passes here). */
    {
        struct head_out h = {.ev = out};
        char num[24];
        size_t blen = 0;
        ssize_t sent = 0;

        put_str(&h, "HTTP/1.1 ");
        put(&h, num, pg_fmt_u64(num, (uint64_t)(code < 0 ? 0 : code)));
        put(&h, " ", 1);
        put_str(&h, status_text(code));
        put_str(&h, "\r\nDate: ");
        put_str(&h, http_date());
        put(&h, "\r\n", 2);
        TAILQ_FOREACH(kv, &r->out, next)
        {
            if (strcasecmp(kv->key, "Connection") != 0 &&
                strcasecmp(kv->key, "Content-Length") != 0) {
                put_str(&h, kv->key);
                put(&h, ": ", 2);
                put_str(&h, kv->value);
                put(&h, "\r\n", 2);
            }
        }
        if (c->close_after) {
            put_str(&h, "Connection: close\r\n");
        } else if (r->h.minor == 0) {
            put_str(&h, "Connection: keep-alive\r\n");
        }
        if (!no_body) {
            if (ctype != NULL) {
                put_str(&h, "Content-Type: ");
                put_str(&h, ctype);
                put(&h, "\r\n", 2);
            }
            put_str(&h, "Content-Length: ");
            put(&h, num, pg_fmt_u64(num, len));
            put(&h, "\r\n", 2);
        }
        put(&h, "\r\n", 2);
        if (!no_body && len > 0 && strcmp(r->pub.method, "HEAD") != 0) {
            blen = len;
        }
        /* Plain TCP with nothing queued before it (nearly every answer):
         * a short one is held and sent with the other answers of this loop
         * pass (on_flush), a longer one goes straight to the socket, so the
         * output buffer needs no chain; what the socket does not take is
         * queued as usual. */
        if (s->ssl_ctx == NULL && !h.spilled && evbuffer_get_length(out) == 0) {
            if (h.n + blen <= sizeof(c->ans)) {
                memcpy(c->ans, h.b, h.n);
                if (blen > 0) {
                    memcpy(c->ans + h.n, body, blen);
                }
                c->ans_len = h.n + blen;
                c->state = S_WRITE;
                set_deadline(c, 0);
                flush_queue(c);
                return;
            }
            sent = send_head_body(c->fd, h.b, h.n, body, blen);
        }
        if ((size_t)sent < h.n) {
            evbuffer_add(out, h.b + sent, h.n - (size_t)sent);
            sent = 0;
        } else {
            sent -= (ssize_t)h.n;
        }
        if ((size_t)sent < blen) {
            evbuffer_add(out, (const char *)body + sent, blen - (size_t)sent);
        }
    }
    c->state = S_WRITE;
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
            set_deadline(c, 0);
            event_active(c->written_ev, EV_WRITE, 1);
            return;
        }
    }
    wait_writable(c);
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

/* An answer from the server itself (the handler never saw the request). */
static void refuse(struct pg_httpd_conn *c, int code, const char *why)
{
    if (c->req == NULL && req_new(c) == NULL) {
        conn_close(c);
        return;
    }
    /* Framing cannot be trusted after a bad head: never keep the
     * connection, and drop (linger) whatever the client still sends so it
     * can read the answer. */
    c->req->h.keep_alive = false;
    c->req->h.chunked = false;
    c->req->h.content_length = PG_HTTP_NO_LENGTH;
    pg_httpd_reply(&c->req->pub, code, why);
    c->linger = true;
}

/* ---- reading ------------------------------------------------------------- */

static void body_complete(struct pg_httpd_conn *c)
{
    c->body_done = true;
    c->state = S_CALL;
    c->req->pub.body = c->in != NULL ? c->in + c->body_off : "";
    c->req->pub.body_len = (size_t)c->body_got;
    set_deadline(c, 0);
    c->srv->ops.on_request(&c->req->pub, c->srv->arg);
    /* Reading stops while the handler holds the request (answered later,
     * from a worker); one answered already keeps it on, saving two epoll
     * changes per request. */
    if (c->state == S_CALL) {
        read_off(c);
    }
}

/* Finds the end of the head in the @len bytes at @b (the byte after its
 * blank line); 0 = not yet. c->scanned keeps how far it looked. */
static size_t head_end(struct pg_httpd_conn *c, const char *b, size_t len)
{
    size_t i = c->scanned;

    for (;;) {
        const char *nl = i < len ? memchr(b + i, '\n', len - i) : NULL;
        size_t p;

        if (nl == NULL) {
            c->scanned = len;
            return 0;
        }
        p = (size_t)(nl - b);
        if (p + 1 >= len || (b[p + 1] == '\r' && p + 2 >= len)) {
            c->scanned = p;
            return 0;
        }
        if (b[p + 1] == '\n') {
            return p + 2;
        }
        if (b[p + 1] == '\r' && b[p + 2] == '\n') {
            return p + 3;
        }
        i = p + 1;
    }
}

static void start_body(struct pg_httpd_conn *c)
{
    struct req_priv *r = c->req;
    struct pg_httpd *s = c->srv;

    c->body_start = pg_mono_s();
    c->body_got = 0;
    c->body_off = c->in_off;
    c->body_done = false;
    memset(&c->ch, 0, sizeof(c->ch));
    if (!r->h.chunked && (r->h.content_length == PG_HTTP_NO_LENGTH || r->h.content_length == 0)) {
        c->body_done = true; /* no body: requests without framing have none */
    }
    if (!s->ops.on_head(&r->pub, s->arg)) {
        if (!r->answered) {
            pg_httpd_reply(&r->pub, 500, "request refused without an answer");
        }
        return;
    }
    if (r->answered) {
        return;
    }
    if (!r->h.chunked && r->h.content_length != PG_HTTP_NO_LENGTH &&
        r->h.content_length > s->lim.max_body) {
        /* The handler's check comes first (so auth answers before size);
         * this one holds for handlers without it. Nothing was read. */
        char why[160];

        snprintf(why, sizeof(why), "request body of %llu bytes exceeds max_request_body_size "
                 "(%llu bytes)", (unsigned long long)r->h.content_length,
                 (unsigned long long)s->lim.max_body);
        pg_httpd_reply(&r->pub, 413, why);
        return;
    }
    if (c->body_done) {
        body_complete(c);
        return;
    }
    if (r->h.expect_continue) {
        bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
        bufferevent_enable(c->bev, EV_WRITE);
    }
    c->state = S_BODY;
    if (r->h.chunked || r->h.content_length > BULK_BODY_BYTES) {
        read_size(c, BULK_READ_BYTES);
    }
    /* A body that came with its head (an SDK push, most often) ends in
     * process() now: no deadline to set for it. */
    if (r->h.chunked || in_have(c) < r->h.content_length) {
        set_deadline(c, body_deadline(c));
    }
    process(c);
}

/* Bytes of a head of @end bytes and its path, rounded for the slots after. */
static size_t strs_size(size_t end)
{
    return (2 * (end + 1) + _Alignof(struct evkeyval) - 1) & ~(_Alignof(struct evkeyval) - 1);
}

/* c->hbuf holds at least @need bytes, its content kept; false on OOM. */
static bool head_buf(struct pg_httpd_conn *c, size_t need)
{
    char *b;

    if (need <= c->hcap) {
        return true;
    }
    b = realloc(c->hbuf, need);
    if (b == NULL) {
        return false;
    }
    c->hbuf = b;
    c->hcap = need;
    return true;
}

static void read_head(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;
    struct pg_http_parse_limits pl = {s->lim.max_target, s->lim.max_headers};
    struct req_priv *r;
    char why[200];
    char *head;
    size_t end, lines;
    int code;

    if (!c->started) {
        /* Blank lines before a request are allowed (RFC 9112 2.2). */
        for (;;) {
            const char *b = c->in + c->in_off;
            size_t got = in_have(c);

            if (got >= 1 && b[0] == '\n') {
                c->in_off += 1;
            } else if (got >= 2 && b[0] == '\r' && b[1] == '\n') {
                c->in_off += 2;
            } else {
                break;
            }
        }
        if (in_have(c) == 0) {
            return;
        }
        c->started = true;
        c->scanned = 0;
        c->req_start = pg_mono_s();
        if (s->lim.read_header_timeout_ns > 0) {
            set_deadline(c, c->req_start + ns_s(s->lim.read_header_timeout_ns));
        } else {
            set_deadline(c, 0);
        }
    }
    end = head_end(c, c->in + c->in_off, in_have(c));
    if (end == 0) {
        if (in_have(c) > s->lim.max_header_bytes) {
            snprintf(why, sizeof(why), "request head larger than %zu bytes",
                     s->lim.max_header_bytes);
            refuse(c, 431, why);
        }
        return;
    }
    if (end > s->lim.max_header_bytes) {
        snprintf(why, sizeof(why), "request head larger than %zu bytes", s->lim.max_header_bytes);
        refuse(c, 431, why);
        return;
    }
    r = req_new(c);
    {
        /* One buffer for the request's strings and header slots, kept by
         * the connection: [head NUL][path NUL][slots], the path no longer
         * than the head, the headers at most the head's line feeds. */
        size_t strs = strs_size(end);

        if (!head_buf(c, strs)) {
            conn_close(c);
            return;
        }
        head = c->hbuf;
        memcpy(head, c->in + c->in_off, end);
        c->in_off += end;
        head[end] = '\0';
        lines = pg_http_head_lines(head, end);
        if (!head_buf(c, strs + lines * sizeof(struct evkeyval))) {
            conn_close(c);
            return;
        }
        head = c->hbuf;
    }
    c->n_requests++;
    code = pg_http_parse_head_in(head, end, &pl, &r->in,
                                 (struct evkeyval *)(void *)(head + strs_size(end)), lines, &r->h,
                                 why, sizeof(why));
    if (code != 0) {
        refuse(c, code, why);
        return;
    }
    r->pub.method = r->h.method;
    r->pub.target = r->h.target;
    r->pub.minor = r->h.minor;
    r->pub.chunked = r->h.chunked;
    r->pub.content_length = r->h.chunked ? PG_HTTP_NO_LENGTH : r->h.content_length;
    {
        size_t plen = strcspn(r->h.target, "?");
        char *path = head + end + 1; /* room for end + 1 bytes */

        memcpy(path, r->h.target, plen);
        path[plen] = '\0';
        r->pub.path = path;
    }
    start_body(c);
}

static void read_body(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;
    struct req_priv *r = c->req;
    uint64_t before = c->body_got;
    char why[200];

    while (in_have(c) > 0 && !c->body_done) {
        if (!r->h.chunked) {
            /* The bytes are where the body goes: right after what it has. */
            uint64_t want = r->h.content_length - c->body_got;
            size_t n = in_have(c);

            if (n > want) {
                n = (size_t)want;
            }
            c->in_off += n;
            c->body_got += n;
            c->body_done = c->body_got == r->h.content_length;
        } else {
            size_t used = 0, data = 0;
            enum pg_http_chunk_rc rc;

            rc = pg_http_chunked_feed(&c->ch, (const uint8_t *)c->in + c->in_off, in_have(c),
                                      &used, &data, why, sizeof(why));
            if (rc == PG_HTTP_CHUNK_ERROR) {
                c->req->h.keep_alive = false;
                pg_httpd_reply(&r->pub, 400, why);
                return;
            }
            if (data > 0) {
                if (c->body_got + data > s->lim.max_body) {
                    snprintf(why, sizeof(why), "request body exceeds max_request_body_size "
                             "(%llu bytes)", (unsigned long long)s->lim.max_body);
                    pg_httpd_reply(&r->pub, 413, why);
                    return;
                }
                /* Data moves down over the framing before it. */
                memmove(c->in + c->body_off + c->body_got, c->in + c->in_off, data);
                c->body_got += data;
                c->in_off += data;
            } else {
                c->in_off += used;
            }
            c->body_done = rc == PG_HTTP_CHUNK_DONE;
        }
    }
    if (c->body_got != before && s->ops.on_body != NULL &&
        !s->ops.on_body(&r->pub, c->body_got, s->arg)) {
        if (!r->answered) {
            pg_httpd_reply(&r->pub, 500, "request refused without an answer");
        }
        return;
    }
    if (c->body_done) {
        body_complete(c);
    } else if (c->body_got != before) {
        set_deadline(c, body_deadline(c));
    }
}

static void linger_read(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;
    size_t n = in_have(c);
    double now = pg_mono_s();

    struct httpd_shared *sh = s->sh;
    bool over;

    pthread_mutex_lock(&sh->mu);
    sh->linger_tokens += (now - sh->linger_last) * LINGER_BUDGET_PER_S;
    if (sh->linger_tokens > LINGER_BUDGET_PER_S) {
        sh->linger_tokens = LINGER_BUDGET_PER_S;
    }
    sh->linger_last = now;
    sh->linger_tokens -= (double)n;
    over = sh->linger_tokens < 0;
    pthread_mutex_unlock(&sh->mu);
    c->in_off = c->in_len = 0; /* dropped */
    c->lingered += n;
    if (c->lingered > LINGER_MAX_BYTES || over) {
        conn_close(c);
    }
}

/* Runs the state machine over what is buffered. */
static void process(struct pg_httpd_conn *c)
{
    switch (c->state) {
    case S_HEAD:
        read_head(c);
        break;
    case S_BODY:
        read_body(c);
        break;
    case S_LINGER:
        linger_read(c);
        break;
    default:
        break;
    }
}

/* TLS: what the bufferevent decrypted moves to the input buffer. */
static void on_read(struct bufferevent *bev, void *arg)
{
    struct pg_httpd_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n = evbuffer_get_length(in);

    if (n == 0) {
        return;
    }
    if (c->in_off == c->in_len && c->state != S_BODY) {
        c->in_off = c->in_len = 0;
    }
    if (!in_room(c, n)) {
        conn_close(c);
        return;
    }
    evbuffer_remove(in, c->in + c->in_len, n);
    c->in_len += n;
    process(c);
}

/* The answer is out: next request, linger, or close. */
static void written(struct pg_httpd_conn *c)
{
    req_end(c);
    if (c->close_after) {
        if (c->linger && c->srv->ssl_ctx == NULL) {
            c->state = S_LINGER;
            read_size(c, BULK_READ_BYTES);
            shutdown(c->fd, SHUT_WR);
            set_deadline(c, pg_mono_s() + LINGER_S);
            read_on(c);
            linger_read(c);
            return;
        }
        conn_close(c);
        return;
    }
    c->state = S_HEAD;
    c->started = false;
    read_size(c, 0); /* the default again */
    idle_deadline(c, false);
    read_on(c);
    if (in_have(c) > 0) {
        process(c); /* pipelined */
    } else {
        in_release(c);
    }
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
            read_off(c);
            return;
        }
        conn_close(c); /* half a request then EOF: nothing to answer */
    }
}

static void on_sock_read(evutil_socket_t fd, short what, void *arg)
{
    struct pg_httpd_conn *c = arg;
    int n, want;

    (void)fd;
    (void)what;
    want = c->read_max;
    if (c->state == S_LINGER) {
        want = want < IN_BUF_BYTES ? want : IN_BUF_BYTES; /* dropped: no larger buffer */
    } else if (c->state == S_BODY) {
        /* About what arrives (twice the last read, 4 KiB at least) and never
         * past the announced length: the buffer grows with the bytes that
         * came, not ahead of them. */
        int hint = c->last_read < (1 << 29) ? 2 * c->last_read : want;

        want = hint < 4096 ? 4096 : (hint < want ? hint : want);
        if (c->req != NULL && !c->req->h.chunked && c->req->h.content_length != PG_HTTP_NO_LENGTH &&
            c->req->h.content_length - c->body_got < (uint64_t)want) {
            want = (int)(c->req->h.content_length - c->body_got);
            want = want > 0 ? want : 1;
        }
    }
    n = sock_read(c, want);
    c->last_read = n > 0 ? n : 0;
    if (n > 0) {
        process(c);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return;
    }
    /* As the bufferevent would: reading stops, then the event decides. */
    read_off(c);
    on_event(c->bev, BEV_EVENT_READING | (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR), c);
}

/* ---- connections ------------------------------------------------------- */

static void conn_close(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;

    req_end(c);
    flush_unlink(c);
    if (c->timer != NULL) {
        event_free(c->timer);
    }
    if (c->written_ev != NULL) {
        event_free(c->written_ev);
    }
    if (c->read_ev != NULL) {
        event_free(c->read_ev);
    }
    free(c->in);
    free(c->hbuf);
    if (c->bev != NULL) {
        bufferevent_free(c->bev); /* closes the fd */
    } else if (c->fd >= 0) {
        close(c->fd);
    }
    pthread_mutex_lock(&s->sh->mu);
    pg_peer_counts_dec(s->sh->peers, &c->key);
    s->sh->open--;
    pthread_mutex_unlock(&s->sh->mu);
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

static void format_peer(struct pg_httpd_conn *c, const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

        inet_ntop(AF_INET, &a->sin_addr, c->addr, sizeof(c->addr));
        c->port = ntohs(a->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

        inet_ntop(AF_INET6, &a->sin6_addr, c->addr, sizeof(c->addr));
        c->port = ntohs(a->sin6_port);
    } else {
        snprintf(c->addr, sizeof(c->addr), "unix");
    }
    c->ss_family_ip = ss->ss_family == AF_INET || ss->ss_family == AF_INET6;
    if (c->ss_family_ip) {
        pg_http_hostport(c->peer, sizeof(c->peer), c->addr, c->port);
    } else {
        snprintf(c->peer, sizeof(c->peer), "unix");
    }
}

static void conn_new(struct pg_httpd *s, int fd, const struct sockaddr_storage *ss,
                     const struct pg_peer_key *key)
{
    struct pg_httpd_conn *c = calloc(1, sizeof(*c));
    int one = 1;

    if (c == NULL) {
        pthread_mutex_lock(&s->sh->mu);
        pg_peer_counts_dec(s->sh->peers, key);
        s->sh->open--;
        pthread_mutex_unlock(&s->sh->mu);
        close(fd);
        return;
    }
    c->srv = s;
    c->fd = fd;
    c->key = *key;
    format_peer(c, ss);
    if (ss->ss_family == AF_INET || ss->ss_family == AF_INET6) {
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
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
        c->read_max = HEAD_READ_BYTES;
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
    read_on(c);
    c->state = S_HEAD;
    idle_deadline(c, true);
}

/* Counts a new connection of @k against the caps every sibling shares:
 * -1 when counted, else the refusal (nothing counted). */
static int count_conn(struct pg_httpd *s, const struct pg_peer_key *k)
{
    struct httpd_shared *sh = s->sh;
    int rc = -1;

    pthread_mutex_lock(&sh->mu);
    if (sh->open >= s->cap) {
        rc = PG_HTTPD_REFUSED_MAX_CONNECTIONS;
    } else if (s->lim.max_connections_per_peer > 0 &&
               pg_peer_counts_get(sh->peers, k) >= s->lim.max_connections_per_peer) {
        rc = PG_HTTPD_REFUSED_PER_PEER;
    } else if (!pg_peer_counts_inc(sh->peers, k)) {
        rc = PG_HTTPD_REFUSED_MAX_CONNECTIONS; /* out of memory: refuse as if full */
    } else {
        sh->open++;
    }
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    struct pg_httpd *s = arg;

    (void)what;
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        struct pg_peer_key key;
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return;
            }
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) {
                continue;
            }
            /* EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays in the
             * backlog; retrying at once would spin the loop. */
            struct timeval tv = {0, ACCEPT_PAUSE_US};

            event_del(s->accept_ev);
            evtimer_add(s->retry_ev, &tv);
            event_report(s, PG_HTTPD_ACCEPT_PAUSED, strerror(errno));
            return;
        }
        if (sl == 0) {
            ss.ss_family = AF_UNIX;
        }
        pg_peer_key_from_sockaddr((struct sockaddr *)&ss, &key);
        switch (count_conn(s, &key)) {
        case PG_HTTPD_REFUSED_MAX_CONNECTIONS: {
            char peer[80];
            struct pg_httpd_conn tmp = {.srv = s, .fd = fd};

            format_peer(&tmp, &ss);
            snprintf(peer, sizeof(peer), "%s", tmp.peer);
            raw_answer(&tmp, 503, "too many connections (max_connections); retry later");
            close(fd);
            event_report(s, PG_HTTPD_REFUSED_MAX_CONNECTIONS, peer);
            continue;
        }
        case PG_HTTPD_REFUSED_PER_PEER: {
            struct pg_httpd_conn tmp = {.srv = s, .fd = fd};

            format_peer(&tmp, &ss);
            raw_answer(&tmp, 503, "too many connections from this peer "
                                  "(max_connections_per_peer); retry later");
            close(fd);
            event_report(s, PG_HTTPD_REFUSED_PER_PEER, tmp.peer);
            continue;
        }
        default:
            break;
        }
        conn_new(s, fd, &ss, &key);
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct pg_httpd *s = arg;

    (void)fd;
    (void)what;
    if (s->lfd >= 0) {
        event_add(s->accept_ev, NULL);
    }
}

static struct pg_httpd *server_new(struct httpd_shared *sh, struct event_base *base, int fd,
                                   SSL_CTX *ssl_ctx, const struct pg_httpd_limits *lim,
                                   const struct pg_httpd_ops *ops, void *arg)
{
    struct pg_httpd *s = aligned_alloc(HTTPD_LINE, sizeof(*s));
    struct rlimit rl;

    if (s == NULL) {
        close(fd);
        return NULL;
    }
    memset(s, 0, sizeof(*s));
    if (sh == NULL) {
        sh = calloc(1, sizeof(*sh));
        if (sh == NULL || (sh->peers = pg_peer_counts_new()) == NULL) {
            free(sh);
            free(s);
            close(fd);
            return NULL;
        }
        pthread_mutex_init(&sh->mu, NULL);
        sh->linger_tokens = LINGER_BUDGET_PER_S;
        sh->linger_last = pg_mono_s();
    }
    pthread_mutex_lock(&sh->mu);
    sh->refs++;
    pthread_mutex_unlock(&sh->mu);
    s->sh = sh;
    s->base = base;
    s->ssl_ctx = ssl_ctx;
    s->lim = *lim;
    s->ops = *ops;
    s->arg = arg;
    s->lfd = fd;
    s->cap = lim->max_connections > 0 ? lim->max_connections : SIZE_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        size_t fds = rl.rlim_cur > 2 * FD_HEADROOM ? (size_t)rl.rlim_cur - FD_HEADROOM
                                                   : (size_t)rl.rlim_cur / 2;

        if (fds < s->cap) {
            s->cap = fds;
        }
    }
    s->accept_ev = event_new(base, fd, EV_READ | EV_PERSIST, on_accept, s);
    s->retry_ev = evtimer_new(base, on_retry, s);
    s->flush_tail = &s->flush_head;
    s->flush_ev = event_new(base, -1, 0, on_flush, s);
    if (s->accept_ev == NULL || s->retry_ev == NULL || s->flush_ev == NULL ||
        event_add(s->accept_ev, NULL) != 0) {
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
    return server_new(first->sh, base, fd, first->ssl_ctx, &first->lim, &first->ops, arg);
}

void pg_httpd_stop_accepting(struct pg_httpd *s)
{
    if (s == NULL || s->lfd < 0) {
        return;
    }
    event_del(s->accept_ev);
    evtimer_del(s->retry_ev);
    close(s->lfd);
    s->lfd = -1;
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
    for (struct pg_httpd_conn *c; (c = s->flush_head) != NULL;) {
        s->flush_head = c->flush_next;
        c->flush_queued = false;
        (void)!send(c->fd, c->ans, c->ans_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    s->flush_tail = &s->flush_head;
    while (s->conns != NULL) {
        conn_close(s->conns);
    }
    if (s->accept_ev != NULL) {
        event_free(s->accept_ev);
    }
    if (s->retry_ev != NULL) {
        event_free(s->retry_ev);
    }
    if (s->flush_ev != NULL) {
        event_free(s->flush_ev);
    }
    while (s->n_spares > 0) {
        free(s->spares[--s->n_spares]);
    }
    {
        struct httpd_shared *sh = s->sh;
        int left;

        pthread_mutex_lock(&sh->mu);
        left = --sh->refs;
        pthread_mutex_unlock(&sh->mu);
        if (left == 0) {
            pg_peer_counts_free(sh->peers);
            pthread_mutex_destroy(&sh->mu);
            free(sh);
        }
    }
    free(s);
}

int pg_httpd_fd(const struct pg_httpd *s)
{
    return s != NULL ? s->lfd : -1;
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
    return s != NULL ? s->cap : 0;
}
