/* SPDX-License-Identifier: Apache-2.0
 * The memory budget: admission against the soft limit, release, arena-tied
 * charges, RSS-based refusal, and the memory_limiter processor's config. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipeline/component.h"
#include "core/arena.h"
#include "core/bufpool.h"
#include "core/memlimit.h"
#include "core/thread_sched.h"
#include "pg_test.h"

extern const struct pg_component_ops pg_processor_memory_limiter;

#define MiB (1024ull * 1024ull)

PG_TEST(test_admit_release)
{
    struct pg_status st;

    pg_memlimit_reset();
    /* No limit: everything is admitted but still counted. */
    CHECK(pg_memlimit_admit(5 * MiB, &st));
    CHECK_INT(pg_memlimit_inflight(), 5 * MiB);
    pg_memlimit_release(5 * MiB);
    CHECK_INT(pg_memlimit_inflight(), 0);

    /* A limit far above RSS: only in-flight bytes matter. */
    pg_memlimit_configure(64000 * MiB, 1000 * MiB, 0);
    CHECK_INT(pg_memlimit_soft_limit(), 63000 * MiB);
    CHECK(pg_memlimit_admit(30000 * MiB, &st));
    CHECK(pg_memlimit_admit(30000 * MiB, &st));
    CHECK(!pg_memlimit_admit(3001 * MiB, &st));
    CHECK_INT(st.code, PG_ERR_BUSY);
    CHECK(strstr(st.msg, "memory limit reached") != NULL);
    CHECK(strstr(st.msg, "in flight") != NULL);
    CHECK(pg_memlimit_over(&st) == false);
    CHECK(pg_memlimit_admit(3000 * MiB, &st)); /* exactly at the soft limit */
    pg_memlimit_charge(1);
    CHECK(pg_memlimit_over(&st));
    CHECK_INT(st.code, PG_ERR_BUSY);
    pg_memlimit_release(63000 * MiB + 1);
    CHECK_INT(pg_memlimit_inflight(), 0);
    pg_memlimit_release(10); /* never wraps */
    CHECK_INT(pg_memlimit_inflight(), 0);

    /* Bigger than the soft limit on its own: LIMIT (413), not 503. */
    CHECK(!pg_memlimit_admit(63001 * MiB, &st));
    CHECK_INT(st.code, PG_ERR_LIMIT);
    pg_memlimit_reset();
}

PG_TEST(test_tightest_limit_wins)
{
    pg_memlimit_reset();
    pg_memlimit_configure(1000 * MiB, 100 * MiB, 0);
    pg_memlimit_configure(2000 * MiB, 100 * MiB, 0);
    CHECK_INT(pg_memlimit_limit(), 1000 * MiB);
    pg_memlimit_configure(500 * MiB, 50 * MiB, 0);
    CHECK_INT(pg_memlimit_soft_limit(), 450 * MiB);
    /* A spike >= limit is clamped to 20% (config validation rejects it). */
    pg_memlimit_reset();
    pg_memlimit_configure(100 * MiB, 100 * MiB, 0);
    CHECK_INT(pg_memlimit_soft_limit(), 80 * MiB);
    pg_memlimit_reset();
}

PG_TEST(test_arena_charge)
{
    struct pg_arena *a = pg_arena_create(0);

    pg_memlimit_reset();
    CHECK(a != NULL);
    CHECK(pg_memlimit_charge_arena(a, 12345));
    CHECK(pg_memlimit_charge_arena(a, 55));
    CHECK_INT(pg_memlimit_inflight(), 12400);
    pg_arena_destroy(a);
    CHECK_INT(pg_memlimit_inflight(), 0);
}

static void *destroy_on_loop(void *arg)
{
    struct pg_arena *a = arg;

    (void)pg_sched_latency_thread(0);
    pg_arena_destroy(a);
    /* Cleanups (the charge) ran before it returned, whoever frees the chunks. */
    return (void *)(uintptr_t)(pg_memlimit_inflight() == 0);
}

