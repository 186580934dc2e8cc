/* SPDX-License-Identifier: Apache-2.0
 * Internal interface of the heap sampler tables, shared by the malloc
 * interposer (malloc_hooks.c, linked into the binary only) and the library
 * (profile writer, tests). Everything here is safe to call from inside malloc:
 * it never allocates, the tables live in mmap'd memory. */
#ifndef PG_SELFPROF_SAMPLER_H
#define PG_SELFPROF_SAMPLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest stack kept per sample (after the sampler's own frames are cut). */
#define PG_SAMPLER_MAX_DEPTH 64
/* Distinct stacks kept; more land in the overflow bucket (id 0) and count as dropped. */
#define PG_SAMPLER_MAX_BUCKETS 16384
/* Stack frames stored over all buckets. */
#define PG_SAMPLER_MAX_FRAMES (PG_SAMPLER_MAX_BUCKETS * 32)
/* Live sampled allocations tracked (for in-use); beyond it samples are dropped. */
#define PG_SAMPLER_MAX_LIVE (1u << 21)
/* log2 of the counting filter size that lets an unsampled free skip the lock. */
#define PG_SAMPLER_FILTER_BITS 16
/* While sampling is off, threads re-check the rate every this many bytes. */
#define PG_SAMPLER_RECHECK ((int64_t)64 << 20)

/* Mean sampling interval in bytes (0 = off, 1 = every allocation). */
extern _Atomic uint64_t pg_sampler_rate_;
/* Bumped by every rate change so threads redraw their countdown. */
extern _Atomic uint32_t pg_sampler_gen_;
/* One counter per pointer-hash slot: non-zero when a live sample may hash
 * there. free() reads it without a lock (relaxed) and only then locks. */
extern _Atomic uint16_t pg_sampler_filter_[1u << PG_SAMPLER_FILTER_BITS];
/* Per-thread countdown of bytes until the next sample, and the guard that
 * keeps allocations made by the sampler itself (or while its lock is held by
 * the writer) out of the slow path. */
extern __thread int64_t pg_sampler_left_;
extern __thread int pg_sampler_busy_;

static inline size_t pg_sampler_filter_slot(const void *p)
{
    uint64_t h = ((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> (64 - PG_SAMPLER_FILTER_BITS));
}

/* The unbiasing weight of one sample of @size bytes at @rate: the inverse of
 * the probability 1 - exp(-size/rate) that it was sampled (1 for rate <= 1). */
double pg_sampler_weight(uint64_t size, uint64_t rate);
/* Draws the next exponential interval (bytes, >= 1) from the thread's PRNG. */
int64_t pg_sampler_next_interval(uint64_t rate);

/* Records a sampled allocation of @size bytes at @p with @weight and the
 * stack @pcs[0..@depth) (return addresses, leaf first, as captured). A @p that
 * is already live (its free was missed) is retired first. */
void pg_sampler_record_alloc(const void *p, uint64_t size, double weight, const uintptr_t *pcs,
                             int depth);
/* Forgets @p if it is a live sample (in-use goes down); true if it was. */
bool pg_sampler_record_free(const void *p);

/* A live sample taken out of the table (realloc keeps it to put it back if
 * the reallocation fails). */
struct pg_sampler_live {
    uintptr_t ptr;
    uint32_t bucket;
    uint32_t pad_;
    double weight;
    uint64_t size;
};
bool pg_sampler_take(const void *p, struct pg_sampler_live *out);
void pg_sampler_put_back(const struct pg_sampler_live *e);

/* Seeds the per-thread PRNGs (threads that have not drawn yet); tests use a
 * fixed seed for reproducible statistics. */
void pg_sampler_set_seed(uint64_t seed);

/* Drops all samples (tests). */
void pg_sampler_reset(void);

/* Counter snapshot used by the profile writer. Bucket ids are stable and
 * buckets are append-only, so a snapshot is an array indexed by id. */
struct pg_sampler_counts {
    double alloc_objects, alloc_bytes, inuse_objects, inuse_bytes;
};
/* Copies the counters of up to @cap buckets into @out (caller's memory,
 * allocated before the call: nothing may allocate while the lock is held);
 * returns the number copied. */
size_t pg_sampler_snapshot(struct pg_sampler_counts *out, size_t cap);
/* Number of buckets right now (for sizing a snapshot). */
size_t pg_sampler_bucket_count(void);
/* The stack of bucket @id (immutable once published): frames and depth. */
const uintptr_t *pg_sampler_bucket_stack(size_t id, int *depth);

#endif
