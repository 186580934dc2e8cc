/* SPDX-License-Identifier: Apache-2.0
 * The `otlp` exporter (alias `otlp_grpc`): delivers batches to an OTLP/gRPC
 * ProfilesService/Export endpoint the way the collector's otlp exporter does
 * (same config keys and defaults). The sending queue, batching, splitting
 * over max_request_bytes, retries and the persistent queue are the shared
 * exporter helper's (exporterhelper/); this file is the transport: the
 * endpoint, TLS, bearer token, a shared HTTP/2 connection, gRPC framing and
 * compression, and the mapping of gRPC statuses to retryable or permanent
 * (RetryInfo honoured). All on the main libevent loop. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nghttp2/nghttp2ver.h>

#include "codec/gzip.h"
#include "core/log.h"
#include "core/metrics.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_wire.h"
#include "exporter/client_config.h"
#include "exporter/proto_version.h"
#include "exporterhelper/exporterhelper.h"
#include "http/listener.h"
#include "otlp/otlp_encode.h"
#include "pipeline/component.h"

/* ---- configuration ------------------------------------------------------- */

struct ox_keepalive_cfg {
    int64_t time;
    int64_t timeout;
};

enum ox_compression { OX_GZIP, OX_NONE };

struct ox_compression_params {
    int64_t level;
};

struct ox_cfg {
    char *endpoint;
    struct pg_exp_tls_cfg tls;
    bool has_tls;
    struct pg_strmap headers;
    struct pg_exp_auth_cfg auth;
    bool has_auth;
    int compression;              /* enum ox_compression: index into compression_choices */
    struct ox_compression_params compression_params;
    struct pg_exph_config helper; /* timeout, retry_on_failure, sending_queue, shutdown_timeout */
    uint64_t max_request_bytes;
    struct ox_keepalive_cfg keepalive;
    int protocol_version; /* enum pg_otlp_proto_version */
};

static const char *const compression_choices[] = {"gzip", "none", NULL};

static const struct pg_field keepalive_fields[] = {
    PG_FIELD(struct ox_keepalive_cfg, "time", PG_FT_DURATION, time, "30s",
             "PING interval while exports are in flight; 0 = off"),
    PG_FIELD(struct ox_keepalive_cfg, "timeout", PG_FT_DURATION, timeout, "10s",
             "drop the connection when a PING is not answered within this"),
    PG_FIELD_END,
};

static const struct pg_field compression_params_fields[] = {
    PG_FIELD(struct ox_compression_params, "level", PG_FT_INT, level, "0",
             "gzip level: 1 fastest .. 9 smallest; 0 or -1 = 6 (the default); -2 = 1"),
    PG_FIELD_END,
};

static const struct pg_field otlp_fields[] = {
    PG_FIELD(struct ox_cfg, "endpoint", PG_FT_STR, endpoint, NULL,
             "host:port, http://host:port (plaintext) or https://host:port (TLS)"),
    PG_FIELD_SECTION_PRESENT(struct ox_cfg, "tls", tls, pg_exp_tls_fields, has_tls, NULL),
    PG_FIELD(struct ox_cfg, "headers", PG_FT_STRMAP, headers, NULL,
             "static metadata sent with every export (${env:VAR} expanded)"),
    PG_FIELD_SECTION_PRESENT(struct ox_cfg, "auth", auth, pg_exp_auth_fields, has_auth, NULL),
    PG_FIELD_ENUM(struct ox_cfg, "compression", compression, "gzip", compression_choices,
                  "grpc-encoding of requests"),
    PG_FIELD_SECTION(struct ox_cfg, "compression_params", compression_params,
                     compression_params_fields,
                     "as otlphttp's (the collector's gRPC client has none)"),
    PG_EXPH_FIELDS(struct ox_cfg, helper),
    PG_FIELD_RANGE(struct ox_cfg, "max_request_bytes", PG_FT_BYTES, max_request_bytes, "4MiB", 1024,
                   1e10, "larger requests are split by profiles and samples (uncompressed size)"),
    PG_FIELD_SECTION(struct ox_cfg, "keepalive", keepalive, keepalive_fields, NULL),
    PG_EXP_VERSION_FIELD(struct ox_cfg, protocol_version),
    PG_FIELD_END,
};

