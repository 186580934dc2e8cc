/* SPDX-License-Identifier: Apache-2.0
 * The dictionary builder's table storage: growing the item and slot arrays
 * under the scratch arena's cap (bytes counted, peak kept), the per-thread
 * spare arrays a small request reuses instead of mallocing, and the large
 * arrays taken from and given back to core/bufpool (a large profile's tables
 * are MiBs: from malloc they were mapped and unmapped, so faulted in, on
 * every push). The lookups and inserts stay inline (dict_internal.h); these are their
 * out-of-line slow paths. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/bufpool.h"
#include "core/vec.h"
#include "otlp/dict.h"
#include "otlp/dict_internal.h"

/* realloc / calloc / free with the byte count kept, bounded by the scratch arena's cap. */
static bool heap_charge(struct pg_dict_builder *b, size_t old_size, size_t new_size)
{
    size_t next = b->heap - old_size + new_size;

    if (b->heap_cap != 0 && next > b->heap_cap) {
        b->heap_hit_cap = true;
        /* Mark the scratch arena as capped too, so callers that only know the arena (and
         * a builder that failed to start) still report LIMIT, not NOMEM. */
        (void)pg_arena_alloc(b->scratch, b->heap_cap + 1);
        return false;
    }
    return true;
}

static void heap_account(struct pg_dict_builder *b, size_t old_size, size_t new_size)
{
    b->heap = b->heap - old_size + new_size;
    if (b->heap > b->heap_peak) {
        b->heap_peak = b->heap;
    }
}

/* An array of @size bytes, uninitialised: a pool block when that large (*@got its size),
 * else malloc'd (*@got 0). */
static void *arr_get(size_t size, size_t *got)
{
    *got = 0;
    if (size >= PG_BUFPOOL_MIN) {
        return pg_bufpool_get(size, got);
    }
    return malloc(size);
}

/* Gives back an array of arr_get (@got as it said), of which the first @used bytes were
 * written. NULL ok. */
static void arr_put(void *p, size_t got, size_t used)
{
    if (got != 0) {
        pg_bufpool_put(p, got, used);
    } else {
        free(p);
    }
}

/* Grows *@p (@old_size bytes, *@got as arr_get said) to @new_size, keeping its first
 * @keep bytes. Small arrays stay with realloc; a large one moves to or within the pool
 * (a copy of @keep bytes, the old block back to the pool for the next growth). */
static bool heap_grow(struct pg_dict_builder *b, void **p, size_t *got, size_t old_size,
                      size_t new_size, size_t keep)
{
    void *np;
    size_t ngot = 0;

    if (!heap_charge(b, old_size, new_size)) {
        return false;
    }
    if (*got == 0 && new_size < PG_BUFPOOL_MIN) {
        if ((np = realloc(*p, new_size)) == NULL) {
            return false;
        }
    } else {
        if ((np = arr_get(new_size, &ngot)) == NULL) {
            return false;
        }
        if (keep > 0) {
            memcpy(np, *p, keep);
        }
        arr_put(*p, *got, keep);
    }
    heap_account(b, old_size, new_size);
    *p = np;
    *got = ngot;
    return true;
}

/* Spare tables, one set per thread: when a builder dies, its arrays of up to SPARE_MAX
 * entries (slots: twice that) are kept for the next builder on the same thread instead of
 * freed, so a small request (an SDK push) mallocs, grows and frees none of its ~20 table
 * arrays. At most 200 KiB per thread; larger tables are freed as before. Freed when the
 * thread exits. */
#define SPARE_MAX 1024
#define SPARE_HEAP_MAX ((size_t)1 << 20) /* a builder that held more keeps none */

struct spare {
    struct tab t[T__COUNT]; /* items/lens/cap and slots/mask only; n unused */
};

static __thread struct spare *tl_spare;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static bool spare_key_ok;

static void tab_free_arrays(struct tab *t)
{
    arr_put(t->items, t->items_got, t->n * sizeof(void *));
    arr_put(t->lens, t->lens_got, t->n * sizeof(uint32_t));
    arr_put(t->slots, t->slots_got, (t->mask + 1) * sizeof(uint64_t)); /* zeroed whole */
    memset(t, 0, sizeof(*t));
}

static void spare_free(void *arg)
{
    struct spare *sp = arg;

    for (int i = 0; i < T__COUNT; i++) {
        tab_free_arrays(&sp->t[i]);
    }
    free(sp);
    tl_spare = NULL;
}

static void spare_key_init(void)
{
    spare_key_ok = pthread_key_create(&spare_key, spare_free) == 0;
}

/* This thread's spare set, created on first use; NULL when it cannot be (no key, OOM). */
static struct spare *spare_get(void)
{
    if (tl_spare == NULL) {
        (void)pthread_once(&spare_once, spare_key_init);
        if (!spare_key_ok || (tl_spare = calloc(1, sizeof(*tl_spare))) == NULL) {
            return NULL;
        }
        if (pthread_setspecific(spare_key, tl_spare) != 0) {
            free(tl_spare);
            tl_spare = NULL;
        }
    }
    return tl_spare;
}

