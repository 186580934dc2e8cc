/* SPDX-License-Identifier: Apache-2.0
 * The metric registry and its Prometheus text rendering. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "pg_test.h"

/* Renders into a malloc'd string (caller frees). */
static char *render(void)
{
    FILE *f = tmpfile();
    char *text = NULL;
    long n;

    pg_metrics_render(f);
    n = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)n + 1);
    if (fread(text, 1, (size_t)n, f) != (size_t)n) {
        text[0] = '\0';
    }
    fclose(f);
    return text;
}

static int64_t answer(void *arg)
{
    return *(int64_t *)arg;
}

PG_TEST(test_families_are_grouped)
{
    struct pg_metric *a1 = pg_metric_counter("t_a", "first family", "k=\"1\"");
    struct pg_metric *b = pg_metric_gauge("t_b", "second family", NULL);
    struct pg_metric *a2 = pg_metric_counter("t_a", "ignored help", "k=\"2\"");
    char *text;
    const char *help_a;
    const char *help_b;

    CHECK(pg_metric_counter("t_a", "x", "k=\"1\"") == a1); /* same series, same handle */
    pg_metric_add(a1, 3);
    pg_metric_add(a2, 4);
    pg_metric_set(b, -7);
    text = render();
    help_a = strstr(text, "# HELP t_a first family\n# TYPE t_a counter\nt_a{k=\"1\"} 3\nt_a{k=\"2\"} 4\n");
    help_b = strstr(text, "# HELP t_b second family\n# TYPE t_b gauge\nt_b -7\n");
    CHECK(help_a != NULL);
    CHECK(help_b != NULL);
    CHECK(strstr(text, "ignored help") == NULL);
    CHECK(help_a < help_b);
    free(text);
}

PG_TEST(test_histogram_and_fn_gauge)
{
    static const double bounds[] = {0.001, 0.01};
    struct pg_metric *h = pg_metric_histogram("t_lat_seconds", "latency", NULL, bounds, 2);
    static int64_t v = 42; /* stays registered: must outlive the test */
    char *text;

    pg_metric_observe(h, 0.0005);
    pg_metric_observe(h, 0.005);
    pg_metric_observe(h, 5);
    pg_metric_gauge_fn("t_fn", "computed", NULL, answer, &v);
    text = render();
    CHECK(strstr(text, "t_lat_seconds_bucket{le=\"0.001\"} 1\n") != NULL);
    CHECK(strstr(text, "t_lat_seconds_bucket{le=\"0.01\"} 2\n") != NULL);
    CHECK(strstr(text, "t_lat_seconds_bucket{le=\"+Inf\"} 3\n") != NULL);
    CHECK(strstr(text, "t_lat_seconds_count 3\n") != NULL);
    CHECK(strstr(text, "t_lat_seconds_sum 5.0055\n") != NULL);
    CHECK(strstr(text, "# TYPE t_fn gauge\nt_fn 42\n") != NULL);
    free(text);
}

/* Removing a target's series: exact label set and its extensions, under the
 * name prefix only; a longer value with the same start stays. */
