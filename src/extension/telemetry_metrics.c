/* SPDX-License-Identifier: Apache-2.0
 * Extension `telemetry_metrics`: the collector's own-metrics endpoint
 * (service.telemetry.metrics.address). GET /metrics renders the process-wide
 * registry in Prometheus text, formatted on a render thread (100 000 series
 * are ~40 MB and over a second of CPU: never on the main loop, where pushes
 * and scrape targets live) while the request is held; GET /targets the same
 * way from a snapshot of the scrape targets the loop takes; this file also
 * registers the process gauges (RSS, uptime) and the heap sampler's counters
 * and table sizes. Ownership: the extension owns its render thread and jobs;
 * a job borrows its request until it is answered or over (on_done). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "scrape/scrape.h"
#include "pipeline/component.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/thread_sched.h"
#include "extension/admin_http.h"
#include "http/http_server.h"
#include "selfprof/selfprof.h"

/* One /metrics or /targets request being rendered. */
struct render_job {
    struct pg_httpd_req *req;  /* borrowed until answered or over; NULL once over */
    struct pg_scrape_page *page; /* owned: /targets' snapshot; NULL for /metrics */
    char *text;                /* owned: the rendered page, or NULL (out of memory) */
    size_t len;
    struct render_job *next;   /* in todo or done (under mu) */
    struct render_job *lnext, *lprev; /* all jobs (loop thread) */
};

/* The state: the shared part (endpoint, auth, listener) and the renderer. */
struct metrics_ext {
    struct pg_admin_http http; /* first: the shared lifecycle takes the state as this */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct render_job *todo, *done; /* under mu (LIFO; each is one request) */
    bool stop, running;             /* under mu / loop */
    pthread_t thread;
    struct event *done_ev;          /* owned: the renderer finished a job */
    struct render_job *jobs;        /* loop thread: every job not yet freed */
};
_Static_assert(offsetof(struct metrics_ext, http) == 0, "admin state must start with http");

/* The service synthesizes {endpoint: <address>, auth: <auth>} from
 * service::telemetry::metrics. */
static const struct pg_field metrics_fields[] = {
    PG_ADMIN_HTTP_FIELDS("localhost:8888", "host:port of /metrics (loopback by default)"),
    PG_FIELD_END,
};

static int64_t g_start_mono_ns;

static int64_t rss_bytes(void *arg)
{
    (void)arg;
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    unsigned long size = 0, resident = 0;
    if (sscanf(buf, "%lu %lu", &size, &resident) != 2) {
        return 0;
    }
    return (int64_t)resident * sysconf(_SC_PAGESIZE);
}

static int64_t uptime_seconds(void *arg)
{
    (void)arg;
    return (pg_mono_ns() - g_start_mono_ns) / PG_NS_PER_SEC;
}

/* Which heap sampler figure a gauge shows (the arg of sampler_stat). */
enum sampler_field { SF_SAMPLES, SF_DROPPED, SF_STACKS, SF_LIVE, SF_LIVE_CAP, SF_BYTES, SF_RATE };

static int64_t sampler_stat(void *arg)
{
    struct pg_selfprof_stats s;
    pg_selfprof_get_stats(&s);
    switch ((enum sampler_field)(intptr_t)arg) {
    case SF_SAMPLES:
        return (int64_t)s.samples;
    case SF_DROPPED:
        return (int64_t)s.dropped;
    case SF_STACKS:
        return (int64_t)s.buckets;
    case SF_LIVE:
        return (int64_t)s.live;
    case SF_LIVE_CAP:
        return (int64_t)s.live_capacity;
    case SF_BYTES:
        return (int64_t)s.table_bytes;
    case SF_RATE:
        return pg_selfprof_enabled() ? (int64_t)pg_selfprof_rate() : 0;
    }
    return 0;
}

/* Registered once per process (a config reload or a second instance must not
 * duplicate series). Runs on the loop thread. */
