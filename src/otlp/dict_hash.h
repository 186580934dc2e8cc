/* SPDX-License-Identifier: Apache-2.0
 * The dictionary's hash mixing (murmur3-style) and byte hash, one leaf both
 * the interning code and AnyValue hashing (anyvalue.c) read, so neither calls
 * the other for it. Static, to stay inline where it is used. */
#ifndef PG_OTLP_DICT_HASH_H
#define PG_OTLP_DICT_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define K1 0x9e3779b97f4a7c15ull
#define K2 0xc2b2ae3d27d4eb4full

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static inline uint64_t hash_u64(uint64_t h, uint64_t v)
{
    return rotl64(h ^ (v * K1), 31) * K2;
}

/* @n bytes at @p hashed with @seed (also the tests' and fuzzers' hash). */
__attribute__((unused)) static uint64_t pg_dict_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const uint8_t *s = p;
    uint64_t h = seed ^ (n * K1);

    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = rotl64(h ^ (w * K1), 29) * K2;
        s += 8;
        n -= 8;
    }
    if (n > 0) {
        /* The 1-7 tail bytes from at most two fixed-size loads: a variable-length memcpy
         * would be a libc call per hash. */
        uint64_t w;
        if (n >= 4) {
            uint32_t lo, hi;
            memcpy(&lo, s, 4);
            memcpy(&hi, s + n - 4, 4);
            w = (uint64_t)hi << 32 | lo;
        } else {
            w = (uint64_t)s[0] | (uint64_t)s[n / 2] << 8 | (uint64_t)s[n - 1] << 16;
        }
        h = rotl64(h ^ (w * K1), 29) * K2;
    }
    return fmix64(h);
}

/* The link table's hash of the 24-byte trace + span id key as three words (dict_messages.c
 * interns, dict.c seeds the zero entry under it). */
static inline uint64_t link_hash(uint64_t w0, uint64_t w1, uint64_t w2)
{
    /* No fmix64: the ids are random or at worst structured, and a final multiply carries
     * every bit of w2 into the high half, which tab's h32 folds into the slot bits. */
    return (rotl64(w0 * K1 ^ w1, 31) * K2 ^ w2) * K1;
}

#endif
