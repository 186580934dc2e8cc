/* SPDX-License-Identifier: Apache-2.0
 * Component tests of the unary gRPC server (grpc/grpc_server.c) on
 * loopback: driven by pprofgate's own gRPC client (grpc/grpc_client) for
 * the calls (OK, gzip, unknown path, size caps, on_length refusal,
 * grpc-timeout, RetryInfo, max_concurrent_streams, TLS with ALPN), by a
 * raw socket speaking hand-made HTTP/2 frames for the hostile cases
 * (silence, garbage, HTTP/1.1, PING flood, streams opened and reset), and
 * by real clients: @grpc/grpc-js (Node) and h2load. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <nghttp2/nghttp2.h>

#include "codec/codec.h"
#include "codec/gzip.h"
#include "core/clock.h"
#include "core/log.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_server.h"
#include "grpc/grpc_wire.h"
#include "http/listener.h"
#include "http/tls.h"
#include "http/tls_client.h"
#include "pg_test.h"

#define ECHO_PATH "/test.Svc/Echo"
#define MS 1000000LL

/* ---- the rig: a server on loopback and a handler that records ------------ */

struct rig {
    struct event_base *base;
    struct pg_grpc_server *srv;
    int port;
    /* handler behaviour */
    int len_code;           /* on_length's answer */
    bool hold;              /* on_call keeps the call instead of answering */
    int reply_code;         /* on_call's answer code */
    int64_t retry_ns;       /* on_call's RetryInfo delay, -1 none */
    bool late_reply;        /* on_answer(DEADLINE_EXCEEDED) tries to answer too */
    /* what the handler saw */
    int n_headers, n_length, n_calls, n_answers, n_done;
    int events[PG_GRPC_N_EVENTS];
    int answer_code;
    char answer_msg[256];
    char answer_log[2048]; /* every reason, "|"-separated */
    size_t seen_len;
    bool seen_compressed;
    uint8_t msg[8192];
    size_t msg_len;
    char md_te[32];
    struct pg_grpc_call *held[16];
    size_t n_held;
};

static int on_headers(struct pg_grpc_call *c, struct pg_status *st, void *arg)
{
    struct rig *r = arg;

    r->n_headers++;
    for (size_t i = 0; i < c->n_md; i++) {
        if (strcmp(c->md[i].name, "te") == 0) {
            snprintf(r->md_te, sizeof(r->md_te), "%s", c->md[i].value);
        }
    }
    if (strcmp(c->path, ECHO_PATH) != 0) {
        pg_status_set(st, PG_ERR_UNSUPPORTED, "unknown method %s", c->path);
        return PG_GRPC_UNIMPLEMENTED;
    }
    return PG_GRPC_OK;
}

static int on_length(struct pg_grpc_call *c, size_t len, bool compressed, struct pg_status *st,
                     void *arg)
{
    struct rig *r = arg;

    (void)c;
    r->n_length++;
    r->seen_len = len;
    r->seen_compressed = compressed;
    if (r->len_code != PG_GRPC_OK) {
        pg_status_set(st, PG_ERR_BUSY, "memory limit: %zu bytes not admitted", len);
        return r->len_code;
    }
    return PG_GRPC_OK;
}

static void on_call(struct pg_grpc_call *c, void *arg)
{
    struct rig *r = arg;

    r->n_calls++;
    r->msg_len = c->msg_len < sizeof(r->msg) ? c->msg_len : sizeof(r->msg);
    memcpy(r->msg, c->msg, r->msg_len);
    if (r->hold) {
        if (r->n_held < sizeof(r->held) / sizeof(r->held[0])) {
            r->held[r->n_held++] = c;
        }
        return;
    }
    if (r->reply_code != PG_GRPC_OK) {
        pg_grpc_call_reply(c, r->reply_code, "pipeline full; try later", NULL, 0, r->retry_ns);
        return;
    }
    pg_grpc_call_reply(c, PG_GRPC_OK, NULL, c->msg, c->msg_len, -1);
}

static void on_answer(const struct pg_grpc_call *c, int code, const char *reason, void *arg)
{
    struct rig *r = arg;

    r->n_answers++;
    r->answer_code = code;
    snprintf(r->answer_msg, sizeof(r->answer_msg), "%s", reason != NULL ? reason : "");
    if (strlen(r->answer_log) + strlen(r->answer_msg) + 2 < sizeof(r->answer_log)) {
        strcat(r->answer_log, r->answer_msg);
        strcat(r->answer_log, "|");
    }
    if (r->late_reply && code == PG_GRPC_DEADLINE_EXCEEDED) {
        static const uint8_t late[] = "late";

        /* The handler's answer after the server's: must be dropped. */
        pg_grpc_call_reply((struct pg_grpc_call *)c, PG_GRPC_OK, NULL, late, 4, -1);
    }
}

static void on_done(struct pg_grpc_call *c, void *arg)
{
    struct rig *r = arg;

    r->n_done++;
    for (size_t i = 0; i < r->n_held; i++) {
        if (r->held[i] == c) {
            r->held[i] = r->held[--r->n_held];
            break;
        }
    }
}

static void on_conn_event(int event, const char *peer, void *arg)
{
    struct rig *r = arg;

    (void)peer;
    r->events[event]++;
}

static const struct pg_grpc_server_ops rig_ops = {
    on_headers, on_length, on_call, on_answer, on_done, on_conn_event,
};

static bool rig_start(struct rig *r, const struct pg_grpc_server_limits *lim, SSL_CTX *ctx)
{
    char err[256];
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int fd;

    memset(r, 0, sizeof(*r));
    r->retry_ns = -1;
    r->base = event_base_new();
    fd = pg_listen(PG_TRANSPORT_TCP4, "127.0.0.1", 0, 128, err, sizeof(err));
    if (r->base == NULL || fd < 0) {
        fprintf(stderr, "  listen: %s\n", err);
        return false;
    }
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    r->port = ntohs(sa.sin_port);
    r->srv = pg_grpc_server_new(r->base, fd, ctx, lim, &rig_ops, r);
    return r->srv != NULL;
}

static void rig_stop(struct rig *r)
{
    pg_grpc_server_free(r->srv);
    event_base_free(r->base);
}

/* Runs the loop for @ms, or until *@flag turns true. */
static void pump(struct rig *r, int ms, const bool *flag)
{
    int64_t end = pg_mono_ns() + ms * MS;

    while (pg_mono_ns() < end && (flag == NULL || !*flag)) {
        struct timeval tv = {0, 5000};

        event_base_loopexit(r->base, &tv);
        event_base_loop(r->base, EVLOOP_ONCE);
    }
}

/* ---- the client side (pprofgate's own gRPC client) ------------------------ */

struct result {
    bool done;
    int code;
    char msg[512];
    bool retry_info;
    int64_t retry_ns;
    uint8_t resp[8192];
    size_t resp_len;
};

