/* SPDX-License-Identifier: Apache-2.0
 * The nghttp2 <-> bufferevent pump: mem_recv of what arrived (from the
 * bufferevent, or read from a plain socket by the pump itself), mem_send
 * through the send callback into the bufferevent with a high-water mark
 * (written by the bufferevent, or by one writev of the pump), and the
 * outstanding-PING timer. */
#include "h2/h2_session.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "core/clock.h"

static ssize_t h2_send_cb(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *ud)
{
    struct pg_h2 *h = ud;
    struct evbuffer *out = bufferevent_get_output(h->bev);

    (void)s;
    (void)flags;
    if (evbuffer_get_length(out) >= PG_H2_OUT_HIGH) {
        return NGHTTP2_ERR_WOULDBLOCK;
    }
    if (evbuffer_add(out, data, len) != 0) {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return (ssize_t)len;
}

static void h2_on_ping_timer(evutil_socket_t fd, short what, void *arg)
{
    struct pg_h2 *h = arg;

    (void)fd;
    (void)what;
    h->ping_out = false;
    if (h->on_ping_timeout != NULL) {
        h->on_ping_timeout(h->owner);
    }
}

enum pg_err pg_h2_start(struct pg_h2 *h, struct bufferevent *bev, nghttp2_session_callbacks *cbs,
                        const struct pg_h2_params *p, void *owner, struct pg_status *st)
{
    int rv;

    h->bev = bev;
    h->owner = owner;
    h->in_send = false;
    h->in_recv = false;
    h->ping_out = false;
    h->on_ping_timeout = p->on_ping_timeout;
    h->ping_timer = evtimer_new(bufferevent_get_base(bev), h2_on_ping_timer, h);
    if (h->ping_timer == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
    }
    nghttp2_session_callbacks_set_send_callback(cbs, h2_send_cb);
    rv = p->server ? nghttp2_session_server_new2(&h->ng, cbs, h, p->option)
                   : nghttp2_session_client_new2(&h->ng, cbs, h, p->option);
    if (rv != 0) {
        h->ng = NULL;
        pg_h2_end(h);
        return pg_status_set(st, PG_ERR_NOMEM, "%s", nghttp2_strerror(rv));
    }
    rv = nghttp2_submit_settings(h->ng, NGHTTP2_FLAG_NONE, p->settings, p->n_settings);
    if (rv == 0 && p->conn_window > 0) {
        rv = nghttp2_session_set_local_window_size(h->ng, NGHTTP2_FLAG_NONE, 0, p->conn_window);
    }
    if (rv != 0) {
        pg_h2_end(h);
        return pg_status_set(st, PG_ERR_MALFORMED, "%s", nghttp2_strerror(rv));
    }
    bufferevent_setwatermark(bev, EV_WRITE, PG_H2_OUT_HIGH / 2, 0);
    return PG_ERR_OK;
}

void pg_h2_end(struct pg_h2 *h)
{
    if (h->ng != NULL) {
        nghttp2_session_del(h->ng);
        h->ng = NULL;
    }
    if (h->ping_timer != NULL) {
        event_free(h->ping_timer);
        h->ping_timer = NULL;
    }
    h->ping_out = false;
}

enum pg_err pg_h2_recv_mem(struct pg_h2 *h, const uint8_t *data, size_t len, struct pg_status *st)
{
    ssize_t n;

    if (h->ng == NULL || len == 0) {
        return PG_ERR_OK;
    }
    h->in_recv = true;
    n = nghttp2_session_mem_recv(h->ng, data, len);
    h->in_recv = false;
    if (n < 0) {
        return pg_status_set(st, PG_ERR_MALFORMED, "%s", nghttp2_strerror((int)n));
    }
    return PG_ERR_OK;
}

enum pg_err pg_h2_recv(struct pg_h2 *h, struct pg_status *st)
{
    struct evbuffer *in = bufferevent_get_input(h->bev);

    while (h->ng != NULL && evbuffer_get_length(in) > 0) {
        struct evbuffer_iovec v;
        enum pg_err err;

        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1) {
            break;
        }
        err = pg_h2_recv_mem(h, v.iov_base, v.iov_len, st);
        if (err != PG_ERR_OK) {
            return err;
        }
        evbuffer_drain(in, v.iov_len);
    }
    return PG_ERR_OK;
}

