/* SPDX-License-Identifier: Apache-2.0
 * Whole-buffer gzip (see gzip.h). Compression sizes its output once from
 * deflateBound, so a single deflate call finishes the stream; the malloc'd
 * gunzip inflates through pg_inflate_gzip into a private arena and copies
 * the result out, so gzip bodies have one decoder and one set of caps. */
#include "codec/gzip.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "codec/codec.h"

enum pg_err pg_gzip_compress(struct pg_arena *arena, const uint8_t *in, size_t len, int level,
                             uint8_t **out, size_t *out_len, struct pg_status *st)
{
    z_stream zs;
    uint8_t *buf;
    size_t cap;
    int rc;

    memset(&zs, 0, sizeof(zs));
    *out = NULL;
    *out_len = 0;
    /* zlib counts input in uInt: one call cannot take more. */
    if (len > UINT_MAX) {
        return pg_status_set(st, PG_ERR_LIMIT, "gzip: %zu bytes are too many to compress", len);
    }
    if (arena != NULL) {
        zs.zalloc = pg_arena_zalloc_cb;
        zs.zfree = pg_arena_zfree_cb;
        zs.opaque = arena;
    }
    if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        return pg_status_set(st, PG_ERR_NOMEM, "gzip: cannot initialise deflate");
    }
    cap = deflateBound(&zs, (uLong)len);
    buf = arena != NULL ? pg_arena_alloc(arena, cap) : malloc(cap);
    if (buf == NULL) {
        deflateEnd(&zs);
        return pg_status_set(st, PG_ERR_NOMEM, "gzip: no memory for %zu bytes", cap);
    }
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)len;
    zs.next_out = buf;
    zs.avail_out = (uInt)cap;
    rc = deflate(&zs, Z_FINISH);
    if (rc != Z_STREAM_END) {
        if (arena == NULL) {
            free(buf);
        }
        deflateEnd(&zs);
        return pg_status_set(st, PG_ERR_INTERNAL, "gzip: deflate failed (%d)", rc);
    }
    *out_len = zs.total_out;
    *out = buf;
    deflateEnd(&zs);
    return PG_ERR_OK;
}

enum pg_err pg_gzip_decompress(const uint8_t *in, size_t len, size_t max, uint8_t **out,
                               size_t *out_len, struct pg_status *st)
{
    /* Uncapped: pg_inflate_gzip stops the output at @max + 1 bytes, so the
     * arena holds at most about twice that (growth) plus zlib's state. */
    struct pg_arena *a = pg_arena_create(0);
    uint8_t *p = NULL;
    size_t n = 0;
    enum pg_err err;

    *out = NULL;
    *out_len = 0;
    if (a == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "gzip: no memory");
    }
    err = pg_inflate_gzip(a, in, len, max, &p, &n, st);
    if (err == PG_ERR_OK) {
        *out = malloc(n > 0 ? n : 1);
        if (*out == NULL) {
            err = pg_status_set(st, PG_ERR_NOMEM, "gzip: no memory for %zu bytes", n);
        } else {
            if (n > 0) {
                memcpy(*out, p, n);
            }
            *out_len = n;
        }
    }
    pg_arena_destroy(a);
    return err;
}
