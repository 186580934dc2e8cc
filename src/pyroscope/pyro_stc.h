/* SPDX-License-Identifier: Apache-2.0
 * The `sample_type_config` JSON part of a Pyroscope `/ingest` multipart body: per pprof
 * sample type, the units, aggregation, display name and flags Pyroscope applies. Pure
 * parser of the pyroscope room: no I/O, capped, everything in the caller's arena; failures
 * MALFORMED (400) naming the key. */
#ifndef PG_PYROSCOPE_PYRO_STC_H
#define PG_PYROSCOPE_PYRO_STC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

enum pg_pyro_aggregation { PG_PYRO_AGG_UNSET, PG_PYRO_AGG_SUM, PG_PYRO_AGG_AVERAGE };

struct pg_pyro_stc_entry {
    const char *type;         /* the pprof sample type it applies to (the JSON key) */
    const char *units;        /* or NULL */
    const char *display_name; /* "display-name", or NULL */
    enum pg_pyro_aggregation aggregation; /* "aggregation": "sum" | "average" */
    bool cumulative, has_cumulative;      /* "cumulative" */
    bool sampled, has_sampled;            /* "sampled" */
};

#define PG_PYRO_MAX_STC_ENTRIES 64
#define PG_PYRO_MAX_STC_BYTES 65536u

/* Unknown keys inside an entry are ignored, a value of the wrong JSON type, an unknown
 * aggregation or more than the cap: MALFORMED naming the key. */
enum pg_err pg_pyro_stc_parse(struct pg_arena *a, const uint8_t *json, size_t len,
                              struct pg_pyro_stc_entry **out, size_t *n, struct pg_status *st);

#endif
