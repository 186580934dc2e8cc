/* SPDX-License-Identifier: Apache-2.0
 * Receiver `pprof`: the collector's push endpoint POST /v1/pprof on
 * pprofgate's HTTP/1.1 server (http_server.h: absolute deadlines, connection
 * caps at accept, the head judged before any body byte is read), the heap
 * sampler's own profiles (`self:`) and pull mode (`scrape:`, src/scrape).
 * This file is the component: config checks, metrics, listener start and
 * shutdown. The HTTP handling is in pprof_handler.c, the worker pool in
 * pprof_workers.c, a job's life (delivery, held queue) in pprof_jobs.c,
 * the config tables in pprof_config.c. Each request gets its own arenas: the body and its
 * Content-Encoding layers live in a scratch arena that dies with the
 * request; the translated OTLP request lives in the batch arena handed to
 * the pipeline. Status codes follow the error enum (docs/receiver.md lists
 * where they differ from the collector's and why). */
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
#include "core/thread_sched.h"
#include "pipeline/receiver_metrics.h"
#include "http/listener.h"
#include "http/tls.h"
#include "receiver/pprof_internal.h"

/* The cap on one request's head (Go's default is 1 MiB; a push needs a few
 * KiB, and every open connection may hold this much). */
#define MAX_HEADER_BYTES (64 * 1024)
#define MAX_TARGET_BYTES (8 * 1024)
/* Failed authentications per peer: a burst, then one per second. */
#define AUTH_FAIL_BURST 10.0
#define AUTH_FAIL_PER_SEC 1.0
/* Go's net.Listen asks for the kernel's maximum (net.core.somaxconn caps it). */
#define LISTEN_BACKLOG (SOMAXCONN > 4096 ? SOMAXCONN : 4096)
/* Scheduler slice (Linux 6.12+) of the loop thread: a short one makes it
 * run first when it wakes (the default is ~3 ms, paid at every wakeup of a
 * request). */
#define LOOP_SLICE_NS (500u * 1000u)

/* ---- create: config checks, no sockets ----------------------------------- */

/* rx->translate of the pprof flavor: the body is one pprof. */
static enum pg_err pprof_translate(struct rx *rx, struct rx_job *job, struct pg_arena **body_arena,
                                   const uint8_t *body, size_t len, struct pg_otlp_request **out)
{
    return pg_pprof_translate_owned(job->arena, body_arena, body, len, &rx->topts, out,
                                    &job->stats, &job->st);
}

static void apply_limits(struct rx *rx)
{
    const struct rx_limits_cfg *l = &rx->cfg.limits;
    struct pg_pprof_limits *o = &rx->topts.limits;

    o->max_inflated_bytes =
        l->max_inflated_bytes ? l->max_inflated_bytes : rx->cfg.server.max_request_body_size;
#define OVR(f)                                                                                     \
    if (l->f > 0) {                                                                                \
        o->f = (size_t)l->f;                                                                       \
    }
    OVR(max_gzip_layers)
    OVR(max_samples)
    OVR(max_locations)
    OVR(max_functions)
    OVR(max_mappings)
    OVR(max_strings)
    OVR(max_string_bytes)
    OVR(max_stack_depth)
    OVR(max_labels_per_sample)
    OVR(max_sample_types)
#undef OVR
}

enum pg_err pg_rx_create(const struct pg_component_ctx *ctx, const struct pg_field *fields,
                         enum rx_flavor flavor, void **state)
{
    struct rx *rx = calloc(1, sizeof(*rx));
    char path[256];
    size_t problems;

