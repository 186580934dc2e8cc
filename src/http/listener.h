/* SPDX-License-Identifier: Apache-2.0
 * Listening sockets for confighttp's `transport`: tcp4 and tcp6 bind one
 * address family, unix a socket file, tcp the first address the host
 * resolves to (both families for a v6 wildcard). */
#ifndef PG_HTTP_LISTENER_H
#define PG_HTTP_LISTENER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/hostport.h" /* pg_hostport_split, which the endpoint parsers use */

enum pg_transport { PG_TRANSPORT_TCP = 0, PG_TRANSPORT_TCP4, PG_TRANSPORT_TCP6, PG_TRANSPORT_UNIX };

/* The names as the collector spells them, in enum order, NULL-terminated. */
extern const char *const pg_transport_names[];

/* A non-blocking, close-on-exec socket listening on @host:@port (tcp4/tcp6:
 * @host "" = every address of that family) or on the socket file @host
 * (unix: a stale file from a dead process is replaced, a live one is not).
 * Returns the fd, or -1 with the reason in @err. */
int pg_listen(enum pg_transport t, const char *host, unsigned port, int backlog, char *err,
              size_t err_size);

/* @n sockets on one address, each with SO_REUSEPORT, so the kernel spreads
 * new connections over them (one per event loop); port 0 picks one port for
 * all. The address is checked free first without SO_REUSEPORT, so a second
 * process cannot join the group unnoticed (the window until the group binds
 * is a few syscalls). unix (or @n < 2): one plain socket in fds[0], the rest
 * -1. Returns the sockets made (1 or @n), or -1 with the reason in @err. */
int pg_listen_group(enum pg_transport t, const char *host, unsigned port, int backlog, int *fds,
                    size_t n, char *err, size_t err_size);

/* True when @host fits @t: a tcp4/tcp6 literal of the other family, or a
 * unix path that is empty or too long, does not. */
int pg_listen_host_ok(enum pg_transport t, const char *host);


#endif
