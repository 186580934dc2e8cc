/* SPDX-License-Identifier: Apache-2.0
 * A request's memory budget (core/membudget.h): charges past the admission estimate
 * grow the reservation up to the hard limit and are refused past it, sticky; the buffer
 * pool and the arenas charge the thread's current budget and give back what they free;
 * the ISIZE re-estimate; the reservation given back at the end. */
#include <string.h>

#include "core/arena.h"
#include "core/bufpool.h"
#include "core/membudget.h"
#include "core/memlimit.h"
#include "pg_test.h"

#define MiB ((size_t)1024 * 1024)
#define GiB (1024 * MiB)

PG_TEST(test_charge_grows_then_refuses)
{
    struct pg_membudget b, *prev;

    pg_memlimit_reset();
    /* hard 100, soft 80 (GiB: the process's own RSS, ASan's shadow included, is noise) */
    pg_memlimit_configure(100 * GiB, 20 * GiB, 0);
    CHECK(pg_memlimit_admit(10 * GiB, &b.st));
    pg_membudget_init(&b, 10 * GiB);
    CHECK_INT(b.estimate, 10 * GiB);
    CHECK(pg_membudget_charge(5 * GiB)); /* no budget current: nothing charged */
    CHECK_INT(b.charged, 0);
    prev = pg_membudget_enter(&b);
    CHECK(prev == NULL);
    CHECK(pg_membudget_current() == &b);
    CHECK(pg_membudget_charge(8 * GiB)); /* within the estimate */
    CHECK_INT(b.reserved, 10 * GiB);
    CHECK_INT(pg_memlimit_inflight(), 10 * GiB);
    CHECK(pg_membudget_charge(80 * GiB)); /* past the soft limit, under the hard one */
    CHECK_INT(b.charged, 88 * GiB);
    CHECK_INT(b.reserved, 88 * GiB);
    CHECK_INT(pg_memlimit_inflight(), 88 * GiB);
    pg_membudget_uncharge(40 * GiB); /* freed: the reservation stays (the peak may return) */
    CHECK_INT(b.charged, 48 * GiB);
    CHECK_INT(b.peak, 88 * GiB);
    CHECK(pg_membudget_charge(40 * GiB));
    /* Another request holds 10 MiB: 88 + 10 + 5 passes 100, BUSY (a retry may fit). */
    pg_memlimit_charge(10 * GiB);
    CHECK(!pg_membudget_charge(5 * GiB));
    CHECK(b.refused);
    CHECK_INT(b.st.code, PG_ERR_BUSY);
    CHECK(strstr(b.st.msg, "memory limit reached") != NULL);
    CHECK(strstr(b.st.msg, "limit_mib 102400.0") != NULL);
    CHECK_INT(b.charged, 88 * GiB); /* nothing charged for the refused one */
    CHECK(!pg_membudget_charge(1)); /* sticky: the request is ending */
    pg_memlimit_release(10 * GiB);
    pg_membudget_leave(prev);
    CHECK(pg_membudget_current() == NULL);
    pg_membudget_end(&b);
    CHECK_INT(b.reserved, 0);
    CHECK_INT(pg_memlimit_inflight(), 0);
    pg_membudget_end(&b); /* idempotent */
    CHECK_INT(pg_memlimit_inflight(), 0);

    /* More than the hard limit on its own: LIMIT, a retry could never fit. */
    pg_membudget_init(&b, 0);
    prev = pg_membudget_enter(&b);
    CHECK(!pg_membudget_charge(101 * GiB));
    CHECK_INT(b.st.code, PG_ERR_LIMIT);
    CHECK(strstr(b.st.msg, "memory limiter") != NULL);
    pg_membudget_leave(prev);
    pg_membudget_end(&b);
    CHECK_INT(pg_memlimit_inflight(), 0);
    pg_memlimit_reset();
}

