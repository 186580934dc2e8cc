/* SPDX-License-Identifier: Apache-2.0
 * Field tables of the otlp receiver's configuration (Collector key names;
 * pprofgate additions say so in their doc line). */
#include "receiver/otlp_config.h"

#include <stddef.h>

#include "http/listener.h"
#include "receiverhelper/http_server_fields.h"

#define MIB (1024.0 * 1024.0)

static const struct pg_field ka_server_fields[] = {
    PG_FIELD(struct otlp_keepalive_server_cfg, "max_connection_idle", PG_FT_DURATION,
             max_connection_idle, "0", "GOAWAY after this long without calls; 0 = never"),
    PG_FIELD(struct otlp_keepalive_server_cfg, "max_connection_age", PG_FT_DURATION,
             max_connection_age, "0", "GOAWAY after this long; 0 = never"),
    PG_FIELD(struct otlp_keepalive_server_cfg, "max_connection_age_grace", PG_FT_DURATION,
             max_connection_age_grace, "0", "then close after this long; 0 = wait for the calls"),
    PG_FIELD(struct otlp_keepalive_server_cfg, "time", PG_FT_DURATION, time, "0",
             "PING a connection idle this long; 0 = 2h (grpc-go)"),
    PG_FIELD(struct otlp_keepalive_server_cfg, "timeout", PG_FT_DURATION, timeout, "0",
             "close when the PING is not acknowledged within this; 0 = 20s"),
    PG_FIELD_END,
};

static const struct pg_field ka_enforcement_fields[] = {
    PG_FIELD(struct otlp_keepalive_enforcement_cfg, "min_time", PG_FT_DURATION, min_time, "0",
             "clients pinging more often get GOAWAY too_many_pings; 0 = 5m (grpc-go)"),
    PG_FIELD(struct otlp_keepalive_enforcement_cfg, "permit_without_stream", PG_FT_BOOL,
             permit_without_stream, "false", "allow PINGs on a connection without calls"),
    PG_FIELD_END,
};

static const struct pg_field keepalive_fields[] = {
    PG_FIELD_SECTION(struct otlp_keepalive_cfg, "server_parameters", server_parameters,
                     ka_server_fields, NULL),
    PG_FIELD_SECTION(struct otlp_keepalive_cfg, "enforcement_policy", enforcement_policy,
                     ka_enforcement_fields, NULL),
    PG_FIELD_END,
};

