/* SPDX-License-Identifier: Apache-2.0
 * The `otlphttp` exporter (alias `otlp_http`): delivers batches as OTLP/HTTP
 * POSTs to <endpoint>/v1development/profiles (or profiles_endpoint) the way
 * the collector's otlphttp exporter does: same keys and defaults, protobuf
 * or JSON bodies, gzip / zstd / none, and its reading of the answer (2xx
 * sent, partial_success logged and counted; 429/502/503/504 retried, with
 * Retry-After honoured on 429/503; every other status dropped). The queue,
 * batching, splitting, retries and the persistent queue are the shared
 * exporter helper's (exporterhelper/); this file is the transport over
 * kept-alive HTTP/1.1 connections (http/client_post.h). All on the main
 * libevent loop. */
#define _GNU_SOURCE /* strptime, timegm */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "codec/gzip.h"
#include "codec/zstd.h"
#include "core/arena.h"
#include "core/clock.h"
#include "core/hostport.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/pb_wire.h"
#include "exporter/client_config.h"
#include "exporter/proto_version.h"
#include "exporterhelper/exporterhelper.h"
#include "http/client_post.h"
#include "exporter/otlphttp.h"
#include "otlp/otlp.h"
#include "otlp/otlp_json.h"
#include "pipeline/component.h"

#define OH_PROFILES_PATH "v1development/profiles"
#define OH_CT_PROTO "application/x-protobuf"
#define OH_CT_JSON "application/json"
/* encoding json: the arena for one part's decode + text, per encoded byte. */
#define OH_JSON_ARENA_RATIO 64u
#define OH_JSON_ARENA_SLACK ((size_t)1 << 20)
/* The collector reads at most this much of an answer. */
#define OH_MAX_RESPONSE (64 * 1024)

/* ---- configuration ------------------------------------------------------- */

struct oh_compression_params {
    int64_t level;
};

struct oh_keepalive_cfg {
    bool enabled;
    int64_t idle_conn_timeout;
};

enum oh_compression { OH_GZIP, OH_ZSTD, OH_NONE };
enum oh_encoding { OH_PROTO, OH_JSON };

struct oh_cfg {
    char *endpoint;
    char *profiles_endpoint;
    struct pg_exp_tls_cfg tls;
    struct pg_strmap headers;
    struct pg_exp_auth_cfg auth;
    bool has_auth;
    int compression; /* enum oh_compression */
    struct oh_compression_params compression_params;
    int encoding; /* enum oh_encoding */
    struct pg_exph_config helper;
    uint64_t max_request_bytes;
    int64_t max_conns_per_host;
    struct oh_keepalive_cfg keepalive;
    int protocol_version; /* enum pg_otlp_proto_version */
};

static const char *const compression_choices[] = {"gzip", "zstd", "none", NULL};
static const char *const encoding_choices[] = {"proto", "json", NULL};

static const struct pg_field compression_params_fields[] = {
    PG_FIELD(struct oh_compression_params, "level", PG_FT_INT, level, "0",
             "gzip: 1..9, 0 or -1 = 6, -2 = 1; zstd: any level (0 = 1, the collector's "
             "fastest)"),
    PG_FIELD_END,
};

static const struct pg_field keepalive_fields[] = {
    PG_FIELD(struct oh_keepalive_cfg, "enabled", PG_FT_BOOL, enabled, "true",
             "reuse connections across requests"),
    PG_FIELD(struct oh_keepalive_cfg, "idle_conn_timeout", PG_FT_DURATION, idle_conn_timeout,
             "90s", "an idle connection older than this is not reused; 0 = no limit"),
    PG_FIELD_END,
};

/* The helper's standard rows (PG_EXPH_FIELDS) but for timeout, whose
 * default here is the collector otlphttp exporter's 30s. */