static void on_result(void *arg, const struct pg_grpc_result *res)
{
    struct result *o = arg;

    o->done = true;
    o->code = res->code;
    snprintf(o->msg, sizeof(o->msg), "%s", res->message);
    o->retry_info = res->has_retry_info;
    o->retry_ns = res->retry_delay_ns;
    o->resp_len = res->response_len < sizeof(o->resp) ? res->response_len : sizeof(o->resp);
    if (res->response != NULL) {
        memcpy(o->resp, res->response, o->resp_len);
    }
}

static struct pg_grpc_conn *client_new(struct rig *r, SSL_CTX *ctx)
{
    struct pg_grpc_conn_config cfg = {
        .host = ctx != NULL ? "localhost" : "127.0.0.1",
        .port = r->port,
        .tls = ctx != NULL,
        .ssl_ctx = ctx,
        .server_name = "localhost",
        .verify = true,
        .connect_timeout_ns = 2000 * MS,
        .backoff_initial_ns = 50 * MS,
        .backoff_max_ns = 200 * MS,
        .max_response_bytes = 1 << 20,
        .log_name = "test-client",
    };

    return pg_grpc_conn_new(r->base, &cfg);
}

/* Starts a call of @path with @body; @extra: one more header or NULL. */
static void call_start(struct pg_grpc_conn *cli, const char *path, const uint8_t *body,
                       size_t len, bool gzip, const struct pg_grpc_header *extra,
                       int64_t timeout_ns, struct result *out)
{
    struct pg_grpc_header h[4] = {
        {"content-type", "application/grpc"},
        {"te", "trailers"},
        {"grpc-encoding", "gzip"},
    };
    size_t n = gzip ? 3 : 2;
    struct pg_grpc_request req = {path, h, n, body, len, gzip, timeout_ns};
    struct pg_status st;

    if (extra != NULL) {
        h[n++] = *extra;
        req.n_headers = n;
    }
    memset(out, 0, sizeof(*out));
    pg_status_clear(&st);
    if (pg_grpc_conn_call(cli, &req, on_result, out, &st) != PG_ERR_OK) {
        out->done = true;
        out->code = -1;
    }
}

static void call_run(struct rig *r, struct pg_grpc_conn *cli, const char *path,
                     const uint8_t *body, size_t len, bool gzip,
                     const struct pg_grpc_header *extra, struct result *out)
{
    call_start(cli, path, body, len, gzip, extra, 5000 * MS, out);
    pump(r, 6000, &out->done);
}

static struct pg_grpc_server_limits small_limits(void)
{
    struct pg_grpc_server_limits lim = {0};

    lim.max_recv_msg_size = 4096;
    lim.allowed_codings = pg_codec_all();
    lim.handshake_timeout_ns = 2000 * MS;
    return lim;
}

/* ---- calls through the client --------------------------------------------- */

PG_TEST(unary_ok)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "hello, server";

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    cli = client_new(&r, NULL);
    call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
    CHECK(res.done);
    CHECK_INT(res.code, PG_GRPC_OK);
    CHECK_INT(res.resp_len, sizeof(body));
    CHECK(memcmp(res.resp, body, sizeof(body)) == 0);
    CHECK_INT(r.n_headers, 1);
    CHECK_INT(r.n_length, 1);
    CHECK_INT(r.seen_len, sizeof(body));
    CHECK_STR(r.md_te, "trailers");
    pump(&r, 50, NULL);
    CHECK_INT(r.n_done, 1);
    CHECK_INT(pg_grpc_server_open_calls(r.srv), 0);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 1);
    /* A second call on the same connection. */
    call_run(&r, cli, ECHO_PATH, body, 5, false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_OK);
    CHECK_INT(res.resp_len, 5);
    CHECK_INT(pg_grpc_conn_connects(cli), 1);
    pg_grpc_conn_free(cli);
    pump(&r, 50, NULL);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    rig_stop(&r);
}

/* Answers larger than the socket buffers: the server's own writev() takes
 * part, the bufferevent writes the rest and hands back once it is empty
 * (client and server share this thread, so nothing is read meanwhile). */
PG_TEST(large_answers_past_the_socket_buffer)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res[4];
    size_t len = 900u << 10;
    uint8_t *body = malloc(len);

    PG_REQUIRE(body != NULL);
    for (size_t i = 0; i < len; i++) {
        body[i] = (uint8_t)(i * 7 + i / 4096);
    }
    lim.max_recv_msg_size = 1u << 20;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    cli = client_new(&r, NULL);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 4; i++) {
            call_start(cli, ECHO_PATH, body, len, false, NULL, 10000 * MS, &res[i]);
        }
        for (int i = 0; i < 4; i++) {
            pump(&r, 10000, &res[i].done);
            CHECK_INT(res[i].code, PG_GRPC_OK);
            CHECK_INT(res[i].resp_len, sizeof(res[i].resp)); /* the first 8 KiB kept */
            CHECK(memcmp(res[i].resp, body, sizeof(res[i].resp)) == 0);
        }
    }
    CHECK_INT(r.n_calls, 8);
    /* Small calls after: the connection is back to its own writes. */
    call_run(&r, cli, ECHO_PATH, body, 100, false, NULL, &res[0]);
    CHECK_INT(res[0].code, PG_GRPC_OK);
    CHECK_INT(res[0].resp_len, 100);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 1);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
    free(body);
}

PG_TEST(gzip_request_and_bomb)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    uint8_t plain[3000], big[64 << 10];
    uint8_t *gz = NULL;
    size_t gz_len = 0;
    struct pg_status st;

    for (size_t i = 0; i < sizeof(plain); i++) {
        plain[i] = (uint8_t)('a' + i % 7);
    }
    memset(big, 'x', sizeof(big));
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    cli = client_new(&r, NULL);
    pg_status_clear(&st);
    PG_REQUIRE(pg_gzip_compress(NULL, plain, sizeof(plain), 6, &gz, &gz_len, &st) == PG_ERR_OK);
    call_run(&r, cli, ECHO_PATH, gz, gz_len, true, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_OK);
    CHECK_INT(r.msg_len, sizeof(plain));
    CHECK(memcmp(r.msg, plain, sizeof(plain)) == 0);
    CHECK(r.seen_compressed);
    CHECK_INT(r.seen_len, gz_len);
    free(gz);
    /* Small on the wire, over the cap once inflated. */
    PG_REQUIRE(pg_gzip_compress(NULL, big, sizeof(big), 6, &gz, &gz_len, &st) == PG_ERR_OK);
    CHECK(gz_len < lim.max_recv_msg_size);
    call_run(&r, cli, ECHO_PATH, gz, gz_len, true, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_RESOURCE_EXHAUSTED);
    CHECK(strstr(res.msg, "after decompression") != NULL);
    CHECK_INT(r.n_calls, 1);
    free(gz);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

PG_TEST(encoding_not_allowed_is_unimplemented)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "x";
    const struct pg_grpc_header zstd = {"grpc-encoding", "zstd"};

    lim.allowed_codings = 0; /* identity only */
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    cli = client_new(&r, NULL);
    call_run(&r, cli, ECHO_PATH, body, 1, false, &zstd, &res);
    CHECK_INT(res.code, PG_GRPC_UNIMPLEMENTED);
    CHECK(strstr(res.msg, "zstd") != NULL);
    CHECK_INT(r.n_headers, 0);
    CHECK_INT(r.n_answers, 1);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

