/* SPDX-License-Identifier: Apache-2.0
 * The heap sampler library without the malloc interposer (this runs under
 * ASan): the tables driven through their internal API with synthetic
 * pointers and stacks, the pprof writer's output decoded by protobuf-c, the
 * .symtab/dladdr symbolizer, and the symbolz request parser. */
#include <math.h>
#include <stdint.h>
#include <zlib.h>

#include "../selfprof/selfprof_decode.h"
#include "pg_test.h"
#include "selfprof/sampler.h"
#include "selfprof/selfprof.h"

__attribute__((noinline, noipa)) static int sym_target_static(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline, noipa)) int pg_test_sym_target_global(int x);
__attribute__((noinline, noipa)) int pg_test_sym_target_global(int x)
{
    return x * 5 + 2;
}

int main(void);

/* A fake return address inside @fn (as a caller's return address would be).
 * +2, not more: at -O2 the two targets above are 5 bytes long. */
static uintptr_t ret_in(const void *fn)
{
    return (uintptr_t)fn + 2;
}

static pg_tprof *write_and_decode(enum pg_selfprof_view view)
{
    struct pg_arena *a = pg_arena_create(64u << 20);
    uint8_t *gz = NULL;
    size_t len = 0;
    struct pg_status st = {0};
    pg_tprof *p = NULL;
    if (pg_selfprof_write(a, view, &gz, &len, &st) == PG_ERR_OK) {
        p = pg_tprof_decode(gz, len);
    }
    pg_arena_destroy(a);
    return p;
}

PG_TEST(off_without_hooks_says_why)
{
    CHECK(!pg_selfprof_hooks_linked());
    CHECK(!pg_selfprof_enabled());
    CHECK(strstr(pg_selfprof_why_off(), "no malloc interposer") != NULL);
    CHECK_INT(pg_selfprof_rate(), PG_SELFPROF_DEFAULT_RATE);
}

PG_TEST(weights_and_intervals)
{
    CHECK(pg_sampler_weight(100, 1) == 1.0);
    CHECK(pg_sampler_weight(100, 0) == 1.0);
    double w = pg_sampler_weight(524288, 524288);
    CHECK(fabs(w - 1.0 / (1.0 - exp(-1.0))) < 1e-9);
    /* large objects are almost surely sampled: weight -> 1 */
    CHECK(fabs(pg_sampler_weight(64u << 20, 524288) - 1.0) < 1e-9);
    CHECK_INT(pg_sampler_next_interval(1), 1);
    pg_sampler_set_seed(7);
    double sum = 0;
    int n = 20000;
    for (int i = 0; i < n; i++) {
        int64_t t = pg_sampler_next_interval(1000);
        CHECK(t >= 1);
        sum += (double)t;
    }
    /* exponential mean 1000 (+0.5 from ceil); sd of the mean ~ 7 */
    CHECK(fabs(sum / n - 1000.5) < 40);
}

PG_TEST(tables_exact_values_and_names)
{
    pg_sampler_reset();
    uintptr_t st_a[3] = {ret_in((const void *)sym_target_static), ret_in((const void *)main), 0x10};
    uintptr_t st_b[2] = {ret_in((const void *)pg_test_sym_target_global), ret_in((const void *)main)};
    for (uintptr_t i = 1; i <= 10; i++) {
        pg_sampler_record_alloc((void *)(i * 0x1000), 100, 1.0, st_a, 3);
    }
    for (uintptr_t i = 11; i <= 15; i++) {
        pg_sampler_record_alloc((void *)(i * 0x1000), 1000, 2.0, st_b, 2);
    }
    CHECK(pg_sampler_record_free((void *)0x1000));
    CHECK(pg_sampler_record_free((void *)0xB000));
    CHECK(!pg_sampler_record_free((void *)0xB000)); /* only once */
    CHECK(!pg_sampler_record_free((void *)0x123456));

    pg_tprof *p = write_and_decode(PG_SELFPROF_HEAP);
    CHECK(p != NULL);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "sym_target_static", v);
        CHECK_INT(v[0], 10);
        CHECK_INT(v[1], 1000);
        CHECK_INT(v[2], 9);
        CHECK_INT(v[3], 900);
        pg_tprof_sum_leaf(p, "pg_test_sym_target_global", v);
        CHECK_INT(v[0], 10);
        CHECK_INT(v[1], 10000);
        CHECK_INT(v[2], 8);
        CHECK_INT(v[3], 8000);
        CHECK(pg_tprof_has_function(p, "main"));
        /* addresses are return address - 1 */
        int found = 0;
        for (size_t i = 0; i < p->n_location; i++) {
            if (p->location[i]->address == ret_in((const void *)sym_target_static) - 1) {
                found = 1;
            }
        }
        CHECK(found);
        CHECK_INT(p->n_sample, 2);
        pg_tprof_free(p);
    }
    struct pg_selfprof_stats s;
    pg_selfprof_get_stats(&s);
    CHECK_INT(s.samples, 15);
    CHECK_INT(s.buckets, 2);
    CHECK_INT(s.live, 13);
    CHECK_INT(s.frames, 5);
    CHECK_INT(s.dropped, 0);
    pg_sampler_reset();
}

