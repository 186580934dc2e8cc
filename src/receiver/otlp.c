/* SPDX-License-Identifier: Apache-2.0
 * Receiver `otlp`: OTLP Profiles over gRPC (default localhost:4317, the
 * SDKs' default export) and over HTTP (default localhost:4318, protobuf
 * and JSON), with the Collector's keys. This file is the component: config
 * checks, metrics, listeners, shutdown. The transports are otlp_grpc.c and
 * otlp_http.c, the path both share into the pipeline otlp_ingest.c, the
 * config tables otlp_config.c. Each message is decoded into the arena that
 * becomes its batch; nothing that fails validation is forwarded
 * (docs/otlp-receiver.md). */
#define _GNU_SOURCE /* pthread_setname_np */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "codec/codec.h"
#include "core/cgroup.h"
#include "core/config.h"
#include "core/log.h"
#include "grpc/grpc_server.h"
#include "http/http_request.h"
#include "http/listener.h"
#include "http/tls.h"
#include "pipeline/receiver_metrics.h"
#include "receiver/otlp_internal.h"

#define MAX_HEADER_BYTES (64 * 1024)
#define MAX_TARGET_BYTES (8 * 1024)
#define AUTH_FAIL_BURST 10.0
#define AUTH_FAIL_PER_SEC 1.0
#define LISTEN_BACKLOG (SOMAXCONN > 4096 ? SOMAXCONN : 4096)
#define MIB ((size_t)1 << 20)

/* ---- create: config checks, no sockets ----------------------------------- */

/* The decoder's caps: the configured ones, else the pprof receiver's
 * defaults (pprof/translate.h) for the tables both have. */
static void apply_limits(struct otlp_rx *rx)
{
    const struct otlp_limits_cfg *l = &rx->cfg.limits;
    struct pg_otlp_limits *o = &rx->limits;

#define LIM(dst, src, def) o->dst = l->src > 0 ? (size_t)l->src : (size_t)(def)
    LIM(max_samples, max_samples, 2u << 20);
    LIM(max_profiles, max_profiles, 64u << 10);
    LIM(max_locations, max_locations, 1u << 20);
    LIM(max_functions, max_functions, 1u << 20);
    LIM(max_mappings, max_mappings, 64u << 10);
    LIM(max_strings, max_strings, 4u << 20);
    LIM(max_stacks, max_stacks, 2u << 20);
    LIM(max_attributes, max_attributes, 1u << 20);
    LIM(max_links, max_links, 1u << 20);
    LIM(max_string_bytes, max_string_bytes, 64u << 20);
    LIM(max_stack_depth, max_stack_depth, 4096);
    LIM(max_attrs_per_sample, max_labels_per_sample, 256);
    LIM(max_sample_values, max_sample_values, 64);
#undef LIM
    o->max_anyvalue_depth = 0; /* the decoder's default */
    rx->dopts.limits = &rx->limits;
    rx->dopts.convert_v1_9 = rx->cfg.convert_v1_9;
}

/* endpoint + transport of one side into its listen address. */
static size_t check_endpoint(const struct pg_component_ctx *ctx, const char *path,
                             const char *proto, const char *endpoint, int transport,
                             struct otlp_side *sd)
{
    if (transport == PG_TRANSPORT_UNIX) {
        snprintf(sd->listen_host, sizeof(sd->listen_host), "%s", endpoint ? endpoint : "");
        if (!pg_listen_host_ok(PG_TRANSPORT_UNIX, sd->listen_host)) {
            pg_diag_add(ctx->diag, ctx->config, path,
                        "protocols::%s::endpoint \"%s\": with transport unix, a socket file "
                        "path of 1 to 107 bytes", proto, endpoint ? endpoint : "");
            return 1;
        }
        return 0;
    }
    if (endpoint == NULL ||
        !pg_hostport_split(endpoint, sd->listen_host, sizeof(sd->listen_host), &sd->listen_port)) {
        pg_diag_add(ctx->diag, ctx->config, path,
                    "protocols::%s::endpoint \"%s\" is not host:port (e.g. localhost:%s, :%s)",
                    proto, endpoint ? endpoint : "", proto[0] == 'g' ? "4317" : "4318",
                    proto[0] == 'g' ? "4317" : "4318");
        return 1;
    }
    if (!pg_listen_host_ok((enum pg_transport)transport, sd->listen_host)) {
        pg_diag_add(ctx->diag, ctx->config, path,
                    "protocols::%s::endpoint \"%s\" is not an address of transport %s", proto,
                    endpoint, pg_transport_names[transport]);
        return 1;
    }
    return 0;
}

