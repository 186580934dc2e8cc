/* SPDX-License-Identifier: Apache-2.0
 * The HTTP server's accept path when the process is out of fds: accept()
 * fails with EMFILE while connections wait in the backlog. The listener must
 * pause (reported, bounded in number) instead of spinning the loop, and
 * accept the waiting connections once fds are back. Clients run in a child
 * process so their sockets do not count against our limit.
 * Also: one keep-alive connection carries requests of very different heads
 * (the connection reuses its request, head buffer and body buffer), some
 * pipelined, bodies split across reads (chunked, and larger than the input
 * buffer), and every answer must carry its own request's path, header and
 * body; and a client that reads its pipelined answers only once the server's
 * send buffer is full gets every one of them. And large bodies (of
 * PG_BUFPOOL_MIN or more) are read into core/bufpool's blocks, so the next
 * large push on any connection writes into pages already mapped. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "pg_test.h"
#include "core/bufpool.h"
#include "http/http_server.h"

static int events[PG_HTTPD_N_EVENTS];

static bool on_head(struct pg_httpd_req *r, void *arg)
{
    (void)arg;
    pg_httpd_reply(r, 404, "not here");
    return false;
}

static void on_request(struct pg_httpd_req *r, void *arg)
{
    (void)arg;
    pg_httpd_reply(r, 204, NULL);
}

static void on_answer(const struct pg_httpd_req *r, int code, const char *reason,
                      const char *peer, void *arg)
{
    (void)r;
    (void)code;
    (void)reason;
    (void)peer;
    (void)arg;
}

static void on_conn_event(int ev, const char *peer, void *arg)
{
    (void)peer;
    (void)arg;
    events[ev]++;
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void run_loop(struct event_base *base, double seconds)
{
    struct timeval tv = {(time_t)seconds, (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6)};

    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

PG_TEST(test_emfile_pauses_accept)
{
    struct event_base *base = event_base_new();
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct pg_httpd_limits lim = {.read_header_timeout_ns = 5000000000LL,
                                  .max_body = 1024,
                                  .max_header_bytes = 4096,
                                  .max_target = 256,
                                  .max_headers = 16,
                                  .keep_alives = true};
    struct pg_httpd_ops ops = {.on_head = on_head,
                               .on_request = on_request,
                               .on_answer = on_answer,
                               .on_conn_event = on_conn_event};
    struct rlimit old, low;
    struct pg_httpd *s;
    double cpu0, cpu;
    int hold[8], n_hold = 0;
    pid_t child;

    CHECK(base != NULL && lfd >= 0);
    CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 64) == 0);
    CHECK(getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
    s = pg_httpd_new(base, lfd, NULL, &lim, &ops, NULL);
    CHECK(s != NULL);
    if (s == NULL) {
        return;
    }
    /* Our fd table full: the soft limit at the lowest free fd, which we take. */
    getrlimit(RLIMIT_NOFILE, &old);
    for (;;) {
        int fd = dup(0);

        if (fd < 0 || n_hold == (int)(sizeof(hold) / sizeof(hold[0])) - 1) {
            if (fd >= 0) {
                close(fd);
            }
            break;
        }
        hold[n_hold++] = fd;
    }
    low = old;
    low.rlim_cur = (rlim_t)hold[n_hold - 1] + 1;
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
    CHECK(dup(0) < 0 && errno == EMFILE);

    child = fork();
    if (child == 0) {
        int c[5];

        setrlimit(RLIMIT_NOFILE, &old);
        for (int i = 0; i < 5; i++) {
            c[i] = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(c[i], (struct sockaddr *)&sa, sizeof(sa)) != 0) {
                _exit(1);
            }
        }
        sleep(5);
        _exit(0);
    }
    CHECK(child > 0);
    usleep(200000); /* the connections are in the backlog */
    cpu0 = cpu_seconds();
    run_loop(base, 0.5);
    cpu = cpu_seconds() - cpu0;
    fprintf(stderr, "  EMFILE: %d pauses in 0.5 s, %.3f s CPU, %zu open\n",
            events[PG_HTTPD_ACCEPT_PAUSED], cpu, pg_httpd_open_connections(s));
    CHECK(events[PG_HTTPD_ACCEPT_PAUSED] >= 1 && events[PG_HTTPD_ACCEPT_PAUSED] <= 8);
    CHECK(cpu < 0.2);
    CHECK(pg_httpd_open_connections(s) == 0);

    /* fds back: the waiting connections are accepted at the next retry. */
    CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
    for (int i = 0; i < n_hold; i++) {
        close(hold[i]);
    }
    run_loop(base, 0.3);
    CHECK_INT((int)pg_httpd_open_connections(s), 5);

    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    pg_httpd_free(s);
    event_base_free(base);
}

