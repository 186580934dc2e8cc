/* SPDX-License-Identifier: Apache-2.0
 * The profile types Pyroscope's legacy ingest path knows by the suffix of an application
 * name ("app.cpu", "app.alloc_space", ...): the suffix, the `__name__` (metric) it files the
 * profile under, and the pprof sample type and unit it writes. One static table, read only. */
#ifndef PG_PYROSCOPE_PYRO_TYPE_H
#define PG_PYROSCOPE_PYRO_TYPE_H

#include <stdbool.h>
#include <stddef.h>

struct pg_pyro_type {
    const char *suffix;      /* "cpu", "alloc_space", ... */
    const char *metric;      /* Pyroscope's __name__: "process_cpu", "memory", "wall", ... */
    const char *sample_type; /* pprof sample type written for a text (folded, lines) upload */
    const char *sample_unit; /* "count", "bytes", "nanoseconds" */
    bool sampled;            /* process_cpu or wall: with a sampleRate, each count is one
                              * period of 1/sampleRate s, type "cpu"/"wall", unit nanoseconds */
};

/* The entry for @suffix[0..n), or NULL when Pyroscope does not know it. */
const struct pg_pyro_type *pg_pyro_type_lookup(const char *suffix, size_t n);

/* The whole table (for docs and tests): @n entries. */
const struct pg_pyro_type *pg_pyro_types(size_t *n);

#endif
