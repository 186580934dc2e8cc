/* SPDX-License-Identifier: Apache-2.0
 * http/acceptor on its own (the HTTP and gRPC servers' tests cover it
 * through them): two sibling acceptors on two loopback sockets share
 * max_connections, a connection given back (uncount) frees its place, the
 * per-peer cap refuses the next connection of one peer, a server with no
 * socket (fd -1) starts and ends cleanly, and the siblings' shared byte
 * budget runs dry and refills. Label "component": loopback sockets and a
 * short real-time wait. */
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "pg_test.h"
#include "http/acceptor.h"

struct seen {
    struct pg_acceptor *acc;
    int fds[8], n_fds;
    struct pg_peer_key keys[8];
    int refused[2];
};

static void on_conn(void *arg, int fd, const struct sockaddr_storage *ss,
                    const struct pg_peer_key *key)
{
    struct seen *s = arg;

    (void)ss;
    if (s->n_fds < 8) {
        s->keys[s->n_fds] = *key;
        s->fds[s->n_fds++] = fd;
    } else {
        close(fd);
        pg_acceptor_uncount(s->acc, key);
    }
}

static void on_refused(void *arg, int fd, const struct sockaddr_storage *ss,
                       enum pg_accept_refusal why)
{
    struct seen *s = arg;

    (void)fd;
    (void)ss;
    s->refused[why]++;
}

static const struct pg_accept_ops ops = {.on_conn = on_conn, .on_refused = on_refused};

/* A listening loopback socket; its address in *@sa. */
static int listen_lo(struct sockaddr_in *sa)
{
    socklen_t sl = sizeof(*sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    *sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || bind(fd, (struct sockaddr *)sa, sizeof(*sa)) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)sa, &sl) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}

static int dial(const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void run(struct event_base *base)
{
    struct timeval tv = {0, 100000};

    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

PG_TEST(siblings_share_the_cap)
{
    struct event_base *base = event_base_new();
    struct sockaddr_in sa, sb;
    int la = listen_lo(&sa), lb = listen_lo(&sb), clients[6], n = 0;
    struct pg_accept_limits lim = {.max_connections = 3};
    struct pg_acceptor a, b;
    struct seen sna = {.acc = &a}, snb = {.acc = &b};

    PG_REQUIRE(base != NULL && la >= 0 && lb >= 0);
    CHECK(pg_acceptor_init(&a, NULL, base, la, &lim, &ops, &sna));
    CHECK(pg_acceptor_init(&b, &a, base, lb, &lim, &ops, &snb));
    CHECK(pg_acceptor_fd(&a) == la && pg_acceptor_fd(&b) == lb);
    clients[n++] = dial(&sa);
    clients[n++] = dial(&sa);
    run(base);
    clients[n++] = dial(&sb);
    clients[n++] = dial(&sb);
    run(base);
    CHECK_INT(sna.n_fds + snb.n_fds, 3);
    CHECK_INT(snb.refused[PG_ACCEPT_REFUSED_MAX_CONNECTIONS], 1);
    /* One given back: the next one fits again, on either socket. */
    close(sna.fds[0]);
    pg_acceptor_uncount(&a, &sna.keys[0]);
    clients[n++] = dial(&sb);
    run(base);
    CHECK_INT(snb.n_fds, 2);
    CHECK_INT(snb.refused[PG_ACCEPT_REFUSED_MAX_CONNECTIONS], 1);
    for (int i = 0; i < n; i++) {
        if (clients[i] >= 0) {
            close(clients[i]);
        }
    }
    for (int i = 1; i < sna.n_fds; i++) {
        close(sna.fds[i]);
        pg_acceptor_uncount(&a, &sna.keys[i]);
    }
    for (int i = 0; i < snb.n_fds; i++) {
        close(snb.fds[i]);
        pg_acceptor_uncount(&b, &snb.keys[i]);
    }
    pg_acceptor_stop(&a);
    CHECK(pg_acceptor_fd(&a) == -1);
    pg_acceptor_fini(&a); /* b still holds the shared counts */
    pg_acceptor_fini(&b);
    event_base_free(base);
}

PG_TEST(per_peer_cap)
{
    struct event_base *base = event_base_new();
    struct sockaddr_in sa;
    int la = listen_lo(&sa), c1, c2;
    struct pg_accept_limits lim = {.max_per_peer = 1};
    struct pg_acceptor a;
    struct seen sn = {.acc = &a};

    PG_REQUIRE(base != NULL && la >= 0);
    CHECK(pg_acceptor_init(&a, NULL, base, la, &lim, &ops, &sn));
    c1 = dial(&sa);
    c2 = dial(&sa);
    run(base);
    CHECK_INT(sn.n_fds, 1);
    CHECK_INT(sn.refused[PG_ACCEPT_REFUSED_PER_PEER], 1);
    close(c1);
    close(c2);
    for (int i = 0; i < sn.n_fds; i++) {
        close(sn.fds[i]);
        pg_acceptor_uncount(&a, &sn.keys[i]);
    }
    pg_acceptor_fini(&a);
    event_base_free(base);
}

PG_TEST(no_socket_and_budget)
{
    struct event_base *base = event_base_new();
    struct pg_accept_limits lim = {0};
    struct pg_acceptor a, b;
    struct seen sn = {.acc = &a};

    PG_REQUIRE(base != NULL);
    CHECK(pg_acceptor_init(&a, NULL, base, -1, &lim, &ops, &sn));
    CHECK(pg_acceptor_fd(&a) == -1 && a.accept_ev == NULL);
    CHECK(pg_acceptor_init(&b, &a, base, -1, &lim, &ops, &sn));
    /* A bucket of 1 MB a second, shared: full at first, overdrawn by the
     * sibling's spend, refilled after a while. */
    CHECK(pg_acceptor_budget_spend(&a, 600000, 1e6));
    CHECK(!pg_acceptor_budget_spend(&b, 600000, 1e6));
    usleep(400000);
    CHECK(pg_acceptor_budget_spend(&b, 100000, 1e6));
    pg_acceptor_fini(&a);
    pg_acceptor_fini(&b);
    pg_acceptor_fini(&b); /* twice: nothing left to do */
    event_base_free(base);
}

PG_TEST_MAIN(PG_CASE(siblings_share_the_cap), PG_CASE(per_peer_cap),
             PG_CASE(no_socket_and_budget))