PG_TEST(unknown_path_unimplemented)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "abc";

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    cli = client_new(&r, NULL);
    call_run(&r, cli, "/nope.Svc/Other", body, sizeof(body), false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_UNIMPLEMENTED);
    CHECK(strstr(res.msg, "/nope.Svc/Other") != NULL);
    CHECK_INT(r.n_calls, 0);
    CHECK_INT(r.n_answers, 1);
    CHECK_INT(r.answer_code, PG_GRPC_UNIMPLEMENTED);
    pump(&r, 50, NULL);
    CHECK_INT(r.n_done, 1);
    CHECK_INT(pg_grpc_server_open_calls(r.srv), 0);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

PG_TEST(message_over_cap_refused_unbuffered)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    size_t n = 256 << 10;
    uint8_t *body = calloc(1, n);

    PG_REQUIRE(body != NULL);
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    cli = client_new(&r, NULL);
    call_run(&r, cli, ECHO_PATH, body, n, false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_RESOURCE_EXHAUSTED);
    CHECK(strstr(res.msg, "larger than max (262144 vs. 4096)") != NULL);
    CHECK_INT(r.n_length, 0); /* refused at the prefix: on_length never saw it */
    CHECK_INT(r.n_calls, 0);
    /* The connection stays usable after the refused upload. */
    call_run(&r, cli, ECHO_PATH, body, 100, false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_OK);
    CHECK_INT(pg_grpc_conn_connects(cli), 1);
    free(body);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

PG_TEST(on_length_refusal)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    uint8_t body[2000] = {0};

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    r.len_code = PG_GRPC_RESOURCE_EXHAUSTED;
    cli = client_new(&r, NULL);
    call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_RESOURCE_EXHAUSTED);
    CHECK(strstr(res.msg, "2000 bytes not admitted") != NULL);
    CHECK_INT(r.n_length, 1);
    CHECK_INT(r.seen_len, sizeof(body));
    CHECK_INT(r.n_calls, 0);
    pump(&r, 50, NULL);
    CHECK_INT(r.n_done, 1);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

PG_TEST(grpc_timeout_deadline_exceeded)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "slow";
    const struct pg_grpc_header to = {"grpc-timeout", "150m"};
    int64_t t0;

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    r.hold = true;
    r.late_reply = true;
    cli = client_new(&r, NULL);
    t0 = pg_mono_ns();
    /* Our client's own deadline is 5 s; the header asks the server for 150 ms. */
    call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, &to, &res);
    CHECK_INT(res.code, PG_GRPC_DEADLINE_EXCEEDED);
    CHECK(strstr(res.msg, "grpc-timeout 150m") != NULL);
    CHECK(pg_mono_ns() - t0 < 2000 * MS);
    CHECK_INT(r.n_calls, 1);
    CHECK_INT(r.n_answers, 1); /* the late reply was dropped */
    pump(&r, 50, NULL);
    CHECK_INT(r.n_done, 1);
    CHECK_INT(r.n_held, 0);
    /* A malformed grpc-timeout is refused. */
    {
        const struct pg_grpc_header bad = {"grpc-timeout", "12xyz"};

        r.hold = false;
        call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, &bad, &res);
        CHECK_INT(res.code, PG_GRPC_INTERNAL);
        CHECK(strstr(res.msg, "malformed grpc-timeout") != NULL);
    }
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

PG_TEST(retry_info_reaches_the_client)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "busy";

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    r.reply_code = PG_GRPC_UNAVAILABLE;
    r.retry_ns = 1500 * MS;
    cli = client_new(&r, NULL);
    call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_UNAVAILABLE);
    CHECK_STR(res.msg, "pipeline full; try later");
    CHECK(res.retry_info);
    CHECK_INT(res.retry_ns, 1500 * MS);
    /* Without a delay: no details. */
    r.reply_code = PG_GRPC_RESOURCE_EXHAUSTED;
    r.retry_ns = -1;
    call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_RESOURCE_EXHAUSTED);
    CHECK(!res.retry_info);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

PG_TEST(max_concurrent_streams_honoured)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res[5];
    static const uint8_t body[] = "c";
    bool all = false;

    lim.max_concurrent_streams = 2;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    r.hold = true;
    cli = client_new(&r, NULL);
    for (int i = 0; i < 5; i++) {
        call_start(cli, ECHO_PATH, body, 1, false, NULL, 5000 * MS, &res[i]);
    }
    pump(&r, 300, NULL);
    CHECK_INT(r.n_calls, 2);
    CHECK_INT(pg_grpc_server_open_calls(r.srv), 2);
    for (int round = 0; round < 10 && !all; round++) {
        while (r.n_held > 0) {
            struct pg_grpc_call *c = r.held[--r.n_held];

            pg_grpc_call_reply(c, PG_GRPC_OK, NULL, body, 1, -1);
        }
        pump(&r, 100, NULL);
        all = true;
        for (int i = 0; i < 5; i++) {
            all = all && res[i].done;
        }
    }
    for (int i = 0; i < 5; i++) {
        CHECK_INT(res[i].code, PG_GRPC_OK);
    }
    CHECK_INT(r.n_calls, 5);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

/* ---- TLS ------------------------------------------------------------------ */

static char cert_dir[64];

static bool make_certs(void)
{
    char cmd[1024];

    snprintf(cert_dir, sizeof(cert_dir), "/tmp/pg_test_grpc_tls.XXXXXX");
    if (mkdtemp(cert_dir) == NULL) {
        return false;
    }
    snprintf(cmd, sizeof(cmd),
             "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
             "-keyout ca.key -out ca.crt -days 2 -subj /CN=ca >/dev/null 2>&1 && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key "
             "-out server.csr -subj /CN=localhost >/dev/null 2>&1 && printf "
             "'subjectAltName=DNS:localhost' > ext && openssl x509 -req -in server.csr -CA ca.crt "
             "-CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile ext >/dev/null 2>&1",
             cert_dir);
    return system(cmd) == 0;
}

