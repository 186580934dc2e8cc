/* SPDX-License-Identifier: Apache-2.0
 * The `otlp` exporter (alias `otlp_grpc`): delivers batches to an OTLP/gRPC
 * ProfilesService/Export endpoint the way the collector's otlp exporter does
 * (same config keys and defaults): a bounded sending queue drained by
 * num_consumers workers, each exporting one request at a time over a shared
 * HTTP/2 connection, retrying only OTLP-retryable failures with exponential
 * backoff (RetryInfo honoured), splitting requests over max_request_bytes and
 * optionally merging pushes into batches. All on the main libevent loop. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <event2/event.h>
#include <nghttp2/nghttp2ver.h>

#include "pipeline/component.h"
#include "core/log.h"
#include "otlp/otlp_encode.h"
#include "core/metrics.h"
#include "core/memlimit.h"
#include "core/spool.h"
#include "core/storage.h"
#include "exporter/grpc_conn.h"
#include "exporter/grpc_wire.h"
#include "exporter/retry.h"
#include "exporter/split.h"
#include "http/tls_client.h"

/* ---- configuration ------------------------------------------------------- */

struct ox_tls_cfg {
    bool insecure;
    char *ca_file;
    char *cert_file;
    char *key_file;
    bool insecure_skip_verify;
    char *server_name_override;
};

struct ox_batch_cfg {
    int64_t flush_timeout;
    int64_t min_size;
    int64_t max_size;
};

struct ox_queue_cfg {
    bool enabled;
    int64_t queue_size;
    int64_t num_consumers;
    bool block_on_overflow;
    struct ox_batch_cfg batch;
    bool has_batch;
    char *storage; /* id of a file_storage extension, or NULL */
    int sizer;     /* index into sizer_choices: the unit of queue_size */
};

enum { SIZER_REQUESTS, SIZER_ITEMS, SIZER_BYTES };

struct ox_keepalive_cfg {
    int64_t time;
    int64_t timeout;
};

struct ox_auth_cfg {
    char *bearer_token_file;
};

struct ox_cfg {
    char *endpoint;
    struct ox_tls_cfg tls;
    bool has_tls;
    struct pg_strmap headers;
    struct ox_auth_cfg auth;
    bool has_auth;
    int compression; /* index into compression_choices */
    int64_t timeout;
    struct pg_retry_config retry;
    struct ox_queue_cfg queue;
    uint64_t max_request_bytes;
    struct ox_keepalive_cfg keepalive;
    int64_t shutdown_timeout;
};

#define F(name, type, st, member, def, lo, hi, doc)                                                \
    {name, type, offsetof(st, member), def, lo, hi, NULL, NULL, PG_NO_PRESENT, doc}
#define S(name, st, member, sub, present, doc)                                                     \
    {name, PG_FT_SECTION, offsetof(st, member), NULL, 0, 0, sub, NULL, present, doc}

static const char *const compression_choices[] = {"gzip", "none", NULL};
static const char *const sizer_choices[] = {"requests", "items", "bytes", NULL};

static const struct pg_field tls_fields[] = {
    F("insecure", PG_FT_BOOL, struct ox_tls_cfg, insecure, "false", 0, 0,
      "plaintext HTTP/2 (h2c); TLS is the default, as in the collector"),
    F("ca_file", PG_FT_STR, struct ox_tls_cfg, ca_file, NULL, 0, 0,
      "PEM CA bundle to verify the server (default: system roots)"),
    F("cert_file", PG_FT_STR, struct ox_tls_cfg, cert_file, NULL, 0, 0,
      "client certificate for mTLS (with key_file)"),
    F("key_file", PG_FT_STR, struct ox_tls_cfg, key_file, NULL, 0, 0, "client private key"),
    F("insecure_skip_verify", PG_FT_BOOL, struct ox_tls_cfg, insecure_skip_verify, "false", 0, 0,
      "do not verify the server certificate"),
    F("server_name_override", PG_FT_STR, struct ox_tls_cfg, server_name_override, NULL, 0, 0,
      "name for SNI and certificate verification instead of the endpoint host"),
    PG_FIELD_END,
};

static const struct pg_field retry_fields[] = {
    F("enabled", PG_FT_BOOL, struct pg_retry_config, enabled, "true", 0, 0, NULL),
    F("initial_interval", PG_FT_DURATION, struct pg_retry_config, initial_interval_ns, "5s", 0, 0,
      NULL),
    F("max_interval", PG_FT_DURATION, struct pg_retry_config, max_interval_ns, "30s", 0, 0, NULL),
    F("max_elapsed_time", PG_FT_DURATION, struct pg_retry_config, max_elapsed_ns, "300s", 0, 0,
      "give up after this long; 0 = never"),
    F("multiplier", PG_FT_DOUBLE, struct pg_retry_config, multiplier, "1.5", 1, 100, NULL),
    F("randomization_factor", PG_FT_DOUBLE, struct pg_retry_config, randomization_factor, "0.5", 0,
      1, "jitter: each wait is drawn from interval*(1 +- factor)"),
    PG_FIELD_END,
};

static const struct pg_field batch_fields[] = {
    F("flush_timeout", PG_FT_DURATION, struct ox_batch_cfg, flush_timeout, "200ms", 0, 0,
      "send a partial batch after this long"),
    F("min_size", PG_FT_INT, struct ox_batch_cfg, min_size, "8192", 0, 1e12,
      "samples that trigger a send"),
    F("max_size", PG_FT_INT, struct ox_batch_cfg, max_size, "0", 0, 1e12,
      "samples per merged request at most; 0 = no limit"),
    PG_FIELD_END,
};

static const struct pg_field queue_fields[] = {
    F("enabled", PG_FT_BOOL, struct ox_queue_cfg, enabled, "true", 0, 0,
      "false: no waiting room, only num_consumers requests in flight"),
    F("queue_size", PG_FT_INT, struct ox_queue_cfg, queue_size, "1000", 1, 1e15,
      "capacity in `sizer` units; when full the receiver answers 503 + Retry-After"),
    {"sizer", PG_FT_ENUM, offsetof(struct ox_queue_cfg, sizer), "requests", 0, 0, NULL,
     sizer_choices, PG_NO_PRESENT,
     "unit of queue_size: requests, items (profile samples) or bytes (memory the queued and "
     "in-flight requests hold; with storage, their encoded size on disk)"},
    F("num_consumers", PG_FT_INT, struct ox_queue_cfg, num_consumers, "10", 1, 1000,
      "concurrent exports (HTTP/2 streams)"),
    F("block_on_overflow", PG_FT_BOOL, struct ox_queue_cfg, block_on_overflow, "false", 0, 0,
      "true: a full queue holds the pushing request (no answer yet) until there is room, up to "
      "the receiver's write_timeout, instead of answering 503 at once"),
    S("batch", struct ox_queue_cfg, batch, batch_fields, offsetof(struct ox_queue_cfg, has_batch),
      "merge pushes into one export with one rebuilt dictionary"),
    F("storage", PG_FT_STR, struct ox_queue_cfg, storage, NULL, 0, 0,
      "id of a file_storage extension: accepted requests are spooled to disk until delivered; "
      "only requests being sent are held in memory"),
    PG_FIELD_END,
};

