/* SPDX-License-Identifier: Apache-2.0
 * service.telemetry: log level, encoding and output paths, the metrics
 * address and readers; checked and applied while the service is built. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/suggest.h"
#include "pipeline/service.h"
#include "pipeline/service_internal.h"

/* ---- the reference (`pprofgate components`) ------------------------------
 * The service section is walked by hand (pg_service_build, the functions
 * below); these tables only list its keys, types and defaults for the
 * reference, next to the code that reads them. */
struct svc_doc {
    const struct pg_cfg_node *node;
};
static const char *const doc_levels[] = {"info", "debug", "warn", "error", "none", NULL};
static const char *const doc_encodings[] = {"console", "logfmt", "json", NULL};
static const struct pg_field doc_logs[] = {
    PG_FIELD_ENUM(struct svc_doc, "level", node, "info", doc_levels, NULL),
    PG_FIELD_ENUM(struct svc_doc, "encoding", node, "console", doc_encodings,
                  "console and logfmt: ts=... level=... comp=... msg=\"...\" lines; json: an object per line"),
    PG_FIELD(struct svc_doc, "output_paths", PG_FT_STRLIST, node, "stderr",
             "stderr, stdout or files (appended), up to 4"),
    PG_FIELD_END,
};
static const struct pg_field doc_prometheus[] = {
    PG_FIELD(struct svc_doc, "host", PG_FT_STR, node, "localhost", NULL),
    PG_FIELD(struct svc_doc, "port", PG_FT_INT, node, NULL, "required"),
    PG_FIELD(struct svc_doc, "without_scope_info", PG_FT_BOOL, node, NULL,
             "accepted, no effect (fixed metric names)"),
    PG_FIELD(struct svc_doc, "without_units", PG_FT_BOOL, node, NULL, "accepted, no effect"),
    PG_FIELD(struct svc_doc, "without_type_suffix", PG_FT_BOOL, node, NULL, "accepted, no effect"),
    PG_FIELD_END,
};
static const struct pg_field doc_exporter[] = {
    PG_FIELD_NODE_DOC(struct svc_doc, "prometheus", node, doc_prometheus, PG_SHAPE_MAP, NULL),
    PG_FIELD_END,
};
static const struct pg_field doc_pull[] = {
    PG_FIELD_NODE_DOC(struct svc_doc, "exporter", node, doc_exporter, PG_SHAPE_MAP, NULL),
    PG_FIELD_END,
};
static const struct pg_field doc_reader[] = {
    PG_FIELD_NODE_DOC(struct svc_doc, "pull", node, doc_pull, PG_SHAPE_MAP,
                      "the one reader pprofgate serves (periodic readers are refused)"),
    PG_FIELD_END,
};
static const struct pg_field doc_metrics[] = {
    PG_FIELD(struct svc_doc, "address", PG_FT_STR, node, NULL,
             "host:port of Prometheus /metrics and /targets; unset = not served"),
    PG_FIELD_NODE_DOC(struct svc_doc, "readers", node, doc_reader, PG_SHAPE_LIST,
                      "the collector's current form of address (one reader; not with address)"),
    PG_FIELD(struct svc_doc, "level", PG_FT_STR, node, NULL, "accepted, no effect"),
    PG_FIELD(struct svc_doc, "auth", PG_FT_NODE, node, NULL,
             "bearer_token_file / basic_auth_file / realm for /metrics, as the extensions' auth"),
    PG_FIELD_END,
};
static const struct pg_field doc_telemetry[] = {
    PG_FIELD_NODE_DOC(struct svc_doc, "logs", node, doc_logs, PG_SHAPE_MAP, NULL),
    PG_FIELD_NODE_DOC(struct svc_doc, "metrics", node, doc_metrics, PG_SHAPE_MAP, NULL),
    PG_FIELD(struct svc_doc, "resource", PG_FT_NODE, node, NULL, "accepted, no effect"),
    PG_FIELD(struct svc_doc, "traces", PG_FT_NODE, node, NULL, "accepted, no effect"),
    PG_FIELD_END,
};
static const struct pg_field doc_pipeline[] = {
    PG_FIELD(struct svc_doc, "receivers", PG_FT_STRLIST, node, NULL, "required: receiver ids"),
    PG_FIELD(struct svc_doc, "processors", PG_FT_STRLIST, node, NULL, "processor ids, in order"),
    PG_FIELD(struct svc_doc, "exporters", PG_FT_STRLIST, node, NULL, "required: exporter ids"),
    PG_FIELD_END,
};
const struct pg_field pg_service_doc_fields[] = {
    PG_FIELD(struct svc_doc, "extensions", PG_FT_STRLIST, node, NULL,
             "extension ids to run (one defined but not listed is not started)"),
    PG_FIELD_NODE_DOC(struct svc_doc, "pipelines", node, doc_pipeline, PG_SHAPE_NAMED,
                      "profiles or profiles/<name>: at least one"),
    PG_FIELD_NODE_DOC(struct svc_doc, "telemetry", node, doc_telemetry, PG_SHAPE_MAP,
                      "pprofgate's own logs and metrics"),
    PG_FIELD(struct svc_doc, "shutdown_delay", PG_FT_STR, node, "0s",
             "pprofgate: after SIGTERM, health_check turns 503 and receivers keep taking data "
             "this long before they stop (0s to 5m; a second signal ends it)"),
    PG_FIELD_END,
};

