/* SPDX-License-Identifier: Apache-2.0
 * The pprof receiver in-process on a real libevent loop with a fake next
 * consumer: pipeline errors map to 503 + Retry-After (BUSY, UNAVAILABLE) and
 * 500 (PROCESSING), success to 204 with the batch carrying metadata, peer,
 * raw size, receiver id and default service name. Config errors are listed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "pipeline/component.h"
#include "core/config.h"
#include "core/log.h"
#include "core/metrics.h"
#include "pg_test.h"
#include "pg_test_zlib.h"

extern const struct pg_component_ops pg_receiver_pprof;

struct fake_next {
    struct pg_consumer base;
    enum pg_err answer;
    int calls;
    size_t samples;
    char otel_hdr[128];
    size_t n_xmulti;
    char peer[64];
    size_t raw_bytes;
    char receiver_id[32];
    char default_service[32];
    int block_polls; /* would_block answers true this many more times; -1 = always */
    int polls;
};

static bool fake_would_block(struct pg_consumer *self, const struct pg_batch *b,
                             struct pg_status *st)
{
    struct fake_next *f = (struct fake_next *)self;

    (void)b;
    f->polls++;
    if (f->block_polls == 0) {
        return false;
    }
    if (f->block_polls > 0) {
        f->block_polls--;
    }
    pg_status_set(st, PG_ERR_BUSY, "fake exporter is full");
    return true;
}

static enum pg_err fake_consume(struct pg_consumer *self, struct pg_batch *b, struct pg_status *st)
{
    struct fake_next *f = (struct fake_next *)self;
    const char *h = pg_metadata_get(&b->metadata, "Otel-Resource-Attributes", 0);

    f->calls++;
    f->samples = pg_batch_sample_count(b);
    snprintf(f->otel_hdr, sizeof(f->otel_hdr), "%s", h ? h : "");
    f->n_xmulti = pg_metadata_count(&b->metadata, "x-multi");
    snprintf(f->peer, sizeof(f->peer), "%s", b->metadata.peer_addr ? b->metadata.peer_addr : "");
    f->raw_bytes = b->raw_bytes;
    snprintf(f->receiver_id, sizeof(f->receiver_id), "%s", b->receiver_id ? b->receiver_id : "");
    snprintf(f->default_service, sizeof(f->default_service), "%s",
             b->default_service_name ? b->default_service_name : "");
    pg_batch_unref(b); /* consumers take the caller's reference */
    if (f->answer != PG_ERR_OK) {
        return pg_status_set(st, f->answer, "fake pipeline says %s", pg_err_name(f->answer));
    }
    return PG_ERR_OK;
}

struct reply {
    int code;
    char retry_after[16];
    char body[256];
    struct event_base *base;
};

static void on_reply(struct evhttp_request *req, void *arg)
{
    struct reply *r = arg;

    if (req != NULL) {
        const char *ra = evhttp_find_header(evhttp_request_get_input_headers(req), "Retry-After");
        struct evbuffer *b = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(b);

        r->code = evhttp_request_get_response_code(req);
        snprintf(r->retry_after, sizeof(r->retry_after), "%s", ra ? ra : "");
        if (n >= sizeof(r->body)) {
            n = sizeof(r->body) - 1;
        }
        evbuffer_copyout(b, r->body, n);
        r->body[n] = '\0';
    }
    event_base_loopbreak(r->base);
}

static uint8_t *worked_example_gz(size_t *len)
{
    const char *dir = getenv("PG_FIXTURES");
    char path[1024];
    size_t n;
    unsigned char *raw;
    uint8_t *out;

    snprintf(path, sizeof(path), "%s/debug/worked_example.pprof", dir ? dir : "tests/fixtures");
    raw = pg_test_read_file(path, &n);
    if (raw == NULL) {
        return NULL;
    }
    out = pg_test_squeeze(raw, n, PG_TEST_GZIP_BITS, len);
    free(raw);
    return out;
}

static int post(struct event_base *base, unsigned port, const uint8_t *body, size_t len,
                struct reply *r)
{
    struct evhttp_connection *c = evhttp_connection_base_new(base, NULL, "127.0.0.1",
                                                             (ev_uint16_t)port);
    struct evhttp_request *req;
    struct evkeyvalq *h;

    memset(r, 0, sizeof(*r));
    r->base = base;
    req = evhttp_request_new(on_reply, r);
    h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", "gw");
    evhttp_add_header(h, "Content-Encoding", "gzip");
    evhttp_add_header(h, "Otel-Resource-Attributes", "service.name=checkout");
    evhttp_add_header(h, "X-Multi", "1");
    evhttp_add_header(h, "X-Multi", "2");
    evbuffer_add(evhttp_request_get_output_buffer(req), body, len);
    evhttp_make_request(c, req, EVHTTP_REQ_POST, "/v1/pprof");
    event_base_dispatch(base);
    evhttp_connection_free(c);
    return r->code;
}