PG_TEST(live_table_grows_and_deletes)
{
    pg_sampler_reset();
    uintptr_t st[1] = {ret_in((const void *)sym_target_static)};
    const uintptr_t n = 20000; /* well past the initial 4096 slots */
    for (uintptr_t i = 1; i <= n; i++) {
        pg_sampler_record_alloc((void *)(i * 16), 10, 1.0, st, 1);
    }
    /* free every other one, then check the rest are all still found */
    for (uintptr_t i = 1; i <= n; i += 2) {
        CHECK(pg_sampler_record_free((void *)(i * 16)));
    }
    size_t missing = 0;
    for (uintptr_t i = 2; i <= n; i += 2) {
        missing += !pg_sampler_record_free((void *)(i * 16));
    }
    CHECK_INT(missing, 0);
    struct pg_selfprof_stats s;
    pg_selfprof_get_stats(&s);
    CHECK_INT(s.live, 0);
    CHECK(s.live_capacity >= 32768);
    /* an address reused without its free being seen replaces the old entry */
    pg_sampler_record_alloc((void *)0x40, 10, 1.0, st, 1);
    pg_sampler_record_alloc((void *)0x40, 30, 1.0, st, 1);
    pg_tprof *p = write_and_decode(PG_SELFPROF_HEAP);
    if (p != NULL) {
        int64_t v[4];
        pg_tprof_sum_leaf(p, "sym_target_static", v);
        CHECK_INT(v[2], 1);
        CHECK_INT(v[3], 30);
        pg_tprof_free(p);
    }
    pg_sampler_reset();
}

PG_TEST(take_and_put_back)
{
    pg_sampler_reset();
    uintptr_t st[1] = {ret_in((const void *)sym_target_static)};
    pg_sampler_record_alloc((void *)0x5000, 64, 1.0, st, 1);
    struct pg_sampler_live e;
    CHECK(pg_sampler_take((void *)0x5000, &e));
    CHECK_INT(e.size, 64);
    CHECK(!pg_sampler_take((void *)0x5000, &e));
    pg_sampler_put_back(&e);
    CHECK(pg_sampler_record_free((void *)0x5000));
    pg_sampler_reset();
}

PG_TEST(bucket_table_overflow_is_counted)
{
    pg_sampler_reset();
    uintptr_t st[2];
    for (uintptr_t i = 0; i < PG_SAMPLER_MAX_BUCKETS + 100; i++) {
        st[0] = 0x1000 + i;
        st[1] = 0x2000;
        pg_sampler_record_alloc((void *)((i + 1) * 32), 8, 1.0, st, 2);
    }
    struct pg_selfprof_stats s;
    pg_selfprof_get_stats(&s);
    CHECK_INT(s.buckets, PG_SAMPLER_MAX_BUCKETS - 1);
    CHECK_INT(s.dropped, 101);
    CHECK_INT(s.samples, PG_SAMPLER_MAX_BUCKETS + 100);
    pg_tprof *p = write_and_decode(PG_SELFPROF_ALLOCS);
    CHECK(p != NULL);
    if (p != NULL) {
        int64_t total = 0;
        for (size_t i = 0; i < p->n_sample; i++) {
            total += p->sample[i]->value[0];
        }
        CHECK_INT(total, PG_SAMPLER_MAX_BUCKETS + 100); /* overflow bucket keeps the totals */
        pg_tprof_free(p);
    }
    pg_sampler_reset();
}

