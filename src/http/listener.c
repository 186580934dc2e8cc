/* SPDX-License-Identifier: Apache-2.0
 * Listening sockets by transport (see listener.h). */
#include "http/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

const char *const pg_transport_names[] = {"tcp", "tcp4", "tcp6", "unix", NULL};

int pg_listen_host_ok(enum pg_transport t, const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];

    switch (t) {
    case PG_TRANSPORT_TCP4:
        return inet_pton(AF_INET6, host, buf) != 1;
    case PG_TRANSPORT_TCP6:
        return inet_pton(AF_INET, host, buf) != 1;
    case PG_TRANSPORT_UNIX:
        return host[0] != '\0' && strlen(host) < sizeof(((struct sockaddr_un *)0)->sun_path);
    default:
        return 1;
    }
}

/* A socket file nobody accepts on (its process died) may be replaced. */
static int stale_unix_socket(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    int fd, stale;

    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        return 0;
    }
    /* Non-blocking: a live listener with a full backlog answers EAGAIN
     * (live) instead of making the start wait. */
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return 0;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    stale = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno == ECONNREFUSED;
    close(fd);
    return stale;
}

static int listen_unix(const char *path, int backlog, char *err, size_t err_size)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0) {
        snprintf(err, err_size, "socket: %s", strerror(errno));
        return -1;
    }
    struct stat st;

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (stale_unix_socket(path)) {
        unlink(path);
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, backlog) != 0) {
        int e = errno;

        snprintf(err, err_size, "%s",
                 e != EADDRINUSE                                   ? strerror(e)
                 : lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode) ? "exists and is not a socket"
                                                                   : "in use by a running process");
        close(fd);
        return -1;
    }
    return fd;
}

static int listen_tcp(enum pg_transport t, const char *host, unsigned port, int backlog,
                      bool reuseport, char *err, size_t err_size)
{
    struct addrinfo hints = {0}, *res = NULL;
    char service[8];
    int fd, one = 1, rc;

    hints.ai_family = t == PG_TRANSPORT_TCP6 ? AF_INET6 : t == PG_TRANSPORT_TCP4 ? AF_INET
                                                                                : AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(service, sizeof(service), "%u", port);
    rc = getaddrinfo(host[0] ? host : NULL, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, err_size, "%s", gai_strerror(rc));
        return -1;
    }
    fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, err_size, "socket: %s", strerror(errno));
        freeaddrinfo(res);
        return -1;
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
        snprintf(err, err_size, "SO_REUSEPORT: %s", strerror(errno));
        close(fd);
        freeaddrinfo(res);
        return -1;
    }
    if (res->ai_family == AF_INET6 && t == PG_TRANSPORT_TCP6) {
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)); /* tcp6 means v6 */
    }
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
        snprintf(err, err_size, "%s", strerror(errno));
        close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    return fd;
}

int pg_listen(enum pg_transport t, const char *host, unsigned port, int backlog, char *err,
              size_t err_size)
{
    if (t == PG_TRANSPORT_UNIX) {
        return listen_unix(host, backlog, err, err_size);
    }
    return listen_tcp(t, host, port, backlog, false, err, err_size);
}

int pg_listen_group(enum pg_transport t, const char *host, unsigned port, int backlog, int *fds,
                    size_t n, char *err, size_t err_size)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    if (t == PG_TRANSPORT_UNIX || n < 2) {
        fds[0] = pg_listen(t, host, port, backlog, err, err_size);
        for (size_t i = 1; i < n; i++) {
            fds[i] = -1;
        }
        return fds[0] < 0 ? -1 : 1;
    }
    /* A socket without SO_REUSEPORT first: it fails when anyone (another
     * pprofgate too, which would otherwise join the group silently) holds
     * the address, and with port 0 it picks the port the group then shares. */
    {
        int probe = listen_tcp(t, host, port, 1, false, err, err_size);

        if (probe < 0) {
            return -1;
        }
        if (getsockname(probe, (struct sockaddr *)&ss, &sl) != 0) {
            snprintf(err, err_size, "getsockname: %s", strerror(errno));
            close(probe);
            return -1;
        }
        close(probe);
    }
    port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    for (size_t i = 0; i < n; i++) {
        fds[i] = listen_tcp(t, host, port, backlog, true, err, err_size);
        if (fds[i] < 0) {
            for (size_t j = 0; j < i; j++) {
                close(fds[j]);
            }
            return -1;
        }
    }
    return (int)n;
}