/* The receiver logs "listening on IP:PORT"; read the port from the log. */
static unsigned port_from_log(FILE *log)
{
    char line[512];
    unsigned port = 0;

    fflush(log);
    rewind(log);
    while (fgets(line, sizeof(line), log) != NULL) {
        const char *p = strstr(line, "listening on ");
        if (p != NULL) {
            const char *colon = strchr(p + 13, ' ');
            for (const char *q = p + 13; colon && q < colon; q++) {
                if (*q == ':') {
                    port = (unsigned)atoi(q + 1);
                }
            }
        }
    }
    return port;
}

/* A receiver started on its own loop with @yaml and @next; port from its log. */
struct rx_fixture {
    struct event_base *base;
    struct pg_config *cfg;
    struct pg_arena *carena;
    struct pg_host host;
    struct pg_diag diag;
    FILE *log;
    void *state;
    unsigned port;
};

static bool rx_start(struct rx_fixture *fx, const char *yaml, struct fake_next *next)
{
    struct pg_component_ctx ctx;
    struct pg_status st;

    memset(fx, 0, sizeof(*fx));
    fx->base = event_base_new();
    fx->cfg = pg_config_load_string("test.yaml", yaml, strlen(yaml));
    fx->carena = pg_arena_create(0);
    fx->host = (struct pg_host){fx->base, "0.1.0", NULL};
    fx->log = tmpfile();
    pg_diag_init(&fx->diag);
    CHECK(fx->cfg != NULL && fx->cfg->root != NULL);
    if (fx->cfg == NULL || fx->cfg->root == NULL) {
        return false;
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.host = &fx->host;
    ctx.id = "pprof";
    ctx.log_name = "receiver/pprof";
    ctx.config = fx->cfg->root;
    ctx.config_arena = fx->carena;
    ctx.diag = &fx->diag;
    ctx.next = &next->base;
    pg_log_set_stream(fx->log);
    CHECK_INT(pg_receiver_pprof.create(&ctx, &fx->state), PG_ERR_OK);
    CHECK_INT(pg_receiver_pprof.start(fx->state, &st), PG_ERR_OK);
    fx->port = port_from_log(fx->log);
    CHECK(fx->port > 0);
    return fx->port > 0;
}

/* Shuts the receiver down (it must be idle then) and frees everything. */
static void rx_stop(struct rx_fixture *fx)
{
    pg_log_set_stream(NULL);
    if (fx->state != NULL) {
        pg_receiver_pprof.shutdown(fx->state);
        /* Idle once every connection it accepted is answered and closed
         * (other loops drain on their threads): the service polls it so. */
        for (int spins = 0; spins < 400 && !pg_receiver_pprof.idle(fx->state); spins++) {
            event_base_loop(fx->base, EVLOOP_NONBLOCK);
            usleep(5000);
        }
        CHECK(pg_receiver_pprof.idle(fx->state));
        pg_receiver_pprof.destroy(fx->state);
    }
    fclose(fx->log);
    pg_diag_free(&fx->diag);
    pg_config_free(fx->cfg);
    pg_arena_destroy(fx->carena);
    event_base_free(fx->base);
}

PG_TEST(test_status_by_pipeline_answer)
{
    static const char yaml[] = "server:\n  endpoint: 127.0.0.1:0\n  include_metadata: true\n"
                               "  default_service_name: fallback-svc\n";
    static const struct {
        enum pg_err answer;
        int code;
        const char *retry_after;
    } cases[] = {
        {PG_ERR_OK, 204, ""},
        {PG_ERR_BUSY, 503, "1"},
        {PG_ERR_UNAVAILABLE, 503, "1"},
        {PG_ERR_PROCESSING, 500, ""},
        {PG_ERR_INTERNAL, 500, ""},
    };
    struct fake_next next = {{fake_consume, NULL, NULL, NULL}, PG_ERR_OK, 0, 0, "", 0, "", 0, "", "", 0, 0};
    struct rx_fixture fx;
    size_t gz_len = 0;
    uint8_t *gz = worked_example_gz(&gz_len);

    CHECK(gz != NULL);
    if (gz == NULL) {
        return;
    }
    if (rx_start(&fx, yaml, &next)) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            struct reply r;

            next.answer = cases[i].answer;
            CHECK_INT(post(fx.base, fx.port, gz, gz_len, &r), cases[i].code);
            CHECK_STR(r.retry_after, cases[i].retry_after);
            if (cases[i].code != 204) {
                CHECK(strstr(r.body, "fake pipeline says") != NULL);
            }
        }
    }
    CHECK_INT(next.calls, 5);
    CHECK_INT(next.samples, 4);
    CHECK_STR(next.otel_hdr, "service.name=checkout");
    CHECK_INT(next.n_xmulti, 2);
    CHECK(strncmp(next.peer, "127.0.0.1:", 10) == 0);
    CHECK_INT(next.raw_bytes, gz_len);
    CHECK_STR(next.receiver_id, "pprof");
    CHECK_STR(next.default_service, "fallback-svc");
    rx_stop(&fx);
    free(gz);
}