static const struct pg_field keepalive_fields[] = {
    F("time", PG_FT_DURATION, struct ox_keepalive_cfg, time, "30s", 0, 0,
      "PING interval while exports are in flight; 0 = off"),
    F("timeout", PG_FT_DURATION, struct ox_keepalive_cfg, timeout, "10s", 0, 0,
      "drop the connection when a PING is not answered within this"),
    PG_FIELD_END,
};

static const struct pg_field auth_fields[] = {
    F("bearer_token_file", PG_FT_STR, struct ox_auth_cfg, bearer_token_file, NULL, 0, 0,
      "file holding a token sent as `authorization: Bearer <token>`; re-read when it changes"),
    PG_FIELD_END,
};

static const struct pg_field otlp_fields[] = {
    F("endpoint", PG_FT_STR, struct ox_cfg, endpoint, NULL, 0, 0,
      "host:port, http://host:port (plaintext) or https://host:port (TLS)"),
    S("tls", struct ox_cfg, tls, tls_fields, offsetof(struct ox_cfg, has_tls), NULL),
    F("headers", PG_FT_STRMAP, struct ox_cfg, headers, NULL, 0, 0,
      "static metadata sent with every export (${env:VAR} expanded)"),
    S("auth", struct ox_cfg, auth, auth_fields, offsetof(struct ox_cfg, has_auth), NULL),
    {"compression", PG_FT_ENUM, offsetof(struct ox_cfg, compression), "gzip", 0, 0, NULL,
     compression_choices, PG_NO_PRESENT, "grpc-encoding of requests"},
    F("timeout", PG_FT_DURATION, struct ox_cfg, timeout, "5s", 0, 0, "per attempt"),
    S("retry_on_failure", struct ox_cfg, retry, retry_fields, PG_NO_PRESENT, NULL),
    S("sending_queue", struct ox_cfg, queue, queue_fields, PG_NO_PRESENT, NULL),
    F("max_request_bytes", PG_FT_BYTES, struct ox_cfg, max_request_bytes, "4MiB", 1024, 1e10,
      "larger requests are split by profiles and samples (uncompressed size)"),
    S("keepalive", struct ox_cfg, keepalive, keepalive_fields, PG_NO_PRESENT, NULL),
    F("shutdown_timeout", PG_FT_DURATION, struct ox_cfg, shutdown_timeout, "10s", 0, 0,
      "how long shutdown drains the queue before dropping the rest"),
    PG_FIELD_END,
};

/* ---- state --------------------------------------------------------------- */

/* One queued export: references to one or more batches (several when
 * sending_queue.batch merged them). */
struct ox_item {
    struct ox_item *next;
    struct pg_batch **batches; /* owned references */
    size_t n_batches;
    size_t cap_batches;
    size_t samples;
    /* With storage the batches are not kept: the item names spool records
     * (owned array of ids), read back when a consumer sends it. Acked when
     * the item is freed, unless keep_spooled (shutdown/abort: replayed at
     * the next start). */
    struct pg_spool *spool;    /* borrowed from struct ox */
    uint64_t *spool_ids;
    size_t n_spool_ids;
    bool keep_spooled;
    uint8_t *raw;              /* owned: a replayed record already read (one id) */
    size_t raw_len;
    bool count_samples;        /* samples unknown (replayed, bisected): count when decoded */
    struct ox *ex;             /* borrowed: whose q_used @units are charged to */
    uint64_t units;            /* what it counts against queue_size (sizer units) */
};

struct ox_part {
    uint8_t *wire;   /* malloc'd message bytes (gzip'd when compression on) */
    size_t len;
    size_t samples;
};

struct ox_worker {
    struct ox *ex;
    struct ox_item *item; /* NULL when free */
    struct ox_part *parts;
    size_t n_parts;
    size_t cur;
    struct pg_retry_state retry;
    struct event *timer;  /* retry wait */
    bool in_call;
    bool abandoned; /* dropped by abort_all while its call was on the wire */
    uint64_t win_bytes; /* spooled bytes its item holds, charged to ex->win_used */
};

struct ox_token {
    char *path;
    char *header; /* "Bearer <token>" (malloc) */
    struct timespec mtime;
    off_t size;
    bool ok;
};

struct ox {
    struct pg_host *host;
    const char *id;
    const char *log;
    struct ox_cfg cfg;
    char *host_name;
    int port;
    bool tls;
    SSL_CTX *ssl_ctx;
    struct pg_grpc_conn *conn;
    struct ox_token token;
    char user_agent[96];

    struct ox_item *q_head, *q_tail;
    size_t q_len;
    size_t q_cap;
    int sizer;
    uint64_t q_limit;            /* queue_size, in sizer units */
    uint64_t q_used;             /* units of queued, pending and in-flight items */
    struct event *replay_timer;  /* replay paused by the memory limit */
    struct ox_item *pending;     /* batch being accumulated (sending_queue.batch) */
    struct event *flush_timer;
    struct event *pump_ev;

    struct ox_worker *workers;
    size_t n_workers;
    size_t busy;

    bool started;
    bool shutting_down;
    bool aborted;
    struct event *shutdown_timer;
    uint64_t seed;

    struct pg_metric *m_sent, *m_failed, *m_enqueue_failed, *m_retries, *m_rejected;
    struct pg_metric *m_sent_requests, *m_capacity, *m_qsize, *m_inflight;
    char labels[160];

    /* Persistent queue (sending_queue.storage). */
    struct pg_spool *spool;      /* owned; NULL without storage */
    uint64_t replay_after;       /* replay cursor: last record id taken */
    bool replay_done;
    size_t replayed;
    /* The in-memory window of a persistent queue: stored bytes read back and
     * held by consumers (replayed or queued), charged to memory_limiter's
     * in-flight bytes too. A consumer takes a record only while it fits,
     * except when the window is empty (a larger record is sent alone). */
    uint64_t win_limit, win_used;
};

static void worker_run(struct ox_worker *w);
static void pump(struct ox *ex);
static struct ox_item *replay_take(struct ox *ex);
static bool bisect(struct ox_worker *w, const char *why);

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timeval tv_of(int64_t ns)
{
    struct timeval tv;

    if (ns < 0) {
        ns = 0;
    }
    tv.tv_sec = ns / 1000000000LL;
    tv.tv_usec = (ns % 1000000000LL) / 1000;
    return tv;
}

static void count_drop(struct ox *ex, const char *reason, size_t samples)
{
    char labels[256];

    snprintf(labels, sizeof(labels), "%s,reason=\"%s\"", ex->labels, reason);
    pg_metric_add(pg_metric_counter("pprofgate_exporter_dropped_profile_samples",
                                    "Samples the exporter gave up on, by reason", labels),
                  samples);
    pg_metric_add(ex->m_failed, samples);
}

static void item_free(struct ox_item *it)
{
    if (it == NULL) {
        return;
    }
    if (it->ex != NULL) {
        it->ex->q_used -= it->units;
    }
    /* Delivered or dropped for good => off the spool. */
    for (size_t i = 0; it->spool != NULL && !it->keep_spooled && i < it->n_spool_ids; i++) {
        struct pg_status st;

        if (pg_spool_ack(it->spool, it->spool_ids[i], &st) != PG_ERR_OK) {
            pg_log_warn("exporter/otlp", "%s", pg_status_text(&st));
        }
    }
    free(it->spool_ids);
    free(it->raw);
    for (size_t i = 0; i < it->n_batches; i++) {
        pg_batch_unref(it->batches[i]);
    }
    free(it->batches);
    free(it);
}

