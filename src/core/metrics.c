/* SPDX-License-Identifier: Apache-2.0
 * Metric registry: series in mutex-guarded hash tables (created rarely), values
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

/* Series of one name share a family (HELP, TYPE, the exposition group). */
struct family {
    char *name;                   /* owned */
    char *help;                   /* owned */
    enum metric_type type;
    uint64_t hash;
    struct pg_metric *head, *tail; /* its series, in registration order */
    struct family *next;          /* registration order */
    struct family *hnext;         /* chain in fam_tab */
};

struct pg_metric {
    struct family *fam;     /* borrowed from the registry */
    struct pg_metric *prev, *next; /* in the family, registration order */
    struct pg_metric *hnext;       /* chain in ser_tab */
    uint64_t hash;          /* of name + labels */
    enum metric_type type;
    const char *name;       /* the family's, borrowed */
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

/* Thousands of scrape targets register and drop series at run time, so a
 * series is found by a hash of name + labels and a family by a hash of its
 * name (chained tables that double when full): registration and removal are
 * O(1) under reg_lock, and exposition keeps registration order. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct family *fam_head, *fam_tail;
static struct family **fam_tab;
static size_t fam_cap, fam_n;
static struct pg_metric **ser_tab;
static size_t ser_cap, ser_n;
static struct pg_metric sink;
/* Renders in progress (under reg_lock): while one runs, a removed series is
 * parked on the graveyard (chained by hnext) instead of freed, because the
 * render's snapshot still points at it; the last render to end frees them. */
static size_t renders;
static struct pg_metric *graveyard;

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; s != NULL && *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    }
    return h;
}

static uint64_t name_hash(const char *name)
{
    return fnv(1469598103934665603ULL, name);
}

static uint64_t series_hash(const char *name, const char *labels)
{
    /* 0xff cannot occur in a name: it separates the name from the labels. */
    return fnv((name_hash(name) ^ 0xff) * 1099511628211ULL, labels);
}

/* FNV's low bits depend only on the low bits of each byte, so label sets
 * that differ in a few digits would share buckets: a finaliser spreads them. */
static size_t bucket(uint64_t h, size_t cap)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return (size_t)(h & (cap - 1));
}

static int same(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return strcmp(a, b) == 0;
}

static void metric_free(struct pg_metric *m)
{
    free(m->labels);
    free(m->bounds);
    free(m->counts);
    free(m->shards);
    free(m);
}

/* Doubles the series table; false (table unchanged) on OOM. */
static bool grow_series(void)
{
    size_t cap = ser_cap ? ser_cap * 2 : 256;
    struct pg_metric **t = calloc(cap, sizeof(*t));

    if (t == NULL) {
        return false;
    }
    for (size_t i = 0; i < ser_cap; i++) {
        for (struct pg_metric *m = ser_tab[i], *nx; m != NULL; m = nx) {
            nx = m->hnext;
            m->hnext = t[bucket(m->hash, cap)];
            t[bucket(m->hash, cap)] = m;
        }
    }
    free(ser_tab);
    ser_tab = t;
    ser_cap = cap;
    return true;
}

static bool grow_families(void)
{
    size_t cap = fam_cap ? fam_cap * 2 : 64;
    struct family **t = calloc(cap, sizeof(*t));

    if (t == NULL) {
        return false;
    }
    for (size_t i = 0; i < fam_cap; i++) {
        for (struct family *f = fam_tab[i], *nx; f != NULL; f = nx) {
            nx = f->hnext;
            f->hnext = t[bucket(f->hash, cap)];
            t[bucket(f->hash, cap)] = f;
        }
    }
    free(fam_tab);
    fam_tab = t;
    fam_cap = cap;
    return true;
}

/* The family @name, created (appended to the exposition order) on first use.
 * Families live as long as the process: names are a fixed set in the code. */
static struct family *family_get(enum metric_type type, const char *name, const char *help)
{
    uint64_t h = name_hash(name);
    struct family *f;

