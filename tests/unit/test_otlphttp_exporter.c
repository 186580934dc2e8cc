/* SPDX-License-Identifier: Apache-2.0
 * Component tests of the `otlphttp` exporter against a scripted loopback
 * HTTP/1.1 server in a thread of this test: how each answer is read
 * (sent, retried, dropped: the collector otlphttp exporter's table),
 * Retry-After in both forms, connection refused and a silent server, the
 * body bytes for each compression and encoding, connection reuse, and a
 * request that survives a restart in the persistent queue. */
#define _GNU_SOURCE /* memmem, strcasestr */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "codec/codec.h"
#include "codec/gzip.h"
#include "core/arena.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/metrics.h"
#include "storage/spool.h"
#include "storage/storage.h"
#include "exporter/otlphttp.h"
#include "otlp/otlp.h"
#include "otlp/otlp_json.h"
#include "otlp/otlp_version.h"
#include "pg_test.h"
#include "pipeline/batch.h"
#include "pipeline/component.h"
#include "pg_test_exporter_rig.h"
#include "test_otlp_util.h"

extern const struct pg_component_ops pg_exporter_otlphttp;

/* ---- the scripted server ---------------------------------------------------- */

struct answer {
    int status;               /* 0: never answer (the connection stays open) */
    const char *headers;      /* extra header lines, each ending "\r\n" */
    const char *body;
    size_t body_len;
    bool close;               /* "Connection: close" and close after it */
};

struct got {
    int conn;                 /* accept number */
    char head[2048];
    uint8_t *body;            /* malloc */
    size_t len;
    int64_t at_ns;
};

#define FS_MAX_CONNS 16
#define FS_MAX_GOT 64

struct fake {
    int lfd;
    int port;
    pthread_t th;
    pthread_mutex_t mu;
    volatile int stop;
    struct answer script[16];
    size_t n_script;
    size_t next;
    struct answer dflt;       /* after the script */
    struct got got[FS_MAX_GOT];
    size_t n_got;
    int accepts;
};

struct fs_conn {
    int fd;
    int id;
    bool silent;
    char *buf;
    size_t len, cap;
};

/* A whole request in @c->buf: its head length and body length, or false. */
static bool fs_complete(const struct fs_conn *c, size_t *head, size_t *body)
{
    const char *end;
    const char *cl;

    if (c->len < 4 || (end = memmem(c->buf, c->len, "\r\n\r\n", 4)) == NULL) {
        return false;
    }
    *head = (size_t)(end - c->buf) + 4;
    *body = 0;
    for (cl = c->buf; cl < end; cl++) {
        if (strncasecmp(cl, "\r\nContent-Length:", 17) == 0) {
            *body = strtoul(cl + 17, NULL, 10);
            break;
        }
    }
    return c->len >= *head + *body;
}

static void fs_answer(struct fake *f, struct fs_conn *c, size_t head, size_t body)
{
    struct answer a;
    struct got *g;
    char resp[1024];
    int n;

    pthread_mutex_lock(&f->mu);
    a = f->next < f->n_script ? f->script[f->next++] : f->dflt;
    if (f->n_got < FS_MAX_GOT) {
        g = &f->got[f->n_got++];
        g->conn = c->id;
        snprintf(g->head, sizeof(g->head), "%.*s", (int)head, c->buf);
        g->body = malloc(body ? body : 1);
        memcpy(g->body, c->buf + head, body);
        g->len = body;
        g->at_ns = pg_mono_ns();
    }
    pthread_mutex_unlock(&f->mu);
    memmove(c->buf, c->buf + head + body, c->len - head - body);
    c->len -= head + body;
    if (a.status == 0) {
        c->silent = true;
        return;
    }
    n = snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s%s\r\n", a.status,
                 a.body_len, a.headers ? a.headers : "", a.close ? "Connection: close\r\n" : "");
    if (write(c->fd, resp, (size_t)n) < 0 ||
        (a.body_len > 0 && write(c->fd, a.body, a.body_len) < 0)) {
        c->silent = true;
    }
    if (a.close) {
        shutdown(c->fd, SHUT_WR);
        c->silent = true;
    }
}