static size_t check_codings(const struct pg_component_ctx *ctx, const char *path,
                            const struct pg_strlist *list, unsigned *allowed)
{
    size_t problems = 0;

    *allowed = 0;
    for (size_t i = 0; i < list->n; i++) {
        const struct pg_codec *c = pg_codec_find(list->v[i], strlen(list->v[i]));

        if (c == NULL) {
            char names[128];

            pg_codec_list(pg_codec_all(), true, names, sizeof(names));
            pg_diag_add(ctx->diag, ctx->config, path,
                        "protocols::http::compression_algorithms: \"%s\" is not supported by "
                        "pprofgate; supported: %s", list->v[i], names);
            problems++;
            continue;
        }
        *allowed |= pg_codec_bit(c);
    }
    if (list->n == 0) {
        *allowed = pg_codec_all();
    }
    return problems;
}

/* TLS context and authenticator of one side, loaded now so `validate`
 * reports bad files. */
static size_t load_security(const struct pg_component_ctx *ctx, const char *path,
                            const char *proto, bool has_tls,
                            const struct pg_tls_server_options *tls, bool has_auth,
                            struct pg_auth_options *auth, struct otlp_side *sd)
{
    struct pg_status st;

    if (has_tls && pg_tls_server_ctx_new(tls, &sd->ssl_ctx, &st) != PG_ERR_OK) {
        pg_diag_add(ctx->diag, ctx->config, path, "protocols::%s::%s", proto,
                    pg_status_text(&st));
        return 1;
    }
    if (has_auth) {
        auth->log_name = ctx->log_name;
        if (pg_auth_new(auth, &sd->auth, &st) != PG_ERR_OK) {
            pg_diag_add(ctx->diag, ctx->config, path, "protocols::%s::auth: %s", proto,
                        pg_status_text(&st));
            return 1;
        }
    }
    return 0;
}

static void free_sides(struct otlp_rx *rx)
{
    for (int t = 0; t < OTLP_N_TRANSPORTS; t++) {
        if (rx->side[t].ssl_ctx != NULL) {
            SSL_CTX_free(rx->side[t].ssl_ctx);
            rx->side[t].ssl_ctx = NULL;
        }
        pg_auth_free(rx->side[t].auth);
        rx->side[t].auth = NULL;
    }
}

static enum pg_err otlp_create(const struct pg_component_ctx *ctx, void **state)
{
    struct otlp_rx *rx = calloc(1, sizeof(*rx));
    struct otlp_protocols_cfg *p;
    char path[256];
    size_t problems;

