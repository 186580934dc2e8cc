/* SPDX-License-Identifier: Apache-2.0
 * Heap sampler end to end, with the malloc interposer linked in (so never
 * under sanitizers): at rate 1 known allocations from known functions must
 * give exact alloc and in-use values; every entry point keeps glibc's
 * semantics (errno, free(NULL), zero sizes); threads and fork are safe; and
 * at 512 KiB with a fixed seed the estimates are within a stated bound. */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_test.h"
#include "selfprof/sampler.h"
#include "selfprof/selfprof.h"
#include "selfprof_decode.h"

/* noipa: also keeps GCC's identical-code folding from merging the sites. */
#define NOINLINE __attribute__((noinline, noipa))

/* Where the test allocations are kept, so the compiler cannot elide them. */
static void *volatile g_keep[64 * 1024];
/* Impossible sizes, hidden from the compiler's compile-time size checks. */
static volatile size_t g_huge = SIZE_MAX - 4096;
static volatile size_t g_half = SIZE_MAX / 2;

static void release(int i)
{
    free(g_keep[i]);
    g_keep[i] = NULL;
}

static pg_tprof *fetch(enum pg_selfprof_view view)
{
    struct pg_arena *a = pg_arena_create(64u << 20);
    uint8_t *gz = NULL;
    size_t len = 0;
    struct pg_status st = {0};
    pg_tprof *p = NULL;
    if (pg_selfprof_write(a, view, &gz, &len, &st) == PG_ERR_OK) {
        p = pg_tprof_decode(gz, len);
    } else {
        fprintf(stderr, "  write: %s\n", st.msg);
    }
    pg_arena_destroy(a);
    return p;
}

static void start_exact(void)
{
    pg_selfprof_set_rate(1);
    pg_sampler_reset();
}

/* ---- allocation sites (noinline, no tail calls: the leaf frame is theirs) ---- */

NOINLINE static void site_a(int i, size_t n)
{
    g_keep[i] = malloc(n);
}

NOINLINE static void site_b(int i, size_t n)
{
    g_keep[i] = malloc(n);
}

NOINLINE static void site_calloc(int i, size_t n, size_t m)
{
    g_keep[i] = calloc(n, m);
}

NOINLINE static void site_r1(int i, size_t n)
{
    g_keep[i] = malloc(n);
}

NOINLINE static void site_r2(int i, size_t n)
{
    g_keep[i] = realloc(g_keep[i], n);
}

NOINLINE static void site_ra(int i, size_t n, size_t m)
{
    g_keep[i] = reallocarray(g_keep[i], n, m);
}

NOINLINE static void site_aligned(int i)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, 1000) == 0) {
        g_keep[i] = p;
    }
    g_keep[i + 1] = aligned_alloc(128, 256);
    g_keep[i + 2] = memalign(32, 48);
    g_keep[i + 3] = valloc(100);
    g_keep[i + 4] = pvalloc(100);
}

NOINLINE static void site_zero(int i)
{
    g_keep[i] = malloc(0);
}

PG_TEST(exact_malloc_and_free)
{
    start_exact();
    for (int i = 0; i < 10; i++) {
        site_a(i, 1000);
    }
    for (int i = 10; i < 15; i++) {
        site_b(i, 3000);
    }
    release(10);
    release(11);
    pg_tprof *p = fetch(PG_SELFPROF_HEAP);
    CHECK(p != NULL);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "site_a", v);
        CHECK_INT(v[0], 10);
        CHECK_INT(v[1], 10000);
        CHECK_INT(v[2], 10);
        CHECK_INT(v[3], 10000);
        pg_tprof_sum_leaf(p, "site_b", v);
        CHECK_INT(v[0], 5);
        CHECK_INT(v[1], 15000);
        CHECK_INT(v[2], 3);
        CHECK_INT(v[3], 9000);
        /* the sampler's own frames are cut at capture */
        CHECK(!pg_tprof_has_function(p, "malloc"));
        CHECK(!pg_tprof_has_function(p, "slow_path"));
        pg_tprof_free(p);
    }
    for (int i = 0; i < 15; i++) {
        if (i != 10 && i != 11) {
            release(i);
        }
    }
    p = fetch(PG_SELFPROF_HEAP);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "site_a", v);
        CHECK_INT(v[0], 10);
        CHECK_INT(v[2], 0);
        CHECK_INT(v[3], 0);
        pg_tprof_free(p);
    }
}

