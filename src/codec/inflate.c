/* SPDX-License-Identifier: Apache-2.0
 * Bounded inflation of gzip / zlib bodies into an arena. The output buffer is
 * sized from the gzip ISIZE trailer when plausible (one allocation for the
 * common single-member case) and otherwise doubles, never past max_out + 1:
 * the extra byte is how we notice that the stream wants to go beyond the cap.
 * With libdeflate (PG_HAVE_LIBDEFLATE) a single-member gzip whose ISIZE fits
 * the cap is first decompressed in one call into exactly ISIZE bytes, about
 * 2-3x faster than zlib (CRC and ISIZE verified); anything else (several
 * members, a lying ISIZE, bad data) goes the zlib way, which also gives the
 * precise error messages. */
#include "codec/inflate.h"

#include <limits.h>
#include <string.h>
#include <zlib.h>
#ifdef PG_HAVE_LIBDEFLATE
#include <libdeflate.h>
#include <pthread.h>
#endif

#include "codec/codec.h"
#include "core/bufpool.h"
#include "core/vec.h"

/* deflate cannot expand more than ~1032:1, so a larger ISIZE claim is a lie. */
#define PG_DEFLATE_MAX_RATIO 1032u
#define PG_INFLATE_MIN_BUF 4096u
/* zlib's avail_in/avail_out are uInt: feed at most this much per call. */
#define PG_ZCHUNK ((size_t)1 << 30)

bool pg_is_gzip(const uint8_t *p, size_t len)
{
    return p != NULL && len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

static const char *fmt_name(enum pg_inflate_format fmt)
{
    return fmt == PG_INFLATE_GZIP ? "gzip" : "zlib";
}

/* First guess for the output size: gzip's ISIZE (size mod 2^32 of the last
 * member) if it is plausible, else 4x the input; always within the cap. */
static size_t initial_capacity(const uint8_t *in, size_t len, enum pg_inflate_format fmt,
                               size_t hard_cap)
{
    size_t guess = 0;

    if (fmt == PG_INFLATE_GZIP && len >= 18) {
        uint32_t isize = (uint32_t)in[len - 4] | (uint32_t)in[len - 3] << 8 |
                         (uint32_t)in[len - 2] << 16 | (uint32_t)in[len - 1] << 24;
        size_t max_plausible = len > SIZE_MAX / PG_DEFLATE_MAX_RATIO ? SIZE_MAX
                                                                     : len * PG_DEFLATE_MAX_RATIO;
        if (isize <= max_plausible) {
            guess = (size_t)isize + 1; /* +1: room to see Z_STREAM_END without a regrow */
        }
    }
    if (guess == 0) {
        guess = len > SIZE_MAX / 4 ? SIZE_MAX : len * 4;
    }
    if (guess < PG_INFLATE_MIN_BUF) {
        guess = PG_INFLATE_MIN_BUF;
    }
    return guess > hard_cap ? hard_cap : guess;
}

static enum pg_err zerr(struct pg_status *st, enum pg_inflate_format fmt, const z_stream *z,
                        int rc, bool header_done)
{
    const char *name = fmt_name(fmt);

    if (rc == Z_MEM_ERROR) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory while inflating", name);
    }
    if (!header_done && rc == Z_DATA_ERROR) {
        return pg_status_set(st, PG_ERR_MALFORMED, "%s: invalid header (%s)", name,
                             z->msg != NULL ? z->msg : "bad magic");
    }
    if (rc == Z_BUF_ERROR) {
        return pg_status_set(st, PG_ERR_MALFORMED, "%s: unexpected EOF", name);
    }
    return pg_status_set(st, PG_ERR_MALFORMED, "%s: corrupt input after %lu bytes: %s", name,
                         (unsigned long)z->total_in, z->msg != NULL ? z->msg : "data error");
}

#ifdef PG_HAVE_LIBDEFLATE
/* One decompressor per thread, kept between requests: allocating and
 * clearing one costs about as much as inflating a small push. Owned by the
 * thread's key; freed when the thread exits. */
static pthread_key_t dd_key;
static pthread_once_t dd_once = PTHREAD_ONCE_INIT;
static bool dd_key_ok;

static void dd_free(void *d)
{
    libdeflate_free_decompressor(d);
}

static void dd_key_init(void)
{
    dd_key_ok = pthread_key_create(&dd_key, dd_free) == 0;
}