static const struct pg_field otlphttp_fields[] = {
    PG_FIELD(struct oh_cfg, "endpoint", PG_FT_STR, endpoint, NULL,
             "base URL http(s)://host:port[/prefix]; /v1development/profiles is appended"),
    PG_FIELD(struct oh_cfg, "profiles_endpoint", PG_FT_STR, profiles_endpoint, NULL,
             "the full URL to POST to, used as is (instead of endpoint)"),
    PG_FIELD_SECTION(struct oh_cfg, "tls", tls, pg_exp_tls_fields,
                     "used for https:// endpoints; http:// is plaintext"),
    PG_FIELD(struct oh_cfg, "headers", PG_FT_STRMAP, headers, NULL,
             "static headers sent with every request (${env:VAR} expanded)"),
    PG_FIELD_SECTION_PRESENT(struct oh_cfg, "auth", auth, pg_exp_auth_fields, has_auth, NULL),
    PG_FIELD_ENUM(struct oh_cfg, "compression", compression, "gzip", compression_choices,
                  "Content-Encoding of requests"),
    PG_FIELD_SECTION(struct oh_cfg, "compression_params", compression_params,
                     compression_params_fields, NULL),
    PG_FIELD_ENUM(struct oh_cfg, "encoding", encoding, "proto", encoding_choices,
                  "application/x-protobuf or application/json (OTLP/JSON)"),
    {"timeout", PG_FT_DURATION, offsetof(struct oh_cfg, helper.timeout), "30s", 0, 0, NULL, NULL,
     PG_NO_PRESENT, "per request: connect, send and the whole answer"},
    {"retry_on_failure", PG_FT_SECTION, offsetof(struct oh_cfg, helper.retry), NULL, 0, 0,
     pg_exph_retry_fields, NULL, PG_NO_PRESENT, NULL},
    {"sending_queue", PG_FT_SECTION, offsetof(struct oh_cfg, helper.queue), NULL, 0, 0,
     pg_exph_queue_fields, NULL, PG_NO_PRESENT, NULL},
    {"shutdown_timeout", PG_FT_DURATION, offsetof(struct oh_cfg, helper.shutdown_timeout), "10s",
     0, 0, NULL, NULL, PG_NO_PRESENT,
     "how long shutdown drains the queue before dropping the rest"},
    PG_FIELD_RANGE(struct oh_cfg, "max_request_bytes", PG_FT_BYTES, max_request_bytes, "16MiB",
                   1024, 1e10,
                   "larger requests are split by profiles and samples (uncompressed size)"),
    PG_FIELD_RANGE(struct oh_cfg, "max_conns_per_host", PG_FT_INT, max_conns_per_host, "0", 0,
                   1e6, "connections open at once; 0 = one per sending_queue consumer"),
    PG_FIELD_SECTION(struct oh_cfg, "keepalive", keepalive, keepalive_fields, NULL),
    PG_EXP_VERSION_FIELD(struct oh_cfg, protocol_version),
    PG_FIELD_END,
};

/* ---- state --------------------------------------------------------------- */

struct oh {
    struct pg_exph *helper; /* first: the pg_exph_op_* component ops find it here; owned */
    struct pg_host *host;
    const char *id;
    const char *log;
    struct oh_cfg cfg;
    char *host_name; /* in the config arena */
    unsigned port;
    char *path;      /* in the config arena: what is POSTed to */
    bool tls;
    SSL_CTX *ssl_ctx;
    struct pg_http_pool *pool;
    struct pg_exp_token token;
    char user_agent[96];
    int level;              /* the compressor's level */
    struct pg_metric *m_rejected;
    struct pg_exp_version version; /* protocol_version */
};

/* compression_params.level under confighttp's rules and message: gzip
 * takes -2, -1, 0 and 1..9 (0 = unset), zstd any level (the collector maps
 * unset to its fastest encoder, zstd level 1 here), none only 0. Returns
 * the level to use, or INT32_MIN with the problem in @d. */
