/* SPDX-License-Identifier: Apache-2.0
 * Extension `health_check`: the collector's health endpoint. GET <path>
 * answers 200 {"status":"Server available",...} while every pipeline runs
 * and 503 {"status":"Server not available",...} while starting or draining,
 * so a load balancer stops sending before the receivers close. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/http.h>

#include "core/component.h"
#include "core/log.h"
#include "extension/admin_http.h"

struct health_cfg {
    char *endpoint;
    char *path;
};

static const struct pg_field health_fields[] = {
    {"endpoint", PG_FT_STR, offsetof(struct health_cfg, endpoint), "localhost:13133", 0, 0, NULL,
     NULL, PG_NO_PRESENT, "host:port of the health endpoint (loopback by default)"},
    {"path", PG_FT_STR, offsetof(struct health_cfg, path), "/", 0, 0, NULL, NULL, PG_NO_PRESENT,
     "the path that answers"},
    PG_FIELD_END,
};

struct health_ext {
    struct pg_host *host;
    const char *log_name;
    struct health_cfg cfg;
    struct pg_admin_http http;
    struct timespec up_wall; /* when start() ran */
    struct timespec up_mono;
};

static void on_request(struct evhttp_request *req, void *arg)
{
    struct health_ext *x = arg;
    char path[512];
    if (!pg_admin_request_path(req, path, sizeof(path)) || strcmp(path, x->cfg.path) != 0) {
        pg_admin_reply_text(&x->http, req, 404, "not found");
        return;
    }
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        pg_admin_reply_text(&x->http, req, 405, "method not allowed: use GET");
        return;
    }
    bool ready = pg_host_ready(x->host);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double uptime = (double)(now.tv_sec - x->up_mono.tv_sec) +
                    (double)(now.tv_nsec - x->up_mono.tv_nsec) / 1e9;
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

static enum pg_err health_create(const struct pg_component_ctx *ctx, void **state)
{
    struct health_ext *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        return PG_ERR_NOMEM;
    }
    x->host = ctx->host;
    x->log_name = ctx->log_name;
    x->http.log_name = ctx->log_name;
    x->http.what = "health";
    x->http.metric_label = "health_check";
    char path[256];
    snprintf(path, sizeof(path), "extensions::%s", ctx->id);
    size_t problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, health_fields,
                                  &x->cfg, path);
    char host[256];
    unsigned port;
    if (problems == 0 && !pg_admin_split_endpoint(x->cfg.endpoint, host, sizeof(host), &port)) {
        pg_diag_add(ctx->diag, ctx->config ? pg_cfg_get(ctx->config, "endpoint") : NULL, path,
                    "endpoint \"%s\" is not host:port (e.g. localhost:13133)",
                    x->cfg.endpoint ? x->cfg.endpoint : "");
        problems++;
    }
    if (problems == 0 && (x->cfg.path == NULL || x->cfg.path[0] != '/')) {
        pg_diag_add(ctx->diag, ctx->config ? pg_cfg_get(ctx->config, "path") : NULL, path,
                    "path must start with /");
        problems++;
    }
    if (problems > 0) {
        free(x);
        return PG_ERR_CONFIG;
    }
    *state = x;
    return PG_ERR_OK;
}

static enum pg_err health_start(void *state, struct pg_status *st)
{
    struct health_ext *x = state;
    clock_gettime(CLOCK_REALTIME, &x->up_wall);
    clock_gettime(CLOCK_MONOTONIC, &x->up_mono);
    return pg_admin_http_listen(&x->http, x->host->base, x->cfg.endpoint, 30, 4096, on_request, x,
                                st);
}

static void health_shutdown(void *state)
{
    struct health_ext *x = state;
    pg_admin_http_close(&x->http);
}

static void health_destroy(void *state)
{
    struct health_ext *x = state;
    if (x != NULL) {
        pg_admin_http_close(&x->http);
        free(x);
    }
}

const struct pg_component_ops pg_extension_health_check = {
    .type = "health_check",
    .alias = NULL,
    .kind = PG_KIND_EXTENSION,
    .fields = health_fields,
    .doc = "GET / answers 200 while all pipelines run, 503 while starting or draining",
    .create = health_create,
    .start = health_start,
    .process = NULL,
    .consume = NULL,
    .shutdown = health_shutdown,
    .idle = NULL,
    .destroy = health_destroy,
};
