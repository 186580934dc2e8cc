/* SPDX-License-Identifier: Apache-2.0
 * The embedded heap sampler's public face: is it on, and give me the current
 * heap profile as gzip'd pprof (Go's heap profile shape). The malloc
 * interposer itself lives in malloc_hooks.c, linked into the binary only. */
#ifndef PG_SELFPROF_SELFPROF_H
#define PG_SELFPROF_SELFPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

enum pg_selfprof_view {
    PG_SELFPROF_HEAP = 0, /* default sample type inuse_space */
    PG_SELFPROF_ALLOCS,   /* default sample type alloc_space */
};

/* Go's MemProfileRate. */
#define PG_SELFPROF_DEFAULT_RATE 524288u

/* Sets the mean sampling interval in bytes (0 = off, 1 = every allocation). */
void pg_selfprof_set_rate(uint64_t rate);
uint64_t pg_selfprof_rate(void);
/* True when the interposer is linked in and the rate is non-zero. */
bool pg_selfprof_enabled(void);
/* True when the interposer is linked into this executable. */
bool pg_selfprof_hooks_linked(void);
/* Why it is off, as one line for a 503 body ("heap sampler is off: ..."). */
const char *pg_selfprof_why_off(void);

/* Writes the current profile as gzip'd pprof into @arena. */
enum pg_err pg_selfprof_write(struct pg_arena *arena, enum pg_selfprof_view view, uint8_t **out,
                              size_t *len, struct pg_status *st);

/* ---- ?seconds=N deltas ------------------------------------------------ */

/* The sampler's counters at one instant. Owned by the caller (malloc'd):
 * pg_selfprof_snapshot_free(). NULL on OOM. */
struct pg_selfprof_snapshot;
struct pg_selfprof_snapshot *pg_selfprof_snapshot_take(void);
void pg_selfprof_snapshot_free(struct pg_selfprof_snapshot *s);
/* Like pg_selfprof_write, but every value is (now - @base) (all four, as Go's
 * delta profiles), and duration_nanos covers the interval since @base. */
enum pg_err pg_selfprof_write_delta(struct pg_arena *arena, enum pg_selfprof_view view,
                                    const struct pg_selfprof_snapshot *base, uint8_t **out,
                                    size_t *len, struct pg_status *st);

/* ---- statistics (for /metrics) ----------------------------------------- */

struct pg_selfprof_stats {
    uint64_t samples;        /* samples recorded since start */
    uint64_t dropped;        /* samples lost: live table full or stack table full */
    uint64_t buckets;        /* distinct stacks */
    uint64_t frames;         /* stored frames */
    uint64_t live;           /* live sampled allocations */
    uint64_t live_capacity;  /* slots in the live table */
    uint64_t table_bytes;    /* memory held by the tables (touched pages) */
};
void pg_selfprof_get_stats(struct pg_selfprof_stats *out);

/* ---- symbolization ----------------------------------------------------- */

/* Names the function containing runtime address @addr: the executable's
 * .symtab (static functions too), else dladdr() for shared libraries.
 * Returns NULL when unknown. The string lives as long as the process (or the
 * library that holds it). Thread-safe. */
const char *pg_selfprof_symbolize(uintptr_t addr);

/* Go's symbolz protocol (/debug/pprof/symbol): @req is the POST body or the
 * GET query, "0xADDR+0xADDR+..."; the reply is "num_symbols: 1\n" followed by
 * one "0xADDR name\n" line per address that has a name. The reply lives in
 * @arena. LIMIT when @req holds more than PG_SELFPROF_SYMBOLZ_MAX addresses. */
#define PG_SELFPROF_SYMBOLZ_MAX 65536
enum pg_err pg_selfprof_symbolz(struct pg_arena *arena, const char *req, size_t len, char **out,
                                size_t *out_len, struct pg_status *st);
/* Same with a caller-supplied resolver (for fuzzing and tests). */
typedef const char *(*pg_selfprof_resolver)(uintptr_t addr, void *arg);
enum pg_err pg_selfprof_symbolz_with(struct pg_arena *arena, const char *req, size_t len,
                                     pg_selfprof_resolver resolve, void *arg, char **out,
                                     size_t *out_len, struct pg_status *st);

#endif
