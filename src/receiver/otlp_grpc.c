/* SPDX-License-Identifier: Apache-2.0
 * The otlp receiver's OTLP/gRPC side on the gRPC server (grpc/grpc_server.h):
 * on the call's HEADERS the route (ProfilesService/Export, else
 * UNIMPLEMENTED) and authentication (the `authorization` metadata); on its
 * message's length the memory admission, before a byte of it is buffered;
 * on the whole message decode, validate, forward (otlp_ingest.c) and the
 * answer: an empty ExportProfilesServiceResponse, or the error's code
 * (RetryInfo under backpressure). While an exporter with block_on_overflow
 * is full the call is held unanswered (otlp_held.c) until there is room or
 * shortly before its grpc-timeout deadline. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/membudget.h"
#include "core/memlimit.h"
#include "grpc/grpc_server.h"
#include "grpc/grpc_wire.h"
#include "otlp/otlp.h"
#include "receiver/otlp_internal.h"
#include "receiverhelper/metadata.h"

/* The gRPC code of an HTTP-style refusal from the shared auth check. */
static int auth_code(int http)
{
    return http == 401 ? PG_GRPC_UNAUTHENTICATED : PG_GRPC_UNAVAILABLE;
}

static int on_headers(struct pg_grpc_call *c, struct pg_status *st, void *arg)
{
    struct otlp_rx *rx = ((struct otlp_loop *)arg)->rx;

    if (strcmp(c->path, PG_OTLP_EXPORT_PATH) != 0) {
        pg_status_set(st, PG_ERR_UNSUPPORTED, "unknown method %.200s", c->path);
        return PG_GRPC_UNIMPLEMENTED;
    }
    if (rx->side[OTLP_GRPC].auth != NULL) {
        const char *authz = NULL;
        size_t n_auth = 0;
        int code;

        for (size_t i = 0; i < c->n_md; i++) {
            if (strcmp(c->md[i].name, "authorization") == 0) {
                authz = c->md[i].value;
                n_auth++;
            }
        }
        if (n_auth > 1) {
            pg_status_set(st, PG_ERR_MALFORMED, "more than one authorization entry");
            return PG_GRPC_UNAUTHENTICATED;
        }
        code = otlp_auth_check(rx, OTLP_GRPC, c->peer_key, authz, st);
        if (code != 0) {
            return auth_code(code);
        }
    }
    return PG_GRPC_OK;
}

/* Memory before the message is buffered (the server caps its size). */
static int on_length(struct pg_grpc_call *c, size_t len, bool compressed, struct pg_status *st,
                     void *arg)
{
    struct otlp_rx *rx = ((struct otlp_loop *)arg)->rx;
    size_t est = otlp_admission_estimate(rx, len, compressed, rx->side[OTLP_GRPC].max_msg);

    if (!pg_memlimit_admit(est, st)) {
        return pg_rxh_grpc_code(st->code);
    }
    c->reserved += est;
    return PG_GRPC_OK;
}

static const uint8_t empty_response[1]; /* ExportProfilesServiceResponse{}: no bytes */

/* The answer to a call: an empty response, or @err's code with @st's reason
 * (RetryInfo under backpressure). */
static void answer(struct pg_grpc_call *c, enum pg_err err, const struct pg_status *st)
{
    if (err != PG_ERR_OK) {
        int retry_s = pg_rxh_retry_after_s(err);

        pg_grpc_call_reply(c, pg_rxh_grpc_code(err), pg_status_text(st), NULL, 0,
                           retry_s >= 0 ? (int64_t)retry_s * 1000000000 : -1);
        return;
    }
    pg_grpc_call_reply(c, PG_GRPC_OK, NULL, empty_response, 0, -1);
}

/* A held call's outcome (otlp_held.c). @st NULL: cannot happen here (a call
 * whose client left ends through on_done). */
static void held_done(struct otlp_held *h, enum pg_err err, const struct pg_status *st)
{
    struct pg_grpc_call *c = h->req;
    struct pg_status none;

    c->user = NULL; /* before the reply: its on_done must not forget @h again */
    if (st == NULL) {
        pg_status_set(&none, err, "client went away");
        st = &none;
    }
    answer(c, err, st);
}

/* A held call may wait until shortly before its deadline (grpc-timeout),
 * so it gets UNAVAILABLE before the server's own DEADLINE_EXCEEDED. */
#define HOLD_DEADLINE_MARGIN_S 0.05

/* A message over this size is freed as soon as it is decoded, not at the
 * answer: it never waits out the pipeline beside its batch. */
#define MSG_KEEP_MAX (16 * 1024)

static void drop_msg(void *arg)
{
    /* the call's buffer was never charged to the request's budget */
    struct pg_membudget *prev = pg_membudget_enter(NULL);

    pg_grpc_call_drop_msg(arg);
    pg_membudget_leave(prev);
}

