/* SPDX-License-Identifier: Apache-2.0
 * Light load generator for bench/flood.py and tests/hostile: one thread, one
 * epoll loop, non-blocking sockets, so the attacker costs the machine little
 * CPU and the probe's latency is the gateway's, not the generator's.
 *
 *   flood_client flood PORT BODY CLIENTS SECONDS [TOKEN]
 *     CLIENTS connections at a time POST BODY (gzip) to /v1/pprof for SECONDS,
 *     one request per connection; a refused client waits 50 ms before it
 *     reconnects (it honours Retry-After a little), an accepted one goes again
 *     at once. Requests in flight at the end get up to 30 s to finish. Prints
 *     "status <label>=<count>..." and "cpu <user s> <system s> requests <n>".
 *   flood_client probe PORT BODY SRC TOKEN [HEADER]
 *     From source address SRC, one authenticated push of BODY (gzip) per
 *     connection every 20 ms until SIGTERM (or 120 s). Prints "ready" first,
 *     then at the end "ok <latencies in seconds...>" and "fail <labels...>".
 *     HEADER is one extra "Name: value" request header.
 * Loopback only: PORT is on 127.0.0.1. Every loop is bounded in time. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 1000
#define RETRY_NS (50 * 1000000LL)
#define REQUEST_TIMEOUT_NS (30 * 1000000000LL)
#define GRACE_NS (30 * 1000000000LL)
#define PROBE_EVERY_NS (20 * 1000000LL)
#define PROBE_MAX_NS (120 * 1000000000LL)
#define MAX_PROBES 20000

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        (buf = malloc((size_t)n + 1)) == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "flood_client: cannot read %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* The whole request (head and body) in one buffer, owned by the caller. */
static char *build_request(const char *body, size_t body_len, const char *token, const char *header,
                           size_t *len)
{
    char head[2048];
    int n = snprintf(head, sizeof(head),
                     "POST /v1/pprof HTTP/1.1\r\nHost: gw\r\nContent-Type: application/octet-stream\r\n"
                     "Content-Encoding: gzip\r\n%s%s%s%s%sContent-Length: %zu\r\n\r\n",
                     token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "",
                     header ? header : "", header ? "\r\n" : "", body_len);
    char *req;

    if (n < 0 || (size_t)n >= sizeof(head) || (req = malloc((size_t)n + body_len)) == NULL) {
        fprintf(stderr, "flood_client: request head too long\n");
        exit(2);
    }
    memcpy(req, head, (size_t)n);
    memcpy(req + n, body, body_len);
    *len = (size_t)n + body_len;
    return req;
}

/* Status label of a response that starts in @buf: "204", "503"... or "closed". */
static void status_label(const char *buf, size_t n, char out[8])
{
    if (n >= 12 && memcmp(buf, "HTTP/1.", 7) == 0 && buf[8] == ' ') {
        memcpy(out, buf + 9, 3);
        out[3] = '\0';
    } else {
        strcpy(out, "closed");
    }
}

static int connect_nb(int port, const char *src, bool nonblock)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    int one = 1;

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (src != NULL) {
        struct sockaddr_in local = {.sin_family = AF_INET};
        inet_pton(AF_INET, src, &local.sin_addr);
        if (bind(fd, (struct sockaddr *)&local, sizeof(local)) != 0) {
            close(fd);
            return -1;
        }
    }
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- flood ---------------------------------------------------------------------------------- */

struct client {
    int fd;           /* -1 while waiting to reconnect */
    size_t sent;      /* bytes of the request written */
    char resp[16];    /* start of the response: its status line is all we keep */
    size_t got;
    int64_t started;  /* when this request's connect began */
    int64_t retry_at; /* fd == -1: reconnect from then on */
};

#define N_LABELS 16
static struct {
    char name[16];
    long count;
} labels[N_LABELS];

static void count_label(const char *name)
{
    for (int i = 0; i < N_LABELS; i++) {
        if (labels[i].name[0] == '\0') {
            snprintf(labels[i].name, sizeof(labels[i].name), "%s", name);
        }
        if (strcmp(labels[i].name, name) == 0) {
            labels[i].count++;
            return;
        }
    }
}