PG_TEST(symbolize_exe_and_libraries)
{
    CHECK_STR(pg_selfprof_symbolize(ret_in((const void *)sym_target_static)), "sym_target_static");
    CHECK_STR(pg_selfprof_symbolize((uintptr_t)pg_test_sym_target_global + 1),
              "pg_test_sym_target_global");
    CHECK_STR(pg_selfprof_symbolize((uintptr_t)&zlibVersion + 1), "zlibVersion");
    CHECK(pg_selfprof_symbolize(0x10) == NULL);
    CHECK(sym_target_static(1) == 4 && pg_test_sym_target_global(1) == 7);
}

static const char *fake_resolver(uintptr_t addr, void *arg)
{
    (void)arg;
    switch (addr) {
    case 0x1000:
        return "alpha";
    case 0xabc:
        return "beta";
    case 255:
        return "gamma";
    default:
        return NULL;
    }
}

PG_TEST(symbolz_protocol_table)
{
    static const struct {
        const char *req;
        const char *want;
    } cases[] = {
        {"", "num_symbols: 1\n"},
        {"0x1000", "num_symbols: 1\n0x1000 alpha\n"},
        {"0x1000+0xABC+0x9", "num_symbols: 1\n0x1000 alpha\n0xabc beta\n"},
        {"255+0x0+junk+0x", "num_symbols: 1\n0xff gamma\n"},
        {"+++", "num_symbols: 1\n"},
        {"0x1000\n", "num_symbols: 1\n0x1000 alpha\n"},
        {"0xfffffffffffffffff+0x1000", "num_symbols: 1\n0x1000 alpha\n"}, /* overflow skipped */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        char *out = NULL;
        size_t len = 0;
        struct pg_status st = {0};
        CHECK_INT(pg_selfprof_symbolz_with(a, cases[i].req, strlen(cases[i].req), fake_resolver, NULL,
                                           &out, &len, &st),
                  PG_ERR_OK);
        CHECK_STR(out, cases[i].want);
        CHECK_INT(len, strlen(cases[i].want));
        pg_arena_destroy(a);
    }
}

PG_TEST(symbolz_limits_and_real_names)
{
    size_t n = PG_SELFPROF_SYMBOLZ_MAX + 1;
    char *req = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        req[2 * i] = '1';
        req[2 * i + 1] = '+';
    }
    struct pg_arena *a = pg_arena_create(16 << 20);
    char *out = NULL;
    size_t len = 0;
    struct pg_status st = {0};
    CHECK_INT(pg_selfprof_symbolz(a, req, n * 2 - 1, &out, &len, &st), PG_ERR_LIMIT);
    free(req);
    char one[64];
    snprintf(one, sizeof(one), "%#lx", (unsigned long)ret_in((const void *)sym_target_static));
    CHECK_INT(pg_selfprof_symbolz(a, one, strlen(one), &out, &len, &st), PG_ERR_OK);
    CHECK(out != NULL && strstr(out, " sym_target_static\n") != NULL);
    pg_arena_destroy(a);
}

PG_TEST(writer_respects_arena_cap)
{
    pg_sampler_reset();
    uintptr_t st[1] = {ret_in((const void *)sym_target_static)};
    pg_sampler_record_alloc((void *)0x7000, 64, 1.0, st, 1);
    struct pg_arena *a = pg_arena_create(4096);
    uint8_t *gz = NULL;
    size_t len = 0;
    struct pg_status s = {0};
    enum pg_err rc = pg_selfprof_write(a, PG_SELFPROF_HEAP, &gz, &len, &s);
    CHECK(rc == PG_ERR_LIMIT);
    CHECK(strstr(s.msg, "heap profile") != NULL);
    pg_arena_destroy(a);
    pg_sampler_reset();
}

PG_TEST_MAIN(PG_CASE(off_without_hooks_says_why), PG_CASE(weights_and_intervals),
             PG_CASE(tables_exact_values_and_names), PG_CASE(live_table_grows_and_deletes),
             PG_CASE(take_and_put_back), PG_CASE(bucket_table_overflow_is_counted),
             PG_CASE(symbolize_exe_and_libraries), PG_CASE(symbolz_protocol_table),
             PG_CASE(symbolz_limits_and_real_names), PG_CASE(writer_respects_arena_cap))
