/* SPDX-License-Identifier: Apache-2.0
 * Whole-buffer zstd for producers (the otlphttp exporter's `compression:
 * zstd`). Removing a zstd Content-Encoding is the codec table's row
 * (pg_zstd_decode in codec.h); both live in zstd.c. */
#ifndef PG_CODEC_ZSTD_H
#define PG_CODEC_ZSTD_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* zstd-compresses @in (one frame, content size recorded) at @level (zstd's
 * scale, clamped to what the library offers) into a malloc'd *@out the
 * caller frees. The calling thread's context is reused. Errors: NOMEM,
 * INTERNAL with zstd's reason. */
enum pg_err pg_zstd_compress(const uint8_t *in, size_t len, int level, uint8_t **out,
                             size_t *out_len, struct pg_status *st)
    __attribute__((warn_unused_result));

#endif
