/* SPDX-License-Identifier: Apache-2.0
 * Hex digits: one digit's value (the percent-decoders, the credential file parser, chunked
 * sizes) and whole trace/span ids (pprof trace_id/span_id labels become OTLP Links). */
#ifndef PG_CORE_HEX_H
#define PG_CORE_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* 0..15 for [0-9a-fA-F], -1 otherwise. */
static inline int pg_hex_digit(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Digit value + 1 by byte, 0 for anything that is not a hex digit. */
#define PG_HEX_D10(c0) [c0] = 1, [c0 + 1] = 2, [c0 + 2] = 3, [c0 + 3] = 4, [c0 + 4] = 5, \
    [c0 + 5] = 6, [c0 + 6] = 7, [c0 + 7] = 8, [c0 + 8] = 9, [c0 + 9] = 10
#define PG_HEX_A6(c0) [c0] = 11, [c0 + 1] = 12, [c0 + 2] = 13, [c0 + 3] = 14, [c0 + 4] = 15, \
    [c0 + 5] = 16
static const uint8_t pg_hex_val1[256] = {PG_HEX_D10('0'), PG_HEX_A6('a'), PG_HEX_A6('A')};
#undef PG_HEX_D10
#undef PG_HEX_A6

/* @n bytes from exactly 2n hex digits at @s (any case), by table; false when @len is not
 * 2n, a digit is not hex, or every byte is zero (an invalid trace or span id). */
static inline bool pg_hex_id_scalar(const char *s, size_t len, uint8_t *out, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    unsigned bad = 0, any = 0;

    if (len != 2 * n) {
        return false;
    }
    for (size_t i = 0; i < n; i++, p += 2) {
        unsigned hi = pg_hex_val1[p[0]] - 1u, lo = pg_hex_val1[p[1]] - 1u; /* 0 -> UINT_MAX */
        bad |= hi | lo;
        out[i] = (uint8_t)(hi << 4 | lo);
        any |= out[i];
    }
    return (bad & ~0xfu) == 0 && any != 0;
}

#if defined(__SSE2__)
/* 16 hex digits at @p -> 8 values per 16-bit lane (hi digit << 4 | lo digit); *@bad gets
 * a nonzero bit for every byte that is not a hex digit. */
static inline __m128i pg_hex_16(const uint8_t *p, int *bad)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    const __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    const __m128i l = _mm_sub_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
    /* unsigned x <= k as min(x, k) == x */
    const __m128i is_d = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d);
    const __m128i is_l = _mm_cmpeq_epi8(_mm_min_epu8(l, _mm_set1_epi8(5)), l);
    const __m128i val = _mm_or_si128(_mm_and_si128(is_d, d),
                                     _mm_and_si128(is_l, _mm_add_epi8(l, _mm_set1_epi8(10))));

    *bad |= _mm_movemask_epi8(_mm_or_si128(is_d, is_l)) ^ 0xffff;
    /* the first digit of each pair is the low byte of its lane */
    return _mm_or_si128(_mm_slli_epi16(_mm_and_si128(val, _mm_set1_epi16(0xff)), 4),
                        _mm_srli_epi16(val, 8));
}
#endif

/* pg_hex_id_scalar's result; 16 digits per step where SSE2 is there (ids are 8 or 16
 * bytes: one trace/span pair costs three loads instead of 24 table steps). */
static inline bool pg_hex_id(const char *s, size_t len, uint8_t *out, size_t n)
{
#if defined(__SSE2__)
    const uint8_t *p = (const uint8_t *)s;
    int bad = 0;
    __m128i b;

    if (len != 2 * n) {
        return false;
    }
    if (n == 16) {
        __m128i lo = pg_hex_16(p, &bad), hi = pg_hex_16(p + 16, &bad);
        b = _mm_packus_epi16(lo, hi);
        _mm_storeu_si128((__m128i *)(void *)out, b);
    } else if (n == 8) {
        b = _mm_packus_epi16(pg_hex_16(p, &bad), _mm_setzero_si128());
        _mm_storel_epi64((__m128i *)(void *)out, b);
    } else {
        return pg_hex_id_scalar(s, len, out, n);
    }
    return bad == 0 && _mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_setzero_si128())) != 0xffff;
#else
    return pg_hex_id_scalar(s, len, out, n);
#endif
}

/* A trace id (32 digits) and a span id (16 digits) into @out's 16 + 8 bytes: true when both
 * are valid ids (pg_hex_id's answer for each). Points at the widest variant the CPU runs
 * (AVX2, SSSE3, else the two pg_hex_id calls), chosen once before main (core/hex.c). */
extern bool (*pg_hex_link_ids)(const char *t, size_t tl, const char *s, size_t sl,
                               uint8_t *out);
/* "base", "ssse3" or "avx2"; NULL when the CPU lacks it (tests compare the variants). */
bool (*pg_hex_link_ids_variant(const char *name))(const char *, size_t, const char *, size_t,
                                                   uint8_t *);

#endif