static void register_process_metrics(void)
{
    static bool done;
    if (done) {
        return;
    }
    done = true;
    g_start_mono_ns = pg_mono_ns();
    pg_metric_gauge_fn("otelcol_process_memory_rss", "Total physical memory (resident set size) in bytes.",
                       NULL, rss_bytes, NULL);
    pg_metric_gauge_fn("otelcol_process_uptime", "Uptime of the process in seconds.", NULL,
                       uptime_seconds, NULL);
    static const struct {
        const char *name, *help;
        enum sampler_field f;
    } g[] = {
        {"pprofgate_heap_sampler_samples", "Heap samples recorded since start.", SF_SAMPLES},
        {"pprofgate_heap_sampler_dropped_samples",
         "Heap samples that lost their stack or in-use tracking because a table was full.",
         SF_DROPPED},
        {"pprofgate_heap_sampler_stacks", "Distinct allocation stacks in the sampler's table.",
         SF_STACKS},
        {"pprofgate_heap_sampler_live_samples", "Sampled allocations not yet freed.", SF_LIVE},
        {"pprofgate_heap_sampler_live_capacity", "Slots in the sampler's live-allocation table.",
         SF_LIVE_CAP},
        {"pprofgate_heap_sampler_table_bytes", "Memory held by the heap sampler's tables.",
         SF_BYTES},
        {"pprofgate_heap_sampler_rate_bytes", "Mean bytes between heap samples (0 = off).", SF_RATE},
    };
    for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
        pg_metric_gauge_fn(g[i].name, g[i].help, NULL, sampler_stat, (void *)(intptr_t)g[i].f);
    }
}

/* The renderer's thread: below the loops (a 40 MB page is CPU nobody
 * waits on as much as a push), like the receiver's bulk workers. */
#define RENDER_NICE 5
#define RENDER_SLICE_NS (500u * 1000u)

static void render(struct render_job *job)
{
    FILE *f = open_memstream(&job->text, &job->len);

    if (f == NULL) {
        return;
    }
    if (job->page != NULL) {
        pg_scrape_page_json(job->page, f);
    } else {
        pg_metrics_render(f);
    }
    if (fclose(f) != 0) {
        free(job->text);
        job->text = NULL;
    }
}