static bool item_add(struct ox_item *it, struct pg_batch *b, size_t samples)
{
    if (it->n_batches == it->cap_batches) {
        size_t ncap = it->cap_batches ? it->cap_batches * 2 : 4;
        struct pg_batch **nb = realloc(it->batches, ncap * sizeof(*nb));

        if (nb == NULL) {
            return false;
        }
        it->batches = nb;
        it->cap_batches = ncap;
    }
    it->batches[it->n_batches++] = pg_batch_ref(b);
    it->samples += samples;
    return true;
}

/* Gauges are pushed on every change (a render-time callback could outlive us). */
static void update_gauges(struct ox *ex)
{
    if (ex->m_qsize != NULL) {
        pg_metric_set(ex->m_qsize, ex->sizer == SIZER_REQUESTS
                                       ? (int64_t)(ex->q_len + (ex->pending != NULL))
                                       : (int64_t)ex->q_used);
        pg_metric_set(ex->m_inflight, (int64_t)ex->busy);
    }
}

/* ---- endpoint and auth ----------------------------------------------------- */

static bool parse_endpoint(struct ox *ex, struct pg_arena *a, const char *ep, struct pg_diag *d,
                           const struct pg_cfg_node *at, bool *tls)
{
    const char *hp = ep;
    const char *colon;
    char *end;
    long port;

    if (strncmp(ep, "https://", 8) == 0) {
        hp = ep + 8;
        *tls = true;
    } else if (strncmp(ep, "http://", 7) == 0) {
        hp = ep + 7;
        *tls = false;
    }
    if (hp[0] == '[') {
        const char *rb = strchr(hp, ']');

        if (rb == NULL || rb[1] != ':') {
            pg_diag_add(d, at, "endpoint", "\"%s\": expected [ipv6]:port", ep);
            return false;
        }
        ex->host_name = pg_arena_strndup(a, hp + 1, (size_t)(rb - hp - 1));
        colon = rb + 1;
    } else {
        colon = strrchr(hp, ':');
        if (colon == NULL || colon == hp) {
            pg_diag_add(d, at, "endpoint", "\"%s\": expected host:port", ep);
            return false;
        }
        ex->host_name = pg_arena_strndup(a, hp, (size_t)(colon - hp));
    }
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno != 0 || (*end != '\0' && strcmp(end, "/") != 0) || port < 1 || port > 65535) {
        pg_diag_add(d, at, "endpoint", "\"%s\": port must be 1..65535", ep);
        return false;
    }
    ex->port = (int)port;
    return ex->host_name != NULL;
}

/* Re-reads the token file when its mtime or size changed. */
static void token_refresh(struct ox *ex)
{
    struct ox_token *t = &ex->token;
    struct stat sb;
    FILE *f;
    char buf[8192];
    size_t n;

    if (t->path == NULL) {
        return;
    }
    if (stat(t->path, &sb) != 0) {
        if (t->ok) {
            pg_log_warn(ex->log, "bearer_token_file %s: %s (keeping the last token)", t->path,
                        strerror(errno));
        }
        return;
    }
    if (t->header != NULL && sb.st_mtim.tv_sec == t->mtime.tv_sec &&
        sb.st_mtim.tv_nsec == t->mtime.tv_nsec && sb.st_size == t->size) {
        return;
    }
    f = fopen(t->path, "r");
    if (f == NULL) {
        pg_log_warn(ex->log, "bearer_token_file %s: %s", t->path, strerror(errno));
        return;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) {
        n--;
    }
    buf[n] = '\0';
    free(t->header);
    t->header = malloc(n + 8);
    if (t->header != NULL) {
        snprintf(t->header, n + 8, "Bearer %s", buf);
    }
    t->mtime = sb.st_mtim;
    t->size = sb.st_size;
    t->ok = t->header != NULL;
    pg_log_info(ex->log, "loaded bearer token from %s", t->path);
}

/* ---- export ---------------------------------------------------------------- */

static void worker_release(struct ox_worker *w)
{
    for (size_t i = 0; i < w->n_parts; i++) {
        free(w->parts[i].wire);
    }
    free(w->parts);
    w->parts = NULL;
    w->n_parts = 0;
    w->cur = 0;
    item_free(w->item);
    w->item = NULL;
    w->ex->busy--;
    if (w->win_bytes > 0) {
        w->ex->win_used -= w->win_bytes;
        pg_memlimit_release((size_t)w->win_bytes);
        w->win_bytes = 0;
        if (w->ex->pump_ev != NULL) {
            event_active(w->ex->pump_ev, 0, 0); /* consumers held back by the window */
        }
    }
}

/* Decodes one spooled record into @arena; NULL when it does not decode. */
static const struct pg_otlp_request *decode_record(struct pg_arena *arena, const uint8_t *data,
                                                   size_t len)
{
    ProtobufCAllocator alloc;

    pg_arena_protobuf_allocator(arena, &alloc);
    return (const struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor,
                                                                      &alloc, len, data);
}

/* Encodes (and compresses) the item into parts; returns false when nothing
 * is left to send (everything dropped and counted). A spooled item is read
 * back from disk here, one consumer at a time: a record that fits
 * max_request_bytes goes out as stored (never encoded twice); only merges
 * and splits decode. */
