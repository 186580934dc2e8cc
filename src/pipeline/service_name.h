/* SPDX-License-Identifier: Apache-2.0
 * "service.name is never missing": after a pipeline's processors, a resource
 * without service.name gets the receiver's default_service_name or
 * unknown_service:<basename of the main mapping>, as the SDK spec does. */
#ifndef PG_PIPELINE_SERVICE_NAME_H
#define PG_PIPELINE_SERVICE_NAME_H

#include <stdbool.h>

#include "pipeline/batch.h"
#include "core/metrics.h"

/* True when some ResourceProfiles of @b has no non-empty service.name. */
bool pg_service_name_missing(const struct pg_batch *b);
/* Sets the fallback on every resource that lacks it (b must be mutable);
 * counts each one on @counter (may be NULL). Returns true if any was set. */
bool pg_service_name_ensure(struct pg_batch *b, struct pg_metric *counter);

#endif
