/* SPDX-License-Identifier: Apache-2.0
 * Field tables of the push receivers' configuration, pprof and pyroscope
 * (collector key names). */
#include "receiver/pprof_config.h"

#include <stddef.h>

#include "http/listener.h"
#include "receiverhelper/http_server_fields.h"
#include "scrape/scrape_config.h"

#define MIB (1024.0 * 1024.0)

const struct pg_field pg_rx_server_fields[] = {
    PG_FIELD(struct rx_server_cfg, "endpoint", PG_FT_STR, endpoint, "localhost:4040",
             "host:port to listen on (\":4040\" = every interface); with transport unix, a "
             "socket path"),
    /* The confighttp rows shared with the otlp receiver's http side. */
    PG_RXH_HTTP_SERVER_FIELDS(struct rx_server_cfg),
    PG_FIELD(struct rx_server_cfg, "default_service_name", PG_FT_STR, default_service_name, NULL,
             "service.name used when none survives the processors (pprofgate extension)"),
    PG_FIELD_RANGE(struct rx_server_cfg, "workers", PG_FT_INT, workers, "-1", -1, MAX_WORKERS,
                   "threads that inflate and translate bodies off the event loop (-1 = one per "
                   "usable CPU, 0 = inline on the loop); see docs/receiver.md"),
    PG_FIELD_RANGE(struct rx_server_cfg, "loops", PG_FT_INT, loops, "0", 0, MAX_LOOPS,
                   "event loops (threads) that accept and handle requests, each on its own "
                   "SO_REUSEPORT socket (0 = one per usable CPU, at most 8; 1 = a single loop); "
                   "see docs/receiver.md"),
    PG_FIELD_END,
};

static const struct pg_field self_fields[] = {
    PG_FIELD_RANGE(struct rx_self_cfg, "collection_interval", PG_FT_DURATION, collection_interval,
                   "60s", 1e9, 86400e9,
                   "how often pprofgate's own heap profile enters the pipeline"),
    PG_FIELD_END,
};

/* Defaults as pg_translate_opts_default sets them (pprof/translate.c); a
 * 0 written in the config also means that default. */
const struct pg_field pg_rx_limits_fields[] = {
    PG_FIELD(struct rx_limits_cfg, "max_inflated_bytes", PG_FT_BYTES, max_inflated_bytes, "0",
             "per gzip layer inside the body; 0 = server.max_request_body_size (20MiB)"),
    PG_FIELD_RANGE(struct rx_limits_cfg, "max_gzip_layers", PG_FT_INT, max_gzip_layers, "4", 0, 64,
                   "gzip layers inside the body"),
    PG_FIELD_RANGE(struct rx_limits_cfg, "max_samples", PG_FT_INT, max_samples, "2097152", 0, 1e9,
                   "OTLP sample records per push (pprof samples x sample types)"),
    PG_FIELD_RANGE(struct rx_limits_cfg, "max_locations", PG_FT_INT, max_locations, "1048576", 0,
                   1e9, "pprof locations"),
    PG_FIELD_RANGE(struct rx_limits_cfg, "max_functions", PG_FT_INT, max_functions, "1048576", 0,
                   1e9, "pprof functions"),
    PG_FIELD_RANGE(struct rx_limits_cfg, "max_mappings", PG_FT_INT, max_mappings, "65536", 0, 1e9,
                   "pprof mappings"),
    PG_FIELD_RANGE(struct rx_limits_cfg, "max_strings", PG_FT_INT, max_strings, "4194304", 0, 1e9,
                   "entries of the string table"),
    PG_FIELD(struct rx_limits_cfg, "max_string_bytes", PG_FT_BYTES, max_string_bytes, "64MiB",
             "bytes of the string table"),
    PG_FIELD_RANGE(struct rx_limits_cfg, "max_stack_depth", PG_FT_INT, max_stack_depth, "4096", 0,
                   1e6, "locations per sample and lines per location"),
    PG_FIELD_RANGE(struct rx_limits_cfg, "max_labels_per_sample", PG_FT_INT, max_labels_per_sample,
                   "256", 0, 1e6, "labels on one sample"),
    PG_FIELD_RANGE(struct rx_limits_cfg, "max_sample_types", PG_FT_INT, max_sample_types, "64", 0,
                   1e4, "sample types of one profile"),
    PG_FIELD_END,
};

const struct pg_field pg_pprof_rx_fields[] = {
    PG_FIELD_SECTION_PRESENT(struct rx_cfg, "server", server, pg_rx_server_fields, has_server,
                             "the POST /v1/pprof push endpoint (confighttp keys)"),
    PG_FIELD_SECTION_PRESENT(struct rx_cfg, "self", self, self_fields, has_self,
                             "profile pprofgate itself (heap sampler)"),
    PG_FIELD(struct rx_cfg, "trace_id_label", PG_FT_STR, trace_id_label, "trace_id",
             "pprof label turned into the sample's Link trace id"),
    PG_FIELD(struct rx_cfg, "span_id_label", PG_FT_STR, span_id_label, "span_id",
             "pprof label turned into the sample's Link span id"),
    PG_FIELD(struct rx_cfg, "include_original_payload", PG_FT_BOOL, include_original_payload,
             "false", "keep the pprof bytes in Profile.original_payload"),
    PG_FIELD_SECTION(struct rx_cfg, "limits", limits, pg_rx_limits_fields,
                     "caps on what one pprof may contain (413 past them)"),
    PG_FIELD_NODE_DOC(struct rx_cfg, "scrape", scrape, pg_scrape_fields, PG_SHAPE_MAP,
                      "pull mode: Parca scrape_configs (docs/scrape.md)"),
    PG_FIELD_NODE_DOC(struct rx_cfg, "remote", remote, pg_scrape_remote_fields, PG_SHAPE_MAP,
                      "pull one URL (the contrib receiver's remote: keys)"),
    PG_FIELD_END,
};

const struct pg_field pg_pyroscope_rx_fields[] = {
    PG_FIELD_SECTION_PRESENT(struct rx_cfg, "server", server, pg_rx_server_fields, has_server,
                             "POST /ingest and the Push API (confighttp keys); on the endpoint of "
                             "a pprof receiver, its listener serves both (the listener's keys "
                             "must match)"),
    PG_FIELD(struct rx_cfg, "trace_id_label", PG_FT_STR, trace_id_label, "trace_id",
             "pprof label turned into the sample's Link trace id"),
    PG_FIELD(struct rx_cfg, "span_id_label", PG_FT_STR, span_id_label, "span_id",
             "pprof label turned into the sample's Link span id"),
    PG_FIELD(struct rx_cfg, "include_original_payload", PG_FT_BOOL, include_original_payload,
             "false", "keep the pprof bytes in Profile.original_payload"),
    PG_FIELD_SECTION(struct rx_cfg, "limits", limits, pg_rx_limits_fields,
                     "caps on what one pprof (or folded upload) may contain (413 past them)"),
    PG_FIELD_END,
};