    *state = NULL;
    if (rx == NULL) {
        pg_diag_add(ctx->diag, ctx->config, ctx->id, "out of memory");
        return PG_ERR_CONFIG;
    }
    pthread_mutex_init(&rx->log_mu, NULL);
    pthread_mutex_init(&rx->auth_mu, NULL);
    pg_rxh_reasons_init(&rx->reasons);
    snprintf(path, sizeof(path), "receivers::%s", ctx->id);
    rx->flavor = flavor;
    problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, fields, &rx->cfg, path);
    problems += pg_scrape_config_parse(ctx->config_arena, ctx->diag, rx->cfg.scrape,
                                       rx->cfg.remote, path, &rx->scrape_cfg);
    if (!rx->cfg.has_server && !rx->cfg.has_self && rx->cfg.scrape == NULL &&
        rx->cfg.remote == NULL) {
        /* The collector refuses an empty receiver; an operator writing
         * `pprof:` means the push endpoint, so give them that. */
        rx->cfg.has_server = true;
    }
    if (rx->cfg.has_server) {
        const struct rx_server_cfg *s = &rx->cfg.server;

        if (s->transport == PG_TRANSPORT_UNIX) {
            snprintf(rx->listen_host, sizeof(rx->listen_host), "%s", s->endpoint ? s->endpoint : "");
            if (!pg_listen_host_ok(PG_TRANSPORT_UNIX, rx->listen_host)) {
                pg_diag_add(ctx->diag, ctx->config, path,
                            "server::endpoint \"%s\": with transport unix, a socket file path of "
                            "1 to 107 bytes",
                            s->endpoint ? s->endpoint : "");
                problems++;
            }
        } else if (s->endpoint == NULL ||
                   !pg_hostport_split(s->endpoint, rx->listen_host, sizeof(rx->listen_host),
                                      &rx->listen_port)) {
            pg_diag_add(ctx->diag, ctx->config, path,
                        "server::endpoint \"%s\" is not host:port (e.g. localhost:4040, :4040, "
                        "[::1]:4040)",
                        s->endpoint ? s->endpoint : "");
            problems++;
        } else if (!pg_listen_host_ok((enum pg_transport)s->transport, rx->listen_host)) {
            pg_diag_add(ctx->diag, ctx->config, path,
                        "server::endpoint \"%s\" is not an address of transport %s",
                        s->endpoint, pg_transport_names[s->transport]);
            problems++;
        }
        for (size_t i = 0; i < s->compression_algorithms.n; i++) {
            const char *name = s->compression_algorithms.v[i];
            const struct pg_codec *c = pg_codec_find(name, strlen(name));

            if (c == NULL) {
                char names[128];

                pg_codec_list(pg_codec_all(), true, names, sizeof(names));
                pg_diag_add(ctx->diag, ctx->config, path,
                            "server::compression_algorithms: \"%s\" is not supported by pprofgate; "
                            "supported: %s",
                            name, names);
                problems++;
                continue;
            }
            rx->allowed |= pg_codec_bit(c);
        }
        if (s->compression_algorithms.n == 0) {
            rx->allowed = pg_codec_all();
        }
        for (size_t i = 0; i < s->response_headers.n; i++) {
            if (!pg_http_header_ok(s->response_headers.keys[i], s->response_headers.values[i])) {
                pg_diag_add(ctx->diag, ctx->config, path,
                            "server::response_headers: \"%s\" is not a valid header",
                            s->response_headers.keys[i]);
                problems++;
            }
        }
    }
    if (problems == 0 && rx->cfg.has_server && rx->cfg.server.has_tls) {
        /* Load certificates now, so `validate` reports bad files. */
        struct pg_status tst;

        if (pg_tls_server_ctx_new(&rx->cfg.server.tls, &rx->ssl_ctx, &tst) != PG_ERR_OK) {
            pg_diag_add(ctx->diag, ctx->config, path, "server::%s", pg_status_text(&tst));
            problems++;
        }
    }
    if (problems == 0 && rx->cfg.has_server && rx->cfg.server.has_auth) {
        struct pg_status ast;

        rx->cfg.server.auth.log_name = ctx->log_name;
        if (pg_auth_new(&rx->cfg.server.auth, &rx->auth, &ast) != PG_ERR_OK) {
            pg_diag_add(ctx->diag, ctx->config, path, "server::auth: %s", pg_status_text(&ast));
            problems++;
        }
    }
    if (problems > 0) {
        if (rx->ssl_ctx != NULL) {
            SSL_CTX_free(rx->ssl_ctx);
        }
        pg_scrape_config_free(&rx->scrape_cfg);
        free(rx);
        return PG_ERR_CONFIG;
    }
    rx->host = ctx->host;
    rx->id = ctx->id;
    rx->log_name = ctx->log_name;
    rx->next = ctx->next;
    rx->job_done = pg_rx_job_done;
    rx->translate = pprof_translate;
    pg_translate_opts_default(&rx->topts);
    rx->topts.trace_id_label = rx->cfg.trace_id_label;
    rx->topts.span_id_label = rx->cfg.span_id_label;
    rx->topts.include_original_payload = rx->cfg.include_original_payload;
    if (ctx->host != NULL && ctx->host->version != NULL) {
        rx->topts.scope_version = ctx->host->version;
    }
    apply_limits(rx);
    rx->rl = (struct pg_log_ratelimit)PG_LOG_RATELIMIT_INIT(1.0, 10.0);
    if (rx->cfg.has_self) {
        rx->self = pg_pprof_self_create(ctx->host, ctx->next, rx->cfg.self.collection_interval,
                                        &rx->topts);
        if (rx->self == NULL) {
            pg_diag_add(ctx->diag, ctx->config, path, "self: out of memory");
            free(rx);
            return PG_ERR_CONFIG;
        }
    }
    if (rx->scrape_cfg.n_jobs > 0) {
        size_t cap = (size_t)(rx->cfg.has_server ? rx->cfg.server.max_request_body_size
                                                 : 20u << 20);

        for (size_t i = 0; i < rx->scrape_cfg.n_jobs; i++) {
            char desc[1024];

            /* The effective profile set, here so `validate` shows it too. */
            pg_scrape_job_describe(&rx->scrape_cfg.jobs[i], desc, sizeof(desc));
            pg_log_info(ctx->log_name, "scrape job %s: %s", rx->scrape_cfg.jobs[i].job_name, desc);
        }
        rx->scraper = pg_scraper_create(ctx->host, ctx->next, &rx->scrape_cfg, &rx->topts, ctx->id,
                                        cap, rx->cfg.server.default_service_name);
        if (rx->scraper == NULL) {
            pg_diag_add(ctx->diag, ctx->config, path, "scrape: out of memory");
            pg_scrape_config_free(&rx->scrape_cfg);
            free(rx);
            return PG_ERR_CONFIG;
        }
    }
    *state = rx;
    return PG_ERR_OK;
}

