/* SPDX-License-Identifier: Apache-2.0
 * Spreading a sibling group's connections over its loops. Each loop listens
 * on its own SO_REUSEPORT socket and the kernel picks one by a hash of the
 * addresses, so a client's few long-lived connections (an SDK's one to four,
 * h2load's four) often land 3:1 or 4:0 on two loops: one loop's core is
 * saturated while the other idles. A server that accepts a connection while a
 * sibling has fewer open (counting those already handed to it) hands the
 * counted fd over: a queue under the group's mutex, the sibling's loop woken
 * by event_active (libevent's thread support is on, as main() sets it). Ties
 * stay where the kernel put them. One lock per connection, none per call. */
#include "grpc/grpc_server_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

struct grpc_spread {
    pthread_mutex_t mu;
    struct pg_grpc_server **m; /* the members, in joining order */
    size_t n, cap;
};

static size_t load_of(struct pg_grpc_server *s)
{
    return __atomic_load_n(&s->spread.open, __ATOMIC_RELAXED) + s->spread.n_q;
}

/* On @s's loop: takes what siblings handed to it, oldest first. */
static void on_handed(evutil_socket_t fd, short what, void *arg)
{
    struct pg_grpc_server *s = arg;
    struct grpc_spread *g = s->spread.grp;

    (void)fd;
    (void)what;
    for (;;) {
        struct grpc_handoff h;

        pthread_mutex_lock(&g->mu);
        if (s->spread.n_q == 0) {
            pthread_mutex_unlock(&g->mu);
            return;
        }
        h = s->spread.q[0];
        memmove(s->spread.q, s->spread.q + 1, --s->spread.n_q * sizeof(h));
        /* Counted as open before the lock goes: no sibling sees it missing. */
        grpc_spread_count(s, 1);
        pthread_mutex_unlock(&g->mu);
        s->spread.take(s, h.fd, &h.ss, &h.key);
        grpc_spread_count(s, -1); /* take() counted it again, or closed it */
    }
}

static bool add_member(struct grpc_spread *g, struct pg_grpc_server *s)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 4;
        struct pg_grpc_server **m = realloc(g->m, cap * sizeof(*m));

        if (m == NULL) {
            return false;
        }
        g->m = m;
        g->cap = cap;
    }
    g->m[g->n++] = s;
    s->spread.grp = g;
    return true;
}

bool grpc_spread_join(struct pg_grpc_server *s, struct pg_grpc_server *first,
                      struct event_base *base)
{
    struct grpc_spread *g;
    bool ok;

    s->spread.ev = event_new(base, -1, 0, on_handed, s);
    if (s->spread.ev == NULL) {
        return false;
    }
    if (first == NULL) {
        return true;
    }
    g = first->spread.grp;
    if (g == NULL) { /* the first sibling: the group starts (the loops start one by one) */
        g = calloc(1, sizeof(*g));
        if (g == NULL) {
            return false;
        }
        pthread_mutex_init(&g->mu, NULL);
        if (!add_member(g, first)) {
            pthread_mutex_destroy(&g->mu);
            free(g);
            return false;
        }
    }
    pthread_mutex_lock(&g->mu);
    ok = add_member(g, s);
    pthread_mutex_unlock(&g->mu);
    return ok;
}

bool grpc_spread_offer(struct pg_grpc_server *s, int fd, const struct sockaddr_storage *ss,
                       const struct pg_peer_key *key)
{
    struct grpc_spread *g = s->spread.grp;
    struct pg_grpc_server *to = NULL;
    size_t best;
    bool handed = false;

    if (g == NULL) {
        return false;
    }
    pthread_mutex_lock(&g->mu);
    best = load_of(s);
    for (size_t i = 0; i < g->n; i++) {
        struct pg_grpc_server *t = g->m[i];
        size_t l;

        if (t == s || t->spread.closed || (l = load_of(t)) >= best) {
            continue;
        }
        best = l;
        to = t;
    }
    if (to != NULL && to->spread.n_q == to->spread.cap_q) {
        size_t cap = to->spread.cap_q ? 2 * to->spread.cap_q : 8;
        struct grpc_handoff *q = realloc(to->spread.q, cap * sizeof(*q));

        if (q == NULL) {
            to = NULL; /* kept here: no worse than the kernel's choice */
        } else {
            to->spread.q = q;
            to->spread.cap_q = cap;
        }
    }
    if (to != NULL) {
        struct grpc_handoff *h = &to->spread.q[to->spread.n_q++];

        h->fd = fd;
        h->ss = *ss;
        h->key = *key;
        event_active(to->spread.ev, 0, 0); /* under the lock: @to cannot leave meanwhile */
        handed = true;
    }
    pthread_mutex_unlock(&g->mu);
    return handed;
}

void grpc_spread_stop(struct pg_grpc_server *s)
{
    struct grpc_spread *g = s->spread.grp;

    if (g == NULL) {
        return;
    }
    pthread_mutex_lock(&g->mu);
    s->spread.closed = true;
    pthread_mutex_unlock(&g->mu);
    on_handed(-1, 0, s); /* the queue is final now: the stopping server closes them */
}

void grpc_spread_leave(struct pg_grpc_server *s)
{
    struct grpc_spread *g = s->spread.grp;
    bool last = false;

    if (g != NULL) {
        grpc_spread_stop(s);
        pthread_mutex_lock(&g->mu);
        for (size_t i = 0; i < g->n; i++) {
            if (g->m[i] == s) {
                g->m[i] = g->m[--g->n];
                break;
            }
        }
        last = g->n == 0;
        pthread_mutex_unlock(&g->mu);
        if (last) {
            pthread_mutex_destroy(&g->mu);
            free(g->m);
            free(g);
        }
        s->spread.grp = NULL;
    }
    if (s->spread.ev != NULL) {
        event_free(s->spread.ev);
        s->spread.ev = NULL;
    }
    free(s->spread.q);
    s->spread.q = NULL;
}
