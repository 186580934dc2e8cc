/* SPDX-License-Identifier: Apache-2.0
 * core/arena.c: the inline bump path and the slow path agree on alignment, the byte cap,
 * the used count and in-place realloc. */
#include "pg_test.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/arena.h"
#include "core/bufpool.h"

/* Allocation sequences against a cap: each step's size and whether it must succeed. */
PG_TEST(test_alloc_cap_table)
{
    static const struct {
        size_t cap;
        size_t sizes[6];
        bool ok[6];
        size_t used; /* pg_arena_used after the sequence */
        bool hit;    /* pg_arena_hit_cap after it */
    } cases[] = {
        {0, {1, 16, 17, 0, 100, 5000}, {1, 1, 1, 1, 1, 1}, 16 + 16 + 32 + 16 + 112 + 5008, 0},
        {64, {16, 16, 16, 16, 1, 0}, {1, 1, 1, 1, 0, 0}, 64, 1}, /* exactly at the cap */
        {64, {48, 32, 16, 0, 0, 0}, {1, 0, 1, 0, 0, 0}, 64, 1},  /* refused, then fits */
        {100, {90, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0}, 96, 1},   /* rounding counts */
        {1 << 20, {300000, 1, 16, 0, 0, 0}, {1, 1, 1, 1, 1, 1}, 300000 + 16 * 5, 0}, /* big */
        {0, {SIZE_MAX, SIZE_MAX - 8, 1, 0, 0, 0}, {0, 0, 1, 1, 1, 1}, 16 * 4, 0}, /* overflow */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(cases[i].cap);
        PG_REQUIRE(a != NULL);
        for (size_t k = 0; k < 6; k++) {
            uint8_t *p = pg_arena_alloc(a, cases[i].sizes[k]);
            if ((p != NULL) != cases[i].ok[k]) {
                fprintf(stderr, "  case %zu step %zu: got %p\n", i, k, (void *)p);
            }
            CHECK((p != NULL) == cases[i].ok[k]);
            if (p != NULL) {
                CHECK(((uintptr_t)p & 15) == 0);
                memset(p, 0xab, cases[i].sizes[k]); /* writable (ASan checks the bounds) */
            }
        }
        CHECK_INT(pg_arena_used(a), cases[i].used);
        CHECK(pg_arena_used(a) <= cases[i].cap || cases[i].cap == 0);
        CHECK(pg_arena_hit_cap(a) == cases[i].hit);
        pg_arena_destroy(a);
    }
}

/* Many small allocations cross chunk boundaries without overlapping: each keeps its bytes. */
PG_TEST(test_many_small_keep_contents)
{
    struct pg_arena *a = pg_arena_create(0);
    uint32_t *ptrs[5000];

    PG_REQUIRE(a != NULL);
    for (uint32_t i = 0; i < 5000; i++) {
        ptrs[i] = pg_arena_alloc(a, 4 + (i % 7) * 8);
        PG_REQUIRE(ptrs[i] != NULL);
        for (uint32_t j = 0; j < 1 + (i % 7) * 2; j++) {
            ptrs[i][j] = i;
        }
    }
    for (uint32_t i = 0; i < 5000; i++) {
        for (uint32_t j = 0; j < 1 + (i % 7) * 2; j++) {
            CHECK(ptrs[i][j] == i);
        }
    }
    CHECK(pg_arena_footprint(a) >= pg_arena_used(a));
    pg_arena_destroy(a);
}

/* The last allocation grows in place up to the chunk end and never past the cap. */
PG_TEST(test_realloc_in_place_and_cap)
{
    struct pg_arena *a = pg_arena_create(4096);
    uint8_t *p, *q, *r;

    PG_REQUIRE(a != NULL);
    p = pg_arena_alloc(a, 10);
    PG_REQUIRE(p != NULL);
    memcpy(p, "abcdefghij", 10);
    q = pg_arena_realloc(a, p, 10, 100);
    CHECK(q == p); /* the last allocation: extended */
    CHECK(memcmp(q, "abcdefghij", 10) == 0);
    CHECK_INT(pg_arena_used(a), 112);
    r = pg_arena_alloc(a, 8);
    PG_REQUIRE(r != NULL);
    CHECK(r == q + 112); /* the next allocation starts after the grown block */
    q = pg_arena_realloc(a, p, 100, 200);
    CHECK(q != p && q != NULL); /* no longer the last: copied */
    CHECK(memcmp(q, "abcdefghij", 10) == 0);
    /* in place but past the cap: refused, and nothing is charged */
    CHECK(pg_arena_realloc(a, q, 200, 8192) == NULL);
    CHECK_INT(pg_arena_used(a), 112 + 16 + 208);
    CHECK(pg_arena_hit_cap(a));
    pg_arena_destroy(a);
}