/* ---- metrics ---------------------------------------------------------- */

static void metrics_init(struct rx *rx)
{
    static const double lat_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                         0.05,   0.1,   0.25,   0.5,   1.0,  2.5};
    char labels[200];

    snprintf(labels, sizeof(labels), "receiver=\"%s\",transport=\"http\"", rx->id);
    pg_receiver_sample_counters(labels, &rx->m_accepted, &rx->m_refused);
    rx->m_bytes = pg_metric_counter("pprofgate_receiver_received_bytes_total",
                                    "Request body bytes as received.", labels);
    rx->m_inflated = pg_metric_counter("pprofgate_receiver_inflated_bytes_total",
                                       "Bytes produced by Content-Encoding and gzip layers.",
                                       labels);
    rx->m_links = pg_metric_counter("pprofgate_receiver_links_total",
                                    "Links created from trace/span id labels.", labels);
    rx->m_latency = pg_metric_histogram("pprofgate_receiver_translate_seconds",
                                        "Time to decode and translate one request.", labels,
                                        lat_buckets, sizeof(lat_buckets) / sizeof(lat_buckets[0]));
    rx->m_abandoned = pg_metric_counter("pprofgate_receiver_abandoned_requests_total",
                                        "Requests dropped because the client closed its "
                                        "connection before the answer.", labels);
    rx->m_held = pg_metric_counter("pprofgate_receiver_held_requests_total",
                                   "Requests held unanswered while an exporter with "
                                   "block_on_overflow had a full queue.", labels);
    for (int e = 0; e < PG_HTTPD_N_EVENTS; e++) {
        snprintf(labels, sizeof(labels), "receiver=\"%s\",reason=\"%s\"", rx->id,
                 pg_httpd_event_names[e]);
        rx->m_conn_events[e] = pg_metric_counter(
            e <= PG_HTTPD_ACCEPT_PAUSED ? "pprofgate_receiver_refused_connections_total"
                                        : "pprofgate_receiver_closed_connections_total",
            e <= PG_HTTPD_ACCEPT_PAUSED
                ? "Connections refused at accept (caps) or accept pauses (fd exhaustion)."
                : "Connections closed by a deadline or the minimum body rate.",
            labels);
    }
}

