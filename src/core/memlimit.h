/* SPDX-License-Identifier: Apache-2.0
 * Process-wide memory budget, as the collector's memory_limiter sets it:
 * bytes held by requests in flight (compressed body, inflated layers,
 * translated batch) are admitted against a soft limit (limit - spike), and a
 * periodic RSS reading refuses new work once the process as a whole is past
 * it. Refusal is PG_ERR_BUSY, which receivers answer with 503 Retry-After, so
 * clients keep their data instead of the gateway being OOM-killed. */
#ifndef PG_CORE_MEMLIMIT_H
#define PG_CORE_MEMLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

/* @limit_bytes 0 disables refusals (accounting still runs). @spike_bytes is
 * the headroom kept below the limit (soft limit = limit - spike; it must be
 * smaller than the limit). @check_interval_ns is how stale an RSS reading may
 * be (0 = 1 s). Several memory_limiter instances: the tightest limit wins. */
void pg_memlimit_configure(uint64_t limit_bytes, uint64_t spike_bytes, int64_t check_interval_ns);
/* Back to "no limit", counters zeroed (tests, shutdown). */
void pg_memlimit_reset(void);

/* Reserves @bytes for a request. False when it would pass the soft limit or
 * RSS already has: st gets BUSY ("memory limit reached ..."), or LIMIT when
 * @bytes alone exceed the soft limit (a retry could never succeed). */
bool pg_memlimit_admit(size_t bytes, struct pg_status *st);
/* Grows an admitted request's reservation by @bytes while it works (core/membudget.h):
 * checked against the HARD limit (the spike headroom is there for this), not the soft
 * one. @own is what the request holds with them, for the refusal's words: LIMIT when
 * @own alone passes the limit (a retry could never succeed), else BUSY. Counted as a
 * refusal by reason, as admissions are. Unlimited: always true. */
bool pg_memlimit_grow(size_t bytes, size_t own, struct pg_status *st);
/* Adds bytes already committed to (growth of an admitted request). */
void pg_memlimit_charge(size_t bytes);
void pg_memlimit_release(size_t bytes);
/* Charges @bytes now and releases them when @arena is destroyed (the batch
 * arena, which lives until the last exporter drops the batch). Returns false
 * on OOM (nothing charged then). */
bool pg_memlimit_charge_arena(struct pg_arena *arena, size_t bytes);

/* @fn gives back memory kept for reuse (core/bufpool) and returns the bytes: called,
 * on whichever thread reads it, when an RSS reading is past the soft limit, before the
 * heaps are trimmed and RSS read again. One slot; NULL clears it. Any thread. */
void pg_memlimit_set_reclaim(size_t (*fn)(void));

/* True when new work must be refused right now (RSS or in-flight bytes past
 * the soft limit); st gets the BUSY message. For the memory_limiter processor. */
bool pg_memlimit_over(struct pg_status *st);

/* The part of the in-flight bytes a spool replay holds (read back, in
 * flight, encoded and compressed copies): charged to the in-flight bytes
 * like any other, and counted apart so a refusal can say how much of the
 * memory is the replay's (its words never blame the replay without the
 * figure). */
void pg_memlimit_charge_replay(size_t bytes);
void pg_memlimit_release_replay(size_t bytes);
uint64_t pg_memlimit_replay(void);

uint64_t pg_memlimit_inflight(void);
uint64_t pg_memlimit_limit(void);
uint64_t pg_memlimit_soft_limit(void);
/* Current RSS in bytes from /proc/self/statm (fresh read); 0 if unknown. */
uint64_t pg_memlimit_read_rss(void);
/* RSS now; when it is above @above, freed heap is given back to the system
 * first (at most once a second) and RSS read again. For a reader that holds
 * back work (a spool replay) until the process has room. */
uint64_t pg_memlimit_rss_trimmed(uint64_t above);
/* The highest RSS seen by any check so far. */
uint64_t pg_memlimit_peak_rss(void);
/* Memory available to the process: the cgroup limit (v2 memory.max or v1
 * limit_in_bytes) when set, else MemTotal; 0 if unknown. For *_percentage. */
uint64_t pg_memlimit_total_memory(void);

#endif