static void shutdown_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pg_receiver_pprof.shutdown(arg);
}

/* block_on_overflow: a full exporter makes the request wait unanswered, then
 * it is delivered (204) once there is room; past write_timeout it gets 503;
 * on shutdown a held request gets 503 at once. Never consumed twice. */
PG_TEST(test_held_while_exporter_full)
{
    static const char yaml[] = "server:\n  endpoint: 127.0.0.1:0\n  write_timeout: 300ms\n"
                               "  workers: 0\n";
    static const struct {
        int block_polls;   /* -1: full for good */
        bool shutdown;     /* shut the receiver down while the request is held */
        int code;
        int consumed;
        const char *body;  /* in the answer */
    } cases[] = {
        {0, false, 204, 1, ""},
        {5, false, 204, 1, ""},
        {-1, false, 503, 0, "held 0 s (write_timeout)"},
        {-1, true, 503, 0, "shutting down"},
    };
    size_t gz_len = 0;
    uint8_t *gz = worked_example_gz(&gz_len);

    CHECK(gz != NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) && gz != NULL; i++) {
        struct fake_next next = {{fake_consume, fake_would_block, NULL, NULL}, PG_ERR_OK, 0, 0, "", 0, "",
                                 0, "", "", cases[i].block_polls, 0};
        struct rx_fixture fx;
        struct reply r;
        struct event *stop = NULL;

        if (!rx_start(&fx, yaml, &next)) {
            rx_stop(&fx);
            continue;
        }
        if (cases[i].shutdown) {
            struct timeval tv = {0, 50000};

            stop = evtimer_new(fx.base, shutdown_cb, fx.state);
            evtimer_add(stop, &tv);
        }
        CHECK_INT(post(fx.base, fx.port, gz, gz_len, &r), cases[i].code);
        if (r.code != cases[i].code || strstr(r.body, cases[i].body) == NULL) {
            fprintf(stderr, "  case %zu: %d \"%s\"\n", i, r.code, r.body);
        }
        CHECK(strstr(r.body, cases[i].body) != NULL);
        CHECK_INT(next.calls, cases[i].consumed);
        if (cases[i].block_polls > 0) {
            CHECK_INT(next.polls, cases[i].block_polls + 1); /* each poll asked once */
        }
        if (cases[i].code == 503) {
            CHECK_STR(r.retry_after, "1");
        }
        if (stop != NULL) {
            event_free(stop);
        }
        rx_stop(&fx);
    }
    free(gz);
}

/* Several event loops (server.loops: 2) under concurrent clients: every
 * push answered 204 and consumed once, both loops accepted connections,
 * and shutdown leaves no loop busy. The consumer says it may be called from
 * any thread (as the service's fan-out does, behind its entry lock; here a
 * lock of its own). Under TSan this is the multi-loop race check. */
struct mt_next {
    struct pg_consumer base;
    pthread_mutex_t mu;
    int calls;
};

static enum pg_err mt_consume(struct pg_consumer *self, struct pg_batch *b, struct pg_status *st)
{
    struct mt_next *f = (struct mt_next *)self;

    (void)st;
    pthread_mutex_lock(&f->mu);
    f->calls++;
    pthread_mutex_unlock(&f->mu);
    pg_batch_unref(b);
    return PG_ERR_OK;
}

static bool mt_any_thread(struct pg_consumer *self, char *why, size_t why_size)
{
    (void)self;
    (void)why;
    (void)why_size;
    return true;
}

#define MT_CLIENTS 8
#define MT_POSTS 6

struct mt_client {
    unsigned port;
    const uint8_t *gz;
    size_t gz_len;
    int ok;           /* 204s */
    int *finished;    /* atomic */
};

/* One blocking client: MT_POSTS pushes, each on a new connection (so the
 * kernel spreads them over the loops' sockets). */