/* ---- event loops --------------------------------------------------------- */

/* How often a stopped loop looks whether its last connection closed. */
#define LOOP_DRAIN_POLL_US 10000

static void loop_drain_check(evutil_socket_t fd, short what, void *arg)
{
    struct rx_loop *lp = arg;
    struct timeval tv = {0, LOOP_DRAIN_POLL_US};

    (void)fd;
    (void)what;
    if (pg_httpd_open_connections(lp->httpd) == 0) {
        __atomic_store_n(&lp->drained, true, __ATOMIC_RELEASE);
        return;
    }
    evtimer_add(lp->drain_ev, &tv);
}

/* A loop thread: the main thread asked it to stop accepting (it then
 * drains its connections and says so) or to end its loop. */
static void loop_cmd(evutil_socket_t fd, short what, void *arg)
{
    struct rx_loop *lp = arg;
    int cmd = __atomic_load_n(&lp->cmd, __ATOMIC_ACQUIRE);
    uint64_t n;

    (void)what;
    (void)!read(fd, &n, sizeof(n));
    if (cmd >= LOOP_STOP && pg_httpd_fd(lp->httpd) >= 0) {
        pg_rx_held_drain(lp);
        pg_httpd_stop_accepting(lp->httpd);
        loop_drain_check(-1, 0, lp);
    }
    if (cmd == LOOP_EXIT) {
        event_base_loopbreak(lp->base);
    }
}

static void loop_send(struct rx_loop *lp, int cmd)
{
    uint64_t one = 1;

    __atomic_store_n(&lp->cmd, cmd, __ATOMIC_RELEASE);
    (void)!write(lp->cmd_fd, &one, sizeof(one));
}

static void *loop_main(void *arg)
{
    struct rx_loop *lp = arg;
    char name[16];

    /* bench/http_load.sh sums the CPU of the threads named so. */
    snprintf(name, sizeof(name), "pg-loop-%u", lp->idx);
    (void)pthread_setname_np(pthread_self(), name);
    (void)pg_sched_latency_thread(LOOP_SLICE_NS);
    event_base_loop(lp->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Loops to run: server.loops, or one per usable CPU (capped); one when
 * the pipeline must be entered from the main loop only (@why says why). */
static size_t loops_wanted(struct rx *rx, char *why, size_t why_size)
{
    int64_t n = rx->cfg.server.loops;

    why[0] = '\0';
    if (n <= 0) {
        n = pg_usable_cpus();
        n = n < 1 ? 1 : n > MAX_LOOPS ? MAX_LOOPS : n;
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

/* Loop @lp (idx > 0): its own base (no locks: only its thread uses it),
 * its server on @fd sharing loop 0's caps, and its command eventfd. */
static enum pg_err loop_setup(struct rx *rx, struct rx_loop *lp, int fd, struct pg_status *st)
{
    struct event_config *ec = event_config_new();

    if (ec != NULL) {
        event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK);
        lp->base = event_base_new_with_config(ec);
        event_config_free(ec);
    }
    if (lp->base == NULL) {
        close(fd);
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot create event loop %u", rx->log_name,
                             lp->idx);
    }
    lp->httpd = pg_httpd_new_sibling(rx->loops[0].httpd, lp->base, fd, lp);
    lp->cmd_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (lp->httpd == NULL || lp->cmd_fd < 0) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot set up event loop %u", rx->log_name,
                             lp->idx);
    }
    lp->cmd_ev = event_new(lp->base, lp->cmd_fd, EV_READ | EV_PERSIST, loop_cmd, lp);
    lp->drain_ev = evtimer_new(lp->base, loop_drain_check, lp);
    if (lp->cmd_ev == NULL || lp->drain_ev == NULL || event_add(lp->cmd_ev, NULL) != 0 ||
        !pg_rx_held_init(lp)) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot set up event loop %u", rx->log_name,
                             lp->idx);
    }
    return PG_ERR_OK;
}

static void loop_metrics(struct rx *rx, struct rx_loop *lp)
{
    char labels[200];

    snprintf(labels, sizeof(labels), "receiver=\"%s\",loop=\"%u\"", rx->id, lp->idx);
    lp->m_conns = pg_metric_counter("pprofgate_receiver_loop_connections_total",
                                    "Connections accepted, by event loop.", labels);
}

