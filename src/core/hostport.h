/* SPDX-License-Identifier: Apache-2.0
 * The one parser of "host:port" endpoints (listen addresses, scrape targets,
 * redirect hosts, API servers). Pure string work, no lookups; thread-safe. */
#ifndef PG_CORE_HOSTPORT_H
#define PG_CORE_HOSTPORT_H

#include <stdbool.h>
#include <stddef.h>

/* Splits "host:port", "[v6]:port" or ":port" into @host (brackets removed;
 * "" when absent, which a server reads as every interface) and @port
 * (0..65535, decimal digits only). A bare IPv6 literal splits at its last
 * colon, as Go's net.SplitHostPort would not: write it in brackets. False
 * when @ep is NULL or malformed, or the host does not fit @host_size.
 * Callers that need a host or a nonzero port check that themselves. */
bool pg_hostport_split(const char *ep, char *host, size_t host_size, unsigned *port);

/* Like pg_hostport_split, but "host" and "[v6]" without a port take
 * @default_port (a URL's authority with the scheme's port). */
bool pg_hostport_split_default(const char *ep, unsigned default_port, char *host,
                               size_t host_size, unsigned *port);

#endif