PG_TEST(exact_calloc_realloc_reallocarray)
{
    start_exact();
    for (int i = 0; i < 4; i++) {
        site_calloc(i, 10, 100);
    }
    site_r1(10, 100);
    site_r2(10, 5000);  /* realloc = free(100 B from site_r1) + alloc(5000 B here) */
    site_r1(11, 100);
    site_r2(11, 0);     /* glibc: frees and returns NULL; no allocation */
    CHECK(g_keep[11] == NULL);
    g_keep[12] = NULL;
    site_r2(12, 64);    /* realloc(NULL, n) is malloc */
    site_r1(13, 200);
    site_ra(13, 10, 30); /* reallocarray: 300 B */
    void *before = g_keep[13];
    errno = 0;
    void *fail = reallocarray(before, g_half, 4);
    CHECK(fail == NULL);
    CHECK_INT(errno, ENOMEM);

    pg_tprof *p = fetch(PG_SELFPROF_HEAP);
    CHECK(p != NULL);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "site_calloc", v);
        CHECK_INT(v[0], 4);
        CHECK_INT(v[1], 4000);
        CHECK_INT(v[3], 4000);
        pg_tprof_sum_leaf(p, "site_r1", v);
        CHECK_INT(v[0], 3);
        CHECK_INT(v[1], 400);
        CHECK_INT(v[2], 0);
        CHECK_INT(v[3], 0);
        pg_tprof_sum_leaf(p, "site_r2", v);
        CHECK_INT(v[0], 2);
        CHECK_INT(v[1], 5064);
        CHECK_INT(v[2], 2);
        CHECK_INT(v[3], 5064);
        pg_tprof_sum_leaf(p, "site_ra", v);
        CHECK_INT(v[0], 1);
        CHECK_INT(v[1], 300);
        CHECK_INT(v[2], 1); /* the failed reallocarray left it live */
        CHECK_INT(v[3], 300);
        pg_tprof_free(p);
    }
    for (int i = 0; i < 14; i++) {
        release(i);
        g_keep[i] = NULL;
    }
}

PG_TEST(exact_aligned_entry_points)
{
    start_exact();
    site_aligned(0);
    void *bad = (void *)1;
    int saved = errno = 77;
    CHECK_INT(posix_memalign(&bad, 3, 10), EINVAL);
    CHECK(bad == (void *)1);
    CHECK_INT(errno, saved);
    CHECK((uintptr_t)g_keep[0] % 64 == 0);
    CHECK((uintptr_t)g_keep[1] % 128 == 0);
    CHECK((uintptr_t)g_keep[3] % 4096 == 0);
    pg_tprof *p = fetch(PG_SELFPROF_HEAP);
    CHECK(p != NULL);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "site_aligned", v);
        long page = sysconf(_SC_PAGESIZE);
        CHECK_INT(v[0], 5);
        CHECK_INT(v[1], 1000 + 256 + 48 + 100 + page);
        CHECK_INT(v[3], 1000 + 256 + 48 + 100 + page);
        pg_tprof_free(p);
    }
    for (int i = 0; i < 5; i++) {
        release(i);
    }
    p = fetch(PG_SELFPROF_HEAP);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "site_aligned", v);
        CHECK_INT(v[2], 0);
        CHECK_INT(v[3], 0);
        pg_tprof_free(p);
    }
}

PG_TEST(glibc_semantics_errno_null_zero)
{
    start_exact();
    errno = 4242;
    free(NULL);
    CHECK_INT(errno, 4242);
    void *q = malloc(100); /* sampled at rate 1: the slow path must keep errno */
    CHECK(q != NULL);
    CHECK_INT(errno, 4242);
    free(q); /* sampled free takes the lock: errno kept too */
    CHECK_INT(errno, 4242);
    errno = 0;
    void *huge = malloc(g_huge);
    CHECK(huge == NULL);
    CHECK_INT(errno, ENOMEM);
    errno = 0;
    CHECK(calloc(g_half, 3) == NULL);
    CHECK_INT(errno, ENOMEM);

    site_zero(0);
    CHECK(g_keep[0] != NULL); /* glibc hands out a unique pointer for 0 bytes */
    pg_tprof *p = fetch(PG_SELFPROF_HEAP);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "site_zero", v);
        CHECK_INT(v[0], 1);
        CHECK_INT(v[1], 0);
        CHECK_INT(v[2], 1);
        pg_tprof_free(p);
    }
    release(0);
}

