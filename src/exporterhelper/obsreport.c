/* SPDX-License-Identifier: Apache-2.0
 * The exporter's own metrics as the queue and consumers change them: drops
 * by reason, and the queue size and in-flight gauges. Under the exporter's
 * lock. */
#include <stdio.h>

#include "exporterhelper/internal.h"

void pg_exph_count_drop(struct pg_exph *h, const char *reason, size_t samples)
{
    char labels[256];

    snprintf(labels, sizeof(labels), "%s,reason=\"%s\"", h->labels, reason);
    pg_metric_add(pg_metric_counter("pprofgate_exporter_dropped_profile_samples",
                                    "Samples the exporter gave up on, by reason", labels),
                  samples);
    pg_metric_add(h->m_failed, samples);
}

/* Gauges are pushed on every change (a render-time callback could outlive us). */
void pg_exph_update_gauges(struct pg_exph *h)
{
    if (h->m_qsize != NULL) {
        pg_metric_set(h->m_qsize, h->sizer == PG_EXPH_SIZER_REQUESTS
                                      ? (int64_t)(h->q_len + (h->pending != NULL))
                                      : (int64_t)h->q_used);
        pg_metric_set(h->m_inflight, (int64_t)h->busy);
    }
}