PG_TEST(test_reserve)
{
    struct pg_membudget b;
    struct pg_status st;

    pg_memlimit_reset();
    pg_memlimit_configure(100 * GiB, 20 * GiB, 0);
    CHECK(pg_memlimit_admit(30 * GiB, &st));
    pg_membudget_init(&b, 30 * GiB);
    CHECK(pg_membudget_reserve(&b, 20 * GiB, &st)); /* never shrinks */
    CHECK_INT(b.reserved, 30 * GiB);
    CHECK(pg_membudget_reserve(&b, 70 * GiB, &st)); /* grows against the soft limit */
    CHECK_INT(b.reserved, 70 * GiB);
    CHECK_INT(b.estimate, 70 * GiB);
    CHECK_INT(pg_memlimit_inflight(), 70 * GiB);
    CHECK(!pg_membudget_reserve(&b, 90 * GiB, &st)); /* soft limit 80 GiB */
    CHECK_INT(st.code, PG_ERR_BUSY);
    CHECK_INT(b.reserved, 70 * GiB);
    pg_membudget_end(&b);
    CHECK_INT(pg_memlimit_inflight(), 0);
    pg_memlimit_reset();
}

/* The memory layers charge the current budget: a pool block and a large arena chunk by
 * core/bufpool, small arena chunks by core/arena; all given back when freed. */
PG_TEST(test_layers_charge)
{
    struct pg_membudget b, *prev;
    struct pg_arena *a;
    size_t got = 0;
    void *p;

    pg_memlimit_reset();
    pg_memlimit_configure(64 * MiB, 8 * MiB, 0);
    pg_membudget_init(&b, 0);
    prev = pg_membudget_enter(&b);
    p = pg_bufpool_get(3 * MiB, &got);
    CHECK(p != NULL);
    CHECK(got >= 3 * MiB);
    CHECK_INT(b.charged, got);
    memset(p, 1, got);
    pg_bufpool_put(p, got, got);
    CHECK_INT(b.charged, 0);

    /* A block grown in place (pg_bufpool_grow) is charged for its growth, so giving the
     * grown block back leaves nothing charged. */
    p = pg_bufpool_get(1 * MiB, &got);
    CHECK(p != NULL);
    {
        size_t grown = 0;
        void *q = pg_bufpool_grow(p, got, 5 * MiB, &grown);

        CHECK(q != NULL);
        CHECK(grown >= 5 * MiB);
        CHECK_INT(b.charged, grown);
        pg_bufpool_put(q, grown, grown);
        CHECK_INT(b.charged, 0);
    }

    a = pg_arena_create(0);
    CHECK(pg_arena_alloc(a, 100) != NULL);       /* a small chunk */
    CHECK(pg_arena_alloc(a, 2 * MiB) != NULL);   /* a pool block of its own */
    CHECK(b.charged >= 2 * MiB + 16 * 1024);
    CHECK_INT(b.charged, pg_arena_footprint(a));
    pg_arena_destroy(a);
    CHECK_INT(b.charged, 0);

    /* Past the hard limit the allocation fails; the budget says why. */
    a = pg_arena_create(0);
    CHECK(pg_arena_alloc(a, 70 * MiB) == NULL);
    CHECK(b.refused);
    CHECK_INT(b.st.code, PG_ERR_LIMIT);
    CHECK(pg_arena_alloc(a, 100) == NULL); /* sticky, small chunks too */
    pg_arena_destroy(a);
    CHECK_INT(b.charged, 0);
    pg_membudget_leave(prev);
    pg_membudget_end(&b);
    CHECK_INT(pg_memlimit_inflight(), 0);

    /* An arena charged under one budget and destroyed under another (or none) does not
     * touch the other's figures. */
    pg_membudget_init(&b, 0);
    prev = pg_membudget_enter(&b);
    a = pg_arena_create(0);
    CHECK(pg_arena_alloc(a, 100) != NULL);
    CHECK(b.charged > 0);
    pg_membudget_leave(prev);
    {
        struct pg_membudget other;

        pg_membudget_init(&other, 0);
        prev = pg_membudget_enter(&other);
        pg_arena_destroy(a);
        CHECK_INT(other.charged, 0);
        pg_membudget_leave(prev);
        pg_membudget_end(&other);
    }
    pg_membudget_end(&b);
    CHECK_INT(pg_memlimit_inflight(), 0);
    pg_bufpool_release();
    pg_memlimit_reset();
}

PG_TEST_MAIN(PG_CASE(test_charge_grows_then_refuses), PG_CASE(test_reserve),
             PG_CASE(test_layers_charge))
