/* SPDX-License-Identifier: Apache-2.0
 * Interning text: the string table and attributes with a string value
 * (pg_dict_attr_str), each string hashed and checked for ASCII in one pass,
 * repaired to UTF-8 only when it is not valid, and copied once into the
 * output arena; and the NUL-terminated scratch copy pg_dict_tmp_cstr. */
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "otlp/dict.h"
#include "otlp/dict_internal.h"
#include "otlp/otlp_utf8.h"

/* ---- strings ------------------------------------------------------------ */

struct str_key {
    const char *s;
    size_t len;
};

static bool str_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct str_key *k = key;
    return t->lens[idx] == k->len && memcmp(t->items[idx], k->s, k->len) == 0;
}

/* A repaired copy of @s in b->tmp (the core/utf8 rule: each invalid byte becomes U+FFFD,
 * counted and logged); out of line: pprof strings are almost always valid. */
__attribute__((noinline)) static const char *utf8_repair(struct pg_dict_builder *b, const char *s,
                                                         size_t *len)
{
    size_t n = *len, bad = 0;

    if (n > (SIZE_MAX - 1) / 3) {
        return NULL;
    }
    if (b->tmp_cap < n * 3 + 1) {
        b->tmp = pg_arena_alloc(b->scratch, n * 3 + 1);
        if (b->tmp == NULL) {
            b->tmp_cap = 0;
            return NULL;
        }
        b->tmp_cap = n * 3 + 1;
    }
    *len = pg_utf8_repair(b->tmp, s, n, &bad);
    pg_utf8_note(bad, "pprof string");
    return b->tmp;
}

/* Returns @s itself when it is clean, else a repaired copy in b->tmp. */
static inline const char *utf8_clean(struct pg_dict_builder *b, const char *s, size_t *len)
{
    return pg_utf8_valid(s, *len) ? s : utf8_repair(b, s, len);
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* pg_dict_hash_bytes(@s, @n, @seed) and, in the same pass, whether every byte is ASCII other
 * than NUL (then @s is stored as is without a separate UTF-8 scan): a string is read once
 * instead of twice. Per word, a byte >= 0x80 sets its top bit in w and a zero byte sets it in
 * (w - ONES) & ~w (exact as a yes/no when no byte is >= 0x80). */
static inline uint64_t str_hash_ascii(const char *s, size_t n, uint64_t seed, bool *ascii)
{
    const uint8_t *p = (const uint8_t *)s;
    uint64_t h = seed ^ (n * K1), flags = 0;

    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        flags |= w | ((w - ONES) & ~w);
        h = rotl64(h ^ (w * K1), 29) * K2;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w, c;
        if (n >= 4) {
            uint32_t lo, hi;
            memcpy(&lo, p, 4);
            memcpy(&hi, p + n - 4, 4);
            w = (uint64_t)hi << 32 | lo;
            c = w;
        } else {
            w = (uint64_t)p[0] | (uint64_t)p[n / 2] << 8 | (uint64_t)p[n - 1] << 16;
            c = w | 0x0101010101000000ull; /* the five unused bytes are not NULs */
        }
        flags |= c | ((c - ONES) & ~c);
        h = rotl64(h ^ (w * K1), 29) * K2;
    }
    *ascii = (flags & HIGHS) == 0;
    return fmix64(h);
}

/* *@s (@len bytes) hashed with @seed, replaced by a repaired copy (in b->tmp) when it is not
 * valid UTF-8: the form strings and string attributes are stored in. False on OOM. */
__attribute__((always_inline)) static inline bool hash_clean(struct pg_dict_builder *b,
                                                             const char **s, size_t *len,
                                                             uint64_t seed, uint64_t *h)
{
    bool ascii;

    *h = str_hash_ascii(*s, *len, seed, &ascii);
    if (!ascii && !pg_utf8_valid(*s, *len)) {
        if ((*s = utf8_repair(b, *s, len)) == NULL) {
            return false;
        }
        *h = pg_dict_hash_bytes(*s, *len, seed);
    }
    return true;
}

/* A NUL-terminated copy of @s in the out arena (pg_arena_strndup written out: one call
 * less per new string); NULL on OOM. */