static void finish(int ep, struct client *c, const char *label, int64_t now)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    count_label(label);
    c->retry_at = now + (strcmp(label, "204") == 0 ? 0 : RETRY_NS);
}

static void start(int ep, struct client *c, int port, int64_t now)
{
    c->sent = c->got = 0;
    c->started = now;
    c->fd = connect_nb(port, NULL, true);
    if (c->fd < 0) {
        count_label("connect-error");
        c->retry_at = now + RETRY_NS;
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

/* Reads what the server answered; true once the request is over. */
static bool on_readable(int ep, struct client *c, int64_t now)
{
    for (;;) {
        char tmp[4096];
        ssize_t n = recv(c->fd, tmp, sizeof(tmp), 0);
        if (n > 0) {
            size_t take = (size_t)n < sizeof(c->resp) - c->got ? (size_t)n : sizeof(c->resp) - c->got;
            memcpy(c->resp + c->got, tmp, take);
            c->got += take;
            if (c->got >= 12) {
                char st[8];
                status_label(c->resp, c->got, st);
                finish(ep, c, st, now);
                return true;
            }
            continue;
        }
        if (n == 0) {
            finish(ep, c, "closed", now);
            return true;
        }
        if (errno == EAGAIN || errno == EINTR) {
            return false;
        }
        finish(ep, c, errno == ECONNRESET ? "reset" : "error", now);
        return true;
    }
}

static void on_writable(int ep, struct client *c, const char *req, size_t req_len, int64_t now)
{
    while (c->sent < req_len) {
        ssize_t n = send(c->fd, req + c->sent, req_len - c->sent, MSG_NOSIGNAL);
        if (n > 0) {
            c->sent += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            return;
        }
        /* Refused mid-body: the answer may already be waiting. */
        if (!on_readable(ep, c, now)) {
            finish(ep, c, errno == EPIPE ? "reset" : "error", now);
        }
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static int run_flood(int port, const char *body_path, int n_clients, double seconds, const char *token)
{
    size_t body_len, req_len;
    char *body = read_file(body_path, &body_len);
    char *req = build_request(body, body_len, token, NULL, &req_len);
    struct client *cl = calloc((size_t)n_clients, sizeof(*cl));
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int64_t t0 = now_ns(), end = t0 + (int64_t)(seconds * 1e9), hard_end = end + GRACE_NS;
    long requests = 0;

    if (cl == NULL || ep < 0) {
        return 2;
    }
    for (int i = 0; i < n_clients; i++) {
        cl[i].fd = -1;
        cl[i].retry_at = t0;
    }
    for (;;) {
        int64_t now = now_ns();
        int open = 0;
        int64_t next = now + 10000000LL;

        for (int i = 0; i < n_clients; i++) {
            struct client *c = &cl[i];
            if (c->fd < 0 && now < end && now >= c->retry_at) {
                start(ep, c, port, now);
                requests++;
            }
            if (c->fd >= 0 && now - c->started > REQUEST_TIMEOUT_NS) {
                finish(ep, c, "timeout", now);
            }
            if (c->fd >= 0) {
                open++;
            } else if (now < end && c->retry_at < next) {
                next = c->retry_at;
            }
        }
        if ((now >= end && open == 0) || now >= hard_end) {
            break;
        }
        struct epoll_event evs[64];
        int wait_ms = next > now ? (int)((next - now + 999999) / 1000000) : 0;
        int n = epoll_wait(ep, evs, 64, wait_ms);
        now = now_ns();
        for (int i = 0; i < n; i++) {
            struct client *c = evs[i].data.ptr;
            if (c->fd < 0) {
                continue;
            }
            if ((evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && on_readable(ep, c, now)) {
                continue;
            }
            if (evs[i].events & EPOLLOUT) {
                on_writable(ep, c, req, req_len, now);
            }
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("status");
    for (int i = 0; i < N_LABELS && labels[i].name[0] != '\0'; i++) {
        printf(" %s=%ld", labels[i].name, labels[i].count);
    }
    printf("\ncpu %.3f %.3f requests %ld\n", (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, requests);
    free(cl);
    free(req);
    free(body);
    close(ep);
    return 0;
}

/* ---- probe ---------------------------------------------------------------------------------- */

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

/* One push on a fresh blocking connection; the status label in @st. */
static void push_once(int port, const char *src, const char *req, size_t req_len, char st[8])
{
    struct timeval tv = {.tv_sec = 3};
    int fd = connect_nb(port, src, false);
    size_t off = 0, got = 0;
    char resp[16];
    int rerr = 0;

    strcpy(st, "connect");
    if (fd < 0) {
        return;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    while (off < req_len) {
        ssize_t n = send(fd, req + off, req_len - off, MSG_NOSIGNAL);
        if (n <= 0) {
            snprintf(st, 8, "send%d", n < 0 ? errno : 0);
            close(fd);
            return;
        }
        off += (size_t)n;
    }
    while (got < 12) {
        ssize_t n = recv(fd, resp + got, sizeof(resp) - got, 0);
        if (n <= 0) {
            rerr = n < 0 ? errno : 0;
            break;
        }
        got += (size_t)n;
    }
    status_label(resp, got, st);
    if (got < 12 && rerr != 0) {
        if (rerr == ECONNRESET || rerr == EAGAIN) {
            snprintf(st, 8, "%s", rerr == ECONNRESET ? "reset" : "timeout");
        } else {
            snprintf(st, 8, "e%d", rerr);
        }
    }
    close(fd);
}

static int run_probe(int port, const char *body_path, const char *src, const char *token, const char *header)
{
    size_t body_len, req_len;
    char *body = read_file(body_path, &body_len);
    char *req = build_request(body, body_len, token, header, &req_len);
    double *lat = calloc(MAX_PROBES, sizeof(*lat));
    char (*fail)[8] = calloc(MAX_PROBES, sizeof(*fail));
    size_t n_lat = 0, n_fail = 0;
    int64_t end = now_ns() + PROBE_MAX_NS;
    struct sigaction sa = {.sa_handler = on_term};

    if (lat == NULL || fail == NULL) {
        return 2;
    }
    sigaction(SIGTERM, &sa, NULL);
    printf("ready\n");
    fflush(stdout);
    while (!stop && now_ns() < end && n_lat + n_fail < MAX_PROBES) {
        int64_t t0 = now_ns();
        char st[8];
        push_once(port, src, req, req_len, st);
        if (stop && strcmp(st, "204") != 0) {
            break; /* cut short by our own SIGTERM (EINTR): not the gateway's failure */
        }
        if (strcmp(st, "204") == 0) {
            lat[n_lat++] = (double)(now_ns() - t0) / 1e9;
        } else {
            memcpy(fail[n_fail++], st, sizeof(st));
        }
        struct timespec ts = {.tv_nsec = PROBE_EVERY_NS};
        nanosleep(&ts, NULL);
    }
    printf("ok");
    for (size_t i = 0; i < n_lat; i++) {
        printf(" %.6f", lat[i]);
    }
    printf("\nfail");
    for (size_t i = 0; i < n_fail; i++) {
        printf(" %s", fail[i]);
    }
    printf("\n");
    free(lat);
    free(fail);
    free(req);
    free(body);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && strcmp(argv[1], "flood") == 0) {
        int clients = atoi(argv[4]);
        if (clients < 1 || clients > MAX_CLIENTS) {
            fprintf(stderr, "flood_client: CLIENTS must be 1..%d\n", MAX_CLIENTS);
            return 2;
        }
        return run_flood(atoi(argv[2]), argv[3], clients, atof(argv[5]), argc > 6 ? argv[6] : NULL);
    }
    if (argc >= 6 && strcmp(argv[1], "probe") == 0) {
        return run_probe(atoi(argv[2]), argv[3], argv[4], argv[5], argc > 6 ? argv[6] : NULL);
    }
    fprintf(stderr, "usage: flood_client flood PORT BODY CLIENTS SECONDS [TOKEN]\n"
                    "       flood_client probe PORT BODY SRC TOKEN [HEADER]\n");
    return 2;
}