PG_TEST(test_remove_series)
{
    static const double bounds[] = {1};
    static const struct {
        const char *name, *labels;
        bool gone;
    } cases[] = {
        {"t_rm_up", "job=\"a\",instance=\"x\"", true},
        {"t_rm_fail", "job=\"a\",instance=\"x\",reason=\"timeout\"", true},
        {"t_rm_fail", "job=\"a\",instance=\"x\",reason=\"busy\"", true},
        {"t_rm_up", "job=\"a\",instance=\"xy\"", false},
        {"t_rm_up", "job=\"b\",instance=\"x\"", false},
        {"other_up", "job=\"a\",instance=\"x\"", false},
    };
    char line[256];
    char *text;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pg_metric_add(pg_metric_counter(cases[i].name, "h", cases[i].labels), 1);
    }
    pg_metric_observe(pg_metric_histogram("t_rm_dur", "h", "job=\"a\",instance=\"x\"", bounds, 1),
                      0.5);
    CHECK(pg_metrics_remove("t_rm_", "job=\"a\",instance=\"x\"") == 4);
    CHECK(pg_metrics_remove("t_rm_", "job=\"a\",instance=\"x\"") == 0);
    CHECK(pg_metrics_remove("t_rm_", "") == 0);
    text = render();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(line, sizeof(line), "%s{%s} 1\n", cases[i].name, cases[i].labels);
        CHECK((strstr(text, line) == NULL) == cases[i].gone);
    }
    CHECK(strstr(text, "t_rm_dur") == NULL);
    CHECK(strstr(text, "# TYPE t_rm_fail") == NULL); /* the family's last series went */
    free(text);
    /* A removed series comes back fresh when asked for again; the list's
     * tail is still valid after removing its last element. */
    pg_metric_add(pg_metric_counter("t_rm_up", "h", "job=\"a\",instance=\"x\""), 5);
    pg_metric_add(pg_metric_counter("t_rm_new", "h", NULL), 2);
    text = render();
    CHECK(strstr(text, "t_rm_up{job=\"a\",instance=\"x\"} 5\n") != NULL);
    CHECK(strstr(text, "t_rm_new 2\n") != NULL);
    free(text);
}

#define ADDERS 12 /* more threads than shards: some share one */
#define ADDS 20000

static void *adder(void *arg)
{
    struct pg_metric *m = arg;

    for (int i = 0; i < ADDS; i++) {
        pg_metric_add(m, 3);
    }
    pg_metric_sub(m, 1);
    return NULL;
}

/* Counters are sharded per thread: the value and the rendering are the exact total. */
PG_TEST(test_sharded_counter_sums_threads)
{
    struct pg_metric *m = pg_metric_counter("t_sharded_total", "sharded", NULL);
    pthread_t t[ADDERS];
    int64_t want = (int64_t)ADDERS * (ADDS * 3 - 1) + 5;
    char line[64];
    char *text;

    pg_metric_add(m, 5);
    for (int i = 0; i < ADDERS; i++) {
        PG_REQUIRE(pthread_create(&t[i], NULL, adder, m) == 0);
    }
    for (int i = 0; i < ADDERS; i++) {
        PG_REQUIRE(pthread_join(t[i], NULL) == 0);
    }
    CHECK_INT(pg_metric_value(m), want);
    text = render();
    snprintf(line, sizeof(line), "\nt_sharded_total %lld\n", (long long)want);
    CHECK(strstr(text, line) != NULL);
    free(text);
    pg_metric_set(m, 7); /* a reset lands whatever shard held the adds */
    CHECK_INT(pg_metric_value(m), 7);
}

/* Thousands of scrape targets: 120 000 series registered, found again, half
 * removed one by one and registered again. With a list scan per
 * registration (the old registry) this is ~10^10 string compares and the
 * test times out; with the hash it takes well under a second. Exposition
 * keeps first-registration order across removal and re-registration. */
#define MANY 120000

static struct pg_metric *many[MANY];

static void many_labels(char *l, size_t cap, int i)
{
    snprintf(l, cap, "job=\"cmdb\",instance=\"127.0.0.1:%d\"", 10000 + i);
}

