/* SPDX-License-Identifier: Apache-2.0
 * Re-packing OTLP profile requests for export: one or several source
 * requests (a batch, or several merged by sending_queue.batch) become parts
 * whose encoded size stays under a byte cap, each with its own dictionary
 * rebuilt by value (pruned: only what its samples reference; no orphans,
 * index 0 the zero value). A sample that cannot fit even alone is dropped and
 * counted. Resource and scope attributes are copied with plain keys. */
#ifndef PG_EXPORTERHELPER_SPLIT_H
#define PG_EXPORTERHELPER_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "otlp/otlp.h"

struct pg_otlp_part {
    struct pg_otlp_request *req; /* in the output arena */
    size_t samples;              /* sample records in it */
    size_t bytes;                /* its encoded size */
    const uint8_t *wire;         /* its encoding (pg_otlp_request_encode), in the output arena */
};

struct pg_split_result {
    struct pg_otlp_part *parts;  /* in the output arena */
    size_t n_parts;
    size_t dropped_samples;      /* samples larger than the cap on their own */
    size_t dropped_profiles;     /* profiles whose header alone exceeds the cap */
};

/* Repacks the profiles of @srcs[0..@n_src) (borrowed, unchanged) into parts
 * of at most @max_bytes encoded bytes (0 = no cap: one merged part), all
 * allocated in @out. Returns OK, NOMEM or LIMIT (the arena's cap) with @st. */
enum pg_err pg_otlp_split(const struct pg_otlp_request *const *srcs, size_t n_src,
                          size_t max_bytes, struct pg_arena *out, struct pg_split_result *res,
                          struct pg_status *st);

/* Total sample records in @req. */
size_t pg_otlp_request_samples(const struct pg_otlp_request *req);

/* The same count read straight from an encoded request (resource_profiles
 * -> scope_profiles -> profiles -> samples), without decoding it: a spooled
 * record is counted for metrics and sent as stored. False when the bytes
 * are not well-formed protobuf along that path. */
bool pg_otlp_wire_samples(const uint8_t *buf, size_t len, size_t *out);

#endif
