/* SPDX-License-Identifier: Apache-2.0
 * Whole-buffer gzip for the producers of gzip bodies (the OTLP exporter's
 * grpc-encoding, the heap sampler's pprof; libdeflate, one compressor per
 * thread and level reused across calls) and the gRPC client's
 * malloc'd gunzip. Removing a Content-Encoding is the codec table's job
 * (codec.h); the gunzip here goes through the same decoder (inflate.c). */
#ifndef PG_CODEC_GZIP_H
#define PG_CODEC_GZIP_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

/* Levels on zlib's scale: 0 stores, 1 fastest .. 9 smallest; DEFAULT is 6
 * (zlib's and Go's default). libdeflate's 10..12 are not offered: nothing
 * that configures a level here accepts them (the collector's either). */
#define PG_GZIP_LEVEL_DEFAULT (-1)
#define PG_GZIP_LEVEL_DEFAULT_VALUE 6
#define PG_GZIP_LEVEL_MAX 9
/* Largest input one call takes: gzip's ISIZE is 32 bits. */
#define PG_GZIP_MAX_INPUT ((size_t)UINT32_MAX)

/* gzip-compresses @in (one member) at @level (0..9 or PG_GZIP_LEVEL_DEFAULT)
 * with the calling thread's reused compressor, into a buffer sized by the
 * compressor's bound. With @arena *@out is the arena's; with NULL it is
 * malloc'd and the caller frees it. Errors: NOMEM, LIMIT (input over
 * PG_GZIP_MAX_INPUT), INTERNAL (bad level). */
enum pg_err pg_gzip_compress(struct pg_arena *arena, const uint8_t *in, size_t len, int level,
                             uint8_t **out, size_t *out_len, struct pg_status *st)
    __attribute__((warn_unused_result));

/* Frees the calling thread's compressors now (threads that exit free
 * theirs by themselves); the next compress on the thread makes new ones. */
void pg_gzip_thread_release(void);

/* Compressors alive in the process, for tests of the reuse. */
size_t pg_gzip_compressors_live(void);

/* gunzips @in into a malloc'd buffer (*@out, caller frees) of at most @max
 * bytes: LIMIT beyond it, MALFORMED for corrupt or truncated data. */
enum pg_err pg_gzip_decompress(const uint8_t *in, size_t len, size_t max, uint8_t **out,
                               size_t *out_len, struct pg_status *st)
    __attribute__((warn_unused_result));

#endif
