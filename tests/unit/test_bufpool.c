/* SPDX-License-Identifier: Apache-2.0
 * core/bufpool.c: a block given back serves the next request with its pages resident
 * (no page faults), pieces are stitched before anything fresh is mapped, the byte cap
 * and the memory limiter's soft limit keep it from holding more, the decay gives
 * everything back after a quiet period, and several threads share it safely. Waits on
 * the clock for the decay: a component test. */
#include "pg_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "core/arena.h"
#include "core/bufpool.h"
#include "core/memlimit.h"

/* ThreadSanitizer's runtime changes what the fault and address-space cases can see. */
#if defined(__SANITIZE_THREAD__)
#define PG_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PG_UNDER_TSAN 1
#endif
#endif
#ifndef PG_UNDER_TSAN
#define PG_UNDER_TSAN 0
#endif

#define MIB ((size_t)1024 * 1024)

static long minor_faults(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* The process's address space in use (VmSize), bytes. */
static size_t vm_size(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    size_t kib = 0;

    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "VmSize: %zu", &kib) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kib * 1024;
}

static void fresh_pool(void)
{
    pg_memlimit_reset();
    pg_bufpool_configure(0, 0);
    pg_bufpool_release();
}

/* A block written, given back and taken again is the same memory, still resident: writing
 * it again costs (almost) no page faults, where the first write faulted every page. */
PG_TEST(test_reuse_without_faults)
{
    size_t got = 0, got2 = 0;
    struct pg_bufpool_stats st0, st1;
    uint8_t *p, *q;
    long f0, f1, f2;

    fresh_pool();
    pg_bufpool_stats(&st0);
    p = pg_bufpool_get(8 * MIB, &got);
    PG_REQUIRE(p != NULL);
    CHECK(got >= 8 * MIB && got < 8 * MIB + PG_BUFPOOL_MIN);
    f0 = minor_faults();
    memset(p, 0x5a, got);
    f1 = minor_faults();
    pg_bufpool_put(p, got, got);
    q = pg_bufpool_get(8 * MIB, &got2);
    PG_REQUIRE(q != NULL);
    CHECK(q == p);
    CHECK_INT(got2, got);
    CHECK(q[got2 - 1] == 0x5a); /* kept, not zeroed: the old bytes are there */
    memset(q, 0xa5, got2);
    f2 = minor_faults();
    if (f2 - f1 >= (f1 - f0) / 4) {
        fprintf(stderr, "  faults: first write %ld, second %ld\n", f1 - f0, f2 - f1);
    }
    /* Fresh pages fault (one per 4 KiB, fewer with THP); resident ones do not (a sanitizer's
     * shadow memory may add some of its own: relative, not zero). */
    CHECK(f1 - f0 >= 8);
    CHECK(f2 - f1 < (f1 - f0) / 4);
    pg_bufpool_stats(&st1);
    CHECK_INT(st1.reused - st0.reused, 1);
    CHECK_INT(st1.mapped - st0.mapped, 1);
    pg_bufpool_put(q, got2, got2);
    CHECK_INT(pg_bufpool_release(), got2);
}

/* Larger blocks are cut (head out, tail kept); smaller pieces are moved side by side into
 * one block with their contents, before anything fresh is mapped. */
PG_TEST(test_split_and_stitch)
{
    size_t g1, g2, g3, g4;
    struct pg_bufpool_stats st;
    uint8_t *a, *b, *c, *d;

    fresh_pool();
    a = pg_bufpool_get(4 * MIB, &g1);
    b = pg_bufpool_get(2 * MIB, &g2);
    PG_REQUIRE(a != NULL && b != NULL);
    memset(a, 1, g1);
    memset(b, 2, g2);
    pg_bufpool_put(a, g1, g1);
    pg_bufpool_put(b, g2, g2);
    pg_bufpool_stats(&st);
    CHECK_INT(st.held, g1 + g2);

    /* 1 MiB: cut from the 2 MiB block (best fit), 1 MiB of it stays kept */
    c = pg_bufpool_get(1 * MIB, &g3);
    PG_REQUIRE(c != NULL);
    CHECK_INT(g3, 1 * MIB);
    CHECK(c == b);
    pg_bufpool_stats(&st);
    CHECK_INT(st.held, g1 + g2 - g3);

    /* 5 MiB: more than any block: the 4 MiB one and the 1 MiB tail, moved together */
    d = pg_bufpool_get(5 * MIB, &g4);
    PG_REQUIRE(d != NULL);
    CHECK_INT(g4, 5 * MIB);
    CHECK(d[0] == 1 && d[4 * MIB - 1] == 1); /* the 4 MiB block's pages, moved */
    CHECK(d[4 * MIB] == 2 && d[5 * MIB - 1] == 2);
    pg_bufpool_stats(&st);
    CHECK_INT(st.held, 0);
    pg_bufpool_put(c, g3, g3);
    pg_bufpool_put(d, g4, g4);
    pg_bufpool_release();
}

