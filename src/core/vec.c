/* SPDX-License-Identifier: Apache-2.0 */
#include "core/vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t pg_vec_next_cap(size_t cap, size_t elem, size_t need, size_t min_cap, size_t max_cap)
{
    size_t limit = elem > 0 ? SIZE_MAX / elem : SIZE_MAX;
    size_t ncap;

    if (max_cap == 0 || max_cap > limit) {
        max_cap = limit;
    }
    if (need > max_cap) {
        return 0;
    }
    if (need <= cap) {
        return cap;
    }
    ncap = cap > min_cap ? cap : (min_cap > 0 ? min_cap : 1);
    while (ncap < need) {
        ncap = ncap > max_cap / 2 ? max_cap : ncap * 2;
    }
    return ncap < max_cap ? ncap : max_cap;
}

bool pg_vec_reserve(struct pg_arena *arena, void *items_slot, size_t *cap, size_t elem,
                    size_t need, size_t min_cap, size_t max_cap)
{
    size_t ncap;
    void *old, *grown;

    if (need <= *cap) {
        return true;
    }
    if ((ncap = pg_vec_next_cap(*cap, elem, need, min_cap, max_cap)) == 0) {
        return false;
    }
    /* The slot holds some T *: copied as bytes, which every ABI we build
     * for represents like a void *. */
    memcpy(&old, items_slot, sizeof(old));
    grown = arena != NULL ? pg_arena_realloc(arena, old, *cap * elem, ncap * elem)
                          : realloc(old, ncap * elem);
    if (grown == NULL) {
        return false;
    }
    memcpy(items_slot, &grown, sizeof(grown));
    *cap = ncap;
    return true;
}
