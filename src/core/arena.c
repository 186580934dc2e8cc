/* SPDX-License-Identifier: Apache-2.0
 * Arena implementation: a list of chunks, bumped from the newest; large requests get a
 * chunk of their own so small ones keep packing. Chunks up to POOL_MAX_CHUNK are malloc'd
 * and recycled here; larger ones come from and go back to core/bufpool (kept resident
 * between large requests, unmapped on its decay). */
#include "core/arena.h"
#include "core/bufpool.h"
#include "core/membudget.h"
#include "core/thread_sched.h"

#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Under AddressSanitizer (PG_ARENA_ASAN, arena.h) the unused tail of every chunk is
 * poisoned, so an overflow past an arena allocation is caught like one past a malloc. */
#ifdef PG_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define ARENA_ALIGN 16u
#define ARENA_MIN_CHUNK (16u * 1024u)
#define ARENA_MAX_CHUNK (4u * 1024u * 1024u)
/* The fixed thresholds pg_arena_malloc_setup sets: blocks from MMAP_THRESHOLD up are
 * mmap'd (so freed straight back); a heap keeps up to TRIM_THRESHOLD free at its top. */
#define MMAP_THRESHOLD (1024u * 1024u)
#define TRIM_THRESHOLD (512u * 1024u)

struct chunk {
    struct chunk *next;
    size_t size; /* usable bytes after the header; the head's use is in the bump window */
    /* payload follows, 16-aligned */
};

struct cleanup {
    struct cleanup *next;
    void (*fn)(void *);
    void *data;
};

struct pg_arena {
    struct pg_arena_bump b; /* first: the inline pg_arena_alloc casts to it */
    struct chunk *head;     /* owned; newest first */
    struct cleanup *cleanups; /* in the arena itself */
    size_t cap;
    size_t used;            /* bytes handed out, but for b.cur - b.seg */
    size_t footprint;       /* bytes malloc'd */
    size_t next_chunk;      /* size of the next regular chunk (doubles) */
    int hit_cap;
    struct pg_arena *reap_next; /* on the reaper's list */
    /* Small chunks charged to a request's budget (core/membudget.h; large ones are charged
     * by core/bufpool): given back at destroy when that budget is current there. */
    uint64_t budget_id;
    size_t budget_bytes;
};

#define CHUNK_HDR ((sizeof(struct chunk) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1))

static inline uint8_t *chunk_data(struct chunk *c)
{
    return (uint8_t *)c + CHUNK_HDR;
}

/* Recycling. Every request creates and destroys several arenas (body, decoded layers, the
 * translator's temporaries, the batch) whose first chunks have the same few sizes; keeping
 * them saves a malloc/free pair per chunk and the page faults of fresh memory. Process-wide
 * (arenas are created on one thread and often destroyed on another), bounded, and fed only
 * by small arenas: a large request's chunks go back to the system. Chunks of up to
 * POOL_MAX_CHUNK come in power-of-two classes from ARENA_MIN_CHUNK so they can be reused. */
#define POOL_CLASSES 5                               /* 16, 32, 64, 128, 256 KiB */
#define POOL_MAX_CHUNK (ARENA_MIN_CHUNK << (POOL_CLASSES - 1))
/* At most 16 >> class chunks per class: 16 x 16 KiB ... 1 x 256 KiB, 1.25 MiB in all. */
#define POOL_PER_CLASS(k) ((size_t)16 >> (k))
#define POOL_ARENAS 32
/* Arenas up to this footprint (small requests) feed the pool; a larger one is a large
 * request: its chunks go back to the system and the heaps are trimmed after it, so one
 * large request leaves neither a fuller pool nor free heap pages behind. */
#define SMALL_ARENA (512u * 1024u)

struct pool {
    pthread_mutex_t mu;
    struct chunk *chunks[POOL_CLASSES]; /* linked through ->next, POISONed payloads */
    size_t n[POOL_CLASSES];
    struct pg_arena *arenas;            /* linked through ->head */
    size_t n_arenas;
};

static struct pool g_pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Gives a chunk's memory back where it came from: the buffer pool for chunks above the
 * small classes, malloc otherwise. */