    *state = NULL;
    if (rx == NULL) {
        pg_diag_add(ctx->diag, ctx->config, ctx->id, "out of memory");
        return PG_ERR_CONFIG;
    }
    snprintf(path, sizeof(path), "receivers::%s", ctx->id);
    problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, pg_otlp_rx_fields, &rx->cfg,
                           path);
    p = &rx->cfg.protocols;
    if (!p->has_grpc && !p->has_http) {
        pg_diag_add(ctx->diag, ctx->config, path,
                    "must specify at least one protocol when using the OTLP receiver "
                    "(protocols: {grpc:, http:})");
        problems++;
    }
    if (p->has_grpc) {
        struct otlp_side *sd = &rx->side[OTLP_GRPC];
        int64_t mib = p->grpc.max_recv_msg_size_mib > 0 ? p->grpc.max_recv_msg_size_mib : 4;

        problems += check_endpoint(ctx, path, "grpc", p->grpc.endpoint, p->grpc.transport, sd);
        sd->max_msg = (size_t)mib * MIB;
        sd->include_metadata = p->grpc.include_metadata;
        /* grpc-encoding: identity, gzip and zstd (the Collector's gRPC
         * server also registers zstd; snappy is not in the codec table). */
        {
            const struct pg_codec *gz = pg_codec_find("gzip", 4);
            const struct pg_codec *zs = pg_codec_find("zstd", 4);

            sd->allowed = (gz != NULL ? pg_codec_bit(gz) : 0) | (zs != NULL ? pg_codec_bit(zs) : 0);
        }
    }
    if (p->has_http) {
        struct otlp_side *sd = &rx->side[OTLP_HTTP];
        const char *up = p->http.profiles_url_path;

        problems += check_endpoint(ctx, path, "http", p->http.endpoint, p->http.transport, sd);
        problems += check_codings(ctx, path, &p->http.compression_algorithms, &sd->allowed);
        sd->max_msg = (size_t)p->http.max_request_body_size;
        sd->include_metadata = p->http.include_metadata;
        if (up == NULL || up[0] != '/') {
            pg_diag_add(ctx->diag, ctx->config, path,
                        "protocols::http::profiles_url_path \"%s\" must start with /",
                        up ? up : "");
            problems++;
        }
        for (size_t i = 0; i < p->http.response_headers.n; i++) {
            if (!pg_http_header_ok(p->http.response_headers.keys[i],
                                   p->http.response_headers.values[i])) {
                pg_diag_add(ctx->diag, ctx->config, path,
                            "protocols::http::response_headers: \"%s\" is not a valid header",
                            p->http.response_headers.keys[i]);
                problems++;
            }
        }
    }
    if (problems == 0 && p->has_grpc) {
        problems += load_security(ctx, path, "grpc", p->grpc.has_tls, &p->grpc.tls,
                                  p->grpc.has_auth, &p->grpc.auth, &rx->side[OTLP_GRPC]);
    }
    if (problems == 0 && p->has_http) {
        problems += load_security(ctx, path, "http", p->http.has_tls, &p->http.tls,
                                  p->http.has_auth, &p->http.auth, &rx->side[OTLP_HTTP]);
    }
    if (problems > 0) {
        free_sides(rx);
        free(rx);
        return PG_ERR_CONFIG;
    }
    pthread_mutex_init(&rx->auth_mu, NULL);
    pg_rxh_reasons_init(&rx->reasons);
    rx->host = ctx->host;
    rx->id = ctx->id;
    rx->log_name = ctx->log_name;
    rx->next = ctx->next;
    apply_limits(rx);
    *state = rx;
    return PG_ERR_OK;
}

/* ---- start ---------------------------------------------------------------- */

static void metrics_init(struct otlp_rx *rx)
{
    static const double lat_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                         0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
    char labels[200];

    for (int t = 0; t < OTLP_N_TRANSPORTS; t++) {
        struct otlp_side *sd = &rx->side[t];

        snprintf(labels, sizeof(labels), "receiver=\"%s\",transport=\"%s\"", rx->id,
                 otlp_transport_names[t]);
        pg_receiver_sample_counters(labels, &sd->m_accepted, &sd->m_refused);
        sd->m_bytes = pg_metric_counter("pprofgate_receiver_received_bytes_total",
                                        "Request body bytes as received.", labels);
    }
    snprintf(labels, sizeof(labels), "receiver=\"%s\"", rx->id);
    rx->m_utf8 = pg_metric_counter("pprofgate_receiver_otlp_utf8_repaired_total",
                                   "OTLP strings that were not valid UTF-8, repaired to U+FFFD.",
                                   labels);
    rx->m_held = pg_metric_counter("pprofgate_receiver_held_requests_total",
                                   "Requests held unanswered while an exporter with "
                                   "block_on_overflow had a full queue.", labels);
    rx->m_latency = pg_metric_histogram("pprofgate_receiver_otlp_decode_seconds",
                                        "Time to decode and validate one OTLP request.", labels,
                                        lat_buckets, sizeof(lat_buckets) / sizeof(lat_buckets[0]));
}

/* The address a socket is bound to, for the log (tests read the port). */
static void bound_where(int fd, const struct otlp_side *sd, int transport, char *where,
                        size_t size)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char addr[INET6_ADDRSTRLEN] = "?";
    unsigned port = sd->listen_port;

    if (transport == PG_TRANSPORT_UNIX) {
        snprintf(where, size, "unix:%s", sd->listen_host);
        return;
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;

            inet_ntop(AF_INET, &in4->sin_addr, addr, sizeof(addr));
            port = ntohs(in4->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

            inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
            port = ntohs(in6->sin6_port);
        }
    }
    pg_http_hostport(where, size, addr, port);
}

/* Loops to run: `loops`, or one per usable CPU (capped); one when the
 * pipeline must be entered from the main loop only (@why says why). */