static bool worker_prepare(struct ox_worker *w)
{
    struct ox *ex = w->ex;
    struct ox_item *it = w->item;
    struct pg_arena *arena = pg_arena_create(0);
    struct pg_status st;
    const struct pg_otlp_request **srcs = NULL;
    size_t n_src = 0;
    struct pg_split_result res;
    enum pg_err err = PG_ERR_NOMEM;
    bool single = false;
    uint8_t *single_wire = NULL;
    size_t single_len = 0;
    uint8_t **loaded = NULL; /* malloc'd records read back (spooled items) */
    size_t n_loaded = 0;

    pg_status_clear(&st);
    memset(&res, 0, sizeof(res));
    if (arena == NULL) {
        goto fail;
    }
    if (it->n_batches > 0) {
        srcs = pg_arena_calloc(arena, it->n_batches, sizeof(*srcs));
        if (srcs == NULL) {
            goto fail;
        }
        for (size_t i = 0; i < it->n_batches; i++) {
            srcs[n_src++] = it->batches[i]->req;
        }
        if (it->n_batches == 1) {
            /* Encoded once: the size decides, and a request that fits is sent as is. */
            err = pg_otlp_request_encode(srcs[0], arena, &single_wire, &single_len, &st);
            if (err != PG_ERR_OK) {
                goto fail;
            }
            single = single_len <= ex->cfg.max_request_bytes;
        }
    } else if (it->n_spool_ids > 0) {
        size_t *lens = calloc(it->n_spool_ids, sizeof(*lens));
        bool counted = !it->count_samples;

        loaded = calloc(it->n_spool_ids, sizeof(*loaded));
        srcs = pg_arena_calloc(arena, it->n_spool_ids, sizeof(*srcs));
        if (lens == NULL || loaded == NULL || srcs == NULL) {
            free(lens);
            goto fail;
        }
        for (size_t i = 0; i < it->n_spool_ids; i++) {
            uint8_t *data = NULL;
            size_t len = 0;

            if (it->raw != NULL && i == 0) {
                data = it->raw; /* replayed: already read (and checksummed) */
                len = it->raw_len;
                it->raw = NULL;
            } else if (pg_spool_read(ex->spool, it->spool_ids[i], &data, &len, &st) !=
                       PG_ERR_OK) {
                pg_log_error(ex->log, "%s", pg_status_text(&st));
                pg_status_clear(&st);
                continue;
            }
            loaded[n_loaded] = data;
            lens[n_loaded++] = len;
        }
        if (!counted && n_loaded == 1 && lens[0] <= ex->cfg.max_request_bytes &&
            pg_otlp_wire_samples(loaded[0], lens[0], &it->samples)) {
            counted = true; /* read off the wire bytes: no decode needed */
        }
        if (n_loaded == 1 && lens[0] <= ex->cfg.max_request_bytes && counted) {
            single = true;
            single_wire = loaded[0];
            single_len = lens[0];
        } else {
            if (it->count_samples) {
                it->samples = 0;
            }
            for (size_t i = 0; i < n_loaded; i++) {
                const struct pg_otlp_request *req = decode_record(arena, loaded[i], lens[i]);

                if (req == NULL) {
                    pg_log_error(ex->log, "a spooled request (%zu bytes) does not decode; dropped",
                                 lens[i]);
                    continue;
                }
                if (it->count_samples) {
                    it->samples += pg_otlp_request_samples(req);
                }
                srcs[n_src++] = req;
            }
            if (n_loaded == 1 && n_src == 1 && lens[0] <= ex->cfg.max_request_bytes) {
                /* Decoded only to count its samples: the stored bytes still go out. */
                single = true;
                single_wire = loaded[0];
                single_len = lens[0];
            }
        }
        free(lens);
        if (n_src == 0 && !single) {
            free(loaded);
            pg_arena_destroy(arena);
            return false;
        }
    }
    if (single) {
        res.parts = pg_arena_calloc(arena, 1, sizeof(*res.parts));
        if (res.parts == NULL) {
            goto fail;
        }
        res.n_parts = 1;
        res.parts[0].req = NULL; /* the wire bytes are given */
        res.parts[0].samples = it->samples;
        res.parts[0].bytes = single_len;
        res.parts[0].wire = single_wire;
    } else {
        err = pg_otlp_split(srcs, n_src, ex->cfg.max_request_bytes, arena, &res, &st);
        if (err != PG_ERR_OK) {
            goto fail;
        }
        if (res.dropped_samples > 0 || res.dropped_profiles > 0) {
            pg_log_warn(ex->log,
                        "dropped %zu samples (%zu whole profiles) larger than max_request_bytes "
                        "%" PRIu64 " on their own",
                        res.dropped_samples, res.dropped_profiles, ex->cfg.max_request_bytes);
            count_drop(ex, "too_large", res.dropped_samples);
        }
        if (res.n_parts > 1) {
            pg_log_debug(ex->log, "split a request of %zu samples into %zu parts", it->samples,
                         res.n_parts);
        }
    }
    w->parts = calloc(res.n_parts ? res.n_parts : 1, sizeof(*w->parts));
    if (w->parts == NULL) {
        goto fail;
    }
    w->n_parts = res.n_parts;
    for (size_t i = 0; i < res.n_parts; i++) {
        /* Every part comes encoded (split or the single path above); the
         * encoding lives in @arena, the wire copy is the worker's. */
        const uint8_t *enc = res.parts[i].wire;
        size_t n = res.parts[i].bytes;

        if (enc == NULL) {
            uint8_t *tmp = NULL;

            err = pg_otlp_request_encode(res.parts[i].req, arena, &tmp, &n, &st);
            if (err != PG_ERR_OK) {
                goto fail;
            }
            enc = tmp;
        }
        w->parts[i].samples = res.parts[i].samples;
        if (compression_choices[ex->cfg.compression][0] == 'g') {
            err = pg_gzip_compress(enc, n, 6, &w->parts[i].wire, &w->parts[i].len, &st);
            if (err != PG_ERR_OK) {
                goto fail;
            }
        } else {
            uint8_t *raw = malloc(n ? n : 1);

            if (raw == NULL) {
                goto fail;
            }
            if (n > 0) {
                memcpy(raw, enc, n);
            }
            w->parts[i].wire = raw;
            w->parts[i].len = n;
        }
    }
    pg_arena_destroy(arena);
    for (size_t i = 0; i < n_loaded; i++) {
        free(loaded[i]);
    }
    free(loaded);
    return w->n_parts > 0;

fail:
    pg_log_error(ex->log, "cannot encode an export of %zu samples: %s", it->samples,
                 st.code ? pg_status_text(&st) : "out of memory");
    count_drop(ex, "encode", it->samples);
    pg_arena_destroy(arena);
    for (size_t i = 0; i < n_loaded; i++) {
        free(loaded[i]);
    }
    free(loaded);
    for (size_t i = 0; i < w->n_parts; i++) {
        free(w->parts[i].wire);
        w->parts[i].wire = NULL;
    }
    w->n_parts = 0;
    return false;
}

static void on_response(void *arg, const struct pg_grpc_result *r);

static void send_part(struct ox_worker *w)
{
    struct ox *ex = w->ex;
    struct ox_part *p = &w->parts[w->cur];
    struct pg_grpc_header hdrs[64];
    size_t n = 0;
    struct pg_grpc_request req;
    struct pg_status st;
    bool gzip = compression_choices[ex->cfg.compression][0] == 'g';

    hdrs[n++] = (struct pg_grpc_header){"content-type", "application/grpc"};
    hdrs[n++] = (struct pg_grpc_header){"te", "trailers"};
    hdrs[n++] = (struct pg_grpc_header){"user-agent", ex->user_agent};
    if (gzip) {
        hdrs[n++] = (struct pg_grpc_header){"grpc-encoding", "gzip"};
    }
    hdrs[n++] = (struct pg_grpc_header){"grpc-accept-encoding", "identity,gzip"};
    token_refresh(ex);
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
    req.body = p->wire;
    req.body_len = p->len;
    req.compressed = gzip;
    req.timeout_ns = ex->cfg.timeout;
    pg_status_clear(&st);
    w->in_call = true;
    if (pg_grpc_conn_call(ex->conn, &req, on_response, w, &st) != PG_ERR_OK) {
        w->in_call = false;
        pg_log_error(ex->log, "cannot start an export: %s", pg_status_text(&st));
        count_drop(ex, "internal", p->samples);
        w->cur++;
        worker_run(w);
    }
}

static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    struct ox_worker *w = arg;

    (void)fd;
    (void)what;
    send_part(w);
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
    struct ox_worker *w = arg;
    struct ox *ex = w->ex;
    struct ox_part *p;
    int64_t wait;

    w->in_call = false;
    if (w->abandoned) {
        /* The body was borrowed by the call until now: release it only here. */
        w->abandoned = false;
        worker_release(w);
        update_gauges(ex);
        return;
    }
    p = &w->parts[w->cur];
    if (r->code == PG_GRPC_OK) {
        pg_metric_add(ex->m_sent, p->samples);
        pg_metric_add(ex->m_sent_requests, 1);
        log_partial_success(ex, r->response, r->response_len);
        w->cur++;
        worker_run(w);
        return;
    }
    if (!pg_grpc_code_retryable(r->code, r->has_retry_info)) {
        if (w->cur == 0 && w->n_parts == 1 && bisect(w, pg_grpc_code_name(r->code))) {
            worker_release(w);
            worker_run(w);
            pump(ex);
            return;
        }
        pg_log_error(ex->log, "export of %zu samples rejected, not retryable: %s: %s",
                     p->samples, pg_grpc_code_name(r->code), r->message);
        count_drop(ex, drop_reason(r->code), p->samples);
        w->cur++;
        worker_run(w);
        return;
    }
    if (!pg_retry_next(&w->retry, &ex->cfg.retry, now_ns(),
                       r->has_retry_info ? r->retry_delay_ns : -1, &wait)) {
        pg_log_error(ex->log, "export of %zu samples failed%s: %s: %s", p->samples,
                     ex->cfg.retry.enabled ? ", retries exhausted" : " (retry_on_failure disabled)",
                     pg_grpc_code_name(r->code), r->message);
        count_drop(ex, ex->cfg.retry.enabled ? "retry_exhausted" : "retry_disabled", p->samples);
        w->cur++;
        worker_run(w);
        return;
    }
    pg_log_info(ex->log, "export of %zu samples failed (%s: %s); retrying in %lld ms", p->samples,
                pg_grpc_code_name(r->code), r->message, (long long)(wait / 1000000));
    pg_metric_add(ex->m_retries, 1);
    {
        struct timeval tv = tv_of(wait);

        evtimer_add(w->timer, &tv);
    }
}

