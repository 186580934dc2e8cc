/* SPDX-License-Identifier: Apache-2.0
 * Large buffers kept between requests, for any receiver and any layer: a large
 * request's arena chunks (core/arena.c), inflate output, encoder output. A block given
 * back stays mapped and resident, so the next large request writes into pages the
 * kernel need not fault in again; once the pool has seen no large block taken or given
 * back for its decay period (PG_BUFPOOL_DECAY_NS), a thread of its own unmaps everything
 * it holds and trims the malloc heaps, so RSS returns to idle. Bounded by a byte cap;
 * past the memory limiter's soft limit it keeps nothing (core/memlimit.h's reclaim hook
 * empties it before a refusal, and pg_bufpool_put unmaps instead of keeping while the
 * bytes in flight and held would pass the soft limit, and empties the pool when RSS is
 * past it).
 * Thread rule: every function may be called from any thread (one mutex; large blocks
 * are taken a few times per large request, never per sample). */
#ifndef PG_CORE_BUFPOOL_H
#define PG_CORE_BUFPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Smaller requests are malloc's business (its heaps recycle them without faults). */
#define PG_BUFPOOL_MIN ((size_t)256 * 1024)
/* Defaults: a few large requests' worth, and jemalloc's dirty decay order of magnitude
 * (RSS back to idle within 10 s of the last large request: issue 26). */
#define PG_BUFPOOL_CAP ((size_t)96 * 1024 * 1024)
#define PG_BUFPOOL_DECAY_NS (5ll * 1000 * 1000 * 1000)

/* A block of at least @size bytes (> 0), page-aligned, *@got set to its usable size
 * (>= @size, a multiple of the page size). Uninitialised: a reused block holds an earlier
 * request's bytes. NULL on OOM. Owned by the caller until pg_bufpool_put(p, *@got). */
void *pg_bufpool_get(size_t size, size_t *got);
/* Gives back @p of @size bytes (the *got of its pg_bufpool_get), of which the first
 * @used were written: only those pages are kept resident for the next request (a reused
 * block is resident throughout, so keeping an unwritten tail would let the next user's
 * unused part count against the process as if written); the rest, and everything when
 * the pool has no room (cap, memory pressure, full slot table), is unmapped now. NULL ok. */
void pg_bufpool_put(void *p, size_t size, size_t used);
/* Grows the block @p of @size bytes (a pg_bufpool_get's *got, or what
 * pg_arena_take_block handed over) to at least @new_size bytes, its first @size bytes
 * unchanged: the extension is made of kept blocks moved in behind it by mremap (their
 * resident pages serve it without a fault or a copy, as a stitch does), fresh pages only for
 * what the pool cannot cover. The block may move: the result replaces @p, *@got its size.
 * For a request whose output grows out of a working block (the pprof translator's Sample
 * structs written over its per-sample records), so the two are not both alive. NULL on
 * OOM or @new_size < @size (@p untouched, still the caller's). */
void *pg_bufpool_grow(void *p, size_t size, size_t new_size, size_t *got);
/* True when a put of @bytes now would be kept, not unmapped (a hint: another thread may
 * change it): a latency thread gives blocks back itself only then. */
bool pg_bufpool_room(size_t bytes);
/* Unmaps everything held, now (memory pressure, tests). Returns the bytes released. */
size_t pg_bufpool_release(void);

struct pg_bufpool_stats {
    size_t held;        /* bytes kept for reuse */
    size_t blocks;      /* blocks kept */
    uint64_t reused;    /* gets served from kept blocks */
    uint64_t mapped;    /* gets that mapped fresh memory */
    uint64_t decays;    /* times the decay emptied the pool */
    uint64_t pressure;  /* times memory pressure emptied it or refused a block */
};
void pg_bufpool_stats(struct pg_bufpool_stats *out);
/* @cap bytes held at most, @decay_ns without a large get/put before everything goes back
 * (0 = the defaults above). For tests and embedders; any time. */
void pg_bufpool_configure(size_t cap, int64_t decay_ns);

#endif