/* Only what was written is kept: an unwritten tail is unmapped at once. */
PG_TEST(test_unwritten_tail_not_kept)
{
    size_t got;
    struct pg_bufpool_stats st;
    void *p;

    fresh_pool();
    p = pg_bufpool_get(4 * MIB, &got);
    PG_REQUIRE(p != NULL);
    memset(p, 3, 100000);
    pg_bufpool_put(p, got, 100000);
    pg_bufpool_stats(&st);
    CHECK_INT(st.held, ((size_t)100000 + 4095) & ~(size_t)4095);
    pg_bufpool_release();
}

/* The byte cap: a block that would pass it is unmapped, not kept. */
PG_TEST(test_cap)
{
    size_t g1, g2;
    struct pg_bufpool_stats st;
    void *a, *b;

    fresh_pool();
    pg_bufpool_configure(3 * MIB, 0);
    a = pg_bufpool_get(2 * MIB, &g1);
    b = pg_bufpool_get(2 * MIB, &g2);
    PG_REQUIRE(a != NULL && b != NULL);
    pg_bufpool_put(a, g1, g1);
    CHECK(!pg_bufpool_room(g2));
    pg_bufpool_put(b, g2, g2);
    pg_bufpool_stats(&st);
    CHECK_INT(st.held, g1);
    CHECK_INT(st.blocks, 1);
    fresh_pool();
}

/* Under a memory limit the pool keeps nothing the limiter would need (in flight + held
 * past the soft limit), and a reading past the soft limit empties it at once. */
PG_TEST(test_memory_pressure)
{
    size_t got;
    struct pg_bufpool_stats st0, st;
    struct pg_status mst;
    void *p;

    fresh_pool();
    pg_bufpool_stats(&st0);
    pg_memlimit_configure(64 * MIB, 16 * MIB, 1); /* soft limit 48 MiB, RSS read each time */
    PG_REQUIRE(pg_memlimit_admit(46 * MIB, &mst));
    p = pg_bufpool_get(4 * MIB, &got);
    PG_REQUIRE(p != NULL);
    CHECK(!pg_bufpool_room(got));
    pg_bufpool_put(p, got, got); /* 46 + 4 > 48: unmapped */
    pg_bufpool_stats(&st);
    CHECK_INT(st.held, 0);
    CHECK(st.pressure > st0.pressure);
    pg_memlimit_release(46 * MIB);

    /* room again: kept; then an RSS reading past a soft limit below it empties the pool */
    p = pg_bufpool_get(4 * MIB, &got);
    PG_REQUIRE(p != NULL);
    memset(p, 7, got);
    pg_bufpool_put(p, got, got);
    pg_bufpool_stats(&st);
    CHECK_INT(st.held, got);
    pg_memlimit_reset();
    pg_memlimit_configure(2 * MIB, 1 * MIB, 1); /* soft 1 MiB: any process is past it */
    CHECK(pg_memlimit_over(&mst));
    pg_bufpool_stats(&st);
    CHECK_INT(st.held, 0);
    fresh_pool();
}

static bool wait_empty(int ms)
{
    struct pg_bufpool_stats st;
    struct timespec ts = {0, 10 * 1000 * 1000};

    for (int i = 0; i < ms / 10; i++) {
        pg_bufpool_stats(&st);
        if (st.held == 0) {
            return true;
        }
        nanosleep(&ts, NULL);
    }
    return false;
}

/* After the decay period without a get or put, everything goes back; a get or put within
 * it starts the period again. */
