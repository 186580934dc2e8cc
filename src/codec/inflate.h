/* SPDX-License-Identifier: Apache-2.0
 * Bounded zlib inflation into a request arena: gzip (RFC 1952, multi-member)
 * and zlib (RFC 1950, HTTP "deflate"). The output cap is enforced while
 * inflating, so a decompression bomb costs about max_out bytes of work.
 * Reentrant: it runs on the receiver's worker threads (the libdeflate state
 * is per thread, all other state per call). The codec table (codec.h)
 * reaches it through pg_inflate_gzip / pg_inflate_zlib. */
#ifndef PG_CODEC_INFLATE_H
#define PG_CODEC_INFLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

enum pg_inflate_format { PG_INFLATE_GZIP = 0, PG_INFLATE_ZLIB }; /* ZLIB = HTTP "deflate" (RFC 1950) */

/* True when @p starts with the gzip magic 1f 8b. */
bool pg_is_gzip(const uint8_t *p, size_t len);

/* Inflates one layer into @arena; stops with PG_ERR_LIMIT ("... exceeds max_request_body_size
 * (N bytes)") as soon as output would pass @max_out. Multi-member gzip accepted.
 * Bad data -> PG_ERR_MALFORMED with zlib's reason ("gzip: invalid header", "unexpected EOF", ...).
 * On success *@out (in @arena, owned by it) holds *@out_len bytes. */
enum pg_err pg_inflate(struct pg_arena *arena, const uint8_t *in, size_t len,
                       enum pg_inflate_format fmt, size_t max_out, uint8_t **out, size_t *out_len,
                       struct pg_status *st);

/* A single-member gzip @in whose ISIZE trailer is at least PG_BUFPOOL_MIN and at most
 * @max_out, inflated in one call (libdeflate) into a block of core/bufpool: true with
 * *@out holding *@out_len bytes in a block of *@block bytes, owned by the caller, who gives
 * it back with pg_bufpool_put (in pieces if it likes: a consumer that is done with a
 * page-aligned part early lets the rest of its request reuse those pages). False (nothing
 * reported, nothing held) for anything else: a smaller or odd body, no libdeflate, bad
 * data; pg_inflate then does the work and gives the precise error. */
bool pg_inflate_gzip_pooled(const uint8_t *in, size_t len, size_t max_out, uint8_t **out,
                            size_t *out_len, size_t *block);

#endif