/* FNV-1a of @n bytes. */
static unsigned fnv(const char *b, size_t n)
{
    unsigned h = 2166136261u;

    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char)b[i]) * 16777619u;
    }
    return h;
}

/* Echoes "path|X-V|body" (200), the body from r->body; a body over 1 KiB
 * as "<length>:<fnv>". */
static void on_echo(struct pg_httpd_req *r, void *arg)
{
    char out[4096];
    const char *v = evhttp_find_header(r->in, "X-V");
    int n = snprintf(out, sizeof(out), "%s|%s|", r->path, v != NULL ? v : "-");
    size_t blen = r->body_len;

    (void)arg;
    if (blen > 1024 && n > 0) {
        n += snprintf(out + n, sizeof(out) - (size_t)n, "%zu:%u", blen, fnv(r->body, blen));
        if (strcmp(r->path, "/drop") == 0) {
            /* The server's buffer goes before the answer; what was pipelined stays. */
            pg_httpd_drop_body(r);
            if (r->body != NULL || r->body_len != 0) {
                pg_httpd_reply(r, 500, "body still there");
                return;
            }
        }
        pg_httpd_reply_body(r, 200, "text/plain", out, (size_t)n);
        return;
    }
    if (n < 0 || (size_t)n + blen > sizeof(out)) {
        pg_httpd_reply(r, 500, "too long");
        return;
    }
    memcpy(out + n, r->body, blen);
    pg_httpd_reply_body(r, 200, "text/plain", out, (size_t)n + blen);
}

static bool on_head_ok(struct pg_httpd_req *r, void *arg)
{
    (void)r;
    (void)arg;
    return true;
}

/* Client side (child process): sends @req, then reads until it has seen
 * each of @want (in order) as an answer's body; false on a mismatch. */
static bool exchange(int fd, const char *req, size_t len, const char *const *want, int n_want)
{
    static char got[1 << 16];
    size_t have = 0, off = 0;

    if (send(fd, req, len, 0) != (ssize_t)len) {
        return false;
    }
    for (int i = 0; i < n_want; i++) {
        for (;;) {
            char *end = memmem(got + off, have - off, "\r\n\r\n", 4);
            char *cl = end != NULL ? memmem(got + off, (size_t)(end - (got + off)),
                                            "Content-Length: ", 16)
                                   : NULL;
            size_t blen = cl != NULL ? strtoul(cl + 16, NULL, 10) : 0;

            if (end != NULL && cl != NULL && (size_t)(end + 4 - got) + blen <= have) {
                if (blen != strlen(want[i]) || memcmp(end + 4, want[i], blen) != 0) {
                    fprintf(stderr, "  answer %d: %.*s, want %s\n", i, (int)blen, end + 4,
                            want[i]);
                    return false;
                }
                off = (size_t)(end + 4 - got) + blen;
                break;
            }
            ssize_t r = recv(fd, got + have, sizeof(got) - have, 0);

            if (r <= 0) {
                return false;
            }
            have += (size_t)r;
        }
    }
    return true;
}

/* Sends @a, waits so the server reads it alone, then exchange()s @b. */
static bool exchange_split(int fd, const char *a, size_t alen, const char *b, size_t blen,
                           const char *const *want, int n_want)
{
    if (send(fd, a, alen, 0) != (ssize_t)alen) {
        return false;
    }
    usleep(30000);
    return exchange(fd, b, blen, want, n_want);
}

