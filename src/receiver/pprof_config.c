/* SPDX-License-Identifier: Apache-2.0
 * Field tables of the pprof receiver's configuration (collector key names). */
#include "receiver/pprof_config.h"

#include <stddef.h>

#include "http/listener.h"

#define MIB (1024.0 * 1024.0)

#define F(name, type, st, member, def, lo, hi, doc)                                                \
    {name, type, offsetof(st, member), def, lo, hi, NULL, NULL, 0, doc}

static const struct pg_field server_fields[] = {
    F("endpoint", PG_FT_STR, struct rx_server_cfg, endpoint, "localhost:4040", 0, 0,
      "host:port to listen on (\":4040\" = every interface); with transport unix, a socket path"),
    {"transport", PG_FT_ENUM, offsetof(struct rx_server_cfg, transport), "tcp", 0, 0, NULL,
     pg_transport_names, 0, "tcp, tcp4 or tcp6 (one address family), unix (endpoint is a socket "
                            "file, removed at shutdown)"},
    F("include_metadata", PG_FT_BOOL, struct rx_server_cfg, include_metadata, "false", 0, 0,
      "copy request headers into request metadata (for metadata[\"...\"] in transform)"),
    F("max_request_body_size", PG_FT_BYTES, struct rx_server_cfg, max_request_body_size, "20MiB",
      1024, 1024.0 * MIB, "cap on the body as received and on each decompressed layer (413)"),
    F("compression_algorithms", PG_FT_STRLIST, struct rx_server_cfg, compression_algorithms,
      NULL, 0, 0,
      "accepted Content-Encoding values (\"\" = none); unset or [] = every coding pprofgate "
      "decodes"),
    F("read_header_timeout", PG_FT_DURATION, struct rx_server_cfg, read_header_timeout, "1m", 0, 0,
      "deadline from a request's first byte to the end of its headers (not reset by trickled "
      "bytes); a new connection gets it from accept"),
    F("read_timeout", PG_FT_DURATION, struct rx_server_cfg, read_timeout, "0", 0, 0,
      "deadline from a request's first byte to the end of its body; 0 = none"),
    F("write_timeout", PG_FT_DURATION, struct rx_server_cfg, write_timeout, "30s", 0, 0,
      "deadline for writing an answer; also how long a request may be held"),
    F("idle_timeout", PG_FT_DURATION, struct rx_server_cfg, idle_timeout, "1m", 0, 0,
      "keep-alive connections idle this long are closed"),
    F("min_body_rate", PG_FT_BYTES, struct rx_server_cfg, min_body_rate, "1KiB", 0, 1e12,
      "bytes/s a body must average after a 2 s grace, or the connection closes (408); 0 = off"),
    F("keep_alives_enabled", PG_FT_BOOL, struct rx_server_cfg, keep_alives_enabled, "true", 0, 0,
      NULL),
    F("response_headers", PG_FT_STRMAP, struct rx_server_cfg, response_headers, NULL, 0, 0,
      "headers added to every response"),
    F("default_service_name", PG_FT_STR, struct rx_server_cfg, default_service_name, NULL, 0, 0,
      "service.name used when none survives the processors (pprofgate extension)"),
    /* Transport security and access control: docs/security.md. */
    {"tls", PG_FT_SECTION, offsetof(struct rx_server_cfg, tls), NULL, 0, 0, pg_tls_server_fields,
     NULL, offsetof(struct rx_server_cfg, has_tls), "serve HTTPS (confighttp tls keys; mTLS with "
     "client_ca_file)"},
    {"auth", PG_FT_SECTION, offsetof(struct rx_server_cfg, auth), NULL, 0, 0, pg_auth_fields, NULL,
     offsetof(struct rx_server_cfg, has_auth), "require a bearer token or basic auth (401)"},
    F("max_request_headers", PG_FT_INT, struct rx_server_cfg, max_request_headers, "100", 1, 10000,
      "header lines per request at most (431 past it)"),
    F("max_connections", PG_FT_INT, struct rx_server_cfg, max_connections, "0", 0, 1e7,
      "open client connections at most, enforced at accept (0 = the fd limit minus a headroom)"),
    F("max_connections_per_peer", PG_FT_INT, struct rx_server_cfg, max_connections_per_peer, "0",
      0, 1e7, "open connections per client address at most, enforced at accept (0 = no limit)"),
    F("max_requests_per_connection", PG_FT_INT, struct rx_server_cfg, max_requests_per_connection,
      "0", 0, 1e9, "keep-alive requests before Connection: close (0 = no limit)"),
    F("workers", PG_FT_INT, struct rx_server_cfg, workers, "-1", -1, MAX_WORKERS,
      "threads that inflate and translate bodies off the event loop (-1 = one per usable CPU, "
      "0 = inline on the loop); see docs/receiver.md"),
    PG_FIELD_END,
};