static int compression_level(const struct oh_cfg *c, struct pg_diag *d,
                             const struct pg_cfg_node *at, const char *path)
{
    int64_t l = c->compression_params.level;

    if (c->compression == OH_GZIP && l >= -2 && l <= PG_GZIP_LEVEL_MAX) {
        return l == -2 ? 1 : l <= 0 ? PG_GZIP_LEVEL_DEFAULT_VALUE : (int)l;
    }
    if (c->compression == OH_ZSTD && l >= -(1 << 17) && l <= 1000) {
        return l == 0 || l == -1 ? 1 : (int)l;
    }
    if (c->compression == OH_NONE && l == 0) {
        return 0;
    }
    pg_diag_add(d, at, path,
                "unsupported parameters {Level:%" PRId64 "} for compression type \"%s\"", l,
                compression_choices[c->compression]);
    return INT32_MIN;
}

/* ---- endpoint and auth ----------------------------------------------------- */

/* "http(s)://host[:port][/path]": sets host, port (80/443 by default),
 * TLS and the request path (@suffix appended to the endpoint's path). */
static bool parse_url(struct oh *ex, struct pg_arena *a, const char *url, const char *suffix,
                      struct pg_diag *d, const struct pg_cfg_node *at, const char *key)
{
    const char *hp;
    const char *slash;
    char buf[512];
    char host[256];
    unsigned port = 0;
    size_t n;
    const char *path;
    size_t plen;

    if (strncmp(url, "https://", 8) == 0) {
        ex->tls = true;
        hp = url + 8;
    } else if (strncmp(url, "http://", 7) == 0) {
        ex->tls = false;
        hp = url + 7;
    } else {
        pg_diag_add(d, at, key, "\"%s\": expected http://host:port or https://host:port", url);
        return false;
    }
    slash = strchr(hp, '/');
    n = slash != NULL ? (size_t)(slash - hp) : strlen(hp);
    if (n == 0 || n >= sizeof(buf)) {
        pg_diag_add(d, at, key, "\"%s\": no host", url);
        return false;
    }
    memcpy(buf, hp, n);
    buf[n] = '\0';
    if (strchr(buf, ':') == NULL || (buf[0] == '[' && strstr(buf, "]:") == NULL)) {
        /* no port: the scheme's */
        int w = snprintf(buf + n, sizeof(buf) - n, ":%u", ex->tls ? 443u : 80u);

        if (w < 0 || (size_t)w >= sizeof(buf) - n) {
            pg_diag_add(d, at, key, "\"%s\": host too long", url);
            return false;
        }
    }
    if (!pg_hostport_split(buf, host, sizeof(host), &port) || host[0] == '\0' || port == 0) {
        pg_diag_add(d, at, key, "\"%s\": expected host:port or [ipv6]:port, port 1..65535", url);
        return false;
    }
    path = slash != NULL ? slash : "/";
    plen = strlen(path);
    ex->host_name = pg_arena_strdup(a, host);
    ex->port = port;
    if (suffix == NULL) {
        ex->path = pg_arena_strdup(a, path);
    } else {
        /* as the collector: "<endpoint>/" + suffix, without doubling a '/' */
        ex->path = pg_arena_alloc(a, plen + strlen(suffix) + 2);
        if (ex->path != NULL) {
            snprintf(ex->path, plen + strlen(suffix) + 2, "%s%s%s", path,
                     path[plen - 1] == '/' ? "" : "/", suffix);
        }
    }
    return ex->host_name != NULL && ex->path != NULL;
}

/* ---- the body ---------------------------------------------------------------- */

/* The OTLP/JSON text of the protobuf request @enc, into @a, fit for the
 * protocol_version (JSON names fields, so only v1.10's references differ). */
static enum pg_err to_json(struct oh *ex, struct pg_arena *a, const uint8_t *enc, size_t len,
                           char **json, size_t *json_len, struct pg_status *st)
{
    ProtobufCAllocator alloc;
    struct pg_otlp_request *req;
    enum pg_err err;

    pg_arena_protobuf_allocator(a, &alloc);
    req = (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor, &alloc,
                                                               len, enc);
    if (req == NULL) {
        return pg_status_set(st, PG_ERR_INTERNAL, "the encoded request does not decode");
    }
    err = pg_exp_version_prepare(&ex->version, a, req, st);
    return err != PG_ERR_OK ? err : pg_otlp_json_encode(a, &req->base, json, json_len, st);
}