/* A large arena whose last owner is the event loop: its charge is released at once; its
 * chunks go to the buffer pool (core/bufpool) when it has room, else they leave the
 * process on the reaper thread. */
PG_TEST(test_arena_reaped_off_loop)
{
    const size_t big = 8 * MiB;

    pg_arena_malloc_setup(); /* as the gateway */
    for (int full = 0; full < 2; full++) {
        struct pg_arena *a = pg_arena_create(0);
        struct pg_bufpool_stats st;
        pthread_t t;
        void *released = NULL;
        uint8_t *p = NULL;
        uint64_t rss;

        pg_memlimit_reset();
        pg_bufpool_release();
        pg_bufpool_configure(full ? MiB : 0, 0); /* full: no room for 8 MiB */
        PG_REQUIRE(a != NULL && (p = pg_arena_alloc(a, big)) != NULL);
        memset(p, 1, big);
        CHECK(pg_memlimit_charge_arena(a, 100));
        rss = pg_memlimit_read_rss();
        CHECK(pthread_create(&t, NULL, destroy_on_loop, a) == 0);
        CHECK(pthread_join(t, &released) == 0);
        CHECK(released != NULL);
        CHECK_INT(pg_memlimit_inflight(), 0);
        pg_bufpool_stats(&st);
        if (!full) {
            CHECK(st.held >= big); /* kept, resident, for the next large request */
            continue;
        }
        CHECK_INT(st.held, 0);
        /* Bounded wait for the reaper to unmap it. */
        for (int i = 0; i < 500 && pg_memlimit_read_rss() + big / 2 > rss; i++) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        CHECK(pg_memlimit_read_rss() + big / 2 <= rss);
    }
    pg_bufpool_configure(0, 0);
    pg_bufpool_release();
}

PG_TEST(test_rss_refusal)
{
    struct pg_status st;
    uint64_t rss = pg_memlimit_read_rss();

    CHECK(rss > 0);
    CHECK(pg_memlimit_peak_rss() >= rss / 2);
    CHECK(pg_memlimit_total_memory() > 0);
    pg_memlimit_reset();
    /* Soft limit below what we already use: RSS refuses any new work. */
    pg_memlimit_configure(rss / 2 + 2 * MiB, 2 * MiB, 1);
    CHECK(!pg_memlimit_admit(1, &st));
    CHECK_INT(st.code, PG_ERR_BUSY);
    CHECK(strstr(st.msg, "RSS") != NULL);
    CHECK(pg_memlimit_over(&st));
    CHECK_INT(pg_memlimit_inflight(), 0);
    pg_memlimit_reset();
    CHECK(pg_memlimit_admit(1, &st));
    pg_memlimit_release(1);
}