static void chunk_free(struct chunk *c, size_t used)
{
    UNPOISON(chunk_data(c), c->size);
    if (c->size > POOL_MAX_CHUNK) {
        pg_bufpool_put(c, CHUNK_HDR + c->size, CHUNK_HDR + used);
    } else {
        free(c);
    }
}

/* Class of a payload size, or -1 when it is not a pooled size. */
static int pool_class(size_t size)
{
    for (int k = 0; k < POOL_CLASSES; k++) {
        if (size == (size_t)ARENA_MIN_CHUNK << k) {
            return k;
        }
    }
    return -1;
}

/* In front of the pool, each thread keeps a few chunks and arena headers of its own: with
 * several event loops, every request took the pool's one mutex for each chunk and header
 * (perf: pthread_mutex_lock and the misses behind it grew with the second loop). Bounded
 * (TC_PER_CLASS chunks of the three smallest classes, 288 KiB, and TC_ARENAS headers) and
 * given back to the pool at thread exit, so RSS does not grow with the thread count. */
#define TC_CLASSES 3
/* A request has up to ~6 small arenas alive at once, each starting with a 16 KiB chunk; an
 * SDK push also holds three of 32 KiB (the request arena's second chunk, the translator's
 * scratch arena's second chunk and one of its blocks): with one cached, two took the pool's
 * lock on the way in and out, the second loop waiting on the first. */
#define TC_PER_CLASS(k) ((size_t)((k) == 0 ? 8 : (k) == 1 ? 3 : 1)) /* 8x16 + 3x32 + 64 KiB */
#define TC_ARENAS 8

struct tcache {
    struct chunk *chunks[TC_CLASSES]; /* linked through ->next, POISONed payloads */
    size_t n[TC_CLASSES];
    struct pg_arena *arenas; /* linked through ->head */
    size_t n_arenas;
    bool keyed; /* the exit destructor is registered for this thread */
};

static __thread struct tcache t_cache;
static pthread_key_t g_tc_key;
static pthread_once_t g_tc_once = PTHREAD_ONCE_INIT;
static bool g_tc_key_ok;

/* Puts @c into the pool (lock held) or frees it when that class is full. */
static void pool_put_locked(struct chunk *c)
{
    int k = pool_class(c->size);

    if (k >= 0 && g_pool.n[k] < POOL_PER_CLASS(k)) {
        POISON(chunk_data(c), c->size);
        c->next = g_pool.chunks[k];
        g_pool.chunks[k] = c;
        g_pool.n[k]++;
    } else {
        chunk_free(c, c->size);
    }
}

/* Thread exit: the cache's chunks and headers go to the pool (or back to the system). */
static void tc_flush(void *arg)
{
    struct tcache *tc = arg;
    struct pg_arena *free_list = NULL;

    pthread_mutex_lock(&g_pool.mu);
    for (int k = 0; k < TC_CLASSES; k++) {
        while (tc->chunks[k] != NULL) {
            struct chunk *c = tc->chunks[k];

            tc->chunks[k] = c->next;
            pool_put_locked(c);
        }
        tc->n[k] = 0;
    }
    while (tc->arenas != NULL) {
        struct pg_arena *a = tc->arenas;

        tc->arenas = (struct pg_arena *)a->head;
        if (g_pool.n_arenas < POOL_ARENAS) {
            a->head = (struct chunk *)g_pool.arenas;
            g_pool.arenas = a;
            g_pool.n_arenas++;
        } else {
            a->head = (struct chunk *)free_list;
            free_list = a;
        }
    }
    tc->n_arenas = 0;
    tc->keyed = false; /* an arena destroyed later on this thread registers again */
    pthread_mutex_unlock(&g_pool.mu);
    while (free_list != NULL) {
        struct pg_arena *next = (struct pg_arena *)free_list->head;

        free(free_list);
        free_list = next;
    }
}

static void tc_key_init(void)
{
    g_tc_key_ok = pthread_key_create(&g_tc_key, tc_flush) == 0;
}

/* The calling thread's cache, or NULL when its exit could not be hooked (then the pool
 * alone serves it, so nothing is stranded when it exits). */
static struct tcache *tc_get(void)
{
    struct tcache *tc = &t_cache;

