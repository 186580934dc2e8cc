/* SPDX-License-Identifier: Apache-2.0
 * Extension `pprof`: serves the embedded heap sampler's profiles the way Go's
 * net/http/pprof does, so `go tool pprof http://localhost:1777/debug/pprof/heap`
 * works on pprofgate: /debug/pprof/heap (in-use), /allocs, ?seconds=N deltas
 * (answered later from a timer, never blocking the loop), the symbolz
 * protocol at /debug/pprof/symbol, and an index. Also sets the sample rate. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "pipeline/component.h"
#include "core/log.h"
#include "extension/admin_http.h"
#include "http/http_server.h"
#include "selfprof/selfprof.h"

#define PROFILE_ARENA_CAP ((size_t)256 << 20)
#define SYMBOL_BODY_MAX ((size_t)1 << 20)
#define MAX_DELTA_SECONDS 3600

struct pending;

/* The state; the field table binds into it (the shared keys into .http). */
struct pprof_ext {
    struct pg_admin_http http; /* first: the shared lifecycle takes the state as this */
    uint64_t heap_sample_rate;
    struct pending *pending;   /* ?seconds=N requests waiting for their timer */
};
_Static_assert(offsetof(struct pprof_ext, http) == 0, "admin state must start with http");

static const struct pg_field pprof_fields[] = {
    PG_ADMIN_HTTP_FIELDS("localhost:1777", "host:port of /debug/pprof/ (loopback by default)"),
    PG_FIELD_RANGE(struct pprof_ext, "heap_sample_rate", PG_FT_BYTES, heap_sample_rate, "524288", 0,
                   1099511627776.0,
                   "mean bytes between heap samples (Go's MemProfileRate); 0 = off, 1 = every "
                   "allocation"),
    PG_FIELD_END,
};

/* A delta profile request: owned by the list in pprof_ext until replied to,
 * cancelled (connection closed) or flushed at shutdown. */
struct pending {
    struct pending *next;
    struct pprof_ext *x;
    struct pg_httpd_req *req;           /* borrowed from the server until on_done */
    struct event *timer;                /* owned: the window's end */
    struct event *watch;                /* owned: notices a client that left */
    struct pg_selfprof_snapshot *base;  /* owned */
    enum pg_selfprof_view view;
    const char *name;
};

static void pending_unlink_free(struct pending *p)
{
    for (struct pending **pp = &p->x->pending; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    if (p->timer != NULL) {
        event_free(p->timer);
    }
    if (p->watch != NULL) {
        event_free(p->watch);
    }
    if (p->req != NULL) {
        p->req->user = NULL;
    }
    pg_selfprof_snapshot_free(p->base);
    free(p);
}

static void send_profile(struct pprof_ext *x, struct pg_httpd_req *req, enum pg_selfprof_view view,
                         const char *name, const struct pg_selfprof_snapshot *base)
{
    if (!pg_selfprof_enabled()) {
        pg_admin_reply_text(&x->http, req, 503, pg_selfprof_why_off());
        return;
    }
    struct pg_arena *a = pg_arena_create(PROFILE_ARENA_CAP);
    if (a == NULL) {
        pg_admin_reply_text(&x->http, req, 500, "out of memory");
        return;
    }
    uint8_t *gz = NULL;
    size_t len = 0;
    struct pg_status st = {0};
    enum pg_err rc = base != NULL ? pg_selfprof_write_delta(a, view, base, &gz, &len, &st)
                                  : pg_selfprof_write(a, view, &gz, &len, &st);
    if (rc != PG_ERR_OK) {
        pg_log_warn(x->http.log_name, "%s", pg_status_text(&st));
        pg_admin_reply_text(&x->http, req, pg_err_http_status(rc), pg_status_text(&st));
    } else {
        char disp[64];
        snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", name);
        evhttp_add_header(req->out, "Content-Disposition", disp);
        pg_admin_reply(&x->http, req, 200, "application/octet-stream", gz, len);
    }
    pg_arena_destroy(a);
}

static void on_delta_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct pending *p = arg;
    struct pg_httpd_req *req = p->req;
    p->req->user = NULL;
    p->req = NULL;
    send_profile(p->x, req, p->view, p->name, p->base);
    pending_unlink_free(p);
}

/* The server does not read a held request's connection, so a client that
 * gave up is noticed here, once a second: it gets no answer and its
 * connection closes now rather than after the window. */
static void on_delta_watch(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct pending *p = arg;
    if (!pg_httpd_client_gone(p->req)) {
        return;
    }
    pg_log_debug(p->x->http.log_name, "client left before its %s delta was ready", p->name);
    struct pg_httpd_req *req = p->req;
    pending_unlink_free(p);
    /* Nobody reads it: the write fails and the server closes the connection. */
    pg_httpd_reply_body(req, 499, NULL, NULL, 0);
}

