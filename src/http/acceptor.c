/* SPDX-License-Identifier: Apache-2.0
 * Accepting connections under the caps siblings share (see acceptor.h): the
 * accept loop, its pause on an fd shortage, the connection and per-peer
 * counts, and the siblings' shared byte budget. */
#define _GNU_SOURCE /* accept4 */
#include "http/acceptor.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/clock.h"

/* fds kept free below RLIMIT_NOFILE for everything that is not a client
 * connection: health_check and admin listeners, exporters, spool files. */
#define FD_HEADROOM 64
#define DEFAULT_BATCH 64
#define PAUSE_US 100000

/* What siblings share so the caps hold for all of them together. */
struct pg_accept_shared {
    pthread_mutex_t mu;
    struct pg_peer_counts *peers;   /* under mu */
    size_t open;                    /* under mu: connections of every sibling */
    double budget, budget_last;     /* under mu: the shared byte budget (0 last: full) */
    int refs;                       /* under mu: acceptors using it */
};

/* Counts a new connection of @k: -1 when counted, else the refusal (nothing
 * counted). */
static int accept_count(struct pg_acceptor *a, const struct pg_peer_key *k)
{
    struct pg_accept_shared *sh = a->sh;
    int rc = -1;

    pthread_mutex_lock(&sh->mu);
    if (sh->open >= a->cap) {
        rc = PG_ACCEPT_REFUSED_MAX_CONNECTIONS;
    } else if (a->max_per_peer > 0 && pg_peer_counts_get(sh->peers, k) >= a->max_per_peer) {
        rc = PG_ACCEPT_REFUSED_PER_PEER;
    } else if (!pg_peer_counts_inc(sh->peers, k)) {
        rc = PG_ACCEPT_REFUSED_MAX_CONNECTIONS; /* out of memory: refuse as if full */
    } else {
        sh->open++;
    }
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

void pg_acceptor_uncount(struct pg_acceptor *a, const struct pg_peer_key *key)
{
    pthread_mutex_lock(&a->sh->mu);
    pg_peer_counts_dec(a->sh->peers, key);
    a->sh->open--;
    pthread_mutex_unlock(&a->sh->mu);
}

bool pg_acceptor_budget_spend(struct pg_acceptor *a, size_t bytes, double per_s)
{
    struct pg_accept_shared *sh = a->sh;
    double now = pg_mono_s();
    bool over;

    pthread_mutex_lock(&sh->mu);
    if (sh->budget_last <= 0) {
        sh->budget = per_s; /* first use: a full bucket */
    } else {
        sh->budget += (now - sh->budget_last) * per_s;
        if (sh->budget > per_s) {
            sh->budget = per_s;
        }
    }
    sh->budget_last = now;
    sh->budget -= (double)bytes;
    over = sh->budget < 0;
    pthread_mutex_unlock(&sh->mu);
    return !over;
}

/* One accepted socket: counted and handed on, or refused and closed. */
static void accept_one(struct pg_acceptor *a, int fd, const struct sockaddr_storage *ss)
{
    struct pg_peer_key key;
    int refused, one = 1;

    pg_peer_key_from_sockaddr((const struct sockaddr *)ss, &key);
    refused = accept_count(a, &key);
    if (refused >= 0) {
        if (a->ops.on_refused != NULL) {
            a->ops.on_refused(a->arg, fd, ss, (enum pg_accept_refusal)refused);
        }
        close(fd);
        return;
    }
    if (ss->ss_family == AF_INET || ss->ss_family == AF_INET6) {
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    a->ops.on_conn(a->arg, fd, ss, &key);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    struct pg_acceptor *a = arg;

    (void)what;
    for (int i = 0; i < a->batch; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
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
            struct timeval tv = {0, PAUSE_US};
            int err = errno;

            event_del(a->accept_ev);
            evtimer_add(a->retry_ev, &tv);
            if (a->ops.on_paused != NULL) {
                a->ops.on_paused(a->arg, err);
            }
            return;
        }
        if (sl == 0) {
            ss.ss_family = AF_UNIX; /* an unnamed unix peer */
        }
        accept_one(a, fd, &ss);
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct pg_acceptor *a = arg;

    (void)fd;
    (void)what;
    if (a->lfd >= 0) {
        event_add(a->accept_ev, NULL);
    }
}

/* max_connections, or fewer when the fd limit leaves less room. */
static size_t accept_cap(size_t max_connections)
{
    size_t cap = max_connections > 0 ? max_connections : SIZE_MAX;
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        size_t fds = rl.rlim_cur > 2 * FD_HEADROOM ? (size_t)rl.rlim_cur - FD_HEADROOM
                                                   : (size_t)rl.rlim_cur / 2;

        if (fds < cap) {
            cap = fds;
        }
    }
    return cap;
}

bool pg_acceptor_init(struct pg_acceptor *a, const struct pg_acceptor *sibling,
                      struct event_base *base, int fd, const struct pg_accept_limits *lim,
                      const struct pg_accept_ops *ops, void *arg)
{
    struct pg_accept_shared *sh = sibling != NULL ? sibling->sh : NULL;

    memset(a, 0, sizeof(*a));
    a->lfd = fd;
    a->cap = accept_cap(lim->max_connections);
    a->max_per_peer = lim->max_per_peer;
    a->batch = lim->batch > 0 ? lim->batch : DEFAULT_BATCH;
    a->ops = *ops;
    a->arg = arg;
    if (sh == NULL) {
        sh = calloc(1, sizeof(*sh));
        if (sh == NULL || (sh->peers = pg_peer_counts_new()) == NULL) {
            free(sh);
            return false;
        }
        pthread_mutex_init(&sh->mu, NULL);
    }
    pthread_mutex_lock(&sh->mu);
    sh->refs++;
    pthread_mutex_unlock(&sh->mu);
    a->sh = sh;
    if (fd < 0) {
        return true;
    }
    a->retry_ev = evtimer_new(base, on_retry, a);
    a->accept_ev = event_new(base, fd, EV_READ | EV_PERSIST, on_accept, a);
    return a->retry_ev != NULL && a->accept_ev != NULL && event_add(a->accept_ev, NULL) == 0;
}

void pg_acceptor_stop(struct pg_acceptor *a)
{
    if (a->lfd < 0) {
        return;
    }
    if (a->accept_ev != NULL) {
        event_del(a->accept_ev);
    }
    if (a->retry_ev != NULL) {
        evtimer_del(a->retry_ev);
    }
    close(a->lfd);
    a->lfd = -1;
}

void pg_acceptor_fini(struct pg_acceptor *a)
{
    struct pg_accept_shared *sh = a->sh;
    int left;

    pg_acceptor_stop(a);
    if (a->accept_ev != NULL) {
        event_free(a->accept_ev);
        a->accept_ev = NULL;
    }
    if (a->retry_ev != NULL) {
        event_free(a->retry_ev);
        a->retry_ev = NULL;
    }
    if (sh == NULL) {
        return;
    }
    a->sh = NULL;
    pthread_mutex_lock(&sh->mu);
    left = --sh->refs;
    pthread_mutex_unlock(&sh->mu);
    if (left == 0) {
        pg_peer_counts_free(sh->peers);
        pthread_mutex_destroy(&sh->mu);
        free(sh);
    }
}