/* Once per part (not per attempt): the encoding (JSON when configured),
 * then the compression. With proto and none the helper sends @enc itself. */
static enum pg_err oh_make_body(void *exporter, const uint8_t *enc, size_t len, uint8_t **body,
                                size_t *body_len, struct pg_status *st)
{
    struct oh *ex = exporter;
    const uint8_t *src = enc;
    size_t src_len = len;
    struct pg_arena *a = NULL;
    uint8_t *old = NULL; /* protobuf in an older protocol_version's layout, malloc'd */
    enum pg_err err = PG_ERR_OK;

    *body = NULL;
    if (ex->cfg.encoding == OH_JSON) {
        char *json = NULL;

        /* The decoded request and its text, for this call only: capped well
         * above what JSON's names, hex ids and quoted int64s add. */
        a = pg_arena_create(len > (SIZE_MAX - OH_JSON_ARENA_SLACK) / OH_JSON_ARENA_RATIO
                                ? SIZE_MAX
                                : len * OH_JSON_ARENA_RATIO + OH_JSON_ARENA_SLACK);
        if (a == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
        }
        err = to_json(ex, a, enc, len, &json, &src_len, st);
        src = (const uint8_t *)json;
    } else {
        size_t old_len = 0;

        err = pg_exp_version_encode(&ex->version, enc, len, &old, &old_len, st);
        if (old != NULL) {
            src = old;
            src_len = old_len;
        }
    }
    if (err == PG_ERR_OK) {
        switch (ex->cfg.compression) {
        case OH_GZIP:
            err = pg_gzip_compress(NULL, src, src_len, ex->level, body, body_len, st);
            break;
        case OH_ZSTD:
            err = pg_zstd_compress(src, src_len, ex->level, body, body_len, st);
            break;
        default:
            if (src == old) {
                *body = old; /* handed over */
                *body_len = src_len;
                old = NULL;
            } else if (src != enc) {
                *body = malloc(src_len ? src_len : 1);
                if (*body == NULL) {
                    err = pg_status_set(st, PG_ERR_NOMEM, "out of memory");
                } else {
                    memcpy(*body, src, src_len);
                    *body_len = src_len;
                }
            }
            break;
        }
    }
    if (a != NULL) {
        pg_arena_destroy(a);
    }
    free(old);
    return err;
}

/* ---- the answer ---------------------------------------------------------------- */

/* Retry-After as the collector reads it: delay-seconds first, then an
 * HTTP-date (RFC 1123 form); the delay in ns, or -1 when it is neither or
 * lies in the past. */
int64_t pg_otlphttp_retry_after(const char *v, int64_t now_unix)
{
    struct tm tm;
    const char *end;
    char *num_end;
    long long secs;

    if (v == NULL) {
        return -1;
    }
    errno = 0;
    secs = strtoll(v, &num_end, 10);
    if (num_end != v && *num_end == '\0' && errno == 0 && (v[0] == '-' || v[0] == '+' ||
                                                          (v[0] >= '0' && v[0] <= '9'))) {
        return secs >= 0 && secs < INT64_MAX / 1000000000LL ? secs * 1000000000LL : -1;
    }
    memset(&tm, 0, sizeof(tm));
    end = strptime(v, "%a, %d %b %Y %H:%M:%S ", &tm);
    if (end == NULL || end[0] < 'A' || end[0] > 'Z') {
        return -1; /* the zone: GMT by RFC 9110; any abbreviation is read as UTC */
    }
    secs = (long long)timegm(&tm) - now_unix;
    return secs > 0 ? secs * 1000000000LL : -1;
}

