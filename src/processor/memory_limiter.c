/* SPDX-License-Identifier: Apache-2.0
 * Processor `memory_limiter`, with the collector's keys: it sets the
 * process-wide budget of core/memlimit.h at start and refuses batches with
 * PG_ERR_BUSY (the receiver answers 503 Retry-After) while RSS or the bytes
 * held by in-flight requests are past limit - spike. The receiver also admits
 * each request against the same budget before reading it, so refusal happens
 * before the memory is spent, not after. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pipeline/component.h"
#include "core/log.h"
#include "core/memlimit.h"
#include "core/metrics.h"

struct ml_cfg {
    int64_t check_interval;  /* ns */
    int64_t limit_mib;
    int64_t spike_limit_mib;
    int64_t limit_percentage;
    int64_t spike_limit_percentage;
};

struct ml_state {
    struct ml_cfg cfg;
    uint64_t limit, spike;   /* bytes, resolved at create */
    const char *log_name;    /* borrowed from ctx (lives until destroy) */
    struct pg_metric *refused_samples;
};

static const struct pg_field ml_fields[] = {
    PG_FIELD(struct ml_cfg, "check_interval", PG_FT_DURATION, check_interval, "1s",
             "how often RSS is read (as the collector's; must be > 0)"),
    PG_FIELD_RANGE(struct ml_cfg, "limit_mib", PG_FT_INT, limit_mib, "0", 0, 1e9,
                   "hard limit in MiB (or limit_percentage)"),
    PG_FIELD_RANGE(struct ml_cfg, "spike_limit_mib", PG_FT_INT, spike_limit_mib, "0", 0, 1e9,
                   "headroom below the limit; new work is refused past limit - spike (default "
                   "20% of limit)"),
    PG_FIELD_RANGE(struct ml_cfg, "limit_percentage", PG_FT_INT, limit_percentage, "0", 0, 100,
                   "limit as a percentage of the cgroup limit or total memory"),
    PG_FIELD_RANGE(struct ml_cfg, "spike_limit_percentage", PG_FT_INT, spike_limit_percentage, "0",
                   0, 100, "spike headroom as a percentage of the same total"),
    PG_FIELD_END,
};

static enum pg_err ml_create(const struct pg_component_ctx *ctx, void **state)
{
    struct ml_state *ml = calloc(1, sizeof(*ml));
    size_t before = ctx->diag->n;
    uint64_t total;

    *state = NULL;
    if (ml == NULL) {
        return PG_ERR_NOMEM;
    }
    ml->log_name = ctx->log_name;
    pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, ml_fields, &ml->cfg, ctx->path);
    if (ctx->diag->n == before) {
        if (ml->cfg.check_interval <= 0) {
            pg_diag_add(ctx->diag, ctx->config, ctx->path,
                        "check_interval must be greater than zero");
        }
        if (ml->cfg.limit_mib > 0) {
            ml->limit = (uint64_t)ml->cfg.limit_mib << 20;
            ml->spike = ml->cfg.spike_limit_mib > 0 ? (uint64_t)ml->cfg.spike_limit_mib << 20
                                                    : ml->limit / 5;
            if (ml->cfg.limit_percentage > 0 || ml->cfg.spike_limit_percentage > 0) {
                pg_diag_add(ctx->diag, ctx->config, ctx->path,
                            "set limit_mib/spike_limit_mib or limit_percentage/"
                            "spike_limit_percentage, not both");
            }
        } else if (ml->cfg.limit_percentage > 0) {
            total = pg_memlimit_total_memory();
            if (total == 0) {
                pg_diag_add(ctx->diag, ctx->config, ctx->path,
                            "limit_percentage needs the total memory, which could not be read "
                            "(no /proc/meminfo or cgroup limit); use limit_mib");
            }
            ml->limit = total / 100 * (uint64_t)ml->cfg.limit_percentage;
            ml->spike = ml->cfg.spike_limit_percentage > 0
                            ? total / 100 * (uint64_t)ml->cfg.spike_limit_percentage
                            : ml->limit / 5;
        } else {
            pg_diag_add(ctx->diag, ctx->config, ctx->path,
                        "set limit_mib or limit_percentage (both are 0)");
        }
        if (ml->limit > 0 && ml->spike >= ml->limit) {
            pg_diag_add(ctx->diag, ctx->config, ctx->path,
                        "spike limit (%llu MiB) must be smaller than the limit (%llu MiB)",
                        (unsigned long long)(ml->spike >> 20),
                        (unsigned long long)(ml->limit >> 20));
        }
    }
    if (ctx->diag->n > before) {
        free(ml);
        return PG_ERR_CONFIG;
    }
    *state = ml;
    return PG_ERR_OK;
}

static enum pg_err ml_start(void *state, struct pg_status *st)
{
    struct ml_state *ml = state;
    (void)st;
    pg_memlimit_configure(ml->limit, ml->spike, ml->cfg.check_interval);
    ml->refused_samples = pg_metric_counter(
        "otelcol_processor_refused_profile_samples",
        "Profile samples refused by the memory limiter (the client is told to retry)", NULL);
    pg_log_info(ml->log_name, "memory limit %llu MiB, soft limit %llu MiB, RSS now %llu MiB",
                (unsigned long long)(ml->limit >> 20),
                (unsigned long long)((ml->limit - ml->spike) >> 20),
                (unsigned long long)(pg_memlimit_read_rss() >> 20));
    return PG_ERR_OK;
}

static enum pg_err ml_process(void *state, struct pg_batch **batch, struct pg_status *st)
{
    struct ml_state *ml = state;

    if (pg_memlimit_over(st)) {
        if (ml->refused_samples != NULL) {
            pg_metric_add(ml->refused_samples, pg_batch_sample_count(*batch));
        }
        return PG_ERR_BUSY;
    }
    return PG_ERR_OK;
}

static void ml_shutdown(void *state)
{
    (void)state;
}

static void ml_destroy(void *state)
{
    free(state);
}

/* Counts samples with pg_batch_sample_count only. */
static bool ml_lazy_samples(void *state)
{
    (void)state;
    return true;
}

const struct pg_component_ops pg_processor_memory_limiter = {
    .type = "memory_limiter",
    .kind = PG_KIND_PROCESSOR,
    .any_thread = true, /* pg_memlimit_* are atomics; the metric too */
    .lazy_samples = ml_lazy_samples,
    .fields = ml_fields,
    .doc = "refuses data (503 Retry-After) before memory passes limit_mib",
    .create = ml_create,
    .start = ml_start,
    .process = ml_process,
    .shutdown = ml_shutdown,
    .destroy = ml_destroy,
};