static void *fs_main(void *arg)
{
    struct fake *f = arg;
    struct fs_conn conns[FS_MAX_CONNS];
    size_t n = 0;

    while (!f->stop) {
        struct pollfd p[FS_MAX_CONNS + 1];

        p[0] = (struct pollfd){.fd = f->lfd, .events = POLLIN};
        for (size_t i = 0; i < n; i++) {
            p[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        }
        if (poll(p, n + 1, 20) <= 0) {
            continue;
        }
        if ((p[0].revents & POLLIN) && n < FS_MAX_CONNS) {
            int fd = accept(f->lfd, NULL, NULL);

            if (fd >= 0) {
                pthread_mutex_lock(&f->mu);
                conns[n] = (struct fs_conn){.fd = fd, .id = ++f->accepts};
                pthread_mutex_unlock(&f->mu);
                n++;
            }
        }
        for (size_t i = 0; i < n; i++) {
            struct fs_conn *c = &conns[i];
            size_t head, body;
            ssize_t r;

            if (!(p[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) || p[i + 1].fd != c->fd) {
                continue;
            }
            if (c->len + 65536 > c->cap) {
                c->cap = (c->len + 65536) * 2;
                c->buf = realloc(c->buf, c->cap);
            }
            r = read(c->fd, c->buf + c->len, c->cap - c->len);
            if (r <= 0) {
                close(c->fd);
                free(c->buf);
                conns[i] = conns[--n];
                i--;
                continue;
            }
            c->len += (size_t)r;
            while (!c->silent && fs_complete(c, &head, &body)) {
                fs_answer(f, c, head, body);
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        close(conns[i].fd);
        free(conns[i].buf);
    }
    return NULL;
}

static bool fs_start(struct fake *f, const struct answer *script, size_t n, struct answer dflt)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);

    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    if (n > 0) {
        memcpy(f->script, script, n * sizeof(*script));
    }
    f->n_script = n;
    f->dflt = dflt;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(f->lfd, 16) != 0 || getsockname(f->lfd, (struct sockaddr *)&sa, &sl) != 0) {
        return false;
    }
    f->port = ntohs(sa.sin_port);
    return pthread_create(&f->th, NULL, fs_main, f) == 0;
}

static void fs_stop(struct fake *f)
{
    f->stop = 1;
    pthread_join(f->th, NULL);
    close(f->lfd);
    for (size_t i = 0; i < f->n_got; i++) {
        free(f->got[i].body);
    }
    pthread_mutex_destroy(&f->mu);
}

static size_t fs_requests(struct fake *f)
{
    size_t n;

    pthread_mutex_lock(&f->mu);
    n = f->n_got;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* A port nothing listens on. */
static int closed_port(void)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int port;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
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
    return rig_start(r, &pg_exporter_otlphttp, 5000, id, yaml);
}

static enum pg_err push(struct rig *r, size_t samples, unsigned seed)
{
    return rig_push(r, 1, samples, seed);
}

#define FAST_RETRY                                                                                 \
    "retry_on_failure: {initial_interval: 50ms, max_interval: 100ms, max_elapsed_time: 10s}\n"     \
    "sending_queue: {num_consumers: 1}\n"

/* ---- cases ----------------------------------------------------------------- */

/* Every answer of the collector's table: attempts made, the outcome, and
 * for retries with Retry-After the wait between the first two attempts. */
PG_TEST(status_table)
{
    static const char ps_proto[] = "\x0a\x07\x08\x03\x12\x03" "bad";
    static const char ps_json[] =
        "{\"partialSuccess\":{\"rejectedProfiles\":\"3\",\"errorMessage\":\"bad\"}}";
    static const struct answer ok = {200, NULL, NULL, 0, false};
    char date[64];
    const struct {
        const char *name;
        struct answer first;
        int attempts;          /* requests the server sees */
        bool delivered;        /* sent (else dropped with reason) */
        const char *reason;
        int min_wait_ms;       /* between attempt 1 and 2 */
        int rejected;          /* partial_success counted */
    } cases[] = {
        {"200", {200, NULL, NULL, 0, false}, 1, true, NULL, 0, 0},
        {"204", {204, NULL, NULL, 0, false}, 1, true, NULL, 0, 0},
        {"200 partial proto",
         {200, "Content-Type: application/x-protobuf\r\n", ps_proto, sizeof(ps_proto) - 1, false},
         1, true, NULL, 0, 3},
        {"200 partial json",
         {200, "Content-Type: application/json\r\n", ps_json, sizeof(ps_json) - 1, false}, 1,
         true, NULL, 0, 3},
        {"200 partial, other type",
         {200, "Content-Type: text/plain\r\n", ps_proto, sizeof(ps_proto) - 1, false}, 1, true,
         NULL, 0, 0},
        {"400", {400, NULL, "\x08\x03\x12\x03" "bad", 7, false}, 1, false, "http_400", 0, 0},
        {"401", {401, NULL, NULL, 0, false}, 1, false, "http_401", 0, 0},
        {"404", {404, NULL, NULL, 0, false}, 1, false, "http_404", 0, 0},
        {"413", {413, NULL, NULL, 0, false}, 1, false, "http_413", 0, 0},
        {"500", {500, NULL, NULL, 0, false}, 1, false, "http_500", 0, 0},
        {"501", {501, NULL, NULL, 0, false}, 1, false, "http_501", 0, 0},
        {"302", {302, "Location: /elsewhere\r\n", NULL, 0, false}, 1, false, "http_302", 0, 0},
        {"429", {429, NULL, NULL, 0, false}, 2, true, NULL, 0, 0},
        {"429 Retry-After 1", {429, "Retry-After: 1\r\n", NULL, 0, false}, 2, true, NULL, 950, 0},
        {"502", {502, NULL, NULL, 0, false}, 2, true, NULL, 0, 0},
        {"503", {503, NULL, NULL, 0, false}, 2, true, NULL, 0, 0},
        {"503 Retry-After 1", {503, "Retry-After: 1\r\n", NULL, 0, false}, 2, true, NULL, 950, 0},
        {"503 Retry-After date", {503, date, NULL, 0, false}, 2, true, NULL, 950, 0},
        {"504", {504, NULL, NULL, 0, false}, 2, true, NULL, 0, 0},
        {"502 Retry-After ignored", {502, "Retry-After: 3\r\n", NULL, 0, false}, 2, true, NULL, 0,
         0},
        {"200 with Connection: close", {200, NULL, NULL, 0, true}, 1, true, NULL, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fake f;
        struct rig r;
        char id[64];
        struct answer script[1];
        int64_t wait_ms = -1;
        time_t later = time(NULL) + 2;
        struct tm tm;

        gmtime_r(&later, &tm);
        strftime(date, sizeof(date), "Retry-After: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
        script[0] = cases[i].first;
        PG_REQUIRE(fs_start(&f, script, 1, ok));
        snprintf(id, sizeof(id), "otlphttp/status%zu", i);
        PG_REQUIRE(rig_create(&r, id, "endpoint: http://127.0.0.1:%d\n" FAST_RETRY, f.port));
        CHECK_INT(push(&r, 10, (unsigned)i), PG_ERR_OK);
        rig_wait(&r, 10, 6000);
        rig_spin(&r, 150); /* no further attempt */
        if (fs_requests(&f) >= 2) {
            wait_ms = (f.got[1].at_ns - f.got[0].at_ns) / 1000000;
        }
        if ((int)fs_requests(&f) != cases[i].attempts ||
            sent(&r) != (cases[i].delivered ? 10 : 0) ||
            (cases[i].min_wait_ms > 0 && wait_ms < cases[i].min_wait_ms) ||
            (cases[i].min_wait_ms == 0 && cases[i].attempts == 2 && wait_ms > 900)) {
            fprintf(stderr, "  case %s: %zu attempts, sent %lld, wait %lld ms\n", cases[i].name,
                    fs_requests(&f), (long long)sent(&r), (long long)wait_ms);
        }
        CHECK_INT(fs_requests(&f), cases[i].attempts);
        CHECK_INT(sent(&r), cases[i].delivered ? 10 : 0);
        CHECK_INT(failed(&r), cases[i].delivered ? 0 : 10);
        if (cases[i].reason != NULL) {
            CHECK_INT(dropped(&r, cases[i].reason), 10);
        }
        CHECK_INT(metric(&r, "pprofgate_exporter_retries"), cases[i].attempts - 1);
        if (cases[i].min_wait_ms > 0) {
            CHECK(wait_ms >= cases[i].min_wait_ms);
        } else if (cases[i].attempts == 2) {
            CHECK(wait_ms >= 0 && wait_ms < 900); /* the 50ms backoff, not a throttle */
        }
        CHECK_INT(metric(&r, "pprofgate_exporter_rejected_profiles"), cases[i].rejected);
        rig_destroy(&r);
        fs_stop(&f);
    }
}

/* No listener: retried until max_elapsed_time, then dropped and counted. */
PG_TEST(connection_refused_retried_then_dropped)
{
    struct rig r;

    PG_REQUIRE(rig_create(&r, "otlphttp/refused",
                          "endpoint: http://127.0.0.1:%d\n"
                          "retry_on_failure: {initial_interval: 50ms, max_interval: 50ms, "
                          "max_elapsed_time: 400ms}\nsending_queue: {num_consumers: 1}\n",
                          closed_port()));
    CHECK_INT(push(&r, 10, 1), PG_ERR_OK);
    rig_wait(&r, 10, 5000);
    CHECK_INT(sent(&r), 0);
    CHECK_INT(dropped(&r, "retry_exhausted"), 10);
    CHECK(metric(&r, "pprofgate_exporter_retries") >= 3);
    rig_destroy(&r);
}

/* A server that never answers: the attempt ends at `timeout` and the retry
 * goes through on a fresh connection. */
PG_TEST(timeout_retried)
{
    static const struct answer silent = {0, NULL, NULL, 0, false};
    static const struct answer ok = {200, NULL, NULL, 0, false};
    struct fake f;
    struct rig r;
    int64_t t0 = pg_mono_ns();

    PG_REQUIRE(fs_start(&f, &silent, 1, ok));
    PG_REQUIRE(rig_create(&r, "otlphttp/timeout",
                          "endpoint: http://127.0.0.1:%d\ntimeout: 300ms\n" FAST_RETRY, f.port));
    CHECK_INT(push(&r, 10, 1), PG_ERR_OK);
    rig_wait(&r, 10, 5000);
    CHECK_INT(sent(&r), 10);
    CHECK_INT(fs_requests(&f), 2);
    CHECK_INT(metric(&r, "pprofgate_exporter_retries"), 1);
    CHECK(pg_mono_ns() - t0 >= 300000000LL);
    CHECK_INT(f.accepts, 2);
    rig_destroy(&r);
    fs_stop(&f);
}

/* One connection for two consumers: the second export waits for it, and
 * its deadline passes while it waits (taken out of the wait, retried). */
PG_TEST(queued_call_times_out)
{
    static const struct answer silent = {0, NULL, NULL, 0, false};
    static const struct answer ok = {200, NULL, NULL, 0, false};
    struct fake f;
    struct rig r;

    PG_REQUIRE(fs_start(&f, &silent, 1, ok));
    PG_REQUIRE(rig_create(&r, "otlphttp/queued",
                          "endpoint: http://127.0.0.1:%d\ntimeout: 300ms\nmax_conns_per_host: 1\n"
                          "retry_on_failure: {initial_interval: 50ms, max_interval: 100ms}\n"
                          "sending_queue: {num_consumers: 2}\n",
                          f.port));
    CHECK_INT(push(&r, 10, 1), PG_ERR_OK);
    CHECK_INT(push(&r, 10, 2), PG_ERR_OK);
    rig_wait(&r, 20, 5000);
    CHECK_INT(sent(&r), 20);
    CHECK_INT(metric(&r, "pprofgate_exporter_retries"), 2);
    CHECK_INT(fs_requests(&f), 3); /* the silent one, then both retries */
    rig_destroy(&r);
    fs_stop(&f);
}

/* The bytes on the wire: the batch's protobuf encoding (or its OTLP/JSON),
 * behind each compression, with the headers that say so. */
PG_TEST(body_bytes_per_compression_and_encoding)
{
    static const struct answer ok = {200, NULL, NULL, 0, false};
    const struct {
        const char *comp;
        const char *enc;
    } cases[] = {{"gzip", "proto"}, {"zstd", "proto"}, {"none", "proto"},
                 {"gzip", "json"},  {"zstd", "json"},  {"none", "json"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fake f;
        struct rig r;
        char id[64];
        struct pg_batch *b;
        struct pg_arena *a = pg_arena_create(0);
        uint8_t *want = NULL, *plain = NULL;
        size_t want_len = 0, plain_len = 0;
        struct pg_status st;
        const struct pg_codec *codec = pg_codec_find(cases[i].comp, strlen(cases[i].comp));
        char ce[64], ct[64];

        PG_REQUIRE(fs_start(&f, NULL, 0, ok));
        snprintf(id, sizeof(id), "otlphttp/body%zu", i);
        PG_REQUIRE(rig_create(&r, id,
                              "endpoint: http://127.0.0.1:%d/prefix/\ncompression: %s\n"
                              "encoding: %s\nheaders: {X-Tenant: t1, User-Agent: mine}\n" FAST_RETRY,
                              f.port, cases[i].comp, cases[i].enc));
        b = tb_batch(2, 25, 20, id, 7);
        pg_status_clear(&st);
        CHECK_INT(pg_batch_encode(b, a, &want, &want_len, &st), PG_ERR_OK);
        CHECK_INT(pg_exporter_otlphttp.consume(r.state, b, &st), PG_ERR_OK);
        pg_batch_unref(b);
        rig_wait(&r, 50, 5000);
        PG_REQUIRE(fs_requests(&f) == 1);
        CHECK(strncmp(f.got[0].head, "POST /prefix/v1development/profiles HTTP/1.1\r\n", 46) == 0);
        snprintf(ct, sizeof(ct), "\r\nContent-Type: application/%s\r\n",
                 strcmp(cases[i].enc, "json") == 0 ? "json" : "x-protobuf");
        CHECK(strstr(f.got[0].head, ct) != NULL);
        snprintf(ce, sizeof(ce), "\r\nContent-Encoding: %s\r\n", cases[i].comp);
        CHECK((strstr(f.got[0].head, ce) != NULL) == (strcmp(cases[i].comp, "none") != 0));
        CHECK(strcasestr(f.got[0].head, "Content-Encoding") != NULL ||
              strcmp(cases[i].comp, "none") == 0);
        CHECK(strstr(f.got[0].head, "\r\nX-Tenant: t1\r\n") != NULL);
        CHECK(strstr(f.got[0].head, "\r\nUser-Agent: mine\r\n") != NULL);
        CHECK(strstr(f.got[0].head, "pprofgate/") == NULL);
        {
            const char *cl = strcasestr(f.got[0].head, "\r\nContent-Length:");
            char host[64];

            CHECK(cl != NULL && strcasestr(cl + 2, "\r\nContent-Length:") == NULL);
            snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%d\r\n", f.port);
            CHECK(strstr(f.got[0].head, host) != NULL);
        }
        if (codec != NULL && codec->decode != NULL) {
            CHECK_INT(codec->decode(a, f.got[0].body, f.got[0].len, 1u << 24, &plain, &plain_len,
                                    &st),
                      PG_ERR_OK);
        } else {
            plain = f.got[0].body;
            plain_len = f.got[0].len;
        }
        if (strcmp(cases[i].enc, "proto") == 0) {
            CHECK(plain_len == want_len && plain != NULL && memcmp(plain, want, want_len) == 0);
        } else {
            /* OTLP/JSON whose message packs back to the very protobuf bytes */
            ProtobufCMessage *m = NULL;
            uint8_t *packed;

            CHECK(plain_len > 2 && plain[0] == '{' && plain[plain_len - 1] == '}');
            CHECK(memmem(plain, plain_len, "\"resourceProfiles\"", 18) != NULL);
            CHECK_INT(pg_otlp_json_decode(a, &pg_otlp_request_descriptor, (const char *)plain,
                                          plain_len, &m, &st),
                      PG_ERR_OK);
            PG_REQUIRE(m != NULL);
            packed = pg_arena_alloc(a, protobuf_c_message_get_packed_size(m));
            CHECK_INT(protobuf_c_message_pack(m, packed), want_len);
            CHECK(memcmp(packed, want, want_len) == 0);
        }
        CHECK_INT(sent(&r), 50);
        rig_destroy(&r);
        fs_stop(&f);
        pg_arena_destroy(a);
    }
}

/* auth.bearer_token_file: sent as Authorization, re-read when it changes. */
PG_TEST(bearer_token_file)
{
    static const struct answer ok = {200, NULL, NULL, 0, false};
    char path[] = "/tmp/pg_oh_token_XXXXXX";
    int fd = mkstemp(path);
    struct fake f;
    struct rig r;
    FILE *fp;

    PG_REQUIRE(fd >= 0 && write(fd, "tok1\n", 5) == 5);
    close(fd);
    PG_REQUIRE(fs_start(&f, NULL, 0, ok));
    PG_REQUIRE(rig_create(&r, "otlphttp/token",
                          "endpoint: http://127.0.0.1:%d\nauth: {bearer_token_file: %s}\n" FAST_RETRY,
                          f.port, path));
    CHECK_INT(push(&r, 3, 1), PG_ERR_OK);
    rig_wait(&r, 3, 3000);
    fp = fopen(path, "w");
    PG_REQUIRE(fp != NULL);
    fputs("token-two\n", fp);
    fclose(fp);
    CHECK_INT(push(&r, 3, 2), PG_ERR_OK);
    rig_wait(&r, 6, 3000);
    PG_REQUIRE(fs_requests(&f) == 2);
    CHECK(strstr(f.got[0].head, "\r\nAuthorization: Bearer tok1\r\n") != NULL);
    CHECK(strstr(f.got[1].head, "\r\nAuthorization: Bearer token-two\r\n") != NULL);
    rig_destroy(&r);
    fs_stop(&f);
    unlink(path);
}

/* Five exports, one connection; with "Connection: close" answers, one
 * connection each (a closed one is replaced, never reused). */
PG_TEST(connection_reused)
{
    static const struct answer ok = {200, NULL, NULL, 0, false};
    static const struct answer closing = {200, NULL, NULL, 0, true};
    struct fake f;
    struct rig r;

    PG_REQUIRE(fs_start(&f, NULL, 0, ok));
    PG_REQUIRE(rig_create(&r, "otlphttp/reuse", "endpoint: http://127.0.0.1:%d\n" FAST_RETRY,
                          f.port));
    for (unsigned k = 0; k < 5; k++) {
        CHECK_INT(push(&r, 4, k), PG_ERR_OK);
        rig_wait(&r, 4 * (k + 1), 3000);
    }
    CHECK_INT(sent(&r), 20);
    CHECK_INT(fs_requests(&f), 5);
    CHECK_INT(f.accepts, 1);
    rig_destroy(&r);
    fs_stop(&f);

    PG_REQUIRE(fs_start(&f, NULL, 0, closing));
    PG_REQUIRE(rig_create(&r, "otlphttp/noreuse", "endpoint: http://127.0.0.1:%d\n" FAST_RETRY,
                          f.port));
    for (unsigned k = 0; k < 5; k++) {
        CHECK_INT(push(&r, 4, k), PG_ERR_OK);
        rig_wait(&r, 4 * (k + 1), 3000);
    }
    CHECK_INT(sent(&r), 20);
    CHECK_INT(f.accepts, 5);
    CHECK_INT(failed(&r), 0);
    rig_destroy(&r);
    fs_stop(&f);

    /* keepalive disabled: "Connection: close" asked for, one connection each */
    PG_REQUIRE(fs_start(&f, NULL, 0, ok));
    PG_REQUIRE(rig_create(&r, "otlphttp/nokeep",
                          "endpoint: http://127.0.0.1:%d\nkeepalive: {enabled: false}\n" FAST_RETRY,
                          f.port));
    for (unsigned k = 0; k < 3; k++) {
        CHECK_INT(push(&r, 4, k), PG_ERR_OK);
        rig_wait(&r, 4 * (k + 1), 3000);
    }
    CHECK_INT(sent(&r), 12);
    CHECK_INT(f.accepts, 3);
    CHECK(strstr(f.got[0].head, "\r\nConnection: close\r\n") != NULL);
    rig_destroy(&r);
    fs_stop(&f);
}

/* With storage: what the destination refused (503) until the exporter
 * stopped is on disk, and the next exporter on the same spool sends it. */
PG_TEST(persistent_queue_survives_restart)
{
    static const struct answer busy = {503, NULL, NULL, 0, false};
    static const struct answer ok = {200, NULL, NULL, 0, false};
    char dir[] = "/tmp/pg_ohpq_XXXXXX";
    struct pg_spool_options o;
    struct fake f;
    struct rig r;
    char cmd[160];

    PG_REQUIRE(mkdtemp(dir) != NULL);
    memset(&o, 0, sizeof(o));
    o.dir = dir;
    o.fsync = PG_SPOOL_FSYNC_NEVER;
    PG_REQUIRE(pg_storage_register("file_storage", &o));

    PG_REQUIRE(fs_start(&f, NULL, 0, busy));
    PG_REQUIRE(rig_create(&r, "otlphttp/pq",
                          "endpoint: http://127.0.0.1:%d\nshutdown_timeout: 100ms\n"
                          "sending_queue: {storage: file_storage, num_consumers: 1}\n"
                          "retry_on_failure: {initial_interval: 50ms, max_interval: 50ms}\n",
                          f.port));
    CHECK_INT(push(&r, 6, 1), PG_ERR_OK);
    CHECK_INT(push(&r, 7, 2), PG_ERR_OK);
    rig_spin(&r, 400);
    CHECK(fs_requests(&f) >= 2);
    CHECK_INT(sent(&r), 0);
    rig_destroy(&r);
    fs_stop(&f);

    PG_REQUIRE(fs_start(&f, NULL, 0, ok));
    PG_REQUIRE(rig_create(&r, "otlphttp/pq", "endpoint: http://127.0.0.1:%d\n"
                          "sending_queue: {storage: file_storage, num_consumers: 1}\n",
                          f.port));
    for (int t = 0; t < 5000 && sent(&r) < 13; t += 20) {
        rig_spin(&r, 20);
    }
    CHECK_INT(sent(&r), 13);
    CHECK_INT(fs_requests(&f), 2);
    rig_destroy(&r);
    fs_stop(&f);
    pg_storage_unregister("file_storage");
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_INT(system(cmd), 0);
}

/* protocol_version: one batch to a v1.9 exporter (protobuf and OTLP/JSON) and a default
 * one at once; each body is its version's (v1.9: the current bytes with Sample fields
 * renumbered), and the shared batch is left as it was. */
PG_TEST(protocol_version_bodies)
{
    static const struct answer ok = {200, NULL, NULL, 0, false};
    static const char *const cfgs[3] = {"protocol_version: v1.9\ncompression: none\n",
                                        "compression: none\n",
                                        "protocol_version: v1.9\ncompression: none\n"
                                        "encoding: json\n"};
    struct fake f[3];
    struct rig r[3];
    struct pg_arena *a = pg_arena_create(0);
    struct pg_batch *b = tb_batch(2, 25, 20, "versions", 9);
    uint8_t *want = NULL, *after = NULL, *v19 = NULL;
    size_t want_len = 0, after_len = 0, v19_len = 0;
    struct pg_status st;

    pg_status_clear(&st);
    PG_REQUIRE(a != NULL && b != NULL);
    PG_REQUIRE(pg_batch_encode(b, a, &want, &want_len, &st) == PG_ERR_OK);
    PG_REQUIRE(pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, want, want_len, &v19, &v19_len, NULL,
                                      &st) == PG_ERR_OK);
    CHECK(v19_len == want_len && memcmp(v19, want, want_len) != 0);
    for (int i = 0; i < 3; i++) {
        char id[32];
        snprintf(id, sizeof(id), "otlphttp/ver%d", i);
        PG_REQUIRE(fs_start(&f[i], NULL, 0, ok));
        PG_REQUIRE(rig_create(&r[i], id, "endpoint: http://127.0.0.1:%d\n%s" FAST_RETRY,
                              f[i].port, cfgs[i]));
        CHECK_INT(r[i].ops->consume(r[i].state, b, &st), PG_ERR_OK);
    }
    for (int i = 0; i < 3; i++) {
        rig_wait(&r[i], 50, 5000);
        CHECK_INT(sent(&r[i]), 50);
        PG_REQUIRE(fs_requests(&f[i]) == 1);
    }
    CHECK(f[0].got[0].len == v19_len && memcmp(f[0].got[0].body, v19, v19_len) == 0);
    CHECK(f[1].got[0].len == want_len && memcmp(f[1].got[0].body, want, want_len) == 0);
    {
        /* JSON names fields: v1.9's text is the current one (no references here) */
        ProtobufCMessage *m = NULL;
        uint8_t *packed;

        CHECK_INT(pg_otlp_json_decode(a, &pg_otlp_request_descriptor,
                                      (const char *)f[2].got[0].body, f[2].got[0].len, &m, &st),
                  PG_ERR_OK);
        PG_REQUIRE(m != NULL);
        packed = pg_arena_alloc(a, protobuf_c_message_get_packed_size(m));
        CHECK_INT(protobuf_c_message_pack(m, packed), want_len);
        CHECK(memcmp(packed, want, want_len) == 0);
    }
    CHECK(pg_batch_encode(b, a, &after, &after_len, &st) == PG_ERR_OK);
    CHECK(after_len == want_len && memcmp(after, want, want_len) == 0);
    for (int i = 0; i < 3; i++) {
        rig_destroy(&r[i]);
        fs_stop(&f[i]);
    }
    free(v19);
    pg_batch_unref(b);
    pg_arena_destroy(a);
}

/* The spool holds the current layout: requests spooled by a v1.11 run go out as v1.9 when
 * the next run is configured so. */
PG_TEST(spooled_requests_sent_in_the_next_runs_version)
{
    static const struct answer busy = {503, NULL, NULL, 0, false};
    static const struct answer ok = {200, NULL, NULL, 0, false};
    char dir[] = "/tmp/pg_ohpv_XXXXXX";
    struct pg_spool_options o;
    struct fake f;
    struct rig r;
    uint8_t *first = NULL;
    size_t first_len = 0;
    char cmd[160];

    PG_REQUIRE(mkdtemp(dir) != NULL);
    memset(&o, 0, sizeof(o));
    o.dir = dir;
    o.fsync = PG_SPOOL_FSYNC_NEVER;
    PG_REQUIRE(pg_storage_register("file_storage", &o));
    PG_REQUIRE(fs_start(&f, NULL, 0, busy));
    PG_REQUIRE(rig_create(&r, "otlphttp/pv",
                          "endpoint: http://127.0.0.1:%d\nshutdown_timeout: 100ms\n"
                          "compression: none\n"
                          "sending_queue: {storage: file_storage, num_consumers: 1}\n"
                          "retry_on_failure: {initial_interval: 50ms, max_interval: 50ms}\n",
                          f.port));
    CHECK_INT(push(&r, 6, 1), PG_ERR_OK);
    for (int t = 0; t < 3000 && fs_requests(&f) < 1; t += 20) {
        rig_spin(&r, 20);
    }
    PG_REQUIRE(fs_requests(&f) >= 1);
    first_len = f.got[0].len;
    first = malloc(first_len);
    PG_REQUIRE(first != NULL);
    memcpy(first, f.got[0].body, first_len);
    rig_destroy(&r);
    fs_stop(&f);

    PG_REQUIRE(fs_start(&f, NULL, 0, ok));
    PG_REQUIRE(rig_create(&r, "otlphttp/pv", "endpoint: http://127.0.0.1:%d\n"
                          "compression: none\nprotocol_version: v1.9\n"
                          "sending_queue: {storage: file_storage, num_consumers: 1}\n",
                          f.port));
    for (int t = 0; t < 5000 && sent(&r) < 6; t += 20) {
        rig_spin(&r, 20);
    }
    CHECK_INT(sent(&r), 6);
    PG_REQUIRE(fs_requests(&f) == 1);
    {
        uint8_t *v19 = NULL;
        size_t v19_len = 0;
        struct pg_status st;

        CHECK(pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, first, first_len, &v19, &v19_len, NULL,
                                     &st) == PG_ERR_OK);
        CHECK(f.got[0].len == v19_len && memcmp(f.got[0].body, v19, v19_len) == 0);
        CHECK(memcmp(f.got[0].body, first, first_len) != 0);
        free(v19);
    }
    free(first);
    rig_destroy(&r);
    fs_stop(&f);
    pg_storage_unregister("file_storage");
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_INT(system(cmd), 0);
}

/* Retry-After's two forms, as the collector reads them. */
PG_TEST(retry_after_parse)
{
    const int64_t now = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
    const int64_t s = 1000000000LL;
    const struct {
        const char *v;
        int64_t want;
    } cases[] = {
        {"1", 1 * s},
        {"0", 0},
        {"120", 120 * s},
        {"+5", 5 * s},
        {"-5", -1},
        {"1.5", -1},
        {" 5", -1},
        {"5s", -1},
        {"", -1},
        {NULL, -1},
        {"Sun, 06 Nov 1994 08:49:40 GMT", 3 * s},
        {"Sun, 06 Nov 1994 08:50:37 UTC", 60 * s},
        {"Sun, 06 Nov 1994 08:49:37 GMT", -1},
        {"Sun, 06 Nov 1994 08:40:00 GMT", -1},
        {"Sunday, 06-Nov-94 08:49:40 GMT", -1},
        {"Sun Nov  6 08:49:40 1994", -1},
        {"Sun, 06 Nov 1994 08:49:40", -1},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t got = pg_otlphttp_retry_after(cases[i].v, now);

        if (got != cases[i].want) {
            fprintf(stderr, "  \"%s\": %lld\n", cases[i].v ? cases[i].v : "(null)",
                    (long long)got);
        }
        CHECK_INT(got, cases[i].want);
    }
}

PG_TEST(config_errors)
{
    static const struct {
        const char *yaml;
        const char *error;
    } cases[] = {
        {"compression: gzip\n", "at least one endpoint must be specified"},
        {"endpoint: 127.0.0.1:4318\n", "expected http://host:port"},
        {"endpoint: http://\n", "no host"},
        {"endpoint: http://h:99999\n", "port 1..65535"},
        {"profiles_endpoint: ftp://h/x\n", "expected http://host:port"},
        {"endpoint: http://h:1\ncompression: snappy\n", "snappy"},
        {"endpoint: http://h:1\nencoding: xml\n", "xml"},
        {"endpoint: http://h:1\ncompression_params: {level: 10}\n",
         "unsupported parameters {Level:10} for compression type \"gzip\""},
        {"endpoint: http://h:1\ncompression: none\ncompression_params: {level: 1}\n",
         "for compression type \"none\""},
        {"endpoint: http://h:1\nbogus: 1\n", "bogus"},
        {"endpoint: http://h:1\nsending_queue: {storage: nowhere}\n", "nowhere"},
        {"endpoint: http://h:1\nprotocol_version: v1.8\n",
         "\"v1.8\" is not one of: v1.11, v1.10, v1.9"},
        {"endpoint: http://h:1\nprotocol_version: \"1.9\"\n", "(did you mean \"v1.9\"?)"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rig r;
        bool ok = rig_create(&r, "otlphttp/cfg", "%s", cases[i].yaml);
        bool found = false;

        CHECK(!ok);
        for (size_t k = 0; k < r.diag.n; k++) {
            found = found || strstr(r.diag.msgs[k], cases[i].error) != NULL;
        }
        if (!found) {
            fprintf(stderr, "  case %zu: no \"%s\" among %zu messages%s%s\n", i, cases[i].error,
                    r.diag.n, r.diag.n ? ": " : "", r.diag.n ? r.diag.msgs[0] : "");
        }
        CHECK(found);
        r.state = NULL;
        rig_destroy(&r);
    }
    /* accepted: the collector's spellings */
    {
        struct rig r;

        CHECK(rig_create(&r, "otlphttp/cfgok",
                         "endpoint: https://collector.example:4318\n"
                         "tls: {insecure: true, insecure_skip_verify: true}\n"
                         "compression: zstd\ncompression_params: {level: 22}\ntimeout: 10s\n"
                         "keepalive: {idle_conn_timeout: 30s}\nmax_conns_per_host: 2\n"));
        rig_destroy(&r);
    }
}

PG_TEST_MAIN(PG_CASE(status_table), PG_CASE(connection_refused_retried_then_dropped),
             PG_CASE(timeout_retried), PG_CASE(queued_call_times_out), PG_CASE(body_bytes_per_compression_and_encoding),
             PG_CASE(bearer_token_file), PG_CASE(connection_reused), PG_CASE(persistent_queue_survives_restart),
             PG_CASE(protocol_version_bodies), PG_CASE(spooled_requests_sent_in_the_next_runs_version),
             PG_CASE(retry_after_parse), PG_CASE(config_errors))
