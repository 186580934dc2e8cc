/* SPDX-License-Identifier: Apache-2.0
 * The malloc interposer: malloc & co. defined in the executable forward to
 * glibc's exported __libc_* functions, so every allocation in the process
 * (libevent, nghttp2, zlib, libc's own) passes here. A per-thread byte
 * countdown picks allocations as a Poisson process over bytes; picked ones get
 * a libunwind stack and go to the tables in sampler.c. Linked into the
 * pprofgate binary only: sanitizers bring their own malloc. */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "selfprof/sampler.h"
#include "selfprof/selfprof.h"

/* glibc's real allocator entry points (exported, default versions). */
extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);

/* Tells the library (weakly referenced there) that the hooks are linked. */
extern const int pg_selfprof_hooks_present_;
const int pg_selfprof_hooks_present_ = 1;

/* Every function of this file lives in its own section, so the unwinder's
 * frames inside [__start, __stop) are the sampler's and get cut. */
#define PG_HOOK __attribute__((section("pg_hooks_text")))
#define PG_HOOK_SLOW __attribute__((section("pg_hooks_text"), noinline, cold))
extern const char __start_pg_hooks_text[];
extern const char __stop_pg_hooks_text[];

static __thread uint32_t t_gen;

static inline int in_hooks(uintptr_t pc)
{
    return pc >= (uintptr_t)__start_pg_hooks_text && pc < (uintptr_t)__stop_pg_hooks_text;
}

/* The countdown ran out (or this thread/rate is new): maybe sample @p.
 * @size is the requested size. Must not allocate; keeps errno. */
PG_HOOK_SLOW static void slow_path(void *p, size_t size)
{
    int saved = errno;
    if (pg_sampler_busy_) {
        /* An allocation made while sampling (libunwind's first use) or while
         * the lock is held: never recurse. */
        pg_sampler_left_ = PG_SAMPLER_RECHECK;
        errno = saved;
        return;
    }
    pg_sampler_busy_ = 1;
    uint64_t rate = atomic_load_explicit(&pg_sampler_rate_, memory_order_relaxed);
    uint32_t gen = atomic_load_explicit(&pg_sampler_gen_, memory_order_relaxed);
    uint64_t counted = (uint64_t)size + 1; /* +1: zero-byte allocations can be sampled too */
    if (rate == 0) {
        pg_sampler_left_ = PG_SAMPLER_RECHECK;
        t_gen = gen;
        goto out;
    }
    if (t_gen != gen) {
        /* First draw for this thread or a new rate: start a fresh interval
         * (memoryless), which this allocation may or may not reach. */
        t_gen = gen;
        int64_t first = pg_sampler_next_interval(rate);
        if ((uint64_t)first > counted) {
            pg_sampler_left_ = first - (int64_t)counted;
            goto out;
        }
    }
    pg_sampler_left_ = pg_sampler_next_interval(rate);
    if (p != NULL) {
        void *raw[PG_SAMPLER_MAX_DEPTH + 16];
        int n = unw_backtrace(raw, (int)(sizeof(raw) / sizeof(raw[0])));
        int first = 0;
        for (int i = 0; i < n; i++) {
            if (in_hooks((uintptr_t)raw[i])) {
                first = i + 1;
            }
        }
        if (first > n) {
            first = n;
        }
        pg_sampler_record_alloc(p, size, pg_sampler_weight(counted, rate),
                                (const uintptr_t *)(raw + first), n - first);
    }
out:
    pg_sampler_busy_ = 0;
    errno = saved;
}

static inline void count(void *p, size_t size)
{
    if (__builtin_expect((pg_sampler_left_ -= (int64_t)(size + 1)) > 0, 1)) {
        return;
    }
    slow_path(p, size);
}

static inline void forget(void *p)
{
    if (p != NULL &&
        atomic_load_explicit(&pg_sampler_filter_[pg_sampler_filter_slot(p)], memory_order_relaxed)) {
        pg_sampler_record_free(p);
    }
}

PG_HOOK void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    /* Failed requests are not counted: their sizes may not fit an int64. */
    if (__builtin_expect(p != NULL, 1)) {
        count(p, n);
    }
    return p;
}

PG_HOOK void free(void *p)
{
    /* Forget before the memory can be handed out again by another thread. */
    forget(p);
    __libc_free(p);
}

PG_HOOK void *calloc(size_t n, size_t size)
{
    void *p = __libc_calloc(n, size);
    if (p != NULL) {
        count(p, n * size); /* no overflow: glibc refused those */
    }
    return p;
}

PG_HOOK void *realloc(void *old, size_t n)
{
    if (old == NULL) {
        return malloc(n);
    }
    struct pg_sampler_live kept;
    int had = 0;
    if (atomic_load_explicit(&pg_sampler_filter_[pg_sampler_filter_slot(old)], memory_order_relaxed)) {
        had = pg_sampler_take(old, &kept);
    }
    void *p = __libc_realloc(old, n);
    if (p == NULL) {
        if (n != 0 && had) {
            pg_sampler_put_back(&kept); /* failed: the old block is still live */
        }
        return NULL; /* n == 0: glibc freed @old */
    }
    count(p, n);
    return p;
}

PG_HOOK void *reallocarray(void *old, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, total);
}

PG_HOOK void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    if (p != NULL) {
        count(p, n);
    }
    return p;
}

PG_HOOK void *aligned_alloc(size_t align, size_t n)
{
    /* glibc 2.36's aligned_alloc is memalign. */
    return memalign(align, n);
}

PG_HOOK int posix_memalign(void **out, size_t align, size_t n)
{
    if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0) {
        return EINVAL;
    }
    int saved = errno;
    void *p = __libc_memalign(align, n);
    errno = saved; /* posix_memalign reports through its result only */
    if (p == NULL) {
        return ENOMEM;
    }
    count(p, n);
    *out = p;
    return 0;
}

PG_HOOK void *valloc(size_t n)
{
    void *p = __libc_valloc(n);
    if (p != NULL) {
        count(p, n);
    }
    return p;
}

PG_HOOK void *pvalloc(size_t n)
{
    void *p = __libc_pvalloc(n);
    if (p != NULL) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        count(p, n == 0 ? page : (n + page - 1) / page * page);
    }
    return p;
}