/* " (did you mean ...)" for a misspelt enum value, or "". */
static const char *closest_choice(struct pg_service *svc, const struct pg_cfg_node *n,
                                  const char *const *choices)
{
    struct pg_suggest sg;

    pg_suggest_init(&sg, n->kind == PG_CFG_SCALAR ? n->value : NULL);
    for (size_t i = 0; choices[i] != NULL; i++) {
        pg_suggest_offer(&sg, choices[i]);
    }
    return pg_cfg_did_you_mean(svc->arena, &sg);
}

/* telemetry.logs.output_paths: a list of "stderr", "stdout" or file paths;
 * opened at start (validate creates no files). */
static void check_log_paths(struct pg_service *svc, const struct pg_cfg_node *paths)
{
    const char *where = "service::telemetry::logs::output_paths";

    if (paths->kind != PG_CFG_SEQ) {
        pg_diag_add(svc->diag, paths, where, "expected a list of paths (stderr, stdout or files)");
        return;
    }
    if (paths->n > PG_LOG_MAX_OUTPUTS) {
        pg_diag_add(svc->diag, paths, where, "at most %d outputs", PG_LOG_MAX_OUTPUTS);
        return;
    }
    for (size_t i = 0; i < paths->n; i++) {
        const struct pg_cfg_node *p = paths->items[i];

        if (p->kind != PG_CFG_SCALAR || p->value == NULL || p->value[0] == '\0') {
            pg_diag_add(svc->diag, p, where, "expected a path (stderr, stdout or a file)");
            return;
        }
        svc->log_paths[svc->n_log_paths++] = p->value;
    }
}

/* The collector's current form of the metrics endpoint:
 *   readers: [{pull: {exporter: {prometheus: {host: 0.0.0.0, port: 8888}}}}]
 * One pull reader with a Prometheus exporter is what pprofgate serves; on
 * success *@out is a scalar node "host:port" (positioned at the reader). */
static void pull_reader(struct pg_service *svc, const struct pg_cfg_node *readers,
                        const struct pg_cfg_node **out)
{
    static const char *const reader_keys[] = {"pull", "periodic", NULL};
    static const char *const pull_keys[] = {"exporter", NULL};
    static const char *const exp_keys[] = {"prometheus", NULL};
    /* The naming options are accepted (configs carry them) and said to be
     * ignored: pprofgate's metric names are fixed. */
    static const char *const prom_keys[] = {"host", "port", "without_scope_info",
                                            "without_units", "without_type_suffix", NULL};
    const char *where = "service::telemetry::metrics::readers";
    const struct pg_cfg_node *r, *prom, *host, *port;
    struct pg_cfg_node *node;
    char *end;
    long v;

    *out = NULL;
    if (readers->kind != PG_CFG_SEQ || readers->n != 1 || readers->items[0]->kind != PG_CFG_MAP) {
        pg_diag_add(svc->diag, readers, where,
                    "expected one reader (pprofgate serves one /metrics endpoint): "
                    "[{pull: {exporter: {prometheus: {host: ..., port: ...}}}}]");
        return;
    }
    r = readers->items[0];
    (void)pg_cfg_check_keys(svc->diag, svc->arena, r, where, reader_keys);
    if (pg_cfg_get(r, "periodic") != NULL) {
        pg_diag_add(svc->diag, pg_cfg_get(r, "periodic"), where,
                    "periodic (push) readers are not supported; use a pull reader with a "
                    "prometheus exporter");
        return;
    }
    (void)pg_cfg_check_keys(svc->diag, svc->arena, pg_cfg_get(r, "pull"),
                            "service::telemetry::metrics::readers::pull", pull_keys);
    (void)pg_cfg_check_keys(svc->diag, svc->arena, pg_cfg_get(pg_cfg_get(r, "pull"), "exporter"),
                            "service::telemetry::metrics::readers::pull::exporter", exp_keys);
    prom = pg_cfg_get(pg_cfg_get(pg_cfg_get(r, "pull"), "exporter"), "prometheus");
    if (prom == NULL || prom->kind != PG_CFG_MAP) {
        pg_diag_add(svc->diag, r, where, "expected pull: {exporter: {prometheus: {...}}}");
        return;
    }
    (void)pg_cfg_check_keys(svc->diag, svc->arena, prom,
                            "service::telemetry::metrics::readers::pull::exporter::prometheus",
                            prom_keys);
    for (size_t i = 2; prom_keys[i] != NULL; i++) {
        if (pg_cfg_get(prom, prom_keys[i]) != NULL) {
            pg_log_info("service", "%s::pull::exporter::prometheus::%s is ignored: pprofgate's "
                                   "metric names are fixed", where, prom_keys[i]);
        }
    }
    host = pg_cfg_get(prom, "host");
    port = pg_cfg_get(prom, "port");
    v = port != NULL && port->kind == PG_CFG_SCALAR ? strtol(port->value, &end, 10) : -1;
    if (port == NULL || port->kind != PG_CFG_SCALAR || *end != '\0' || v < 0 || v > 65535) {
        pg_diag_add(svc->diag, port != NULL ? port : prom,
                    "service::telemetry::metrics::readers::pull::exporter::prometheus::port",
                    "expected a port number (0-65535)");
        return;
    }
    if (host != NULL && host->kind != PG_CFG_SCALAR) {
        pg_diag_add(svc->diag, host,
                    "service::telemetry::metrics::readers::pull::exporter::prometheus::host",
                    "expected a host name or address");
        return;
    }
    node = pg_arena_zalloc(svc->arena, sizeof(*node));
    if (node == NULL) {
        return;
    }
    *node = *(host != NULL ? host : port);
    node->kind = PG_CFG_SCALAR;
    /* The collector's default host is localhost; a bare IPv6 address gets brackets. */
    node->value = pg_arena_sprintf(svc->arena, strchr(host ? host->value : "", ':') ? "[%s]:%ld"
                                                                                    : "%s:%ld",
                                   host != NULL && host->value[0] ? host->value : "localhost", v);
    *out = node->value != NULL ? node : NULL;
}

