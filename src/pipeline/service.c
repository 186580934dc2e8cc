/* SPDX-License-Identifier: Apache-2.0
 * The service's lifecycle: starts the instances graph building made
 * (extensions, exporters, processors, receivers), the shutdown delay, the
 * drain of receivers then exporters within a deadline, and the free; plus the
 * kind names and registry lookup every part of the service uses. */
#include "pipeline/service.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "pipeline/service_internal.h"

#define DRAIN_POLL_MS 50

const char *pg_kind_name(enum pg_kind kind)
{
    static const char *const n[] = {"receiver", "processor", "exporter", "extension"};
    return (unsigned)kind < 4 ? n[kind] : "component";
}

const char *pg_kind_section(enum pg_kind kind)
{
    static const char *const n[] = {"receivers", "processors", "exporters", "extensions"};
    return (unsigned)kind < 4 ? n[kind] : "components";
}

const struct pg_component_ops *pg_component_find(const struct pg_component_ops *const *registry,
                                                 size_t n, enum pg_kind kind, const char *type)
{
    for (size_t i = 0; i < n; i++) {
        const struct pg_component_ops *o = registry[i];
        if (o == NULL || o->kind != kind) {
            continue;
        }
        if (strcmp(o->type, type) == 0 || (o->alias != NULL && strcmp(o->alias, type) == 0)) {
            return o;
        }
    }
    return NULL;
}

bool pg_host_ready(const struct pg_host *host)
{
    return host != NULL && host->service != NULL && pg_svc_state(host->service) == SVC_RUNNING;
}

bool pg_service_running(const struct pg_service *svc)
{
    return pg_svc_state(svc) == SVC_RUNNING;
}

/* ---- lifecycle ---------------------------------------------------------- */

/* Extensions, exporters, processors, receivers: what each needs is started before it. */
#define START_RANKS 4

static int start_rank(enum pg_kind k)
{
    switch (k) {
    case PG_KIND_EXTENSION:
        return 0;
    case PG_KIND_EXPORTER:
        return 1;
    case PG_KIND_PROCESSOR:
        return 2;
    default:
        return 3;
    }
}

enum pg_err pg_service_start(struct pg_service *svc, struct pg_status *st)
{
    char why[512];

    if (svc->n_log_paths > 0 &&
        !pg_log_open_outputs(svc->log_paths, svc->n_log_paths, why, sizeof(why))) {
        return pg_status_set(st, PG_ERR_IO, "service::telemetry::logs::output_paths: %s", why);
    }
    pg_svc_set_state(svc, SVC_STARTING);
    for (int rank = 0; rank < START_RANKS; rank++) {
        for (size_t i = 0; i < svc->n_order; i++) {
            struct instance *in = svc->order[i];
            enum pg_err err;
            if (start_rank(in->kind) != rank || in->started) {
                continue;
            }
            if (in->ops->start != NULL) {
                pg_status_clear(st);
                err = in->ops->start(in->state, st);
                if (err != PG_ERR_OK) {
                    struct pg_status inner = *st;
                    pg_status_set(st, err, "%s failed to start: %s", in->log_name,
                                  pg_status_text(&inner));
                    return err;
                }
            }
            in->started = true;
            pg_log_debug("service", "%s started", in->log_name);
        }
    }
    pg_svc_set_state(svc, SVC_RUNNING);
    return PG_ERR_OK;
}

static void shutdown_kind(struct pg_service *svc, enum pg_kind kind)
{
    for (size_t i = svc->n_order; i-- > 0;) {
        struct instance *in = svc->order[i];
        if (in->kind == kind && !in->shut) {
            if (in->ops->shutdown != NULL) {
                in->ops->shutdown(in->state);
            }
            in->shut = true;
        }
    }
}

static void destroy_all(struct pg_service *svc)
{
    for (size_t i = svc->n_order; i-- > 0;) {
        struct instance *in = svc->order[i];
        if (in->created) {
            if (!in->shut && in->ops->shutdown != NULL) {
                in->ops->shutdown(in->state);
            }
            in->shut = true;
            if (in->ops->destroy != NULL) {
                in->ops->destroy(in->state);
            }
            in->created = false;
        }
    }
}

/* Every component of @kind (or of every kind, -1) has nothing in flight. */
static bool kind_idle(struct pg_service *svc, int kind)
{
    for (size_t i = 0; i < svc->n_order; i++) {
        struct instance *in = svc->order[i];
        if (kind >= 0 && in->kind != (enum pg_kind)kind) {
            continue;
        }
        if (in->created && in->ops->idle != NULL && !in->ops->idle(in->state)) {
            return false;
        }
    }
    return true;
}