/* A small arena's chunk stays in the destroying thread's cache and serves its next arena. */
PG_TEST(test_thread_cache_reuse)
{
    struct pg_arena *a;
    uint8_t *p, *q;
    size_t before;

    pg_arena_thread_cache_flush(); /* earlier cases may have filled it */
    before = pg_arena_thread_cache_bytes();
    a = pg_arena_create(0);
    PG_REQUIRE(a != NULL);
    p = pg_arena_alloc(a, 100);
    PG_REQUIRE(p != NULL);
    pg_arena_destroy(a);
    CHECK(pg_arena_thread_cache_bytes() > before);
    a = pg_arena_create(0);
    PG_REQUIRE(a != NULL);
    q = pg_arena_alloc(a, 100);
    CHECK(q == p); /* the same 16 KiB chunk, from the cache */
    CHECK_INT(pg_arena_thread_cache_bytes(), before);
    pg_arena_destroy(a);
    pg_arena_thread_cache_flush();
    CHECK_INT(pg_arena_thread_cache_bytes(), 0);
}

static void *cache_thread(void *arg)
{
    size_t *cached = arg;

    for (int i = 0; i < 4; i++) {
        struct pg_arena *a = pg_arena_create(0);

        if (a == NULL || pg_arena_alloc(a, 20000) == NULL) { /* a 32 KiB chunk */
            return NULL;
        }
        pg_arena_destroy(a);
    }
    *cached = pg_arena_thread_cache_bytes();
    return NULL;
}

/* A thread's cache goes back to the pool when the thread exits. */
PG_TEST(test_thread_exit_returns_chunks)
{
    pthread_t t;
    size_t cached = 0, pool_before;
    struct pg_arena *hold[10];

    pg_arena_thread_cache_flush();
    /* Take every pooled 32 KiB chunk, so the pool has room for the thread's. */
    for (int i = 0; i < 10; i++) {
        hold[i] = pg_arena_create(0);
        PG_REQUIRE(hold[i] != NULL && pg_arena_alloc(hold[i], 20000) != NULL);
    }
    pool_before = pg_arena_pool_bytes();
    PG_REQUIRE(pthread_create(&t, NULL, cache_thread, &cached) == 0);
    PG_REQUIRE(pthread_join(t, NULL) == 0);
    CHECK(cached > 0);
    CHECK(pg_arena_pool_bytes() >= pool_before + cached);
    CHECK_INT(pg_arena_thread_cache_bytes(), 0); /* this thread's is untouched */
    for (int i = 0; i < 10; i++) {
        pg_arena_destroy(hold[i]);
    }
}

/* A large block taken out of one arena and adopted by another keeps its bytes, counts in
 * the new arena's footprint and use, and goes back to the buffer pool with it; a block
 * over the cap, too small for a pool block or shorter than what is asked is refused and
 * stays the caller's. */