static struct libdeflate_decompressor *thread_decompressor(void)
{
    struct libdeflate_decompressor *d;

    if (pthread_once(&dd_once, dd_key_init) != 0 || !dd_key_ok) {
        return NULL;
    }
    d = pthread_getspecific(dd_key);
    if (d == NULL && (d = libdeflate_alloc_decompressor()) != NULL &&
        pthread_setspecific(dd_key, d) != 0) {
        libdeflate_free_decompressor(d);
        d = NULL;
    }
    return d;
}

/* True with *@out / *@out_len set when libdeflate decoded the whole input as one member of
 * exactly ISIZE <= @max_out bytes; false means "use zlib" (nothing reported). A failed try
 * leaves its buffer in the arena: only for inputs that are odd or broken anyway. */
static bool gunzip_whole(struct pg_arena *arena, const uint8_t *in, size_t len, size_t max_out,
                         uint8_t **out, size_t *out_len)
{
    struct libdeflate_decompressor *d;
    size_t isize, in_used = 0, out_used = 0;
    enum libdeflate_result rc;
    uint8_t *buf;

    if (len < 18) {
        return false;
    }
    isize = (size_t)in[len - 4] | (size_t)in[len - 3] << 8 | (size_t)in[len - 2] << 16 |
            (size_t)in[len - 1] << 24;
    if (isize > max_out || isize / PG_DEFLATE_MAX_RATIO > len) {
        return false;
    }
    buf = pg_arena_alloc(arena, isize ? isize : 1);
    if (buf == NULL || (d = thread_decompressor()) == NULL) {
        return false; /* zlib reports the cap / OOM with its usual message */
    }
    rc = libdeflate_gzip_decompress_ex(d, in, len, buf, isize, &in_used, &out_used);
    if (rc != LIBDEFLATE_SUCCESS || in_used != len || out_used != isize) {
        return false;
    }
    *out = buf;
    *out_len = out_used;
    return true;
}
#endif

bool pg_inflate_gzip_pooled(const uint8_t *in, size_t len, size_t max_out, uint8_t **out,
                            size_t *out_len, size_t *block)
{
#ifdef PG_HAVE_LIBDEFLATE
    struct libdeflate_decompressor *d;
    size_t isize, in_used = 0, out_used = 0, got;
    uint8_t *buf;

    *out = NULL;
    *out_len = 0;
    *block = 0;
    if (len < 18 || !pg_is_gzip(in, len)) {
        return false;
    }
    isize = (size_t)in[len - 4] | (size_t)in[len - 3] << 8 | (size_t)in[len - 2] << 16 |
            (size_t)in[len - 1] << 24;
    if (isize < PG_BUFPOOL_MIN || isize > max_out || isize / PG_DEFLATE_MAX_RATIO > len ||
        (d = thread_decompressor()) == NULL) {
        return false;
    }
    if ((buf = pg_bufpool_get(isize, &got)) == NULL) {
        return false;
    }
    if (libdeflate_gzip_decompress_ex(d, in, len, buf, isize, &in_used, &out_used) !=
            LIBDEFLATE_SUCCESS ||
        in_used != len || out_used != isize) {
        pg_bufpool_put(buf, got, isize); /* written up to isize at most */
        return false;
    }
    *out = buf;
    *out_len = isize;
    *block = got;
    return true;
#else
    (void)in;
    (void)len;
    (void)max_out;
    *out = NULL;
    *out_len = 0;
    *block = 0;
    return false;
#endif
}

enum pg_err pg_inflate(struct pg_arena *arena, const uint8_t *in, size_t len,
                       enum pg_inflate_format fmt, size_t max_out, uint8_t **out, size_t *out_len,
                       struct pg_status *st)
{
    z_stream z;
    size_t hard_cap = max_out == SIZE_MAX ? SIZE_MAX : max_out + 1;
    size_t cap, used = 0, in_off = 0;
    uint8_t *buf;
    enum pg_err err = PG_ERR_OK;
    bool header_done = false;
    int rc;

