/* SPDX-License-Identifier: Apache-2.0
 * The collector's per-receiver sample counters, defined once for every
 * receiver transport (push over HTTP, scrape, the heap sampler's own
 * profiles) so their names and help texts cannot drift apart. */
#ifndef PG_PIPELINE_RECEIVER_METRICS_H
#define PG_PIPELINE_RECEIVER_METRICS_H

struct pg_metric;

/* otelcol_receiver_accepted_profile_samples and
 * otelcol_receiver_refused_profile_samples with @labels (e.g.
 * receiver="pprof",transport="http"); the registry owns both metrics. */
void pg_receiver_sample_counters(const char *labels, struct pg_metric **accepted,
                                 struct pg_metric **refused);

#endif
