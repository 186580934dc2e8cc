/* SPDX-License-Identifier: Apache-2.0
 * A trace id and a span id decoded together (pprof trace_id/span_id labels -> OTLP Links),
 * by the widest vector unit the CPU has, chosen once at start-up. Every variant gives
 * pg_hex_id's answer (tests/unit/test_hex.c checks them against the table path). */
#include "core/hex.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PG_HEX_X86 1
#endif

/* Baseline: the two pg_hex_id calls, SSE2 or table. */
static bool link_ids_base(const char *t, size_t tl, const char *s, size_t sl, uint8_t *out)
{
    return pg_hex_id(t, tl, out, 16) && pg_hex_id(s, sl, out + 16, 8);
}

#if PG_HEX_X86
/* Nibble lookup tables. A byte is a hex digit when its high nibble's class (3: a decimal
 * digit row, 4 and 6: a letter row) meets its low nibble's (0-9 fit the digit row, 1-6 the
 * letter rows); letters add 9 to the low nibble. */
#define PG_HEX_TLO 1, 3, 3, 3, 3, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0
#define PG_HEX_THI 0, 0, 0, 1, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define PG_HEX_TADD 0, 0, 0, 0, 9, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0

/* 16 digits -> 8 values in 16-bit lanes; *@bad gets 0xff for every byte not a digit. */
__attribute__((target("ssse3"))) static inline __m128i hex16_ssse3(const uint8_t *p,
                                                                   __m128i *bad)
{
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    const __m128i lo = _mm_and_si128(v, m), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
    const __m128i ok = _mm_and_si128(_mm_shuffle_epi8(_mm_setr_epi8(PG_HEX_TLO), lo),
                                     _mm_shuffle_epi8(_mm_setr_epi8(PG_HEX_THI), hi));
    const __m128i val = _mm_add_epi8(lo, _mm_shuffle_epi8(_mm_setr_epi8(PG_HEX_TADD), hi));

    *bad = _mm_or_si128(*bad, _mm_cmpeq_epi8(ok, _mm_setzero_si128()));
    /* first digit (low byte of the lane) x 16 + second */
    return _mm_maddubs_epi16(val, _mm_set1_epi16(0x0110));
}

__attribute__((target("ssse3"))) static bool link_ids_ssse3(const char *t, size_t tl,
                                                            const char *s, size_t sl,
                                                            uint8_t *out)
{
    const uint8_t *tp = (const uint8_t *)t, *sp = (const uint8_t *)s;
    __m128i bad = _mm_setzero_si128(), tr, sp8;

    if (tl != 32 || sl != 16) {
        return false;
    }
    tr = _mm_packus_epi16(hex16_ssse3(tp, &bad), hex16_ssse3(tp + 16, &bad));
    sp8 = _mm_packus_epi16(hex16_ssse3(sp, &bad), _mm_setzero_si128());
    _mm_storeu_si128((__m128i *)(void *)out, tr);
    _mm_storel_epi64((__m128i *)(void *)(out + 16), sp8);
    /* no bad byte, trace not all zero, span not all zero (its high half is zero) */
    return _mm_movemask_epi8(bad) == 0 &&
           _mm_movemask_epi8(_mm_cmpeq_epi8(tr, _mm_setzero_si128())) != 0xffff &&
           _mm_movemask_epi8(_mm_cmpeq_epi8(sp8, _mm_setzero_si128())) != 0xffff;
}

/* The trace id's 32 digits in one 256-bit step, the span id's 16 as in SSSE3. */
__attribute__((target("avx2"))) static bool link_ids_avx2(const char *t, size_t tl,
                                                          const char *s, size_t sl,
                                                          uint8_t *out)
{
    const __m256i m = _mm256_set1_epi8(0x0f);
    __m256i v, lo, hi, ok, val, w;
    __m128i tr, sp8, sbad = _mm_setzero_si128();

    if (tl != 32 || sl != 16) {
        return false;
    }
    v = _mm256_loadu_si256((const __m256i *)(const void *)t);
    lo = _mm256_and_si256(v, m);
    hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
    ok = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_setr_epi8(PG_HEX_TLO, PG_HEX_TLO), lo),
                          _mm256_shuffle_epi8(_mm256_setr_epi8(PG_HEX_THI, PG_HEX_THI), hi));
    val = _mm256_add_epi8(lo, _mm256_shuffle_epi8(_mm256_setr_epi8(PG_HEX_TADD, PG_HEX_TADD), hi));
    w = _mm256_maddubs_epi16(val, _mm256_set1_epi16(0x0110));
    tr = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    sp8 = _mm_packus_epi16(hex16_ssse3((const uint8_t *)s, &sbad), _mm_setzero_si128());
    _mm_storeu_si128((__m128i *)(void *)out, tr);
    _mm_storel_epi64((__m128i *)(void *)(out + 16), sp8);
    return _mm256_movemask_epi8(_mm256_cmpeq_epi8(ok, _mm256_setzero_si256())) == 0 &&
           _mm_movemask_epi8(sbad) == 0 &&
           _mm_movemask_epi8(_mm_cmpeq_epi8(tr, _mm_setzero_si128())) != 0xffff &&
           _mm_movemask_epi8(_mm_cmpeq_epi8(sp8, _mm_setzero_si128())) != 0xffff;
}
#endif

bool (*pg_hex_link_ids)(const char *t, size_t tl, const char *s, size_t sl,
                        uint8_t *out) = link_ids_base;

bool (*pg_hex_link_ids_variant(const char *name))(const char *, size_t, const char *, size_t,
                                                   uint8_t *)
{
    if (strcmp(name, "base") == 0) {
        return link_ids_base;
    }
#if PG_HEX_X86
    __builtin_cpu_init();
    if (strcmp(name, "ssse3") == 0 && __builtin_cpu_supports("ssse3")) {
        return link_ids_ssse3;
    }
    if (strcmp(name, "avx2") == 0 && __builtin_cpu_supports("avx2")) {
        return link_ids_avx2;
    }
#endif
    return NULL;
}

/* Before main (and before any loop thread): the pointer never changes after this. */
__attribute__((constructor)) static void pick_link_ids(void)
{
    bool (*f)(const char *, size_t, const char *, size_t, uint8_t *);
    if ((f = pg_hex_link_ids_variant("avx2")) != NULL ||
        (f = pg_hex_link_ids_variant("ssse3")) != NULL) {
        pg_hex_link_ids = f;
    }
}
