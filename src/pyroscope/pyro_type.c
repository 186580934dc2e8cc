/* SPDX-License-Identifier: Apache-2.0
 * The table of profile-type suffixes Pyroscope's legacy ingest path recognises, with the
 * metric, sample type and unit it gives each (its ingest adapter's convertMetadata). */
#include "pyroscope/pyro_type.h"

#include <string.h>

static const struct pg_pyro_type types[] = {
    {"cpu", "process_cpu", "samples", "count", true},
    {"itimer", "process_cpu", "samples", "count", true},
    {"wall", "wall", "samples", "count", true},
    {"seconds", "wall", "samples", "count", true},
    {"nanoseconds", "wall", "samples", "count", true},
    {"microseconds", "wall", "samples", "count", true},
    {"milliseconds", "wall", "samples", "count", true},
    {"inuse_objects", "memory", "inuse_objects", "count", false},
    {"inuse_space", "memory", "inuse_space", "bytes", false},
    {"alloc_objects", "memory", "alloc_objects", "count", false},
    {"alloc_space", "memory", "alloc_space", "bytes", false},
    {"alloc_in_new_tlab_objects", "memory", "alloc_in_new_tlab_objects", "count", false},
    {"alloc_in_new_tlab_bytes", "memory", "alloc_in_new_tlab_bytes", "bytes", false},
    {"alloc_outside_tlab_objects", "memory", "alloc_outside_tlab_objects", "count", false},
    {"alloc_outside_tlab_bytes", "memory", "alloc_outside_tlab_bytes", "bytes", false},
    {"live", "memory", "live", "count", false},
    {"bytes", "memory", "samples", "bytes", false},
    {"goroutines", "goroutine", "goroutines", "count", false},
    {"mutex_count", "mutex", "contentions", "count", false},
    {"mutex_duration", "mutex", "delay", "nanoseconds", false},
    {"block_count", "block", "contentions", "count", false},
    {"block_duration", "block", "delay", "nanoseconds", false},
    {"lock_count", "block", "contentions", "count", false},
    {"lock_duration", "block", "delay", "nanoseconds", false},
    {"exceptions", "exceptions", "samples", "count", false},
};

const struct pg_pyro_type *pg_pyro_type_lookup(const char *suffix, size_t n)
{
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (strlen(types[i].suffix) == n && memcmp(types[i].suffix, suffix, n) == 0) {
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