static const struct pg_field self_fields[] = {
    F("collection_interval", PG_FT_DURATION, struct rx_self_cfg, collection_interval, "60s",
      1e9, 86400e9, "how often pprofgate's own heap profile enters the pipeline"),
    PG_FIELD_END,
};

static const struct pg_field limits_fields[] = {
    F("max_inflated_bytes", PG_FT_BYTES, struct rx_limits_cfg, max_inflated_bytes, "0", 0, 0,
      "per gzip layer inside the body; 0 = server.max_request_body_size"),
    F("max_gzip_layers", PG_FT_INT, struct rx_limits_cfg, max_gzip_layers, "0", 0, 64,
      "0 = default (4)"),
    F("max_samples", PG_FT_INT, struct rx_limits_cfg, max_samples, "0", 0, 1e9, "0 = default"),
    F("max_locations", PG_FT_INT, struct rx_limits_cfg, max_locations, "0", 0, 1e9, "0 = default"),
    F("max_functions", PG_FT_INT, struct rx_limits_cfg, max_functions, "0", 0, 1e9, "0 = default"),
    F("max_mappings", PG_FT_INT, struct rx_limits_cfg, max_mappings, "0", 0, 1e9, "0 = default"),
    F("max_strings", PG_FT_INT, struct rx_limits_cfg, max_strings, "0", 0, 1e9, "0 = default"),
    F("max_string_bytes", PG_FT_BYTES, struct rx_limits_cfg, max_string_bytes, "0", 0, 0,
      "0 = default"),
    F("max_stack_depth", PG_FT_INT, struct rx_limits_cfg, max_stack_depth, "0", 0, 1e6,
      "0 = default"),
    F("max_labels_per_sample", PG_FT_INT, struct rx_limits_cfg, max_labels_per_sample, "0", 0,
      1e6, "0 = default"),
    F("max_sample_types", PG_FT_INT, struct rx_limits_cfg, max_sample_types, "0", 0, 1e4,
      "0 = default"),
    PG_FIELD_END,
};

const struct pg_field pg_pprof_rx_fields[] = {
    {"server", PG_FT_SECTION, offsetof(struct rx_cfg, server), NULL, 0, 0, server_fields, NULL,
     offsetof(struct rx_cfg, has_server), "the POST /v1/pprof push endpoint (confighttp keys)"},
    {"self", PG_FT_SECTION, offsetof(struct rx_cfg, self), NULL, 0, 0, self_fields, NULL,
     offsetof(struct rx_cfg, has_self), "profile pprofgate itself (heap sampler)"},
    F("trace_id_label", PG_FT_STR, struct rx_cfg, trace_id_label, "trace_id", 0, 0,
      "pprof label turned into the sample's Link trace id"),
    F("span_id_label", PG_FT_STR, struct rx_cfg, span_id_label, "span_id", 0, 0,
      "pprof label turned into the sample's Link span id"),
    F("include_original_payload", PG_FT_BOOL, struct rx_cfg, include_original_payload, "false", 0,
      0, "keep the pprof bytes in Profile.original_payload"),
    {"limits", PG_FT_SECTION, offsetof(struct rx_cfg, limits), NULL, 0, 0, limits_fields, NULL,
     PG_NO_PRESENT, "caps on what one pprof may contain (413 past them)"},
    F("scrape", PG_FT_NODE, struct rx_cfg, scrape, NULL, 0, 0,
      "pull mode: Parca scrape_configs (docs/scrape.md)"),
    F("remote", PG_FT_NODE, struct rx_cfg, remote, NULL, 0, 0,
      "pull one URL (the contrib receiver's remote: keys)"),
    PG_FIELD_END,
};
