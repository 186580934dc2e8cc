/* SPDX-License-Identifier: Apache-2.0
 * The one base64 codec (RFC 4648). Decoding comes in two dialects: strict for
 * credentials a client sends us, lenient for what gRPC peers put in -bin
 * metadata. Pure functions, thread-safe. */
#ifndef PG_CORE_BASE64_H
#define PG_CORE_BASE64_H

#include <stddef.h>
#include <stdint.h>

enum pg_base64_mode {
    /* RFC 4648 section 4: the standard alphabet, a multiple of 4 characters,
     * '=' only as the final padding (HTTP Basic credentials). */
    PG_BASE64_STRICT = 0,
    /* gRPC -bin metadata: padding optional (any trailing '='), the standard
     * or the URL-safe alphabet ('-' and '_' too). */
    PG_BASE64_LENIENT,
};

/* Room that decoding @n characters can need, in bytes. */
static inline size_t pg_base64_decoded_max(size_t n)
{
    return n / 4 * 3 + 3;
}

/* Room that encoding @n bytes needs, with padding, without the NUL. */
static inline size_t pg_base64_encoded_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

/* Decodes @n characters of @in into @out (room for @cap bytes). Returns the
 * decoded length, or -1 when @in is not base64 under @mode or does not fit. */
long pg_base64_decode(const char *in, size_t n, enum pg_base64_mode mode, uint8_t *out,
                      size_t cap);

/* Encodes @n bytes of @in with the standard alphabet and padding into @out
 * and NUL-terminates it. Returns the encoded length, or -1 (and writes
 * nothing) when @cap is below pg_base64_encoded_len(@n) + 1. */
long pg_base64_encode(const uint8_t *in, size_t n, char *out, size_t cap);

#endif
