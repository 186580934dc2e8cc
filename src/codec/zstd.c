/* SPDX-License-Identifier: Apache-2.0
 * zstd (RFC 8878) both ways: the codec table's decoder, capped while it
 * decompresses like inflate.c (the output never grows past max_out + 1
 * bytes, and the window the library may allocate is bounded by the cap
 * too, so a small body cannot make it reserve 128 MiB), and the exporter's
 * one-shot compressor. Each thread keeps one decompression and one
 * compression context between calls, freed when the thread exits. */
#include "codec/zstd.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "codec/codec.h"
#include "core/vec.h"

#define PG_ZSTD_MIN_BUF 4096u
/* The largest window a frame may ask for (zstd's own default limit). */
#define PG_ZSTD_WINDOW_LOG_MAX 27
#define PG_ZSTD_WINDOW_LOG_MIN 10 /* ZSTD_WINDOWLOG_ABSOLUTEMIN (experimental API) */

/* One thread's contexts; owned by that thread, freed by the key's destructor. */
struct zs_cache {
    ZSTD_DCtx *d;
    ZSTD_CCtx *c;
};

static pthread_key_t zs_key;
static pthread_once_t zs_once = PTHREAD_ONCE_INIT;
static bool zs_key_ok;
static _Thread_local struct zs_cache *zs_tls;

static void zs_cache_free(void *p)
{
    struct zs_cache *z = p;

    ZSTD_freeDCtx(z->d);
    ZSTD_freeCCtx(z->c);
    free(z);
}

static void zs_key_init(void)
{
    zs_key_ok = pthread_key_create(&zs_key, zs_cache_free) == 0;
}

static struct zs_cache *zs_cache(void)
{
    if (zs_tls == NULL) {
        pthread_once(&zs_once, zs_key_init);
        if (!zs_key_ok || (zs_tls = calloc(1, sizeof(*zs_tls))) == NULL) {
            return NULL;
        }
        if (pthread_setspecific(zs_key, zs_tls) != 0) {
            free(zs_tls);
            zs_tls = NULL;
        }
    }
    return zs_tls;
}

/* The smallest window log that holds @max_out bytes, within zstd's range. */
static int window_log_for(size_t max_out)
{
    int log = PG_ZSTD_WINDOW_LOG_MIN;

    while (log < PG_ZSTD_WINDOW_LOG_MAX && ((size_t)1 << log) < max_out) {
        log++;
    }
    return log;
}

enum pg_err pg_zstd_decode(struct pg_arena *arena, const uint8_t *in, size_t len, size_t max_out,
                           uint8_t **out, size_t *out_len, struct pg_status *st)
{
    struct zs_cache *z = zs_cache();
    size_t hard_cap = max_out == SIZE_MAX ? SIZE_MAX : max_out + 1;
    unsigned long long content = ZSTD_getFrameContentSize(in, len);
    size_t cap, used = 0;
    ZSTD_inBuffer ib = {in, len, 0};
    uint8_t *buf;
    size_t rc = 1;

    *out = NULL;
    *out_len = 0;
    if (content == ZSTD_CONTENTSIZE_ERROR) {
        return pg_status_set(st, PG_ERR_MALFORMED, "zstd: invalid frame header");
    }
    if (z == NULL || (z->d == NULL && (z->d = ZSTD_createDCtx()) == NULL)) {
        return pg_status_set(st, PG_ERR_NOMEM, "zstd: no memory for a decompression context");
    }
    ZSTD_DCtx_reset(z->d, ZSTD_reset_session_and_parameters);
    ZSTD_DCtx_setParameter(z->d, ZSTD_d_windowLogMax, window_log_for(max_out));
    /* The frame's own size when it gives one (one allocation), else 4x. */
    cap = content != ZSTD_CONTENTSIZE_UNKNOWN && content < hard_cap ? (size_t)content + 1
          : len > SIZE_MAX / 4                                       ? SIZE_MAX
                                                                     : len * 4;
    cap = cap < PG_ZSTD_MIN_BUF ? PG_ZSTD_MIN_BUF : cap > hard_cap ? hard_cap : cap;
    buf = pg_arena_alloc(arena, cap);
    if (buf == NULL) {
        return pg_status_set(st, pg_arena_hit_cap(arena) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "zstd: no memory for %zu decompressed bytes", cap);
    }
    while (ib.pos < ib.size || rc != 0) {
        ZSTD_outBuffer ob;

        if (used == cap) {
            if (cap >= hard_cap) {
                break; /* full at max_out + 1: over the limit */
            }
            if (!PG_VEC_RESERVE(arena, buf, cap, cap + 1, 0, hard_cap)) {
                return pg_status_set(st, pg_arena_hit_cap(arena) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                                     "zstd: no memory for %zu decompressed bytes", cap + 1);
            }
        }
        ob = (ZSTD_outBuffer){buf + used, cap - used, 0};
        rc = ZSTD_decompressStream(z->d, &ob, &ib);
        used += ob.pos;
        if (ZSTD_isError(rc)) {
            if (ZSTD_getErrorCode(rc) == ZSTD_error_frameParameter_windowTooLarge) {
                return pg_status_set(st, PG_ERR_LIMIT,
                                     "zstd: the frame's window is larger than "
                                     "max_request_body_size (%zu bytes) allows",
                                     max_out);
            }
            return pg_status_set(st, PG_ERR_MALFORMED, "zstd: corrupt input after %zu bytes: %s",
                                 ib.pos, ZSTD_getErrorName(rc));
        }
        if (ob.pos == 0 && ib.pos == ib.size && rc != 0 && used < cap) {
            return pg_status_set(st, PG_ERR_MALFORMED, "zstd: unexpected EOF");
        }
    }
    if (used > max_out) {
        return pg_status_set(st, PG_ERR_LIMIT,
                             "decompressed body exceeds max_request_body_size (%zu bytes)",
                             max_out);
    }
    *out = buf;
    *out_len = used;
    return PG_ERR_OK;
}

enum pg_err pg_zstd_compress(const uint8_t *in, size_t len, int level, uint8_t **out,
                             size_t *out_len, struct pg_status *st)
{
    struct zs_cache *z = zs_cache();
    size_t bound = ZSTD_compressBound(len);
    size_t n;
    uint8_t *buf;

    *out = NULL;
    *out_len = 0;
    if (z == NULL || (z->c == NULL && (z->c = ZSTD_createCCtx()) == NULL)) {
        return pg_status_set(st, PG_ERR_NOMEM, "zstd: no memory for a compression context");
    }
    if (ZSTD_isError(bound) || (buf = malloc(bound)) == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "zstd: no memory to compress %zu bytes", len);
    }
    level = level < ZSTD_minCLevel() ? ZSTD_minCLevel()
            : level > ZSTD_maxCLevel() ? ZSTD_maxCLevel()
                                       : level;
    n = ZSTD_compressCCtx(z->c, buf, bound, in, len, level);
    if (ZSTD_isError(n)) {
        free(buf);
        return pg_status_set(st, PG_ERR_INTERNAL, "zstd: %s", ZSTD_getErrorName(n));
    }
    *out = buf;
    *out_len = n;
    return PG_ERR_OK;
}
