/* SPDX-License-Identifier: Apache-2.0
 * The confighttp server rows every HTTP/1.1 receiver shares (pprof,
 * pyroscope, the otlp receiver's http side): one table of names, defaults,
 * bounds and docs, expanded into each receiver's field table. The struct
 * it binds into must have members of these names and types (see
 * receiver/pprof_config.h struct rx_server_cfg). `endpoint` (its default
 * port differs) and receiver-specific keys stay in each table. */
#ifndef PG_RECEIVERHELPER_HTTP_SERVER_FIELDS_H
#define PG_RECEIVERHELPER_HTTP_SERVER_FIELDS_H

#include "core/config.h"
#include "http/auth.h"
#include "http/listener.h"
#include "http/tls.h"

#define PG_RXH_HTTP_MIB (1024.0 * 1024.0)

/* The rows, for struct @st. */
#define PG_RXH_HTTP_SERVER_FIELDS(st)                                                              \
    PG_FIELD_ENUM(st, "transport", transport, "tcp", pg_transport_names,                           \
                  "tcp, tcp4 or tcp6 (one address family), unix (endpoint is a socket file, "      \
                  "removed at shutdown)"),                                                         \
        PG_FIELD(st, "include_metadata", PG_FT_BOOL, include_metadata, "false",                    \
                 "copy request headers into request metadata (for metadata[\"...\"] in "           \
                 "transform)"),                                                                    \
        PG_FIELD_RANGE(st, "max_request_body_size", PG_FT_BYTES, max_request_body_size, "20MiB",   \
                       1024, 1024.0 * PG_RXH_HTTP_MIB,                                             \
                       "cap on the body as received and on each decompressed layer (413)"),        \
        PG_FIELD(st, "compression_algorithms", PG_FT_STRLIST, compression_algorithms, NULL,        \
                 "accepted Content-Encoding values (\"\" = none); unset or [] = every coding "     \
                 "pprofgate decodes"),                                                             \
        PG_FIELD(st, "read_header_timeout", PG_FT_DURATION, read_header_timeout, "1m",             \
                 "deadline from a request's first byte to the end of its headers (not reset by "   \
                 "trickled bytes); a new connection gets it from accept"),                         \
        PG_FIELD(st, "read_timeout", PG_FT_DURATION, read_timeout, "0",                            \
                 "deadline from a request's first byte to the end of its body; 0 = none"),         \
        PG_FIELD(st, "write_timeout", PG_FT_DURATION, write_timeout, "30s",                        \
                 "deadline for writing an answer; also how long a request may be held"),           \
        PG_FIELD(st, "idle_timeout", PG_FT_DURATION, idle_timeout, "1m",                           \
                 "keep-alive connections idle this long are closed"),                              \
        PG_FIELD_RANGE(st, "min_body_rate", PG_FT_BYTES, min_body_rate, "1KiB", 0, 1e12,           \
                       "bytes/s a body must average after a 2 s grace, or the connection closes "  \
                       "(408); 0 = off (pprofgate)"),                                              \
        PG_FIELD(st, "keep_alives_enabled", PG_FT_BOOL, keep_alives_enabled, "true", NULL),        \
        PG_FIELD(st, "response_headers", PG_FT_STRMAP, response_headers, NULL,                     \
                 "headers added to every response"),                                               \
        PG_FIELD_SECTION_PRESENT(st, "tls", tls, pg_tls_server_fields, has_tls,                    \
                                 "serve HTTPS (confighttp tls keys; mTLS with client_ca_file)"),   \
        PG_FIELD_SECTION_PRESENT(st, "auth", auth, pg_auth_fields, has_auth,                       \
                                 "require a bearer token or basic auth (401)"),                    \
        PG_FIELD_RANGE(st, "max_request_headers", PG_FT_INT, max_request_headers, "100", 1, 10000, \
                       "header lines per request at most (431; pprofgate)"),                       \
        PG_FIELD_RANGE(st, "max_connections", PG_FT_INT, max_connections, "0", 0, 1e7,             \
                       "open client connections at most, enforced at accept (pprofgate; 0 = the "  \
                       "fd limit minus a headroom)"),                                              \
        PG_FIELD_RANGE(st, "max_connections_per_peer", PG_FT_INT, max_connections_per_peer, "0",   \
                       0, 1e7,                                                                     \
                       "open connections per client address at most, enforced at accept "          \
                       "(pprofgate; 0 = no limit)"),                                               \
        PG_FIELD_RANGE(st, "max_requests_per_connection", PG_FT_INT, max_requests_per_connection,  \
                       "0", 0, 1e9,                                                                \
                       "keep-alive requests before Connection: close (pprofgate; 0 = no limit)")

#endif
