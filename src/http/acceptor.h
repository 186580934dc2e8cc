/* SPDX-License-Identifier: Apache-2.0
 * Accepting connections on a listening socket under caps, for every server
 * that faces clients (the HTTP/1.1 server, the gRPC server). Here:
 *  - accept4 in batches on the loop, unix peers told apart (empty address);
 *  - each connection counted at accept against max_connections (bounded by
 *    RLIMIT_NOFILE minus a headroom for everything that is not a client) and
 *    max_connections_per_peer, refused (the user may say why on the socket)
 *    before it costs anything;
 *  - an fd or memory shortage (EMFILE, ENFILE, ENOBUFS, ENOMEM) pauses
 *    accepting for 100 ms instead of spinning the loop on a backlog that
 *    stays;
 *  - TCP_NODELAY on every IP connection (answers are small and final).
 * Siblings (one acceptor per event loop, each on its own SO_REUSEPORT socket)
 * share the counts under one lock, taken per connection (accept and close),
 * never per request. The same block carries one byte budget the user's
 * siblings spend together (the HTTP server's linger drain).
 * Thread rule: an acceptor is its loop thread's; only the shared block is
 * touched from several (under its mutex). */
#ifndef PG_HTTP_ACCEPTOR_H
#define PG_HTTP_ACCEPTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "http/conn_limits.h"

struct event;
struct event_base;
struct pg_accept_shared;

enum pg_accept_refusal {
    PG_ACCEPT_REFUSED_MAX_CONNECTIONS = 0, /* max_connections or the fd headroom (or OOM) */
    PG_ACCEPT_REFUSED_PER_PEER,            /* max_connections_per_peer */
};

/* What the acceptor hands its user, on the loop thread. */
struct pg_accept_ops {
    /* A counted connection: @fd (non-blocking, close-on-exec) is the user's
     * from here; pg_acceptor_uncount(@key) when it closes, or at once when
     * setting it up fails. */
    void (*on_conn)(void *arg, int fd, const struct sockaddr_storage *ss,
                    const struct pg_peer_key *key);
    /* Optional: @fd refused by a cap, before the acceptor closes it (an HTTP
     * server writes its 503 there). */
    void (*on_refused)(void *arg, int fd, const struct sockaddr_storage *ss,
                       enum pg_accept_refusal why);
    /* Optional: accept failed with @err (EMFILE, ...): paused 100 ms. */
    void (*on_paused)(void *arg, int err);
};

struct pg_accept_limits {
    size_t max_connections;  /* open at once over every sibling; 0 = only the fd headroom */
    size_t max_per_peer;     /* 0 = no limit */
    int batch;               /* accepts per wakeup; 0 = 64 */
};

/* Embedded in its server (no allocation of its own, but the shared block). */
struct pg_acceptor {
    struct pg_accept_shared *sh; /* shared with siblings; freed by the last */
    struct event *accept_ev, *retry_ev;
    int lfd;                     /* owned; -1: not accepting */
    size_t cap;                  /* max_connections bounded by the fd limit */
    size_t max_per_peer;
    int batch;
    struct pg_accept_ops ops;
    void *arg;
};

/* Starts accepting on @fd (listening, non-blocking; owned from here, also on
 * failure; -1 = none: a server fed only by adoption) on @base. @sibling NULL
 * makes new shared counts, else @a shares @sibling's. False on OOM; in every
 * case pg_acceptor_fini(@a) is then safe and needed. */
bool pg_acceptor_init(struct pg_acceptor *a, const struct pg_acceptor *sibling,
                      struct event_base *base, int fd, const struct pg_accept_limits *lim,
                      const struct pg_accept_ops *ops, void *arg);
/* Stops accepting and closes the listening socket (idempotent). */
void pg_acceptor_stop(struct pg_acceptor *a);
/* Stops, frees the events, and drops the shared counts (the last sibling
 * frees them): every connection must have been uncounted first. */
void pg_acceptor_fini(struct pg_acceptor *a);
/* A connection handed out by on_conn is over. */
void pg_acceptor_uncount(struct pg_acceptor *a, const struct pg_peer_key *key);
/* Spends @bytes of the siblings' shared budget, refilled at @per_s bytes a
 * second up to @per_s at once: false once it is overdrawn. */
bool pg_acceptor_budget_spend(struct pg_acceptor *a, size_t bytes, double per_s);

/* The listening fd (-1 once stopped). */
static inline int pg_acceptor_fd(const struct pg_acceptor *a)
{
    return a->lfd;
}

#endif