PG_TEST(test_decay)
{
    size_t g1, g2;
    struct pg_bufpool_stats st0, st;
    struct timespec ts = {0, 300 * 1000 * 1000};
    void *a, *b;

    fresh_pool();
    pg_bufpool_stats(&st0);
    pg_bufpool_configure(0, 1000 * 1000 * 1000); /* 1 s */
    a = pg_bufpool_get(1 * MIB, &g1);
    b = pg_bufpool_get(1 * MIB, &g2);
    PG_REQUIRE(a != NULL && b != NULL);
    pg_bufpool_put(a, g1, g1);
    nanosleep(&ts, NULL); /* 300 ms: not yet */
    pg_bufpool_put(b, g2, g2);
    nanosleep(&ts, NULL); /* 600 ms after the first put, 300 after the second: kept */
    pg_bufpool_stats(&st);
    CHECK_INT(st.held, g1 + g2);
    CHECK(wait_empty(5000));
    pg_bufpool_stats(&st);
    CHECK_INT(st.decays - st0.decays, 1);
    fresh_pool();
}

/* Large arenas take their chunks from the pool and give them back. */
PG_TEST(test_arena_large_chunks)
{
    struct pg_bufpool_stats st0, st1, st2;
    struct pg_arena *a;

    fresh_pool();
    pg_bufpool_stats(&st0);
    a = pg_arena_create(0);
    PG_REQUIRE(a != NULL);
    for (int i = 0; i < 64; i++) {
        uint8_t *p = pg_arena_alloc(a, 64 * 1024);

        PG_REQUIRE(p != NULL);
        memset(p, i, 64 * 1024);
    }
    PG_REQUIRE(pg_arena_alloc(a, 3 * MIB) != NULL); /* a big block of its own */
    pg_arena_destroy(a);
    pg_bufpool_stats(&st1);
    CHECK(st1.held >= 3 * MIB);
    a = pg_arena_create(0);
    PG_REQUIRE(a != NULL);
    PG_REQUIRE(pg_arena_alloc(a, 3 * MIB) != NULL);
    pg_bufpool_stats(&st2);
    CHECK(st2.reused > st1.reused);
    CHECK_INT(st2.mapped, st1.mapped);
    pg_arena_destroy(a);
    fresh_pool();
}

#define THREADS 4
#define ROUNDS 200

static void *churn(void *arg)
{
    size_t seed = (size_t)(uintptr_t)arg;
    bool ok = true;

    for (int i = 0; i < ROUNDS; i++) {
        size_t size = PG_BUFPOOL_MIN + ((seed * 7919u + (size_t)i * 104729u) % (3 * MIB));
        size_t got;
        uint8_t *p = pg_bufpool_get(size, &got);

        if (p == NULL) {
            return (void *)0;
        }
        /* this thread's mark at both ends: another thread never gets the same bytes */
        p[0] = (uint8_t)seed;
        p[got - 1] = (uint8_t)seed;
        sched_yield();
        ok = ok && p[0] == (uint8_t)seed && p[got - 1] == (uint8_t)seed;
        pg_bufpool_put(p, got, i % 3 == 0 ? got / 2 : got);
    }
    return ok ? (void *)1 : (void *)0;
}

/* Several threads take and give back blocks of varied sizes at once (TSan runs it). */
PG_TEST(test_threads)
{
    pthread_t t[THREADS];
    struct pg_bufpool_stats st;

    fresh_pool();
    pg_bufpool_configure(16 * MIB, 0);
    for (size_t i = 0; i < THREADS; i++) {
        PG_REQUIRE(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1)) == 0);
    }
    for (size_t i = 0; i < THREADS; i++) {
        void *ok = NULL;

        PG_REQUIRE(pthread_join(t[i], &ok) == 0);
        CHECK(ok == (void *)1);
    }
    pg_bufpool_stats(&st);
    CHECK(st.held <= 16 * MIB);
    fresh_pool();
}

/* A block grown in place keeps its bytes; the extension is a kept block moved in behind
 * it (its resident pages: writing them does not fault), fresh pages only when the pool is
 * empty. Refused requests (shrinking, an unaligned size, NULL) and a grow the kernel
 * cannot map leave the block as it was, still the caller's, and the pool's blocks kept. */