__attribute__((always_inline)) static inline char *out_cstr(struct pg_dict_builder *b,
                                                            const char *s, size_t len)
{
    char *copy = pg_arena_alloc(b->out, len + 1);

    if (copy != NULL) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

int32_t pg_dict_string(struct pg_dict_builder *b, const char *s, size_t len)
{
    struct tab *t = &b->t[T_STR];
    struct str_key k;
    uint64_t h, *slot = NULL;
    int32_t idx;
    char *copy;

    if (len > UINT32_MAX || !hash_clean(b, &s, &len, 1, &h) || !tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    k.s = s;
    k.len = len;
    idx = tab_find(t, h, str_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    if ((copy = out_cstr(b, s, len)) == NULL) {
        return PG_DICT_NOMEM;
    }
    return tab_insert(b, t, h, slot, copy, (uint32_t)len);
}

const char *pg_dict_tmp_cstr(struct pg_dict_builder *b, const char *s, size_t len)
{
    char *buf;

    s = utf8_clean(b, s, &len);
    if (s == NULL || len == SIZE_MAX) {
        return NULL;
    }
    if (s == b->tmp) {
        /* Already in tmp (repaired): tmp has room for len + 1 by construction. */
        b->tmp[len] = '\0';
        return b->tmp;
    }
    if (b->tmp_cap < len + 1) {
        size_t cap = len + 1 < 256 ? 256 : len + 1;
        b->tmp = pg_arena_alloc(b->scratch, cap);
        if (b->tmp == NULL) {
            b->tmp_cap = 0;
            return NULL;
        }
        b->tmp_cap = cap;
    }
    buf = b->tmp;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return buf;
}

/* ---- attributes with a string value ------------------------------------- */

/* pg_dict_attr with a string value given by pointer and length: the same entry (same hash,
 * same equality: pg_dict_any_hash and pg_dict_anyvalue_equal of a STR value), without the
 * NUL-terminated temporary copy, the two strlen and the separate UTF-8 pass. */
struct attr_str_key {
    int32_t key, unit;
    const char *s;
    size_t len;
};

static bool attr_str_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct pg_otlp_kvu *a = t->items[idx];
    const struct attr_str_key *k = key;
    const char *v;

    if (a->key_strindex != k->key || a->unit_strindex != k->unit || a->value == NULL ||
        a->value->value_case != PG_OTLP_ANYVALUE_STR) {
        return false;
    }
    v = a->value->string_value != NULL ? a->value->string_value : "";
    return memcmp(v, k->s, k->len) == 0 && v[k->len] == '\0'; /* k->s has no NUL */
}

int32_t pg_dict_attr_str(struct pg_dict_builder *b, int32_t key_strindex, const char *s,
                         size_t len, int32_t unit_strindex)
{
    struct tab *t = &b->t[T_ATTR];
    struct attr_str_key k;
    struct pg_otlp_kvu *e;
    struct pg_otlp_anyvalue *v;
    uint64_t h = 19, hs, *slot = NULL;
    int32_t idx;
    char *copy;

    if (!hash_clean(b, &s, &len, 29, &hs) || len == SIZE_MAX || !tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    h = hash_u64(h, (uint32_t)key_strindex);
    h = hash_u64(h, (uint32_t)unit_strindex);
    h = hash_u64(h, (uint64_t)PG_OTLP_ANYVALUE_STR); /* as pg_dict_any_hash */
    h = fmix64(hash_u64(h, hs));
    k = (struct attr_str_key){key_strindex, unit_strindex, s, len};
    idx = tab_find(t, h, attr_str_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    e = pg_arena_alloc(b->out, sizeof(*e));
    v = pg_arena_alloc(b->out, sizeof(*v));
    copy = out_cstr(b, s, len);
    if (e == NULL || v == NULL || copy == NULL) {
        return PG_DICT_NOMEM;
    }
    *v = anyvalue_init;
    v->value_case = PG_OTLP_ANYVALUE_STR;
    v->string_value = copy;
    *e = kvu_init;
    e->key_strindex = key_strindex;
    e->unit_strindex = unit_strindex;
    e->value = v;
    return tab_insert(b, t, h, slot, e, 0);
}
