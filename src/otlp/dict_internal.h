/* SPDX-License-Identifier: Apache-2.0
 * The builder's tables: their types, the inline lookup and insert every
 * interning file uses, and the zero values of the messages they make; shared
 * by the builder (dict.c), the interning (dict_strings.c, dict_messages.c),
 * the table storage (dict_tables.c) and the import (dict_import.c); not part
 * of the dictionary's public interface. */
#ifndef PG_OTLP_DICT_INTERNAL_H
#define PG_OTLP_DICT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "otlp/dict.h"
#include "otlp/dict_hash.h"
#include "otlp/otlp.h"

struct pg_otlp_anyvalue;

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

/* dict_tables.c, the slow paths of the inline table code below: doubling @t's
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


/* ---- the inline table code (slow paths in dict_tables.c) ---------------- */

static inline bool tab_push(struct pg_dict_builder *b, struct tab *t, void *item, uint32_t len)
{
    if (t->n == t->cap && !pg_dict_tab_push_grow(b, t)) {
        return false;
    }
    t->items[t->n] = item;
    if (t->lens != NULL) { /* T_STR and T_LIST: allocated with their first items */
        t->lens[t->n] = len;
    }
    t->n++;
    return true;
}

typedef bool (*eq_fn)(const struct tab *t, size_t idx, const void *key);

/* Looks @key up; on a miss *@slot is where the new entry's slot goes. */
__attribute__((unused)) static int32_t tab_find(struct tab *t, uint64_t h, eq_fn eq, const void *key, uint64_t **slot)
{
    uint32_t h32 = (uint32_t)(h >> 32) ^ (uint32_t)h;
    size_t pos = h32 & t->mask;

    for (;;) {
        uint64_t s = t->slots[pos];
        if (s == 0) {
            *slot = &t->slots[pos];
            return -1;
        }
        if ((uint32_t)(s >> 32) == h32 && eq(t, (size_t)(uint32_t)s - 1, key)) {
            return (int32_t)((uint32_t)s - 1);
        }
        pos = (pos + 1) & t->mask;
    }
}

/* Makes sure one more entry fits under a 50% load factor. */
static inline bool tab_reserve(struct pg_dict_builder *b, struct tab *t)
{
    if (t->slots == NULL || (t->n + 1) * 2 > t->mask + 1) {
        return pg_dict_tab_grow(b, t);
    }
    return true;
}

static inline int32_t tab_insert(struct pg_dict_builder *b, struct tab *t, uint64_t h,
                                 uint64_t *slot, void *item, uint32_t len)
{
    uint32_t h32 = (uint32_t)(h >> 32) ^ (uint32_t)h;
    int32_t idx = (int32_t)t->n;

    if (t->n >= INT32_MAX - 1 || !tab_push(b, t, item, len)) {
        return PG_DICT_NOMEM;
    }
    *slot = (uint64_t)h32 << 32 | ((uint64_t)idx + 1);
    return idx;
}

/* Zero values of the messages made here, copied by assignment: the generated *__init()
 * functions are out-of-line calls doing the same copy. */
__attribute__((unused)) static const struct pg_otlp_function function_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__FUNCTION__INIT;
__attribute__((unused)) static const struct pg_otlp_mapping mapping_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__MAPPING__INIT;
__attribute__((unused)) static const struct pg_otlp_location location_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LOCATION__INIT;
__attribute__((unused)) static const struct pg_otlp_line line_init = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINE__INIT;
__attribute__((unused)) static const struct pg_otlp_stack stack_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__STACK__INIT;
__attribute__((unused)) static const struct pg_otlp_kvu kvu_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__KEY_VALUE_AND_UNIT__INIT;
__attribute__((unused)) static const struct pg_otlp_anyvalue anyvalue_init = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
__attribute__((unused)) static const struct pg_otlp_link link_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT;

#endif