enum pg_err pg_h2_recv_fd(struct pg_h2 *h, uint8_t *buf, size_t cap, int max_reads, bool *got,
                          struct pg_status *st)
{
    int fd = bufferevent_getfd(h->bev);

    for (int i = 0; i < max_reads && h->ng != NULL; i++) {
        ssize_t n = recv(fd, buf, cap, 0);
        enum pg_err err;

        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            break;
        }
        if (n <= 0) {
            return pg_status_set(st, PG_ERR_IO, "%s",
                                 n == 0 ? "connection closed by the peer" : strerror(errno));
        }
        *got = true;
        err = pg_h2_recv_mem(h, buf, (size_t)n, st);
        if (err != PG_ERR_OK) {
            return err;
        }
        if ((size_t)n < cap) {
            break; /* drained: the next readiness brings more */
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_h2_write_fd(struct pg_h2 *h, struct pg_status *st)
{
    struct evbuffer *out = bufferevent_get_output(h->bev);
    int n = 0, e = 0;

    if (evbuffer_get_length(out) > 0) {
        /* A socket bufferevent keeps its output's start frozen so only it
         * drains it; its own write thaws it the same way around the write. */
        evbuffer_unfreeze(out, 1);
        n = evbuffer_write(out, bufferevent_getfd(h->bev));
        e = errno;
        evbuffer_freeze(out, 1);
    }
    if (n < 0 && e != EAGAIN && e != EWOULDBLOCK && e != EINTR) {
        return pg_status_set(st, PG_ERR_IO, "%s", strerror(e));
    }
    if (evbuffer_get_length(out) > 0) {
        bufferevent_enable(h->bev, EV_WRITE);
    } else if (bufferevent_get_enabled(h->bev) & EV_WRITE) {
        bufferevent_disable(h->bev, EV_WRITE);
    }
    return PG_ERR_OK;
}

enum pg_err pg_h2_send(struct pg_h2 *h, struct pg_status *st)
{
    int rv;

    if (h->ng == NULL || h->in_send || h->in_recv) {
        return PG_ERR_OK;
    }
    h->in_send = true;
    rv = nghttp2_session_send(h->ng);
    h->in_send = false;
    if (rv != 0) {
        return pg_status_set(st, PG_ERR_MALFORMED, "%s", nghttp2_strerror(rv));
    }
    return PG_ERR_OK;
}

bool pg_h2_finished(const struct pg_h2 *h)
{
    return h->ng == NULL ||
           (!nghttp2_session_want_read(h->ng) && !nghttp2_session_want_write(h->ng));
}

size_t pg_h2_out_pending(const struct pg_h2 *h)
{
    return h->bev != NULL ? evbuffer_get_length(bufferevent_get_output(h->bev)) : 0;
}

bool pg_h2_ping(struct pg_h2 *h, int64_t timeout_ns)
{
    struct timeval tv;

    if (h->ng == NULL) {
        return false;
    }
    if (h->ping_out) {
        return true;
    }
    if (nghttp2_submit_ping(h->ng, NGHTTP2_FLAG_NONE, NULL) != 0) {
        return false;
    }
    h->ping_out = true;
    tv = pg_ns_to_tv(timeout_ns);
    evtimer_add(h->ping_timer, &tv);
    return true;
}

bool pg_h2_frame_seen(struct pg_h2 *h, const nghttp2_frame *f)
{
    if (f->hd.type != NGHTTP2_PING || !(f->hd.flags & NGHTTP2_FLAG_ACK)) {
        return false;
    }
    h->ping_out = false;
    if (h->ping_timer != NULL) {
        evtimer_del(h->ping_timer);
    }
    return true;
}