static const struct pg_field grpc_fields[] = {
    PG_FIELD(struct otlp_grpc_cfg, "endpoint", PG_FT_STR, endpoint, "localhost:4317",
             "host:port to listen on (\":4317\" = every interface); with transport unix, a "
             "socket path"),
    PG_FIELD_ENUM(struct otlp_grpc_cfg, "transport", transport, "tcp", pg_transport_names,
                  "tcp, tcp4, tcp6 or unix"),
    PG_FIELD_RANGE(struct otlp_grpc_cfg, "max_recv_msg_size_mib", PG_FT_INT, max_recv_msg_size_mib,
                   "4", 0, 1024,
                   "cap on one message, as sent and decompressed (RESOURCE_EXHAUSTED); 0 = 4"),
    PG_FIELD_RANGE(struct otlp_grpc_cfg, "max_concurrent_streams", PG_FT_INT,
                   max_concurrent_streams, "0", 0, 1e6,
                   "calls open at once per connection (REFUSED_STREAM past it); 0 = 100"),
    PG_FIELD(struct otlp_grpc_cfg, "read_buffer_size", PG_FT_BYTES, read_buffer_size, "512KiB",
             "accepted for compatibility (nghttp2 sizes its own buffers)"),
    PG_FIELD(struct otlp_grpc_cfg, "write_buffer_size", PG_FT_BYTES, write_buffer_size, "0",
             "accepted for compatibility"),
    PG_FIELD_SECTION(struct otlp_grpc_cfg, "keepalive", keepalive, keepalive_fields,
                     "server_parameters and enforcement_policy, as grpc-go"),
    PG_FIELD_SECTION_PRESENT(struct otlp_grpc_cfg, "tls", tls, pg_tls_server_fields, has_tls,
                             "serve h2 over TLS (ALPN); mTLS with client_ca_file"),
    PG_FIELD_SECTION_PRESENT(struct otlp_grpc_cfg, "auth", auth, pg_auth_fields, has_auth,
                             "require a bearer token or basic auth in `authorization` "
                             "(UNAUTHENTICATED)"),
    PG_FIELD(struct otlp_grpc_cfg, "include_metadata", PG_FT_BOOL, include_metadata, "false",
             "copy call metadata into request metadata (for metadata[\"...\"] in transform)"),
    PG_FIELD_RANGE(struct otlp_grpc_cfg, "max_connections", PG_FT_INT, max_connections, "0", 0,
                   1e7, "open connections at most, enforced at accept (pprofgate; 0 = the fd "
                   "limit minus a headroom)"),
    PG_FIELD_RANGE(struct otlp_grpc_cfg, "max_connections_per_peer", PG_FT_INT,
                   max_connections_per_peer, "0", 0, 1e7,
                   "open connections per client address at most (pprofgate; 0 = no limit)"),
    PG_FIELD(struct otlp_grpc_cfg, "handshake_timeout", PG_FT_DURATION, handshake_timeout, "10s",
             "accept (and TLS) to the client's first SETTINGS (pprofgate)"),
    PG_FIELD(struct otlp_grpc_cfg, "read_timeout", PG_FT_DURATION, read_timeout, "1m",
             "a call's HEADERS to the end of its message (pprofgate; 0 = none)"),
    PG_FIELD_END,
};

static const struct pg_field cors_fields[] = {
    PG_FIELD(struct otlp_cors_cfg, "allowed_origins", PG_FT_STRLIST, allowed_origins, NULL,
             "origins allowed to POST from a browser (\"*\" or one \"*\" wildcard each); "
             "empty = CORS off"),
    PG_FIELD(struct otlp_cors_cfg, "allowed_headers", PG_FT_STRLIST, allowed_headers, NULL,
             "request headers allowed besides Accept, Content-Type, X-Requested-With; "
             "\"*\" = any"),
    PG_FIELD(struct otlp_cors_cfg, "exposed_headers", PG_FT_STRLIST, exposed_headers, NULL,
             "Access-Control-Expose-Headers"),
    PG_FIELD_RANGE(struct otlp_cors_cfg, "max_age", PG_FT_INT, max_age, "0", 0, 1e7,
                   "seconds a preflight answer may be cached (0 = not sent)"),
    PG_FIELD_END,
};

static const struct pg_field http_fields[] = {
    PG_FIELD(struct otlp_http_cfg, "endpoint", PG_FT_STR, endpoint, "localhost:4318",
             "host:port to listen on (\":4318\" = every interface); with transport unix, a "
             "socket path"),
    PG_FIELD(struct otlp_http_cfg, "profiles_url_path", PG_FT_STR, profiles_url_path,
             "/v1development/profiles",
             "path of the profiles endpoint (pprofgate addition; the Collector's is fixed)"),
    PG_FIELD(struct otlp_http_cfg, "traces_url_path", PG_FT_STR, traces_url_path, "/v1/traces",
             "accepted for compatibility (pprofgate takes profiles only)"),
    PG_FIELD(struct otlp_http_cfg, "metrics_url_path", PG_FT_STR, metrics_url_path, "/v1/metrics",
             "accepted for compatibility"),
    PG_FIELD(struct otlp_http_cfg, "logs_url_path", PG_FT_STR, logs_url_path, "/v1/logs",
             "accepted for compatibility"),
    /* The confighttp rows shared with the pprof and pyroscope receivers. */
    PG_RXH_HTTP_SERVER_FIELDS(struct otlp_http_cfg),
    PG_FIELD_SECTION_PRESENT(struct otlp_http_cfg, "cors", cors, cors_fields, has_cors,
                             "cross-origin requests from browsers"),
    PG_FIELD_END,
};

