/* SPDX-License-Identifier: Apache-2.0
 * The one static table of built-in components (no dlopen, no codegen). */
#include <string.h>

#include "pipeline/component.h"

#define PG_DECLARE(sym) extern const struct pg_component_ops sym
PG_DECLARE(pg_receiver_pprof);
PG_DECLARE(pg_receiver_otlp);
PG_DECLARE(pg_receiver_pyroscope);
PG_DECLARE(pg_processor_transform);
PG_DECLARE(pg_processor_resource);
PG_DECLARE(pg_processor_memory_limiter);
PG_DECLARE(pg_exporter_debug);
PG_DECLARE(pg_exporter_otlp);
PG_DECLARE(pg_exporter_otlphttp);
PG_DECLARE(pg_extension_pprof);
PG_DECLARE(pg_extension_health_check);
PG_DECLARE(pg_extension_file_storage);
PG_DECLARE(pg_extension_telemetry_metrics);

const struct pg_component_ops *const pg_components[] = {
    &pg_receiver_pprof,
    &pg_receiver_otlp,
    &pg_receiver_pyroscope,
    &pg_processor_transform,
    &pg_processor_resource,
    &pg_processor_memory_limiter,
    &pg_exporter_debug,
    &pg_exporter_otlp,
    &pg_exporter_otlphttp,
    &pg_extension_pprof,
    &pg_extension_health_check,
    &pg_extension_file_storage,
    &pg_extension_telemetry_metrics,
    NULL,
};

const size_t pg_components_count = sizeof(pg_components) / sizeof(pg_components[0]) - 1;
