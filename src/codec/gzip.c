/* SPDX-License-Identifier: Apache-2.0
 * Whole-buffer gzip (see gzip.h). Compression is libdeflate's one-shot
 * gzip: every body is whole in memory already, so zlib's streaming buys
 * nothing and its per-call deflateInit (~70K instructions, ~270 KB of
 * state) is what a push paid most for. Each thread keeps one compressor
 * per level it has used (at most PG_GZIP_LEVEL_MAX + 1 per thread), freed
 * by the thread-exit destructor or pg_gzip_thread_release. The malloc'd
 * gunzip inflates through pg_inflate_gzip into a private arena and copies
 * the result out, so gzip bodies have one decoder and one set of caps. */
#include "codec/gzip.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "codec/codec.h"

/* One thread's compressors, indexed by level; owned by that thread. */
struct gz_cache {
    struct libdeflate_compressor *c[PG_GZIP_LEVEL_MAX + 1];
};

static pthread_key_t gz_key;
static pthread_once_t gz_once = PTHREAD_ONCE_INIT;
static bool gz_key_ok;
static _Thread_local struct gz_cache *gz_tls;
static atomic_size_t gz_live;

static void gz_cache_free(void *p)
{
    struct gz_cache *cache = p;

    for (int i = 0; i <= PG_GZIP_LEVEL_MAX; i++) {
        if (cache->c[i] != NULL) {
            libdeflate_free_compressor(cache->c[i]);
            atomic_fetch_sub(&gz_live, 1);
        }
    }
    free(cache);
}

static void gz_key_init(void)
{
    gz_key_ok = pthread_key_create(&gz_key, gz_cache_free) == 0;
}

/* The calling thread's compressor for @level, created on first use. */
static struct libdeflate_compressor *gz_compressor(int level)
{
    if (gz_tls == NULL) {
        pthread_once(&gz_once, gz_key_init);
        if (!gz_key_ok) {
            return NULL;
        }
        gz_tls = calloc(1, sizeof(*gz_tls));
        if (gz_tls == NULL) {
            return NULL;
        }
        /* The key's destructor frees the cache when the thread exits. */
        if (pthread_setspecific(gz_key, gz_tls) != 0) {
            free(gz_tls);
            gz_tls = NULL;
            return NULL;
        }
    }
    if (gz_tls->c[level] == NULL) {
        gz_tls->c[level] = libdeflate_alloc_compressor(level);
        if (gz_tls->c[level] != NULL) {
            atomic_fetch_add(&gz_live, 1);
        }
    }
    return gz_tls->c[level];
}

void pg_gzip_thread_release(void)
{
    if (gz_tls != NULL) {
        pthread_setspecific(gz_key, NULL);
        gz_cache_free(gz_tls);
        gz_tls = NULL;
    }
}

size_t pg_gzip_compressors_live(void)
{
    return atomic_load(&gz_live);
}

enum pg_err pg_gzip_compress(struct pg_arena *arena, const uint8_t *in, size_t len, int level,
                             uint8_t **out, size_t *out_len, struct pg_status *st)
{
    struct libdeflate_compressor *c;
    uint8_t *buf;
    size_t cap;
    size_t n;

    *out = NULL;
    *out_len = 0;
    if (level == PG_GZIP_LEVEL_DEFAULT) {
        level = PG_GZIP_LEVEL_DEFAULT_VALUE;
    }
    if (level < 0 || level > PG_GZIP_LEVEL_MAX) {
        return pg_status_set(st, PG_ERR_INTERNAL, "gzip: level %d is not 0..%d", level,
                             PG_GZIP_LEVEL_MAX);
    }
    /* gzip's ISIZE is 32 bits and the output buffer is the whole bound. */
    if (len > PG_GZIP_MAX_INPUT) {
        return pg_status_set(st, PG_ERR_LIMIT, "gzip: %zu bytes are too many to compress", len);
    }
    c = gz_compressor(level);
    if (c == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "gzip: no memory for a level %d compressor",
                             level);
    }
    cap = libdeflate_gzip_compress_bound(c, len);
    buf = arena != NULL ? pg_arena_alloc(arena, cap) : malloc(cap);
    if (buf == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "gzip: no memory for %zu bytes", cap);
    }
    n = libdeflate_gzip_compress(c, in, len, buf, cap);
    if (n == 0) {
        if (arena == NULL) {
            free(buf);
        }
        return pg_status_set(st, PG_ERR_INTERNAL, "gzip: %zu bytes did not fit the %zu-byte bound",
                             len, cap);
    }
    /* A queued or retried body lives on: give back the unused bound when it
     * is most of the buffer (glibc shrinks in place). */
    if (arena == NULL && n < cap / 2) {
        uint8_t *shrunk = realloc(buf, n);

        if (shrunk != NULL) {
            buf = shrunk;
        }
    }
    *out = buf;
    *out_len = n;
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
