/* SPDX-License-Identifier: Apache-2.0
 * Baseline for bench/http_load.sh: the cheapest possible libevent HTTP
 * server that reads a request body and discards it, answering 204. Same
 * evhttp settings as the pprof receiver, no decoding, no translation.
 * With "inflate" it also gunzips each body with pprofgate's own pg_inflate()
 * into a per-request arena and drops the result: the work no gzip'd push can
 * skip, so its req/s is the ceiling any translating gateway can reach here.
 * Usage: discard_server PORT [inflate] (PORT 0 = pick one; prints
 * "listening on PORT"). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "core/arena.h"
#include "codec/inflate.h"

static int inflate_bodies;

static void on_request(struct evhttp_request *req, void *arg)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);

    (void)arg;
    if (inflate_bodies) {
        size_t len = evbuffer_get_length(in);
        struct pg_arena *a = pg_arena_create(64u << 20); /* per request, as the receiver's */
        uint8_t *raw = a ? pg_arena_alloc(a, len ? len : 1) : NULL, *out;
        size_t out_len;
        struct pg_status st;

        if (raw == NULL || evbuffer_remove(in, raw, len) != (int)len ||
            pg_inflate(a, raw, len, PG_INFLATE_GZIP, 20u << 20, &out, &out_len, &st) != PG_ERR_OK) {
            pg_arena_destroy(a);
            evhttp_send_reply(req, 400, NULL, NULL);
            return;
        }
        pg_arena_destroy(a);
    }
    evbuffer_drain(in, evbuffer_get_length(in));
    evhttp_send_reply(req, 204, NULL, NULL);
}

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    struct event_base *base = event_base_new();
    struct evhttp *http = evhttp_new(base);
    struct evhttp_bound_socket *sock;
    struct sockaddr_in sin;
    socklen_t sl = sizeof(sin);
    struct event *sig;
    int port = argc > 1 ? atoi(argv[1]) : 0;

    inflate_bodies = argc > 2 && strcmp(argv[2], "inflate") == 0;

    if (base == NULL || http == NULL) {
        return 1;
    }
    evhttp_set_max_body_size(http, 20 * 1024 * 1024);
    evhttp_set_gencb(http, on_request, NULL);
    sock = evhttp_bind_socket_with_handle(http, "127.0.0.1", (ev_uint16_t)port);
    if (sock == NULL) {
        fprintf(stderr, "discard_server: cannot bind port %d\n", port);
        return 1;
    }
    getsockname(evhttp_bound_socket_get_fd(sock), (struct sockaddr *)&sin, &sl);
    printf("listening on %u\n", ntohs(sin.sin_port));
    fflush(stdout);
    sig = evsignal_new(base, SIGTERM, on_signal, base);
    event_add(sig, NULL);
    event_base_dispatch(base);
    event_free(sig);
    evhttp_free(http);
    event_base_free(base);
    return 0;
}