PG_TEST(tls_with_alpn)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "over tls";
    char crt[128], key[128], ca[128];
    struct pg_tls_server_options so = {0};
    struct pg_tls_client_config cc = {0};
    SSL_CTX *sctx = NULL, *cctx;
    struct pg_status st;

    PG_REQUIRE(make_certs());
    snprintf(crt, sizeof(crt), "%s/server.crt", cert_dir);
    snprintf(key, sizeof(key), "%s/server.key", cert_dir);
    snprintf(ca, sizeof(ca), "%s/ca.crt", cert_dir);
    so.cert_file = crt;
    so.key_file = key;
    cc.ca_file = ca;
    pg_status_clear(&st);
    PG_REQUIRE(pg_tls_server_ctx_new(&so, &sctx, &st) == PG_ERR_OK);
    cctx = pg_tls_client_ctx_new(&cc, &st);
    PG_REQUIRE(cctx != NULL);
    PG_REQUIRE(rig_start(&r, &lim, sctx));
    cli = client_new(&r, cctx);
    call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_OK);
    CHECK_INT(res.resp_len, sizeof(body));
    pg_grpc_conn_free(cli);
    /* A client that offers only http/1.1 by ALPN does not get a session. */
    {
        static const unsigned char h1[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
        SSL_CTX *c1 = pg_tls_client_ctx_new(&cc, &st);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r.port)};
        SSL *ssl;
        int rc = 0;
        int64_t end = pg_mono_ns() + 3000 * MS;

        SSL_CTX_set_alpn_protos(c1, h1, sizeof(h1));
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        PG_REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
        fcntl(fd, F_SETFL, O_NONBLOCK);
        ssl = SSL_new(c1);
        SSL_set_fd(ssl, fd);
        SSL_set_tlsext_host_name(ssl, "localhost");
        while (pg_mono_ns() < end) {
            rc = SSL_connect(ssl);
            if (rc == 1 || (SSL_get_error(ssl, rc) != SSL_ERROR_WANT_READ &&
                            SSL_get_error(ssl, rc) != SSL_ERROR_WANT_WRITE)) {
                break;
            }
            pump(&r, 10, NULL);
        }
        CHECK(rc != 1);
        SSL_free(ssl);
        close(fd);
        SSL_CTX_free(c1);
        pump(&r, 50, NULL);
        CHECK_INT(r.events[PG_GRPC_CLOSED_PROTOCOL], 1);
    }
    rig_stop(&r);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
    {
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", cert_dir);
        if (system(cmd) != 0) {
            fprintf(stderr, "  could not remove %s\n", cert_dir);
        }
    }
}

/* ---- raw sockets: hostile clients ----------------------------------------- */

static int raw_connect(struct rig *r)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->port)};

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

/* Sends all of @p while the server's loop runs. */
static bool raw_send(struct rig *r, int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    int64_t end = pg_mono_ns() + 3000 * MS;

    while (n > 0 && pg_mono_ns() < end) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

        if (w > 0) {
            b += w;
            n -= (size_t)w;
        } else if (w < 0 && errno != EAGAIN) {
            return false;
        } else {
            pump(r, 5, NULL);
        }
    }
    return n == 0;
}

/* Reads what the server sends until it closes or @ms pass: true on EOF.
 * Collects the GOAWAY error code (or -1) and its debug data. */
struct raw_seen {
    int goaway_code;
    char goaway_debug[64];
    uint32_t goaway_last;  /* last-stream-id of the latest GOAWAY */
    int n_goaway;
    int n_rst;
    int n_headers;         /* HEADERS frames (answers, trailers) */
    bool drain_ping;       /* a PING "pgdrain!" arrived */
    bool stop_at_ping;     /* in: return at the drain PING */
};

static bool raw_until_closed(struct rig *r, int fd, int ms, struct raw_seen *seen)
{
    static uint8_t buf[1 << 16];
    size_t have = 0;
    int64_t end = pg_mono_ns() + ms * MS;
    bool stop_at_ping = seen->stop_at_ping;

    memset(seen, 0, sizeof(*seen));
    seen->goaway_code = -1;
    while (pg_mono_ns() < end && !(stop_at_ping && seen->drain_ping)) {
        ssize_t n = recv(fd, buf + have, sizeof(buf) - have, 0);

        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            return true;
        }
        if (n < 0) {
            pump(r, 5, NULL);
            continue;
        }
        have += (size_t)n;
        /* Parses whole frames (the server preface comes first: no magic). */
        while (have >= 9) {
            size_t len = (size_t)buf[0] << 16 | (size_t)buf[1] << 8 | buf[2];
            uint8_t type = buf[3];

            if (have < 9 + len) {
                break;
            }
            if (type == NGHTTP2_GOAWAY && len >= 8) {
                size_t dl = len - 8 < sizeof(seen->goaway_debug) - 1 ? len - 8
                                                                     : sizeof(seen->goaway_debug) - 1;

                seen->goaway_code = buf[9 + 4] << 24 | buf[9 + 5] << 16 | buf[9 + 6] << 8 | buf[9 + 7];
                seen->goaway_last = (uint32_t)buf[9] << 24 | (uint32_t)buf[10] << 16 |
                                    (uint32_t)buf[11] << 8 | buf[12];
                seen->n_goaway++;
                memcpy(seen->goaway_debug, buf + 9 + 8, dl);
                seen->goaway_debug[dl] = '\0';
            } else if (type == NGHTTP2_RST_STREAM) {
                seen->n_rst++;
            } else if (type == NGHTTP2_HEADERS) {
                seen->n_headers++;
            } else if (type == NGHTTP2_PING && len == 8 && !(buf[4] & NGHTTP2_FLAG_ACK) &&
                       memcmp(buf + 9, "pgdrain!", 8) == 0) {
                seen->drain_ping = true;
            }
            memmove(buf, buf + 9 + len, have - 9 - len);
            have -= 9 + len;
        }
        if (have == sizeof(buf)) {
            have = 0;
        }
    }
    return false;
}

static size_t frame_hd(uint8_t *p, size_t len, uint8_t type, uint8_t flags, uint32_t sid)
{
    p[0] = (uint8_t)(len >> 16);
    p[1] = (uint8_t)(len >> 8);
    p[2] = (uint8_t)len;
    p[3] = type;
    p[4] = flags;
    p[5] = (uint8_t)(sid >> 24);
    p[6] = (uint8_t)(sid >> 16);
    p[7] = (uint8_t)(sid >> 8);
    p[8] = (uint8_t)sid;
    return 9;
}

/* The client preface and an empty SETTINGS frame. */
static size_t preface(uint8_t *p)
{
    memcpy(p, NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
    return NGHTTP2_CLIENT_MAGIC_LEN + frame_hd(p + NGHTTP2_CLIENT_MAGIC_LEN, 0, NGHTTP2_SETTINGS,
                                               0, 0);
}

PG_TEST(silent_connection_closed_by_handshake_timeout)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct raw_seen seen = {0};
    int fd;
    int64_t t0;

    lim.handshake_timeout_ns = 200 * MS;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    t0 = pg_mono_ns();
    CHECK(raw_until_closed(&r, fd, 3000, &seen));
    CHECK(pg_mono_ns() - t0 >= 150 * MS);
    CHECK_INT(r.events[PG_GRPC_CLOSED_HANDSHAKE_TIMEOUT], 1);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    close(fd);
    rig_stop(&r);
}

PG_TEST(garbage_and_http1_closed_as_protocol)
{
    static const char *const inputs[] = {
        "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 garbage garbage garbage",
        "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
    };
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        struct raw_seen seen = {0};
        int fd = raw_connect(&r);

        PG_REQUIRE(fd >= 0);
        CHECK(raw_send(&r, fd, inputs[i], strlen(inputs[i])));
        CHECK(raw_until_closed(&r, fd, 2000, &seen));
        CHECK_INT(r.events[PG_GRPC_CLOSED_PROTOCOL], (int)i + 1);
        close(fd);
    }
    CHECK_INT(r.n_headers, 0);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    rig_stop(&r);
}

