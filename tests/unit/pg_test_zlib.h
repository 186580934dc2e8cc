/* SPDX-License-Identifier: Apache-2.0
 * Shared by the unit tests that need compressed bodies: zlib's own deflate,
 * so pprofgate's decoders are checked against an independent encoder. */
#ifndef PG_TEST_ZLIB_H
#define PG_TEST_ZLIB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#define PG_TEST_GZIP_BITS 31 /* windowBits for gzip framing (RFC 1952) */
#define PG_TEST_ZLIB_BITS 15 /* zlib framing (RFC 1950), HTTP "deflate" */

/* Compresses @in with @window_bits; malloc'd (caller frees), *@out_len set. */
static inline uint8_t *pg_test_squeeze(const uint8_t *in, size_t len, int window_bits,
                                       size_t *out_len)
{
    z_stream zs;
    size_t cap = deflateBound(NULL, (uLong)len) + 64;
    uint8_t *out = malloc(cap);

    memset(&zs, 0, sizeof(zs));
    deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    deflate(&zs, Z_FINISH);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    return out;
}

#endif
