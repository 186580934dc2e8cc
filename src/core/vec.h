/* SPDX-License-Identifier: Apache-2.0
 * The one growable-array helper: capacity doubles from a floor, never past a
 * cap, with every size overflow-checked. The array lives in an arena (a
 * request's or a config's) or, with a NULL arena, on the heap (the owner
 * frees it with free()). Not thread-safe: one owner per array. */
#ifndef PG_CORE_VEC_H
#define PG_CORE_VEC_H

#include <stdbool.h>
#include <stddef.h>

#include "core/arena.h"

/* A typed array for new code: @v owned as described above, @n used, @cap held. */
#define PG_VEC(T)                                                                                  \
    struct {                                                                                       \
        T *v;                                                                                      \
        size_t n, cap;                                                                             \
    }

/* Makes room for @need elements in the array @items (any T *) whose capacity
 * is the size_t @cap: doubles from @min_cap until @need fits, clamped to
 * @max_cap elements (0 = only the size_t limit). False, with @items and @cap
 * untouched, when @need is over the cap or memory runs out. */
#define PG_VEC_RESERVE(arena, items, cap, need, min_cap, max_cap)                                  \
    pg_vec_reserve_inline((arena), &(items), &(cap), sizeof(*(items)), (need), (min_cap),          \
                          (max_cap))

/* Room for one more than @n (the usual push). */
#define PG_VEC_GROW(arena, items, cap, n, min_cap, max_cap)                                        \
    PG_VEC_RESERVE(arena, items, cap, (n) + 1, min_cap, max_cap)

/* The function behind the macros: @items_slot points at the array pointer,
 * @elem is the element size. */
bool pg_vec_reserve(struct pg_arena *arena, void *items_slot, size_t *cap, size_t elem,
                    size_t need, size_t min_cap, size_t max_cap);

/* The room check inline (nearly every push fits), the call only to grow:
 * each argument is evaluated once, as a function call would. */
static inline bool pg_vec_reserve_inline(struct pg_arena *arena, void *items_slot, size_t *cap,
                                         size_t elem, size_t need, size_t min_cap, size_t max_cap)
{
    if (__builtin_expect(need <= *cap, 1)) {
        return true;
    }
    return pg_vec_reserve(arena, items_slot, cap, elem, need, min_cap, max_cap);
}

/* The capacity pg_vec_reserve would pick (for callers that size other
 * arrays alongside), or 0 when @need cannot be had. */
size_t pg_vec_next_cap(size_t cap, size_t elem, size_t need, size_t min_cap, size_t max_cap);

#endif
