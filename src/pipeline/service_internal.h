/* SPDX-License-Identifier: Apache-2.0
 * The service's own structures, shared by its graph building
 * (service_build.c), data path (service_fanout.c), lifecycle (service.c) and
 * telemetry config (service_telemetry.c). Calls go one way: build -> fanout,
 * telemetry, lifecycle; none of them calls back into the build. */
#ifndef PG_PIPELINE_SERVICE_INTERNAL_H
#define PG_PIPELINE_SERVICE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/config.h"
#include "core/log.h"
#include "core/metrics.h"
#include "pipeline/component.h"
#include "pipeline/service.h"

struct event;

/* SVC_DELAYING: a shutdown signal came and service::shutdown_delay runs:
 * health says not ready while receivers keep taking pushes. */
enum svc_state { SVC_BUILT = 0, SVC_STARTING, SVC_RUNNING, SVC_DELAYING, SVC_DRAINING, SVC_STOPPED };

struct instance;

/* A receiver's consumer: fans its batches out over the pipelines it feeds. */
struct fanout {
    struct pg_consumer base; /* must be first */
    struct pg_service *svc;
    struct pipeline **pipes; /* in service arena */
    size_t n;
};

struct instance {
    const struct pg_component_ops *ops;
    enum pg_kind kind;
    char *id;       /* "type" or "type/name" */
    char *log_name; /* "receiver/pprof/self" */
    const struct pg_cfg_node *def; /* the component's definition (for positions) */
    const struct pg_cfg_node *key; /* its key node */
    void *state;
    bool created, started, shut;
    struct fanout fan; /* receivers only */
};

struct pipeline {
    char *id;
    struct instance **procs; /* owned instances, one per pipeline */
    size_t n_procs;
    struct instance **exps; /* shared instances */
    size_t n_exps;
};

/* A component definition in receivers:/processors:/exporters:/extensions:. */
struct def {
    enum pg_kind kind;
    char *id;
    const struct pg_cfg_node *key;
    const struct pg_cfg_node *node;
    const struct pg_component_ops *ops;
    bool used;
    struct instance *inst; /* receivers, exporters, extensions: the one instance */
};

struct pg_service {
    struct pg_arena *arena; /* owned: everything below */
    struct pg_config *cfg;  /* borrowed */
    struct pg_host host;
    struct pg_diag *diag;   /* borrowed during build */
    struct def *defs;
    size_t n_defs;
    struct pipeline *pipes;
    size_t n_pipes;
    struct instance **order; /* start order: extensions, exporters, processors, receivers */
    size_t n_order;
    /* Read by every loop at the pipeline entry (atomics; written by the
     * main thread). The entry itself takes no lock: receivers with several
     * loops run processors and exporters concurrently, each call on its own
     * batch, and components marked any_thread keep their shared state safe. */
    enum svc_state state;
    bool exporters_shut; /* shutdown: exporters told once receivers are idle */
    struct event *drain_timer;
    int64_t drain_deadline_ns;
    /* service::shutdown_delay (0 = none): after the first signal, how long
     * receivers keep accepting while health reports not ready. Main thread,
     * except delay_accepted (pushes taken during the delay, any loop). */
    int64_t shutdown_delay_ns;
    struct event *delay_timer;
    int64_t delay_end_ns;
    int64_t drain_budget_ns; /* the drain deadline, counted from the delay's end */
    uint64_t delay_accepted;
    struct pg_metric *m_fallbacks;
    const char *log_paths[PG_LOG_MAX_OUTPUTS]; /* telemetry.logs.output_paths (config arena) */
    size_t n_log_paths;
};

/* The state, read by any loop (acquire), written by the main thread only. */
static inline enum svc_state pg_svc_state(const struct pg_service *svc)
{
    return __atomic_load_n(&svc->state, __ATOMIC_ACQUIRE);
}

static inline void pg_svc_set_state(struct pg_service *svc, enum svc_state state)
{
    __atomic_store_n(&svc->state, state, __ATOMIC_RELEASE);
}

/* Makes @f the consumer a receiver instance of @svc pushes into (its pipes
 * are filled by the build). */
void pg_svc_fanout_init(struct fanout *f, struct pg_service *svc);

/* Checks and applies service.telemetry (@tel may be NULL); sets the metrics
 * address and its config node (NULL when unset). */
void pg_service_apply_telemetry(struct pg_service *svc, const struct pg_cfg_node *tel,
                                const char **metrics_addr, const struct pg_cfg_node **metrics_node);

#endif
