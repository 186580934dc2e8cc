/* SPDX-License-Identifier: Apache-2.0
 * A bump allocator with a byte cap: one per request (and then per batch).
 * Everything decoded, translated or processed for a request lives in its
 * arena and is freed at once by pg_arena_destroy(). protobuf-c, zlib and pcre2
 * allocate from it through the adapters below. Not thread-safe: one owner. */
#ifndef PG_CORE_ARENA_H
#define PG_CORE_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

struct pg_arena;

/* Under AddressSanitizer every allocation goes through the out-of-line path, which
 * unpoisons exactly what it hands out (the unused tail of a chunk stays poisoned). */
#if defined(__SANITIZE_ADDRESS__)
#define PG_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PG_ARENA_ASAN 1
#endif
#endif

/* The head chunk's bump window, the first member of struct pg_arena so the inline fast
 * path below can reach it; only arena.c writes it otherwise. */
struct pg_arena_bump {
    uint8_t *cur;  /* next free byte of the head chunk */
    uint8_t *lim;  /* what may be handed out without the slow path: chunk end or the cap */
    uint8_t *seg;  /* cur when the slow path last accounted the bytes handed out */
    void *last;    /* the last allocation (in-place realloc), NULL after a big block */
};

/* Creates an arena that refuses to hand out more than @cap bytes in total
 * (0 = no cap). Returns NULL on OOM. Owned by the caller: pg_arena_destroy(). */
struct pg_arena *pg_arena_create(size_t cap);
/* Process start, before any thread: makes glibc give large freed blocks back to the kernel
 * (a fixed mmap threshold), so RSS returns to idle after a large request. */
void pg_arena_malloc_setup(void);
/* Runs the cleanups (last registered first), then frees every chunk. NULL ok. */
void pg_arena_destroy(struct pg_arena *a);

/* pg_arena_alloc's out-of-line path: a new chunk, a big block, the cap, size 0. */
void *pg_arena_alloc_slow(struct pg_arena *a, size_t size);

/* 16-byte aligned memory, uninitialised; NULL when over the cap or OOM. Inline bump:
 * a request allocates a few hundred times, most of them a few dozen bytes. */
static inline void *pg_arena_alloc(struct pg_arena *a, size_t size)
{
#ifndef PG_ARENA_ASAN
    struct pg_arena_bump *b = (struct pg_arena_bump *)a;
    size_t need = (size + 15u) & ~(size_t)15u;

    /* need 0 (size 0, or size overflowing the rounding) wraps and takes the slow path */
    if (need - 1u < (size_t)(b->lim - b->cur)) {
        void *p = b->cur;
        b->cur += need;
        b->last = p;
        return p;
    }
#endif
    return pg_arena_alloc_slow(a, size);
}
/* For hot paths that must make no call: true when @size bytes (> 0) fit the inline bump
 * window, then pg_arena_alloc_fit(@a, @size) hands them out without any check. Always
 * false under AddressSanitizer (every allocation goes out of line there). */
static inline bool pg_arena_fits(const struct pg_arena *a, size_t size)
{
#ifndef PG_ARENA_ASAN
    const struct pg_arena_bump *b = (const struct pg_arena_bump *)a;
    /* as in pg_arena_alloc: a rounding of 0 wraps and does not fit */
    return ((size + 15u) & ~(size_t)15u) - 1u < (size_t)(b->lim - b->cur);
#else
    (void)a;
    (void)size;
    return false;
#endif
}
static inline void *pg_arena_alloc_fit(struct pg_arena *a, size_t size)
{
    struct pg_arena_bump *b = (struct pg_arena_bump *)a;
    void *p = b->cur;

    b->cur += (size + 15u) & ~(size_t)15u;
    b->last = p;
    return p;
}
void *pg_arena_zalloc(struct pg_arena *a, size_t size);
/* nmemb*size with overflow check, zeroed. */
void *pg_arena_calloc(struct pg_arena *a, size_t nmemb, size_t size);
/* Grows @old (allocated from @a with @old_size bytes) to @new_size; extends in
 * place when @old is the last allocation. Old memory is not returned. */
void *pg_arena_realloc(struct pg_arena *a, void *old, size_t old_size, size_t new_size);
char *pg_arena_strdup(struct pg_arena *a, const char *s);
char *pg_arena_strndup(struct pg_arena *a, const char *s, size_t n);
void *pg_arena_memdup(struct pg_arena *a, const void *p, size_t n);
char *pg_arena_sprintf(struct pg_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Takes the large block @p out of @a: @p must be what a pg_arena_alloc of more than 256 KiB
 * returned (such a block gets a core/bufpool chunk of its own). The caller then owns the
 * pool block [return value, + *@size) holding it (a header precedes @p) and gives it back
 * with pg_bufpool_put, in pieces if it likes; @a's footprint drops by *@size. NULL (nothing
 * changed) when @p is not such a block, or is the head chunk with room left in it. */
void *pg_arena_take_block(struct pg_arena *a, const void *p, size_t *size);

/* The reverse: @a takes the core/bufpool block [@block, + @size) (a pg_arena_take_block
 * result, maybe grown by pg_bufpool_grow since) as a block of its own, as if allocated:
 * the first @need bytes after its header count as handed out (under the cap). Returns
 * where its payload starts (16 bytes into @block, where pg_arena_take_block's pointer
 * was: its bytes are unchanged); it goes back to the pool with @a. NULL (nothing changed,
 * the block still the caller's) when over the cap (pg_arena_hit_cap then says so), or
 * when the block is not larger than the small chunk classes (256 KiB) or @need too big. */
void *pg_arena_adopt_block(struct pg_arena *a, void *block, size_t size, size_t need);

/* For an arena that will now take only a few small allocations (a finished request):
 * the unused tail of its current regular chunk, when that is a core/bufpool block and the
 * tail at least 64 KiB, goes back to the pool now (where a following pg_bufpool_get or
 * pg_bufpool_grow finds its pages) instead of with the arena; later chunks start small
 * again. Returns the bytes given back (0: nothing to give). */
size_t pg_arena_release_tail(struct pg_arena *a);

/* Registers fn(data) to run at destroy time (LIFO). Returns 0, or -1 on OOM. */
int pg_arena_cleanup_add(struct pg_arena *a, void (*fn)(void *), void *data);

/* Bytes handed out so far, and bytes held from the system (chunks). */
size_t pg_arena_used(const struct pg_arena *a);
size_t pg_arena_footprint(const struct pg_arena *a);
size_t pg_arena_cap(const struct pg_arena *a);
/* True once an allocation failed because of the cap (tells LIMIT from NOMEM). */
int pg_arena_hit_cap(const struct pg_arena *a);

/* Recycled chunks: those in the calling thread's cache, and in the process-wide pool (for
 * tests and probes). Flush hands the calling thread's cache to the pool, as its exit does. */
size_t pg_arena_thread_cache_bytes(void);
size_t pg_arena_pool_bytes(void);
void pg_arena_thread_cache_flush(void);

/* protobuf-c allocator backed by @a (free is a no-op). Filled by the call. */
void pg_arena_protobuf_allocator(struct pg_arena *a, ProtobufCAllocator *out);
/* zlib z_stream hooks: set strm->zalloc = pg_arena_zalloc_cb, zfree =
 * pg_arena_zfree_cb, opaque = arena. */
void *pg_arena_zalloc_cb(void *opaque, unsigned items, unsigned size);
void pg_arena_zfree_cb(void *opaque, void *ptr);

#endif