    *out = NULL;
    *out_len = 0;
    if (fmt == PG_INFLATE_GZIP && !pg_is_gzip(in, len)) {
        return pg_status_set(st, PG_ERR_MALFORMED, "gzip: invalid header");
    }
#ifdef PG_HAVE_LIBDEFLATE
    if (fmt == PG_INFLATE_GZIP && gunzip_whole(arena, in, len, max_out, out, out_len)) {
        return PG_ERR_OK;
    }
#endif
    memset(&z, 0, sizeof(z));
    z.zalloc = pg_arena_zalloc_cb;
    z.zfree = pg_arena_zfree_cb;
    z.opaque = arena;
    rc = inflateInit2(&z, fmt == PG_INFLATE_GZIP ? 16 + MAX_WBITS : MAX_WBITS);
    if (rc != Z_OK) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot initialise zlib", fmt_name(fmt));
    }
    cap = initial_capacity(in, len, fmt, hard_cap);
    buf = pg_arena_alloc(arena, cap);
    if (buf == NULL) {
        err = pg_status_set(st, pg_arena_hit_cap(arena) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                            "%s: no memory for %zu inflated bytes", fmt_name(fmt), cap);
        goto done;
    }
    for (;;) {
        size_t in_chunk = len - in_off < PG_ZCHUNK ? len - in_off : PG_ZCHUNK;
        size_t out_chunk;
        size_t before_in, before_out;

        if (used == cap) {
            if (cap >= hard_cap) {
                break; /* full at max_out + 1: over the limit */
            }
            if (!PG_VEC_RESERVE(arena, buf, cap, cap + 1, 0, hard_cap)) {
                err = pg_status_set(st, pg_arena_hit_cap(arena) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                                    "%s: no memory for %zu inflated bytes", fmt_name(fmt),
                                    pg_vec_next_cap(cap, 1, cap + 1, 0, hard_cap));
                goto done;
            }
        }
        out_chunk = cap - used < PG_ZCHUNK ? cap - used : PG_ZCHUNK;
        z.next_in = (Bytef *)(uintptr_t)(in + in_off);
        z.avail_in = (uInt)in_chunk;
        z.next_out = buf + used;
        z.avail_out = (uInt)out_chunk;
        before_in = z.avail_in;
        before_out = z.avail_out;
        rc = inflate(&z, Z_NO_FLUSH);
        in_off += before_in - z.avail_in;
        used += before_out - z.avail_out;
        if (before_in != z.avail_in || before_out != z.avail_out) {
            header_done = header_done || used > 0 || rc == Z_STREAM_END;
        }
        if (rc == Z_STREAM_END) {
            header_done = true;
            /* gzip may hold several members back to back (RFC 1952 2.2). */
            if (fmt == PG_INFLATE_GZIP && in_off < len) {
                if (!pg_is_gzip(in + in_off, len - in_off)) {
                    err = pg_status_set(st, PG_ERR_MALFORMED,
                                        "gzip: invalid header (trailing data after member)");
                    goto done;
                }
                if (inflateReset(&z) != Z_OK) {
                    err = pg_status_set(st, PG_ERR_INTERNAL, "gzip: inflateReset failed");
                    goto done;
                }
                header_done = false;
                continue;
            }
            if (fmt == PG_INFLATE_ZLIB && in_off < len) {
                err = pg_status_set(st, PG_ERR_MALFORMED, "zlib: trailing data after stream");
                goto done;
            }
            break;
        }
        if (rc == Z_OK) {
            continue;
        }
        if (rc == Z_BUF_ERROR && z.avail_out == 0) {
            continue; /* needs more room: grow above */
        }
        if (rc == Z_BUF_ERROR && in_off >= len) {
            err = pg_status_set(st, PG_ERR_MALFORMED, "%s: unexpected EOF", fmt_name(fmt));
            goto done;
        }
        err = zerr(st, fmt, &z, rc, header_done);
        goto done;
    }
    if (used > max_out) {
        err = pg_status_set(st, PG_ERR_LIMIT,
                            "decompressed body exceeds max_request_body_size (%zu bytes)", max_out);
        goto done;
    }
    *out = buf;
    *out_len = used;
done:
    inflateEnd(&z);
    return err;
}

/* The codec table's entry points (codec/codec.h). */
enum pg_err pg_inflate_gzip(struct pg_arena *arena, const uint8_t *in, size_t len, size_t max_out,
                            uint8_t **out, size_t *out_len, struct pg_status *st)
{
    return pg_inflate(arena, in, len, PG_INFLATE_GZIP, max_out, out, out_len, st);
}

enum pg_err pg_inflate_zlib(struct pg_arena *arena, const uint8_t *in, size_t len, size_t max_out,
                            uint8_t **out, size_t *out_len, struct pg_status *st)
{
    return pg_inflate(arena, in, len, PG_INFLATE_ZLIB, max_out, out, out_len, st);
}