/* The request ended before its window (connection closed by the server). */
static void on_done(struct pg_httpd_req *req, void *state)
{
    (void)state;
    struct pending *p = req->user;
    if (p != NULL) {
        p->req = NULL;
        pending_unlink_free(p);
    }
}

/* Parses the query; returns false after replying 400. */
static bool parse_profile_query(struct pprof_ext *x, struct pg_httpd_req *req, long *seconds)
{
    *seconds = 0;
    const char *q = pg_admin_request_query(req);
    if (q == NULL || q[0] == '\0') {
        return true;
    }
    struct evkeyvalq params;
    TAILQ_INIT(&params);
    if (evhttp_parse_query_str(q, &params) != 0) {
        pg_admin_reply_text(&x->http, req, 400, "malformed query string");
        return false;
    }
    bool ok = true;
    const char *s = evhttp_find_header(&params, "seconds");
    const char *debug = evhttp_find_header(&params, "debug");
    if (s != NULL) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || *end != '\0' || v < 0 || v > MAX_DELTA_SECONDS) {
            char msg[128];
            snprintf(msg, sizeof(msg), "seconds must be an integer from 0 to %d", MAX_DELTA_SECONDS);
            pg_admin_reply_text(&x->http, req, 400, msg);
            ok = false;
        }
        *seconds = v;
    }
    if (ok && debug != NULL && strcmp(debug, "0") != 0) {
        pg_admin_reply_text(&x->http, req, 400,
                            "debug=N text output is not served: omit it and read the protobuf "
                            "with go tool pprof");
        ok = false;
    }
    /* gc=1 is accepted and ignored: C frees explicitly, in-use is always current. */
    evhttp_clear_headers(&params);
    return ok;
}

static void handle_profile(struct pprof_ext *x, struct pg_httpd_req *req,
                           enum pg_selfprof_view view, const char *name)
{
    long seconds;
    if (!parse_profile_query(x, req, &seconds)) {
        return;
    }
    if (seconds == 0 || !pg_selfprof_enabled()) {
        send_profile(x, req, view, name, NULL);
        return;
    }
    struct pending *p = calloc(1, sizeof(*p));
    if (p == NULL || (p->base = pg_selfprof_snapshot_take()) == NULL) {
        free(p);
        pg_admin_reply_text(&x->http, req, 500, "out of memory for the delta snapshot");
        return;
    }
    p->x = x;
    p->view = view;
    p->name = name;
    p->next = x->pending;
    x->pending = p;
    p->timer = evtimer_new(x->http.host->base, on_delta_timer, p);
    p->watch = event_new(x->http.host->base, -1, EV_PERSIST, on_delta_watch, p);
    struct timeval tv = {seconds, 0};
    struct timeval every = {1, 0};
    if (p->timer == NULL || p->watch == NULL || evtimer_add(p->timer, &tv) != 0 ||
        event_add(p->watch, &every) != 0) {
        pending_unlink_free(p);
        pg_admin_reply_text(&x->http, req, 500, "cannot arm the delta timer");
        return;
    }
    p->req = req;
    req->user = p;
}

static void handle_symbol(struct pprof_ext *x, struct pg_httpd_req *req)
{
    const char *body = NULL;
    size_t len = 0;
    if (strcmp(req->method, "POST") == 0) {
        len = req->body_len;
        if (len > SYMBOL_BODY_MAX) {
            pg_admin_reply_text(&x->http, req, 413, "symbol request body over 1 MiB");
            return;
        }
        body = len ? req->body : NULL;
    } else {
        body = pg_admin_request_query(req);
        len = body ? strlen(body) : 0;
    }
    struct pg_arena *a = pg_arena_create(64u << 20);
    char *out = NULL;
    size_t out_len = 0;
    struct pg_status st = {0};
    enum pg_err rc = a ? pg_selfprof_symbolz(a, body, len, &out, &out_len, &st)
                       : pg_status_set(&st, PG_ERR_NOMEM, "out of memory");
    if (rc != PG_ERR_OK) {
        pg_admin_reply_text(&x->http, req, pg_err_http_status(rc), pg_status_text(&st));
    } else {
        pg_admin_reply(&x->http, req, 200, "text/plain; charset=utf-8", out, out_len);
    }
    pg_arena_destroy(a);
}