static const struct pg_field protocols_fields[] = {
    PG_FIELD_SECTION_PRESENT(struct otlp_protocols_cfg, "grpc", grpc, grpc_fields, has_grpc,
                             "OTLP/gRPC (configgrpc keys); `grpc:` alone = the defaults"),
    PG_FIELD_SECTION_PRESENT(struct otlp_protocols_cfg, "http", http, http_fields, has_http,
                             "OTLP/HTTP, protobuf and JSON (confighttp keys); `http:` alone = "
                             "the defaults"),
    PG_FIELD_END,
};

static const struct pg_field limits_fields[] = {
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_samples", PG_FT_INT, max_samples, "0", 0, 1e9,
                   "samples over every profile; 0 = 2Mi"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_profiles", PG_FT_INT, max_profiles, "0", 0, 1e7,
                   "0 = 64Ki"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_locations", PG_FT_INT, max_locations, "0", 0, 1e9,
                   "location_table entries; 0 = 1Mi"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_functions", PG_FT_INT, max_functions, "0", 0, 1e9,
                   "0 = 1Mi"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_mappings", PG_FT_INT, max_mappings, "0", 0, 1e9,
                   "0 = 64Ki"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_strings", PG_FT_INT, max_strings, "0", 0, 1e9,
                   "0 = 4Mi"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_stacks", PG_FT_INT, max_stacks, "0", 0, 1e9,
                   "0 = 2Mi"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_attributes", PG_FT_INT, max_attributes, "0", 0,
                   1e9, "attribute_table entries; 0 = 1Mi"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_links", PG_FT_INT, max_links, "0", 0, 1e9,
                   "0 = 1Mi"),
    PG_FIELD(struct otlp_limits_cfg, "max_string_bytes", PG_FT_BYTES, max_string_bytes, "0",
             "one string; 0 = 64MiB"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_stack_depth", PG_FT_INT, max_stack_depth, "0", 0,
                   1e6, "locations of one stack; 0 = 4096"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_labels_per_sample", PG_FT_INT,
                   max_labels_per_sample, "0", 0, 1e6,
                   "attribute_indices of one sample; 0 = 256"),
    PG_FIELD_RANGE(struct otlp_limits_cfg, "max_sample_values", PG_FT_INT, max_sample_values, "0",
                   0, 1e6, "values of one sample; 0 = 64"),
    PG_FIELD_END,
};

/* Keep in step with OTLP_MAX_LOOPS (otlp_internal.h). */
#define MAX_LOOPS 8

const struct pg_field pg_otlp_rx_fields[] = {
    PG_FIELD_SECTION(struct otlp_cfg, "protocols", protocols, protocols_fields,
                     "grpc and/or http; at least one"),
    PG_FIELD_SECTION(struct otlp_cfg, "limits", limits, limits_fields,
                     "caps on one request (pprofgate; the pprof receiver's names; 413 / "
                     "RESOURCE_EXHAUSTED past them)"),
    PG_FIELD(struct otlp_cfg, "default_service_name", PG_FT_STR, default_service_name, NULL,
             "service.name used when none survives the processors (pprofgate)"),
    PG_FIELD(struct otlp_cfg, "convert_v1_9", PG_FT_BOOL, convert_v1_9, "false",
             "accept requests in the OTLP Profiles v1.9 layout by converting them (pprofgate; "
             "else refused naming the version)"),
    PG_FIELD_RANGE(struct otlp_cfg, "loops", PG_FT_INT, loops, "0", 0, MAX_LOOPS,
                   "event loops (threads) serving both protocols, each on its own SO_REUSEPORT "
                   "socket (pprofgate; 0 = one per usable CPU, at most 8; 1 = the main loop only)"),
    PG_FIELD_END,
};
