/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the unary gRPC server (grpc/grpc_server.c,
 * grpc_session.c): the input is a client's byte stream (preface, frames)
 * into one server connection, so every nghttp2 callback, the message
 * reader, decoding, answers and the ping policy see hostile frames. Byte
 * 0's low bit picks the transport: a bufferevent pair (the bufferevent
 * reads and writes, as for TLS) or a socket pair (the server's own recv()
 * and writev() of plain TCP). The handler answers by path: /hold keeps the call (ended
 * at free), /refuse refuses at the headers, /len refuses at the length,
 * anything else is echoed. Byte 0's other bits split the stream into two
 * writes.
 * Invariants: the server never holds a call the handler was not told
 * ended, and freeing it ends them all. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "codec/codec.h"
#include "grpc/grpc_server.h"
#include "grpc/grpc_server_test.h"
#include "grpc/grpc_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int open_calls; /* on_headers .. on_done, as the handler counts */

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

static int fz_headers(struct pg_grpc_call *c, struct pg_status *st, void *arg)
{
    (void)arg;
    check(c->path != NULL);
    open_calls++;
    if (strncmp(c->path, "/refuse", 7) == 0) {
        pg_status_set(st, PG_ERR_UNSUPPORTED, "refused \"%s\"", c->path);
        return PG_GRPC_UNIMPLEMENTED;
    }
    return PG_GRPC_OK;
}

static int fz_length(struct pg_grpc_call *c, size_t len, bool compressed, struct pg_status *st,
                     void *arg)
{
    (void)compressed;
    (void)arg;
    check(len <= 4096);
    if (strncmp(c->path, "/len", 4) == 0) {
        pg_status_set(st, PG_ERR_BUSY, "not admitted");
        return PG_GRPC_RESOURCE_EXHAUSTED;
    }
    return PG_GRPC_OK;
}

static void fz_call(struct pg_grpc_call *c, void *arg)
{
    (void)arg;
    check(c->msg_len <= 4096);
    if (strncmp(c->path, "/hold", 5) == 0) {
        return;
    }
    pg_grpc_call_reply(c, PG_GRPC_OK, NULL, c->msg, c->msg_len, -1);
}

static void fz_answer(const struct pg_grpc_call *c, int code, const char *reason, void *arg)
{
    (void)c;
    (void)arg;
    check(code >= 0 && code <= 16);
    check(code == PG_GRPC_OK || reason != NULL);
}

static void fz_done(struct pg_grpc_call *c, void *arg)
{
    (void)c;
    (void)arg;
    open_calls--;
    check(open_calls >= 0);
}

static const struct pg_grpc_server_ops fz_ops = {
    fz_headers, fz_length, fz_call, fz_answer, fz_done, NULL,
};

/* The client's end: a bufferevent of a pair, or a plain socket. */
struct client_end {
    struct bufferevent *bev;
    int fd;
};

static void client_write(struct client_end *e, const uint8_t *p, size_t n)
{
    if (e->bev != NULL) {
        bufferevent_write(e->bev, p, n);
        return;
    }
    while (n > 0) {
        ssize_t w = send(e->fd, p, n, MSG_NOSIGNAL);

        if (w <= 0) {
            return; /* the server closed, or its buffer is full: the rest is dropped */
        }
        p += w;
        n -= (size_t)w;
    }
}

static void client_drain(struct client_end *e)
{
    uint8_t sink[4096];

    if (e->bev != NULL) {
        evbuffer_drain(bufferevent_get_input(e->bev), SIZE_MAX);
        return;
    }
    while (recv(e->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct event_base *base;
    struct pg_grpc_server_limits lim = {0};
    struct pg_grpc_server *s;
    struct bufferevent *pair[2];
    struct client_end cli = {NULL, -1};
    size_t split;

    if (size < 1) {
        return 0;
    }
    if (base == NULL) {
        base = event_base_new();
    }
    lim.max_recv_msg_size = 4096;
    lim.max_concurrent_streams = 8;
    lim.max_header_list_size = 2048;
    lim.allowed_codings = pg_codec_all();
    lim.min_ping_interval_ns = 1;
    s = pg_grpc_server_new(base, -1, NULL, &lim, &fz_ops, NULL);
    check(s != NULL);
    if (data[0] & 1) {
        int sv[2];
        struct bufferevent *bev;

        check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
        bev = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
        check(bev != NULL);
        check(pg_grpc_server_adopt(s, bev, "fuzz"));
        cli.fd = sv[1];
    } else {
        check(bufferevent_pair_new(base, 0, pair) == 0);
        check(pg_grpc_server_adopt(s, pair[0], "fuzz"));
        cli.bev = pair[1];
    }
    split = 1 + (size > 1 ? (size_t)(data[0] >> 1) % (size - 1) : 0);
    client_write(&cli, data + 1, split - 1);
    for (int i = 0; i < 4; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
    }
    client_write(&cli, data + split, size - split);
    for (int i = 0; i < 8; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        client_drain(&cli);
    }
    check((size_t)open_calls == pg_grpc_server_open_calls(s));
    pg_grpc_server_free(s);
    check(open_calls == 0);
    if (cli.bev != NULL) {
        bufferevent_free(cli.bev);
    } else {
        close(cli.fd);
    }
    return 0;
}
