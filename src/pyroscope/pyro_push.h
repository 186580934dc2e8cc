/* SPDX-License-Identifier: Apache-2.0
 * push.v1.PushRequest, the body of a Connect unary call to /push.v1.PusherService/Push, in
 * its protobuf and its proto3-JSON form, decoded into one shape. Pure decoder of the
 * pyroscope room: no I/O, every count capped, everything in the caller's arena; failures
 * MALFORMED (400) or LIMIT (413) naming the field and the series/sample index. */
#ifndef PG_PYROSCOPE_PYRO_PUSH_H
#define PG_PYROSCOPE_PYRO_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "pyroscope/pyro_name.h"

struct pg_pyro_raw_sample {
    const uint8_t *raw_profile; /* proto: points INTO the request; JSON: base64-decoded, arena */
    size_t len;
    const char *id; /* "ID" (NUL-terminated; "" when absent) */
};

struct pg_pyro_series {
    struct pg_pyro_label *labels; /* as sent (a repeated name is kept twice) */
    size_t n_labels;
    struct pg_pyro_raw_sample *samples;
    size_t n_samples;
};

struct pg_pyro_push {
    struct pg_pyro_series *series;
    size_t n_series;
};

#define PG_PYRO_MAX_SERIES 4096
#define PG_PYRO_MAX_SAMPLES 4096 /* raw samples over all series of one request */

/* proto3 wire form; unknown fields skipped (annotations = 3 included); wrong wire types,
 * truncation, more than the caps, invalid UTF-8 in a label: MALFORMED/LIMIT naming the
 * field. */
enum pg_err pg_pyro_push_decode_proto(struct pg_arena *a, const uint8_t *buf, size_t len,
                                      struct pg_pyro_push *out, struct pg_status *st);

/* proto3 JSON form: "series", "labels" [{name,value}], "samples" [{"rawProfile": base64
 * (standard or URL-safe, padding optional), "ID"}]; also the proto field names
 * ("raw_profile"). Unknown keys are ignored, null means absent. Base64 that does not decode:
 * MALFORMED naming series/sample index. */
enum pg_err pg_pyro_push_decode_json(struct pg_arena *a, const char *buf, size_t len,
                                     struct pg_pyro_push *out, struct pg_status *st);

#endif
