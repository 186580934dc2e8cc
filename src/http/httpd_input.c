/* SPDX-License-Identifier: Apache-2.0
 * The HTTP/1.1 server's input buffer (see httpd_input.h): one flat buffer
 * per connection that plain TCP reads straight into and TLS copies its
 * decrypted bytes into. A head is parsed from it and the body stays where
 * it was read (the handler gets a pointer), so a push costs no allocation
 * and no copy of its body here. Standard-size buffers are shared between
 * connections through the server's spares; a large body's buffer comes from
 * core/bufpool, so back-to-back large pushes write into pages already
 * resident instead of faulting in fresh ones each time. */
#include "http/httpd_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "core/bufpool.h"
#include "http/http_server_internal.h"

/* A read asks for at least this much room (else the buffer grows). */
#define IN_MIN_READ 4096

_Static_assert(HTTPD_IN_BUF_BYTES == PG_HTTPD_POOLED_BODY, "http_server.h names the pooled size");
_Static_assert(HTTPD_IN_BUF_BYTES < PG_BUFPOOL_MIN, "a spare is malloc's, never the pool's");

/* The buffer goes back where it came from (the pool, the spares, or the
 * heap); the connection has none after. */
static void in_give_back(struct pg_httpd_conn *c)
{
    struct pg_httpd *s = c->srv;

    if (c->in_pooled) {
        pg_bufpool_put(c->in, c->in_cap, c->in_hwm);
    } else if (c->in_cap == HTTPD_IN_BUF_BYTES && s->n_spares < HTTPD_IN_SPARES) {
        s->spares[s->n_spares++] = c->in;
    } else {
        free(c->in);
    }
    c->in = NULL;
    c->in_pooled = false;
    c->in_cap = c->in_hwm = 0;
}

/* The buffer becomes one of @cap bytes or more, its first @keep bytes kept:
 * from the pool from PG_BUFPOOL_MIN up, from malloc below. False on OOM
 * (the old one is kept). */
static bool in_resize(struct pg_httpd_conn *c, size_t cap, size_t keep)
{
    bool pooled = cap >= PG_BUFPOOL_MIN;
    size_t got = cap;
    char *b;

    if (!pooled && !c->in_pooled) {
        b = realloc(c->in, cap);
        if (b == NULL) {
            return false;
        }
        c->in = b;
        c->in_cap = cap;
        return true;
    }
    b = pooled ? pg_bufpool_get(cap, &got) : malloc(cap);
    if (b == NULL) {
        return false;
    }
    if (keep > 0) {
        memcpy(b, c->in, keep);
    }
    if (c->in != NULL) {
        in_give_back(c);
    }
    c->in = b;
    c->in_cap = got;
    c->in_pooled = pooled;
    c->in_hwm = keep;
    return true;
}

bool httpd_in_room(struct pg_httpd_conn *c, size_t want)
{
    struct pg_httpd *s = c->srv;
    size_t keep, need, cap;

    if (c->in_cap - c->in_len >= want) {
        return true;
    }
    if (c->in == NULL && want <= HTTPD_IN_BUF_BYTES && s->n_spares > 0) {
        c->in = s->spares[--s->n_spares];
        c->in_cap = HTTPD_IN_BUF_BYTES;
        c->in_off = c->in_len = c->body_off = c->in_hwm = 0;
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
    cap = c->in_cap > 0 ? 2 * c->in_cap : HTTPD_IN_BUF_BYTES;
    if (c->state == S_BODY && c->req != NULL && !c->req->h.chunked &&
        c->req->h.content_length != PG_HTTP_NO_LENGTH) {
        /* A body of known (admitted, capped) length gets its size at once:
         * doubling towards it would copy it several times and leave the
         * last step up to twice as large. */
        cap = (size_t)(c->body_off + c->req->h.content_length);
    }
    cap = cap > need ? cap : need;
    return in_resize(c, cap, c->in_len);
}

void httpd_in_release(struct pg_httpd_conn *c)
{
    if (c->in == NULL || c->in_off < c->in_len) {
        return;
    }
    in_give_back(c);
    c->in_off = c->in_len = c->body_off = 0;
}

void httpd_in_free(struct pg_httpd_conn *c)
{
    if (c->in_pooled) {
        pg_bufpool_put(c->in, c->in_cap, c->in_hwm);
    } else {
        free(c->in);
    }
    c->in = NULL;
    c->in_pooled = false;
    c->in_cap = c->in_off = c->in_len = c->body_off = c->in_hwm = 0;
}

void httpd_in_spares_free(struct pg_httpd *s)
{
    while (s->n_spares > 0) {
        free(s->spares[--s->n_spares]);
    }
}

void pg_httpd_drop_body(struct pg_httpd_req *pub)
{
    struct pg_httpd_conn *c = pub->conn;
    size_t rest;

    pub->body = NULL;
    pub->body_len = 0;
    if (c == NULL || c->in == NULL || c->state != S_CALL) {
        return;
    }
    rest = c->in_len - c->in_off; /* pipelined bytes behind the body */
    if (rest == 0) {
        httpd_in_release(c);
        return;
    }
    memmove(c->in, c->in + c->in_off, rest);
    c->in_off = c->body_off = 0;
    c->in_len = rest;
    if (c->in_cap > HTTPD_IN_BUF_BYTES && rest <= HTTPD_IN_BUF_BYTES) {
        (void)in_resize(c, HTTPD_IN_BUF_BYTES, rest); /* on OOM the large one stays */
    }
}

int httpd_sock_read(struct pg_httpd_conn *c, int max)
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
    if (!httpd_in_room(c, want)) {
        errno = ENOMEM;
        return -1;
    }
    n = read(c->fd, c->in + c->in_len, want);
    if (n > 0) {
        c->in_len += (size_t)n;
        if (c->in_len > c->in_hwm) {
            c->in_hwm = c->in_len;
        }
    }
    return (int)n;
}

int httpd_sock_read_next(struct pg_httpd_conn *c)
{
    int n, want = c->read_max;

    if (c->state == S_LINGER) {
        /* dropped: no larger buffer */
        want = want < HTTPD_IN_BUF_BYTES ? want : HTTPD_IN_BUF_BYTES;
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
    n = httpd_sock_read(c, want);
    c->last_read = n > 0 ? n : 0;
    return n;
}

bool httpd_in_from_evbuffer(struct pg_httpd_conn *c, struct evbuffer *from)
{
    size_t n = evbuffer_get_length(from);

    if (c->in_off == c->in_len && c->state != S_BODY) {
        c->in_off = c->in_len = 0;
    }
    if (!httpd_in_room(c, n)) {
        return false;
    }
    evbuffer_remove(from, c->in + c->in_len, n);
    c->in_len += n;
    if (c->in_len > c->in_hwm) {
        c->in_hwm = c->in_len;
    }
    return true;
}