static size_t loops_wanted(struct otlp_rx *rx, char *why, size_t why_size)
{
    int64_t n = rx->cfg.loops;

    why[0] = '\0';
    if (n <= 0) {
        n = pg_usable_cpus();
        n = n < 1 ? 1 : n > OTLP_MAX_LOOPS ? OTLP_MAX_LOOPS : n;
    }
    if (n > 1 && (rx->next == NULL || rx->next->any_thread == NULL ||
                  !rx->next->any_thread(rx->next, why, why_size))) {
        if (why[0] == '\0') {
            snprintf(why, why_size, "the pipeline is entered from the main loop only");
        }
        return 1;
    }
    return (size_t)n;
}

/* @n sockets of one protocol (SO_REUSEPORT siblings; unix has one, and
 * then *@n becomes 1). */
static enum pg_err listen_side(struct otlp_rx *rx, enum otlp_transport t, const char *endpoint,
                               int transport, int *fds, size_t *n, struct pg_status *st)
{
    struct otlp_side *sd = &rx->side[t];
    const char *host = transport == PG_TRANSPORT_TCP && sd->listen_host[0] == '\0'
                           ? "0.0.0.0"
                           : sd->listen_host;
    char why[256];
    int made = pg_listen_group((enum pg_transport)transport, host, sd->listen_port,
                               LISTEN_BACKLOG, fds, *n, why, sizeof(why));

    if (made < 0) {
        return pg_status_set(st, PG_ERR_IO, "%s: cannot listen on %s (%s, %s): %s", rx->log_name,
                             endpoint, otlp_transport_names[t], pg_transport_names[transport],
                             why);
    }
    sd->unix_path = transport == PG_TRANSPORT_UNIX;
    *n = (size_t)made;
    return PG_ERR_OK;
}

/* How often a stopped loop looks whether its last connection closed. */
#define LOOP_DRAIN_POLL_US 10000

static bool loop_quiet(const struct otlp_loop *lp)
{
    return (lp->httpd == NULL || pg_httpd_open_connections(lp->httpd) == 0) &&
           (lp->grpcd == NULL || pg_grpc_server_open_calls(lp->grpcd) == 0);
}

static void loop_stop_accepting(struct otlp_loop *lp)
{
    if (lp->grpcd != NULL) {
        pg_grpc_server_stop_accepting(lp->grpcd); /* GOAWAY: calls in flight finish */
    }
    if (lp->httpd != NULL) {
        pg_httpd_stop_accepting(lp->httpd); /* requests finish, Connection: close */
    }
}

static void loop_drain_check(evutil_socket_t fd, short what, void *arg)
{
    struct otlp_loop *lp = arg;
    struct timeval tv = {0, LOOP_DRAIN_POLL_US};

    (void)fd;
    (void)what;
    if (loop_quiet(lp)) {
        __atomic_store_n(&lp->drained, true, __ATOMIC_RELEASE);
        return;
    }
    evtimer_add(lp->drain_ev, &tv);
}

/* A loop thread: the main thread asked it to stop accepting or to end. */
static void loop_cmd(evutil_socket_t fd, short what, void *arg)
{
    struct otlp_loop *lp = arg;
    int cmd = __atomic_load_n(&lp->cmd, __ATOMIC_ACQUIRE);
    uint64_t n;

    (void)what;
    (void)!read(fd, &n, sizeof(n));
    if (cmd >= OTLP_LOOP_STOP && !evtimer_pending(lp->drain_ev, NULL) &&
        !__atomic_load_n(&lp->drained, __ATOMIC_ACQUIRE)) {
        otlp_held_drain(lp); /* exporters take no more data: nobody held gets room */
        loop_stop_accepting(lp);
        loop_drain_check(-1, 0, lp);
    }
    if (cmd == OTLP_LOOP_EXIT) {
        event_base_loopbreak(lp->base);
    }
}

static void loop_send(struct otlp_loop *lp, int cmd)
{
    uint64_t one = 1;

    __atomic_store_n(&lp->cmd, cmd, __ATOMIC_RELEASE);
    (void)!write(lp->cmd_fd, &one, sizeof(one));
}