    if (!tc->keyed) {
        pthread_once(&g_tc_once, tc_key_init);
        if (!g_tc_key_ok || pthread_setspecific(g_tc_key, tc) != 0) {
            return NULL;
        }
        tc->keyed = true;
    }
    return tc;
}

struct pg_arena *pg_arena_create(size_t cap)
{
    struct tcache *tc = &t_cache;
    struct pg_arena *a = tc->arenas;

    if (a != NULL) {
        tc->arenas = (struct pg_arena *)a->head;
        tc->n_arenas--;
    } else {
        pthread_mutex_lock(&g_pool.mu);
        a = g_pool.arenas;
        if (a != NULL) {
            g_pool.arenas = (struct pg_arena *)a->head;
            g_pool.n_arenas--;
        }
        pthread_mutex_unlock(&g_pool.mu);
    }
    if (a != NULL) {
        memset(a, 0, sizeof(*a));
    } else if ((a = calloc(1, sizeof(*a))) == NULL) {
        return NULL;
    }
    a->cap = cap;
    a->next_chunk = ARENA_MIN_CHUNK;
    return a;
}

void pg_arena_thread_cache_flush(void)
{
    tc_flush(&t_cache);
}

size_t pg_arena_thread_cache_bytes(void)
{
    size_t n = 0;

    for (int k = 0; k < TC_CLASSES; k++) {
        n += t_cache.n[k] * (CHUNK_HDR + ((size_t)ARENA_MIN_CHUNK << k));
    }
    return n;
}

size_t pg_arena_pool_bytes(void)
{
    size_t n = 0;

    pthread_mutex_lock(&g_pool.mu);
    for (int k = 0; k < POOL_CLASSES; k++) {
        n += g_pool.n[k] * (CHUNK_HDR + ((size_t)ARENA_MIN_CHUNK << k));
    }
    pthread_mutex_unlock(&g_pool.mu);
    return n;
}

void pg_arena_malloc_setup(void)
{
    /* glibc raises its mmap threshold (up to 32 MiB) every time an mmap'd block is freed;
     * from then on large blocks come from heaps that shrink only from the top, and one large
     * request leaves tens of MiB resident (per worker thread: each has its own heap). A fixed
     * threshold keeps every block above it mmap'd, so it goes back to the kernel when freed. */
    mallopt(M_MMAP_THRESHOLD, (int)MMAP_THRESHOLD);
    /* Setting it also freezes the trim threshold at 128 KiB, and steady small traffic then
     * gives the top of the heap back and faults it in again many times a second. 512 KiB
     * bounds what a worker thread's heap keeps at its top after a large request (malloc_trim
     * releases free pages inside heaps, not a thread heap's top). 1 MiB for the mmap
     * threshold keeps a small request's 128/256 KiB chunks out of mmap (a fault per page). */
    mallopt(M_TRIM_THRESHOLD, (int)TRIM_THRESHOLD);
}

/* A large arena whose last owner is a latency thread (the event loop) is freed on a
 * thread of its own: unmapping tens of MiB and malloc_trim took the loop 5-10 ms per
 * large request (perf, bench/README.md flood); its chunks now mostly go to the buffer
 * pool, but one that is full or under pressure still unmaps them. */
#define REAPER_NICE 5
#define REAPER_SLICE_NS (500u * 1000u)

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct pg_arena *todo; /* linked through ->reap_next; owned */
    int state;             /* 0 not started, 1 running, -1 could not start */
    bool trim;             /* malloc_trim wanted, no arena to free */
} g_reap = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, false};

static void free_chunks(struct pg_arena *a)
{
    struct chunk *c = a->head;

    while (c != NULL) {
        struct chunk *next = c->next;
        /* the head is written up to the bump pointer; the others as good as whole */
        size_t used = c == a->head && a->b.cur >= chunk_data(c) &&
                              a->b.cur <= chunk_data(c) + c->size
                          ? (size_t)(a->b.cur - chunk_data(c))
                          : c->size;

        chunk_free(c, used);
        c = next;
    }
    free(a);
}