PG_TEST(too_many_pings_goaway)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct raw_seen seen = {0};
    uint8_t out[512];
    size_t n;
    int fd;

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    n = preface(out);
    for (int i = 0; i < 4; i++) {
        n += frame_hd(out + n, 8, NGHTTP2_PING, 0, 0);
        memset(out + n, i, 8);
        n += 8;
    }
    CHECK(raw_send(&r, fd, out, n));
    CHECK(raw_until_closed(&r, fd, 3000, &seen));
    CHECK_INT(seen.goaway_code, NGHTTP2_ENHANCE_YOUR_CALM);
    CHECK_STR(seen.goaway_debug, "too_many_pings");
    CHECK_INT(r.events[PG_GRPC_CLOSED_TOO_MANY_PINGS], 1);
    close(fd);
    /* Three PINGs (two strikes) are tolerated, as grpc-go does. */
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    n = preface(out);
    for (int i = 0; i < 3; i++) {
        n += frame_hd(out + n, 8, NGHTTP2_PING, 0, 0);
        memset(out + n, i, 8);
        n += 8;
    }
    CHECK(raw_send(&r, fd, out, n));
    CHECK(!raw_until_closed(&r, fd, 300, &seen));
    CHECK_INT(r.events[PG_GRPC_CLOSED_TOO_MANY_PINGS], 1);
    close(fd);
    rig_stop(&r);
    /* permit_without_stream and a short min_time: ten PINGs are fine. */
    lim.permit_without_stream = true;
    lim.min_ping_interval_ns = 1;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    n = preface(out);
    for (int i = 0; i < 10; i++) {
        n += frame_hd(out + n, 8, NGHTTP2_PING, 0, 0);
        memset(out + n, i, 8);
        n += 8;
    }
    CHECK(raw_send(&r, fd, out, n));
    CHECK(!raw_until_closed(&r, fd, 300, &seen));
    CHECK_INT(r.events[PG_GRPC_CLOSED_TOO_MANY_PINGS], 0);
    close(fd);
    rig_stop(&r);
}

/* SETTINGS floods (issue 23's hostile list): thousands of SETTINGS the
 * client never reads the ACKs of, and one SETTINGS frame with more entries
 * than max_settings; each closes only its own connection, and a real call
 * on a fresh connection still works. */
PG_TEST(settings_floods_closed)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "after the flood";
    enum { BATCH = 1000, MAX_BATCHES = 3000 };
    uint8_t *out = malloc(64 + BATCH * 9);
    struct raw_seen seen = {0};
    size_t n;
    int fd, rcv = 4096;
    size_t total = 0;
    int64_t end;

    PG_REQUIRE(out != NULL);
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    /* 1. SETTINGS whose ACKs the client never reads (~3.6 MB here): once the socket and
     * the pump's output are full, nghttp2's queue of owed ACKs passes
     * max_outbound_ack and the connection is dropped (not buffered). */
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    n = preface(out);
    CHECK(raw_send(&r, fd, out, n));
    for (int i = 0; i < BATCH; i++) {
        frame_hd(out + (size_t)i * 9, 0, NGHTTP2_SETTINGS, 0, 0);
    }
    /* Sent as one stream of alike frames (a short send resumes mid-frame);
     * a failed send is the server closing: the close event is what counts.
     * Bounded in bytes and time (a sanitizer build is slower). */
    end = pg_mono_ns() + 20000 * MS;
    while (r.events[PG_GRPC_CLOSED_PROTOCOL] == 0 && total < (size_t)MAX_BATCHES * BATCH * 9 &&
           pg_mono_ns() < end) {
        size_t off = total % 9;
        ssize_t w = send(fd, out + off, BATCH * 9 - off, MSG_NOSIGNAL);

        if (w > 0) {
            total += (size_t)w;
        }
        pump(&r, w > 0 ? 0 : 5, NULL);
    }
    CHECK(total < (size_t)MAX_BATCHES * BATCH * 9);
    CHECK_INT(r.events[PG_GRPC_CLOSED_PROTOCOL], 1);
    close(fd);
    /* 2. One SETTINGS frame with 40 entries, past the 32 allowed. */
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    n = preface(out);
    n += frame_hd(out + n, 40 * 6, NGHTTP2_SETTINGS, 0, 0);
    for (int i = 0; i < 40; i++, n += 6) {
        out[n] = 0;
        out[n + 1] = NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS;
        memset(out + n + 2, 0, 3);
        out[n + 5] = (uint8_t)(i + 1);
    }
    CHECK(raw_send(&r, fd, out, n));
    CHECK(raw_until_closed(&r, fd, 3000, &seen));
    CHECK_INT(seen.goaway_code, NGHTTP2_ENHANCE_YOUR_CALM);
    close(fd);
    /* The server still serves. */
    CHECK_INT(r.n_headers, 0);
    cli = client_new(&r, NULL);
    call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_OK);
    CHECK_INT(res.resp_len, sizeof(body));
    pg_grpc_conn_free(cli);
    pump(&r, 50, NULL);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    free(out);
    rig_stop(&r);
}

/* HEADERS of a gRPC call on @sid, HPACK-coded by nghttp2's deflater. */
static size_t call_headers(nghttp2_hd_deflater *dfl, uint8_t *p, size_t cap, uint32_t sid,
                           bool end_stream)
{
    nghttp2_nv nv[] = {
#define NV(a, b) {(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
        NV(":method", "POST"),       NV(":scheme", "http"),
        NV(":path", ECHO_PATH),      NV(":authority", "localhost"),
        NV("content-type", "application/grpc"), NV("te", "trailers"),
#undef NV
    };
    ssize_t n = nghttp2_hd_deflate_hd(dfl, p + 9, cap - 9, nv, sizeof(nv) / sizeof(nv[0]));

    if (n < 0) {
        return 0;
    }
    frame_hd(p, (size_t)n, NGHTTP2_HEADERS,
             NGHTTP2_FLAG_END_HEADERS | (end_stream ? NGHTTP2_FLAG_END_STREAM : 0), sid);
    return 9 + (size_t)n;
}