PG_TEST(test_grow)
{
    size_t got = 0, kgot = 0, ggot = 0;
    struct pg_bufpool_stats st0, st1;
    uint8_t *p, *k, *g;
    long f0, f1, f2, f3;

    fresh_pool();
    p = pg_bufpool_get(1 * MIB, &got);
    k = pg_bufpool_get(4 * MIB, &kgot);
    PG_REQUIRE(p != NULL && k != NULL);
    memset(p, 0x11, got);
    f0 = minor_faults();
    memset(k, 0x22, kgot); /* resident now */
    f1 = minor_faults();
    pg_bufpool_put(k, kgot, kgot);
    /* refused: nothing changes */
    CHECK(pg_bufpool_grow(p, got, got - 1, &ggot) == NULL && ggot == 0);
    CHECK(pg_bufpool_grow(p, got - 1, 2 * MIB, &ggot) == NULL);
    CHECK(pg_bufpool_grow(NULL, got, 2 * MIB, &ggot) == NULL);
    CHECK(pg_bufpool_grow(p, got, got, &ggot) == p && ggot == got);
    pg_bufpool_stats(&st0);
    CHECK(st0.held == kgot);
    /* from the kept block: its pages move in behind */
    g = pg_bufpool_grow(p, got, got + 3 * MIB, &ggot);
    PG_REQUIRE(g != NULL);
    CHECK(ggot == got + 3 * MIB);
    CHECK(g[0] == 0x11 && g[got - 1] == 0x11);         /* the block's own bytes */
    CHECK(g[got] == 0x22 && g[ggot - 1] == 0x22);     /* the kept block's, moved */
    f2 = minor_faults();
    memset(g + got, 0x33, ggot - got);
    f3 = minor_faults();
    if (f3 - f2 >= (f1 - f0) / 4) {
        fprintf(stderr, "  faults: fresh 4 MiB %ld, grown part %ld\n", f1 - f0, f3 - f2);
    }
    /* ThreadSanitizer maps shadow memory afresh for moved pages: their faults are its own */
    CHECK(PG_UNDER_TSAN || f3 - f2 < (f1 - f0) / 4);
    pg_bufpool_stats(&st1);
    CHECK(st1.held == kgot - 3 * MIB); /* the kept block's tail stays kept */
    CHECK_INT(st1.reused - st0.reused, 1);
    /* nothing kept: the kernel extends it with fresh pages */
    pg_bufpool_release();
    p = pg_bufpool_grow(g, ggot, ggot + 2 * MIB, &got);
    PG_REQUIRE(p != NULL);
    CHECK(got == ggot + 2 * MIB);
    CHECK(p[0] == 0x11 && p[ggot - 1] == 0x33);
    memset(p + ggot, 0x44, 2 * MIB);
    pg_bufpool_stats(&st0);
    CHECK_INT(st0.mapped - st1.mapped, 1);
    /* The kernel cannot map it (an address space limit, in a child): NULL, the block
     * and the pool's kept block unchanged. */
    /* Not under ThreadSanitizer: its runtime cannot live under a low address-space limit
     * (the child hangs in the runtime's own mmap). */
    if (!PG_UNDER_TSAN) {
        pid_t pid;
        int status = 0;

        k = pg_bufpool_get(4 * MIB, &kgot);
        PG_REQUIRE(k != NULL);
        memset(k, 0x55, kgot);
        pg_bufpool_put(k, kgot, kgot);
        fflush(NULL);
        pid = fork();
        PG_REQUIRE(pid >= 0);
        if (pid == 0) {
            struct rlimit rl;
            struct pg_bufpool_stats cs;
            uint8_t *x;
            size_t xg = 0;
            int fails = 0;

            if (getrlimit(RLIMIT_AS, &rl) != 0) {
                _exit(2);
            }
            rl.rlim_cur = 256 * MIB + vm_size();
            if (setrlimit(RLIMIT_AS, &rl) != 0) {
                _exit(3);
            }
            /* a pool piece is taken, then no fresh range for the whole: all back */
            x = pg_bufpool_grow(p, got, got + 1024 * MIB, &xg);
            fails += x != NULL || xg != 0;
            pg_bufpool_stats(&cs);
            fails += cs.held != kgot;
            fails += p[0] != 0x11 || p[got - 1] != 0x44;
            /* nothing kept: the kernel's extension fails */
            pg_bufpool_release();
            x = pg_bufpool_grow(p, got, got + 1024 * MIB, &xg);
            fails += x != NULL || xg != 0;
            fails += p[0] != 0x11 || p[got - 1] != 0x44;
            _exit(fails);
        }
        PG_REQUIRE(waitpid(pid, &status, 0) == pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "  out-of-memory child: status 0x%x\n", status);
        }
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    pg_bufpool_put(p, got, got);
    fresh_pool();
}

PG_TEST_MAIN(PG_CASE(test_grow), PG_CASE(test_reuse_without_faults), PG_CASE(test_split_and_stitch),
             PG_CASE(test_unwritten_tail_not_kept), PG_CASE(test_cap),
             PG_CASE(test_memory_pressure), PG_CASE(test_decay),
             PG_CASE(test_arena_large_chunks), PG_CASE(test_threads))