static void *reaper_main(void *arg)
{
    (void)arg;
    pg_sched_bulk_thread(REAPER_NICE, REAPER_SLICE_NS);
    pthread_mutex_lock(&g_reap.mu);
    for (;;) {
        struct pg_arena *list;

        while (g_reap.todo == NULL && !g_reap.trim) {
            pthread_cond_wait(&g_reap.cv, &g_reap.mu);
        }
        list = g_reap.todo;
        g_reap.todo = NULL;
        g_reap.trim = false;
        pthread_mutex_unlock(&g_reap.mu);
        while (list != NULL) {
            struct pg_arena *next = list->reap_next;

            free_chunks(list);
            list = next;
        }
        malloc_trim(0); /* as pg_arena_destroy does after a large arena */
        pthread_mutex_lock(&g_reap.mu);
    }
    return NULL;
}

/* Hands @a (its cleanups already run; NULL: only the trim) to the reaper; false when
 * there is none. */
static bool reap_later(struct pg_arena *a)
{
    bool ok;

    pthread_mutex_lock(&g_reap.mu);
    if (g_reap.state == 0) {
        pthread_t t;

        g_reap.state = pthread_create(&t, NULL, reaper_main, NULL) == 0 ? 1 : -1;
        if (g_reap.state == 1) {
            pthread_detach(t);
        }
    }
    ok = g_reap.state == 1;
    if (ok && a != NULL) {
        a->reap_next = g_reap.todo;
        g_reap.todo = a;
    } else if (ok) {
        g_reap.trim = true;
    }
    if (ok) {
        pthread_cond_signal(&g_reap.cv);
    }
    pthread_mutex_unlock(&g_reap.mu);
    return ok;
}

void pg_arena_destroy(struct pg_arena *a)
{
    struct chunk *c;

    if (a == NULL) {
        return;
    }
    /* Run here, whoever frees the chunks: memory charges are released now. */
    for (struct cleanup *cl = a->cleanups; cl != NULL; cl = cl->next) {
        cl->fn(cl->data);
    }
    if (a->budget_bytes > 0 && a->budget_id == pg_membudget_current_id()) {
        pg_membudget_uncharge(a->budget_bytes);
    }
    if (a->footprint > SMALL_ARENA) {
        bool loop = pg_sched_is_latency_thread();

        /* Into the buffer pool at once when it has room (a few list appends, and the
         * next request of this one may want the blocks now), else unmapped: on a latency
         * thread by the reaper. */
        if (loop && !pg_bufpool_room(a->footprint) && reap_later(a)) {
            return;
        }
        free_chunks(a);
        /* A large request also freed many small blocks (hash tables under the mmap
         * threshold, socket buffers) over the heaps: return their pages now, off the loop.
         * Leaving them to the pool's decay saved ~0.05 faults per KiB but kept each
         * worker heap's share resident between pushes (+0.15-0.2x raw at the peak). */
        if (!loop || !reap_later(NULL)) {
            malloc_trim(0);
        }
        return;
    }
    /* A small arena feeds this thread's cache, then the pool: its chunks and its header
     * serve the next request. */
    struct tcache *tc = tc_get();
    struct chunk *rest = NULL;

    c = a->head;
    while (c != NULL) {
        struct chunk *next = c->next;
        int k = pool_class(c->size);

        if (tc != NULL && k >= 0 && k < TC_CLASSES && tc->n[k] < TC_PER_CLASS(k)) {
            POISON(chunk_data(c), c->size);
            c->next = tc->chunks[k];
            tc->chunks[k] = c;
            tc->n[k]++;
        } else {
            c->next = rest;
            rest = c;
        }
        c = next;
    }
    if (tc != NULL && tc->n_arenas < TC_ARENAS) {
        a->head = (struct chunk *)tc->arenas;
        tc->arenas = a;
        tc->n_arenas++;
        a = NULL;
    }
    if (rest == NULL && a == NULL) {
        return; /* the common case: no lock */
    }
    pthread_mutex_lock(&g_pool.mu);
    while (rest != NULL) {
        struct chunk *next = rest->next;

        pool_put_locked(rest);
        rest = next;
    }
    if (a != NULL && g_pool.n_arenas < POOL_ARENAS) {
        a->head = (struct chunk *)g_pool.arenas;
        g_pool.arenas = a;
        g_pool.n_arenas++;
        a = NULL;
    }
    pthread_mutex_unlock(&g_pool.mu);
    if (a != NULL) {
        free(a);
    }
}