/* Sends the current part, or finishes the item and picks up the next. */
static void worker_run(struct ox_worker *w)
{
    struct ox *ex = w->ex;

    for (;;) {
        if (w->item != NULL && w->cur < w->n_parts) {
            pg_retry_begin(&w->retry, &ex->cfg.retry, now_ns(), ex->seed++ * 0x9e3779b97f4a7c15ULL);
            send_part(w);
            return;
        }
        if (w->item != NULL) {
            worker_release(w);
        }
        if (ex->aborted) {
            update_gauges(ex);
            return;
        }
        if (ex->spool != NULL && ex->win_limit == 0) {
            /* Set once every component started (memory_limiter starts after
             * exporters): 64 MiB, at most the bytes budget and a quarter of
             * memory_limiter's soft limit (the rest is for requests being
             * received). */
            uint64_t soft = pg_memlimit_soft_limit();

            ex->win_limit = 64u << 20;
            if (ex->sizer == SIZER_BYTES && ex->q_limit < ex->win_limit) {
                ex->win_limit = ex->q_limit;
            }
            if (soft > 0 && soft / 4 < ex->win_limit) {
                ex->win_limit = soft / 4;
            }
            if (ex->win_limit == 0) {
                ex->win_limit = 1; /* one record at a time */
            }
            pg_log_info(ex->log, "persistent queue: at most %" PRIu64 " bytes of spooled "
                        "requests read back into memory at a time (one larger request alone)",
                        ex->win_limit);
        }
        /* The previous run's backlog first (one record per take), so this
         * run's pushes queue behind it. */
        if (ex->spool != NULL && !ex->replay_done) {
            uint64_t nid;
            size_t nlen;

            if (!ex->shutting_down && ex->win_used > 0 &&
                pg_spool_peek_replay(ex->spool, ex->replay_after, &nid, &nlen) &&
                ex->win_used + nlen > ex->win_limit) {
                update_gauges(ex); /* the window is full: a release pumps again */
                return;
            }
            w->item = ex->shutting_down ? NULL : replay_take(ex);
            if (w->item == NULL && !ex->replay_done && !ex->shutting_down) {
                update_gauges(ex); /* paused by the memory limit: the timer resumes */
                return;
            }
        }
        if (w->item == NULL) {
            if (ex->q_head == NULL) {
                update_gauges(ex);
                return;
            }
            if (ex->spool != NULL && ex->q_head->n_spool_ids > 0) {
                uint64_t need = 0;

                for (size_t i = 0; i < ex->q_head->n_spool_ids; i++) {
                    need += pg_spool_record_len(ex->spool, ex->q_head->spool_ids[i]);
                }
                if (ex->win_used > 0 && ex->win_used + need > ex->win_limit) {
                    update_gauges(ex); /* the window is full: a release pumps again */
                    return;
                }
                w->win_bytes = need;
            }
            w->item = ex->q_head;
            ex->q_head = w->item->next;
            if (ex->q_head == NULL) {
                ex->q_tail = NULL;
            }
            ex->q_len--;
        }
        if (w->item->raw != NULL) {
            w->win_bytes = w->item->raw_len; /* replayed: read already */
        }
        if (w->win_bytes > 0) {
            ex->win_used += w->win_bytes;
            pg_memlimit_charge((size_t)w->win_bytes);
        }
        ex->busy++;
        if (!worker_prepare(w)) {
            worker_release(w);
        }
    }
}

static bool has_work(const struct ox *ex)
{
    return ex->q_head != NULL ||
           (ex->spool != NULL && !ex->replay_done && !ex->shutting_down && !ex->aborted);
}

static void pump(struct ox *ex)
{
    for (size_t i = 0; i < ex->n_workers && has_work(ex); i++) {
        if (ex->workers[i].item == NULL) {
            worker_run(&ex->workers[i]);
        }
    }
}

static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pump(arg);
}

/* Queues @it; consumers pick it up from the loop, so the receiver's answer
 * is never delayed by encoding or splitting. */
static void enqueue(struct ox *ex, struct ox_item *it)
{
    it->next = NULL;
    if (ex->q_tail != NULL) {
        ex->q_tail->next = it;
    } else {
        ex->q_head = it;
    }
    ex->q_tail = it;
    ex->q_len++;
    if (ex->pump_ev != NULL) {
        event_active(ex->pump_ev, 0, 0);
    }
    update_gauges(ex);
}

static void flush_pending(struct ox *ex)
{
    struct ox_item *it = ex->pending;

    if (it == NULL) {
        return;
    }
    ex->pending = NULL;
    evtimer_del(ex->flush_timer);
    enqueue(ex, it);
}

static void on_flush_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    flush_pending(arg);
}

/* ---- persistent queue ---------------------------------------------------- */

/* Records @id as carried by @it (acked when @it is freed). */
static bool item_add_spool_id(struct ox_item *it, struct pg_spool *spool, uint64_t id)
{
    uint64_t *v = realloc(it->spool_ids, (it->n_spool_ids + 1) * sizeof(*v));

    if (v == NULL) {
        return false;
    }
    it->spool_ids = v;
    it->spool_ids[it->n_spool_ids++] = id;
    it->spool = spool;
    return true;
}

/* Writes @batch to the spool before it is queued (and so before the 204).
 * BUSY when the spool or the disk is full: the receiver answers 503. The
 * encoding is the only one: the consumer sends these bytes back from disk. */
static enum pg_err spool_batch(struct ox *ex, struct pg_batch *batch, uint64_t *id,
                               size_t *enc_len, struct pg_status *st)
{
    struct pg_arena *a = pg_arena_create(0);
    uint8_t *buf;
    size_t len = 0;
    enum pg_err err;

    if (a == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "exporter %s: no memory to spool", ex->id);
    }
    err = pg_batch_encode(batch, a, &buf, &len, st);
    if (err == PG_ERR_OK) {
        err = pg_spool_append(ex->spool, buf, len, id, st);
    }
    *enc_len = len;
    pg_arena_destroy(a);
    return err;
}

static void on_replay_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pump(arg);
}

/* The next record the previous run left, read from disk as one item, or
 * NULL: replay finished (replay_done) or paused while the process is past
 * memory_limiter's soft limit (a timer resumes it). Only what consumers
 * hold is in memory: start-up and memory do not grow with the backlog. */
