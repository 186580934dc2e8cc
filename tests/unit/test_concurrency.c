/* SPDX-License-Identifier: Apache-2.0
 * The core pieces documented as thread-safe, driven from several threads at
 * once: metric counters/gauges/histograms while the registry is rendered,
 * memory-limit admit/release, spool append/ack, and batch reference counts.
 * Each case checks the totals come out exact; the ThreadSanitizer build
 * (label "threads", make test-tsan) checks there is no data race on the way. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "core/memlimit.h"
#include "core/metrics.h"
#include "storage/spool.h"
#include "pg_test.h"

#define THREADS 4
#define ROUNDS 500

static pthread_barrier_t g_go;

/* Starts @fn on THREADS threads (all released together) and joins them. */
static void run_threads(void *(*fn)(void *), void *arg)
{
    pthread_t t[THREADS];

    pthread_barrier_init(&g_go, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        CHECK_INT(pthread_create(&t[i], NULL, fn, arg), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    pthread_barrier_destroy(&g_go);
}

/* ---- metrics ---------------------------------------------------------------- */

struct metric_set {
    struct pg_metric *counter, *gauge, *hist;
};

static void *metric_worker(void *arg)
{
    struct metric_set *m = arg;
    FILE *sink = tmpfile();

    pthread_barrier_wait(&g_go);
    for (int i = 0; i < ROUNDS; i++) {
        pg_metric_add(m->counter, 1);
        pg_metric_add(m->gauge, 2);
        pg_metric_observe(m->hist, (double)(i % 7));
        pg_metric_sub(m->gauge, 2);
        if (sink != NULL && i % 50 == 0) {
            pg_metrics_render(sink); /* a scrape while others write */
        }
    }
    if (sink != NULL) {
        fclose(sink);
    }
    return NULL;
}

PG_TEST(metrics_from_many_threads_add_up)
{
    static const double buckets[] = {1, 5};
    struct metric_set m = {
        pg_metric_counter("pg_test_conc_total", "test", ""),
        pg_metric_gauge("pg_test_conc_inflight", "test", ""),
        pg_metric_histogram("pg_test_conc_hist", "test", "", buckets, 2),
    };

    PG_REQUIRE(m.counter != NULL && m.gauge != NULL && m.hist != NULL);
    run_threads(metric_worker, &m);
    CHECK_INT(pg_metric_value(m.counter), THREADS * ROUNDS);
    CHECK_INT(pg_metric_value(m.gauge), 0);
}

/* ---- memory limit ------------------------------------------------------------- */

static void *memlimit_worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&g_go);
    for (int i = 0; i < ROUNDS; i++) {
        struct pg_status st;
        if (pg_memlimit_admit(4096, &st)) {
            pg_memlimit_release(4096);
        }
        pg_memlimit_charge(100);
        pg_memlimit_release(100);
    }
    return NULL;
}

PG_TEST(memlimit_admit_release_balance)
{
    struct pg_status st;
    uint64_t limit = (uint64_t)1 << 40; /* far above RSS: only the in-flight sum counts */

    pg_memlimit_configure(limit, limit / 2, 0);
    run_threads(memlimit_worker, NULL);
    /* Everything was released: the whole soft limit can be admitted again. */
    CHECK(pg_memlimit_admit((size_t)(limit / 2) - 1, &st));
    pg_memlimit_release((size_t)(limit / 2) - 1);
    CHECK(!pg_memlimit_over(&st));
    pg_memlimit_reset();
}

/* ---- spool -------------------------------------------------------------------- */

static void *spool_worker(void *arg)
{
    struct pg_spool *s = arg;
    char rec[64];

    pthread_barrier_wait(&g_go);
    for (int i = 0; i < ROUNDS / 5; i++) {
        struct pg_status st;
        uint64_t id = 0;
        snprintf(rec, sizeof(rec), "record %d from %lu", i, (unsigned long)pthread_self());
        if (pg_spool_append(s, rec, strlen(rec), &id, &st) != PG_ERR_OK) {
            CHECK(!"append failed");
            continue;
        }
        if (i % 2 == 0) { /* ack some at once, the rest after the join */
            CHECK_INT(pg_spool_ack(s, id, &st), PG_ERR_OK);
        }
    }
    return NULL;
}

PG_TEST(spool_append_and_ack_from_many_threads)
{
    char dir[] = "/tmp/pg-test-conc-XXXXXX";
    struct pg_spool_options o = {0};
    struct pg_spool *s = NULL;
    struct pg_spool_stats stats;
    struct pg_status st;
    char cmd[64];

    PG_REQUIRE(mkdtemp(dir) != NULL);
    o.dir = dir;
    o.fsync = PG_SPOOL_FSYNC_NEVER;
    o.segment_bytes = 4096; /* rotate often: segments are created under contention too */
    if (pg_spool_open(&o, &s, &st) != PG_ERR_OK) {
        fprintf(stderr, "  %s\n", st.msg);
    }
    PG_REQUIRE(s != NULL);
    run_threads(spool_worker, s);
    pg_spool_get_stats(s, &stats);
    CHECK_INT(stats.appended, THREADS * (ROUNDS / 5));
    CHECK_INT(stats.acked, THREADS * (ROUNDS / 5 / 2));
    CHECK_INT(stats.pending, THREADS * (ROUNDS / 5 / 2));
    pg_spool_close(s);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
}

/* ---- batch references ------------------------------------------------------- */

static void *batch_worker(void *arg)
{
    struct pg_batch *b = arg;

    pthread_barrier_wait(&g_go);
    for (int i = 0; i < ROUNDS; i++) {
        pg_batch_unref(pg_batch_ref(b));
    }
    return NULL;
}

PG_TEST(batch_refcount_from_many_threads)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = pg_arena_alloc(a, sizeof(*req));
    struct pg_batch *b;

    PG_REQUIRE(req != NULL);
    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(req);
    b = pg_batch_new(a, req);
    PG_REQUIRE(b != NULL);
    run_threads(batch_worker, b);
    CHECK_INT(b->refcnt, 1);
    pg_batch_unref(b); /* the last reference: ASan sees a leak or double free */
}

PG_TEST_MAIN(PG_CASE(metrics_from_many_threads_add_up), PG_CASE(memlimit_admit_release_balance),
             PG_CASE(spool_append_and_ack_from_many_threads),
             PG_CASE(batch_refcount_from_many_threads))
