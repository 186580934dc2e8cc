/* SPDX-License-Identifier: Apache-2.0
 * The Content-Encoding codings pprofgate can remove, in one table
 * (codec.c): each row names a coding (case-insensitive, plus one alias)
 * and its decoder. The receiver's `compression_algorithms`, the
 * Content-Encoding parser, the decoding chain and every message listing
 * what is supported all walk this table, so a coding is added as one row
 * plus its decoder file. A set of codings is a bit mask: row i is bit i.
 * The table is read-only: safe from any thread. */
#ifndef PG_CODEC_CODEC_H
#define PG_CODEC_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

struct pg_codec {
    const char *name;  /* canonical: what messages list */
    const char *alias; /* also accepted ("" for identity, "x-gzip"), or NULL */
    /* Removes one layer of this coding from @in (borrowed) into @arena; the
     * output is capped at @max_out bytes (LIMIT as soon as it would pass).
     * *@out is owned by @arena. Errors: MALFORMED with the decoder's reason,
     * LIMIT, NOMEM. NULL for identity (nothing to remove). Runs on the
     * receiver's worker threads: must be reentrant. */
    enum pg_err (*decode)(struct pg_arena *arena, const uint8_t *in, size_t len, size_t max_out,
                          uint8_t **out, size_t *out_len, struct pg_status *st);
};

/* The row whose name or alias is @name[0..@n), case-insensitive; NULL when
 * pprofgate cannot decode that coding (br, snappy, lz4, ...). */
const struct pg_codec *pg_codec_find(const char *name, size_t n);
/* @c's bit in a set. */
unsigned pg_codec_bit(const struct pg_codec *c);
/* The set of every coding in the table. */
unsigned pg_codec_all(void);
/* The names in @set, table order, comma-separated ("identity, gzip,
 * deflate, zlib"); with @aliases each alias follows its name (the empty one
 * as ""). Into @buf, always NUL-terminated (cut short when it is). */
void pg_codec_list(unsigned set, bool aliases, char *buf, size_t size);

/* ---- the decoders the table names, one file each ------------------------ */

/* inflate.c: gzip (RFC 1952, members back to back) and zlib (RFC 1950). */
enum pg_err pg_inflate_gzip(struct pg_arena *arena, const uint8_t *in, size_t len, size_t max_out,
                            uint8_t **out, size_t *out_len, struct pg_status *st);
enum pg_err pg_inflate_zlib(struct pg_arena *arena, const uint8_t *in, size_t len, size_t max_out,
                            uint8_t **out, size_t *out_len, struct pg_status *st);
/* zstd.c: zstd (RFC 8878, frames back to back), window bounded by @max_out. */
enum pg_err pg_zstd_decode(struct pg_arena *arena, const uint8_t *in, size_t len, size_t max_out,
                           uint8_t **out, size_t *out_len, struct pg_status *st);

#endif
