/* SPDX-License-Identifier: Apache-2.0
 * Extension `health_check`: the collector's health endpoint. GET <path>
 * answers 200 {"status":"Server available",...} while every pipeline runs
 * and 503 {"status":"Server not available",...} while starting and from the
 * first shutdown signal on (through service::shutdown_delay, while the
 * receivers still accept, and the drain), so load balancers and the kubelet
 * stop sending before the receivers close. Auth is off by default: kubelet
 * probes send no credentials unless told to. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/http.h>

#include "core/clock.h"
#include "pipeline/component.h"
#include "extension/admin_http.h"

/* The state; the field table binds into it (the shared keys into .http). */
struct health_ext {
    struct pg_admin_http http; /* first: the shared lifecycle takes the state as this */
    char *path;                /* in the config arena */
    struct timespec up_wall;   /* when start() ran */
    int64_t up_mono_ns;
};
_Static_assert(offsetof(struct health_ext, http) == 0, "admin state must start with http");

static const struct pg_field health_fields[] = {
    PG_ADMIN_HTTP_FIELDS("localhost:13133", "host:port of the health endpoint (loopback by default)"),
    PG_FIELD(struct health_ext, "path", PG_FT_STR, path, "/", "the path that answers"),
    PG_FIELD_END,
};

static void on_request(struct pg_httpd_req *req, void *arg)
{
    struct health_ext *x = arg;
    char path[512];
    if (!pg_admin_request_path(req, path, sizeof(path)) || strcmp(path, x->path) != 0) {
        pg_admin_reply_text(&x->http, req, 404, "not found");
        return;
    }
    if (!pg_admin_require_get(&x->http, req)) {
        return;
    }
    bool ready = pg_host_ready(x->http.host);
    double uptime = (double)(pg_mono_ns() - x->up_mono_ns) / 1e9;
    struct tm tm;
    gmtime_r(&x->up_wall.tv_sec, &tm);
    char since[64];
    strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%S", &tm);
    char body[256];
    int n = snprintf(body, sizeof(body),
                     "{\"status\":\"%s\",\"upSince\":\"%s.%03ldZ\",\"uptime\":\"%.3fs\"}\n",
                     ready ? "Server available" : "Server not available", since,
                     x->up_wall.tv_nsec / 1000000, uptime);
    pg_admin_reply(&x->http, req, ready ? 200 : 503, "application/json", body, (size_t)n);
}

static const struct pg_admin_spec health_spec = {
    .what = "health",
    .metric_label = "health_check",
    .config_path = NULL,
    .endpoint_word = "endpoint",
    .endpoint_example = "localhost:13133",
    .max_body = 4096,
    .on_request = on_request,
};

static enum pg_err health_create(const struct pg_component_ctx *ctx, void **state)
{
    enum pg_err rc = pg_admin_ext_create(ctx, &health_spec, health_fields,
                                         sizeof(struct health_ext), state);
    if (rc != PG_ERR_OK) {
        return rc;
    }
    struct health_ext *x = *state;
    if (x->path == NULL || x->path[0] != '/') {
        char path[256];
        pg_admin_config_path(ctx, &health_spec, path, sizeof(path));
        pg_diag_add(ctx->diag, ctx->config ? pg_cfg_get(ctx->config, "path") : NULL, path,
                    "path must start with /");
        pg_admin_ext_destroy(x);
        *state = NULL;
        return PG_ERR_CONFIG;
    }
    return PG_ERR_OK;
}

static enum pg_err health_start(void *state, struct pg_status *st)
{
    struct health_ext *x = state;
    x->up_wall = pg_real_ts();
    x->up_mono_ns = pg_mono_ns();
    return pg_admin_ext_start(x, st);
}

const struct pg_component_ops pg_extension_health_check = {
    .type = "health_check",
    .alias = NULL,
    .kind = PG_KIND_EXTENSION,
    .fields = health_fields,
    .doc = "GET / answers 200 while all pipelines run, 503 while starting and from SIGTERM on",
    .create = health_create,
    .start = health_start,
    .process = NULL,
    .consume = NULL,
    .shutdown = pg_admin_ext_shutdown,
    .idle = NULL,
    .destroy = pg_admin_ext_destroy,
};
