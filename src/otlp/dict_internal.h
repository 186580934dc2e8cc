/* SPDX-License-Identifier: Apache-2.0
 * The builder's tables and hash mixing, shared by the interning code
 * (dict.c), the import (dict_import.c) and AnyValue hashing (anyvalue.c);
 * not part of the dictionary's public interface. */
#ifndef PG_OTLP_DICT_INTERNAL_H
#define PG_OTLP_DICT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

struct pg_otlp_anyvalue;

/* The builder's hash mixing (murmur3-style), shared with anyvalue.c. */
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

enum tab_id { T_STR, T_FUNC, T_MAP, T_LOC, T_STACK, T_ATTR, T_LINK, T_LIST, T__COUNT };

struct tab {
    void **items;   /* owned (see *_got); the entries themselves live in the out arena */
    uint32_t *lens; /* owned, T_STR: byte length; T_LIST: element count; else NULL */
    size_t n, cap;
    uint64_t *slots; /* owned; 0 = empty */
    size_t mask;     /* slots - 1 (power of two) */
    /* Each array's block size when it came from core/bufpool (the large ones), 0 when
     * malloc'd: a large table's pages then stay resident for the next large request. */
    size_t items_got, lens_got, slots_got;
};

struct pg_dict_builder {
    struct pg_arena *out, *scratch;
    struct tab t[T__COUNT];
    size_t heap, heap_peak, heap_cap; /* malloc'd table bytes; cap = the scratch arena's */
    bool heap_hit_cap;
    char *tmp;       /* scratch buffer for UTF-8 repair */
    size_t tmp_cap;
};

/* dict_tables.c, the slow paths of dict.c's inline table code: doubling @t's
 * item (and length) arrays; doubling its slots (rehashed); at create, taking
 * this thread's spare arrays; at the end (an arena cleanup), giving the tables
 * back (large arrays to core/bufpool, small ones kept as this thread's spares
 * or freed). */
bool pg_dict_tab_push_grow(struct pg_dict_builder *b, struct tab *t);
bool pg_dict_tab_grow(struct pg_dict_builder *b, struct tab *t);
void pg_dict_spare_take(struct pg_dict_builder *b);
void pg_dict_free_tables(void *arg);

/* anyvalue.c: an AnyValue's hash mixed into @h, and its deep copy into @a
 * (NULL when out of memory or nested too deep; @depth 0 at the top). */
uint64_t pg_dict_any_hash(const struct pg_otlp_anyvalue *v, uint64_t h);
struct pg_otlp_anyvalue *pg_dict_any_copy(struct pg_arena *a, const struct pg_otlp_anyvalue *v,
                                          unsigned depth);

#endif