static void *loop_main(void *arg)
{
    struct otlp_loop *lp = arg;
    char name[16];

    snprintf(name, sizeof(name), "pg-otlp-%u", lp->idx);
    (void)pthread_setname_np(pthread_self(), name);
    event_base_loop(lp->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Loop @lp (idx > 0): its own base (no locks: only its thread uses it)
 * and its command eventfd. */
static enum pg_err loop_setup(struct otlp_rx *rx, struct otlp_loop *lp, struct pg_status *st)
{
    struct event_config *ec = event_config_new();

    if (ec != NULL) {
        event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK);
        lp->base = event_base_new_with_config(ec);
        event_config_free(ec);
    }
    lp->cmd_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (lp->base == NULL || lp->cmd_fd < 0) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot create event loop %u", rx->log_name,
                             lp->idx);
    }
    lp->cmd_ev = event_new(lp->base, lp->cmd_fd, EV_READ | EV_PERSIST, loop_cmd, lp);
    lp->drain_ev = evtimer_new(lp->base, loop_drain_check, lp);
    if (lp->cmd_ev == NULL || lp->drain_ev == NULL || event_add(lp->cmd_ev, NULL) != 0) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot set up event loop %u", rx->log_name,
                             lp->idx);
    }
    return PG_ERR_OK;
}

static enum pg_err start_http(struct otlp_rx *rx, const int *fds, struct pg_status *st)
{
    const struct otlp_http_cfg *h = &rx->cfg.protocols.http;
    struct pg_httpd_limits lim = {
        .read_header_timeout_ns = h->read_header_timeout,
        .read_timeout_ns = h->read_timeout,
        .write_timeout_ns = h->write_timeout,
        .idle_timeout_ns = h->idle_timeout,
        .min_body_rate = h->min_body_rate,
        .max_body = h->max_request_body_size,
        .max_header_bytes = MAX_HEADER_BYTES,
        .max_target = MAX_TARGET_BYTES,
        .max_headers = (size_t)h->max_request_headers,
        .max_connections = (size_t)h->max_connections,
        .max_connections_per_peer = (size_t)h->max_connections_per_peer,
        .max_requests_per_connection = (size_t)h->max_requests_per_connection,
        .keep_alives = h->keep_alives_enabled,
    };

    for (size_t i = 0; i < rx->n_loops; i++) {
        struct otlp_loop *lp = &rx->loops[i];

        lp->httpd = i == 0 ? pg_httpd_new(lp->base, fds[0], rx->side[OTLP_HTTP].ssl_ctx, &lim,
                                          &otlp_httpd_ops, lp)
                           : pg_httpd_new_sibling(rx->loops[0].httpd, lp->base, fds[i], lp);
        if (lp->httpd == NULL) {
            for (size_t j = i + 1; j < rx->n_loops; j++) {
                close(fds[j]);
            }
            return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot create the HTTP server",
                                 rx->log_name);
        }
    }
    return PG_ERR_OK;
}

static enum pg_err start_grpc(struct otlp_rx *rx, const int *fds, struct pg_status *st)
{
    for (size_t i = 0; i < rx->n_loops; i++) {
        enum pg_err err = otlp_grpc_start(&rx->loops[i], fds[i], st);

        if (err != PG_ERR_OK) {
            for (size_t j = i + 1; j < rx->n_loops; j++) {
                close(fds[j]);
            }
            return err;
        }
    }
    return PG_ERR_OK;
}

static enum pg_err otlp_start(void *state, struct pg_status *st)
{
    struct otlp_rx *rx = state;
    const struct otlp_protocols_cfg *p = &rx->cfg.protocols;
    int gfds[OTLP_MAX_LOOPS], hfds[OTLP_MAX_LOOPS];
    char where[300], one_why[160];
    size_t n = 0, ng, nh;
    enum pg_err err;