static void test_many_series_scale(void)
{
    size_t base = pg_metrics_series();
    char l[128];
    char *text;
    const char *a, *b, *c;

    pg_metric_add(pg_metric_counter("t_scale_first", "h", NULL), 1);
    for (int i = 0; i < MANY; i++) {
        many_labels(l, sizeof(l), i);
        many[i] = pg_metric_gauge("t_scale_up", "h", l);
        pg_metric_set(many[i], i);
    }
    pg_metric_add(pg_metric_counter("t_scale_last", "h", NULL), 1);
    CHECK_INT((int64_t)(pg_metrics_series() - base), MANY + 2);
    for (int i = 0; i < MANY; i += 997) {
        many_labels(l, sizeof(l), i);
        CHECK(pg_metric_gauge("t_scale_up", "h", l) == many[i]);
    }
    for (int i = 0; i < MANY; i += 2) {
        pg_metric_remove(many[i]);
    }
    CHECK_INT((int64_t)(pg_metrics_series() - base), MANY / 2 + 2);
    for (int i = 0; i < MANY; i += 2) {
        many_labels(l, sizeof(l), i);
        many[i] = pg_metric_gauge("t_scale_up", "h", l);
        CHECK_INT(pg_metric_value(many[i]), 0); /* fresh */
    }
    CHECK_INT((int64_t)(pg_metrics_series() - base), MANY + 2);
    text = render();
    a = strstr(text, "# TYPE t_scale_first counter");
    b = strstr(text, "# TYPE t_scale_up gauge");
    c = strstr(text, "# TYPE t_scale_last counter");
    CHECK(a != NULL && b != NULL && c != NULL && a < b && b < c);
    CHECK(strstr(text, "t_scale_up{job=\"cmdb\",instance=\"127.0.0.1:10001\"} 1\n") != NULL);
    snprintf(l, sizeof(l), "\npprofgate_metric_series %zu\n", pg_metrics_series());
    CHECK(strstr(text, l) != NULL);
    free(text);
    for (int i = 0; i < MANY; i++) {
        pg_metric_remove(many[i]);
    }
    pg_metric_remove(NULL);
    text = render();
    CHECK(strstr(text, "t_scale_up") == NULL); /* an emptied family is left out */
    CHECK(strstr(text, "t_scale_last 1\n") != NULL);
    free(text);
}

/* Renders on another thread while this one adds and removes series: the
 * snapshot is copied in chunks between which series come and go; every
 * page must end with the cardinality line and each series it lists once
 * (a walk that left the chain would repeat, crash or never end). */
static volatile int churn_done;

static void *render_loop(void *arg)
{
    int *pages = arg;

    while (!__atomic_load_n(&churn_done, __ATOMIC_ACQUIRE) && *pages < 200) {
        char *text = render();
        const char *p = strstr(text, "t_churn{i=\"5\"}");

        if (strstr(text, "\npprofgate_metric_series ") == NULL ||
            (p != NULL && strstr(p + 1, "t_churn{i=\"5\"}") != NULL)) {
            *pages = -100000; /* a broken page */
        }
        free(text);
        (*pages)++;
    }
    return NULL;
}

PG_TEST(test_render_during_churn)
{
    enum { N = 12000 }; /* about three of the render's lock holds */
    static struct pg_metric *m[N];
    pthread_t th;
    int pages = 0;
    char l[64];

    for (int i = 0; i < N; i++) {
        snprintf(l, sizeof(l), "i=\"%d\"", i);
        m[i] = pg_metric_gauge("t_churn", "h", l);
    }
    PG_REQUIRE(pthread_create(&th, NULL, render_loop, &pages) == 0);
    for (int round = 0; round < 6; round++) {
        for (int i = round % 2; i < N; i += 2) {
            pg_metric_remove(m[i]);
        }
        for (int i = round % 2; i < N; i += 2) {
            snprintf(l, sizeof(l), "i=\"%d\"", i);
            m[i] = pg_metric_gauge("t_churn", "h", l);
        }
    }
    __atomic_store_n(&churn_done, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    CHECK(pages > 0);
    char *text = render();
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, "\nt_churn{")) != NULL; p++) {
        n++;
    }
    CHECK_INT((int64_t)n, N);
    free(text);
    for (int i = 0; i < N; i++) {
        pg_metric_remove(m[i]);
    }
}

PG_TEST_MAIN(PG_CASE(test_families_are_grouped), PG_CASE(test_histogram_and_fn_gauge),
             PG_CASE(test_remove_series), PG_CASE(test_sharded_counter_sums_threads),
             PG_CASE(test_many_series_scale), PG_CASE(test_render_during_churn))