static void drain_tick(evutil_socket_t fd, short what, void *arg)
{
    struct pg_service *svc = arg;
    struct timeval tv = {0, DRAIN_POLL_MS * 1000};
    bool late = pg_mono_ns() >= svc->drain_deadline_ns;
    bool idle;

    (void)fd;
    (void)what;
    /* Exporters refuse intake once told to shut down: they are told only
     * when every receiver loop has answered what it accepted (and whatever
     * they consumed is queued), so nothing accepted meets a closed exporter.
     * Their consumers keep sending meanwhile. */
    if (!svc->exporters_shut &&
        (late || (kind_idle(svc, PG_KIND_RECEIVER) && kind_idle(svc, PG_KIND_PROCESSOR)))) {
        shutdown_kind(svc, PG_KIND_EXPORTER);
        svc->exporters_shut = true;
    }
    idle = svc->exporters_shut && kind_idle(svc, -1);
    if (!idle && !late) {
        event_add(svc->drain_timer, &tv);
        return;
    }
    if (!idle) {
        pg_log_warn("service", "drain deadline passed with data still in flight; each "
                               "exporter says what stays in its spool or was dropped");
    }
    shutdown_kind(svc, PG_KIND_EXTENSION);
    destroy_all(svc);
    pg_svc_set_state(svc, SVC_STOPPED);
    pg_log_info("service", "stopped");
    event_base_loopexit(svc->host.base, NULL);
}

/* The drain proper: receivers stop accepting (and answer what they hold),
 * exporters drain until idle or the deadline. */
static void begin_drain(struct pg_service *svc)
{
    struct timeval tv = {0, 0};

    pg_log_info("service", "shutting down: receivers stop accepting, exporters drain "
                           "(up to %.0fs)", (double)svc->drain_budget_ns / 1e9);
    pg_svc_set_state(svc, SVC_DRAINING);
    shutdown_kind(svc, PG_KIND_RECEIVER);
    shutdown_kind(svc, PG_KIND_PROCESSOR);
    svc->drain_deadline_ns = pg_mono_ns() + svc->drain_budget_ns;
    svc->drain_timer = evtimer_new(svc->host.base, drain_tick, svc);
    if (svc->drain_timer == NULL) {
        drain_tick(-1, 0, svc);
        return;
    }
    event_add(svc->drain_timer, &tv);
}

static uint64_t delay_accepted(struct pg_service *svc)
{
    return __atomic_load_n(&svc->delay_accepted, __ATOMIC_RELAXED);
}

static void on_delay_over(evutil_socket_t fd, short what, void *arg)
{
    struct pg_service *svc = arg;

    (void)fd;
    (void)what;
    pg_log_info("service", "shutdown delay over: %" PRIu64 " request(s) accepted during it",
                delay_accepted(svc));
    begin_drain(svc);
}

void pg_service_shutdown(struct pg_service *svc, int64_t deadline_ns)
{
    enum svc_state state = pg_svc_state(svc);

    if (state == SVC_DELAYING || state == SVC_DRAINING || state == SVC_STOPPED) {
        return;
    }
    svc->drain_budget_ns = deadline_ns;
    if (svc->shutdown_delay_ns > 0 && state == SVC_RUNNING) {
        struct timeval tv = pg_ns_to_tv(svc->shutdown_delay_ns);

        svc->delay_timer = evtimer_new(svc->host.base, on_delay_over, svc);
        if (svc->delay_timer != NULL && evtimer_add(svc->delay_timer, &tv) == 0) {
            /* Health turns 503 now (pg_host_ready): load balancers and the
             * kubelet stop routing here while the delay runs. */
            pg_svc_set_state(svc, SVC_DELAYING);
            svc->delay_end_ns = pg_mono_ns() + svc->shutdown_delay_ns;
            pg_log_info("service",
                        "shutting down: health reports not ready; receivers keep accepting "
                        "for %.1fs (service::shutdown_delay) so clients can send their last "
                        "profiles; a second signal ends the delay",
                        (double)svc->shutdown_delay_ns / 1e9);
            return;
        }
    }
    begin_drain(svc);
}

bool pg_service_end_delay(struct pg_service *svc)
{
    if (pg_svc_state(svc) != SVC_DELAYING) {
        return false;
    }
    evtimer_del(svc->delay_timer);
    pg_log_info("service", "shutdown delay cut short with %.1fs left: %" PRIu64
                " request(s) accepted during it",
                (double)(svc->delay_end_ns - pg_mono_ns()) / 1e9, delay_accepted(svc));
    begin_drain(svc);
    return true;
}

void pg_service_free(struct pg_service *svc)
{
    if (svc == NULL) {
        return;
    }
    destroy_all(svc);
    if (svc->drain_timer != NULL) {
        event_free(svc->drain_timer);
    }
    if (svc->delay_timer != NULL) {
        event_free(svc->delay_timer);
    }
    pg_arena_destroy(svc->arena);
    free(svc);
}

