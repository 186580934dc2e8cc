/* SPDX-License-Identifier: Apache-2.0
 * The service: builds every component instance and pipeline from a loaded
 * config (the collector's graph: receivers -> per-pipeline processors ->
 * fan-out to exporters), starts them downstream-first, and drains them on
 * shutdown within a deadline. Core code: the component registry is passed in. */
#ifndef PG_PIPELINE_SERVICE_H
#define PG_PIPELINE_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "pipeline/component.h"
#include "core/config.h"

struct event_base;
struct pg_service;

/* Binds @cfg and creates every instance (no sockets yet). All problems go to
 * @diag; returns NULL when there was any (and nothing is left allocated).
 * @cfg must outlive the service. */
struct pg_service *pg_service_build(struct pg_config *cfg,
                                    const struct pg_component_ops *const *registry, size_t n_registry,
                                    struct event_base *base, struct pg_diag *diag);
/* Starts extensions, exporters, processors, receivers. On failure stops
 * what started and returns the error with a message. */
PG_MUST_CHECK
enum pg_err pg_service_start(struct pg_service *svc, struct pg_status *st);
/* Begins a graceful stop: health turns 503 at once; with
 * service::shutdown_delay, receivers keep accepting (and answering) for that
 * long; then receivers stop accepting and exporters drain; when all are idle
 * (or @deadline_ns after the delay passed) every instance is destroyed and
 * the loop is told to exit. Idempotent. */
void pg_service_shutdown(struct pg_service *svc, int64_t deadline_ns);
/* While the shutdown delay runs: ends it now (the drain begins) and returns
 * true. Otherwise false (nothing to cut short). */
bool pg_service_end_delay(struct pg_service *svc);
/* Frees the service (after the loop ended). Destroys instances if needed. */
void pg_service_free(struct pg_service *svc);
bool pg_service_running(const struct pg_service *svc);

/* The keys of the service: section, for `pprofgate components`. */
extern const struct pg_field pg_service_doc_fields[];

#endif