    metrics_init(rx);
    rx->auth_rl = calloc(1, sizeof(*rx->auth_rl));
    if (rx->auth_rl == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", rx->log_name);
    }
    pg_peer_ratelimit_init(rx->auth_rl, AUTH_FAIL_PER_SEC, AUTH_FAIL_BURST);
    /* Samples stay in wire form in a large profile when nothing downstream reads them as
     * structs (a request then takes ~2x its size in memory instead of ~5x). */
    if (rx->next != NULL && rx->next->lazy_samples != NULL && rx->next->lazy_samples(rx->next)) {
        rx->dopts.lazy_min_samples = OTLP_LAZY_MIN_SAMPLES;
    }
    ng = nh = loops_wanted(rx, one_why, sizeof(one_why));
    if (p->has_grpc &&
        listen_side(rx, OTLP_GRPC, p->grpc.endpoint, p->grpc.transport, gfds, &ng, st) != PG_ERR_OK) {
        return PG_ERR_IO;
    }
    if (p->has_http &&
        listen_side(rx, OTLP_HTTP, p->http.endpoint, p->http.transport, hfds, &nh, st) != PG_ERR_OK) {
        for (size_t i = 0; p->has_grpc && i < ng; i++) {
            close(gfds[i]);
        }
        return PG_ERR_IO;
    }
    n = ng < nh ? ng : nh; /* a unix socket has one: then one loop serves both */
    if (n == 1 && (ng > 1 || nh > 1)) {
        snprintf(one_why, sizeof(one_why), "transport unix has one socket");
    }
    for (size_t i = n; p->has_grpc && i < ng; i++) {
        close(gfds[i]);
    }
    for (size_t i = n; p->has_http && i < nh; i++) {
        close(hfds[i]);
    }
    rx->loops = aligned_alloc(OTLP_LOOP_LINE, n * sizeof(*rx->loops));
    if (rx->loops == NULL) {
        for (size_t i = 0; i < n; i++) {
            if (p->has_grpc) {
                close(gfds[i]);
            }
            if (p->has_http) {
                close(hfds[i]);
            }
        }
        return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", rx->log_name);
    }
    memset(rx->loops, 0, n * sizeof(*rx->loops));
    rx->n_loops = n;
    for (size_t i = 0; i < n; i++) {
        rx->loops[i].rx = rx;
        rx->loops[i].idx = (unsigned)i;
        rx->loops[i].cmd_fd = -1;
    }
    rx->loops[0].base = rx->host->base;
    err = PG_ERR_OK;
    for (size_t i = 1; i < n && err == PG_ERR_OK; i++) {
        err = loop_setup(rx, &rx->loops[i], st);
    }
    for (size_t i = 0; i < n && err == PG_ERR_OK; i++) {
        if (!otlp_held_init(&rx->loops[i])) {
            err = pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", rx->log_name);
        }
    }
    if (err == PG_ERR_OK && p->has_grpc) {
        err = start_grpc(rx, gfds, st);
    } else if (p->has_grpc) {
        for (size_t i = 0; i < n; i++) {
            close(gfds[i]);
        }
    }
    if (err == PG_ERR_OK && p->has_http) {
        err = start_http(rx, hfds, st);
    } else if (p->has_http) {
        for (size_t i = 0; i < n; i++) {
            close(hfds[i]);
        }
    }
    if (err != PG_ERR_OK) {
        return err; /* otlp_destroy frees what was set up */
    }
    if (p->has_grpc) {
        bound_where(pg_grpc_server_fd(rx->loops[0].grpcd), &rx->side[OTLP_GRPC],
                    p->grpc.transport, where, sizeof(where));
        /* Integration tests read the bound port from this line (endpoint :0). */
        pg_log_info(rx->log_name, "grpc listening on %s (%s%s, max message %zu bytes)", where,
                    PG_OTLP_EXPORT_PATH, rx->side[OTLP_GRPC].ssl_ctx ? ", TLS" : "",
                    rx->side[OTLP_GRPC].max_msg);
    }
    if (p->has_http) {
        bound_where(pg_httpd_fd(rx->loops[0].httpd), &rx->side[OTLP_HTTP], p->http.transport,
                    where, sizeof(where));
        pg_log_info(rx->log_name, "http listening on %s (POST %s, %s, max body %zu bytes)",
                    where, p->http.profiles_url_path,
                    rx->side[OTLP_HTTP].ssl_ctx ? "TLS" : "plain", rx->side[OTLP_HTTP].max_msg);
    }
    /* Threads last: from here on each loop runs on its own. */
    for (size_t i = 1; i < n; i++) {
        struct otlp_loop *lp = &rx->loops[i];
        int e = pthread_create(&lp->thread, NULL, loop_main, lp);

        if (e != 0) {
            return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot start event loop %zu: %s",
                                 rx->log_name, i, strerror(e));
        }
        lp->thread_started = true;
    }
    if (one_why[0] != '\0' && rx->cfg.loops != 1) {
        pg_log_info(rx->log_name, "1 event loop (%s)", one_why);
    } else if (n > 1) {
        pg_log_info(rx->log_name, "%zu event loops (SO_REUSEPORT)", n);
    }
    return PG_ERR_OK;
}