/* A small chunk is the request's memory as much as a pool block: charged to the budget
 * current on this thread (only to the one the arena first charged). False: refused. */
static bool charge_small(struct pg_arena *a, size_t bytes)
{
    uint64_t id = pg_membudget_current_id();

    if (id == 0 || (a->budget_id != 0 && a->budget_id != id)) {
        return true;
    }
    if (!pg_membudget_charge(bytes)) {
        return false;
    }
    a->budget_id = id;
    a->budget_bytes += bytes;
    return true;
}

static struct chunk *chunk_new(struct pg_arena *a, size_t size)
{
    int k = pool_class(size);
    struct chunk *c = NULL;

    if (k >= 0 && !charge_small(a, CHUNK_HDR + size)) {
        a->hit_cap = 1; /* callers tell LIMIT from NOMEM by it; the budget has the words */
        return NULL;
    }
    if (k >= 0 && k < TC_CLASSES && t_cache.chunks[k] != NULL) {
        c = t_cache.chunks[k];
        t_cache.chunks[k] = c->next;
        t_cache.n[k]--;
    } else if (k >= 0) {
        pthread_mutex_lock(&g_pool.mu);
        c = g_pool.chunks[k];
        if (c != NULL) {
            g_pool.chunks[k] = c->next;
            g_pool.n[k]--;
        }
        pthread_mutex_unlock(&g_pool.mu);
    }
    if (c == NULL && k < 0) {
        /* Above the small classes: a resident block from the buffer pool, used whole. */
        size_t got;

        if (size > SIZE_MAX - CHUNK_HDR ||
            (c = pg_bufpool_get(CHUNK_HDR + size, &got)) == NULL) {
            return NULL;
        }
        size = got - CHUNK_HDR;
    } else if (c == NULL && (c = malloc(CHUNK_HDR + size)) == NULL) {
        if (a->budget_id != 0 && a->budget_id == pg_membudget_current_id()) {
            pg_membudget_uncharge(CHUNK_HDR + size); /* charged above, never taken */
            a->budget_bytes -= CHUNK_HDR + size;
        }
        return NULL;
    }
    c->size = size;
    a->footprint += CHUNK_HDR + size;
    POISON(chunk_data(c), size);
    return c;
}

void *pg_arena_take_block(struct pg_arena *a, const void *p, size_t *size)
{
    struct chunk **link = &a->head, *c;

    *size = 0;
    for (c = a->head; c != NULL && chunk_data(c) != p; c = c->next) {
        link = &c->next;
    }
    if (c == NULL || c->size <= POOL_MAX_CHUNK) {
        return NULL; /* not a block of its own from the buffer pool */
    }
    if (c == a->head) {
        /* a big block is the head only until a regular chunk comes, its window empty */
        if (a->b.cur != chunk_data(c) + c->size) {
            return NULL;
        }
        a->b.cur = a->b.seg = a->b.lim = c->next != NULL ? chunk_data(c->next) + c->next->size
                                                         : NULL;
    }
    *link = c->next;
    a->b.last = NULL;
    a->footprint -= CHUNK_HDR + c->size;
    UNPOISON(chunk_data(c), c->size);
    *size = CHUNK_HDR + c->size;
    return c;
}

static inline void sync_used(struct pg_arena *a);
static void set_lim(struct pg_arena *a);

