/* SPDX-License-Identifier: Apache-2.0
 * Per-peer connection counts and failed-attempt limits (see conn_limits.h). */
#include "http/conn_limits.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define N_BUCKETS 1024

struct peer_entry {
    struct peer_entry *next;
    struct pg_peer_key key;
    size_t n;
};

struct pg_peer_counts {
    struct peer_entry *buckets[N_BUCKETS];
};

void pg_peer_key_from_sockaddr(const struct sockaddr *sa, struct pg_peer_key *k)
{
    memset(k, 0, sizeof(*k));
    if (sa == NULL) {
        return;
    }
    if (sa->sa_family == AF_INET) {
        memcpy(k->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        k->family = 4;
    } else if (sa->sa_family == AF_INET6) {
        memcpy(k->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        k->family = 6;
    } else if (sa->sa_family == AF_UNIX) {
        k->family = 1;
    }
}

static size_t hash_key(const struct pg_peer_key *k)
{
    uint64_t h = 1469598103934665603ULL ^ k->family; /* FNV-1a */

    for (size_t i = 0; i < sizeof(k->addr); i++) {
        h = (h ^ k->addr[i]) * 1099511628211ULL;
    }
    return (size_t)(h ^ (h >> 29));
}

static bool same(const struct pg_peer_key *a, const struct pg_peer_key *b)
{
    return a->family == b->family && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

struct pg_peer_counts *pg_peer_counts_new(void)
{
    return calloc(1, sizeof(struct pg_peer_counts));
}

void pg_peer_counts_free(struct pg_peer_counts *t)
{
    if (t == NULL) {
        return;
    }
    for (size_t i = 0; i < N_BUCKETS; i++) {
        while (t->buckets[i] != NULL) {
            struct peer_entry *e = t->buckets[i];

            t->buckets[i] = e->next;
            free(e);
        }
    }
    free(t);
}

static struct peer_entry **find(const struct pg_peer_counts *t, const struct pg_peer_key *k)
{
    struct peer_entry **pp = (struct peer_entry **)&t->buckets[hash_key(k) % N_BUCKETS];

    while (*pp != NULL && !same(&(*pp)->key, k)) {
        pp = &(*pp)->next;
    }
    return pp;
}

size_t pg_peer_counts_get(const struct pg_peer_counts *t, const struct pg_peer_key *k)
{
    struct peer_entry **pp = find(t, k);

    return *pp != NULL ? (*pp)->n : 0;
}

bool pg_peer_counts_inc(struct pg_peer_counts *t, const struct pg_peer_key *k)
{
    struct peer_entry **pp = find(t, k);

    if (*pp == NULL) {
        struct peer_entry *e = calloc(1, sizeof(*e));

        if (e == NULL) {
            return false;
        }
        e->key = *k;
        *pp = e;
    }
    (*pp)->n++;
    return true;
}

void pg_peer_counts_dec(struct pg_peer_counts *t, const struct pg_peer_key *k)
{
    struct peer_entry **pp = find(t, k);
    struct peer_entry *e = *pp;

    if (e == NULL) {
        return;
    }
    if (--e->n == 0) {
        *pp = e->next;
        free(e);
    }
}

void pg_peer_ratelimit_init(struct pg_peer_ratelimit *r, double per_sec, double burst)
{
    memset(r, 0, sizeof(*r));
    r->per_sec = per_sec;
    r->burst = burst;
}

/* The slot of @k with its tokens refilled to @now; a stranger's slot is taken over. */
static size_t rl_slot(struct pg_peer_ratelimit *r, const struct pg_peer_key *k, double now)
{
    size_t i = hash_key(k) % PG_PEER_RL_SLOTS;

    if (!r->slot[i].used || !same(&r->slot[i].key, k)) {
        r->slot[i].used = true;
        r->slot[i].key = *k;
        r->slot[i].tokens = r->burst;
        r->slot[i].last = now;
    }
    r->slot[i].tokens += (now - r->slot[i].last) * r->per_sec;
    if (r->slot[i].tokens > r->burst) {
        r->slot[i].tokens = r->burst;
    }
    r->slot[i].last = now;
    return i;
}

bool pg_peer_ratelimit_blocked(struct pg_peer_ratelimit *r, const struct pg_peer_key *k,
                               double now)
{
    return r->burst > 0 && r->slot[rl_slot(r, k, now)].tokens < 1.0;
}

void pg_peer_ratelimit_hit(struct pg_peer_ratelimit *r, const struct pg_peer_key *k, double now)
{
    size_t i = rl_slot(r, k, now);

    if (r->slot[i].tokens >= 1.0) {
        r->slot[i].tokens -= 1.0;
    } else {
        r->slot[i].tokens = 0;
    }
}
