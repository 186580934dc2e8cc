/* SPDX-License-Identifier: Apache-2.0
 * Per-connection limits (see conn_limits.h). A small chained hash maps each
 * evhttp connection to its request count; the entry is the close callback's
 * argument, so forgetting a connection needs no lookup. Single-threaded: the
 * receiver's event loop owns it. */
#include "receiver/conn_limits.h"

#include <stdint.h>
#include <stdlib.h>

#include <event2/http.h>

#define N_BUCKETS 1024

struct conn_entry {
    struct conn_entry *next;
    struct conn_entry **pprev; /* the pointer that points at us, for O(1) unlink */
    struct pg_conn_limits *owner;
    struct evhttp_connection *evcon;
    size_t requests;
    int refused;               /* counted against no limit: it is being closed */
};

struct pg_conn_limits {
    size_t max_connections, max_requests;
    size_t open;
    struct conn_entry *buckets[N_BUCKETS];
};

static size_t bucket_of(const struct evhttp_connection *evcon)
{
    uintptr_t p = (uintptr_t)evcon;
    return (size_t)((p >> 4) ^ (p >> 14)) % N_BUCKETS;
}

struct pg_conn_limits *pg_conn_limits_new(size_t max_connections, size_t max_requests)
{
    struct pg_conn_limits *l = calloc(1, sizeof(*l));
    if (l != NULL) {
        l->max_connections = max_connections;
        l->max_requests = max_requests;
    }
    return l;
}

static void unlink_entry(struct conn_entry *e)
{
    *e->pprev = e->next;
    if (e->next != NULL) {
        e->next->pprev = e->pprev;
    }
    if (!e->refused) {
        e->owner->open--;
    }
}

void pg_conn_limits_free(struct pg_conn_limits *l)
{
    if (l == NULL) {
        return;
    }
    for (size_t i = 0; i < N_BUCKETS; i++) {
        while (l->buckets[i] != NULL) {
            struct conn_entry *e = l->buckets[i];
            /* The server is gone (or going): never call us back. */
            evhttp_connection_set_closecb(e->evcon, NULL, NULL);
            unlink_entry(e);
            free(e);
        }
    }
    free(l);
}

static void on_close(struct evhttp_connection *evcon, void *arg)
{
    struct conn_entry *e = arg;
    /* Once only, even if evhttp resets the connection before freeing it. */
    evhttp_connection_set_closecb(evcon, NULL, NULL);
    unlink_entry(e);
    free(e);
}

enum pg_conn_verdict pg_conn_limits_on_request(struct pg_conn_limits *l,
                                               struct evhttp_connection *evcon)
{
    size_t b;
    struct conn_entry *e;

    if (l == NULL || evcon == NULL || (l->max_connections == 0 && l->max_requests == 0)) {
        return PG_CONN_OK;
    }
    b = bucket_of(evcon);
    for (e = l->buckets[b]; e != NULL && e->evcon != evcon; e = e->next) {
    }
    if (e == NULL) {
        e = calloc(1, sizeof(*e));
        if (e == NULL) {
            return PG_CONN_LAST; /* cannot track it: serve once, then close */
        }
        e->owner = l;
        e->evcon = evcon;
        e->refused = l->max_connections > 0 && l->open >= l->max_connections;
        if (!e->refused) {
            l->open++;
        }
        e->next = l->buckets[b];
        if (e->next != NULL) {
            e->next->pprev = &e->next;
        }
        e->pprev = &l->buckets[b];
        l->buckets[b] = e;
        evhttp_connection_set_closecb(evcon, on_close, e);
    }
    if (e->refused) {
        return PG_CONN_REFUSE;
    }
    e->requests++;
    if (l->max_requests > 0 && e->requests >= l->max_requests) {
        return PG_CONN_LAST;
    }
    return PG_CONN_OK;
}

size_t pg_conn_limits_open(const struct pg_conn_limits *l)
{
    return l != NULL ? l->open : 0;
}
