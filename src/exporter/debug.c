/* SPDX-License-Identifier: Apache-2.0
 * Exporter `debug`: prints what reached the end of the pipeline, in the
 * collector's debug-exporter formats, so operators can compare the two.
 * Formatting is synchronous into one reused buffer, then one write per
 * output; at `basic` only the summary line is built. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/batch.h"
#include "core/component.h"
#include "core/config.h"
#include "core/log.h"
#include "exporter/debug_format.h"

#define MAX_OUTPUTS 8
/* A batch's text is capped so a huge profile cannot take the process down. */
#define MAX_TEXT_BYTES (256u * 1024u * 1024u)

struct dbg_cfg {
    int verbosity;
    int64_t sampling_initial;
    int64_t sampling_thereafter;
    bool use_internal_logger;
    struct pg_strlist output_paths;
    const struct pg_cfg_node *sending_queue;
};

static const char *const verbosities[] = {"basic", "normal", "detailed", NULL};

static const struct pg_field dbg_fields[] = {
    {"verbosity", PG_FT_ENUM, offsetof(struct dbg_cfg, verbosity), "basic", 0, 0, NULL,
     verbosities, 0, "basic: one summary line; normal: a line per resource/scope/profile; "
                     "detailed: everything"},
    {"sampling_initial", PG_FT_INT, offsetof(struct dbg_cfg, sampling_initial), "2", 0, 1e9, NULL,
     NULL, 0, "batches printed each second before sampling starts"},
    {"sampling_thereafter", PG_FT_INT, offsetof(struct dbg_cfg, sampling_thereafter), "1", 0, 1e9,
     NULL, NULL, 0, "then print every Nth batch in that second (1 = all, 0 = none)"},
    {"use_internal_logger", PG_FT_BOOL, offsetof(struct dbg_cfg, use_internal_logger), "true", 0,
     0, NULL, NULL, 0,
     "true: summary as a pprofgate log line; false: the collector's raw Profiles\\t{...} line"},
    {"output_paths", PG_FT_STRLIST, offsetof(struct dbg_cfg, output_paths), "stderr", 0, 0, NULL,
     NULL, 0, "stderr, stdout or files (appended)"},
    {"sending_queue", PG_FT_NODE, offsetof(struct dbg_cfg, sending_queue), NULL, 0, 0, NULL, NULL,
     0, "accepted for collector configs and ignored: this exporter writes synchronously"},
    PG_FIELD_END,
};

struct dbg {
    struct dbg_cfg cfg;
    const char *log_name; /* borrowed (ctx) */
    int fds[MAX_OUTPUTS];
    bool owned[MAX_OUTPUTS];
    size_t n_fds;
    struct pg_debug_buf buf;
    long window;          /* monotonic second of the sampling window */
    uint64_t in_window;   /* batches seen in it */
    uint64_t dropped;     /* sampled away, reported in the log at destroy */
    struct pg_log_ratelimit rl;
};

static enum pg_err dbg_create(const struct pg_component_ctx *ctx, void **state)
{
    struct dbg *d = calloc(1, sizeof(*d));
    char path[256];
    size_t problems;

    *state = NULL;
    if (d == NULL) {
        pg_diag_add(ctx->diag, ctx->config, ctx->id, "out of memory");
        return PG_ERR_CONFIG;
    }
    snprintf(path, sizeof(path), "exporters::%s", ctx->id);
    problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, dbg_fields, &d->cfg, path);
    if (d->cfg.output_paths.n > MAX_OUTPUTS) {
        pg_diag_add(ctx->diag, ctx->config, path, "output_paths: at most %d outputs",
                    MAX_OUTPUTS);
        problems++;
    }
    for (size_t i = 0; i < d->cfg.output_paths.n; i++) {
        if (d->cfg.output_paths.v[i] == NULL || d->cfg.output_paths.v[i][0] == '\0') {
            pg_diag_add(ctx->diag, ctx->config, path, "output_paths: empty path");
            problems++;
        }
    }
    if (problems > 0) {
        free(d);
        return PG_ERR_CONFIG;
    }
    d->log_name = ctx->log_name;
    d->buf.max = MAX_TEXT_BYTES;
    d->window = -1;
    d->rl = (struct pg_log_ratelimit)PG_LOG_RATELIMIT_INIT(1.0, 5.0);
    if (d->cfg.sending_queue != NULL) {
        pg_log_info(ctx->log_name, "sending_queue is ignored: the debug exporter writes "
                                   "synchronously");
    }
    *state = d;
    return PG_ERR_OK;
}

static enum pg_err dbg_start(void *state, struct pg_status *st)
{
    struct dbg *d = state;
    const struct pg_strlist *paths = &d->cfg.output_paths;