static struct ox_item *replay_take(struct ox *ex)
{
    static struct pg_log_ratelimit rl = PG_LOG_RATELIMIT_INIT(0.2, 1);
    struct pg_status st;
    uint64_t id = 0;
    uint8_t *data = NULL;
    size_t len = 0;
    struct ox_item *it;

    pg_status_clear(&st);
    if (pg_memlimit_over(&st)) {
        struct timeval tv = {0, 250000};

        if (pg_log_ratelimit_ok(&rl, NULL)) {
            pg_log_info(ex->log, "replay paused: %s", pg_status_text(&st));
        }
        if (ex->replay_timer != NULL) {
            evtimer_add(ex->replay_timer, &tv);
        }
        return NULL;
    }
    if (pg_spool_next_replay(ex->spool, ex->replay_after, &id, &data, &len, &st) != PG_ERR_OK) {
        pg_log_error(ex->log, "replay stopped: %s", pg_status_text(&st));
        ex->replay_done = true;
        return NULL;
    }
    if (data == NULL) {
        ex->replay_done = true;
        if (ex->replayed > 0) {
            pg_log_info(ex->log, "replayed %zu spooled request(s) from the previous run",
                        ex->replayed);
        }
        return NULL;
    }
    ex->replay_after = id;
    it = calloc(1, sizeof(*it));
    if (it == NULL || !item_add_spool_id(it, ex->spool, id)) {
        /* Out of memory: it stays on disk for the next start. */
        free(data);
        if (it != NULL) {
            it->keep_spooled = true;
        }
        item_free(it);
        ex->replay_done = true;
        return NULL;
    }
    it->raw = data;
    it->raw_len = len;
    it->count_samples = true;
    ex->replayed++;
    return it;
}

/* A permanent rejection of an item merged from several pushes: instead of
 * dropping all of them for one bad request, its sources go back to the head
 * of the queue in two halves (each half again, down to the single culprit). */
static bool bisect(struct ox_worker *w, const char *why)
{
    struct ox *ex = w->ex;
    struct ox_item *it = w->item;
    size_t n = it->n_batches > 0 ? it->n_batches : it->n_spool_ids;
    struct ox_item *h[2];
    size_t half = n / 2;

    if (n < 2 || it->raw != NULL) {
        return false;
    }
    h[0] = calloc(1, sizeof(*h[0]));
    h[1] = calloc(1, sizeof(*h[1]));
    if (h[0] == NULL || h[1] == NULL) {
        free(h[0]);
        free(h[1]);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        struct ox_item *d = h[i < half ? 0 : 1];
        bool ok = it->n_batches > 0
                      ? item_add(d, it->batches[i], pg_batch_sample_count(it->batches[i]))
                      : item_add_spool_id(d, it->spool, it->spool_ids[i]);
        if (!ok) {
            item_free(h[0]); /* nothing moved yet: the originals stay with @it */
            item_free(h[1]);
            return false;
        }
    }
    if (it->n_batches == 0) {
        h[0]->count_samples = h[1]->count_samples = true;
        it->n_spool_ids = 0; /* moved: not acked with @it */
    }
    h[0]->ex = h[1]->ex = ex;
    h[0]->units = it->units / 2;
    h[1]->units = it->units - h[0]->units;
    it->units = 0;
    pg_log_warn(ex->log,
                "export of %zu samples from %zu requests rejected, not retryable (%s); retrying "
                "them in two halves so one bad request cannot drop the others",
                it->samples, n, why);
    h[1]->next = ex->q_head;
    h[0]->next = h[1];
    ex->q_head = h[0];
    if (ex->q_tail == NULL) {
        ex->q_tail = h[1];
    }
    ex->q_len += 2;
    return true;
}

/* ---- component ops ------------------------------------------------------- */

/* What one push counts against queue_size. Without storage, bytes are the
 * memory the decoded batch holds (what the budget is for); with storage the
 * encoded size on disk (@enc_len, 0 before encoding: then the memory size
 * stands in as an upper bound). */
static uint64_t push_units(const struct ox *ex, const struct pg_batch *b, size_t samples,
                           size_t enc_len)
{
    switch (ex->sizer) {
    case SIZER_ITEMS:
        return samples;
    case SIZER_BYTES:
        return enc_len > 0 ? enc_len : pg_arena_footprint(b->arena);
    default:
        return 1;
    }
}

/* No room for @units more. With the requests sizer and no storage: the
 * waiting room (queue_size requests; none when the queue is disabled) and
 * every idle consumer are taken, as before. Otherwise what is held (queued,
 * merging and in flight; with storage, what waits on disk, the previous
 * run's backlog included) plus @units would pass queue_size. */
static bool queue_full(const struct ox *ex, uint64_t units)
{
    if (!ex->cfg.queue.enabled || (ex->sizer == SIZER_REQUESTS && ex->spool == NULL)) {
        return ex->q_len >= (ex->cfg.queue.enabled ? ex->q_cap : 0) + (ex->n_workers - ex->busy);
    }
    if (ex->spool != NULL && ex->sizer != SIZER_ITEMS) {
        struct pg_spool_stats ss;

        pg_spool_get_stats(ex->spool, &ss);
        return (ex->sizer == SIZER_REQUESTS ? ss.pending : ss.pending_bytes) + units >
               ex->q_limit;
    }
    return ex->q_used + units > ex->q_limit;
}

/* With batching, @samples more still fit the open merge (no queue slot needed). */
static bool fits_pending(const struct ox *ex, size_t samples)
{
    return ex->pending != NULL && (ex->cfg.queue.batch.max_size == 0 ||
                                   ex->pending->samples + samples <=
                                       (size_t)ex->cfg.queue.batch.max_size);
}

/* Room for the push: with the requests sizer a push merging into the open
 * batch takes no slot; every other sizer counts each push. */
static bool push_blocked(const struct ox *ex, size_t samples, uint64_t units)
{
    bool batching = ex->cfg.queue.has_batch && ex->cfg.queue.enabled;

    if (batching && fits_pending(ex, samples) && ex->sizer == SIZER_REQUESTS) {
        return false;
    }
    return queue_full(ex, ex->sizer == SIZER_REQUESTS ? 1 : units);
}

static enum pg_err ox_consume(void *state, struct pg_batch *batch, struct pg_status *st)
{
    struct ox *ex = state;
    size_t samples = pg_batch_sample_count(batch);
    bool batching = ex->cfg.queue.has_batch && ex->cfg.queue.enabled;
    uint64_t units = push_units(ex, batch, samples, 0);
    struct ox_item *it;
    uint64_t sid = 0;