PG_TEST(profile_shape_like_go)
{
    pg_selfprof_set_rate(PG_SELFPROF_DEFAULT_RATE);
    CHECK(pg_selfprof_hooks_linked());
    CHECK(pg_selfprof_enabled());
    pg_tprof *p = fetch(PG_SELFPROF_HEAP);
    CHECK(p != NULL);
    if (p == NULL) {
        return;
    }
    static const char *const want[4][2] = {{"alloc_objects", "count"}, {"alloc_space", "bytes"},
                                           {"inuse_objects", "count"}, {"inuse_space", "bytes"}};
    CHECK_INT(p->n_sample_type, 4);
    for (size_t i = 0; i < 4 && i < p->n_sample_type; i++) {
        CHECK_STR(pg_tprof_str(p, p->sample_type[i]->type), want[i][0]);
        CHECK_STR(pg_tprof_str(p, p->sample_type[i]->unit), want[i][1]);
    }
    CHECK(p->period_type != NULL);
    if (p->period_type != NULL) {
        CHECK_STR(pg_tprof_str(p, p->period_type->type), "space");
        CHECK_STR(pg_tprof_str(p, p->period_type->unit), "bytes");
    }
    CHECK_INT(p->period, 524288);
    CHECK_STR(pg_tprof_str(p, p->default_sample_type), "inuse_space");
    CHECK(p->time_nanos > 0);
    CHECK(p->n_string_table > 0 && p->string_table[0][0] == '\0');
    /* the executable's mapping has its GNU build id */
    int exe_with_id = 0;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    for (size_t i = 0; i < p->n_mapping; i++) {
        const char *fn = pg_tprof_str(p, p->mapping[i]->filename);
        const char *bid = pg_tprof_str(p, p->mapping[i]->build_id);
        CHECK(p->mapping[i]->id == i + 1);
        if (fn != NULL && strcmp(fn, exe) == 0 && bid != NULL && strlen(bid) >= 16) {
            exe_with_id = 1;
        }
    }
    CHECK(exe_with_id);
    pg_tprof_free(p);
    p = fetch(PG_SELFPROF_ALLOCS);
    if (p != NULL) {
        CHECK_STR(pg_tprof_str(p, p->default_sample_type), "alloc_space");
        pg_tprof_free(p);
    }
}

NOINLINE static void site_delta(int i)
{
    g_keep[i] = malloc(1000);
}

PG_TEST(delta_profile)
{
    start_exact();
    site_a(0, 500);
    struct pg_selfprof_snapshot *base = pg_selfprof_snapshot_take();
    CHECK(base != NULL);
    for (int i = 1; i < 4; i++) {
        site_delta(i);
    }
    struct pg_arena *a = pg_arena_create(64u << 20);
    uint8_t *gz = NULL;
    size_t len = 0;
    struct pg_status st = {0};
    CHECK_INT(pg_selfprof_write_delta(a, PG_SELFPROF_HEAP, base, &gz, &len, &st), PG_ERR_OK);
    pg_tprof *p = gz ? pg_tprof_decode(gz, len) : NULL;
    CHECK(p != NULL);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "site_delta", v);
        CHECK_INT(v[0], 3);
        CHECK_INT(v[1], 3000);
        pg_tprof_sum_leaf(p, "site_a", v); /* before the base: not in the delta */
        CHECK_INT(v[0], 0);
        CHECK_INT(v[3], 0);
        pg_tprof_free(p);
    }
    pg_arena_destroy(a);
    pg_selfprof_snapshot_free(base);
    for (int i = 0; i < 4; i++) {
        release(i);
    }
}

/* ---- threads ---------------------------------------------------------------- */

#define T_THREADS 4
#define T_ALLOCS 4000
#define T_KEEP 500

NOINLINE static void site_thread(void **slot)
{
    *slot = malloc(100);
}

static void *thread_main(void *arg)
{
    void **mine = arg;
    for (int i = 0; i < T_ALLOCS; i++) {
        site_thread(&mine[i]);
        if (i >= T_KEEP) {
            free(mine[i]);
        }
    }
    return NULL;
}

PG_TEST(threads_allocate_while_profiles_are_written)
{
    start_exact();
    static void *slots[T_THREADS][T_ALLOCS];
    pthread_t th[T_THREADS];
    for (int t = 0; t < T_THREADS; t++) {
        CHECK_INT(pthread_create(&th[t], NULL, thread_main, slots[t]), 0);
    }
    for (int k = 0; k < 20; k++) {
        pg_tprof *p = fetch(k % 2 ? PG_SELFPROF_ALLOCS : PG_SELFPROF_HEAP);
        CHECK(p != NULL);
        if (p != NULL) {
            pg_tprof_free(p);
        }
    }
    for (int t = 0; t < T_THREADS; t++) {
        pthread_join(th[t], NULL);
    }
    pg_tprof *p = fetch(PG_SELFPROF_HEAP);
    CHECK(p != NULL);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "site_thread", v);
        CHECK_INT(v[0], T_THREADS * T_ALLOCS);
        CHECK_INT(v[1], T_THREADS * T_ALLOCS * 100);
        CHECK_INT(v[2], T_THREADS * T_KEEP);
        CHECK_INT(v[3], T_THREADS * T_KEEP * 100);
        pg_tprof_free(p);
    }
    for (int t = 0; t < T_THREADS; t++) {
        for (int i = 0; i < T_KEEP; i++) {
            free(slots[t][i]);
        }
    }
}