PG_TEST(test_adopt_block)
{
    struct pg_arena *from = pg_arena_create(0), *to = pg_arena_create(0);
    struct pg_arena *capped = pg_arena_create((size_t)64 << 10);
    const size_t n = (size_t)1 << 20;
    uint8_t *p = pg_arena_alloc(from, n), *base, *q, *small;
    size_t size = 0, fp0, used0, small_size = 0;
    struct pg_bufpool_stats before, after;

    PG_REQUIRE(p != NULL && to != NULL && capped != NULL);
    memset(p, 0x3c, n);
    base = pg_arena_take_block(from, p, &size);
    PG_REQUIRE(base != NULL && size > n);
    /* refused: over the cap, more than the block holds, and nothing changed */
    CHECK(pg_arena_adopt_block(capped, base, size, n) == NULL);
    CHECK(pg_arena_hit_cap(capped));
    CHECK(pg_arena_footprint(capped) == 0 || pg_arena_footprint(capped) < size);
    CHECK(pg_arena_adopt_block(to, base, size, size) == NULL);
    CHECK(pg_arena_adopt_block(to, NULL, size, 16) == NULL);
    CHECK(!pg_arena_hit_cap(to));
    /* adopted: the same bytes at the same place, counted */
    (void)pg_arena_alloc(to, 100); /* a head chunk: the block goes behind it */
    fp0 = pg_arena_footprint(to);
    used0 = pg_arena_used(to);
    q = pg_arena_adopt_block(to, base, size, n);
    CHECK(q == p);
    CHECK(q != NULL && q[0] == 0x3c && q[n - 1] == 0x3c);
    CHECK(pg_arena_footprint(to) == fp0 + size);
    CHECK(pg_arena_used(to) == used0 + n);
    CHECK(pg_arena_alloc(to, 64) != NULL); /* the head still serves small ones */
    /* a block of the small classes' size cannot be adopted (it would be free()d) */
    small = pg_arena_alloc(from, (size_t)200 << 10);
    CHECK(small != NULL && pg_arena_take_block(from, small, &small_size) == NULL);
    /* back to the pool with the arena */
    pg_bufpool_release();
    pg_bufpool_stats(&before);
    pg_arena_destroy(to);
    pg_bufpool_stats(&after);
    CHECK(after.held >= before.held + n);
    pg_bufpool_release();
    pg_arena_destroy(capped);
    pg_arena_destroy(from);
}

/* A finished request's arena gives the unused end of its last (pool) chunk back to the
 * pool at once: the footprint drops by what the pool gains, what was written stays, and
 * the arena still hands out memory (from a small chunk again). Nothing to give back: an
 * arena of small chunks only, or a tail given back already. */
PG_TEST(test_release_tail)
{
    struct pg_arena *a = pg_arena_create(0), *small = pg_arena_create(0);
    struct pg_bufpool_stats before, after;
    uint8_t *first = NULL, *last = NULL;
    size_t fp, got;

    PG_REQUIRE(a != NULL && small != NULL);
    CHECK(pg_arena_alloc(small, 1000) != NULL);
    CHECK_INT(pg_arena_release_tail(small), 0);
    /* 16 + 32 + ... + 256 KiB chunks, then a 512 KiB one (a pool block) a fifth used */
    for (size_t i = 0; i < 600; i++) {
        uint8_t *p = pg_arena_alloc(a, 1024);
        PG_REQUIRE(p != NULL);
        memset(p, (int)(i & 0xff), 1024);
        first = first != NULL ? first : p;
        last = p;
    }
    pg_bufpool_release();
    pg_bufpool_stats(&before);
    fp = pg_arena_footprint(a);
    got = pg_arena_release_tail(a);
#ifndef PG_ARENA_ASAN
    CHECK(got >= 128u * 1024u); /* the 512 KiB chunk down to just over 256 KiB */
#endif
    pg_bufpool_stats(&after);
    CHECK(pg_arena_footprint(a) == fp - got);
    CHECK(after.held == before.held + got);
    CHECK_INT(pg_arena_release_tail(a), 0);
    CHECK(first[0] == 0 && last[1023] == (uint8_t)(599 & 0xff));
    CHECK(pg_arena_alloc(a, 100000) != NULL && pg_arena_alloc(a, 10) != NULL);
    pg_arena_destroy(a);
    pg_arena_destroy(small);
    pg_bufpool_release();
}

PG_TEST_MAIN(PG_CASE(test_release_tail), PG_CASE(test_adopt_block), PG_CASE(test_alloc_cap_table), PG_CASE(test_many_small_keep_contents),
             PG_CASE(test_realloc_in_place_and_cap), PG_CASE(test_thread_cache_reuse),
             PG_CASE(test_thread_exit_returns_chunks))