/* ---- lifecycle ---------------------------------------------------------- */

enum pg_err pg_rx_start(void *state, struct pg_status *st)
{
    struct rx *rx = state;
    const struct rx_server_cfg *s = &rx->cfg.server;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char addr[INET6_ADDRSTRLEN] = "?";
    char where[sizeof(rx->listen_host) + 8]; /* unix:PATH or HOST:PORT, for the log */
    char one_why[160];
    unsigned port = rx->listen_port;
    uint64_t max_body = s->max_request_body_size;
    int fds[MAX_LOOPS];
    size_t n_loops;
    int made;

    metrics_init(rx);
    if (rx->self != NULL) {
        enum pg_err err = pg_pprof_self_start(rx->self, st);

        if (err != PG_ERR_OK) {
            return err;
        }
    }
    if (rx->scraper != NULL) {
        struct pg_work_lane lane = pg_rx_work_lane(rx); /* scrape work below push work */
        enum pg_err err;

        pg_scraper_set_lane(rx->scraper, &lane);
        err = pg_scraper_start(rx->scraper, st);

        if (err != PG_ERR_OK) {
            return err;
        }
    }
    if (!rx->cfg.has_server) {
        return PG_ERR_OK;
    }
    {
        struct rx *owner;
        char routes[256];
        enum pg_err err = pg_rx_share_join(rx, &owner, st);

        if (err != PG_ERR_OK) {
            return err;
        }
        if (owner != NULL) {
            pg_rx_routes_text(owner, routes, sizeof(routes));
            pg_log_info(rx->log_name, "sharing the listener of receiver %s on %s: %s", owner->id,
                        s->endpoint, routes);
            return PG_ERR_OK;
        }
    }
    n_loops = loops_wanted(rx, one_why, sizeof(one_why));
    {
        char why[256];
        /* Plain tcp with no host listens on every IPv4 address, as before. */
        const char *host = s->transport == PG_TRANSPORT_TCP && rx->listen_host[0] == '\0'
                               ? "0.0.0.0"
                               : rx->listen_host;

        made = pg_listen_group((enum pg_transport)s->transport, host, port, LISTEN_BACKLOG, fds,
                               n_loops, why, sizeof(why));
        if (made < 0) {
            return pg_status_set(st, PG_ERR_IO, "%s: cannot listen on %s (%s): %s", rx->log_name,
                                 s->endpoint, pg_transport_names[s->transport], why);
        }
        if ((size_t)made < n_loops) {
            snprintf(one_why, sizeof(one_why), "transport %s has one socket",
                     pg_transport_names[s->transport]);
            n_loops = 1;
        }
    }
    rx->unix_path = s->transport == PG_TRANSPORT_UNIX; /* ours to remove at shutdown */
    rx->loops = aligned_alloc(RX_LOOP_LINE, n_loops * sizeof(*rx->loops));
    if (rx->loops != NULL) {
        memset(rx->loops, 0, n_loops * sizeof(*rx->loops));
    }
    rx->auth_rl = calloc(1, sizeof(*rx->auth_rl));
    if (rx->loops == NULL || rx->auth_rl == NULL) {
        for (size_t i = 0; i < n_loops; i++) {
            close(fds[i]);
        }
        return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", rx->log_name);
    }
    rx->n_loops = n_loops;
    for (size_t i = 0; i < n_loops; i++) {
        rx->loops[i].rx = rx;
        rx->loops[i].idx = (unsigned)i;
        rx->loops[i].cmd_fd = -1;
        rx->loops[i].done_efd = -1;
        loop_metrics(rx, &rx->loops[i]);
    }
    pg_peer_ratelimit_init(rx->auth_rl, AUTH_FAIL_PER_SEC, AUTH_FAIL_BURST);
    {
        struct pg_httpd_limits lim = {
            .read_header_timeout_ns = s->read_header_timeout,
            .read_timeout_ns = s->read_timeout,
            .write_timeout_ns = s->write_timeout,
            .idle_timeout_ns = s->idle_timeout,
            .min_body_rate = s->min_body_rate,
            .max_body = max_body,
            .max_header_bytes = MAX_HEADER_BYTES,
            .max_target = MAX_TARGET_BYTES,
            .max_headers = (size_t)s->max_request_headers,
            .max_connections = (size_t)s->max_connections,
            .max_connections_per_peer = (size_t)s->max_connections_per_peer,
            .max_requests_per_connection = (size_t)s->max_requests_per_connection,
            .keep_alives = s->keep_alives_enabled,
        };

        rx->loops[0].base = rx->host->base;
        rx->loops[0].httpd =
            pg_httpd_new(rx->host->base, fds[0], rx->ssl_ctx, &lim, &pg_rx_httpd_ops, &rx->loops[0]);
        if (rx->loops[0].httpd == NULL) {
            for (size_t i = 1; i < n_loops; i++) {
                close(fds[i]);
            }
            return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot create the HTTP server",
                                 rx->log_name);
        }
        if (!pg_rx_held_init(&rx->loops[0])) {
            for (size_t i = 1; i < n_loops; i++) {
                close(fds[i]);
            }
            return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", rx->log_name);
        }
        for (size_t i = 1; i < n_loops; i++) {
            enum pg_err err = loop_setup(rx, &rx->loops[i], fds[i], st);

            if (err != PG_ERR_OK) {
                for (size_t j = i + 1; j < n_loops; j++) {
                    close(fds[j]);
                }
                return err; /* pg_rx_destroy frees what was set up */
            }
        }
    }
    /* This (the main loop) thread accepts, answers and translates small
     * pushes: a short scheduler slice lets it run as soon as it wakes
     * instead of after the current holder of the CPU (a worker, a busy
     * neighbour) used up its default ~3 ms slice. Other loops set theirs. */
    (void)pg_sched_latency_thread(LOOP_SLICE_NS);

    if (getsockname(pg_httpd_fd(rx->loops[0].httpd), (struct sockaddr *)&ss, &sl) == 0) {
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
    if (s->workers != 0) {
        enum pg_err err = pg_rx_pool_start(rx, s->workers, st);

        if (err != PG_ERR_OK) {
            return err; /* pg_rx_destroy joins what started */
        }
    }
    /* Threads last: from here on each loop runs on its own. */
    for (size_t i = 1; i < rx->n_loops; i++) {
        struct rx_loop *lp = &rx->loops[i];
        int e = pthread_create(&lp->thread, NULL, loop_main, lp);

        if (e != 0) {
            return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot start event loop %zu: %s",
                                 rx->log_name, i, strerror(e));
        }
        lp->thread_started = true;
    }
    if (rx->unix_path) {
        snprintf(where, sizeof(where), "unix:%s", rx->listen_host);
    } else {
        pg_http_hostport(where, sizeof(where), addr, port);
    }
    /* Integration tests read the bound port from this line (endpoint :0). */
    pg_log_info(rx->log_name, "listening on %s (POST %s, max body %llu bytes, %zu workers, "
                "%zu connections at most)", where,
                rx->flavor == RX_FLAVOR_PPROF ? PPROF_PATH : PYRO_INGEST_PATH ", POST " PYRO_PUSH_PATH,
                (unsigned long long)max_body,
                pg_rx_pool_threads(rx), pg_httpd_connection_cap(rx->loops[0].httpd));
    if (one_why[0] != '\0') {
        pg_log_info(rx->log_name, "1 event loop (%s)", one_why);
    } else {
        pg_log_info(rx->log_name, "%zu event loop%s (SO_REUSEPORT)", rx->n_loops,
                    rx->n_loops == 1 ? "" : "s");
    }
    return PG_ERR_OK;
}

