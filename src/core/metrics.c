/* SPDX-License-Identifier: Apache-2.0
 * Metric registry: series in a mutex-guarded list (created rarely), values
 * updated with relaxed atomics (often); counters in per-thread shards. */
#include "core/metrics.h"

#include <math.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum metric_type { M_COUNTER, M_GAUGE, M_HISTOGRAM, M_GAUGE_FN };

/* A counter is added to from every event loop and worker on each request; one atomic word
 * bounced its cache line between cores (perf: pg_metric_add grew with the second loop). So
 * a counter is SHARDS words, one cache line each; a thread adds to its own (threads are
 * spread over them round-robin) and readers sum them: exact, as every add lands in one. */
#define SHARDS 8
#define LINE 64

struct shard {
    int64_t v;
    char pad[LINE - sizeof(int64_t)];
};

struct pg_metric {
    struct pg_metric *next;
    enum metric_type type;
    char *name;
    char *help;
    char *labels;
    int64_t value;          /* gauges */
    struct shard *shards;   /* counters: SHARDS, owned */
    /* histograms */
    size_t n_buckets;
    double *bounds;
    uint64_t *counts; /* n_buckets + 1 (+Inf) */
    uint64_t sum_bits; /* double, updated by CAS */
    uint64_t count;
    pg_metric_fn fn;
    void *fn_arg;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pg_metric *reg_head;
static struct pg_metric *reg_tail;
static struct pg_metric sink;

static int same(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return strcmp(a, b) == 0;
}

static void metric_free(struct pg_metric *m)
{
    free(m->name);
    free(m->help);
    free(m->labels);
    free(m->bounds);
    free(m->counts);
    free(m->shards);
    free(m);
}

static struct pg_metric *lookup_or_add(enum metric_type type, const char *name, const char *help,
                                       const char *labels, const double *buckets, size_t nb)
{
    struct pg_metric *m;

    if (labels != NULL && labels[0] == '\0') {
        labels = NULL;
    }
    pthread_mutex_lock(&reg_lock);
    for (m = reg_head; m != NULL; m = m->next) {
        if (strcmp(m->name, name) == 0 && same(m->labels, labels)) {
            pthread_mutex_unlock(&reg_lock);
            return m;
        }
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        pthread_mutex_unlock(&reg_lock);
        return &sink;
    }
    m->type = type;
    m->name = strdup(name);
    m->help = strdup(help ? help : "");
    m->labels = labels ? strdup(labels) : NULL;
    if (type == M_HISTOGRAM) {
        m->n_buckets = nb;
        m->bounds = calloc(nb ? nb : 1, sizeof(double));
        m->counts = calloc(nb + 1, sizeof(uint64_t));
        if (m->bounds != NULL && nb > 0) {
            memcpy(m->bounds, buckets, nb * sizeof(double));
        }
    }
    if (type == M_COUNTER) {
        m->shards = aligned_alloc(LINE, SHARDS * sizeof(struct shard));
        if (m->shards != NULL) {
            memset(m->shards, 0, SHARDS * sizeof(struct shard));
        }
    }
    if (m->name == NULL || m->help == NULL || (labels && m->labels == NULL) ||
        (type == M_HISTOGRAM && (m->bounds == NULL || m->counts == NULL)) ||
        (type == M_COUNTER && m->shards == NULL)) {
        metric_free(m);
        pthread_mutex_unlock(&reg_lock);
        return &sink;
    }
    /* Appended so series of one family stay together when registered together. */
    if (reg_tail == NULL) {
        reg_head = reg_tail = m;
    } else {
        reg_tail->next = m;
        reg_tail = m;
    }
    pthread_mutex_unlock(&reg_lock);
    return m;
}

struct pg_metric *pg_metric_counter(const char *name, const char *help, const char *labels)
{
    return lookup_or_add(M_COUNTER, name, help, labels, NULL, 0);
}

struct pg_metric *pg_metric_gauge(const char *name, const char *help, const char *labels)
{
    return lookup_or_add(M_GAUGE, name, help, labels, NULL, 0);
}

struct pg_metric *pg_metric_histogram(const char *name, const char *help, const char *labels,
                                      const double *buckets, size_t n_buckets)
{
    return lookup_or_add(M_HISTOGRAM, name, help, labels, buckets, n_buckets);
}

void pg_metric_gauge_fn(const char *name, const char *help, const char *labels, pg_metric_fn fn,
                        void *arg)
{
    struct pg_metric *m = lookup_or_add(M_GAUGE_FN, name, help, labels, NULL, 0);

    if (m != &sink) {
        pthread_mutex_lock(&reg_lock);
        m->fn = fn;
        m->fn_arg = arg;
        pthread_mutex_unlock(&reg_lock);
    }
}

/* The calling thread's shard, assigned on first use. */
static unsigned my_shard(void)
{
    static unsigned next;
    static __thread unsigned mine; /* 1 + shard; 0 before the first use */

    if (mine == 0) {
        mine = 1 + __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % SHARDS;
    }
    return mine - 1;
}

/* The word @m's updates from this thread go to (the sink has no shards). */
static int64_t *slot(struct pg_metric *m)
{
    return m->shards != NULL ? &m->shards[my_shard()].v : &m->value;
}

void pg_metric_add(struct pg_metric *m, uint64_t v)
{
    __atomic_add_fetch(slot(m), (int64_t)v, __ATOMIC_RELAXED);
}

void pg_metric_sub(struct pg_metric *m, uint64_t v)
{
    __atomic_sub_fetch(slot(m), (int64_t)v, __ATOMIC_RELAXED);
}

void pg_metric_set(struct pg_metric *m, int64_t v)
{
    if (m->shards != NULL) {
        /* Counters are not set on the hot path; adds racing with this may be lost. */
        for (size_t i = 1; i < SHARDS; i++) {
            __atomic_store_n(&m->shards[i].v, 0, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&m->shards[0].v, v, __ATOMIC_RELAXED);
        return;
    }
    __atomic_store_n(&m->value, v, __ATOMIC_RELAXED);
}

int64_t pg_metric_value(const struct pg_metric *m)
{
    int64_t sum = 0;

    if (m->shards == NULL) {
        return __atomic_load_n(&m->value, __ATOMIC_RELAXED);
    }
    for (size_t i = 0; i < SHARDS; i++) {
        sum += __atomic_load_n(&m->shards[i].v, __ATOMIC_RELAXED);
    }
    return sum;
}

void pg_metric_observe(struct pg_metric *m, double v)
{
    size_t i;
    uint64_t old_bits;
    uint64_t new_bits;
    double sum;

    if (m->type != M_HISTOGRAM || m->counts == NULL) {
        return;
    }
    for (i = 0; i < m->n_buckets && v > m->bounds[i]; i++) {
    }
    __atomic_add_fetch(&m->counts[i], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&m->count, 1, __ATOMIC_RELAXED);
    old_bits = __atomic_load_n(&m->sum_bits, __ATOMIC_RELAXED);
    do {
        memcpy(&sum, &old_bits, sizeof(sum));
        sum += v;
        memcpy(&new_bits, &sum, sizeof(sum));
    } while (!__atomic_compare_exchange_n(&m->sum_bits, &old_bits, new_bits, true,
                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

static const char *type_name(enum metric_type t)
{
    switch (t) {
    case M_COUNTER:
        return "counter";
    case M_HISTOGRAM:
        return "histogram";
    default:
        return "gauge";
    }
}

static void print_series(FILE *out, const char *name, const char *suffix, const char *labels,
                         const char *extra)
{
    fprintf(out, "%s%s", name, suffix);
    if (labels != NULL || extra != NULL) {
        fprintf(out, "{%s%s%s}", labels ? labels : "", (labels && extra) ? "," : "",
                extra ? extra : "");
    }
}

static void render_series(FILE *out, struct pg_metric *m)
{
    if (m->type == M_HISTOGRAM) {
        uint64_t cum = 0;
        double sum;
        uint64_t bits = __atomic_load_n(&m->sum_bits, __ATOMIC_RELAXED);
        char le[64];
        memcpy(&sum, &bits, sizeof(sum));
        for (size_t i = 0; i <= m->n_buckets; i++) {
            cum += __atomic_load_n(&m->counts[i], __ATOMIC_RELAXED);
            if (i < m->n_buckets) {
                snprintf(le, sizeof(le), "le=\"%g\"", m->bounds[i]);
            } else {
                snprintf(le, sizeof(le), "le=\"+Inf\"");
            }
            print_series(out, m->name, "_bucket", m->labels, le);
            fprintf(out, " %llu\n", (unsigned long long)cum);
        }
        print_series(out, m->name, "_sum", m->labels, NULL);
        fprintf(out, " %.9g\n", sum);
        print_series(out, m->name, "_count", m->labels, NULL);
        fprintf(out, " %llu\n", (unsigned long long)__atomic_load_n(&m->count, __ATOMIC_RELAXED));
    } else {
        int64_t v = m->type == M_GAUGE_FN && m->fn ? m->fn(m->fn_arg) : pg_metric_value(m);
        print_series(out, m->name, "", m->labels, NULL);
        fprintf(out, " %lld\n", (long long)v);
    }
}

/* True when @labels is @want or @want followed by more labels. */
static bool labels_extend(const char *labels, const char *want)
{
    size_t n = strlen(want);

    return labels != NULL && strncmp(labels, want, n) == 0 &&
           (labels[n] == '\0' || labels[n] == ',');
}

size_t pg_metrics_remove(const char *name_prefix, const char *labels)
{
    size_t removed = 0;
    struct pg_metric *prev = NULL;

    if (labels == NULL || labels[0] == '\0') {
        return 0;
    }
    pthread_mutex_lock(&reg_lock);
    for (struct pg_metric *m = reg_head; m != NULL;) {
        struct pg_metric *next = m->next;

        if (strncmp(m->name, name_prefix, strlen(name_prefix)) == 0 &&
            labels_extend(m->labels, labels)) {
            if (prev == NULL) {
                reg_head = next;
            } else {
                prev->next = next;
            }
            if (reg_tail == m) {
                reg_tail = prev;
            }
            metric_free(m);
            removed++;
        } else {
            prev = m;
        }
        m = next;
    }
    pthread_mutex_unlock(&reg_lock);
    return removed;
}

void pg_metrics_render(FILE *out)
{
    pthread_mutex_lock(&reg_lock);
    /* The text format wants every series of a family in one group, under
     * one HELP/TYPE: walk families in first-registered order. */
    for (struct pg_metric *m = reg_head; m != NULL; m = m->next) {
        bool first = true;
        for (struct pg_metric *p = reg_head; p != m; p = p->next) {
            if (strcmp(p->name, m->name) == 0) {
                first = false;
                break;
            }
        }
        if (!first) {
            continue;
        }
        fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
                type_name(m->type));
        for (struct pg_metric *q = m; q != NULL; q = q->next) {
            if (strcmp(q->name, m->name) == 0) {
                render_series(out, q);
            }
        }
    }
    pthread_mutex_unlock(&reg_lock);
}