PG_TEST(streams_opened_and_reset)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct raw_seen seen = {0};
    nghttp2_hd_deflater *dfl;
    static uint8_t out[1 << 16];
    size_t n;
    int fd;
    uint32_t sid = 1;
    bool closed = false;

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    r.hold = true; /* calls stay open until reset */
    PG_REQUIRE(nghttp2_hd_deflate_new(&dfl, 4096) == 0);
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    n = preface(out);
    CHECK(raw_send(&r, fd, out, n));
    /* 3000 streams, each HEADERS + a message + RST_STREAM(CANCEL), in
     * batches: past nghttp2's reset rate limit the server ends it. */
    for (int batch = 0; batch < 30 && !closed; batch++) {
        n = 0;
        for (int i = 0; i < 100; i++, sid += 2) {
            size_t h = call_headers(dfl, out + n, sizeof(out) - n, sid, false);

            PG_REQUIRE(h > 0);
            n += h;
            n += frame_hd(out + n, 6, NGHTTP2_DATA, 0, sid);
            pg_grpc_prefix_write(out + n, false, 1);
            out[n + 5] = 'z';
            n += 6;
            n += frame_hd(out + n, 4, NGHTTP2_RST_STREAM, 0, sid);
            out[n] = out[n + 1] = out[n + 2] = 0;
            out[n + 3] = NGHTTP2_CANCEL;
            n += 4;
        }
        closed = !raw_send(&r, fd, out, n);
        pump(&r, 5, NULL);
    }
    closed = closed || raw_until_closed(&r, fd, 2000, &seen);
    CHECK(closed);
    CHECK_INT(r.events[PG_GRPC_CLOSED_PROTOCOL], 1);
    close(fd);
    nghttp2_hd_deflate_del(dfl);
    pump(&r, 50, NULL);
    /* Every call the handler saw ended; nothing held, nothing open. */
    CHECK(r.n_headers > 0);
    CHECK_INT(r.n_done, r.n_headers);
    CHECK_INT(r.n_held, 0);
    CHECK_INT(pg_grpc_server_open_calls(r.srv), 0);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    /* And the server still serves. */
    {
        struct pg_grpc_conn *cli = client_new(&r, NULL);
        struct result res;
        static const uint8_t body[] = "after";

        r.hold = false;
        call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
        CHECK_INT(res.code, PG_GRPC_OK);
        pg_grpc_conn_free(cli);
    }
    rig_stop(&r);
}

/* A client ignoring SETTINGS_MAX_CONCURRENT_STREAMS: the excess streams
 * are refused by nghttp2 (RST_STREAM), never reach the handler. */
PG_TEST(streams_past_the_limit_refused)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct raw_seen seen = {0};
    nghttp2_hd_deflater *dfl;
    static uint8_t out[1 << 16];
    size_t n;
    int fd;

    lim.max_concurrent_streams = 10;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    PG_REQUIRE(nghttp2_hd_deflate_new(&dfl, 4096) == 0);
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    n = preface(out);
    for (uint32_t sid = 1; sid < 2 * 50; sid += 2) {
        n += call_headers(dfl, out + n, sizeof(out) - n, sid, false);
    }
    CHECK(raw_send(&r, fd, out, n));
    raw_until_closed(&r, fd, 300, &seen);
    CHECK_INT(r.n_headers, 10);
    CHECK(seen.n_rst >= 40);
    CHECK_INT(pg_grpc_server_open_calls(r.srv), 10);
    close(fd);
    pump(&r, 100, NULL);
    CHECK_INT(r.n_done, 10);
    CHECK_INT(pg_grpc_server_open_calls(r.srv), 0);
    nghttp2_hd_deflate_del(dfl);
    rig_stop(&r);
}

PG_TEST(slow_message_call_read_timeout)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct raw_seen seen = {0};
    nghttp2_hd_deflater *dfl;
    uint8_t out[1024];
    size_t n;
    int fd;

    lim.call_read_timeout_ns = 200 * MS;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    PG_REQUIRE(nghttp2_hd_deflate_new(&dfl, 4096) == 0);
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    n = preface(out);
    n += call_headers(dfl, out + n, sizeof(out) - n, 1, false);
    n += frame_hd(out + n, 3, NGHTTP2_DATA, 0, 1);
    pg_grpc_prefix_write(out + n, false, 100); /* 100 declared, 0 sent */
    n += 3;
    CHECK(raw_send(&r, fd, out, n));
    CHECK(!raw_until_closed(&r, fd, 500, &seen));
    CHECK_INT(r.n_answers, 1);
    CHECK_INT(r.answer_code, PG_GRPC_DEADLINE_EXCEEDED);
    CHECK(strstr(r.answer_msg, "call_read_timeout") != NULL);
    CHECK_INT(r.n_done, 1);
    close(fd);
    nghttp2_hd_deflate_del(dfl);
    rig_stop(&r);
}

PG_TEST(unary_cardinality)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct raw_seen seen = {0};
    nghttp2_hd_deflater *dfl;
    uint8_t out[1024];
    size_t n;
    int fd;

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    PG_REQUIRE(nghttp2_hd_deflate_new(&dfl, 4096) == 0);
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    /* Stream 1: two messages; stream 3: none; stream 5: cut short. */
    n = preface(out);
    n += call_headers(dfl, out + n, sizeof(out) - n, 1, false);
    n += frame_hd(out + n, 12, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1);
    pg_grpc_prefix_write(out + n, false, 1);
    out[n + 5] = 'a';
    pg_grpc_prefix_write(out + n + 6, false, 1);
    out[n + 11] = 'b';
    n += 12;
    n += call_headers(dfl, out + n, sizeof(out) - n, 3, true);
    n += call_headers(dfl, out + n, sizeof(out) - n, 5, false);
    n += frame_hd(out + n, 7, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 5);
    pg_grpc_prefix_write(out + n, false, 9);
    out[n + 5] = out[n + 6] = 'c';
    n += 7;
    CHECK(raw_send(&r, fd, out, n));
    CHECK(!raw_until_closed(&r, fd, 300, &seen));
    CHECK_INT(r.n_calls, 0);
    CHECK_INT(r.n_answers, 3);
    CHECK_INT(r.n_done, 3);
    CHECK(strstr(r.answer_log, "received multiple request messages") != NULL);
    CHECK(strstr(r.answer_log, "received no request message") != NULL);
    CHECK(strstr(r.answer_log, "unexpected EOF") != NULL);
    close(fd);
    nghttp2_hd_deflate_del(dfl);
    rig_stop(&r);
}

/* ---- connection limits and lifecycle -------------------------------------- */

PG_TEST(keepalive_ping_unanswered_closes)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct raw_seen seen = {0};
    uint8_t out[64];
    int fd;
    int64_t t0;

    lim.keepalive_time_ns = 100 * MS;
    lim.keepalive_timeout_ns = 100 * MS;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    t0 = pg_mono_ns();
    CHECK(raw_send(&r, fd, out, preface(out)));
    /* The raw client never answers the server's PING. */
    CHECK(raw_until_closed(&r, fd, 3000, &seen));
    CHECK(pg_mono_ns() - t0 >= 150 * MS);
    CHECK_INT(r.events[PG_GRPC_CLOSED_KEEPALIVE_TIMEOUT], 1);
    close(fd);
    /* A client that acknowledges (nghttp2 does) stays up through several. */
    {
        struct pg_grpc_conn *cli = client_new(&r, NULL);
        struct result res;
        static const uint8_t body[] = "alive";

        call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
        CHECK_INT(res.code, PG_GRPC_OK);
        pump(&r, 600, NULL);
        CHECK(pg_grpc_conn_ready(cli));
        CHECK_INT(pg_grpc_server_open_connections(r.srv), 1);
        CHECK_INT(r.events[PG_GRPC_CLOSED_KEEPALIVE_TIMEOUT], 1);
        pg_grpc_conn_free(cli);
    }
    rig_stop(&r);
}