void pg_service_apply_telemetry(struct pg_service *svc, const struct pg_cfg_node *tel,
                                const char **metrics_addr, const struct pg_cfg_node **metrics_node)
{
    static const char *const tel_keys[] = {"logs", "metrics", "resource", "traces", NULL};
    static const char *const log_keys[] = {"level", "encoding", "output_paths", NULL};
    /* `auth` is pprofgate's own: the admin endpoints' auth block for /metrics. */
    static const char *const met_keys[] = {"address", "readers", "level", "auth", NULL};
    const struct pg_cfg_node *logs;
    const struct pg_cfg_node *met;

    *metrics_addr = NULL;
    *metrics_node = NULL;
    if (tel == NULL || tel->kind == PG_CFG_NULL) {
        return;
    }
    (void)pg_cfg_check_keys(svc->diag, svc->arena, tel, "service::telemetry", tel_keys);
    logs = pg_cfg_get(tel, "logs");
    (void)pg_cfg_check_keys(svc->diag, svc->arena, logs, "service::telemetry::logs", log_keys);
    if (logs != NULL) {
        const struct pg_cfg_node *lvl = pg_cfg_get(logs, "level");
        const struct pg_cfg_node *enc = pg_cfg_get(logs, "encoding");
        const struct pg_cfg_node *paths = pg_cfg_get(logs, "output_paths");
        enum pg_log_level l;
        if (lvl != NULL) {
            if (lvl->kind != PG_CFG_SCALAR || !pg_log_parse_level(lvl->value, &l)) {
                pg_diag_add(svc->diag, lvl, "service::telemetry::logs::level",
                            "\"%s\" is not one of: debug, info, warn, error, none%s",
                            lvl->kind == PG_CFG_SCALAR ? lvl->value : "(not a string)",
                            closest_choice(svc, lvl, doc_levels));
            } else {
                pg_log_set_level(l);
            }
        }
        if (paths != NULL) {
            check_log_paths(svc, paths);
        }
        if (enc != NULL) {
            enum pg_log_encoding e;

            if (enc->kind != PG_CFG_SCALAR || !pg_log_parse_encoding(enc->value, &e)) {
                pg_diag_add(svc->diag, enc, "service::telemetry::logs::encoding",
                            "\"%s\" is not one of: console (key=value lines), logfmt, json%s",
                            enc->kind == PG_CFG_SCALAR ? enc->value : "(not a string)",
                            closest_choice(svc, enc, doc_encodings));
            } else {
                pg_log_set_encoding(e);
            }
        }
    }
    met = pg_cfg_get(tel, "metrics");
    (void)pg_cfg_check_keys(svc->diag, svc->arena, met, "service::telemetry::metrics", met_keys);
    if (met != NULL) {
        const struct pg_cfg_node *addr = pg_cfg_get(met, "address");
        const struct pg_cfg_node *auth = pg_cfg_get(met, "auth");
        (void)pg_cfg_get(met, "level");
        const struct pg_cfg_node *readers = pg_cfg_get(met, "readers");

        if (readers != NULL && addr != NULL) {
            pg_diag_add(svc->diag, readers, "service::telemetry::metrics",
                        "address and readers both set; use one (readers is the current form)");
        } else if (readers != NULL) {
            pull_reader(svc, readers, &addr);
            if (addr != NULL) {
                *metrics_addr = addr->value;
                *metrics_node = addr;
            }
        } else if (addr != NULL && addr->kind == PG_CFG_SCALAR && addr->value[0] != '\0') {
            *metrics_addr = addr->value;
            *metrics_node = addr;
        }
        if (*metrics_addr == NULL && auth != NULL) {
            pg_diag_add(svc->diag, auth, "service::telemetry::metrics::auth",
                        "auth has no effect without address (where /metrics is served)");
        }
    }
}
