/* SPDX-License-Identifier: Apache-2.0
 * The one pump between an nghttp2 session and a libevent bufferevent,
 * shared by the gRPC client and server: received bytes go to
 * nghttp2_session_mem_recv, nghttp2's output goes into the bufferevent
 * until a high-water mark (then nghttp2 waits for the socket: the owner
 * calls pg_h2_send again from its write callback), and the bookkeeping of
 * the one PING we keep outstanding. The session's user_data is the
 * struct pg_h2; the owner finds itself through pg_h2->owner. Everything
 * runs on the bufferevent's loop thread.
 * On a plain socket the owner may do the I/O itself (pg_h2_recv_fd,
 * pg_h2_write_fd): one recv() per pass into a buffer it reuses, and one
 * writev() of the output, the bufferevent writing only what the socket did
 * not take. A socket bufferevent's own read costs an ioctl(FIONREAD) and a
 * readv() per 4 KiB, its write an epoll_ctl() on and off per answer. */
#ifndef PG_H2_H2_SESSION_H
#define PG_H2_H2_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "core/err.h"

struct bufferevent;
struct event;

/* Output queued in the bufferevent beyond this makes nghttp2 wait. */
#define PG_H2_OUT_HIGH (1u << 20)

struct pg_h2 {
    nghttp2_session *ng;     /* owned; NULL before pg_h2_start / after pg_h2_end */
    struct bufferevent *bev; /* borrowed: the owner frees it after pg_h2_end */
    void *owner;             /* the client connection or the server connection */
    bool in_send;            /* pg_h2_send is running (nghttp2 is not reentrant) */
    bool in_recv;            /* pg_h2_recv is running: callbacks may submit, not send */
    bool ping_out;           /* our PING awaits its ACK */
    struct event *ping_timer; /* owned: fires on_ping_timeout when the ACK is late */
    void (*on_ping_timeout)(void *owner);
};

struct pg_h2_params {
    bool server;
    const nghttp2_option *option;            /* may be NULL */
    const nghttp2_settings_entry *settings;  /* our SETTINGS frame */
    size_t n_settings;
    int32_t conn_window;                     /* local connection window; 0 = nghttp2's 64 KiB */
    void (*on_ping_timeout)(void *owner);    /* required for pg_h2_ping */
};

/* Creates the session on @bev with @cbs (the pump installs its own send
 * callback into @cbs), queues our SETTINGS and sets the write watermark.
 * NOMEM or MALFORMED with the reason in @st. */
enum pg_err pg_h2_start(struct pg_h2 *h, struct bufferevent *bev, nghttp2_session_callbacks *cbs,
                        const struct pg_h2_params *p, void *owner, struct pg_status *st);
/* Deletes the session and the timer; the bufferevent stays the owner's. */
void pg_h2_end(struct pg_h2 *h);
/* Feeds every byte the bufferevent has received to the session. MALFORMED
 * with nghttp2's reason (bad preface, flood, frame error) in @st: the
 * owner closes the connection. Stops early when a callback ended the
 * session (h->ng NULL). */
enum pg_err pg_h2_recv(struct pg_h2 *h, struct pg_status *st);
/* The same for @len bytes the owner read from the socket itself (into a
 * buffer of its own, reused: nghttp2 keeps no pointer into it). */
enum pg_err pg_h2_recv_mem(struct pg_h2 *h, const uint8_t *data, size_t len, struct pg_status *st);
/* Plain socket (the bufferevent's fd, its reading left off): recv() into
 * @buf (@cap bytes, the caller's, reused) and feeds each read to the
 * session, at most @max_reads reads and only while they fill @buf. OK when
 * the socket has nothing more for now; IO when the peer closed or reset;
 * MALFORMED as pg_h2_recv. *@got is set when a byte was read. */
enum pg_err pg_h2_recv_fd(struct pg_h2 *h, uint8_t *buf, size_t cap, int max_reads, bool *got,
                          struct pg_status *st);
/* Plain socket: writes the output in one writev(). What the socket does not
 * take stays for the bufferevent, whose write event is on only then (off
 * again once the output is empty). IO when the socket is broken. */
enum pg_err pg_h2_write_fd(struct pg_h2 *h, struct pg_status *st);
/* Writes what nghttp2 has queued, up to the high-water mark. Calls from
 * inside nghttp2's callbacks (during pg_h2_recv or pg_h2_send) return OK at
 * once: the running pump sends afterwards. MALFORMED on a session error. */
enum pg_err pg_h2_send(struct pg_h2 *h, struct pg_status *st);
/* True when nghttp2 has nothing more to read or write (after GOAWAY both
 * ways, or a fatal error): the owner may close. */
bool pg_h2_finished(const struct pg_h2 *h);
/* Bytes waiting in the bufferevent's output. */
size_t pg_h2_out_pending(const struct pg_h2 *h);
/* Submits a PING unless one is outstanding and arms the ACK timer
 * (@timeout_ns); true when a PING is now outstanding. The caller sends. */
bool pg_h2_ping(struct pg_h2 *h, int64_t timeout_ns);
/* Every received frame passes here first (the owner's on_frame_recv
 * calls it): a PING ACK clears the outstanding PING. True when @f was
 * that ACK. */
bool pg_h2_frame_seen(struct pg_h2 *h, const nghttp2_frame *f);

#endif