static void *render_main(void *arg)
{
    struct metrics_ext *x = arg;

    pg_sched_bulk_thread(RENDER_NICE, RENDER_SLICE_NS);
    pthread_mutex_lock(&x->mu);
    for (;;) {
        struct render_job *job;

        while (x->todo == NULL && !x->stop) {
            pthread_cond_wait(&x->cv, &x->mu);
        }
        if (x->stop) {
            break;
        }
        job = x->todo;
        x->todo = job->next;
        pthread_mutex_unlock(&x->mu);
        render(job);
        pthread_mutex_lock(&x->mu);
        job->next = x->done;
        x->done = job;
        event_active(x->done_ev, 0, 0); /* libevent is thread-enabled (main.c) */
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

static void job_free(struct metrics_ext *x, struct render_job *job)
{
    if (job->lprev != NULL) {
        job->lprev->lnext = job->lnext;
    } else {
        x->jobs = job->lnext;
    }
    if (job->lnext != NULL) {
        job->lnext->lprev = job->lprev;
    }
    if (job->req != NULL) {
        job->req->user = NULL;
    }
    pg_scrape_page_free(job->page);
    free(job->text);
    free(job);
}

/* Loop thread: answers the rendered jobs whose requests are still there. */
static void on_rendered(evutil_socket_t fd, short what, void *arg)
{
    struct metrics_ext *x = arg;
    struct render_job *list;

    (void)fd;
    (void)what;
    pthread_mutex_lock(&x->mu);
    list = x->done;
    x->done = NULL;
    pthread_mutex_unlock(&x->mu);
    while (list != NULL) {
        struct render_job *job = list;
        struct pg_httpd_req *req = job->req;

        list = job->next;
        if (req != NULL) {
            req->user = NULL;
            job->req = NULL;
            if (job->text != NULL) {
                pg_admin_reply_take(&x->http, req, 200,
                                    job->page != NULL ? "application/json"
                                                      : "text/plain; version=0.0.4; charset=utf-8",
                                    job->text, job->len);
                job->text = NULL;
            } else {
                pg_admin_reply_text(&x->http, req, 500,
                                    job->page != NULL ? "out of memory rendering targets"
                                                      : "out of memory rendering metrics");
            }
        }
        job_free(x, job);
    }
}

/* The request is over (answered, or its connection gone): forget it. */
static void on_done(struct pg_httpd_req *req, void *state)
{
    struct render_job *job = req->user;

    (void)state;
    if (job != NULL) {
        job->req = NULL; /* freed when the renderer hands it back */
        req->user = NULL;
    }
}

/* Holds @req and queues its render (of @page, taken; NULL: /metrics); false
 * when the renderer is not there (@page is still the caller's). */
static bool render_async(struct metrics_ext *x, struct pg_httpd_req *req,
                         struct pg_scrape_page *page)
{
    struct render_job *job;

    if (!x->running || (job = calloc(1, sizeof(*job))) == NULL) {
        return false;
    }
    job->req = req;
    job->page = page;
    req->user = job;
    job->lnext = x->jobs;
    if (x->jobs != NULL) {
        x->jobs->lprev = job;
    }
    x->jobs = job;
    pthread_mutex_lock(&x->mu);
    job->next = x->todo;
    x->todo = job;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    return true;
}

/* /targets: the pprof receiver's scrape targets (pull mode), snapshot here
 * on the loop, JSON on the render thread (inline when there is none). */
static void serve_targets(struct metrics_ext *x, struct pg_httpd_req *req)
{
    struct pg_scrape_page *page;
    struct render_job inline_job = {0};

    if (!pg_admin_require_get(&x->http, req)) {
        return;
    }
    if ((page = pg_scrape_page_snapshot()) == NULL) {
        pg_admin_reply_text(&x->http, req, 500, "out of memory rendering targets");
        return;
    }
    if (render_async(x, req, page)) {
        return;
    }
    inline_job.page = page;
    render(&inline_job);
    if (inline_job.text != NULL) {
        pg_admin_reply(&x->http, req, 200, "application/json", inline_job.text, inline_job.len);
    } else {
        pg_admin_reply_text(&x->http, req, 500, "out of memory rendering targets");
    }
    free(inline_job.text);
    pg_scrape_page_free(page);
}

static void on_request(struct pg_httpd_req *req, void *arg)
{
    struct metrics_ext *x = arg;
    char path[512];
    if (!pg_admin_request_path(req, path, sizeof(path))) {
        pg_admin_reply_text(&x->http, req, 404, "not found: metrics are at /metrics");
        return;
    }
    if (strcmp(path, "/targets") == 0) {
        serve_targets(x, req);
        return;
    }
    if (strcmp(path, "/metrics") != 0) {
        pg_admin_reply_text(&x->http, req, 404, "not found: metrics are at /metrics");
        return;
    }
    if (!pg_admin_require_get(&x->http, req) || render_async(x, req, NULL)) {
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL) {
        pg_admin_reply_text(&x->http, req, 500, "out of memory rendering metrics");
        return;
    }
    pg_metrics_render(f);
    fclose(f);
    pg_admin_reply(&x->http, req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
}

static const struct pg_admin_spec metrics_spec = {
    .what = "/metrics",
    .metric_label = "telemetry_metrics",
    .config_path = "service::telemetry::metrics",
    .endpoint_word = "address",
    .endpoint_example = "localhost:8888",
    .max_body = 4096,
    .on_request = on_request,
    .on_done = on_done,
};

static enum pg_err metrics_create(const struct pg_component_ctx *ctx, void **state)
{
    return pg_admin_ext_create(ctx, &metrics_spec, metrics_fields, sizeof(struct metrics_ext),
                               state);
}

static enum pg_err metrics_start(void *state, struct pg_status *st)
{
    struct metrics_ext *x = state;

    register_process_metrics();
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    x->done_ev = event_new(x->http.host->base, -1, 0, on_rendered, x);
    x->running = x->done_ev != NULL && pthread_create(&x->thread, NULL, render_main, x) == 0;
    if (!x->running) {
        pg_log_warn(x->http.log_name, "no render thread; /metrics is rendered on the main loop");
    }
    return pg_admin_ext_start(state, st);
}

static void metrics_destroy(void *state)
{
    struct metrics_ext *x = state;

    if (x == NULL) {
        return;
    }
    if (x->running) {
        pthread_mutex_lock(&x->mu);
        x->stop = true;
        pthread_cond_broadcast(&x->cv);
        pthread_mutex_unlock(&x->mu);
        pthread_join(x->thread, NULL);
        x->running = false;
    }
    /* Jobs not answered: their requests end with the server below. */
    while (x->jobs != NULL) {
        job_free(x, x->jobs);
    }
    if (x->done_ev != NULL) {
        event_free(x->done_ev);
        pthread_cond_destroy(&x->cv);
        pthread_mutex_destroy(&x->mu);
    }
    pg_admin_ext_destroy(state);
}

const struct pg_component_ops pg_extension_telemetry_metrics = {
    .type = "telemetry_metrics",
    .alias = NULL,
    .kind = PG_KIND_EXTENSION,
    .fields = metrics_fields,
    .doc = "GET /metrics: the gateway's own metrics in Prometheus text",
    .create = metrics_create,
    .start = metrics_start,
    .process = NULL,
    .consume = NULL,
    .shutdown = pg_admin_ext_shutdown,
    .idle = NULL,
    .destroy = metrics_destroy,
};
