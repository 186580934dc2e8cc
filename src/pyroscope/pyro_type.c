/* SPDX-License-Identifier: Apache-2.0
 * The table of profile-type suffixes Pyroscope's legacy ingest path recognises, with the
 * metric, sample type and unit it gives each (its ingest adapter's convertMetadata). */
#include "pyroscope/pyro_type.h"

#include <stdint.h>
#include <string.h>

/* suffix, metric, sample type, unit, sampled */
#define PYRO_TYPES(X) \
    X("cpu", "process_cpu", "samples", "count", true) \
    X("itimer", "process_cpu", "samples", "count", true) \
    X("wall", "wall", "samples", "count", true) \
    X("seconds", "wall", "samples", "count", true) \
    X("nanoseconds", "wall", "samples", "count", true) \
    X("microseconds", "wall", "samples", "count", true) \
    X("milliseconds", "wall", "samples", "count", true) \
    X("inuse_objects", "memory", "inuse_objects", "count", false) \
    X("inuse_space", "memory", "inuse_space", "bytes", false) \
    X("alloc_objects", "memory", "alloc_objects", "count", false) \
    X("alloc_space", "memory", "alloc_space", "bytes", false) \
    X("alloc_in_new_tlab_objects", "memory", "alloc_in_new_tlab_objects", "count", false) \
    X("alloc_in_new_tlab_bytes", "memory", "alloc_in_new_tlab_bytes", "bytes", false) \
    X("alloc_outside_tlab_objects", "memory", "alloc_outside_tlab_objects", "count", false) \
    X("alloc_outside_tlab_bytes", "memory", "alloc_outside_tlab_bytes", "bytes", false) \
    X("live", "memory", "live", "count", false) \
    X("bytes", "memory", "samples", "bytes", false) \
    X("goroutines", "goroutine", "goroutines", "count", false) \
    X("mutex_count", "mutex", "contentions", "count", false) \
    X("mutex_duration", "mutex", "delay", "nanoseconds", false) \
    X("block_count", "block", "contentions", "count", false) \
    X("block_duration", "block", "delay", "nanoseconds", false) \
    X("lock_count", "block", "contentions", "count", false) \
    X("lock_duration", "block", "delay", "nanoseconds", false) \
    X("exceptions", "exceptions", "samples", "count", false)

#define ENTRY(suffix, metric, type, unit, sampled) {suffix, metric, type, unit, sampled},
static const struct pg_pyro_type types[] = {PYRO_TYPES(ENTRY)};
#define LENGTH(suffix, metric, type, unit, sampled) sizeof(suffix) - 1,
static const uint8_t type_len[] = {PYRO_TYPES(LENGTH)}; /* compared first: no strlen */

/* A bit per suffix length that some type has (all are under 64 bytes): most application
 * names' last piece ("checkout" in "shop.checkout") is refused by one test, not 25. */
#define LEN_BIT(suffix, metric, type, unit, sampled) | (1ull << (sizeof(suffix) - 1))
static const uint64_t type_lengths = 0 PYRO_TYPES(LEN_BIT);

const struct pg_pyro_type *pg_pyro_type_lookup(const char *suffix, size_t n)
{
    if (n >= 64 || (type_lengths >> n & 1) == 0) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (type_len[i] == n && memcmp(types[i].suffix, suffix, n) == 0) {
            return &types[i];
        }
    }
    return NULL;
}

const struct pg_pyro_type *pg_pyro_types(size_t *n)
{
    *n = sizeof(types) / sizeof(types[0]);
    return types;
}