/* google.rpc.Status.message (field 2) of a 4xx/5xx body, into @out. */
static void status_message(const uint8_t *p, size_t len, char *out, size_t cap)
{
    struct pg_pb r = {p, p + len};
    uint32_t field, wt;
    uint64_t v;
    struct pg_pb sub;

    out[0] = '\0';
    while (r.p < r.end && pg_pb_field(&r, &field, &wt, &v, &sub)) {
        if (field == 2 && wt == PG_PB_LEN) {
            size_t n = (size_t)(sub.end - sub.p);

            snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), (const char *)sub.p);
            return;
        }
    }
}

static void log_partial_success(struct oh *ex, const struct pg_http_post_result *r)
{
    const char *ct = pg_http_post_header(r, "Content-Type");
    struct pg_otlp_response *resp = NULL;
    struct pg_arena *a;
    ProtobufCAllocator alloc;

    if (r->len == 0 || ct == NULL) {
        return;
    }
    a = pg_arena_create(1u << 20);
    if (a == NULL) {
        return;
    }
    pg_arena_protobuf_allocator(a, &alloc);
    /* As the collector: the exact media type, anything else is not read. */
    if (strcmp(ct, OH_CT_PROTO) == 0) {
        resp = (struct pg_otlp_response *)protobuf_c_message_unpack(&pg_otlp_response_descriptor,
                                                                    &alloc, r->len, r->body);
    } else if (strcmp(ct, OH_CT_JSON) == 0) {
        struct pg_status st;
        ProtobufCMessage *m = NULL;

        pg_status_clear(&st);
        if (pg_otlp_json_decode(a, &pg_otlp_response_descriptor, (const char *)r->body, r->len,
                                &m, &st) == PG_ERR_OK) {
            resp = (struct pg_otlp_response *)m;
        }
    } else {
        pg_arena_destroy(a);
        return;
    }
    if (resp == NULL) {
        pg_log_warn(ex->log,
                    "export accepted (HTTP %d) but the %s answer (%zu bytes) does not decode",
                    r->status, ct, r->len);
    } else if (resp->partial_success != NULL &&
               (resp->partial_success->rejected_profiles > 0 ||
                (resp->partial_success->error_message &&
                 resp->partial_success->error_message[0]))) {
        pg_log_warn(ex->log, "partial success: %" PRId64 " profiles rejected: %s",
                    resp->partial_success->rejected_profiles,
                    resp->partial_success->error_message ? resp->partial_success->error_message
                                                         : "");
        if (resp->partial_success->rejected_profiles > 0) {
            pg_metric_add(ex->m_rejected, (uint64_t)resp->partial_success->rejected_profiles);
        }
    }
    pg_arena_destroy(a);
}

static bool status_retryable(int status)
{
    return status == 429 || status == 502 || status == 503 || status == 504;
}

static void on_response(void *arg, const struct pg_http_post_result *r)
{
    struct pg_exph_consumer *c = arg;
    struct oh *ex = pg_exph_consumer_exporter(c);
    struct pg_exph_result res;
    char status[32];
    char reason[32];
    char msg[256];

    memset(&res, 0, sizeof(res));
    res.retry_after_ns = -1;
    res.status = status;
    res.reason = reason;
    res.message = msg;
    if (r->fail != PG_HTTP_OK) {
        /* no answer: retried, as the collector does any transport error */
        snprintf(status, sizeof(status), "%s", pg_http_fail_name(r->fail));
        snprintf(msg, sizeof(msg), "POST %s:%u%s: %s", ex->host_name, ex->port, ex->path, r->why);
        res.outcome = PG_EXPH_RETRYABLE;
        pg_exph_send_done(c, &res);
        return;
    }
    snprintf(status, sizeof(status), "HTTP %d", r->status);
    snprintf(reason, sizeof(reason), "http_%d", r->status);
    if (r->status >= 200 && r->status <= 299) {
        msg[0] = '\0';
        log_partial_success(ex, r);
        res.outcome = PG_EXPH_SENT;
        pg_exph_send_done(c, &res);
        return;
    }
    status_message(r->body, r->len, msg, sizeof(msg));
    if (msg[0] == '\0') {
        snprintf(msg, sizeof(msg), "POST %s:%u%s answered %d", ex->host_name, ex->port, ex->path,
                 r->status);
    }
    res.outcome = status_retryable(r->status) ? PG_EXPH_RETRYABLE : PG_EXPH_PERMANENT;
    if (r->status == 429 || r->status == 503) {
        res.retry_after_ns =
            pg_otlphttp_retry_after(pg_http_post_header(r, "Retry-After"), (int64_t)time(NULL));
    }
    pg_exph_send_done(c, &res);
}

