/* SPDX-License-Identifier: Apache-2.0
 * The HTTP server's accept path when the process is out of fds: accept()
 * fails with EMFILE while connections wait in the backlog. The listener must
 * pause (reported, bounded in number) instead of spinning the loop, and
 * accept the waiting connections once fds are back. Clients run in a child
 * process so their sockets do not count against our limit. */
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

#include <event2/event.h>

#include "pg_test.h"
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

PG_TEST_MAIN(PG_CASE(test_emfile_pauses_accept))