    if (ex->shutting_down) {
        pg_metric_add(ex->m_enqueue_failed, samples);
        return pg_status_set(st, PG_ERR_UNAVAILABLE, "exporter %s is shutting down", ex->id);
    }
    if (ex->sizer != SIZER_REQUESTS && ex->cfg.queue.enabled && units > ex->q_limit) {
        /* Could never fit, even in an empty queue: a retry cannot help. */
        pg_metric_add(ex->m_enqueue_failed, samples);
        return pg_status_set(st, PG_ERR_LIMIT,
                             "exporter %s: a request of %" PRIu64 " %s is larger than the whole "
                             "sending queue (queue_size %" PRIu64 ")",
                             ex->id, units, ex->sizer == SIZER_ITEMS ? "samples" : "bytes",
                             ex->q_limit);
    }
    if (push_blocked(ex, samples, units)) {
        goto full;
    }
    if (batching && ex->pending != NULL && !fits_pending(ex, samples)) {
        flush_pending(ex);
        if (ex->sizer == SIZER_REQUESTS && queue_full(ex, 1)) {
            goto full;
        }
    }
    if (ex->spool != NULL) {
        /* On disk before the 204; the batch itself is not kept. */
        size_t enc_len = 0;
        enum pg_err serr = spool_batch(ex, batch, &sid, &enc_len, st);

        if (serr != PG_ERR_OK) {
            pg_metric_add(ex->m_enqueue_failed, samples);
            return serr;
        }
        units = push_units(ex, batch, samples, enc_len);
    }
    if (batching && ex->pending == NULL) {
        struct timeval tv = tv_of(ex->cfg.queue.batch.flush_timeout);

        ex->pending = calloc(1, sizeof(*ex->pending));
        if (ex->pending == NULL) {
            goto nomem;
        }
        ex->pending->ex = ex;
        evtimer_add(ex->flush_timer, &tv);
    }
    it = batching ? ex->pending : calloc(1, sizeof(*it));
    if (it == NULL) {
        goto nomem;
    }
    it->ex = ex;
    if (ex->spool != NULL ? !item_add_spool_id(it, ex->spool, sid) : !item_add(it, batch, samples)) {
        if (!batching) {
            item_free(it);
        }
        goto nomem;
    }
    if (ex->spool != NULL) {
        it->samples += samples;
    }
    it->units += units;
    ex->q_used += units;
    if (!batching) {
        enqueue(ex, it);
    } else if (ex->pending->samples >= (size_t)ex->cfg.queue.batch.min_size) {
        flush_pending(ex);
    } else {
        update_gauges(ex);
    }
    return PG_ERR_OK;

nomem:
    if (ex->spool != NULL) {
        (void)pg_spool_ack(ex->spool, sid, NULL); /* not acknowledged to the client either */
    }
    return pg_status_set(st, PG_ERR_NOMEM, "no memory to queue an export");

full:
    pg_metric_add(ex->m_enqueue_failed, samples);
    if (ex->sizer == SIZER_REQUESTS && ex->spool == NULL) {
        return pg_status_set(st, PG_ERR_BUSY,
                             "exporter %s: sending queue is full (%zu requests waiting, %zu in "
                             "flight)", ex->id, ex->q_len, ex->busy);
    }
    return pg_status_set(st, PG_ERR_BUSY,
                         "exporter %s: sending queue is full (%s sizer, queue_size %" PRIu64
                         "%s)", ex->id, sizer_choices[ex->sizer], ex->q_limit,
                         ex->spool != NULL ? ", counted on disk" : "");
}

/* The receiver asks this before consuming: mirrors the "full" exit of
 * ox_consume() (a batch that still fits the pending merge is never held). */
static bool ox_would_block(void *state, const struct pg_batch *batch)
{
    const struct ox *ex = state;
    size_t samples;

    if (ex == NULL || !ex->cfg.queue.block_on_overflow || ex->shutting_down) {
        return false;
    }
    samples = pg_batch_sample_count(batch);
    return push_blocked(ex, samples, push_units(ex, batch, samples, 0));
}

static void ox_destroy(void *state);

static enum pg_err ox_create(const struct pg_component_ctx *ctx, void **state)
{
    struct ox *ex = calloc(1, sizeof(*ex));
    char path[256];
    size_t problems;
    bool tls;
    const struct pg_cfg_node *ep_node;

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
        if (!parse_endpoint(ex, ctx->config_arena, ex->cfg.endpoint, ctx->diag, ep_node, &tls)) {
            problems++;
        }
        ex->tls = tls;
    }
    if (ex->cfg.queue.has_batch && ex->cfg.queue.batch.max_size > 0 &&
        ex->cfg.queue.batch.max_size < ex->cfg.queue.batch.min_size) {
        pg_diag_add(ctx->diag, ctx->config, path,
                    "sending_queue::batch::max_size must be 0 or >= min_size");
        problems++;
    }
    if (ex->cfg.queue.storage != NULL && !pg_storage_known(ex->cfg.queue.storage)) {
        /* Extensions are created first, so a defined one is known. */
        pg_diag_add(ctx->diag, ctx->config, path,
                    "sending_queue::storage: \"%s\" is not a file_storage extension listed in "
                    "service::extensions; defined: %s",
                    ex->cfg.queue.storage, pg_storage_ids());
        problems++;
    }
    if (problems > 0) {
        free(ex);
        return PG_ERR_CONFIG;
    }
    if (ex->tls) {
        struct pg_tls_client_config tc = {ex->cfg.tls.ca_file, ex->cfg.tls.cert_file,
                                          ex->cfg.tls.key_file, ex->cfg.tls.insecure_skip_verify};
        struct pg_status st;

        pg_status_clear(&st);
        ex->ssl_ctx = pg_tls_client_ctx_new(&tc, &st);
        if (ex->ssl_ctx == NULL) {
            pg_diag_add(ctx->diag, ctx->config, path, "%s", pg_status_text(&st));
            free(ex);
            return PG_ERR_CONFIG;
        }
    }
    if (ex->cfg.has_auth && ex->cfg.auth.bearer_token_file != NULL) {
        ex->token.path = ex->cfg.auth.bearer_token_file;
    }
    ex->q_cap = (size_t)ex->cfg.queue.queue_size;
    ex->q_limit = (uint64_t)ex->cfg.queue.queue_size;
    ex->sizer = ex->cfg.queue.sizer;
    ex->n_workers = (size_t)ex->cfg.queue.num_consumers;
    ex->seed = (uint64_t)now_ns();
    snprintf(ex->user_agent, sizeof(ex->user_agent), "pprofgate/%s nghttp2/%s",
             ctx->host && ctx->host->version ? ctx->host->version : "dev", NGHTTP2_VERSION);
    snprintf(ex->labels, sizeof(ex->labels), "exporter=\"%s\"", ctx->id);
    *state = ex;
    return PG_ERR_OK;
}

static enum pg_err ox_start(void *state, struct pg_status *st)
{
    struct ox *ex = state;
    struct pg_grpc_conn_config cc;
    struct event_base *base = ex->host->base;