void *pg_arena_adopt_block(struct pg_arena *a, void *block, size_t size, size_t need)
{
    struct chunk *c = block, *head = a->head;

    need = (need + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (block == NULL || size <= CHUNK_HDR + POOL_MAX_CHUNK || need > size - CHUNK_HDR) {
        return NULL; /* chunk_free would hand a smaller one to free() */
    }
    sync_used(a);
    if (a->cap != 0 && (need > a->cap || a->used > a->cap - need)) {
        a->hit_cap = 1;
        return NULL;
    }
    c->size = size - CHUNK_HDR;
    /* Linked as pg_arena_alloc_slow links a big block: behind the head, or as the head with
     * an empty bump window until a regular chunk comes. */
    if (head != NULL) {
        c->next = head->next;
        head->next = c;
    } else {
        c->next = NULL;
        a->head = c;
        a->b.cur = a->b.seg = chunk_data(c) + c->size;
    }
    a->footprint += size;
    a->used += need;
    a->b.last = NULL;
    set_lim(a);
    POISON(chunk_data(c) + need, c->size - need);
    UNPOISON(chunk_data(c), need);
    return chunk_data(c);
}

size_t pg_arena_release_tail(struct pg_arena *a)
{
    struct chunk *c = a->head;
    uintptr_t page = 4096u, cut, end;
    size_t tail;

#ifdef PG_ARENA_ASAN
    (void)page;
    (void)cut;
    (void)end;
    (void)tail;
    (void)c;
    return 0; /* every allocation is out of line there; keep the chunk whole */
#else
    if (c == NULL || c->size <= POOL_MAX_CHUNK || a->b.cur < chunk_data(c) ||
        a->b.cur > chunk_data(c) + c->size) {
        return 0; /* no pool block, or a big block as head (its window empty) */
    }
    cut = ((uintptr_t)a->b.cur + page - 1) & ~(page - 1);
    /* the chunk stays above the small classes: chunk_free tells pool blocks by size */
    if (cut <= (uintptr_t)(chunk_data(c) + POOL_MAX_CHUNK)) {
        cut = ((uintptr_t)(chunk_data(c) + POOL_MAX_CHUNK) + page) & ~(page - 1);
    }
    end = (uintptr_t)(chunk_data(c) + c->size);
    if (cut >= end || end - cut < 64u * 1024u) {
        return 0;
    }
    tail = (size_t)(end - cut);
    sync_used(a);
    c->size -= tail;
    a->footprint -= tail;
    a->next_chunk = ARENA_MIN_CHUNK;
    set_lim(a);
    /* written or not, its pages are what the pool gave this arena */
    pg_bufpool_put((void *)cut, tail, tail);
    return tail;
#endif
}

/* Folds the fast path's allocations into a->used. */
static inline void sync_used(struct pg_arena *a)
{
    a->used += (size_t)(a->b.cur - a->b.seg);
    a->b.seg = a->b.cur;
}

/* After a slow-path step: the fast path may hand out the rest of the head chunk, but never
 * past the cap (a->used is in sync). */
static void set_lim(struct pg_arena *a)
{
    uint8_t *end = a->head != NULL ? chunk_data(a->head) + a->head->size : a->b.cur;

    if (a->cap != 0 && (size_t)(end - a->b.cur) > a->cap - a->used) {
        end = a->b.cur + (a->cap - a->used);
    }
    a->b.lim = end;
}

void *pg_arena_alloc_slow(struct pg_arena *a, size_t size)
{
    struct chunk *c = a->head;
    size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    void *p;

    if (need < size) {
        return NULL;
    }
    if (need == 0) {
        need = ARENA_ALIGN;
    }
    sync_used(a);
    if (a->cap != 0 && (need > a->cap || a->used > a->cap - need)) {
        a->hit_cap = 1;
        return NULL;
    }
    if (c == NULL || (size_t)(chunk_data(c) + c->size - a->b.cur) < need) {
        if (need > a->next_chunk / 4) {
            /* Big block: its own chunk, linked behind the current head so the
             * head keeps serving small allocations. */
            /* Up to POOL_MAX_CHUNK, rounded up to a pooled size (so it can be reused). */
            size_t sz = need;
            struct chunk *big;

            if (sz <= POOL_MAX_CHUNK) {
                sz = ARENA_MIN_CHUNK;
                while (sz < need) {
                    sz <<= 1;
                }
            }
            big = chunk_new(a, sz);
            if (big == NULL) {
                return NULL;
            }
            if (c != NULL) {
                big->next = c->next;
                c->next = big;
            } else {
                /* the head until a regular chunk comes: its bump window is empty */
                big->next = NULL;
                a->head = big;
                a->b.cur = a->b.seg = chunk_data(big) + big->size;
            }
            a->used += need;
            a->b.last = NULL;
            set_lim(a);
            UNPOISON(chunk_data(big), size);
            return chunk_data(big);
        }
        c = chunk_new(a, a->next_chunk);
        if (c == NULL) {
            return NULL;
        }
        if (a->next_chunk < ARENA_MAX_CHUNK) {
            a->next_chunk *= 2;
        }
        c->next = a->head;
        a->head = c;
        a->b.cur = a->b.seg = chunk_data(c);
    }
    p = a->b.cur;
    a->b.cur += need;
    a->b.seg = a->b.cur;
    a->used += need;
    a->b.last = p;
    set_lim(a);
    UNPOISON(p, size);
    return p;
}

void *pg_arena_zalloc(struct pg_arena *a, size_t size)
{
    void *p = pg_arena_alloc(a, size);

    if (p != NULL) {
        memset(p, 0, size);
    }
    return p;
}

void *pg_arena_calloc(struct pg_arena *a, size_t nmemb, size_t size)
{
    size_t total;

    if (__builtin_mul_overflow(nmemb, size, &total)) {
        return NULL;
    }
    return pg_arena_zalloc(a, total);
}

void *pg_arena_realloc(struct pg_arena *a, void *old, size_t old_size, size_t new_size)
{
    void *p;

    if (old == NULL) {
        return pg_arena_alloc(a, new_size);
    }
    if (new_size <= old_size) {
        return old;
    }
    if (old == a->b.last && new_size <= SIZE_MAX - ARENA_ALIGN) {
        /* the last allocation ends at b.cur; b.lim already stops at the cap */
        size_t need = (new_size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);

        if (need <= (size_t)(a->b.lim - (uint8_t *)old)) {
            a->b.cur = (uint8_t *)old + need;
            UNPOISON(old, new_size);
            return old;
        }
    }
    p = pg_arena_alloc(a, new_size);
    if (p != NULL) {
        memcpy(p, old, old_size);
    }
    return p;
}

char *pg_arena_strndup(struct pg_arena *a, const char *s, size_t n)
{
    char *p = pg_arena_alloc(a, n + 1);

    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *pg_arena_strdup(struct pg_arena *a, const char *s)
{
    return pg_arena_strndup(a, s, strlen(s));
}

void *pg_arena_memdup(struct pg_arena *a, const void *src, size_t n)
{
    void *p = pg_arena_alloc(a, n);

    if (p != NULL && n > 0) {
        memcpy(p, src, n);
    }
    return p;
}

char *pg_arena_sprintf(struct pg_arena *a, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *p;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return NULL;
    }
    p = pg_arena_alloc(a, (size_t)n + 1);
    if (p == NULL) {
        return NULL;
    }
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

int pg_arena_cleanup_add(struct pg_arena *a, void (*fn)(void *), void *data)
{
    struct cleanup *cl = pg_arena_alloc(a, sizeof(*cl));

    if (cl == NULL) {
        return -1;
    }
    cl->fn = fn;
    cl->data = data;
    cl->next = a->cleanups;
    a->cleanups = cl;
    return 0;
}

size_t pg_arena_used(const struct pg_arena *a)
{
    return a->used + (size_t)(a->b.cur - a->b.seg);
}

size_t pg_arena_footprint(const struct pg_arena *a)
{
    return a->footprint;
}

size_t pg_arena_cap(const struct pg_arena *a)
{
    return a->cap;
}

int pg_arena_hit_cap(const struct pg_arena *a)
{
    return a->hit_cap;
}

static void *pb_alloc(void *data, size_t size)
{
    return pg_arena_alloc(data, size);
}

static void pb_free(void *data, void *ptr)
{
    (void)data;
    (void)ptr;
}

void pg_arena_protobuf_allocator(struct pg_arena *a, ProtobufCAllocator *out)
{
    out->alloc = pb_alloc;
    out->free = pb_free;
    out->allocator_data = a;
}

void *pg_arena_zalloc_cb(void *opaque, unsigned items, unsigned size)
{
    return pg_arena_calloc(opaque, items, size);
}

void pg_arena_zfree_cb(void *opaque, void *ptr)
{
    (void)opaque;
    (void)ptr;
}
