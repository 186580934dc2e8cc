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

/* Sets the mean sampling interval in bytes (0 = off, 1 = every allocation). */
void pg_selfprof_set_rate(uint64_t rate);
uint64_t pg_selfprof_rate(void);
/* True when the interposer is linked in and the rate is non-zero. */
bool pg_selfprof_enabled(void);
/* Why it is off, as one line for a 503 body ("heap sampler is off: ..."). */
const char *pg_selfprof_why_off(void);

/* Writes the current profile as gzip'd pprof into @arena.
 * @delta_since: if non-NULL, a previous snapshot handle for ?seconds=N deltas
 * (see selfprof internals); NULL for the cumulative profile. */
enum pg_err pg_selfprof_write(struct pg_arena *arena, enum pg_selfprof_view view, uint8_t **out,
                              size_t *len, struct pg_status *st);

#endif
