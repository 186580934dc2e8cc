/* SPDX-License-Identifier: Apache-2.0
 * Whole-buffer gzip for the producers of gzip bodies (the OTLP exporter's
 * grpc-encoding, the heap sampler's pprof) and the gRPC client's
 * malloc'd gunzip. Removing a Content-Encoding is the codec table's job
 * (codec.h); the gunzip here goes through the same decoder (inflate.c). */
#ifndef PG_CODEC_GZIP_H
#define PG_CODEC_GZIP_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

/* gzip-compresses @in (one member) at zlib @level. With @arena the output
 * and zlib's state come from it (*@out is the arena's); with NULL *@out is
 * malloc'd and the caller frees it. Errors: NOMEM, LIMIT (input over 4 GiB),
 * INTERNAL. */
enum pg_err pg_gzip_compress(struct pg_arena *arena, const uint8_t *in, size_t len, int level,
                             uint8_t **out, size_t *out_len, struct pg_status *st)
    __attribute__((warn_unused_result));

/* gunzips @in into a malloc'd buffer (*@out, caller frees) of at most @max
 * bytes: LIMIT beyond it, MALFORMED for corrupt or truncated data. */
enum pg_err pg_gzip_decompress(const uint8_t *in, size_t len, size_t max, uint8_t **out,
                               size_t *out_len, struct pg_status *st)
    __attribute__((warn_unused_result));

#endif