static void *mt_client_main(void *arg)
{
    struct mt_client *c = arg;

    for (int i = 0; i < MT_POSTS; i++) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
        char head[256], buf[512];
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int n, got = 0;
        struct timeval tv = {10, 0};

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0) {
            break;
        }
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        n = snprintf(head, sizeof(head),
                     "POST /v1/pprof HTTP/1.1\r\nHost: gw\r\nContent-Encoding: gzip\r\n"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\n", c->gz_len);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
            write(fd, head, (size_t)n) == n && write(fd, c->gz, c->gz_len) == (ssize_t)c->gz_len) {
            while (got < (int)sizeof(buf) - 1 && (n = (int)read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0) {
                got += n;
            }
            buf[got] = '\0';
            c->ok += strncmp(buf, "HTTP/1.1 204", 12) == 0;
        }
        close(fd);
    }
    __atomic_add_fetch(c->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

PG_TEST(test_loops_concurrent)
{
    static const char yaml[] = "server:\n  endpoint: 127.0.0.1:0\n  loops: 2\n  workers: 1\n";
    struct mt_next next = {{mt_consume, NULL, mt_any_thread, NULL}, PTHREAD_MUTEX_INITIALIZER, 0};
    struct mt_client cl[MT_CLIENTS];
    pthread_t th[MT_CLIENTS];
    struct rx_fixture fx;
    int finished = 0, ok = 0;
    size_t gz_len = 0;
    uint8_t *gz = worked_example_gz(&gz_len);

    CHECK(gz != NULL);
    if (gz == NULL || !rx_start(&fx, yaml, (struct fake_next *)(void *)&next)) {
        free(gz);
        return;
    }
    for (int i = 0; i < MT_CLIENTS; i++) {
        cl[i] = (struct mt_client){fx.port, gz, gz_len, 0, &finished};
        pthread_create(&th[i], NULL, mt_client_main, &cl[i]);
    }
    /* Loop 0 is this thread's base: run it until every client is done. */
    for (int spins = 0; spins < 10000 && __atomic_load_n(&finished, __ATOMIC_ACQUIRE) < MT_CLIENTS;
         spins++) {
        event_base_loop(fx.base, EVLOOP_NONBLOCK);
        usleep(2000);
    }
    for (int i = 0; i < MT_CLIENTS; i++) {
        pthread_join(th[i], NULL);
        ok += cl[i].ok;
    }
    CHECK_INT(ok, MT_CLIENTS * MT_POSTS);
    pthread_mutex_lock(&next.mu);
    CHECK_INT(next.calls, MT_CLIENTS * MT_POSTS);
    pthread_mutex_unlock(&next.mu);
    for (unsigned l = 0; l < 2; l++) {
        char labels[64];
        int64_t v;

        snprintf(labels, sizeof(labels), "receiver=\"pprof\",loop=\"%u\"", l);
        v = pg_metric_value(pg_metric_counter("pprofgate_receiver_loop_connections_total", "",
                                              labels));
        CHECK(v > 0); /* SO_REUSEPORT spread 48 connections over both loops */
        if (v <= 0) {
            fprintf(stderr, "  loop %u accepted %lld connections\n", l, (long long)v);
        }
    }
    rx_stop(&fx); /* shuts down: the other loop drains on its own thread */
    free(gz);
}

PG_TEST(test_config_errors)
{
    static const struct {
        const char *yaml;
        const char *want;
    } cases[] = {
        {"server:\n  endpoint: nowhere\n", "is not host:port"},
        {"server:\n  compression_algorithms: [gzip, snappy]\n", "\"snappy\" is not supported"},
        {"server:\n  bogus: 1\n", "unknown key \"bogus\""},
        {"server:\n  response_headers: {\"Bad Name\": x}\n", "is not a valid header"},
        {"server:\n  max_request_body_size: 10\n", "max_request_body_size"},
        {"remote:\n  endpoint: ftp://x\n", "scheme must be http or https"},
        {"file:\n  include: x\n", "unknown key \"file\""},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_config *cfg = pg_config_load_string("t.yaml", cases[i].yaml, strlen(cases[i].yaml));
        struct pg_arena *carena = pg_arena_create(0);
        struct pg_diag diag;
        struct pg_component_ctx ctx;
        void *state = NULL;
        bool found = false;

        pg_diag_init(&diag);
        memset(&ctx, 0, sizeof(ctx));
        ctx.id = "pprof";
        ctx.log_name = "receiver/pprof";
        ctx.config = cfg ? cfg->root : NULL;
        ctx.config_arena = carena;
        ctx.diag = &diag;
        CHECK_INT(pg_receiver_pprof.create(&ctx, &state), PG_ERR_CONFIG);
        CHECK(state == NULL);
        for (size_t j = 0; j < diag.n; j++) {
            found = found || strstr(diag.msgs[j], cases[i].want) != NULL;
        }
        CHECK(found);
        if (!found) {
            fprintf(stderr, "  case %zu: want \"%s\" in:\n", i, cases[i].want);
            for (size_t j = 0; j < diag.n; j++) {
                fprintf(stderr, "    %s\n", diag.msgs[j]);
            }
        }
        pg_diag_free(&diag);
        pg_config_free(cfg);
        pg_arena_destroy(carena);
    }
}

PG_TEST_MAIN(PG_CASE(test_status_by_pipeline_answer), PG_CASE(test_held_while_exporter_full),
             PG_CASE(test_loops_concurrent),
             PG_CASE(test_config_errors))
