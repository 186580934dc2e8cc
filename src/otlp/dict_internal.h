/* SPDX-License-Identifier: Apache-2.0
 * The builder's tables, shared by the interning code (dict.c) and the import
 * (dict_import.c); not part of the dictionary's public interface. */
#ifndef PG_OTLP_DICT_INTERNAL_H
#define PG_OTLP_DICT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

enum tab_id { T_STR, T_FUNC, T_MAP, T_LOC, T_STACK, T_ATTR, T_LINK, T_LIST, T__COUNT };

struct tab {
    void **items;   /* malloc'd; the entries themselves live in the out arena */
    uint32_t *lens; /* malloc'd, T_STR: byte length; T_LIST: element count; else NULL */
    size_t n, cap;
    uint64_t *slots; /* malloc'd; 0 = empty */
    size_t mask;     /* slots - 1 (power of two) */
};

struct pg_dict_builder {
    struct pg_arena *out, *scratch;
    struct tab t[T__COUNT];
    size_t heap, heap_peak, heap_cap; /* malloc'd table bytes; cap = the scratch arena's */
    bool heap_hit_cap;
    char *tmp;       /* scratch buffer for UTF-8 repair */
    size_t tmp_cap;
};

#endif