/* A server on an ephemeral loopback port (*@sa), its listener's send buffer set to
 * @sndbuf when > 0 (inherited by accepted sockets); NULL on failure (reported). */
static struct pg_httpd *loopback_server(struct event_base *base, struct sockaddr_in *sa,
                                        int sndbuf, const struct pg_httpd_limits *lim,
                                        const struct pg_httpd_ops *ops)
{
    socklen_t sl = sizeof(*sa);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct pg_httpd *s;

    *sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(base != NULL && lfd >= 0);
    if (sndbuf > 0) {
        CHECK(setsockopt(lfd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) == 0);
    }
    CHECK(bind(lfd, (struct sockaddr *)sa, sizeof(*sa)) == 0 && listen(lfd, 8) == 0);
    CHECK(getsockname(lfd, (struct sockaddr *)sa, &sl) == 0);
    s = pg_httpd_new(base, lfd, NULL, lim, ops, NULL);
    CHECK(s != NULL);
    return s;
}

/* Runs @base until @child exits (at most @rounds passes of 50 ms; killed after), and
 * tells whether it exited with 0. */
static bool child_ok(struct event_base *base, pid_t child, int rounds)
{
    int status = -1;

    for (int i = 0; i < rounds && waitpid(child, &status, WNOHANG) == 0; i++) {
        run_loop(base, 0.05);
    }
    if (waitpid(child, &status, WNOHANG) == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

PG_TEST(test_keepalive_reuse)
{
    struct event_base *base = event_base_new();
    struct sockaddr_in sa;
    struct pg_httpd_limits lim = {.read_header_timeout_ns = 5000000000LL,
                                  .max_body = 65536,
                                  .max_header_bytes = 32768,
                                  .max_target = 256,
                                  .max_headers = 100,
                                  .keep_alives = true};
    struct pg_httpd_ops ops = {.on_head = on_head_ok,
                               .on_request = on_echo,
                               .on_answer = on_answer,
                               .on_conn_event = on_conn_event};
    struct pg_httpd *s = loopback_server(base, &sa, 0, &lim, &ops);
    pid_t child;

    if (s == NULL) {
        return;
    }
    child = fork();
    if (child == 0) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        static char big[24576];
        size_t n = 0;
        const char *w1[] = {"/a|1|hello"};
        const char *w2[] = {"/big|2|xy"};
        const char *w3[] = {"/c|3|", "/d|-|z", "/e|5|12345"};
        const char *small = "POST /a?q=1 HTTP/1.1\r\nHost: x\r\nX-V: 1\r\n"
                            "Content-Length: 5\r\n\r\nhello";
        const char *piped = "GET /c HTTP/1.1\r\nHost: x\r\nX-V: 3\r\n\r\n"
                            "POST /d HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz"
                            "POST /e HTTP/1.1\r\nHost: x\r\nX-V: 5\r\nContent-Length: 5\r\n"
                            "\r\n12345";

        /* Bodies split across reads: a chunked one (its framing dropped,
         * a request pipelined behind it) and one of 40000 bytes (the input
         * buffer grows past its standard size). */
        const char *ch1 = "POST /ch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "3\r\nabc\r\n4;ext=1\r\nde";
        const char *ch2 = "fg\r\n0\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n";
        const char *w4[] = {"/ch|-|abcdefg", "/after|-|"};
        static char large[40000 + 128], want_large[64];
        const char *w5[] = {want_large};
        /* pg_httpd_drop_body: a large chunked body dropped with a request
         * pipelined behind it in the same buffer (kept and served), then one
         * of known length (read to its exact size: nothing behind it). */
        static char drop[40000 + 192], cdrop[40000 + 256], want_drop[64];
        const char *w6[] = {want_drop, "/after2|-|"}, *w7[] = {want_drop};
        const char *after2 = "GET /after2 HTTP/1.1\r\nHost: x\r\n\r\n";
        int hl, dl, cl;

        hl = snprintf(large, sizeof(large), "POST /large HTTP/1.1\r\nHost: x\r\nX-V: L\r\n"
                      "Content-Length: 40000\r\n\r\n");
        for (int i = 0; i < 40000; i++) {
            large[hl + i] = (char)('a' + (i * 7) % 26);
        }
        snprintf(want_large, sizeof(want_large), "/large|L|40000:%u", fnv(large + hl, 40000));
        dl = snprintf(drop, sizeof(drop), "POST /drop HTTP/1.1\r\nHost: x\r\nX-V: D\r\n"
                      "Content-Length: 40000\r\n\r\n");
        memcpy(drop + dl, large + hl, 40000);
        snprintf(want_drop, sizeof(want_drop), "/drop|D|40000:%u", fnv(drop + dl, 40000));
        cl = snprintf(cdrop, sizeof(cdrop), "POST /drop HTTP/1.1\r\nHost: x\r\nX-V: D\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n9c40\r\n");
        memcpy(cdrop + cl, drop + dl, 40000);
        cl += 40000;
        cl += snprintf(cdrop + cl, sizeof(cdrop) - (size_t)cl, "\r\n0\r\n\r\n%s", after2);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            _exit(2);
        }
        if (!exchange_split(fd, ch1, strlen(ch1), ch2, strlen(ch2), w4, 2) ||
            !exchange_split(fd, large, (size_t)hl + 1000, large + hl + 1000, 39000, w5, 1) ||
            !exchange(fd, cdrop, (size_t)cl, w6, 2) ||
            !exchange_split(fd, drop, (size_t)dl + 1000, drop + dl + 1000, 39000, w7, 1)) {
            _exit(3);
        }
        /* A head over the kept buffer size (~20 KiB, 90 headers). */
        n += (size_t)snprintf(big + n, sizeof(big) - n, "POST /big HTTP/1.1\r\nHost: x\r\n");
        for (int i = 0; i < 90; i++) {
            n += (size_t)snprintf(big + n, sizeof(big) - n, "X-Pad-%d: %0200d\r\n", i, i);
        }
        n += (size_t)snprintf(big + n, sizeof(big) - n,
                              "X-V: 2\r\nContent-Length: 2\r\n\r\nxy");
        _exit(exchange(fd, small, strlen(small), w1, 1) && exchange(fd, big, n, w2, 1) &&
                      exchange(fd, small, strlen(small), w1, 1) &&
                      exchange(fd, piped, strlen(piped), w3, 3)
                  ? 0
                  : 1);
    }
    CHECK(child > 0);
    CHECK(child_ok(base, child, 40));
    CHECK_INT((int)pg_httpd_accepted(s), 1);
    pg_httpd_free(s);
    event_base_free(base);
}