/* ---- state --------------------------------------------------------------- */

struct ox {
    struct pg_exph *helper; /* first: the pg_exph_op_* component ops find it here; owned */
    struct pg_host *host;
    const char *id;
    const char *log;
    struct ox_cfg cfg;
    char *host_name;
    int port;
    bool tls;
    SSL_CTX *ssl_ctx;
    struct pg_grpc_conn *conn;
    struct pg_exp_token token;
    char user_agent[96];
    int gzip_level;         /* 1..9, from compression_params */
    struct pg_metric *m_rejected;
    struct pg_exp_version version; /* protocol_version */
};

/* compression_params.level with confighttp's rules and message (the
 * collector's gRPC client has no such key and always compresses at Go's
 * default): gzip takes -2 (Huffman-only), -1, 0 and 1..9, 0 meaning unset,
 * and any other compression takes 0 only. libdeflate has no Huffman-only
 * mode, so -2 gets its fastest level. Returns the level to use or -1. */
static int gzip_level(const struct ox_cfg *c, struct pg_diag *d, const struct pg_cfg_node *at,
                      const char *path)
{
    int64_t l = c->compression_params.level;

    if (c->compression == OX_GZIP && l >= -2 && l <= PG_GZIP_LEVEL_MAX) {
        return l == -2 ? 1 : l <= 0 ? PG_GZIP_LEVEL_DEFAULT_VALUE : (int)l;
    }
    if (c->compression != OX_GZIP && l == 0) {
        return 0;
    }
    pg_diag_add(d, at, path,
                "unsupported parameters {Level:%" PRId64 "} for compression type \"%s\"", l,
                compression_choices[c->compression]);
    return -1;
}

/* ---- endpoint and auth ----------------------------------------------------- */

/* "host:port" or "[v6]:port", with an optional http:// or https:// (which
 * sets @tls) and a trailing "/". */
static bool parse_endpoint(struct ox *ex, struct pg_arena *a, const char *ep, struct pg_diag *d,
                           const struct pg_cfg_node *at, const char *path, bool *tls)
{
    const char *hp = ep;
    char buf[512];
    char host[256];
    unsigned port = 0;
    size_t n;

    if (strncmp(ep, "https://", 8) == 0) {
        hp = ep + 8;
        *tls = true;
    } else if (strncmp(ep, "http://", 7) == 0) {
        hp = ep + 7;
        *tls = false;
    }
    n = strlen(hp);
    if (n > 0 && hp[n - 1] == '/') {
        n--;
    }
    if (n < sizeof(buf)) {
        memcpy(buf, hp, n);
        buf[n] = '\0';
    }
    if (n >= sizeof(buf) || !pg_hostport_split(buf, host, sizeof(host), &port) ||
        host[0] == '\0' || port == 0) {
        pg_diag_add(d, at, path, "\"%s\": expected host:port or [ipv6]:port, port 1..65535",
                    ep);
        return false;
    }
    ex->host_name = pg_arena_strndup(a, host, strlen(host));
    ex->port = (int)port;
    return ex->host_name != NULL;
}

/* ---- transport ------------------------------------------------------------- */

/* Once per part (not per attempt): the protocol_version's layout, then the
 * gRPC compression; with the current layout and compression none the helper
 * sends the encoding itself. */