/* The processor's config: collector keys, defaults, and every invalid combo. */
PG_TEST(test_processor_config)
{
    static const struct {
        const char *yaml;
        bool ok;
        const char *err; /* substring of the diag */
    } cases[] = {
        {"limit_mib: 512\nspike_limit_mib: 128\ncheck_interval: 1s\n", true, NULL},
        {"limit_mib: 512\n", true, NULL},
        {"limit_percentage: 80\nspike_limit_percentage: 20\n", true, NULL},
        {"check_interval: 1s\n", false, "set limit_mib or limit_percentage"},
        {"limit_mib: 100\nspike_limit_mib: 100\n", false, "must be smaller than the limit"},
        {"limit_mib: 100\ncheck_interval: 0s\n", false, "check_interval must be greater"},
        {"limit_mib: 100\nlimit_percentage: 50\n", false, "not both"},
        {"limit_percentage: 150\n", false, "limit_percentage"},
        {"limit_mb: 100\n", false, "limit_mb"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_config *cfg = pg_config_load_string("ml.yaml", cases[i].yaml,
                                                      strlen(cases[i].yaml));
        struct pg_diag diag;
        struct pg_component_ctx ctx = {0};
        void *state = NULL;
        enum pg_err err;
        bool found = cases[i].err == NULL;

        pg_diag_init(&diag);
        CHECK(cfg != NULL && cfg->root != NULL);
        if (cfg == NULL || cfg->root == NULL) {
            pg_config_free(cfg);
            pg_diag_free(&diag);
            continue;
        }
        ctx.id = "memory_limiter";
        ctx.log_name = "processor/memory_limiter";
        ctx.config = cfg->root;
        ctx.config_arena = cfg->arena;
        ctx.diag = &diag;
        ctx.path = "processors::memory_limiter";
        err = pg_processor_memory_limiter.create(&ctx, &state);
        if ((err == PG_ERR_OK) != cases[i].ok) {
            fprintf(stderr, "  case %zu: err=%d\n", i, (int)err);
            CHECK(false);
        }
        for (size_t k = 0; k < diag.n; k++) {
            if (cases[i].err != NULL && strstr(diag.msgs[k], cases[i].err) != NULL) {
                found = true;
            }
        }
        if (!found) {
            fprintf(stderr, "  case %zu: no diag with \"%s\"\n", i, cases[i].err);
            for (size_t k = 0; k < diag.n; k++) {
                fprintf(stderr, "    %s\n", diag.msgs[k]);
            }
            CHECK(false);
        }
        if (state != NULL) {
            pg_processor_memory_limiter.destroy(state);
        }
        pg_diag_free(&diag);
        pg_config_free(cfg);
    }
}

/* process() refuses with BUSY once over the soft limit, passes otherwise. */
PG_TEST(test_processor_process)
{
    static const char yaml[] = "limit_mib: 64000\nspike_limit_mib: 1000\n";
    struct pg_config *cfg = pg_config_load_string("ml.yaml", yaml, strlen(yaml));
    struct pg_diag diag;
    struct pg_component_ctx ctx = {0};
    struct pg_status st;
    void *state = NULL;
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = a ? pg_arena_zalloc(a, sizeof(*req)) : NULL;
    struct pg_batch *b;

    pg_memlimit_reset();
    pg_diag_init(&diag);
    ctx.log_name = "processor/memory_limiter";
    ctx.config = cfg ? cfg->root : NULL;
    ctx.config_arena = cfg ? cfg->arena : NULL;
    ctx.diag = &diag;
    ctx.path = "processors::memory_limiter";
    CHECK(req != NULL);
    if (req == NULL || cfg == NULL) {
        pg_arena_destroy(a);
        pg_config_free(cfg);
        pg_diag_free(&diag);
        return;
    }
    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(req);
    b = pg_batch_new(a, req);
    CHECK_INT(pg_processor_memory_limiter.create(&ctx, &state), PG_ERR_OK);
    if (state != NULL && b != NULL) {
        CHECK_INT(pg_processor_memory_limiter.start(state, &st), PG_ERR_OK);
        CHECK_INT(pg_memlimit_soft_limit(), 63000 * MiB);
        CHECK_INT(pg_processor_memory_limiter.process(state, &b, &st), PG_ERR_OK);
        pg_memlimit_charge(63001 * MiB);
        CHECK_INT(pg_processor_memory_limiter.process(state, &b, &st), PG_ERR_BUSY);
        CHECK(strstr(st.msg, "memory limit reached") != NULL);
        CHECK_INT(pg_err_http_status(st.code), 503);
        pg_memlimit_release(63001 * MiB);
        CHECK_INT(pg_processor_memory_limiter.process(state, &b, &st), PG_ERR_OK);
        pg_processor_memory_limiter.shutdown(state);
        pg_processor_memory_limiter.destroy(state);
    }
    pg_batch_unref(b);
    pg_memlimit_reset();
    pg_diag_free(&diag);
    pg_config_free(cfg);
}

PG_TEST_MAIN(PG_CASE(test_admit_release), PG_CASE(test_tightest_limit_wins),
             PG_CASE(test_arena_charge), PG_CASE(test_arena_reaped_off_loop),
             PG_CASE(test_rss_refusal),
             PG_CASE(test_processor_config), PG_CASE(test_processor_process))
