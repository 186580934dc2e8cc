/* SPDX-License-Identifier: Apache-2.0
 * Per-peer bookkeeping for the HTTP servers: exact open-connection counts
 * by peer address (the per-peer connection cap, enforced at accept) and a
 * lossy, fixed-size token bucket per peer for failed authentication
 * attempts. Peers are IP addresses (the port is not part of the key); a
 * unix-socket peer is one peer. Not thread-safe: callers serialise (the
 * HTTP servers of one receiver share a lock, the receiver's auth a lock). */
#ifndef PG_HTTP_CONN_LIMITS_H
#define PG_HTTP_CONN_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr;

struct pg_peer_key {
    unsigned char addr[16];
    uint8_t family;
};

/* Fills @k from an accepted peer's address (unknown families: all zero). */
void pg_peer_key_from_sockaddr(const struct sockaddr *sa, struct pg_peer_key *k);

struct pg_peer_counts;

/* NULL on OOM. Owned by the caller. */
struct pg_peer_counts *pg_peer_counts_new(void);
void pg_peer_counts_free(struct pg_peer_counts *t);
/* Connections of @k currently counted. */
size_t pg_peer_counts_get(const struct pg_peer_counts *t, const struct pg_peer_key *k);
/* Counts one more connection of @k; false on OOM (nothing counted). */
bool pg_peer_counts_inc(struct pg_peer_counts *t, const struct pg_peer_key *k);
/* Forgets one connection of @k (the entry goes away at zero). */
void pg_peer_counts_dec(struct pg_peer_counts *t, const struct pg_peer_key *k);

/* Failed-attempt limiter: each peer may fail @burst times, then once every
 * 1/@per_sec seconds. The table is a fixed array indexed by a hash of the
 * peer: a colliding peer takes the slot over (bounded memory under a flood
 * of addresses; at worst an attacker's budget is reset, never a stranger
 * blocked for long). */
#define PG_PEER_RL_SLOTS 512
struct pg_peer_ratelimit {
    double per_sec, burst;
    struct {
        struct pg_peer_key key;
        double tokens, last;
        bool used;
    } slot[PG_PEER_RL_SLOTS];
};

void pg_peer_ratelimit_init(struct pg_peer_ratelimit *r, double per_sec, double burst);
/* True when @k has no attempt left at time @now (monotonic seconds). */
bool pg_peer_ratelimit_blocked(struct pg_peer_ratelimit *r, const struct pg_peer_key *k,
                               double now);
/* Spends one attempt of @k (a failure). */
void pg_peer_ratelimit_hit(struct pg_peer_ratelimit *r, const struct pg_peer_key *k, double now);

#endif
