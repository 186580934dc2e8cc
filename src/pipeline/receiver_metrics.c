/* SPDX-License-Identifier: Apache-2.0
 * The receiver sample counters (see receiver_metrics.h). */
#include "pipeline/receiver_metrics.h"

#include "core/metrics.h"

void pg_receiver_sample_counters(const char *labels, struct pg_metric **accepted,
                                 struct pg_metric **refused)
{
    *accepted = pg_metric_counter("otelcol_receiver_accepted_profile_samples",
                                  "Profile sample records pushed into the pipeline.", labels);
    *refused = pg_metric_counter("otelcol_receiver_refused_profile_samples",
                                 "Profile sample records the pipeline refused.", labels);
}
