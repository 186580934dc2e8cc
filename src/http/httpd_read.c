/* SPDX-License-Identifier: Apache-2.0
 * One HTTP/1.1 request in, from the connection's input buffer (see
 * httpd_read.h): the head (found, copied into the connection's head buffer,
 * parsed by http_parse), the handler's say before any body byte, the body
 * by Content-Length or chunked framing left where it was read, the server's
 * own refusals, and the drain of a refused upload (linger). */
#include "http/httpd_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/http.h>

#include "http/http_server_internal.h"

/* A connection keeps its head buffer (head bytes, path, header slots) for
 * the next request up to this size; a larger one (a head near
 * max_request_header_bytes) is given back when its request ends. */
#define HEAD_BUF_KEEP (8 * 1024)
/* Bodies larger than this are read HTTPD_BULK_READ_BYTES at a time. */
#define BULK_BODY_BYTES (64 * 1024)
/* The minimum body rate is judged after this long, so a slow start (TCP
 * slow start, a client preparing its stream) is not penalised. */
#define BODY_RATE_GRACE_S 2.0
#define LINGER_MAX_BYTES (64u << 20)
/* Bytes all lingering connections together may drop per second (and at
 * once): a lone refused upload is drained so its client reads the answer;
 * a flood of them is cut off (reset) instead of costing the loop its CPU. */
#define LINGER_BUDGET_PER_S (32.0 * 1024 * 1024)

void httpd_req_end(struct pg_httpd_conn *c)
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