    for (f = fam_cap ? fam_tab[bucket(h, fam_cap)] : NULL; f != NULL; f = f->hnext) {
        if (f->hash == h && strcmp(f->name, name) == 0) {
            return f;
        }
    }
    if ((fam_n >= fam_cap && !grow_families()) || (f = calloc(1, sizeof(*f))) == NULL) {
        return NULL;
    }
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    if (f->name == NULL || f->help == NULL) {
        free(f->name);
        free(f->help);
        free(f);
        return NULL;
    }
    f->type = type;
    f->hash = h;
    f->hnext = fam_tab[bucket(h, fam_cap)];
    fam_tab[bucket(h, fam_cap)] = f;
    fam_n++;
    if (fam_tail == NULL) {
        fam_head = f;
    } else {
        fam_tail->next = f;
    }
    fam_tail = f;
    return f;
}

static struct pg_metric *series_find(const char *name, const char *labels, uint64_t h)
{
    for (struct pg_metric *m = ser_cap ? ser_tab[bucket(h, ser_cap)] : NULL; m != NULL;
         m = m->hnext) {
        if (m->hash == h && strcmp(m->name, name) == 0 && same(m->labels, labels)) {
            return m;
        }
    }
    return NULL;
}

/* Unlinks @m from the table and its family; the caller frees it. */
static void series_unlink(struct pg_metric *m)
{
    struct pg_metric **pp = &ser_tab[bucket(m->hash, ser_cap)];

    while (*pp != m) {
        pp = &(*pp)->hnext;
    }
    *pp = m->hnext;
    ser_n--;
    if (m->prev != NULL) {
        m->prev->next = m->next;
    } else {
        m->fam->head = m->next;
    }
    if (m->next != NULL) {
        m->next->prev = m->prev;
    } else {
        m->fam->tail = m->prev;
    }
}