static void on_call(struct pg_grpc_call *c, void *arg)
{
    struct otlp_loop *lp = arg;
    struct otlp_rx *rx = lp->rx;
    struct otlp_held *held = NULL;
    struct otlp_side *sd = &rx->side[OTLP_GRPC];
    struct pg_arena *scratch = NULL;
    struct pg_metadata md = {0};
    struct pg_membudget budget, *prev;
    struct pg_status st;
    enum pg_err err = PG_ERR_OK;

    /* The admission's estimate, corrected as decoding grows (core/membudget.h). */
    pg_membudget_init(&budget, c->reserved);
    c->reserved = 0;
    prev = pg_membudget_enter(&budget);
    pg_status_clear(&st);
    if (sd->include_metadata) {
        scratch = pg_arena_create((size_t)1 << 20);
        if (scratch == NULL) {
            err = pg_status_set(&st, PG_ERR_NOMEM, "no memory for request metadata");
        } else {
            /* The server's header block cap bounds n_md. */
            struct pg_rxh_md_pair *pairs =
                pg_arena_calloc(scratch, c->n_md > 0 ? c->n_md : 1, sizeof(*pairs));

            for (size_t i = 0; pairs != NULL && i < c->n_md; i++) {
                pairs[i].name = c->md[i].name;
                pairs[i].value = c->md[i].value;
            }
            err = pairs == NULL
                      ? pg_status_set(&st, PG_ERR_NOMEM, "no memory for request metadata")
                      : pg_rxh_metadata_from_pairs(scratch, pairs, c->n_md, &md, &st);
        }
    }
    if (err == PG_ERR_OK) {
        err = otlp_ingest(lp, OTLP_GRPC, c->msg, c->msg_len, false, c->wire_len,
                          sd->include_metadata ? &md : NULL, c->peer, &held,
                          c->msg_len > MSG_KEEP_MAX ? drop_msg : NULL, c, &st);
    }
    pg_arena_destroy(scratch);
    err = pg_membudget_leave_work(&budget, prev, err, &st, NULL);
    /* The estimate's work is done; the batch is charged on its own. */
    pg_membudget_end(&budget);
    if (held != NULL) {
        /* Answered by otlp_held.c, or forgotten by on_done (reset, deadline). */
        held->req = c;
        held->done = held_done;
        if (c->deadline_ns > 0) {
            double until = (double)c->deadline_ns / 1e9 - HOLD_DEADLINE_MARGIN_S;

            held->until = until > 0 ? until : 1e-9;
        }
        c->user = held;
        otlp_hold(held);
        return;
    }
    answer(c, err, &st);
}

static void on_answer(const struct pg_grpc_call *c, int code, const char *reason, void *arg)
{
    /* INTERNAL, UNAVAILABLE, UNKNOWN, DATA_LOSS: our side, logged as warn. */
    bool server = code == PG_GRPC_INTERNAL || code == PG_GRPC_UNAVAILABLE ||
                  code == PG_GRPC_UNKNOWN || code == PG_GRPC_DATA_LOSS;

    otlp_count_answer(arg, OTLP_GRPC, code, code != PG_GRPC_OK, server, reason,
                      c != NULL ? c->peer : NULL);
}

/* The call is over: the admission goes back (the batch is charged on its own). */
static void on_done(struct pg_grpc_call *c, void *arg)
{
    (void)arg;
    if (c->user != NULL) {
        otlp_held_forget(c->user); /* ended while held: reset, deadline, connection lost */
        c->user = NULL;
    }
    if (c->reserved > 0) {
        pg_memlimit_release(c->reserved);
        c->reserved = 0;
    }
}

static void on_conn_event(int ev, const char *peer, void *arg)
{
    struct otlp_rx *rx = ((struct otlp_loop *)arg)->rx;
    unsigned long suppressed = 0;

    if (ev < 0 || ev >= PG_GRPC_N_EVENTS) {
        return;
    }
    if (pg_rxh_reason_log_ok(&rx->reasons, 3000 + ev, pg_grpc_server_event_names[ev],
                             &suppressed)) {
        pg_log_info(rx->log_name, "grpc: connection %s %s (%s" PG_LOG_SUPPRESSED_FMT ")",
                    ev <= PG_GRPC_ACCEPT_PAUSED ? "refused from" : "closed,", peer ? peer : "?",
                    pg_grpc_server_event_names[ev], PG_LOG_SUPPRESSED(suppressed));
    }
}

static const struct pg_grpc_server_ops grpc_ops = {
    .on_headers = on_headers,
    .on_length = on_length,
    .on_call = on_call,
    .on_answer = on_answer,
    .on_done = on_done,
    .on_conn_event = on_conn_event,
};

enum pg_err otlp_grpc_start(struct otlp_loop *lp, int fd, struct pg_status *st)
{
    struct otlp_rx *rx = lp->rx;
    const struct otlp_grpc_cfg *g = &rx->cfg.protocols.grpc;
    struct pg_grpc_server_limits lim = {
        .max_recv_msg_size = rx->side[OTLP_GRPC].max_msg,
        .max_concurrent_streams = (uint32_t)g->max_concurrent_streams,
        .max_connections = (size_t)g->max_connections,
        .max_connections_per_peer = (size_t)g->max_connections_per_peer,
        .handshake_timeout_ns = g->handshake_timeout,
        .call_read_timeout_ns = g->read_timeout,
        .allowed_codings = rx->side[OTLP_GRPC].allowed,
        .max_connection_idle_ns = g->keepalive.server_parameters.max_connection_idle,
        .max_connection_age_ns = g->keepalive.server_parameters.max_connection_age,
        .max_connection_age_grace_ns = g->keepalive.server_parameters.max_connection_age_grace,
        .keepalive_time_ns = g->keepalive.server_parameters.time,
        .keepalive_timeout_ns = g->keepalive.server_parameters.timeout,
        .min_ping_interval_ns = g->keepalive.enforcement_policy.min_time,
        .permit_without_stream = g->keepalive.enforcement_policy.permit_without_stream,
    };

    if (lp->idx == 0) {
        lp->grpcd = pg_grpc_server_new(lp->base, fd, rx->side[OTLP_GRPC].ssl_ctx, &lim, &grpc_ops,
                                       lp);
    } else {
        lp->grpcd = pg_grpc_server_new_sibling(rx->loops[0].grpcd, lp->base, fd, lp);
    }
    if (lp->grpcd == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot create the gRPC server of loop %u",
                             rx->log_name, lp->idx);
    }
    return PG_ERR_OK;
}