/* Gives the new builder this thread's spare arrays (slots cleared), charged to its heap. */
void pg_dict_spare_take(struct pg_dict_builder *b)
{
    struct spare *sp = tl_spare;

    if (sp == NULL) {
        return;
    }
    for (int i = 0; i < T__COUNT; i++) {
        struct tab *from = &sp->t[i];
        size_t bytes;
        if (from->items == NULL || from->slots == NULL) {
            continue;
        }
        bytes = from->cap * sizeof(void *) + (from->lens ? from->cap * sizeof(uint32_t) : 0) +
                (from->mask + 1) * sizeof(uint64_t);
        if (b->heap_cap != 0 && b->heap + bytes > b->heap_cap) {
            continue; /* a tightly capped builder grows its own, as before */
        }
        b->t[i] = *from;
        b->t[i].n = 0;
        memset(b->t[i].slots, 0, (b->t[i].mask + 1) * sizeof(uint64_t));
        memset(from, 0, sizeof(*from));
        heap_account(b, 0, bytes);
    }
}

void pg_dict_free_tables(void *arg)
{
    struct pg_dict_builder *b = arg;
    /* Not after a large build: its small arrays were allocated among the large ones, and
     * keeping them would pin the top of the thread's heap (RSS not given back). */
    struct spare *sp = b->heap_peak <= SPARE_HEAP_MAX ? spare_get() : NULL;

    for (int i = 0; i < T__COUNT; i++) {
        struct tab *t = &b->t[i];
        if (sp != NULL && t->items != NULL && t->slots != NULL && t->cap <= SPARE_MAX &&
            t->mask < 2 * SPARE_MAX && (t->lens != NULL) == (i == T_STR || i == T_LIST) &&
            t->items_got == 0 && t->lens_got == 0 && t->slots_got == 0) {
            if (sp->t[i].items != NULL || sp->t[i].lens != NULL || sp->t[i].slots != NULL) {
                tab_free_arrays(&sp->t[i]); /* normally empty: its arrays went to this builder */
            }
            sp->t[i] = *t;
            memset(t, 0, sizeof(*t));
        } else {
            tab_free_arrays(t);
        }
    }
    b->heap = 0;
}

/* Doubles the item (and length) arrays; out of line: the interning calls inline the rest. */
__attribute__((noinline)) bool pg_dict_tab_push_grow(struct pg_dict_builder *b, struct tab *t)
{
    bool with_lens = t == &b->t[T_STR] || t == &b->t[T_LIST];
    /* uint32_t lens fit wherever the pointers do: one capacity for both */
    size_t ncap = pg_vec_next_cap(t->cap, sizeof(void *), t->cap + 1, 32, 0);
    void *p = t->items;

    if (ncap == 0 || !heap_grow(b, &p, &t->items_got, t->cap * sizeof(void *),
                                ncap * sizeof(void *), t->n * sizeof(void *))) {
        return false;
    }
    t->items = p;
    if (with_lens) {
        p = t->lens;
        if (!heap_grow(b, &p, &t->lens_got, t->cap * sizeof(uint32_t), ncap * sizeof(uint32_t),
                       t->n * sizeof(uint32_t))) {
            return false; /* items already grown: cap stays, the next push retries */
        }
        t->lens = p;
    }
    t->cap = ncap;
    return true;
}

__attribute__((noinline)) bool pg_dict_tab_grow(struct pg_dict_builder *b, struct tab *t)
{
    size_t nslots = t->slots ? (t->mask + 1) * 2 : 64; /* small first: doubles */
    size_t old_bytes = t->slots ? (t->mask + 1) * sizeof(uint64_t) : 0;
    size_t got = 0;
    uint64_t *ns;

    if (!heap_charge(b, 0, nslots * sizeof(uint64_t))) {
        return false;
    }
    if (nslots * sizeof(uint64_t) >= PG_BUFPOOL_MIN) {
        /* a pool block holds an earlier request's bytes */
        if ((ns = pg_bufpool_get(nslots * sizeof(uint64_t), &got)) == NULL) {
            return false;
        }
        memset(ns, 0, nslots * sizeof(uint64_t));
    } else if ((ns = calloc(nslots, sizeof(uint64_t))) == NULL) {
        return false;
    }
    heap_account(b, 0, nslots * sizeof(uint64_t));
    if (t->slots != NULL) {
        for (size_t i = 0; i <= t->mask; i++) {
            uint64_t s = t->slots[i];
            if (s != 0) {
                size_t pos = (size_t)(s >> 32) & (nslots - 1);
                while (ns[pos] != 0) {
                    pos = (pos + 1) & (nslots - 1);
                }
                ns[pos] = s;
            }
        }
        arr_put(t->slots, t->slots_got, old_bytes);
        heap_account(b, old_bytes, 0);
    }
    t->slots = ns;
    t->slots_got = got;
    t->mask = nslots - 1;
    return true;
}
