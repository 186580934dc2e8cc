/* SPDX-License-Identifier: Apache-2.0
 * Self-telemetry: a process-wide registry of counters, gauges and histograms,
 * rendered as Prometheus text. Series are found by hash (registration and
 * removal O(1), for thousands of scrape targets), created once and
 * updated lock-free with atomics on the hot path (counters in cache-line shards
 * that threads add to without sharing, summed when read). */
#ifndef PG_CORE_METRICS_H
#define PG_CORE_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pg_metric; /* one series: name + label set */

/* Returns the series for @name{@labels}, creating it on first use. @labels is
 * Prometheus label text without braces (`exporter="otlp",reason="timeout"`)
 * or NULL. @help is used the first time @name is seen. Never NULL: on OOM a
 * shared sink series is returned. Thread-safe. */
struct pg_metric *pg_metric_counter(const char *name, const char *help, const char *labels);
struct pg_metric *pg_metric_gauge(const char *name, const char *help, const char *labels);
/* Buckets are upper bounds (ascending, seconds or bytes); copied. */
struct pg_metric *pg_metric_histogram(const char *name, const char *help, const char *labels,
                                      const double *buckets, size_t n_buckets);

void pg_metric_add(struct pg_metric *m, uint64_t v);       /* counters and gauges */
void pg_metric_sub(struct pg_metric *m, uint64_t v);       /* gauges */
void pg_metric_set(struct pg_metric *m, int64_t v);        /* gauges */
void pg_metric_observe(struct pg_metric *m, double v);     /* histograms */
int64_t pg_metric_value(const struct pg_metric *m);        /* counters/gauges; for tests */

/* Gauges computed at render time (RSS, uptime, queue sizes). */
typedef int64_t (*pg_metric_fn)(void *arg);
void pg_metric_gauge_fn(const char *name, const char *help, const char *labels, pg_metric_fn fn,
                        void *arg);

/* Removes and frees the series whose name starts with @name_prefix and whose
 * label text is @labels or begins with @labels followed by more labels
 * (`job="a"` matches `job="a",reason="x"`, not `job="ab"`). For series of
 * things that go away: the caller guarantees nobody still holds a pointer to
 * a removed series. Walks the families of @name_prefix (O(their series)).
 * Returns how many were removed. */
size_t pg_metrics_remove(const char *name_prefix, const char *labels);
/* Removes and frees one series in O(1) (same caller guarantee). NULL is a no-op. */
void pg_metric_remove(struct pg_metric *m);
/* How many series the registry holds (cardinality). */
size_t pg_metrics_series(void);

/* Writes the whole registry in Prometheus text format 0.0.4, then the gauge
 * pprofgate_metric_series (how many series it holds). Formats a snapshot
 * without holding the registry's lock (registration and removal never wait
 * for it); any thread. */
void pg_metrics_render(FILE *out);

#endif
