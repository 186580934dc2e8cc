/* SPDX-License-Identifier: Apache-2.0
 * The otlp receiver's one path from a message to the pipeline, whichever
 * transport brought it: decode (protobuf or OTLP/JSON) into the arena that
 * becomes the batch's, validate (otlp/otlp_decode.h: nothing invalid is
 * forwarded), wrap in a batch with the receiver's id, metadata, time and
 * size, charge it to the memory budget and hand it on. Also the answer
 * counting and the authentication check both transports share. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/memlimit.h"
#include "otlp/otlp_json.h"
#include "receiver/otlp_internal.h"

/* The batch arena may grow to this many times the message (the unpacked
 * request: protobuf-c structs and arrays take 3-5x the wire bytes). */
#define BATCH_ARENA_FACTOR 8
/* Admission: the message, its decoded layers (estimated as 8x a coded
 * message, capped at the limit) and ADMIT_DECODED_FACTOR times the decoded
 * size for the unpacked request and its batch. */
#define ADMIT_DECODED_FACTOR 5

const char *const otlp_transport_names[] = {"grpc", "http"};

size_t otlp_admission_estimate(const struct otlp_rx *rx, uint64_t len, bool coded, size_t max)
{
    uint64_t decoded = coded ? (len * 8 < max ? len * 8 : max) : len;
    uint64_t est = len + (coded ? decoded : 0) + ADMIT_DECODED_FACTOR * decoded;
    uint64_t soft = pg_memlimit_soft_limit();

    (void)rx;
    if (soft > 0 && est > soft) {
        est = soft; /* a lone request always fits an idle gateway */
    }
    return (size_t)est;
}

/* A copy of @md's entries in @arena (the batch's), so the batch owns them. */
static enum pg_err copy_metadata(struct pg_arena *arena, const struct pg_metadata *md,
                                 struct pg_metadata *out, struct pg_status *st)
{
    out->n = 0;
    out->entries = NULL;
    if (md == NULL || md->n == 0) {
        return PG_ERR_OK;
    }
    out->entries = pg_arena_calloc(arena, md->n, sizeof(*out->entries));
    if (out->entries == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "no memory for request metadata");
    }
    for (size_t i = 0; i < md->n; i++) {
        out->entries[i].key = pg_arena_strdup(arena, md->entries[i].key);
        out->entries[i].value = pg_arena_strdup(arena, md->entries[i].value);
        if (out->entries[i].key == NULL || out->entries[i].value == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "no memory for request metadata");
        }
    }
    out->n = md->n;
    return PG_ERR_OK;
}

/* @msg into a validated request in @arena. */
static enum pg_err decode_msg(struct otlp_rx *rx, struct pg_arena *arena, const uint8_t *msg,
                              size_t len, bool json, struct pg_otlp_request **req,
                              struct pg_otlp_decode_stats *stats, struct pg_status *st)
{
    enum pg_err err;

    memset(stats, 0, sizeof(*stats));
    if (!json) {
        return pg_otlp_decode(arena, msg, len, &rx->dopts, req, stats, st);
    }
    {
        ProtobufCMessage *m = NULL;

        err = pg_otlp_json_decode(arena, &pg_otlp_request_descriptor, (const char *)msg, len, &m,
                                  st);
        if (err != PG_ERR_OK) {
            return err;
        }
        *req = (struct pg_otlp_request *)m;
    }
    return pg_otlp_validate(arena, *req, &rx->limits, stats, st);
}