/* Go's unix listener removes its socket file on close; so does pprofgate. */
static void remove_socket_file(struct rx *rx)
{
    if (rx->unix_path) {
        unlink(rx->listen_host);
        rx->unix_path = false;
    }
}

void pg_rx_shutdown(void *state)
{
    struct rx *rx = state;

    if (rx == NULL || rx->draining) {
        return;
    }
    __atomic_store_n(&rx->draining, true, __ATOMIC_RELEASE); /* a joiner: read by the owner's loops */
    pg_pprof_self_stop(rx->self);
    pg_scraper_stop(rx->scraper);
    /* Stop accepting on every loop; open connections finish their request
     * and get Connection: close. Jobs on the workers complete into the
     * pipeline while the service drains (rx_idle); rx_destroy answers the
     * rest. The other loops do the same on their own threads. */
    if (rx->n_loops > 0) {
        pg_rx_held_drain(&rx->loops[0]);
        pg_httpd_stop_accepting(rx->loops[0].httpd);
    }
    for (size_t i = 1; i < rx->n_loops; i++) {
        if (rx->loops[i].thread_started) {
            loop_send(&rx->loops[i], LOOP_STOP);
        }
    }
    remove_socket_file(rx);
}

bool pg_rx_idle(void *state)
{
    const struct rx *rx = state;

    if (rx == NULL) {
        return true;
    }
    /* Every request accepted is answered before the service moves on (a
     * lingering refusal or a stalled client is cut by the drain deadline). */
    if (rx->n_loops > 0 && rx->draining && pg_httpd_open_connections(rx->loops[0].httpd) > 0) {
        return false;
    }
    for (size_t i = 1; i < rx->n_loops; i++) {
        if (rx->loops[i].thread_started &&
            !__atomic_load_n(&rx->loops[i].drained, __ATOMIC_ACQUIRE)) {
            return false; /* a request on that loop is not answered yet */
        }
    }
    return !pg_rx_pool_busy(rx) && pg_scraper_idle(rx->scraper);
}