/* An answer from the server itself (the handler never saw the request). */
static void refuse(struct pg_httpd_conn *c, int code, const char *why)
{
    if (c->req == NULL) {
        req_new(c);
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

/* read_timeout from the request's first byte, or the minimum body rate. */
static double body_deadline(const struct pg_httpd_conn *c)
{
    const struct pg_httpd_limits *l = &c->srv->lim;
    double d = 0;

    if (l->read_timeout_ns > 0) {
        d = c->req_start + httpd_ns_s(l->read_timeout_ns);
    }
    if (l->min_body_rate > 0) {
        d = earlier(d, c->body_start + BODY_RATE_GRACE_S +
                           (double)c->body_got / (double)l->min_body_rate);
    }
    return d;
}

/* The body is in: the handler gets it where it was read. */
static enum httpd_step body_complete(struct pg_httpd_conn *c)
{
    c->body_done = true;
    c->state = S_CALL;
    c->req->pub.body = c->in != NULL ? c->in + c->body_off : "";
    c->req->pub.body_len = (size_t)c->body_got;
    httpd_set_deadline(c, 0);
    return HTTPD_STEP_REQUEST;
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

/* The head is parsed: the handler decides, then the body is set up. */
static enum httpd_step start_body(struct pg_httpd_conn *c)
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
        return HTTPD_STEP_WAIT;
    }
    if (r->answered) {
        return HTTPD_STEP_WAIT;
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
        return HTTPD_STEP_WAIT;
    }
    if (c->body_done) {
        return body_complete(c);
    }
    if (r->h.expect_continue) {
        bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
        bufferevent_enable(c->bev, EV_WRITE);
    }
    c->state = S_BODY;
    if (r->h.chunked || r->h.content_length > BULK_BODY_BYTES) {
        httpd_read_size(c, HTTPD_BULK_READ_BYTES);
    }
    /* A body that came with its head (an SDK push, most often) is taken in
     * the caller's next step: no deadline to set for it. */
    if (r->h.chunked || httpd_in_have(c) < r->h.content_length) {
        httpd_set_deadline(c, body_deadline(c));
    }
    return HTTPD_STEP_NEXT;
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

/* The first byte of a request (blank lines before one are allowed, RFC 9112
 * 2.2) starts its header deadline: false while there is none yet. */
static bool head_started(struct pg_httpd_conn *c)
{
    const struct pg_httpd_limits *l = &c->srv->lim;

    for (;;) {
        const char *b = c->in + c->in_off;
        size_t got = httpd_in_have(c);

        if (got >= 1 && b[0] == '\n') {
            c->in_off += 1;
        } else if (got >= 2 && b[0] == '\r' && b[1] == '\n') {
            c->in_off += 2;
        } else {
            break;
        }
    }
    if (httpd_in_have(c) == 0) {
        return false;
    }
    c->started = true;
    c->scanned = 0;
    c->req_start = pg_mono_s();
    httpd_set_deadline(c, l->read_header_timeout_ns > 0
                              ? c->req_start + httpd_ns_s(l->read_header_timeout_ns) : 0);
    return true;
}

enum httpd_step httpd_read_head(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;
    struct pg_http_parse_limits pl = {s->lim.max_target, s->lim.max_headers};
    struct req_priv *r;
    char why[200];
    char *head;
    size_t end, lines, strs;
    int code;

    if (!c->started && !head_started(c)) {
        return HTTPD_STEP_WAIT;
    }
    end = head_end(c, c->in + c->in_off, httpd_in_have(c));
    if (end == 0 ? httpd_in_have(c) > s->lim.max_header_bytes : end > s->lim.max_header_bytes) {
        snprintf(why, sizeof(why), "request head larger than %zu bytes", s->lim.max_header_bytes);
        refuse(c, 431, why);
        return HTTPD_STEP_WAIT;
    }
    if (end == 0) {
        return HTTPD_STEP_WAIT;
    }
    r = req_new(c);
    /* One buffer for the request's strings and header slots, kept by the
     * connection: [head NUL][path NUL][slots], the path no longer than the
     * head, the headers at most the head's line feeds. */
    strs = strs_size(end);
    if (!head_buf(c, strs)) {
        return HTTPD_STEP_CLOSE;
    }
    head = c->hbuf;
    memcpy(head, c->in + c->in_off, end);
    c->in_off += end;
    head[end] = '\0';
    lines = pg_http_head_lines(head, end);
    if (!head_buf(c, strs + lines * sizeof(struct evkeyval))) {
        return HTTPD_STEP_CLOSE;
    }
    head = c->hbuf;
    c->n_requests++;
    code = pg_http_parse_head_in(head, end, &pl, &r->in,
                                 (struct evkeyval *)(void *)(head + strs), lines, &r->h, why,
                                 sizeof(why));
    if (code != 0) {
        refuse(c, code, why);
        return HTTPD_STEP_WAIT;
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
    return start_body(c);
}

/* Chunked framing: data moves down over the framing before it. False when
 * the request was answered (bad framing, past the cap). */
static bool body_chunked(struct pg_httpd_conn *c)
{
    struct req_priv *r = c->req;
    uint64_t max = c->srv->lim.max_body;
    size_t used = 0, data = 0;
    enum pg_http_chunk_rc rc;
    char why[200];

    rc = pg_http_chunked_feed(&c->ch, (const uint8_t *)c->in + c->in_off, httpd_in_have(c),
                              &used, &data, why, sizeof(why));
    if (rc == PG_HTTP_CHUNK_ERROR) {
        r->h.keep_alive = false;
        pg_httpd_reply(&r->pub, 400, why);
        return false;
    }
    if (data > 0) {
        if (c->body_got + data > max) {
            snprintf(why, sizeof(why), "request body exceeds max_request_body_size "
                     "(%llu bytes)", (unsigned long long)max);
            pg_httpd_reply(&r->pub, 413, why);
            return false;
        }
        memmove(c->in + c->body_off + c->body_got, c->in + c->in_off, data);
        c->body_got += data;
        c->in_off += data;
    } else {
        c->in_off += used;
    }
    c->body_done = rc == PG_HTTP_CHUNK_DONE;
    return true;
}

enum httpd_step httpd_read_body(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;
    struct req_priv *r = c->req;
    uint64_t before = c->body_got;

    while (httpd_in_have(c) > 0 && !c->body_done) {
        if (!r->h.chunked) {
            /* The bytes are where the body goes: right after what it has. */
            uint64_t want = r->h.content_length - c->body_got;
            size_t n = httpd_in_have(c);

            if (n > want) {
                n = (size_t)want;
            }
            c->in_off += n;
            c->body_got += n;
            c->body_done = c->body_got == r->h.content_length;
        } else if (!body_chunked(c)) {
            return HTTPD_STEP_WAIT;
        }
    }
    if (c->body_got != before && s->ops.on_body != NULL &&
        !s->ops.on_body(&r->pub, c->body_got, s->arg)) {
        if (!r->answered) {
            pg_httpd_reply(&r->pub, 500, "request refused without an answer");
        }
        return HTTPD_STEP_WAIT;
    }
    if (c->body_done) {
        return body_complete(c);
    }
    if (c->body_got != before) {
        httpd_set_deadline(c, body_deadline(c));
    }
    return HTTPD_STEP_WAIT;
}

bool httpd_linger_read(struct pg_httpd_conn *c)
{
    size_t n = httpd_in_have(c);
    bool within = pg_acceptor_budget_spend(&c->srv->acc, n, LINGER_BUDGET_PER_S);

    c->in_off = c->in_len = 0; /* dropped */
    c->lingered += n;
    return within && c->lingered <= LINGER_MAX_BYTES;
}