enum pg_err otlp_ingest(struct otlp_loop *lp, enum otlp_transport t, const uint8_t *msg,
                        size_t len, bool json, size_t raw_len, const struct pg_metadata *md,
                        const char *peer, struct otlp_held **held,
                        void (*msg_done)(void *arg), void *msg_arg, struct pg_status *st)
{
    struct otlp_rx *rx = lp->rx;
    struct otlp_side *sd = &rx->side[t];
    struct pg_arena *arena = pg_arena_create(sd->max_msg * BATCH_ARENA_FACTOR + (1u << 20));
    struct pg_otlp_request *req = NULL;
    struct pg_otlp_decode_stats stats;
    struct pg_batch *batch;
    double t0 = pg_mono_s();
    size_t samples;
    enum pg_err err;

    if (held != NULL) {
        *held = NULL;
    }
    pg_metric_add(sd->m_bytes, raw_len);
    if (arena == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "no memory for a %zu-byte request", len);
    }
    err = decode_msg(rx, arena, msg, len, json, &req, &stats, st);
    if (msg_done != NULL) {
        msg_done(msg_arg); /* nothing decoded points into the message */
    }
    pg_metric_observe(rx->m_latency, pg_mono_s() - t0);
    if (stats.utf8_repaired > 0) {
        pg_metric_add(rx->m_utf8, stats.utf8_repaired);
    }
    if (err != PG_ERR_OK) {
        pg_metric_add(sd->m_refused, stats.samples);
        pg_arena_destroy(arena);
        return err;
    }
    samples = stats.samples;
    if (samples == 0) {
        /* As the Collector's receiver: nothing to forward, and OK. */
        pg_arena_destroy(arena);
        return PG_ERR_OK;
    }
    {
        struct pg_metadata bmd = {0};

        err = copy_metadata(arena, md, &bmd, st);
        bmd.peer_addr = peer != NULL ? pg_arena_strdup(arena, peer) : NULL;
        if (err != PG_ERR_OK) {
            pg_metric_add(sd->m_refused, samples);
            pg_arena_destroy(arena);
            return err;
        }
        batch = pg_batch_new(arena, req); /* takes the arena, also on failure */
        if (batch == NULL) {
            pg_metric_add(sd->m_refused, samples);
            return pg_status_set(st, PG_ERR_NOMEM, "no memory for a batch");
        }
        batch->metadata = bmd;
    }
    batch->raw_bytes = raw_len;
    batch->received_unix_nano = (uint64_t)pg_real_ns();
    batch->receiver_id = rx->id;
    batch->default_service_name = rx->cfg.default_service_name;
    /* Charged until the last exporter drops it, as on the pprof path. */
    (void)pg_memlimit_charge_arena(batch->arena, pg_arena_footprint(batch->arena));
    /* Behind requests already held, a new one waits too: oldest first. */
    if ((held != NULL && lp->held != NULL) || pg_consumer_would_block(rx->next, batch, st)) {
        /* An exporter with block_on_overflow is full: the request waits,
         * unanswered, as the pprof receiver's do; its batch stays charged. */
        if (lp->held != NULL) {
            pg_status_set(st, PG_ERR_BUSY, "%s", pg_status_text(&lp->held->st));
        }
        if (held != NULL && (*held = otlp_held_new(lp, t, batch, samples, st)) != NULL) {
            st->code = PG_ERR_BUSY;
            return PG_ERR_BUSY;
        }
        pg_batch_unref(batch);
        pg_metric_add(sd->m_refused, samples);
        st->code = PG_ERR_BUSY;
        return PG_ERR_BUSY;
    }
    err = pg_consumer_consume(rx->next, batch, st); /* takes our reference */
    pg_metric_add(err == PG_ERR_OK ? sd->m_accepted : sd->m_refused, samples);
    return err;
}

void otlp_count_answer(struct otlp_loop *lp, enum otlp_transport t, int code, bool refused,
                       bool server_error, const char *reason, const char *peer)
{
    struct otlp_rx *rx = lp->rx;
    unsigned long suppressed = 0;
    char extra[32];

    snprintf(extra, sizeof(extra), "transport=\"%s\"", otlp_transport_names[t]);
    pg_rxh_count(&lp->codes[t],
                 t == OTLP_HTTP ? "pprofgate_receiver_http_requests_total"
                                : "pprofgate_receiver_grpc_requests_total",
                 t == OTLP_HTTP ? "HTTP requests by status code."
                                : "gRPC calls by status code.",
                 rx->id, t == OTLP_HTTP ? NULL : extra, code);
    if (!refused) {
        return;
    }
    pg_rxh_count(&lp->refused_codes[t], "otelcol_receiver_refused_requests_total",
                 "HTTP requests answered with a 4xx or 5xx status, by code.", rx->id, extra, code);
    if (!pg_rxh_reason_log_ok(&rx->reasons, code + (int)t * 1000, reason, &suppressed)) {
        return;
    }
    /* The Collector-shaped 415 body starts with its own code: said once. */
    if (reason != NULL && code >= 100 && code <= 999 && reason[0] == '0' + code / 100 &&
        reason[1] == '0' + code / 10 % 10 && reason[2] == '0' + code % 10 && reason[3] == ' ') {
        reason += 4;
    }
    if (server_error) {
        pg_log_warn(rx->log_name, "%s: answered %d: %s (peer=%s" PG_LOG_SUPPRESSED_FMT ")",
                    otlp_transport_names[t], code, reason ? reason : "", peer ? peer : "?",
                    PG_LOG_SUPPRESSED(suppressed));
    } else {
        pg_log_info(rx->log_name, "%s: answered %d: %s (peer=%s" PG_LOG_SUPPRESSED_FMT ")",
                    otlp_transport_names[t], code, reason ? reason : "", peer ? peer : "?",
                    PG_LOG_SUPPRESSED(suppressed));
    }
}

int otlp_auth_check(struct otlp_rx *rx, enum otlp_transport t, const void *peer_key,
                    const char *authorization, struct pg_status *st)
{
    double now = pg_mono_s();
    bool blocked, ok = false;

    /* One lock: the per-peer budget is shared by both transports, and
     * pg_auth reloads its credential files when they change. */
    pthread_mutex_lock(&rx->auth_mu);
    blocked = pg_peer_ratelimit_blocked(rx->auth_rl, peer_key, now);
    if (!blocked) {
        ok = pg_auth_check(rx->side[t].auth, authorization, st);
        if (!ok) {
            pg_peer_ratelimit_hit(rx->auth_rl, peer_key, now);
        }
    }
    pthread_mutex_unlock(&rx->auth_mu);
    if (blocked) {
        pg_status_set(st, PG_ERR_BUSY, "too many failed authentication attempts; retry later");
        return 429;
    }
    return ok ? 0 : 401;
}