void pg_rx_destroy(void *state)
{
    struct rx *rx = state;

    if (rx == NULL || pg_rx_share_defer_destroy(rx)) {
        return; /* a joiner: its owner's workers may hold its jobs */
    }
    pg_pprof_self_destroy(rx->self);
    pg_scraper_destroy(rx->scraper);
    pg_scrape_config_free(&rx->scrape_cfg);
    /* The other loops end first: from here on this thread alone touches
     * their servers, requests and jobs. */
    for (size_t i = 1; i < rx->n_loops; i++) {
        if (rx->loops[i].thread_started) {
            loop_send(&rx->loops[i], LOOP_EXIT);
            pthread_join(rx->loops[i].thread, NULL);
        }
    }
    for (size_t i = 0; i < rx->n_loops; i++) {
        pg_rx_held_drain(&rx->loops[i]); /* before pg_httpd_free: held jobs hold requests */
        if (rx->loops[i].held_ev != NULL) {
            event_free(rx->loops[i].held_ev);
        }
    }
    pg_rx_pool_destroy(rx); /* before pg_httpd_free: jobs hold requests */
    for (size_t i = 0; i < rx->n_loops; i++) {
        struct rx_loop *lp = &rx->loops[i];

        pg_httpd_free(lp->httpd);
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
    for (size_t i = 0; i < rx->n_loops; i++) {
        pg_rx_job_cache_free(&rx->loops[i]);
    }
    free(rx->loops);
    pg_rx_share_release(rx); /* no job of a joiner is left */
    remove_socket_file(rx);
    if (rx->ssl_ctx != NULL) { /* after the connections using it */
        SSL_CTX_free(rx->ssl_ctx);
    }
    free(rx->auth_rl);
    pg_auth_free(rx->auth);
    pthread_mutex_destroy(&rx->log_mu);
    pthread_mutex_destroy(&rx->auth_mu);
    pg_rxh_reasons_destroy(&rx->reasons);
    free(rx);
}

const char *pg_rx_metadata_use(void *state)
{
    const struct rx *rx = state;
    return rx->cfg.server.include_metadata ? "include_metadata: true" : NULL;
}

static enum pg_err pprof_create(const struct pg_component_ctx *ctx, void **state)
{
    return pg_rx_create(ctx, pg_pprof_rx_fields, RX_FLAVOR_PPROF, state);
}

const struct pg_component_ops pg_receiver_pprof = {
    .type = "pprof",
    .alias = NULL,
    .kind = PG_KIND_RECEIVER,
    .fields = pg_pprof_rx_fields,
    .doc = "POST /v1/pprof push endpoint (collector pprofreceiver server mode)",
    .create = pprof_create,
    .start = pg_rx_start,
    .process = NULL,
    .consume = NULL,
    .shutdown = pg_rx_shutdown,
    .idle = pg_rx_idle,
    .destroy = pg_rx_destroy,
    .metadata_use = pg_rx_metadata_use,
};
