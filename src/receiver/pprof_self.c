/* SPDX-License-Identifier: Apache-2.0
 * The pprof receiver's `self:` source: pprofgate's own heap profile, from the
 * embedded sampler, pushed through the same translation and pipelines as a
 * client's pprof body (see pprof_self.h). Each collection has its own arena,
 * which the batch takes over. */
#include "receiver/pprof_self.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "pipeline/receiver_metrics.h"
#include "otlp/otlp_build.h"
#include "selfprof/selfprof.h"

#define SELF_ARENA_CAP ((size_t)256 << 20)
#define LOG_NAME "receiver/pprof/self"

struct pg_pprof_self {
    struct pg_host *host;       /* borrowed */
    struct pg_consumer *next;   /* borrowed */
    int64_t interval_ns;
    struct pg_translate_opts opts;
    struct event *timer;        /* owned */
    bool told_off;              /* "sampler is off" logged once */
    struct pg_metric *m_accepted, *m_refused, *m_collections;
};

struct pg_pprof_self *pg_pprof_self_create(struct pg_host *host, struct pg_consumer *next,
                                           int64_t interval_ns,
                                           const struct pg_translate_opts *opts)
{
    struct pg_pprof_self *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->host = host;
    s->next = next;
    s->interval_ns = interval_ns > 0 ? interval_ns : (int64_t)60 * 1000000000;
    if (opts != NULL) {
        s->opts = *opts;
    } else {
        pg_translate_opts_default(&s->opts);
    }
    const char *labels = "receiver=\"pprof/self\",transport=\"internal\"";
    pg_receiver_sample_counters(labels, &s->m_accepted, &s->m_refused);
    s->m_collections = pg_metric_counter("pprofgate_self_profile_collections",
                                         "Own heap profiles taken by the pprof receiver's self: source.",
                                         NULL);
    return s;
}

/* Adds service.name and profiler.type to every resource (plain KeyValues). */
static bool add_resource_attrs(struct pg_arena *a, struct pg_otlp_request *req)
{
    for (size_t i = 0; i < req->n_resource_profiles; i++) {
        struct pg_otlp_resprof *rp = req->resource_profiles[i];
        if (rp->resource == NULL) {
            rp->resource = pg_arena_zalloc(a, sizeof(*rp->resource));
            if (rp->resource == NULL) {
                return false;
            }
            opentelemetry__proto__resource__v1__resource__init(rp->resource);
        }
        struct pg_otlp_resource *r = rp->resource;
        struct pg_otlp_kv **kv = pg_arena_alloc(a, (r->n_attributes + 2) * sizeof(*kv));
        if (kv == NULL) {
            return false;
        }
        if (r->n_attributes > 0) {
            memcpy(kv, r->attributes, r->n_attributes * sizeof(*kv));
        }
        kv[r->n_attributes] = pg_otlp_kv_str(a, "service.name", "pprofgate");
        kv[r->n_attributes + 1] = pg_otlp_kv_str(a, "profiler.type", "heap");
        if (kv[r->n_attributes] == NULL || kv[r->n_attributes + 1] == NULL) {
            return false;
        }
        r->attributes = kv;
        r->n_attributes += 2;
    }
    return true;
}

enum pg_err pg_pprof_self_collect(struct pg_pprof_self *s, struct pg_status *st)
{
    if (!pg_selfprof_enabled()) {
        if (!s->told_off) {
            pg_log_warn(LOG_NAME, "%s; nothing to send", pg_selfprof_why_off());
            s->told_off = true;
        }
        return PG_ERR_OK;
    }
    s->told_off = false;
    struct pg_arena *a = pg_arena_create(SELF_ARENA_CAP);
    if (a == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory for the self profile");
    }
    uint8_t *gz = NULL;
    size_t len = 0;
    struct pg_otlp_request *req = NULL;
    struct pg_translate_stats stats;
    memset(&stats, 0, sizeof(stats));
    enum pg_err rc = pg_selfprof_write(a, PG_SELFPROF_HEAP, &gz, &len, st);
    if (rc == PG_ERR_OK) {
        rc = pg_pprof_translate(a, gz, len, &s->opts, &req, &stats, st);
    }
    if (rc == PG_ERR_OK && !add_resource_attrs(a, req)) {
        rc = pg_status_set(st, PG_ERR_NOMEM, "out of memory adding resource attributes");
    }
    if (rc != PG_ERR_OK) {
        pg_arena_destroy(a);
        return rc;
    }
    struct pg_batch *b = pg_batch_new(a, req); /* takes the arena, also on failure */
    if (b == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory for the self profile batch");
    }
    b->received_unix_nano = (uint64_t)pg_real_ns();
    b->raw_bytes = len;
    b->receiver_id = "pprof/self";
    size_t records = pg_batch_sample_count(b);
    rc = pg_consumer_consume(s->next, b, st); /* takes our reference */
    pg_metric_add(s->m_collections, 1);
    pg_metric_add(rc == PG_ERR_OK ? s->m_accepted : s->m_refused, records);
    return rc;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct pg_pprof_self *s = arg;
    struct pg_status st = {0};
    if (pg_pprof_self_collect(s, &st) != PG_ERR_OK) {
        pg_log_warn(LOG_NAME, "own heap profile not delivered: %s", pg_status_text(&st));
    }
}

enum pg_err pg_pprof_self_start(struct pg_pprof_self *s, struct pg_status *st)
{
    if (s->timer != NULL) {
        return PG_ERR_OK;
    }
    s->timer = event_new(s->host->base, -1, EV_PERSIST, on_timer, s);
    struct timeval tv = {(time_t)(s->interval_ns / 1000000000),
                         (suseconds_t)(s->interval_ns % 1000000000 / 1000)};
    if (s->timer == NULL || event_add(s->timer, &tv) != 0) {
        return pg_status_set(st, PG_ERR_INTERNAL, "cannot arm the self-profile timer");
    }
    pg_log_info(LOG_NAME, "sending pprofgate's own heap profile every %.3gs (%s)",
                (double)s->interval_ns / 1e9,
                pg_selfprof_enabled() ? "sampler on" : pg_selfprof_why_off());
    return PG_ERR_OK;
}

void pg_pprof_self_stop(struct pg_pprof_self *s)
{
    if (s != NULL && s->timer != NULL) {
        event_free(s->timer);
        s->timer = NULL;
    }
}

void pg_pprof_self_destroy(struct pg_pprof_self *s)
{
    if (s != NULL) {
        pg_pprof_self_stop(s);
        free(s);
    }
}
