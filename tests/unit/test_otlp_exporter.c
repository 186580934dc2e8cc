/* SPDX-License-Identifier: Apache-2.0
 * Component tests of the `otlp` exporter against a real gRPC server
 * (tests/node/grpc_server.mjs: @grpc/grpc-js + the upstream-generated
 * protobufjs decoder). Each case drives pg_exporter_otlp directly on an
 * event_base with hand-built batches and checks what the server received:
 * delivery, gzip, retries and their limits, faults (UNAVAILABLE, stall, cut
 * connection, server down at start), a full queue, splitting, batching,
 * TLS/mTLS, headers and the bearer token file, and draining at shutdown. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "pipeline/component.h"
#include "core/config.h"
#include "core/arena.h"
#include "pipeline/batch.h"
#include "core/log.h"
#include "core/memlimit.h"
#include "core/metrics.h"
#include "storage/spool.h"
#include "storage/storage.h"
#include "pg_test.h"
#include "pg_test_diag.h"
#include "pg_test_exporter_rig.h"
#include "test_otlp_util.h"

extern const struct pg_component_ops pg_exporter_otlp;

/* ---- the Node server ------------------------------------------------------ */

struct srv {
    pid_t pid;
    int grpc_port;
    int control_port;
};

/* Servers still running when a case ended early (PG_REQUIRE after
 * srv_start); killed by the harness after that case. */
static pid_t live_pids[4];

static void srv_reap_leftovers(void)
{
    for (size_t i = 0; i < sizeof(live_pids) / sizeof(live_pids[0]); i++) {
        if (live_pids[i] > 0) {
            kill(live_pids[i], SIGTERM);
            waitpid(live_pids[i], NULL, 0);
            live_pids[i] = 0;
        }
    }
}

static void srv_track(pid_t old_pid, pid_t new_pid)
{
    for (size_t i = 0; i < sizeof(live_pids) / sizeof(live_pids[0]); i++) {
        if (live_pids[i] == old_pid) {
            live_pids[i] = new_pid;
            return;
        }
    }
}

static bool srv_start(struct srv *s, const char *args)
{
    const char *src = getenv("PG_SOURCE_DIR");
    char cmd[2048];
    int fds[2];
    char line[256];
    size_t n = 0;

    memset(s, 0, sizeof(*s));
    if (src == NULL) {
        src = ".";
    }
    /* Without the peer every case would fail the same way: skip, saying why. */
    snprintf(cmd, sizeof(cmd), "%s/tests/node/node_modules/@grpc/grpc-js/package.json", src);
    if (access(cmd, R_OK) != 0 || system("command -v node >/dev/null 2>&1") != 0) {
        PG_SKIP_ALL("needs node and tests/node/node_modules (bash scripts/bootstrap.sh --test)");
    }
    snprintf(cmd, sizeof(cmd), "exec node %s/tests/node/grpc_server.mjs %s", src, args);
    if (pipe(fds) != 0) {
        return false;
    }
    s->pid = fork();
    if (s->pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    if (s->pid > 0) {
        srv_track(0, s->pid);
        pg_test_after_case_ = srv_reap_leftovers;
    }
    while (n + 1 < sizeof(line) && read(fds[0], line + n, 1) == 1 && line[n] != '\n') {
        n++;
    }
    line[n] = '\0';
    close(fds[0]);
    if (sscanf(line, "{\"grpc_port\":%d,\"control_port\":%d}", &s->grpc_port,
               &s->control_port) != 2) {
        fprintf(stderr, "  grpc_server.mjs did not start (got \"%s\"); is node installed and "
                        "tests/node/node_modules present (scripts/bootstrap.sh)?\n",
                line);
        return false;
    }
    return true;
}

static void srv_stop(struct srv *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        srv_track(s->pid, 0);
        s->pid = 0;
    }
}

/* One blocking HTTP/1.0 exchange with the control endpoint; returns the
 * malloc'd body or NULL. */
static char *http_req(int port, const char *method, const char *path, const char *body)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char req[1024];
    char *buf = NULL;
    size_t len = 0;
    size_t cap = 0;
    char *b;
    ssize_t r;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    snprintf(req, sizeof(req),
             "%s %s HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
             "%zu\r\n\r\n%s",
             method, path, body ? strlen(body) : 0, body ? body : "");
    if (write(fd, req, strlen(req)) < 0) {
        close(fd);
        return NULL;
    }
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 16384;
            buf = realloc(buf, cap);
        }
        r = read(fd, buf + len, cap - len - 1);
        if (r <= 0) {
            break;
        }
        len += (size_t)r;
    }
    close(fd);
    if (buf == NULL) {
        return NULL;
    }
    buf[len] = '\0';
    b = strstr(buf, "\r\n\r\n");
    if (b == NULL) {
        free(buf);
        return NULL;
    }
    memmove(buf, b + 4, strlen(b + 4) + 1);
    return buf;
}