/* A client that pipelines thousands of requests and does not read for a
 * while: the held answers stop fitting the socket (partial sends go to the
 * output buffer, reading pauses), then it reads. Every answer must arrive,
 * whole and in order, on the same connection. */
#define UNREAD_N 3000
static int unread_client(const struct sockaddr_in *sa)
{
    static char req[UNREAD_N * 40], in[1 << 16];
    int fd = socket(AF_INET, SOCK_STREAM, 0), rcv = 4096;
    size_t len = 0, sent = 0, have = 0;
    int answers = 0;
    bool reading = false;

    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0) {
        return 2;
    }
    for (int i = 0; i < UNREAD_N; i++) {
        len += (size_t)snprintf(req + len, sizeof(req) - len, "GET /p%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
    }
    for (int spins = 0; answers < UNREAD_N && spins < 200000; spins++) {
        ssize_t n = sent < len ? send(fd, req + sent, len - sent, MSG_DONTWAIT) : -1;

        if (n > 0) {
            sent += (size_t)n;
        } else if (!reading) {
            usleep(200000); /* all sent or blocked: the server's answers pile up */
            reading = true;
        }
        if (!reading) {
            continue;
        }
        n = recv(fd, in + have, sizeof(in) - have, MSG_DONTWAIT);
        if (n == 0) {
            return 3; /* closed */
        }
        if (n < 0) {
            usleep(1000);
            continue;
        }
        have += (size_t)n;
        for (;;) {
            char *end = memmem(in, have, "\r\n\r\n", 4), want[32];
            char *cl = end != NULL ? memmem(in, (size_t)(end - in), "Content-Length: ", 16) : NULL;
            size_t blen = cl != NULL ? strtoul(cl + 16, NULL, 10) : 0, used;
            int wl;

            if (end == NULL || cl == NULL || (size_t)(end + 4 - in) + blen > have) {
                break;
            }
            wl = snprintf(want, sizeof(want), "/p%d|-|", answers);
            if (blen != (size_t)wl || memcmp(end + 4, want, blen) != 0) {
                fprintf(stderr, "  answer %d: %.*s\n", answers, (int)blen, end + 4);
                return 4;
            }
            answers++;
            used = (size_t)(end + 4 - in) + blen;
            memmove(in, in + used, have - used);
            have -= used;
        }
    }
    return answers == UNREAD_N ? 0 : 5;
}

