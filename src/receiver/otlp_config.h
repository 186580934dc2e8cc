/* SPDX-License-Identifier: Apache-2.0
 * The otlp receiver's configuration: the Collector's keys verbatim
 * (protocols.grpc: configgrpc.ServerConfig; protocols.http:
 * confighttp.ServerConfig squashed + the *_url_path keys), pprofgate's
 * additions (profiles_url_path, limits, the connection caps and deadlines
 * of the pprof receiver), the structs they bind to and the field tables. */
#ifndef PG_RECEIVER_OTLP_CONFIG_H
#define PG_RECEIVER_OTLP_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "http/auth.h"
#include "http/tls.h"

struct otlp_keepalive_server_cfg {
    int64_t max_connection_idle, max_connection_age, max_connection_age_grace, time, timeout;
};
struct otlp_keepalive_enforcement_cfg {
    int64_t min_time;
    bool permit_without_stream;
};
struct otlp_keepalive_cfg {
    struct otlp_keepalive_server_cfg server_parameters;
    struct otlp_keepalive_enforcement_cfg enforcement_policy;
};

struct otlp_grpc_cfg {
    char *endpoint;
    int transport; /* enum pg_transport */
    int64_t max_recv_msg_size_mib;
    int64_t max_concurrent_streams;
    uint64_t read_buffer_size, write_buffer_size; /* accepted; buffers are nghttp2's */
    struct otlp_keepalive_cfg keepalive;
    struct pg_tls_server_options tls;
    bool has_tls;
    struct pg_auth_options auth;
    bool has_auth;
    bool include_metadata;
    /* pprofgate: hostile-client caps */
    int64_t max_connections, max_connections_per_peer;
    int64_t handshake_timeout, read_timeout;
};

struct otlp_cors_cfg {
    struct pg_strlist allowed_origins, allowed_headers, exposed_headers;
    int64_t max_age;
};

struct otlp_http_cfg {
    char *endpoint;
    int transport;
    char *profiles_url_path, *traces_url_path, *metrics_url_path, *logs_url_path;
    uint64_t max_request_body_size;
    bool include_metadata;
    struct pg_strlist compression_algorithms;
    struct pg_tls_server_options tls;
    bool has_tls;
    struct pg_auth_options auth;
    bool has_auth;
    struct otlp_cors_cfg cors;
    bool has_cors;
    struct pg_strmap response_headers;
    int64_t read_timeout, read_header_timeout, write_timeout, idle_timeout;
    bool keep_alives_enabled;
    /* pprofgate: hostile-client caps */
    int64_t max_request_headers, max_connections, max_connections_per_peer,
        max_requests_per_connection;
    uint64_t min_body_rate;
};

/* 0 = the default named in the field table's doc. */
struct otlp_limits_cfg {
    int64_t max_samples, max_profiles, max_locations, max_functions, max_mappings, max_strings,
        max_stacks, max_attributes, max_links;
    uint64_t max_string_bytes;
    int64_t max_stack_depth, max_labels_per_sample, max_sample_values;
};

struct otlp_protocols_cfg {
    struct otlp_grpc_cfg grpc;
    bool has_grpc;
    struct otlp_http_cfg http;
    bool has_http;
};

struct otlp_cfg {
    struct otlp_protocols_cfg protocols;
    struct otlp_limits_cfg limits;
    char *default_service_name;
    bool convert_v1_9;
    int64_t loops;
};

extern const struct pg_field pg_otlp_rx_fields[];

#endif