PG_TEST(max_connection_idle_goaway)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "idle";

    lim.max_connection_idle_ns = 150 * MS;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    cli = client_new(&r, NULL);
    call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_OK);
    pump(&r, 500, NULL);
    CHECK_INT(r.events[PG_GRPC_CLOSED_IDLE], 1);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    CHECK(!pg_grpc_conn_ready(cli));
    /* The client comes back on a new connection. */
    call_run(&r, cli, ECHO_PATH, body, sizeof(body), false, NULL, &res);
    CHECK_INT(res.code, PG_GRPC_OK);
    CHECK_INT(pg_grpc_conn_connects(cli), 2);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

PG_TEST(max_connection_age_and_grace)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "old";

    lim.max_connection_age_ns = 200 * MS;
    lim.max_connection_age_grace_ns = 300 * MS;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    r.hold = true;
    cli = client_new(&r, NULL);
    call_start(cli, ECHO_PATH, body, sizeof(body), false, NULL, 5000 * MS, &res);
    /* Past the age, GOAWAY: the call in flight keeps its connection. */
    pump(&r, 300, NULL);
    CHECK(!res.done);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 1);
    CHECK_INT(r.n_held, 1);
    /* Past the grace, the connection is closed under it. */
    pump(&r, 400, &res.done);
    CHECK(res.done);
    CHECK_INT(res.code, PG_GRPC_UNAVAILABLE);
    CHECK_INT(r.events[PG_GRPC_CLOSED_AGE], 1);
    CHECK_INT(r.n_held, 0);
    CHECK_INT(r.n_done, 1);
    /* Answered within the grace, the call completes and the connection ends. */
    call_start(cli, ECHO_PATH, body, sizeof(body), false, NULL, 5000 * MS, &res);
    pump(&r, 250, NULL);
    PG_REQUIRE(r.n_held == 1);
    pg_grpc_call_reply(r.held[0], PG_GRPC_OK, NULL, body, 3, -1);
    pump(&r, 2000, &res.done);
    CHECK_INT(res.code, PG_GRPC_OK);
    pump(&r, 100, NULL);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    CHECK_INT(r.events[PG_GRPC_CLOSED_AGE], 2);
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

PG_TEST(stop_accepting_lets_calls_finish)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_conn *cli;
    struct result res;
    static const uint8_t body[] = "last";

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    r.hold = true;
    cli = client_new(&r, NULL);
    call_start(cli, ECHO_PATH, body, sizeof(body), false, NULL, 5000 * MS, &res);
    pump(&r, 200, NULL);
    PG_REQUIRE(r.n_held == 1);
    pg_grpc_server_stop_accepting(r.srv);
    CHECK_INT(pg_grpc_server_fd(r.srv), -1);
    pump(&r, 100, NULL);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 1);
    pg_grpc_call_reply(r.held[0], PG_GRPC_OK, NULL, body, 4, -1);
    pump(&r, 2000, &res.done);
    CHECK_INT(res.code, PG_GRPC_OK);
    CHECK_INT(res.resp_len, 4);
    pump(&r, 100, NULL);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    CHECK(raw_connect(&r) < 0); /* the listener is gone */
    pg_grpc_conn_free(cli);
    rig_stop(&r);
}

/* The two-step GOAWAY: a call the client starts between the shutdown
 * notice and its PING ACK is still served; the final GOAWAY names it. */
PG_TEST(stop_accepting_two_step_goaway)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct raw_seen seen = {0};
    nghttp2_hd_deflater *dfl;
    uint8_t out[1024];
    size_t n;
    int fd;

    PG_REQUIRE(rig_start(&r, &lim, NULL));
    PG_REQUIRE(nghttp2_hd_deflate_new(&dfl, 4096) == 0);
    fd = raw_connect(&r);
    PG_REQUIRE(fd >= 0);
    CHECK(raw_send(&r, fd, out, preface(out)));
    pump(&r, 50, NULL);
    pg_grpc_server_stop_accepting(r.srv);
    seen.stop_at_ping = true;
    CHECK(!raw_until_closed(&r, fd, 2000, &seen));
    CHECK(seen.drain_ping);
    CHECK_INT(seen.n_goaway, 1);
    CHECK_INT(seen.goaway_last, 0x7fffffff);
    /* A call sent before the ACK, then the ACK. */
    n = call_headers(dfl, out, sizeof(out), 1, false);
    n += frame_hd(out + n, 8, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1);
    pg_grpc_prefix_write(out + n, false, 3);
    memcpy(out + n + 5, "abc", 3);
    n += 8;
    n += frame_hd(out + n, 8, NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0);
    memcpy(out + n, "pgdrain!", 8);
    n += 8;
    CHECK(raw_send(&r, fd, out, n));
    CHECK(raw_until_closed(&r, fd, 2000, &seen));
    CHECK_INT(seen.n_goaway, 1);
    CHECK_INT(seen.goaway_last, 1);
    CHECK_INT(seen.n_headers, 2); /* the answer's headers and trailers */
    CHECK_INT(r.n_calls, 1);
    CHECK_INT(r.answer_code, PG_GRPC_OK);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    close(fd);
    nghttp2_hd_deflate_del(dfl);
    rig_stop(&r);
}

PG_TEST(connection_caps_shared_with_sibling)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    struct pg_grpc_server *sib;
    struct raw_seen seen = {0};
    char err[128];
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int sfd, a, b, c;
    uint8_t out[64];

    lim.max_connections = 2;
    lim.max_connections_per_peer = 2;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    sfd = pg_listen(PG_TRANSPORT_TCP4, "127.0.0.1", 0, 16, err, sizeof(err));
    PG_REQUIRE(sfd >= 0);
    getsockname(sfd, (struct sockaddr *)&sa, &sl);
    sib = pg_grpc_server_new_sibling(r.srv, r.base, sfd, &r);
    PG_REQUIRE(sib != NULL);
    a = raw_connect(&r);
    b = raw_connect(&r);
    PG_REQUIRE(a >= 0 && b >= 0);
    CHECK(raw_send(&r, a, out, preface(out)));
    CHECK(raw_send(&r, b, out, preface(out)));
    pump(&r, 100, NULL);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 2);
    /* A third, on the sibling's socket: over the shared cap. */
    {
        int port = r.port;

        r.port = ntohs(sa.sin_port);
        c = raw_connect(&r);
        r.port = port;
    }
    PG_REQUIRE(c >= 0);
    CHECK(raw_until_closed(&r, c, 2000, &seen));
    CHECK_INT(r.events[PG_GRPC_REFUSED_MAX_CONNECTIONS], 1);
    CHECK_INT(pg_grpc_server_open_connections(sib), 0);
    close(c);
    close(a);
    close(b);
    pump(&r, 100, NULL);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 0);
    pg_grpc_server_free(sib);
    rig_stop(&r);
    /* Per peer: the same address twice at most. */
    lim.max_connections = 0;
    lim.max_connections_per_peer = 1;
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    a = raw_connect(&r);
    b = raw_connect(&r);
    PG_REQUIRE(a >= 0 && b >= 0);
    CHECK(raw_until_closed(&r, b, 2000, &seen));
    CHECK_INT(r.events[PG_GRPC_REFUSED_PER_PEER], 1);
    CHECK_INT(pg_grpc_server_open_connections(r.srv), 1);
    close(a);
    close(b);
    rig_stop(&r);
}