PG_TEST(test_answers_not_read)
{
    struct event_base *base = event_base_new();
    struct sockaddr_in sa;
    struct pg_httpd_limits lim = {.read_header_timeout_ns = 5000000000LL,
                                  .write_timeout_ns = 5000000000LL,
                                  .max_body = 4096,
                                  .max_header_bytes = 4096,
                                  .max_target = 256,
                                  .max_headers = 16,
                                  .keep_alives = true};
    struct pg_httpd_ops ops = {.on_head = on_head_ok,
                               .on_request = on_echo,
                               .on_answer = on_answer,
                               .on_conn_event = on_conn_event};
    /* A small send buffer that does not grow, so the answers stop fitting. */
    struct pg_httpd *s = loopback_server(base, &sa, 4096, &lim, &ops);
    pid_t child;

    if (s == NULL) {
        return;
    }
    child = fork();
    if (child == 0) {
        _exit(unread_client(&sa));
    }
    CHECK(child > 0);
    CHECK(child_ok(base, child, 200));
    CHECK_INT((int)pg_httpd_accepted(s), 1);
    pg_httpd_free(s);
    event_base_free(base);
}

/* A request the handler holds, answered just before the server is freed
 * (a shutdown's 503, with no loop pass after it): the answer still reaches
 * the client. */
static struct pg_httpd_req *held_req;

static void on_hold(struct pg_httpd_req *r, void *arg)
{
    (void)arg;
    held_req = r;
}

PG_TEST(test_answer_then_free)
{
    struct event_base *base = event_base_new();
    struct sockaddr_in sa;
    struct pg_httpd_limits lim = {.read_header_timeout_ns = 5000000000LL,
                                  .max_body = 4096,
                                  .max_header_bytes = 4096,
                                  .max_target = 256,
                                  .max_headers = 16,
                                  .keep_alives = true};
    struct pg_httpd_ops ops = {.on_head = on_head_ok,
                               .on_request = on_hold,
                               .on_answer = on_answer,
                               .on_conn_event = on_conn_event};
    struct pg_httpd *s = loopback_server(base, &sa, 0, &lim, &ops);
    int status = -1;
    pid_t child;

    if (s == NULL) {
        return;
    }
    held_req = NULL;
    child = fork();
    if (child == 0) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        const char *req = "POST /h HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab";
        const char *want[] = {"shutting down\n"};

        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            _exit(2);
        }
        _exit(exchange(fd, req, strlen(req), want, 1) ? 0 : 1);
    }
    CHECK(child > 0);
    for (int i = 0; i < 100 && held_req == NULL; i++) {
        run_loop(base, 0.02);
    }
    CHECK(held_req != NULL);
    if (held_req != NULL) {
        pg_httpd_reply(held_req, 503, "shutting down");
    }
    pg_httpd_free(s); /* no loop pass in between */
    for (int i = 0; i < 100 && waitpid(child, &status, WNOHANG) == 0; i++) {
        usleep(20000);
    }
    if (waitpid(child, &status, WNOHANG) == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    event_base_free(base);
}

/* Large bodies, of known length and chunked, kept and dropped (the
 * receivers' pg_httpd_drop_body), on two connections: each arrives whole,
 * and after the first one the server maps nothing fresh for them: their
 * buffers come back from the pool. */
