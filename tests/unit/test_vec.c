/* SPDX-License-Identifier: Apache-2.0
 * core/vec.c: capped doubling growth, on the heap and in an arena. */
#include "pg_test.h"

#include <stdbool.h>
#include <stdint.h>

#include "core/vec.h"

PG_TEST(test_next_cap_table)
{
    static const struct {
        size_t cap, elem, need, min_cap, max_cap, want;
    } cases[] = {
        {0, 4, 1, 16, 0, 16},    /* first growth: the floor */
        {0, 4, 0, 16, 0, 0},     /* nothing needed: capacity stays 0 */
        {16, 4, 17, 16, 0, 32},  /* doubles */
        {16, 4, 100, 16, 0, 128},
        {16, 4, 10, 16, 0, 16},  /* already fits */
        {16, 4, 17, 16, 20, 20}, /* clamped to the cap */
        {20, 4, 21, 16, 20, 0},  /* over the cap: refused */
        {0, 1, 5000, 4096, 0, 8192},
        {0, 4, 1, 0, 0, 1},      /* no floor: one */
        {3, 4, 4, 16, 0, 16},    /* below the floor: the floor */
        {0, SIZE_MAX / 2, 3, 1, 0, 0},         /* need * elem overflows */
        {0, 8, SIZE_MAX / 8, 1, 0, SIZE_MAX / 8}, /* up to the size_t limit */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t got = pg_vec_next_cap(cases[i].cap, cases[i].elem, cases[i].need, cases[i].min_cap,
                                     cases[i].max_cap);
        if (got != cases[i].want) {
            fprintf(stderr, "  case %zu: %zu, want %zu\n", i, got, cases[i].want);
        }
        CHECK(got == cases[i].want);
    }
}

PG_TEST(test_heap_push_keeps_contents)
{
    PG_VEC(uint32_t) v = {NULL, 0, 0};

    for (uint32_t i = 0; i < 1000; i++) {
        PG_REQUIRE(PG_VEC_GROW(NULL, v.v, v.cap, v.n, 8, 0));
        v.v[v.n++] = i * 7;
    }
    CHECK_INT(v.cap, 1024);
    for (uint32_t i = 0; i < 1000; i++) {
        CHECK(v.v[i] == i * 7);
    }
    free(v.v);
}

PG_TEST(test_cap_refuses_and_leaves_array)
{
    PG_VEC(int) v = {NULL, 0, 0};

    for (int i = 0; i < 5; i++) {
        PG_REQUIRE(PG_VEC_GROW(NULL, v.v, v.cap, v.n, 4, 5));
        v.v[v.n++] = i;
    }
    int *before = v.v;
    CHECK_INT(v.cap, 5);
    CHECK(!PG_VEC_GROW(NULL, v.v, v.cap, v.n, 4, 5));
    CHECK(v.v == before);
    CHECK_INT(v.cap, 5);
    CHECK_INT(v.v[4], 4);
    free(v.v);
}

PG_TEST(test_arena_growth_and_arena_cap)
{
    struct pg_arena *a = pg_arena_create(64 * 1024);
    char *buf = NULL;
    size_t cap = 0, len = 0;

    PG_REQUIRE(a != NULL);
    for (int i = 0; i < 100; i++) {
        PG_REQUIRE(PG_VEC_RESERVE(a, buf, cap, len + 11, 32, 0));
        memcpy(buf + len, "0123456789", 11);
        len += 10;
    }
    CHECK_INT(cap, 1024);
    CHECK(memcmp(buf + 990, "0123456789", 11) == 0);
    /* The arena's own cap refuses what the vector allows: false, unchanged. */
    char *kept = buf;
    CHECK(!PG_VEC_RESERVE(a, buf, cap, 1u << 20, 32, 0));
    CHECK(buf == kept);
    CHECK_INT(cap, 1024);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_next_cap_table), PG_CASE(test_heap_push_keeps_contents),
             PG_CASE(test_cap_refuses_and_leaves_array), PG_CASE(test_arena_growth_and_arena_cap))