static long long json_int(const char *json, const char *key)
{
    char pat[128];
    const char *p;

    if (json == NULL) {
        return -1;
    }
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    p = strstr(json, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : 0;
}

static long long srv_stat(const struct srv *s, const char *key)
{
    char *body = http_req(s->control_port, "GET", "/stats", NULL);
    long long v = json_int(body, key);

    free(body);
    return v;
}

static char *srv_stats(const struct srv *s)
{
    return http_req(s->control_port, "GET", "/stats", NULL);
}

static void srv_post(const struct srv *s, const char *path, const char *json)
{
    free(http_req(s->control_port, "POST", path, json));
}

/* ---- the exporter rig ----------------------------------------------------- */

static bool rig_create(struct rig *r, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool rig_create(struct rig *r, const char *id, const char *fmt, ...)
{
    char yaml[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(yaml, sizeof(yaml), fmt, ap);
    va_end(ap);
    return rig_start(r, &pg_exporter_otlp, 15000, id, yaml);
}

static enum pg_err push(struct rig *r, size_t profiles, size_t samples, unsigned seed)
{
    return rig_push(r, profiles, samples, seed);
}

#define FAST_RETRY                                                                                 \
    "retry_on_failure: {initial_interval: 50ms, max_interval: 200ms, max_elapsed_time: 20s}\n"

/* ---- cases ----------------------------------------------------------------- */

PG_TEST(delivers_with_gzip)
{
    struct srv s;
    struct rig r;
    char *stats;

    PG_REQUIRE(srv_start(&s, ""));
    PG_REQUIRE(rig_create(&r, "otlp/basic", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n",
                     s.grpc_port));
    for (unsigned i = 0; i < 5; i++) {
        CHECK_INT(push(&r, 1, 40, i), PG_ERR_OK);
    }
    rig_wait(&r, 200, 10000);
    CHECK_INT(sent(&r), 200);
    CHECK_INT(failed(&r), 0);
    stats = srv_stats(&s);
    CHECK_INT(json_int(stats, "samples"), 200);
    CHECK_INT(json_int(stats, "requests"), 5);
    CHECK_INT(json_int(stats, "gzip"), 5);
    CHECK_INT(json_int(stats, "identity"), 0);
    CHECK_INT(json_int(stats, "duplicates"), 0);
    CHECK(json_int(stats, "wire_bytes") < json_int(stats, "bytes"));
    free(stats);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(compression_none)
{
    struct srv s;
    struct rig r;
    char *stats;

    PG_REQUIRE(srv_start(&s, ""));
    PG_REQUIRE(rig_create(&r, "otlp/plain", "endpoint: http://127.0.0.1:%d\ncompression: none\n",
                     s.grpc_port));
    CHECK_INT(push(&r, 2, 10, 1), PG_ERR_OK);
    rig_wait(&r, 20, 10000);
    stats = srv_stats(&s);
    CHECK_INT(json_int(stats, "samples"), 20);
    CHECK_INT(json_int(stats, "profiles"), 2);
    CHECK_INT(json_int(stats, "identity"), 1);
    CHECK_INT(json_int(stats, "gzip"), 0);
    free(stats);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(unavailable_then_delivered_once)
{
    struct srv s;
    struct rig r;
    char *stats;

    PG_REQUIRE(srv_start(&s, "--mode unavailable --fail-first 3"));
    PG_REQUIRE(rig_create(&r, "otlp/unavail", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n" FAST_RETRY
                     "sending_queue: {num_consumers: 1}\n",
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 30, 1), PG_ERR_OK);
    CHECK_INT(push(&r, 1, 30, 2), PG_ERR_OK);
    rig_wait(&r, 60, 15000);
    CHECK_INT(sent(&r), 60);
    stats = srv_stats(&s);
    CHECK_INT(json_int(stats, "samples"), 60);
    CHECK_INT(json_int(stats, "requests"), 2);
    CHECK_INT(json_int(stats, "duplicates"), 0);
    CHECK_INT(json_int(stats, "failed"), 3);
    free(stats);
    CHECK_INT(metric(&r, "pprofgate_exporter_retries"), 3);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(invalid_argument_dropped_not_retried)
{
    struct srv s;
    struct rig r;

    PG_REQUIRE(srv_start(&s, "--mode invalid"));
    PG_REQUIRE(rig_create(&r, "otlp/invalid", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n" FAST_RETRY,
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 25, 1), PG_ERR_OK);
    rig_wait(&r, 25, 10000);
    rig_spin(&r, 300); /* a retry, if any, would happen here */
    CHECK_INT(srv_stat(&s, "calls"), 1);
    CHECK_INT(failed(&r), 25);
    CHECK_INT(dropped(&r, "invalid_argument"), 25);
    CHECK_INT(sent(&r), 0);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(resource_exhausted_without_retryinfo_not_retried)
{
    struct srv s;
    struct rig r;

    PG_REQUIRE(srv_start(&s, "--mode exhausted"));
    PG_REQUIRE(rig_create(&r, "otlp/exh", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n" FAST_RETRY,
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 7, 1), PG_ERR_OK);
    rig_wait(&r, 7, 10000);
    rig_spin(&r, 300);
    CHECK_INT(srv_stat(&s, "calls"), 1);
    CHECK_INT(dropped(&r, "resource_exhausted"), 7);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(resource_exhausted_with_retryinfo_waits_and_retries)
{
    struct srv s;
    struct rig r;
    struct timespec t0;
    struct timespec t1;
    double secs;

    PG_REQUIRE(srv_start(&s, "--mode exhausted_retryinfo --fail-first 1 --retry-delay-ms 700"));
    PG_REQUIRE(rig_create(&r, "otlp/exhri",
                     "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                     "retry_on_failure: {initial_interval: 10ms, randomization_factor: 0}\n",
                     s.grpc_port));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_INT(push(&r, 1, 9, 1), PG_ERR_OK);
    rig_wait(&r, 9, 10000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK_INT(sent(&r), 9);
    CHECK_INT(srv_stat(&s, "calls"), 2);
    /* The server's RetryInfo (700 ms), not the 10 ms backoff, set the wait. */
    CHECK(secs >= 0.7);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(http_status_mapped_like_grpc_go)
{
    struct srv s;
    struct rig r;

    /* 503 without grpc-status: UNAVAILABLE, retried. */
    PG_REQUIRE(srv_start(&s, "--raw-http-status 503"));
    PG_REQUIRE(rig_create(&r, "otlp/http503",
                     "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                     "retry_on_failure: {initial_interval: 50ms, max_elapsed_time: 400ms}\n",
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 3, 1), PG_ERR_OK);
    rig_wait(&r, 3, 10000);
    CHECK(metric(&r, "pprofgate_exporter_retries") >= 2);
    CHECK_INT(dropped(&r, "retry_exhausted"), 3);
    rig_destroy(&r);
    srv_stop(&s);

    /* 404: UNIMPLEMENTED, dropped at once. */
    PG_REQUIRE(srv_start(&s, "--raw-http-status 404"));
    PG_REQUIRE(rig_create(&r, "otlp/http404", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n" FAST_RETRY,
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 3, 1), PG_ERR_OK);
    rig_wait(&r, 3, 10000);
    CHECK_INT(metric(&r, "pprofgate_exporter_retries"), 0);
    CHECK_INT(dropped(&r, "unimplemented"), 3);
    CHECK_INT(srv_stat(&s, "calls"), 1);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(stall_times_out_then_retries)
{
    struct srv s;
    struct rig r;

    PG_REQUIRE(srv_start(&s, "--mode stall --fail-first 1 --stall-ms 3000"));
    PG_REQUIRE(rig_create(&r, "otlp/stall",
                     "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\ntimeout: 300ms\n" FAST_RETRY,
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 11, 1), PG_ERR_OK);
    rig_wait(&r, 11, 10000);
    CHECK_INT(sent(&r), 11);
    CHECK_INT(srv_stat(&s, "samples"), 11);
    CHECK(srv_stat(&s, "calls") >= 2);
    CHECK(metric(&r, "pprofgate_exporter_retries") >= 1);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(connection_cut_mid_call_reconnects)
{
    struct srv s;
    struct rig r;

    PG_REQUIRE(srv_start(&s, "--mode cut --fail-first 1"));
    PG_REQUIRE(rig_create(&r, "otlp/cut", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n" FAST_RETRY,
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 13, 1), PG_ERR_OK);
    CHECK_INT(push(&r, 1, 13, 2), PG_ERR_OK);
    rig_wait(&r, 26, 15000);
    CHECK_INT(sent(&r), 26);
    CHECK_INT(srv_stat(&s, "samples"), 26);
    CHECK_INT(srv_stat(&s, "duplicates"), 0);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(server_restart_between_pushes)
{
    struct srv s;
    struct rig r;

    PG_REQUIRE(srv_start(&s, ""));
    PG_REQUIRE(rig_create(&r, "otlp/flap", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n" FAST_RETRY,
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 8, 1), PG_ERR_OK);
    rig_wait(&r, 8, 5000);
    srv_post(&s, "/stop", NULL); /* the long-lived connection goes away */
    CHECK_INT(push(&r, 1, 8, 2), PG_ERR_OK);
    rig_spin(&r, 400);
    srv_post(&s, "/start", NULL);
    rig_wait(&r, 16, 10000);
    CHECK_INT(sent(&r), 16);
    CHECK_INT(srv_stat(&s, "samples"), 16);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(goaway_drains_without_loss)
{
    struct srv s;
    struct rig r;

    /* The server sends GOAWAY on every connection after 300 ms. */
    PG_REQUIRE(srv_start(&s, "--max-conn-age-ms 300 --mode slow --delay-ms 50"));
    PG_REQUIRE(rig_create(&r, "otlp/goaway", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n" FAST_RETRY,
                     s.grpc_port));
    for (unsigned i = 0; i < 12; i++) {
        CHECK_INT(push(&r, 1, 5, i), PG_ERR_OK);
        rig_spin(&r, 120);
    }
    rig_wait(&r, 60, 10000);
    CHECK_INT(sent(&r), 60);
    CHECK_INT(failed(&r), 0);
    CHECK_INT(srv_stat(&s, "samples"), 60);
    CHECK_INT(srv_stat(&s, "duplicates"), 0);
    rig_destroy(&r);
    srv_stop(&s);
}

/* A listener that never accepts: TCP connects (backlog), HTTP/2 never answers. */
static int blackhole(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

PG_TEST(keepalive_detects_dead_peer)
{
    struct rig r;
    int port = 0;
    int fd = blackhole(&port);
    struct timespec t0;
    struct timespec t1;

    PG_REQUIRE(fd >= 0);
    PG_REQUIRE(rig_create(&r, "otlp/keepalive",
                     "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\ntimeout: 20s\n"
                     "keepalive: {time: 200ms, timeout: 300ms}\nretry_on_failure: {enabled: false}\n",
                     port));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_INT(push(&r, 1, 4, 1), PG_ERR_OK);
    rig_wait(&r, 4, 10000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* Failed by the unanswered PING, long before the 20 s deadline. */
    CHECK_INT(dropped(&r, "retry_disabled"), 4);
    CHECK(t1.tv_sec - t0.tv_sec < 5);
    rig_destroy(&r);
    close(fd);
}

PG_TEST(server_down_at_start)
{
    struct srv s;
    struct rig r;

    PG_REQUIRE(srv_start(&s, "--start-delay-ms 1500"));
    PG_REQUIRE(rig_create(&r, "otlp/down", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                     "retry_on_failure: {initial_interval: 200ms, max_interval: 500ms}\n",
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 17, 1), PG_ERR_OK);
    rig_wait(&r, 17, 15000);
    CHECK_INT(sent(&r), 17);
    CHECK_INT(srv_stat(&s, "samples"), 17);
    CHECK(metric(&r, "pprofgate_exporter_retries") >= 1);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(full_queue_answers_busy_and_keeps_accepted)
{
    struct srv s;
    struct rig r;
    int accepted = 0;
    int busy = 0;

    PG_REQUIRE(srv_start(&s, "--mode slow --delay-ms 400"));
    PG_REQUIRE(rig_create(&r, "otlp/full", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                     "sending_queue: {queue_size: 2, num_consumers: 1}\n",
                     s.grpc_port));
    for (unsigned i = 0; i < 6; i++) {
        enum pg_err err = push(&r, 1, 5, i);

        accepted += err == PG_ERR_OK;
        busy += err == PG_ERR_BUSY;
    }
    /* One in flight + two waiting; the rest are told to come back. */
    CHECK_INT(accepted, 3);
    CHECK_INT(busy, 3);
    CHECK_INT(metric(&r, "otelcol_exporter_enqueue_failed_profile_samples"), 15);
    rig_wait(&r, 15, 10000);
    CHECK_INT(sent(&r), 15);
    CHECK_INT(srv_stat(&s, "samples"), 15);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(large_request_split)
{
    struct srv s;
    struct rig r;
    struct pg_batch *b = tb_batch(2, 15000, 300, "big", 9);
    size_t whole = protobuf_c_message_get_packed_size(&b->req->base);
    struct pg_status st;
    char *stats;

    CHECK(whole > 256 * 1024);
    PG_REQUIRE(srv_start(&s, ""));
    PG_REQUIRE(rig_create(&r, "otlp/split", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                     "max_request_bytes: 128KiB\n",
                     s.grpc_port));
    pg_status_clear(&st);
    CHECK_INT(pg_exporter_otlp.consume(r.state, b, &st), PG_ERR_OK);
    pg_batch_unref(b);
    rig_wait(&r, 30000, 15000);
    CHECK_INT(sent(&r), 30000);
    stats = srv_stats(&s);
    CHECK_INT(json_int(stats, "samples"), 30000);
    CHECK(json_int(stats, "requests") >= (long long)(whole / (128 * 1024)));
    CHECK_INT(json_int(stats, "failed"), 0);
    free(stats);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(batching_merges_pushes)
{
    struct srv s;
    struct rig r;
    char *stats;

    PG_REQUIRE(srv_start(&s, ""));
    PG_REQUIRE(rig_create(&r, "otlp/batch", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                     "sending_queue: {batch: {flush_timeout: 300ms, min_size: 100}}\n",
                     s.grpc_port));
    for (unsigned i = 0; i < 4; i++) {
        CHECK_INT(push(&r, 1, 10, i), PG_ERR_OK); /* 40 < min_size: waits for the timer */
    }
    rig_wait(&r, 40, 5000);
    for (unsigned i = 0; i < 12; i++) {
        CHECK_INT(push(&r, 1, 10, 100 + i), PG_ERR_OK); /* 100 reached at the 10th */
    }
    rig_wait(&r, 160, 5000);
    stats = srv_stats(&s);
    CHECK_INT(json_int(stats, "samples"), 160);
    CHECK_INT(json_int(stats, "requests"), 3); /* 40 (timer) + 100 (size) + 20 (timer) */
    CHECK_INT(json_int(stats, "profiles"), 16);
    free(stats);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(headers_and_bearer_token_file)
{
    struct srv s;
    struct rig r;
    char dir[] = "/tmp/pg-otlp-token-XXXXXX";
    char path[128];
    char *stats;
    FILE *f;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/token", dir);
    f = fopen(path, "w");
    fputs("first-token\n", f);
    fclose(f);
    PG_REQUIRE(srv_start(&s, ""));
    PG_REQUIRE(rig_create(&r, "otlp/auth",
                     "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                     "headers: {x-scope-orgid: tenant-7}\nauth: {bearer_token_file: %s}\n",
                     s.grpc_port, path));
    CHECK_INT(push(&r, 1, 3, 1), PG_ERR_OK);
    rig_wait(&r, 3, 5000);
    /* Rotate the token (different size, so even a coarse mtime sees it). */
    f = fopen(path, "w");
    fputs("second-token-rotated\n", f);
    fclose(f);
    CHECK_INT(push(&r, 1, 3, 2), PG_ERR_OK);
    rig_wait(&r, 6, 5000);
    stats = srv_stats(&s);
    CHECK(stats != NULL && strstr(stats, "\"Bearer first-token\"") != NULL);
    CHECK(stats != NULL && strstr(stats, "\"Bearer second-token-rotated\"") != NULL);
    CHECK(stats != NULL && strstr(stats, "\"x-scope-orgid\":\"tenant-7\"") != NULL);
    free(stats);
    rig_destroy(&r);
    srv_stop(&s);
    unlink(path);
    rmdir(dir);
}

PG_TEST(partial_success_counted)
{
    struct srv s;
    struct rig r;

    PG_REQUIRE(srv_start(&s, "--mode partial"));
    PG_REQUIRE(rig_create(&r, "otlp/partial", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n",
                     s.grpc_port));
    CHECK_INT(push(&r, 2, 3, 1), PG_ERR_OK);
    rig_wait(&r, 6, 5000);
    CHECK_INT(metric(&r, "pprofgate_exporter_rejected_profiles"), 1);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(shutdown_drains_queue)
{
    struct srv s;
    struct rig r;

    PG_REQUIRE(srv_start(&s, "--mode slow --delay-ms 100"));
    PG_REQUIRE(rig_create(&r, "otlp/drain", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                     "sending_queue: {num_consumers: 2}\n",
                     s.grpc_port));
    for (unsigned i = 0; i < 8; i++) {
        CHECK_INT(push(&r, 1, 4, i), PG_ERR_OK);
    }
    pg_exporter_otlp.shutdown(r.state);
    CHECK_INT(push(&r, 1, 4, 99), PG_ERR_UNAVAILABLE); /* intake stopped */
    for (int t = 0; t < 10000 && !pg_exporter_otlp.idle(r.state); t += 20) {
        rig_spin(&r, 20);
    }
    CHECK(pg_exporter_otlp.idle(r.state));
    CHECK_INT(sent(&r), 32);
    CHECK_INT(srv_stat(&s, "samples"), 32);
    rig_destroy(&r);
    srv_stop(&s);
}

PG_TEST(shutdown_deadline_drops_and_counts)
{
    struct srv s;
    struct rig r;

    PG_REQUIRE(srv_start(&s, "--mode unavailable --fail-first 1000"));
    PG_REQUIRE(rig_create(&r, "otlp/deadline", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                     FAST_RETRY "shutdown_timeout: 500ms\n",
                     s.grpc_port));
    CHECK_INT(push(&r, 1, 6, 1), PG_ERR_OK);
    rig_spin(&r, 200);
    pg_exporter_otlp.shutdown(r.state);
    for (int t = 0; t < 5000 && !pg_exporter_otlp.idle(r.state); t += 20) {
        rig_spin(&r, 20);
    }
    CHECK(pg_exporter_otlp.idle(r.state));
    CHECK_INT(dropped(&r, "shutdown"), 6);
    rig_destroy(&r);
    srv_stop(&s);
}

/* ---- TLS ------------------------------------------------------------------- */

static char tls_dir[64];

static bool make_certs(void)
{
    char cmd[4096];

    snprintf(tls_dir, sizeof(tls_dir), "/tmp/pg-otlp-tls-XXXXXX");
    if (mkdtemp(tls_dir) == NULL) {
        return false;
    }
    snprintf(cmd, sizeof(cmd),
             "cd %s && (set -e; "
             "K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';"
             "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj /CN=pg-test-ca;"
             "openssl req -x509 $K -keyout other.key -out other.pem -days 2 -subj /CN=other-ca;"
             "openssl req $K -keyout srv.key -out srv.csr -subj /CN=localhost;"
             "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > srv.ext;"
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out srv.pem -days 2 -extfile srv.ext;"
             "openssl req $K -keyout cli.key -out cli.csr -subj /CN=pprofgate;"
             "printf 'extendedKeyUsage=clientAuth\\n' > cli.ext;"
             "openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out cli.pem -days 2 -extfile cli.ext) >/dev/null 2>&1",
             tls_dir);
    return system(cmd) == 0;
}

static void remove_certs(void)
{
    char cmd[256];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", tls_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "  could not remove %s\n", tls_dir);
    }
}

PG_TEST(tls_and_mtls)
{
    struct srv s;
    struct rig r;
    char args[512];

    PG_REQUIRE(make_certs());
    /* Server-authenticated TLS, name checked against the IP SAN. */
    snprintf(args, sizeof(args), "--tls-cert %s/srv.pem --tls-key %s/srv.key", tls_dir, tls_dir);
    PG_REQUIRE(srv_start(&s, args));
    PG_REQUIRE(rig_create(&r, "otlp/tls", "endpoint: https://127.0.0.1:%d\ntls: {ca_file: %s/ca.pem}\n",
                     s.grpc_port, tls_dir));
    CHECK_INT(push(&r, 1, 5, 1), PG_ERR_OK);
    rig_wait(&r, 5, 10000);
    CHECK_INT(sent(&r), 5);
    rig_destroy(&r);

    /* server_name_override: the DNS SAN. */
    PG_REQUIRE(rig_create(&r, "otlp/tlsname",
                     "endpoint: 127.0.0.1:%d\ntls: {ca_file: %s/ca.pem, server_name_override: "
                     "localhost}\n",
                     s.grpc_port, tls_dir));
    CHECK_INT(push(&r, 1, 5, 2), PG_ERR_OK);
    rig_wait(&r, 5, 10000);
    CHECK_INT(sent(&r), 5);
    rig_destroy(&r);

    /* A CA that did not sign the server: refused, never sent. */
    PG_REQUIRE(rig_create(&r, "otlp/tlsbad",
                     "endpoint: 127.0.0.1:%d\ntls: {ca_file: %s/other.pem}\n"
                     "retry_on_failure: {enabled: false}\n",
                     s.grpc_port, tls_dir));
    CHECK_INT(push(&r, 1, 5, 3), PG_ERR_OK);
    rig_wait(&r, 5, 10000);
    CHECK_INT(sent(&r), 0);
    CHECK_INT(dropped(&r, "retry_disabled"), 5);
    rig_destroy(&r);

    /* insecure_skip_verify accepts it. */
    PG_REQUIRE(rig_create(&r, "otlp/tlsskip",
                     "endpoint: 127.0.0.1:%d\ntls: {insecure_skip_verify: true}\n", s.grpc_port));
    CHECK_INT(push(&r, 1, 5, 4), PG_ERR_OK);
    rig_wait(&r, 5, 10000);
    CHECK_INT(sent(&r), 5);
    rig_destroy(&r);
    CHECK_INT(srv_stat(&s, "samples"), 15);
    srv_stop(&s);

    /* mTLS: the server requires a client certificate. */
    snprintf(args, sizeof(args), "--tls-cert %s/srv.pem --tls-key %s/srv.key --tls-ca %s/ca.pem --mtls",
             tls_dir, tls_dir, tls_dir);
    PG_REQUIRE(srv_start(&s, args));
    PG_REQUIRE(rig_create(&r, "otlp/mtls",
                     "endpoint: 127.0.0.1:%d\ntls: {ca_file: %s/ca.pem, cert_file: %s/cli.pem, "
                     "key_file: %s/cli.key}\n",
                     s.grpc_port, tls_dir, tls_dir, tls_dir));
    CHECK_INT(push(&r, 1, 5, 5), PG_ERR_OK);
    rig_wait(&r, 5, 10000);
    CHECK_INT(sent(&r), 5);
    rig_destroy(&r);
    PG_REQUIRE(rig_create(&r, "otlp/mtlsno",
                     "endpoint: 127.0.0.1:%d\ntls: {ca_file: %s/ca.pem}\n"
                     "retry_on_failure: {enabled: false}\n",
                     s.grpc_port, tls_dir));
    CHECK_INT(push(&r, 1, 5, 6), PG_ERR_OK);
    rig_wait(&r, 5, 10000);
    CHECK_INT(sent(&r), 0);
    rig_destroy(&r);
    CHECK_INT(srv_stat(&s, "samples"), 5);
    srv_stop(&s);
    remove_certs();
}

/* The items and bytes sizers: queue_size in samples / bytes held, counting
 * queued and in-flight requests; past it BUSY, a push larger than the whole
 * budget LIMIT; everything accepted delivered. */
PG_TEST(sizer_items_and_bytes)
{
    static const struct {
        const char *queue;
        int accepted, busy, limit; /* of six 5-sample pushes, then one 50-sample push */
    } cases[] = {
        /* 12 samples: two pushes (10), the third would make 15. */
        {"{sizer: items, queue_size: 12, num_consumers: 1}", 2, 4, 1},
        /* requests sizer: one in flight + two waiting, as before. */
        {"{sizer: requests, queue_size: 2, num_consumers: 1}", 3, 3, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct srv s;
        struct rig r;
        int accepted = 0, busy = 0, limit = 0;

        CHECK(srv_start(&s, "--mode slow --delay-ms 400"));
        char id[32];

        /* Metrics are per exporter id: one id per case. */
        snprintf(id, sizeof(id), "otlp/sizer%zu", i);
        CHECK(rig_create(&r, id, "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                         "sending_queue: %s\n", s.grpc_port, cases[i].queue));
        for (unsigned k = 0; k < 7; k++) {
            enum pg_err err = push(&r, 1, k < 6 ? 5 : 50, k);

            accepted += err == PG_ERR_OK;
            busy += err == PG_ERR_BUSY;
            limit += err == PG_ERR_LIMIT;
        }
        if (cases[i].limit == 0) {
            /* The big push is just one more request there. */
            busy -= 1;
        }
        CHECK_INT(accepted, cases[i].accepted);
        CHECK_INT(busy, cases[i].busy);
        CHECK_INT(limit, cases[i].limit);
        rig_wait(&r, (size_t)cases[i].accepted * 5, 10000);
        CHECK_INT(srv_stat(&s, "samples"), cases[i].accepted * 5);
        rig_destroy(&r);
        srv_stop(&s);
    }
    {
        /* bytes: a budget of one push's memory (a few KiB here): the first
         * push fits, the next are refused until it is delivered. */
        struct srv s;
        struct rig r;
        int accepted = 0, busy = 0;

        CHECK(srv_start(&s, "--mode slow --delay-ms 300"));
        CHECK(rig_create(&r, "otlp/bytes", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                         "sending_queue: {sizer: bytes, queue_size: 200000, num_consumers: 4}\n",
                         s.grpc_port));
        for (unsigned k = 0; k < 40; k++) {
            enum pg_err err = push(&r, 1, 5, k);
            accepted += err == PG_ERR_OK;
            busy += err == PG_ERR_BUSY;
        }
        CHECK(accepted >= 1 && busy >= 1);
        CHECK_INT(accepted + busy, 40);
        rig_wait(&r, (size_t)accepted * 5, 10000);
        CHECK_INT(srv_stat(&s, "samples"), accepted * 5);
        rig_destroy(&r);
        srv_stop(&s);
    }
}

/* A backlog left by a previous run is replayed only while the process is
 * under memory_limiter's soft limit: past it replay waits (new pushes are
 * still taken), and it resumes by itself once memory is released. */
PG_TEST(replay_pauses_past_soft_limit)
{
    char dir[] = "/tmp/pg_replay_XXXXXX";
    char sub[128];
    struct pg_spool_options o;
    struct pg_spool *sp = NULL;
    struct pg_status st;
    struct srv s;
    struct rig r;
    const uint64_t MiB = 1024 * 1024;

    PG_REQUIRE(mkdtemp(dir) != NULL);
    /* The exporter opens "<dir>/<id with '/' made '_'>": write the backlog there. */
    snprintf(sub, sizeof(sub), "%s/otlp_replay", dir);
    memset(&o, 0, sizeof(o));
    o.dir = sub;
    o.fsync = PG_SPOOL_FSYNC_NEVER;
    pg_status_clear(&st);
    PG_REQUIRE(pg_spool_open(&o, &sp, &st) == PG_ERR_OK);
    for (unsigned k = 0; k < 5; k++) {
        struct pg_batch *b = tb_batch(1, 5, 20, "otlp/replay", 100 + k);
        struct pg_arena *a = pg_arena_create(0);
        uint8_t *buf = NULL;
        size_t len = 0;
        uint64_t id = 0;

        CHECK(pg_batch_encode(b, a, &buf, &len, &st) == PG_ERR_OK);
        CHECK(pg_spool_append(sp, buf, len, &id, &st) == PG_ERR_OK);
        pg_arena_destroy(a);
        pg_batch_unref(b);
    }
    pg_spool_close(sp);

    /* 3.5 GiB in flight against a 3 GiB soft limit (4 - 1): far above any
     * RSS this test reaches (ASan included), so only the charge decides. */
    pg_memlimit_configure(4096 * MiB, 1024 * MiB, 0);
    pg_memlimit_charge((size_t)(3584 * MiB));
    memset(&o, 0, sizeof(o));
    o.dir = dir;
    o.fsync = PG_SPOOL_FSYNC_NEVER;
    PG_REQUIRE(pg_storage_register("file_storage", &o));
    PG_REQUIRE(srv_start(&s, ""));
    PG_REQUIRE(rig_create(&r, "otlp/replay", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                          "sending_queue: {storage: file_storage, num_consumers: 2}\n" FAST_RETRY,
                          s.grpc_port));
    rig_spin(&r, 1500);
    CHECK_INT(srv_stat(&s, "samples"), 0);      /* paused: nothing of the backlog sent */
    CHECK_INT(push(&r, 1, 3, 7), PG_ERR_OK);    /* a new push is still accepted (spooled) */

    pg_memlimit_release((size_t)(3584 * MiB));    /* under the soft limit again */
    rig_wait(&r, 5 * 5 + 3, 10000);
    CHECK_INT(srv_stat(&s, "samples"), 5 * 5 + 3);
    rig_destroy(&r);
    srv_stop(&s);
    pg_storage_unregister("file_storage");
    pg_memlimit_reset();
    {
        char cmd[160];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        CHECK_INT(system(cmd), 0);
    }
}

/* compression_params.level: confighttp's accepted values and message. */
PG_TEST(compression_params_validation)
{
    static const struct {
        const char *yaml;
        const char *error; /* NULL: accepted */
    } cases[] = {
        {"compression_params: {level: 1}\n", NULL},
        {"compression_params: {level: 9}\n", NULL},
        {"compression_params: {level: 0}\n", NULL},
        {"compression_params: {level: -1}\n", NULL},
        {"compression_params: {level: -2}\n", NULL},
        {"compression: gzip\ncompression_params: {}\n", NULL},
        {"compression: none\ncompression_params: {level: 0}\n", NULL},
        {"compression_params: {level: 10}\n",
         "unsupported parameters {Level:10} for compression type \"gzip\""},
        {"compression_params: {level: 12}\n",
         "unsupported parameters {Level:12} for compression type \"gzip\""},
        {"compression_params: {level: -3}\n",
         "unsupported parameters {Level:-3} for compression type \"gzip\""},
        {"compression: none\ncompression_params: {level: 1}\n",
         "unsupported parameters {Level:1} for compression type \"none\""},
        {"compression_params: {level: fast}\n", "level"},
        {"compression_params: {lvl: 1}\n", "lvl"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[256];
        struct pg_config *cfg;
        struct pg_diag diag;
        void *state = NULL;
        enum pg_err err;

        snprintf(yaml, sizeof(yaml), "endpoint: host:1\ntls: {insecure: true}\n%s", cases[i].yaml);
        cfg = pg_config_load_string("cp.yaml", yaml, strlen(yaml));
        PG_REQUIRE(cfg != NULL);
        err = rig_component_create(&pg_exporter_otlp, cfg, NULL, "otlp/cp", &diag, &state);
        if (cases[i].error == NULL) {
            CHECK_INT(err, PG_ERR_OK);
            CHECK_INT(diag.n, 0);
            if (err != PG_ERR_OK) {
                fprintf(stderr, "  refused: %s", cases[i].yaml);
            }
            if (state != NULL) {
                pg_exporter_otlp.destroy(state);
            }
        } else {
            CHECK_INT(err, PG_ERR_CONFIG);
            CHECK(state == NULL);
            CHECK(pg_test_diag_has(&diag, cases[i].error));
        }
        pg_diag_free(&diag);
        pg_config_free(cfg);
    }
}

/* The configured level reaches the wire: the same batch is smaller at 9. */
PG_TEST(gzip_level_reaches_the_wire)
{
    struct srv s;
    struct rig r;
    long long w1, w9;

    PG_REQUIRE(srv_start(&s, ""));
    PG_REQUIRE(rig_create(&r, "otlp/l1", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                          "compression_params: {level: 1}\n", s.grpc_port));
    CHECK_INT(push(&r, 2, 300, 7), PG_ERR_OK);
    rig_wait(&r, 600, 10000);
    rig_destroy(&r);
    w1 = srv_stat(&s, "wire_bytes");
    PG_REQUIRE(rig_create(&r, "otlp/l9", "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\n"
                          "compression_params: {level: 9}\n", s.grpc_port));
    CHECK_INT(push(&r, 2, 300, 7), PG_ERR_OK);
    rig_wait(&r, 600, 10000);
    rig_destroy(&r);
    w9 = srv_stat(&s, "wire_bytes") - w1;
    CHECK_INT(srv_stat(&s, "gzip"), 2);
    CHECK_INT(srv_stat(&s, "samples"), 1200);
    CHECK(w1 > 0 && w9 > 0 && w9 < w1);
    if (!(w9 < w1)) {
        fprintf(stderr, "  wire bytes: level 1 %lld, level 9 %lld\n", w1, w9);
    }
    srv_stop(&s);
}

PG_TEST(config_errors)
{
    static const char *bad[] = {
        "tls: {insecure: true}\n",                             /* no endpoint */
        "endpoint: nohostport\n",
        "endpoint: host:99999\n",
        "endpoint: host:1\ncompression: snappy\n",
        "endpoint: host:1\nsending_queue: {queue_size: 0}\n",
        "endpoint: host:1\nsending_queue: {sizer: samples}\n",
        "endpoint: host:1\nretry_on_failure: {multiplier: 0.5}\n",
        "endpoint: host:1\nbogus: 1\n",
        "endpoint: host:1\nprotocol_version: v1.8\n", /* v1.11, v1.10, v1.9 only */
        "endpoint: host:1\ntls: {ca_file: /nonexistent/ca.pem}\n",
        "endpoint: host:1\ntls: {cert_file: /nonexistent/c.pem}\n",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct pg_config *cfg = pg_config_load_string("bad.yaml", bad[i], strlen(bad[i]));
        struct pg_diag diag;
        void *state = NULL;

        PG_REQUIRE(cfg != NULL);
        CHECK_INT(rig_component_create(&pg_exporter_otlp, cfg, NULL, "otlp/bad", &diag, &state),
                  PG_ERR_CONFIG);
        CHECK(diag.n > 0);
        if (diag.n == 0) {
            fprintf(stderr, "  accepted: %s", bad[i]);
        }
        CHECK(state == NULL);
        pg_diag_free(&diag);
        pg_config_free(cfg);
    }
}


PG_TEST_MAIN(PG_CASE(delivers_with_gzip), PG_CASE(compression_none),
             PG_CASE(unavailable_then_delivered_once), PG_CASE(invalid_argument_dropped_not_retried),
             PG_CASE(resource_exhausted_without_retryinfo_not_retried),
             PG_CASE(resource_exhausted_with_retryinfo_waits_and_retries),
             PG_CASE(http_status_mapped_like_grpc_go), PG_CASE(stall_times_out_then_retries), PG_CASE(connection_cut_mid_call_reconnects),
             PG_CASE(server_restart_between_pushes), PG_CASE(goaway_drains_without_loss),
             PG_CASE(keepalive_detects_dead_peer), PG_CASE(server_down_at_start), PG_CASE(full_queue_answers_busy_and_keeps_accepted),
             PG_CASE(large_request_split), PG_CASE(batching_merges_pushes),
             PG_CASE(headers_and_bearer_token_file), PG_CASE(partial_success_counted),
             PG_CASE(shutdown_drains_queue), PG_CASE(shutdown_deadline_drops_and_counts),
             PG_CASE(tls_and_mtls), PG_CASE(sizer_items_and_bytes), PG_CASE(replay_pauses_past_soft_limit),
             PG_CASE(config_errors), PG_CASE(compression_params_validation),
             PG_CASE(gzip_level_reaches_the_wire))