#define LARGE_BODY (600 * 1024)
PG_TEST(test_large_bodies_pooled)
{
    struct event_base *base = event_base_new();
    struct sockaddr_in sa;
    struct pg_httpd_limits lim = {.read_header_timeout_ns = 5000000000LL,
                                  .read_timeout_ns = 20000000000LL,
                                  .max_body = 1 << 20,
                                  .max_header_bytes = 4096,
                                  .max_target = 256,
                                  .max_headers = 16,
                                  .keep_alives = true};
    struct pg_httpd_ops ops = {.on_head = on_head_ok,
                               .on_request = on_echo,
                               .on_answer = on_answer,
                               .on_conn_event = on_conn_event};
    struct pg_bufpool_stats st0, st1;
    struct pg_httpd *s;
    pid_t child;

    pg_bufpool_configure(PG_BUFPOOL_CAP, 60ll * 1000 * 1000 * 1000); /* no decay mid-test */
    pg_bufpool_release();
    pg_bufpool_stats(&st0);
    s = loopback_server(base, &sa, 0, &lim, &ops);
    if (s == NULL) {
        return;
    }
    child = fork();
    if (child == 0) {
        static char body[LARGE_BODY], req[LARGE_BODY + 256], creq[LARGE_BODY + 256];
        char want[64], wantk[64];
        const char *w[] = {want}, *wk[] = {wantk};
        int hl, cl;

        for (int i = 0; i < LARGE_BODY; i++) {
            body[i] = (char)('a' + (i * 13) % 26);
        }
        hl = snprintf(req, 256, "POST /drop HTTP/1.1\r\nHost: x\r\nX-V: P\r\n"
                      "Content-Length: %d\r\n\r\n", LARGE_BODY);
        memcpy(req + hl, body, LARGE_BODY);
        snprintf(want, sizeof(want), "/drop|P|%d:%u", LARGE_BODY, fnv(body, LARGE_BODY));
        snprintf(wantk, sizeof(wantk), "/keep|P|%d:%u", LARGE_BODY, fnv(body, LARGE_BODY));
        cl = snprintf(creq, 256, "POST /keep HTTP/1.1\r\nHost: x\r\nX-V: P\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n%x\r\n", LARGE_BODY);
        memcpy(creq + cl, body, LARGE_BODY);
        cl += LARGE_BODY;
        cl += snprintf(creq + cl, 64, "\r\n0\r\n\r\n");
        for (int conn = 0; conn < 2; conn++) {
            int fd = socket(AF_INET, SOCK_STREAM, 0);

            if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
                _exit(2);
            }
            for (int i = 0; i < 3; i++) {
                /* Dropped by the handler, then kept until the answer. */
                if (!exchange(fd, req, (size_t)hl + LARGE_BODY, w, 1)) {
                    _exit(3);
                }
                memcpy(req + 6, "keep", 4);
                if (!exchange(fd, req, (size_t)hl + LARGE_BODY, wk, 1)) {
                    _exit(4);
                }
                memcpy(req + 6, "drop", 4);
            }
            if (!exchange(fd, creq, (size_t)cl, wk, 1)) {
                _exit(5);
            }
            close(fd);
        }
        _exit(0);
    }
    CHECK(child > 0);
    CHECK(child_ok(base, child, 200));
    pg_bufpool_stats(&st1);
    fprintf(stderr, "  large bodies: %llu blocks mapped, %llu reused\n",
            (unsigned long long)(st1.mapped - st0.mapped),
            (unsigned long long)(st1.reused - st0.reused));
    /* 14 large bodies: the first known-length one maps its block; the
     * chunked ones grow (256 KiB, 512 KiB, 1 MiB) the first time. Without
     * the pool: no block at all. */
    CHECK(st1.reused - st0.reused >= 10);
    CHECK(st1.mapped - st0.mapped <= 4);
    pg_httpd_free(s);
    event_base_free(base);
    pg_bufpool_configure(0, 0);
}

PG_TEST_MAIN(PG_CASE(test_emfile_pauses_accept), PG_CASE(test_keepalive_reuse),
             PG_CASE(test_answers_not_read), PG_CASE(test_answer_then_free),
             PG_CASE(test_large_bodies_pooled))