static enum pg_err oh_send(void *exporter, struct pg_exph_consumer *c, const uint8_t *body,
                           size_t len, struct pg_status *st)
{
    struct oh *ex = exporter;
    struct pg_http_header hdrs[64];
    size_t n = 0;
    struct pg_http_post req;

    hdrs[n++] = (struct pg_http_header){"Content-Type",
                                        ex->cfg.encoding == OH_JSON ? OH_CT_JSON : OH_CT_PROTO};
    hdrs[n++] = (struct pg_http_header){"User-Agent", ex->user_agent};
    if (ex->cfg.compression != OH_NONE) {
        hdrs[n++] = (struct pg_http_header){"Content-Encoding",
                                            compression_choices[ex->cfg.compression]};
    }
    pg_exp_token_refresh(&ex->token, ex->log);
    if (ex->token.header != NULL) {
        hdrs[n++] = (struct pg_http_header){"Authorization", ex->token.header};
    }
    for (size_t i = 0; i < ex->cfg.headers.n && n < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
        hdrs[n++] = (struct pg_http_header){ex->cfg.headers.keys[i], ex->cfg.headers.values[i]};
    }
    memset(&req, 0, sizeof(req));
    req.path = ex->path;
    req.headers = hdrs;
    req.n_headers = n;
    req.body = body;
    req.len = len;
    req.timeout_ns = ex->cfg.helper.timeout;
    return pg_http_pool_post(ex->pool, &req, on_response, c, st);
}

static const struct pg_exph_ops oh_transport = {
    .make_body = oh_make_body,
    .send = oh_send,
};

/* ---- component ops ------------------------------------------------------- */

static void oh_free(struct oh *ex)
{
    if (ex->ssl_ctx != NULL) {
        SSL_CTX_free(ex->ssl_ctx);
    }
    pg_exp_token_free(&ex->token);
    free(ex);
}

/* The config checks beyond the field table; returns the problems added. */
static size_t oh_check(struct oh *ex, const struct pg_component_ctx *ctx, const char *path)
{
    const struct oh_cfg *c = &ex->cfg;
    const struct pg_cfg_node *cfg = ctx->config;
    size_t problems = 0;
    bool has_ep = c->endpoint != NULL && c->endpoint[0] != '\0';
    bool has_pep = c->profiles_endpoint != NULL && c->profiles_endpoint[0] != '\0';

    if (!has_ep && !has_pep) {
        pg_diag_add(ctx->diag, cfg, path, "at least one endpoint must be specified");
        return 1;
    }
    if (has_pep ? !parse_url(ex, ctx->config_arena, c->profiles_endpoint, NULL, ctx->diag,
                             cfg ? pg_cfg_get(cfg, "profiles_endpoint") : NULL,
                             "profiles_endpoint")
                : !parse_url(ex, ctx->config_arena, c->endpoint, OH_PROFILES_PATH, ctx->diag,
                             cfg ? pg_cfg_get(cfg, "endpoint") : NULL, "endpoint")) {
        problems++;
    }
    problems += pg_exph_config_check(&c->helper, ctx->diag, cfg, path);
    if (problems == 0) {
        ex->level = compression_level(c, ctx->diag,
                                      cfg ? pg_cfg_get(cfg, "compression_params") : NULL, path);
        problems += ex->level == INT32_MIN;
    }
    return problems;
}

static enum pg_err oh_create(const struct pg_component_ctx *ctx, void **state)
{
    struct oh *ex = calloc(1, sizeof(*ex));
    char path[256];
    size_t problems;
    struct pg_exph_params hp;