static struct pg_metric *lookup_or_add(enum metric_type type, const char *name, const char *help,
                                       const char *labels, const double *buckets, size_t nb)
{
    struct pg_metric *m;
    struct family *f;
    uint64_t h;

    if (labels != NULL && labels[0] == '\0') {
        labels = NULL;
    }
    h = series_hash(name, labels);
    pthread_mutex_lock(&reg_lock);
    if ((m = series_find(name, labels, h)) != NULL) {
        pthread_mutex_unlock(&reg_lock);
        return m;
    }
    if ((ser_n >= ser_cap && !grow_series()) || (f = family_get(type, name, help)) == NULL ||
        (m = calloc(1, sizeof(*m))) == NULL) {
        pthread_mutex_unlock(&reg_lock);
        return &sink;
    }
    m->type = type;
    m->fam = f;
    m->name = f->name;
    m->hash = h;
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
    if ((labels && m->labels == NULL) ||
        (type == M_HISTOGRAM && (m->bounds == NULL || m->counts == NULL)) ||
        (type == M_COUNTER && m->shards == NULL)) {
        metric_free(m);
        pthread_mutex_unlock(&reg_lock);
        return &sink;
    }
    m->hnext = ser_tab[bucket(h, ser_cap)];
    ser_tab[bucket(h, ser_cap)] = m;
    ser_n++;
    /* Appended: a family's series render in registration order. */
    m->prev = f->tail;
    if (f->tail == NULL) {
        f->head = m;
    } else {
        f->tail->next = m;
    }
    f->tail = m;
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

/* Under reg_lock: frees @m now, or parks it while a render may read it. */
static void retire(struct pg_metric *m)
{
    if (renders > 0) {
        m->hnext = graveyard;
        graveyard = m;
    } else {
        metric_free(m);
    }
}

size_t pg_metrics_remove(const char *name_prefix, const char *labels)
{
    size_t removed = 0, np = strlen(name_prefix);

    if (labels == NULL || labels[0] == '\0') {
        return 0;
    }
    pthread_mutex_lock(&reg_lock);
    for (struct family *f = fam_head; f != NULL; f = f->next) {
        if (strncmp(f->name, name_prefix, np) != 0) {
            continue;
        }
        for (struct pg_metric *m = f->head, *nx; m != NULL; m = nx) {
            nx = m->next;
            if (labels_extend(m->labels, labels)) {
                series_unlink(m);
                retire(m);
                removed++;
            }
        }
    }
    pthread_mutex_unlock(&reg_lock);
    return removed;
}

void pg_metric_remove(struct pg_metric *m)
{
    if (m == NULL || m == &sink) {
        return;
    }
    pthread_mutex_lock(&reg_lock);
    series_unlink(m);
    retire(m);
    pthread_mutex_unlock(&reg_lock);
}

size_t pg_metrics_series(void)
{
    size_t n;

    pthread_mutex_lock(&reg_lock);
    n = ser_n;
    pthread_mutex_unlock(&reg_lock);
    return n;
}

/* The render works on a snapshot: the series pointers are copied under
 * reg_lock and formatted without it, so registrations and removals (scrape
 * target churn on the loop) never wait for formatting, nor a render for
 * them; values are read with atomics as always. The copy is taken
 * SNAP_CHUNK series per hold of the lock (140 000 series are ~10 ms of
 * pointer chasing, and a render thread preempted while holding the lock
 * would stall the loop behind it): between holds nothing is freed (renders
 * > 0 parks removed series), a series' next always points to a later one,
 * so the cursor stays valid and the walk ends. A series removed mid-walk may
 * show once more. Families are never freed, so their names and help stay
 * valid. */
#define SNAP_CHUNK 4096

void pg_metrics_render(FILE *out)
{
    struct pg_metric **snap = NULL, *m;
    struct family *f;
    size_t n = 0, cap = 0, total;
    bool oom = false;

    pthread_mutex_lock(&reg_lock);
    total = ser_n;
    renders++;
    f = fam_head;
    m = f != NULL ? f->head : NULL;
    pthread_mutex_unlock(&reg_lock);
    while (f != NULL) {
        if (n + SNAP_CHUNK > cap) {
            struct pg_metric **t = realloc(snap, (cap + SNAP_CHUNK * 4) * sizeof(*snap));

            if (t == NULL) {
                oom = true;
                break;
            }
            snap = t;
            cap += SNAP_CHUNK * 4;
        }
        pthread_mutex_lock(&reg_lock);
        for (size_t k = 0; k < SNAP_CHUNK && f != NULL;) {
            if (m == NULL) {
                f = f->next;
                m = f != NULL ? f->head : NULL;
                continue;
            }
            snap[n++] = m;
            m = m->next;
            k++;
        }
        pthread_mutex_unlock(&reg_lock);
    }
    if (oom) {
        fputs("# out of memory rendering the registry\n", out);
    }
    /* The text format wants every series of a family in one group under one
     * HELP/TYPE; a family whose series were all removed is left out. */
    for (size_t i = 0; i < n; i++) {
        const struct family *sf = snap[i]->fam;

        if (i == 0 || snap[i - 1]->fam != sf) {
            fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", sf->name, sf->help, sf->name,
                    type_name(sf->type));
        }
        render_series(out, snap[i]);
    }
    /* Cardinality, visible: scrape targets and their churn show up here. */
    fprintf(out, "# HELP pprofgate_metric_series Series in this registry (each scrape target "
                 "adds about 7).\n# TYPE pprofgate_metric_series gauge\n"
                 "pprofgate_metric_series %zu\n", total);
    free(snap);
    pthread_mutex_lock(&reg_lock);
    if (--renders == 0) {
        while (graveyard != NULL) {
            struct pg_metric *g = graveyard;

            graveyard = g->hnext;
            metric_free(g);
        }
    }
    pthread_mutex_unlock(&reg_lock);
}