static enum pg_err ox_make_body(void *exporter, const uint8_t *enc, size_t len, uint8_t **body,
                                size_t *body_len, struct pg_status *st)
{
    struct ox *ex = exporter;
    uint8_t *old = NULL; /* the older layout's bytes, malloc'd */
    size_t old_len = 0;
    enum pg_err err = pg_exp_version_encode(&ex->version, enc, len, &old, &old_len, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    if (ex->cfg.compression != OX_GZIP) {
        *body = old;
        *body_len = old_len;
        return PG_ERR_OK;
    }
    err = old != NULL ? pg_gzip_compress(NULL, old, old_len, ex->gzip_level, body, body_len, st)
                      : pg_gzip_compress(NULL, enc, len, ex->gzip_level, body, body_len, st);
    free(old);
    return err;
}

static void log_partial_success(struct ox *ex, const uint8_t *buf, size_t len)
{
    struct pg_otlp_response *resp;

    if (buf == NULL || len == 0) {
        return;
    }
    resp = (struct pg_otlp_response *)protobuf_c_message_unpack(&pg_otlp_response_descriptor, NULL,
                                                                len, buf);
    if (resp == NULL) {
        pg_log_warn(ex->log, "export succeeded but the response (%zu bytes) does not decode", len);
        return;
    }
    if (resp->partial_success != NULL &&
        (resp->partial_success->rejected_profiles > 0 ||
         (resp->partial_success->error_message && resp->partial_success->error_message[0]))) {
        pg_log_warn(ex->log, "partial success: %" PRId64 " profiles rejected: %s",
                    resp->partial_success->rejected_profiles,
                    resp->partial_success->error_message ? resp->partial_success->error_message
                                                         : "");
        if (resp->partial_success->rejected_profiles > 0) {
            pg_metric_add(ex->m_rejected, (uint64_t)resp->partial_success->rejected_profiles);
        }
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
}

static const char *drop_reason(int code)
{
    switch (code) {
    case PG_GRPC_INVALID_ARGUMENT:
        return "invalid_argument";
    case PG_GRPC_RESOURCE_EXHAUSTED:
        return "resource_exhausted";
    case PG_GRPC_UNAUTHENTICATED:
        return "unauthenticated";
    case PG_GRPC_PERMISSION_DENIED:
        return "permission_denied";
    case PG_GRPC_UNIMPLEMENTED:
        return "unimplemented";
    case PG_GRPC_NOT_FOUND:
        return "not_found";
    default:
        return "permanent";
    }
}

static void on_response(void *arg, const struct pg_grpc_result *r)
{
    struct pg_exph_consumer *c = arg;
    struct ox *ex = pg_exph_consumer_exporter(c);
    struct pg_exph_result res;

    res.status = pg_grpc_code_name(r->code);
    res.message = r->message;
    res.reason = drop_reason(r->code);
    res.retry_after_ns = r->has_retry_info ? r->retry_delay_ns : -1;
    if (r->code == PG_GRPC_OK) {
        res.outcome = PG_EXPH_SENT;
        log_partial_success(ex, r->response, r->response_len);
    } else if (!pg_grpc_code_retryable(r->code, r->has_retry_info)) {
        res.outcome = PG_EXPH_PERMANENT;
    } else {
        res.outcome = PG_EXPH_RETRYABLE;
    }
    pg_exph_send_done(c, &res);
}

static enum pg_err ox_send(void *exporter, struct pg_exph_consumer *c, const uint8_t *body,
                           size_t len, struct pg_status *st)
{
    struct ox *ex = exporter;
    struct pg_grpc_header hdrs[64];
    size_t n = 0;
    struct pg_grpc_request req;
    bool gzip = ex->cfg.compression == OX_GZIP;

    hdrs[n++] = (struct pg_grpc_header){"content-type", "application/grpc"};
    hdrs[n++] = (struct pg_grpc_header){"te", "trailers"};
    hdrs[n++] = (struct pg_grpc_header){"user-agent", ex->user_agent};
    if (gzip) {
        hdrs[n++] = (struct pg_grpc_header){"grpc-encoding", "gzip"};
    }
    hdrs[n++] = (struct pg_grpc_header){"grpc-accept-encoding", "identity,gzip"};
    pg_exp_token_refresh(&ex->token, ex->log);
    if (ex->token.header != NULL) {
        hdrs[n++] = (struct pg_grpc_header){"authorization", ex->token.header};
    }
    for (size_t i = 0; i < ex->cfg.headers.n && n < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
        hdrs[n++] = (struct pg_grpc_header){ex->cfg.headers.keys[i], ex->cfg.headers.values[i]};
    }
    memset(&req, 0, sizeof(req));
    req.path = PG_OTLP_EXPORT_PATH;
    req.headers = hdrs;
    req.n_headers = n;
    req.body = body;
    req.body_len = len;
    req.compressed = gzip;
    req.timeout_ns = ex->cfg.helper.timeout;
    return pg_grpc_conn_call(ex->conn, &req, on_response, c, st);
}

static const struct pg_exph_ops ox_transport = {
    .make_body = ox_make_body,
    .send = ox_send,
};

/* ---- component ops ------------------------------------------------------- */

static void ox_free(struct ox *ex)
{
    if (ex->ssl_ctx != NULL) {
        SSL_CTX_free(ex->ssl_ctx);
    }
    pg_exp_token_free(&ex->token);
    free(ex);
}

static enum pg_err ox_create(const struct pg_component_ctx *ctx, void **state)
{
    struct ox *ex = calloc(1, sizeof(*ex));
    char path[256];
    size_t problems;
    bool tls;
    const struct pg_cfg_node *ep_node;
    struct pg_exph_params hp;

    *state = NULL;
    if (ex == NULL) {
        pg_diag_add(ctx->diag, ctx->config, ctx->log_name, "out of memory");
        return PG_ERR_CONFIG;
    }
    ex->host = ctx->host;
    ex->id = ctx->id;
    ex->log = ctx->log_name;
    snprintf(path, sizeof(path), "%s", ctx->path ? ctx->path : "exporters::otlp");
    problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, otlp_fields, &ex->cfg, path);
    ep_node = ctx->config ? pg_cfg_get(ctx->config, "endpoint") : NULL;
    if (ex->cfg.endpoint == NULL || ex->cfg.endpoint[0] == '\0') {
        pg_diag_add(ctx->diag, ctx->config, path, "endpoint is required (host:port)");
        problems++;
    } else {
        tls = !ex->cfg.tls.insecure;
        char ep_path[300];
        snprintf(ep_path, sizeof(ep_path), "%s::endpoint", path);
        if (!parse_endpoint(ex, ctx->config_arena, ex->cfg.endpoint, ctx->diag, ep_node, ep_path,
                            &tls)) {
            problems++;
        }
        ex->tls = tls;
    }
    problems += pg_exph_config_check(&ex->cfg.helper, ctx->diag, ctx->config, path);
    if (problems == 0) {
        ex->gzip_level = gzip_level(&ex->cfg, ctx->diag,
                                    ctx->config ? pg_cfg_get(ctx->config, "compression_params")
                                                : NULL,
                                    path);
        problems += ex->gzip_level < 0;
    }
    if (problems > 0) {
        free(ex);
        return PG_ERR_CONFIG;
    }
    if (ex->tls) {
        struct pg_status st;

        pg_status_clear(&st);
        ex->ssl_ctx = pg_exp_tls_ctx_new(&ex->cfg.tls, &st);
        if (ex->ssl_ctx == NULL) {
            pg_diag_add(ctx->diag, ctx->config, path, "%s", pg_status_text(&st));
            free(ex);
            return PG_ERR_CONFIG;
        }
    }
    if (ex->cfg.has_auth && ex->cfg.auth.bearer_token_file != NULL) {
        ex->token.path = ex->cfg.auth.bearer_token_file;
    }
    hp = (struct pg_exph_params){.id = ctx->id,
                                 .log = ctx->log_name,
                                 .cfg = &ex->cfg.helper,
                                 .max_request_bytes = ex->cfg.max_request_bytes,
                                 .ops = &ox_transport,
                                 .exporter = ex};
    ex->helper = pg_exph_new(&hp);
    if (ex->helper == NULL) {
        pg_diag_add(ctx->diag, ctx->config, path, "out of memory");
        ox_free(ex);
        return PG_ERR_CONFIG;
    }
    snprintf(ex->user_agent, sizeof(ex->user_agent), "pprofgate/%s nghttp2/%s",
             ctx->host && ctx->host->version ? ctx->host->version : "dev", NGHTTP2_VERSION);
    *state = ex;
    return PG_ERR_OK;
}

static enum pg_err ox_start(void *state, struct pg_status *st)
{
    struct ox *ex = state;
    struct pg_grpc_conn_config cc;
    char labels[160];
    char desc[128];
    char level[16];
    enum pg_err err;

    memset(&cc, 0, sizeof(cc));
    cc.host = ex->host_name;
    cc.port = ex->port;
    cc.tls = ex->tls;
    cc.ssl_ctx = ex->ssl_ctx;
    cc.server_name = ex->cfg.tls.server_name_override;
    cc.verify = !ex->cfg.tls.insecure_skip_verify;
    cc.keepalive_time_ns = ex->cfg.keepalive.time;
    cc.keepalive_timeout_ns = ex->cfg.keepalive.timeout;
    cc.connect_timeout_ns = ex->cfg.helper.timeout > 0 ? ex->cfg.helper.timeout : 5000000000LL;
    cc.backoff_initial_ns = 100000000LL;
    cc.backoff_max_ns = 5000000000LL;
    cc.max_response_bytes = 4u << 20;
    cc.log_name = ex->log;
    ex->conn = pg_grpc_conn_new(ex->host->base, &cc);
    if (ex->conn == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "exporter %s: out of memory", ex->id);
    }
    snprintf(labels, sizeof(labels), "exporter=\"%s\"", ex->id);
    ex->m_rejected = pg_metric_counter("pprofgate_exporter_rejected_profiles",
                                       "Profiles the destination rejected in partial_success",
                                       labels);
    pg_exp_version_start(&ex->version, ex->cfg.protocol_version, ex->id, ex->log);
    err = pg_exph_start(ex->helper, ex->host->base, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    pg_exph_describe(ex->helper, desc, sizeof(desc));
    snprintf(level, sizeof(level), " level %d", ex->gzip_level);
    pg_log_info(ex->log, "exporting to %s:%d (%s, compression %s%s, %s%s)", ex->host_name,
                ex->port, ex->tls ? "TLS" : "plaintext", compression_choices[ex->cfg.compression],
                ex->cfg.compression == OX_GZIP ? level : "", desc,
                pg_exp_version_describe(&ex->version));
    pg_grpc_conn_connect(ex->conn);
    return PG_ERR_OK;
}

static void ox_destroy(void *state)
{
    struct ox *ex = state;

    if (ex == NULL) {
        return;
    }
    pg_exph_stop(ex->helper);
    /* No callbacks after this: calls still on the wire are dropped. */
    pg_grpc_conn_free(ex->conn);
    pg_exph_free(ex->helper);
    ox_free(ex);
    /* This thread's gzip compressors; other threads free theirs at exit. */
    pg_gzip_thread_release();
}

/* The helper counts with pg_batch_sample_count, encodes lazy samples verbatim and takes an
 * eager copy to split or merge (exporterhelper/request.c). */
static bool lazy_samples_ok(void *state)
{
    (void)state;
    return true;
}

const struct pg_component_ops pg_exporter_otlp = {
    .type = "otlp",
    .alias = "otlp_grpc",
    .kind = PG_KIND_EXPORTER,
    .any_thread = true, /* the helper queues under its lock; sending stays on the main loop */
    .lazy_samples = lazy_samples_ok,
    .fields = otlp_fields,
    .doc = "OTLP/gRPC ProfilesService/Export with queue, retries, TLS, splitting and batching",
    .create = ox_create,
    .start = ox_start,
    .consume = pg_exph_op_consume,
    .would_block = pg_exph_op_would_block,
    .entry_end = pg_exph_op_entry_end,
    .shutdown = pg_exph_op_shutdown,
    .idle = pg_exph_op_idle,
    .destroy = ox_destroy,
};