/* ---- real clients ----------------------------------------------------------- */

/* Runs @argv (exit status returned) while the server's loop runs; -1 when
 * it could not start, -2 when it had to be killed after @ms. */
static int run_peer(struct rig *r, char *const argv[], int ms)
{
    pid_t pid = fork();
    int64_t end = pg_mono_ns() + ms * MS;
    int status;

    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);

        if (null >= 0 && getenv("PG_TEST_VERBOSE") == NULL) {
            dup2(null, 1);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    while (pg_mono_ns() < end) {
        pid_t w = waitpid(pid, &status, WNOHANG);

        if (w == pid) {
            return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
        }
        pump(r, 10, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -2;
}

static bool have_tool(const char *cmd)
{
    char buf[256];

    snprintf(buf, sizeof(buf), "command -v %s >/dev/null 2>&1", cmd);
    return system(buf) == 0;
}

/* A generic @grpc/grpc-js client with a raw-bytes (de)serializer: one OK
 * call echoing its bytes, one to an unknown path (UNIMPLEMENTED), one with
 * gzip. Exit 0 when all three behave. */
static const char node_client[] =
    "import { createRequire } from 'node:module';\n"
    "const require = createRequire(process.env.PG_NODE_DIR + '/');\n"
    "const grpc = require('@grpc/grpc-js');\n"
    "const port = process.argv.at(-1);\n"
    "const id = (b) => b;\n"
    "function call(path, opts) {\n"
    "  const c = new grpc.Client('127.0.0.1:' + port, grpc.credentials.createInsecure(), opts);\n"
    "  return new Promise((res) => {\n"
    "    c.makeUnaryRequest(path, id, id, Buffer.from('node says hi'), new grpc.Metadata(),\n"
    "      { deadline: Date.now() + 5000 }, (err, resp) => { c.close(); res({ err, resp }); });\n"
    "  });\n"
    "}\n"
    "const a = await call('" ECHO_PATH "', {});\n"
    "if (a.err || a.resp.toString() !== 'node says hi') { console.error('ok call', a.err); process.exit(1); }\n"
    "const b = await call('/nope.Svc/X', {});\n"
    "if (!b.err || b.err.code !== grpc.status.UNIMPLEMENTED) { console.error('unimpl', b.err); process.exit(2); }\n"
    "const g = await call('" ECHO_PATH "', { 'grpc.default_compression_algorithm': 2 });\n"
    "if (g.err || g.resp.toString() !== 'node says hi') { console.error('gzip call', g.err); process.exit(3); }\n"
    "process.exit(0);\n";

PG_TEST(node_grpc_js_client)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    const char *src = getenv("PG_SOURCE_DIR");
    char dir[512], port[16];
    int rc;

    if (!have_tool("node") || src == NULL) {
        fprintf(stderr, "  skipped: node or PG_SOURCE_DIR missing\n");
        return;
    }
    snprintf(dir, sizeof(dir), "%s/tests/node/node_modules", src);
    setenv("PG_NODE_DIR", dir, 1);
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    snprintf(port, sizeof(port), "%d", r.port);
    {
        char *argv[] = {"node", "--input-type=module", "-e", (char *)node_client, port, NULL};

        rc = run_peer(&r, argv, 20000);
    }
    CHECK_INT(rc, 0);
    CHECK_INT(r.n_calls, 2);
    CHECK(r.n_headers >= 3);
    pump(&r, 100, NULL);
    CHECK_INT(pg_grpc_server_open_calls(r.srv), 0);
    rig_stop(&r);
}

PG_TEST(h2load_unary_calls)
{
    struct pg_grpc_server_limits lim = small_limits();
    struct rig r;
    char body_path[] = "/tmp/pg_test_grpc_body.XXXXXX";
    char url[128];
    uint8_t body[5 + 64];
    int fd, rc;

    if (!have_tool("h2load")) {
        fprintf(stderr, "  skipped: h2load (Debian nghttp2-client) missing\n");
        return;
    }
    pg_grpc_prefix_write(body, false, 64);
    memset(body + 5, 'q', 64);
    fd = mkstemp(body_path);
    PG_REQUIRE(fd >= 0);
    PG_REQUIRE(write(fd, body, sizeof(body)) == (ssize_t)sizeof(body));
    close(fd);
    PG_REQUIRE(rig_start(&r, &lim, NULL));
    snprintf(url, sizeof(url), "http://127.0.0.1:%d" ECHO_PATH, r.port);
    {
        char *argv[] = {"h2load", "-n", "200", "-c", "2", "-m", "8", "-d", body_path,
                        "-H", "content-type: application/grpc", "-H", "te: trailers", url, NULL};

        rc = run_peer(&r, argv, 30000);
    }
    unlink(body_path);
    CHECK_INT(rc, 0);
    CHECK_INT(r.n_calls, 200);
    CHECK_INT(r.msg_len, 64);
    CHECK(r.msg_len == 64 && r.msg[0] == 'q' && r.msg[63] == 'q');
    pump(&r, 100, NULL);
    CHECK_INT(r.n_done, 200);
    CHECK_INT(pg_grpc_server_open_calls(r.srv), 0);
    rig_stop(&r);
}

static void setup(void) __attribute__((constructor));
static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
}

PG_TEST_MAIN(PG_CASE(unary_ok), PG_CASE(large_answers_past_the_socket_buffer),
             PG_CASE(gzip_request_and_bomb),
             PG_CASE(encoding_not_allowed_is_unimplemented), PG_CASE(unknown_path_unimplemented),
             PG_CASE(message_over_cap_refused_unbuffered), PG_CASE(on_length_refusal),
             PG_CASE(grpc_timeout_deadline_exceeded), PG_CASE(retry_info_reaches_the_client),
             PG_CASE(max_concurrent_streams_honoured), PG_CASE(tls_with_alpn),
             PG_CASE(silent_connection_closed_by_handshake_timeout),
             PG_CASE(garbage_and_http1_closed_as_protocol), PG_CASE(too_many_pings_goaway),
             PG_CASE(settings_floods_closed),
             PG_CASE(streams_opened_and_reset), PG_CASE(streams_past_the_limit_refused), PG_CASE(slow_message_call_read_timeout), PG_CASE(unary_cardinality),
             PG_CASE(keepalive_ping_unanswered_closes), PG_CASE(max_connection_idle_goaway),
             PG_CASE(max_connection_age_and_grace), PG_CASE(stop_accepting_lets_calls_finish), PG_CASE(stop_accepting_two_step_goaway),
             PG_CASE(connection_caps_shared_with_sibling),
             PG_CASE(node_grpc_js_client), PG_CASE(h2load_unary_calls))
