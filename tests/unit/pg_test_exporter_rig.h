/* SPDX-License-Identifier: Apache-2.0
 * The rig the exporter tests share (test_otlp_exporter, test_otlphttp_exporter):
 * one exporter component created from a YAML config on its own event base,
 * with no pipeline around it, started, fed synthetic batches (test_otlp_util.h),
 * its counters read by name, and shut down with a bounded drain. One thread. */
#ifndef PG_TEST_EXPORTER_RIG_H
#define PG_TEST_EXPORTER_RIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "core/config.h"
#include "core/metrics.h"
#include "pipeline/batch.h"
#include "pipeline/component.h"
#include "test_otlp_util.h"

/* @ops created from @cfg's root as component @id of @host (NULL: a host with no event
 * base), with no pipeline around it; @diag (initialised here) collects config errors. */
static inline enum pg_err rig_component_create(const struct pg_component_ops *ops,
                                               struct pg_config *cfg, struct pg_host *host,
                                               const char *id, struct pg_diag *diag,
                                               void **state)
{
    static struct pg_host bare = {NULL, "test", NULL};
    struct pg_component_ctx ctx;

    pg_diag_init(diag);
    memset(&ctx, 0, sizeof(ctx));
    ctx.host = host != NULL ? host : &bare;
    ctx.id = id;
    ctx.log_name = id;
    ctx.config = cfg->root;
    ctx.config_arena = cfg->arena;
    ctx.diag = diag;
    return ops->create(&ctx, state);
}

struct rig {
    const struct pg_component_ops *ops;
    int drain_ms; /* how long rig_destroy waits for the exporter to go idle */
    struct event_base *base;
    struct pg_host host;
    struct pg_config *cfg;
    struct pg_diag diag;
    void *state;
    char id[64];
    char labels[96];
};

/* Creates and starts @ops as @id from @yaml; false (said on stderr) when it cannot. */
static inline bool rig_start(struct rig *r, const struct pg_component_ops *ops, int drain_ms,
                             const char *id, const char *yaml)
{
    struct pg_status st;

    memset(r, 0, sizeof(*r));
    r->ops = ops;
    r->drain_ms = drain_ms;
    snprintf(r->id, sizeof(r->id), "%s", id);
    snprintf(r->labels, sizeof(r->labels), "exporter=\"%s\"", id);
    r->base = event_base_new();
    r->host.base = r->base;
    r->host.version = "test";
    r->cfg = pg_config_load_string("test.yaml", yaml, strlen(yaml));
    if (r->cfg == NULL || r->cfg->diag.n > 0 ||
        rig_component_create(ops, r->cfg, &r->host, r->id, &r->diag, &r->state) != PG_ERR_OK) {
        for (size_t i = 0; i < r->diag.n; i++) {
            fprintf(stderr, "  config: %s\n", r->diag.msgs[i]);
        }
        return false;
    }
    pg_status_clear(&st);
    if (ops->start(r->state, &st) != PG_ERR_OK) {
        fprintf(stderr, "  start: %s\n", pg_status_text(&st));
        return false;
    }
    return true;
}

static inline void rig_spin(struct rig *r, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    event_base_loopexit(r->base, &tv);
    event_base_dispatch(r->base);
}

static inline int64_t metric(const struct rig *r, const char *name)
{
    return pg_metric_value(pg_metric_counter(name, "test", r->labels));
}

static inline int64_t dropped(const struct rig *r, const char *reason)
{
    char labels[192];

    snprintf(labels, sizeof(labels), "%s,reason=\"%s\"", r->labels, reason);
    return pg_metric_value(
        pg_metric_counter("pprofgate_exporter_dropped_profile_samples", "test", labels));
}

static inline int64_t sent(const struct rig *r)
{
    return metric(r, "otelcol_exporter_sent_profile_samples");
}

static inline int64_t failed(const struct rig *r)
{
    return metric(r, "otelcol_exporter_send_failed_profile_samples");
}

/* Runs the loop until sent+failed reaches @want or @ms pass. */
static inline void rig_wait(struct rig *r, int64_t want, int ms)
{
    for (int t = 0; t < ms; t += 20) {
        if (sent(r) + failed(r) >= want) {
            return;
        }
        rig_spin(r, 20);
    }
}

static inline void rig_destroy(struct rig *r)
{
    if (r->state != NULL) {
        r->ops->shutdown(r->state);
        for (int t = 0; t < r->drain_ms && !r->ops->idle(r->state); t += 20) {
            rig_spin(r, 20);
        }
        r->ops->destroy(r->state);
    }
    pg_diag_free(&r->diag);
    pg_config_free(r->cfg);
    event_base_free(r->base);
}

/* A synthetic batch of @profiles x @samples for the rig's service, handed to the exporter. */
static inline enum pg_err rig_push(struct rig *r, size_t profiles, size_t samples, unsigned seed)
{
    struct pg_batch *b = tb_batch(profiles, samples, 20, r->id, seed);
    struct pg_status st;
    enum pg_err err;

    pg_status_clear(&st);
    err = r->ops->consume(r->state, b, &st);
    pg_batch_unref(b); /* the exporter took its own reference */
    return err;
}

#endif