/* ---- fork ---------------------------------------------------------------------- */

static atomic_int g_stop;

static void *churn_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        void *q = malloc(64);
        free(q);
    }
    return NULL;
}

PG_TEST(fork_while_another_thread_samples)
{
    start_exact();
    site_a(0, 700);
    atomic_store(&g_stop, 0);
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, churn_main, NULL), 0);
    for (int k = 0; k < 10; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10); /* a deadlock in the child fails the test instead of hanging it */
            void *q = malloc(300);
            free(q);
            pg_tprof *p = fetch(PG_SELFPROF_HEAP);
            int64_t v[4] = {0};
            if (p != NULL) {
                pg_tprof_sum_leaf(p, "site_a", v);
                pg_tprof_free(p);
            }
            _exit(p != NULL && v[3] == 700 ? 0 : 3);
        }
        int status = 0;
        CHECK(pid > 0);
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);
    release(0);
}

/* ---- statistics at 512 KiB ------------------------------------------------------ */

NOINLINE static void site_stat(int i)
{
    g_keep[i] = malloc(4096);
}

NOINLINE static void *site_churn(void)
{
    void *q = malloc(256);
    g_keep[60000] = q;
    return q;
}

PG_TEST(statistics_at_512k_fixed_seed)
{
    pg_sampler_reset();
    pg_sampler_set_seed(42);
    pg_selfprof_set_rate(PG_SELFPROF_DEFAULT_RATE);
    /* 20,000 live x 4 KiB = 80 MiB: ~156 expected samples, relative sd
     * 1/sqrt(156) = 8%. Bound: 4 sd = 32%. */
    for (int i = 0; i < 20000; i++) {
        site_stat(i);
    }
    /* 400,000 x 256 B churn = 97.7 MiB allocated, nothing live: ~196
     * samples, sd 7.1%; bound 4 sd = 30%; in-use must be exactly 0. */
    for (int i = 0; i < 400000; i++) {
        free(site_churn());
    }
    pg_tprof *p = fetch(PG_SELFPROF_HEAP);
    CHECK(p != NULL);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "site_stat", v);
        double truth = 20000.0 * 4096;
        fprintf(stderr, "  site_stat inuse_space %" PRId64 " (truth %.0f, %+.1f%%), objects %" PRId64 "\n",
                v[3], truth, 100.0 * ((double)v[3] - truth) / truth, v[2]);
        CHECK(fabs((double)v[3] - truth) <= 0.32 * truth);
        CHECK(fabs((double)v[2] - 20000.0) <= 0.32 * 20000.0);
        CHECK_INT(v[0], v[2]);
        pg_tprof_sum_leaf(p, "site_churn", v);
        double churn = 400000.0 * 256;
        fprintf(stderr, "  site_churn alloc_space %" PRId64 " (truth %.0f, %+.1f%%), inuse %" PRId64 "\n",
                v[1], churn, 100.0 * ((double)v[1] - churn) / churn, v[3]);
        CHECK(fabs((double)v[1] - churn) <= 0.30 * churn);
        CHECK_INT(v[2], 0);
        CHECK_INT(v[3], 0);
        pg_tprof_free(p);
    }
    struct pg_selfprof_stats s;
    pg_selfprof_get_stats(&s);
    CHECK(s.samples > 100);
    CHECK(s.table_bytes > 0);
    for (int i = 0; i < 20000; i++) {
        release(i);
    }
}

PG_TEST(rate_zero_turns_sampling_off)
{
    pg_sampler_reset();
    pg_selfprof_set_rate(0);
    CHECK(!pg_selfprof_enabled());
    CHECK(strstr(pg_selfprof_why_off(), "heap_sample_rate") != NULL);
    for (int i = 0; i < 100; i++) {
        site_a(i, 100000);
    }
    struct pg_selfprof_stats s;
    pg_selfprof_get_stats(&s);
    CHECK_INT(s.samples, 0);
    for (int i = 0; i < 100; i++) {
        release(i);
    }
    pg_selfprof_set_rate(PG_SELFPROF_DEFAULT_RATE);
}

PG_TEST_MAIN(PG_CASE(exact_malloc_and_free), PG_CASE(exact_calloc_realloc_reallocarray),
             PG_CASE(exact_aligned_entry_points), PG_CASE(glibc_semantics_errno_null_zero),
             PG_CASE(profile_shape_like_go), PG_CASE(delta_profile),
             PG_CASE(threads_allocate_while_profiles_are_written),
             PG_CASE(fork_while_another_thread_samples), PG_CASE(statistics_at_512k_fixed_seed),
             PG_CASE(rate_zero_turns_sampling_off))