    memset(&cc, 0, sizeof(cc));
    cc.host = ex->host_name;
    cc.port = ex->port;
    cc.tls = ex->tls;
    cc.ssl_ctx = ex->ssl_ctx;
    cc.server_name = ex->cfg.tls.server_name_override;
    cc.verify = !ex->cfg.tls.insecure_skip_verify;
    cc.keepalive_time_ns = ex->cfg.keepalive.time;
    cc.keepalive_timeout_ns = ex->cfg.keepalive.timeout;
    cc.connect_timeout_ns = ex->cfg.timeout > 0 ? ex->cfg.timeout : 5000000000LL;
    cc.backoff_initial_ns = 100000000LL;
    cc.backoff_max_ns = 5000000000LL;
    cc.max_response_bytes = 4u << 20;
    cc.log_name = ex->log;
    ex->conn = pg_grpc_conn_new(base, &cc);
    ex->workers = calloc(ex->n_workers, sizeof(*ex->workers));
    ex->flush_timer = evtimer_new(base, on_flush_timer, ex);
    ex->pump_ev = event_new(base, -1, 0, on_pump, ex);
    ex->replay_timer = evtimer_new(base, on_replay_timer, ex);
    if (ex->conn == NULL || ex->workers == NULL || ex->flush_timer == NULL ||
        ex->pump_ev == NULL || ex->replay_timer == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "exporter %s: out of memory", ex->id);
    }
    for (size_t i = 0; i < ex->n_workers; i++) {
        ex->workers[i].ex = ex;
        ex->workers[i].timer = evtimer_new(base, on_retry_timer, &ex->workers[i]);
        if (ex->workers[i].timer == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "exporter %s: out of memory", ex->id);
        }
    }
    ex->m_sent = pg_metric_counter("otelcol_exporter_sent_profile_samples",
                                   "Profile samples successfully sent to destination", ex->labels);
    ex->m_failed = pg_metric_counter("otelcol_exporter_send_failed_profile_samples",
                                     "Profile samples the exporter failed to send", ex->labels);
    ex->m_enqueue_failed =
        pg_metric_counter("otelcol_exporter_enqueue_failed_profile_samples",
                          "Profile samples refused because the sending queue was full",
                          ex->labels);
    ex->m_retries = pg_metric_counter("pprofgate_exporter_retries",
                                      "Export attempts retried after a retryable failure",
                                      ex->labels);
    ex->m_rejected = pg_metric_counter("pprofgate_exporter_rejected_profiles",
                                       "Profiles the destination rejected in partial_success",
                                       ex->labels);
    ex->m_sent_requests = pg_metric_counter("pprofgate_exporter_sent_requests",
                                            "Export requests accepted by the destination",
                                            ex->labels);
    ex->m_capacity = pg_metric_gauge("otelcol_exporter_queue_capacity",
                                     "Fixed capacity of the sending queue, in sizer units",
                                     ex->labels);
    pg_metric_set(ex->m_capacity, (int64_t)ex->q_limit);
    ex->m_qsize = pg_metric_gauge("otelcol_exporter_queue_size",
                                  "Current size of the sending queue, in sizer units", ex->labels);
    ex->m_inflight = pg_metric_gauge("otelcol_exporter_in_flight_requests", "Exports in flight",
                                     ex->labels);
    if (ex->cfg.queue.storage != NULL) {
        struct pg_spool_stats ss;
        enum pg_err serr = pg_storage_open(ex->cfg.queue.storage, ex->log, &ex->spool, st);

        if (serr != PG_ERR_OK) {
            return serr;
        }
        pg_spool_get_stats(ex->spool, &ss);
        pg_log_info(ex->log, "persistent queue on %s: %" PRIu64 " request(s) (%" PRIu64
                    " bytes) to replay, read back into a bounded window",
                    ex->cfg.queue.storage, ss.replay_pending, ss.pending_bytes);
    }
    update_gauges(ex);
    ex->started = true;
    pg_log_info(ex->log,
                "exporting to %s:%d (%s, compression %s, %zu consumers, queue %" PRIu64 " %s)",
                ex->host_name, ex->port, ex->tls ? "TLS" : "plaintext",
                compression_choices[ex->cfg.compression], ex->n_workers, ex->q_limit,
                sizer_choices[ex->sizer]);
    pg_grpc_conn_connect(ex->conn);
    /* Replay starts from the loop, once every component (the receiver
     * included) is up: start-up never waits for the backlog. */
    event_active(ex->pump_ev, 0, 0);
    return PG_ERR_OK;
}

/* Drops everything still queued or in flight (shutdown deadline). */
static size_t abort_all(struct ox *ex, const char *reason)
{
    size_t lost = 0;

    ex->aborted = true;
    if (ex->pending != NULL) {
        ex->pending->keep_spooled = true; /* replayed at the next start */
        lost += ex->pending->samples;
        item_free(ex->pending);
        ex->pending = NULL;
    }
    while (ex->q_head != NULL) {
        struct ox_item *it = ex->q_head;

        ex->q_head = it->next;
        lost += it->samples;
        it->keep_spooled = true;
        item_free(it);
    }
    ex->q_tail = NULL;
    ex->q_len = 0;
    for (size_t i = 0; ex->workers != NULL && i < ex->n_workers; i++) {
        struct ox_worker *w = &ex->workers[i];

        if (w->item != NULL && !w->abandoned) {
            w->item->keep_spooled = true;
            for (size_t p = w->cur; p < w->n_parts; p++) {
                lost += w->parts[p].samples;
            }
            if (w->timer != NULL) {
                evtimer_del(w->timer);
            }
            if (w->in_call) {
                w->abandoned = true;
            } else {
                worker_release(w);
            }
        }
    }
    update_gauges(ex);
    if (lost > 0) {
        count_drop(ex, reason, lost);
    }
    return lost;
}

static void on_shutdown_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct ox *ex = arg;
    size_t lost;

    (void)fd;
    (void)what;
    lost = abort_all(ex, "shutdown");
    if (lost > 0) {
        pg_log_error(ex->log, "shutdown deadline passed: dropped %zu samples not yet delivered",
                     lost);
    }
}

static void ox_shutdown(void *state)
{
    struct ox *ex = state;
    struct timeval tv = tv_of(ex->cfg.shutdown_timeout);

    if (ex == NULL || ex->shutting_down) {
        return;
    }
    ex->shutting_down = true;
    if (!ex->started) {
        return;
    }
    flush_pending(ex);
    ex->shutdown_timer = evtimer_new(ex->host->base, on_shutdown_deadline, ex);
    if (ex->shutdown_timer != NULL) {
        evtimer_add(ex->shutdown_timer, &tv);
    }
}

static bool ox_idle(void *state)
{
    struct ox *ex = state;

    return ex->aborted || !ex->started ||
           (ex->q_len == 0 && ex->pending == NULL && ex->busy == 0);
}

static void ox_destroy(void *state)
{
    struct ox *ex = state;
    size_t lost;

    if (ex == NULL) {
        return;
    }
    lost = abort_all(ex, "shutdown");
    if (lost > 0) {
        pg_log_error(ex->log, "exporter stopped with %zu samples undelivered", lost);
    }
    /* No callbacks after this: calls still on the wire are dropped. */
    pg_grpc_conn_free(ex->conn);
    for (size_t i = 0; ex->workers != NULL && i < ex->n_workers; i++) {
        if (ex->workers[i].item != NULL) {
            worker_release(&ex->workers[i]);
        }
        if (ex->workers[i].timer != NULL) {
            event_free(ex->workers[i].timer);
        }
    }
    free(ex->workers);
    if (ex->flush_timer != NULL) {
        event_free(ex->flush_timer);
    }
    if (ex->pump_ev != NULL) {
        event_free(ex->pump_ev);
    }
    if (ex->replay_timer != NULL) {
        event_free(ex->replay_timer);
    }
    if (ex->shutdown_timer != NULL) {
        event_free(ex->shutdown_timer);
    }
    if (ex->ssl_ctx != NULL) {
        SSL_CTX_free(ex->ssl_ctx);
    }
    free(ex->token.header);
    pg_spool_close(ex->spool); /* after every item released */
    free(ex);
}

const struct pg_component_ops pg_exporter_otlp = {
    .type = "otlp",
    .alias = "otlp_grpc",
    .kind = PG_KIND_EXPORTER,
    .fields = otlp_fields,
    .doc = "OTLP/gRPC ProfilesService/Export with queue, retries, TLS, splitting and batching",
    .create = ox_create,
    .start = ox_start,
    .consume = ox_consume,
    .would_block = ox_would_block,
    .shutdown = ox_shutdown,
    .idle = ox_idle,
    .destroy = ox_destroy,
};