    *state = NULL;
    if (ex == NULL) {
        pg_diag_add(ctx->diag, ctx->config, ctx->log_name, "out of memory");
        return PG_ERR_CONFIG;
    }
    ex->host = ctx->host;
    ex->id = ctx->id;
    ex->log = ctx->log_name;
    snprintf(path, sizeof(path), "%s", ctx->path ? ctx->path : "exporters::otlphttp");
    problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, otlphttp_fields, &ex->cfg,
                           path);
    if (problems == 0) {
        problems = oh_check(ex, ctx, path);
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
                                 .ops = &oh_transport,
                                 .exporter = ex};
    ex->helper = pg_exph_new(&hp);
    if (ex->helper == NULL) {
        pg_diag_add(ctx->diag, ctx->config, path, "out of memory");
        oh_free(ex);
        return PG_ERR_CONFIG;
    }
    snprintf(ex->user_agent, sizeof(ex->user_agent), "pprofgate/%s",
             ctx->host && ctx->host->version ? ctx->host->version : "dev");
    *state = ex;
    return PG_ERR_OK;
}

static enum pg_err oh_start(void *state, struct pg_status *st)
{
    struct oh *ex = state;
    struct pg_http_pool_opts po;
    char labels[160];
    char desc[128];
    enum pg_err err;
    int64_t consumers = ex->cfg.helper.queue.enabled ? ex->cfg.helper.queue.num_consumers : 1;

    memset(&po, 0, sizeof(po));
    po.host = ex->host_name;
    po.port = ex->port;
    po.ssl_ctx = ex->ssl_ctx;
    po.server_name = ex->cfg.tls.server_name_override;
    po.verify = !ex->cfg.tls.insecure_skip_verify;
    po.max_conns = (size_t)(ex->cfg.max_conns_per_host > 0 ? ex->cfg.max_conns_per_host
                            : consumers > 0                 ? consumers
                                                            : 1);
    po.idle_timeout_ns = ex->cfg.keepalive.idle_conn_timeout;
    po.max_response = OH_MAX_RESPONSE;
    po.keep_alive = ex->cfg.keepalive.enabled;
    ex->pool = pg_http_pool_new(ex->host->base, &po);
    if (ex->pool == NULL) {
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
    pg_log_info(ex->log, "exporting to %s://%s:%u%s (%s, compression %s, %s%s)",
                ex->tls ? "https" : "http", ex->host_name, ex->port, ex->path,
                encoding_choices[ex->cfg.encoding], compression_choices[ex->cfg.compression],
                desc, pg_exp_version_describe(&ex->version));
    return PG_ERR_OK;
}

static void oh_destroy(void *state)
{
    struct oh *ex = state;

    if (ex == NULL) {
        return;
    }
    pg_exph_stop(ex->helper);
    /* No callbacks after this: requests still on the wire are dropped. */
    pg_http_pool_free(ex->pool);
    pg_exph_free(ex->helper);
    oh_free(ex);
    pg_gzip_thread_release();
}

/* The helper counts with pg_batch_sample_count, encodes lazy samples verbatim and takes an
 * eager copy to split or merge (exporterhelper/request.c). */
static bool lazy_samples_ok(void *state)
{
    (void)state;
    return true;
}

const struct pg_component_ops pg_exporter_otlphttp = {
    .type = "otlphttp",
    .alias = "otlp_http",
    .kind = PG_KIND_EXPORTER,
    .any_thread = true, /* the helper queues under its lock; sending stays on the main loop */
    .lazy_samples = lazy_samples_ok,
    .fields = otlphttp_fields,
    .doc = "OTLP/HTTP POST to /v1development/profiles (protobuf or JSON) with queue, retries, TLS",
    .create = oh_create,
    .start = oh_start,
    .consume = pg_exph_op_consume,
    .would_block = pg_exph_op_would_block,
    .entry_end = pg_exph_op_entry_end,
    .shutdown = pg_exph_op_shutdown,
    .idle = pg_exph_op_idle,
    .destroy = oh_destroy,
};