/* ---- lifecycle ---------------------------------------------------------- */

static void remove_socket_files(struct otlp_rx *rx)
{
    for (int t = 0; t < OTLP_N_TRANSPORTS; t++) {
        if (rx->side[t].unix_path) {
            unlink(rx->side[t].listen_host);
            rx->side[t].unix_path = false;
        }
    }
}

static void otlp_shutdown(void *state)
{
    struct otlp_rx *rx = state;

    if (rx == NULL || rx->draining) {
        return;
    }
    rx->draining = true;
    /* Calls and requests in flight finish; the other loops do the same on
     * their own threads. */
    if (rx->n_loops > 0) {
        otlp_held_drain(&rx->loops[0]);
        loop_stop_accepting(&rx->loops[0]);
    }
    for (size_t i = 1; i < rx->n_loops; i++) {
        if (rx->loops[i].thread_started) {
            loop_send(&rx->loops[i], OTLP_LOOP_STOP);
        }
    }
    remove_socket_files(rx);
}

static bool otlp_idle(void *state)
{
    const struct otlp_rx *rx = state;

    if (rx == NULL || !rx->draining) {
        return true;
    }
    if (rx->n_loops > 0 && !loop_quiet(&rx->loops[0])) {
        return false;
    }
    for (size_t i = 1; i < rx->n_loops; i++) {
        if (rx->loops[i].thread_started &&
            !__atomic_load_n(&rx->loops[i].drained, __ATOMIC_ACQUIRE)) {
            return false; /* a call on that loop is not answered yet */
        }
    }
    return true;
}

static void otlp_destroy(void *state)
{
    struct otlp_rx *rx = state;

    if (rx == NULL) {
        return;
    }
    /* The other loops end first: from here on this thread alone touches
     * their servers. */
    for (size_t i = 1; i < rx->n_loops; i++) {
        if (rx->loops[i].thread_started) {
            loop_send(&rx->loops[i], OTLP_LOOP_EXIT);
            pthread_join(rx->loops[i].thread, NULL);
        }
    }
    for (size_t i = 0; i < rx->n_loops; i++) {
        struct otlp_loop *lp = &rx->loops[i];

        otlp_held_free(lp); /* held requests hold the servers' requests and calls */
        if (lp->grpcd != NULL) {
            pg_grpc_server_free(lp->grpcd);
        }
        if (lp->httpd != NULL) {
            pg_httpd_free(lp->httpd);
        }
        if (lp->cmd_ev != NULL) {
            event_free(lp->cmd_ev);
        }
        if (lp->drain_ev != NULL) {
            event_free(lp->drain_ev);
        }
        if (lp->cmd_fd >= 0) {
            close(lp->cmd_fd);
        }
        if (i > 0 && lp->base != NULL) {
            event_base_free(lp->base);
        }
    }
    free(rx->loops);
    remove_socket_files(rx);
    free_sides(rx); /* after the connections using the TLS contexts */
    free(rx->auth_rl);
    pg_rxh_reasons_destroy(&rx->reasons);
    pthread_mutex_destroy(&rx->auth_mu);
    free(rx);
}

static const char *otlp_metadata_use(void *state)
{
    const struct otlp_rx *rx = state;

    if (rx->cfg.protocols.has_grpc && rx->cfg.protocols.grpc.include_metadata) {
        return "protocols::grpc::include_metadata: true";
    }
    if (rx->cfg.protocols.has_http && rx->cfg.protocols.http.include_metadata) {
        return "protocols::http::include_metadata: true";
    }
    return NULL;
}

const struct pg_component_ops pg_receiver_otlp = {
    .type = "otlp",
    .alias = NULL,
    .kind = PG_KIND_RECEIVER,
    .fields = pg_otlp_rx_fields,
    .doc = "OTLP Profiles over gRPC (:4317) and HTTP protobuf/JSON (:4318), the Collector's "
           "otlp receiver",
    .create = otlp_create,
    .start = otlp_start,
    .process = NULL,
    .consume = NULL,
    .shutdown = otlp_shutdown,
    .idle = otlp_idle,
    .destroy = otlp_destroy,
    .metadata_use = otlp_metadata_use,
};