    if (paths->n == 0) {
        d->fds[d->n_fds++] = STDERR_FILENO;
        return PG_ERR_OK;
    }
    for (size_t i = 0; i < paths->n; i++) {
        const char *p = paths->v[i];
        int fd;

        if (strcmp(p, "stderr") == 0) {
            fd = STDERR_FILENO;
        } else if (strcmp(p, "stdout") == 0) {
            fd = STDOUT_FILENO;
        } else {
            fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (fd < 0) {
                return pg_status_set(st, PG_ERR_IO, "%s: cannot open output %s: %s", d->log_name,
                                     p, strerror(errno));
            }
            d->owned[d->n_fds] = true;
        }
        d->fds[d->n_fds++] = fd;
    }
    return PG_ERR_OK;
}

/* zap's sampler: in each second the first `initial` entries pass, then every
 * `thereafter`-th. */
static bool sample_ok(struct dbg *d)
{
    struct timespec ts;
    uint64_t n;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    if ((long)ts.tv_sec != d->window) {
        d->window = (long)ts.tv_sec;
        d->in_window = 0;
    }
    n = ++d->in_window;
    if (n <= (uint64_t)d->cfg.sampling_initial) {
        return true;
    }
    return d->cfg.sampling_thereafter > 0 &&
           (n - (uint64_t)d->cfg.sampling_initial) % (uint64_t)d->cfg.sampling_thereafter == 0;
}

static void write_all(struct dbg *d, int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w < 0) {
            unsigned long suppressed = 0;

            if (errno == EINTR) {
                continue;
            }
            if (pg_log_ratelimit_ok(&d->rl, &suppressed)) {
                pg_log_warn(d->log_name, "write failed: %s (%lu similar lines suppressed)",
                            strerror(errno), suppressed);
            }
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static enum pg_err dbg_consume(void *state, struct pg_batch *batch, struct pg_status *st)
{
    struct dbg *d = state;
    const struct pg_otlp_request *req = batch->req;

    (void)st;
    if (!sample_ok(d)) {
        d->dropped++;
        return PG_ERR_OK;
    }
    pg_debug_buf_reset(&d->buf);
    if (d->cfg.use_internal_logger) {
        struct timespec now;
        struct tm tm;
        char ts[40];

        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
        pg_debug_buf_printf(&d->buf,
                            "ts=%s.%03ldZ level=info comp=%s msg=\"Profiles\" "
                            "resource_profiles=%zu sample_records=%zu\n",
                            ts, now.tv_nsec / 1000000L, d->log_name,
                            pg_debug_resource_profiles(req), pg_debug_sample_records(req));
    } else {
        pg_debug_format_summary(&d->buf, req);
    }
    pg_debug_format_text(&d->buf, req, (enum pg_debug_verbosity)d->cfg.verbosity);
    if (!d->cfg.use_internal_logger && d->cfg.verbosity != PG_DEBUG_BASIC) {
        pg_debug_buf_append(&d->buf, "\n", 1);
    }
    if (d->buf.truncated) {
        /* The buffer is full: make room for the notice by cutting the tail. */
        static const char note[] = "\n[debug exporter: output truncated at 256 MiB]\n";

        if (d->buf.len > sizeof(note)) {
            d->buf.len -= sizeof(note);
        }
        d->buf.truncated = false;
        d->buf.max = 0;
        pg_debug_buf_append(&d->buf, note, sizeof(note) - 1);
        d->buf.max = MAX_TEXT_BYTES;
    }
    for (size_t i = 0; i < d->n_fds; i++) {
        write_all(d, d->fds[i], d->buf.p, d->buf.len);
    }
    /* Do not keep a huge buffer around after one huge batch. */
    if (d->buf.cap > 16u * 1024u * 1024u) {
        pg_debug_buf_free(&d->buf);
    }
    return PG_ERR_OK;
}

static void dbg_shutdown(void *state)
{
    (void)state;
}

static void dbg_destroy(void *state)
{
    struct dbg *d = state;

    if (d == NULL) {
        return;
    }
    if (d->dropped > 0) {
        pg_log_info(d->log_name, "%llu batches were not printed because of sampling",
                    (unsigned long long)d->dropped);
    }
    for (size_t i = 0; i < d->n_fds; i++) {
        if (d->owned[i]) {
            close(d->fds[i]);
        }
    }
    pg_debug_buf_free(&d->buf);
    free(d);
}

const struct pg_component_ops pg_exporter_debug = {
    .type = "debug",
    .alias = NULL,
    .kind = PG_KIND_EXPORTER,
    .fields = dbg_fields,
    .doc = "prints received profiles in the collector's debug-exporter formats",
    .create = dbg_create,
    .start = dbg_start,
    .process = NULL,
    .consume = dbg_consume,
    .shutdown = dbg_shutdown,
    .idle = NULL,
    .destroy = dbg_destroy,
};