static void handle_index(struct pprof_ext *x, struct pg_httpd_req *req)
{
    char text[1536];
    snprintf(text, sizeof(text),
             "pprofgate profiles (heap sampler: %s, rate %llu bytes)\n\n"
             "/debug/pprof/heap     in-use heap (inuse_space default); ?seconds=N for a delta\n"
             "/debug/pprof/allocs   the same samples, alloc_space default; ?seconds=N for a delta\n"
             "/debug/pprof/symbol   symbolz: POST 0xADDR+0xADDR... -> \"0xADDR name\" lines\n"
             "/api/v1/debug/pprof/...  alias of every path above\n\n"
             "View: go tool pprof http://<this endpoint>/debug/pprof/heap\n",
             pg_selfprof_enabled() ? "on" : pg_selfprof_why_off(),
             (unsigned long long)pg_selfprof_rate());
    pg_admin_reply(&x->http, req, 200, "text/plain; charset=utf-8", text, strlen(text));
}

static void on_request(struct pg_httpd_req *req, void *arg)
{
    struct pprof_ext *x = arg;
    char path[512];
    if (!pg_admin_request_path(req, path, sizeof(path))) {
        pg_admin_reply_text(&x->http, req, 414, "request path too long");
        return;
    }
    /* /api/v1/debug/pprof/ is an alias of the whole tree: go tool pprof
     * asks for symbols at the sibling of the profile it fetched, so the
     * alias needs its own symbol (and index) route, not only heap. */
    if (strncmp(path, "/api/v1/debug/pprof", 19) == 0 &&
        (path[19] == '\0' || path[19] == '/')) {
        memmove(path, path + 7, strlen(path + 7) + 1);
    }
    if (strcmp(path, "/debug/pprof/symbol") == 0) {
        handle_symbol(x, req);
        return;
    }
    enum pg_selfprof_view view;
    const char *name = NULL;
    bool index = false;
    if (strcmp(path, "/debug/pprof/heap") == 0) {
        view = PG_SELFPROF_HEAP;
        name = "heap";
    } else if (strcmp(path, "/debug/pprof/allocs") == 0) {
        view = PG_SELFPROF_ALLOCS;
        name = "allocs";
    } else if (strcmp(path, "/debug/pprof/") == 0 || strcmp(path, "/debug/pprof") == 0) {
        index = true;
    } else {
        pg_admin_reply_text(&x->http, req, 404,
                            "not found: see /debug/pprof/ for heap, allocs and symbol");
        return;
    }
    if (!pg_admin_require_get(&x->http, req)) {
        return;
    }
    if (index) {
        handle_index(x, req);
    } else {
        handle_profile(x, req, view, name);
    }
}

static const struct pg_admin_spec pprof_spec = {
    .what = "/debug/pprof/",
    .metric_label = "pprof",
    .config_path = NULL,
    .endpoint_word = "endpoint",
    .endpoint_example = "localhost:1777",
    .max_body = SYMBOL_BODY_MAX,
    .on_request = on_request,
    .on_done = on_done,
};

static enum pg_err pprof_create(const struct pg_component_ctx *ctx, void **state)
{
    return pg_admin_ext_create(ctx, &pprof_spec, pprof_fields, sizeof(struct pprof_ext), state);
}

static enum pg_err pprof_start(void *state, struct pg_status *st)
{
    struct pprof_ext *x = state;
    pg_selfprof_set_rate(x->heap_sample_rate);
    if (!pg_selfprof_enabled()) {
        pg_log_warn(x->http.log_name, "%s", pg_selfprof_why_off());
    } else {
        pg_log_info(x->http.log_name, "heap sampler on: one sample per %llu bytes on average",
                    (unsigned long long)x->heap_sample_rate);
    }
    return pg_admin_ext_start(x, st);
}

/* Pending deltas are answered 503 before the listener goes (they would
 * otherwise be dropped silently). */
static void pprof_shutdown(void *state)
{
    struct pprof_ext *x = state;
    while (x->pending != NULL) {
        struct pending *p = x->pending;
        struct pg_httpd_req *req = p->req;
        pending_unlink_free(p);
        pg_admin_reply_text(&x->http, req, 503, "pprofgate is shutting down");
    }
    pg_admin_ext_shutdown(x);
}

static void pprof_destroy(void *state)
{
    if (state != NULL) {
        pprof_shutdown(state);
    }
    pg_admin_ext_destroy(state);
}

const struct pg_component_ops pg_extension_pprof = {
    .type = "pprof",
    .alias = NULL,
    .kind = PG_KIND_EXTENSION,
    .fields = pprof_fields,
    .doc = "Go-style /debug/pprof/heap, /allocs and /symbol from the embedded heap sampler",
    .create = pprof_create,
    .start = pprof_start,
    .process = NULL,
    .consume = NULL,
    .shutdown = pprof_shutdown,
    .idle = NULL,
    .destroy = pprof_destroy,
};
