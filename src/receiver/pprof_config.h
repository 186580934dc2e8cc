/* SPDX-License-Identifier: Apache-2.0
 * The push receivers' configuration (pprof, pyroscope): the structs their
 * keys bind to and the field tables (names, types, defaults, bounds, docs). */
#ifndef PG_RECEIVER_PPROF_CONFIG_H
#define PG_RECEIVER_PPROF_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "http/auth.h"
#include "http/tls.h"

/* `server.workers: -1` means one worker per usable CPU (core/cgroup.h), capped here. */
#define MAX_WORKERS 64
/* `server.loops: 0` means one event loop per usable CPU, capped here: past a
 * few loops accept and the shared pipeline lock, not the loops, bound a push. */
#define MAX_LOOPS 8

struct rx_server_cfg {
    char *endpoint;
    int transport; /* enum pg_transport */
    bool include_metadata;
    uint64_t max_request_body_size;
    struct pg_strlist compression_algorithms;
    int64_t read_header_timeout;
    int64_t read_timeout;
    int64_t write_timeout;
    int64_t idle_timeout;
    bool keep_alives_enabled;
    struct pg_strmap response_headers;
    char *default_service_name;
    /* TLS, authentication, header-count cap. */
    struct pg_tls_server_options tls;
    bool has_tls;
    struct pg_auth_options auth;
    bool has_auth;
    int64_t max_request_headers;
    int64_t max_connections;
    int64_t max_connections_per_peer;
    int64_t max_requests_per_connection;
    uint64_t min_body_rate;
    int64_t workers;
    int64_t loops;
};

struct rx_self_cfg {
    int64_t collection_interval;
};

/* 0 = the translator's default (max_inflated_bytes: max_request_body_size). */
struct rx_limits_cfg {
    uint64_t max_inflated_bytes;
    int64_t max_gzip_layers, max_samples, max_locations, max_functions, max_mappings, max_strings;
    uint64_t max_string_bytes;
    int64_t max_stack_depth, max_labels_per_sample, max_sample_types;
};

struct rx_cfg {
    struct rx_server_cfg server;
    bool has_server;
    struct rx_self_cfg self;
    bool has_self;
    char *trace_id_label;
    char *span_id_label;
    bool include_original_payload;
    struct rx_limits_cfg limits;
    const struct pg_cfg_node *scrape, *remote; /* pull mode: src/scrape */
};

/* The receiver's top-level keys (server, self, limits, pull mode). */
extern const struct pg_field pg_pprof_rx_fields[];
/* The pyroscope receiver's: the same server and limits tables, the link
 * labels and original payload; no self or pull mode. */
extern const struct pg_field pg_pyroscope_rx_fields[];
/* The `server:` rows of both push receivers (endpoint, the shared confighttp
 * rows, workers, loops) and the `limits:` rows. */
extern const struct pg_field pg_rx_server_fields[];
extern const struct pg_field pg_rx_limits_fields[];

#endif
