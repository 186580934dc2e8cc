/* SPDX-License-Identifier: Apache-2.0
 * What a gRPC client sends, as nghttp2's server callbacks see it: a call
 * from HEADERS (route, content-type, grpc-encoding, grpc-timeout, the
 * handler's on_headers) through its message (prefix, on_length, capped
 * reading, decoding) to the answer (trailers-only for refusals, headers +
 * message + trailers for OK), plus the client's SETTINGS and the PING
 * enforcement policy of grpc-go's server. */
#include "grpc/grpc_server_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/base64.h"
#include "core/clock.h"

/* grpc-go: a PING without streams more often than this is a strike
 * (defaultPingTimeout), and the third strike past maxPingStrikes ends the
 * connection. */
#define NO_STREAM_PING_NS (2LL * 3600 * 1000000000LL)
#define MAX_PING_STRIKES 2
/* RFC 7541's per-entry overhead, as SETTINGS_MAX_HEADER_LIST_SIZE counts. */
#define HDR_ENTRY_OVERHEAD 32
/* grpc-message bytes at most (before percent coding). */
#define MAX_REASON 4096

static struct gconn *session_conn(void *ud)
{
    return ((struct pg_h2 *)ud)->owner;
}

static struct gcall *stream_call(nghttp2_session *s, int32_t id)
{
    return nghttp2_session_get_stream_user_data(s, id);
}

/* Asks the connection to write (and close if finished) from the loop,
 * outside any nghttp2 callback. */
static void call_kick(struct gconn *c)
{
    if (!c->h2.in_recv && !c->h2.in_send) {
        event_active(c->defer_ev, 0, 0);
    }
}

static void call_timers_off(struct gcall *call)
{
    if (call->deadline_ev != NULL) {
        evtimer_del(call->deadline_ev);
    }
    if (call->read_ev != NULL) {
        evtimer_del(call->read_ev);
    }
}

void grpc_call_end(struct gcall *call)
{
    struct gconn *c = call->conn;
    struct pg_grpc_server *s = c->srv;

    if (c->h2.ng != NULL && call->stream_id > 0) {
        nghttp2_session_set_stream_user_data(c->h2.ng, call->stream_id, NULL);
    }
    if (call->prev != NULL) {
        call->prev->next = call->next;
    } else {
        c->calls = call->next;
    }
    if (call->next != NULL) {
        call->next->prev = call->prev;
    }
    if (--c->n_streams == 0) {
        c->idle_since_ns = pg_mono_ns();
    }
    if (call->handler_knows) {
        s->n_calls--;
        if (s->ops.on_done != NULL) {
            s->ops.on_done(&call->pub, s->arg);
        }
    }
    if (call->deadline_ev != NULL) {
        event_free(call->deadline_ev);
    }
    if (call->read_ev != NULL) {
        event_free(call->read_ev);
    }
    pg_grpc_reader_free(&call->reader);
    free(call->out);
    free(call->t_message);
    free(call->t_details);
    pg_arena_destroy(call->arena);
    free(call);
}

/* ---- the answer ----------------------------------------------------------- */

static ssize_t answer_read_cb(nghttp2_session *ng, int32_t stream_id, uint8_t *buf, size_t length,
                              uint32_t *data_flags, nghttp2_data_source *source, void *ud)
{
    struct gcall *call = source->ptr;
    size_t n = call->out_len - call->out_sent;
    nghttp2_nv tr[3];
    size_t n_tr = 0;

    (void)ud;
    if (n > length) {
        n = length;
    }
    memcpy(buf, call->out + call->out_sent, n);
    call->out_sent += n;
    if (call->out_sent < call->out_len) {
        return (ssize_t)n;
    }
    *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
#define TR(nm, val)                                                                                \
    tr[n_tr++] = (nghttp2_nv){(uint8_t *)(nm), (uint8_t *)(val), sizeof(nm) - 1, strlen(val),      \
                              NGHTTP2_NV_FLAG_NONE}
    TR("grpc-status", call->t_status);
    if (call->t_message != NULL) {
        TR("grpc-message", call->t_message);
    }
    if (call->t_details != NULL) {
        TR("grpc-status-details-bin", call->t_details);
    }
#undef TR
    if (nghttp2_submit_trailer(ng, stream_id, tr, n_tr) != 0) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

/* Answers @call once: trailers-only when @code is not OK (or @http_status is
 * not 200), else headers, the 5-byte-prefixed @resp and trailers. Later
 * DATA of the stream is discarded; late answers are dropped. */
static void answer(struct gcall *call, int http_status, int code, const char *message,
                   const uint8_t *resp, size_t len, int64_t retry_delay_ns)
{
    struct gconn *c = call->conn;
    struct pg_grpc_server *s = c->srv;
    nghttp2_nv nv[7];
    size_t n_nv = 0;
    char status[8];
    char cut[MAX_REASON + 1];
    int rv;

    if (call->state == CALL_ANSWERED) {
        return;
    }
    call->state = CALL_ANSWERED;
    call_timers_off(call);
    if (message != NULL && message[0] == '\0') {
        message = NULL;
    }
    if (message != NULL && strlen(message) > MAX_REASON) {
        /* A header block has a cap (ours and the client's): long reasons are cut. */
        memcpy(cut, message, MAX_REASON);
        cut[MAX_REASON] = '\0';
        message = cut;
    }
    snprintf(status, sizeof(status), "%d", http_status);
    snprintf(call->t_status, sizeof(call->t_status), "%d", code);
    if (message != NULL) {
        size_t cap = strlen(message) * 3 + 1;

        call->t_message = malloc(cap);
        if (call->t_message != NULL) {
            pg_grpc_message_encode(message, call->t_message, cap);
        }
    }
    if (retry_delay_ns >= 0) {
        size_t mlen = message != NULL ? strlen(message) : 0;
        size_t cap = mlen + 128;
        uint8_t *bin = malloc(cap);
        size_t blen = bin != NULL ? pg_grpc_status_details_encode(code, message, retry_delay_ns,
                                                                  bin, cap)
                                  : 0;

        if (blen > 0) {
            size_t b64cap = pg_base64_encoded_len(blen) + 1;

            call->t_details = malloc(b64cap);
            if (call->t_details != NULL &&
                pg_base64_encode(bin, blen, call->t_details, b64cap) < 0) {
                free(call->t_details);
                call->t_details = NULL;
            }
        }
        free(bin);
    }
#define NV(nm, val)                                                                                \
    nv[n_nv++] = (nghttp2_nv){(uint8_t *)(nm), (uint8_t *)(val), sizeof(nm) - 1, strlen(val),      \
                              NGHTTP2_NV_FLAG_NONE}
    NV(":status", status);
    NV("content-type", "application/grpc");
    NV("grpc-accept-encoding", s->accept_enc);
    if (code == PG_GRPC_OK && http_status == 200) {
        nghttp2_data_provider dp;

        call->out_len = len + 5;
        call->out = malloc(call->out_len);
        if (call->out == NULL) {
            code = PG_GRPC_RESOURCE_EXHAUSTED;
            message = "out of memory for the response";
            snprintf(call->t_status, sizeof(call->t_status), "%d", code);
            goto trailers_only;
        }
        pg_grpc_prefix_write(call->out, false, (uint32_t)len);
        if (len > 0) {
            memcpy(call->out + 5, resp, len);
        }
        dp.source.ptr = call;
        dp.read_callback = answer_read_cb;
        rv = nghttp2_submit_response(c->h2.ng, call->stream_id, nv, n_nv, &dp);
        goto submitted;
    }
trailers_only:
    NV("grpc-status", call->t_status);
    if (call->t_message != NULL) {
        NV("grpc-message", call->t_message);
    }
    if (call->t_details != NULL) {
        NV("grpc-status-details-bin", call->t_details);
    }
#undef NV
    rv = nghttp2_submit_response(c->h2.ng, call->stream_id, nv, n_nv, NULL);
submitted:
    if (rv != 0) {
        nghttp2_submit_rst_stream(c->h2.ng, NGHTTP2_FLAG_NONE, call->stream_id,
                                  NGHTTP2_INTERNAL_ERROR);
    }
    /* The rest of an unread request is refused once the answer is out
     * (RST_STREAM NO_ERROR after our END_STREAM, as grpc-go does). */
    call->rst_after_answer = !call->req_ended;
    if (s->ops.on_answer != NULL) {
        s->ops.on_answer(&call->pub, code, message, s->arg);
    }
    call_kick(c);
}

static void answerf(struct gcall *call, int http_status, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void answerf(struct gcall *call, int http_status, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    answer(call, http_status, code, msg, NULL, 0, -1);
}

void pg_grpc_call_reply(struct pg_grpc_call *pc, int code, const char *message, const uint8_t *resp,
                        size_t len, int64_t retry_delay_ns)
{
    struct gcall *call = (struct gcall *)pc;

    if (call->state == CALL_ANSWERED) {
        return; /* the server answered first (deadline): dropped */
    }
    answer(call, 200, code, message, code == PG_GRPC_OK ? resp : NULL,
           code == PG_GRPC_OK ? len : 0, retry_delay_ns);
}

void pg_grpc_call_drop_msg(struct pg_grpc_call *pc)
{
    struct gcall *call = (struct gcall *)pc;

    /* In CALL_HANDLER no DATA is fed to the reader any more (END_STREAM came). */
    pg_grpc_reader_free(&call->reader);
    pc->msg = NULL;
    pc->msg_len = 0;
}

/* ---- timers of a call ----------------------------------------------------- */

static void on_call_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct gcall *call = arg;

    (void)fd;
    (void)what;
    answerf(call, 200, PG_GRPC_DEADLINE_EXCEEDED, "deadline exceeded (grpc-timeout %s)",
            call->timeout != NULL ? call->timeout : "");
}

static void on_call_read_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct gcall *call = arg;

    (void)fd;
    (void)what;
    if (call->state == CALL_READING) {
        answerf(call, 200, PG_GRPC_DEADLINE_EXCEEDED,
                "request message not complete within %lld ms (call_read_timeout)",
                (long long)(call->conn->srv->lim.call_read_timeout_ns / 1000000));
    }
}

/* ---- headers -------------------------------------------------------------- */

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    struct gconn *c = session_conn(ud);
    struct pg_grpc_server *s = c->srv;
    struct gcall *call;

    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) {
        return 0;
    }
    call = calloc(1, sizeof(*call));
    if (call == NULL) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    }
    /* Header strings (capped by max_header_list_size) and the decoded message. */
    call->arena = pg_arena_create(2 * s->lim.max_header_list_size + 3 * s->lim.max_recv_msg_size +
                                  (64u << 10));
    call->deadline_ev = evtimer_new(s->base, on_call_deadline, call);
    call->read_ev = evtimer_new(s->base, on_call_read_timeout, call);
    call->conn = c;
    call->stream_id = f->hd.stream_id;
    call->next = c->calls;
    if (c->calls != NULL) {
        c->calls->prev = call;
    }
    c->calls = call;
    c->n_streams++;
    c->idle_since_ns = 0;
    pg_grpc_reader_init(&call->reader, s->lim.max_recv_msg_size);
    if (call->arena == NULL || call->deadline_ev == NULL || call->read_ev == NULL) {
        grpc_call_end(call);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    call->pub.path = ""; /* until :path arrives (a header block past the cap may lack it) */
    call->pub.peer_addr = c->peer_addr;
    call->pub.peer_port = c->peer_port;
    call->pub.peer = c->peer;
    call->pub.peer_key = &c->key;
    call->pub.tls = c->tls;
    nghttp2_session_set_stream_user_data(ng, f->hd.stream_id, call);
    return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud)
{
    struct gcall *call = stream_call(ng, f->hd.stream_id);
    char *v;

    (void)flags;
    (void)ud;
    if (call == NULL || call->state != CALL_HEADERS || call->hdr_over) {
        return 0; /* trailers of the request, or past the cap: not kept */
    }
    call->hdr_bytes += namelen + valuelen + HDR_ENTRY_OVERHEAD;
    if (call->hdr_bytes > call->conn->srv->lim.max_header_list_size) {
        call->hdr_over = true;
        return 0;
    }
    v = pg_arena_strndup(call->arena, (const char *)value, valuelen);
    if (v == NULL) {
        call->hdr_over = true;
        return 0;
    }
#define IS(lit) (namelen == sizeof(lit) - 1 && memcmp(name, lit, namelen) == 0)
    if (name[0] == ':') {
        if (IS(":method")) {
            call->method = v;
        } else if (IS(":path")) {
            call->pub.path = v;
        } else if (IS(":authority")) {
            call->pub.authority = v;
        }
        return 0;
    }
    if (IS("content-type")) {
        call->content_type = v;
    } else if (IS("grpc-encoding")) {
        call->encoding = v;
    } else if (IS("grpc-timeout")) {
        call->timeout = v;
    }
#undef IS
    if (call->pub.n_md == call->md_cap) {
        size_t cap = call->md_cap ? 2 * call->md_cap : 16;
        struct pg_grpc_md *md = pg_arena_realloc(call->arena, call->md,
                                                 call->md_cap * sizeof(*md), cap * sizeof(*md));

        if (md == NULL) {
            call->hdr_over = true;
            return 0;
        }
        call->md = md;
        call->md_cap = cap;
    }
    call->md[call->pub.n_md].name = pg_arena_strndup(call->arena, (const char *)name, namelen);
    call->md[call->pub.n_md].value = v;
    if (call->md[call->pub.n_md].name == NULL) {
        call->hdr_over = true;
        return 0;
    }
    call->pub.n_md++;
    call->pub.md = call->md;
    return 0;
}

/* "application/grpc", "application/grpc+proto", "application/grpc;...". */
static bool grpc_content_type(const char *ct)
{
    return ct != NULL && strncmp(ct, "application/grpc", 16) == 0 &&
           (ct[16] == '\0' || ct[16] == '+' || ct[16] == ';');
}

static void request_end(struct gcall *call);

/* The request's header block is complete: checks, then the handler. */
static void headers_done(struct gcall *call, bool ended)
{
    struct pg_grpc_server *s = call->conn->srv;
    struct pg_status st;
    int rc;

    call->req_ended = ended;
    if (call->hdr_over) {
        answerf(call, 200, PG_GRPC_RESOURCE_EXHAUSTED,
                "request header list exceeds max_header_list_size (%zu bytes)",
                s->lim.max_header_list_size);
        return;
    }
    if (call->method == NULL || strcmp(call->method, "POST") != 0) {
        answerf(call, 405, PG_GRPC_INTERNAL, "invalid gRPC request method \"%s\"",
                call->method != NULL ? call->method : "");
        return;
    }
    if (!grpc_content_type(call->content_type)) {
        answerf(call, 415, PG_GRPC_INVALID_ARGUMENT, "invalid gRPC request content-type \"%s\"",
                call->content_type != NULL ? call->content_type : "");
        return;
    }
    if (call->timeout != NULL) {
        int64_t ns;
        struct timeval tv;

        if (!pg_grpc_timeout_parse(call->timeout, strlen(call->timeout), &ns)) {
            answerf(call, 200, PG_GRPC_INTERNAL, "malformed grpc-timeout \"%s\"", call->timeout);
            return;
        }
        call->pub.deadline_ns = pg_mono_ns() + ns;
        tv = pg_ns_to_tv(ns);
        evtimer_add(call->deadline_ev, &tv);
    }
    if (call->encoding != NULL && strcmp(call->encoding, "identity") != 0) {
        const struct pg_codec *cd = pg_codec_find(call->encoding, strlen(call->encoding));

        if (cd == NULL || cd->decode == NULL || !(pg_codec_bit(cd) & s->lim.allowed_codings)) {
            answerf(call, 200, PG_GRPC_UNIMPLEMENTED,
                    "grpc: Decompressor is not installed for grpc-encoding \"%s\"", call->encoding);
            return;
        }
        call->codec = cd;
    }
    call->handler_knows = true;
    s->n_calls++;
    pg_status_clear(&st);
    rc = s->ops.on_headers(&call->pub, &st, s->arg);
    if (call->state != CALL_HEADERS) {
        return; /* answered inside on_headers */
    }
    if (rc != PG_GRPC_OK) {
        answer(call, 200, rc, pg_status_text(&st), NULL, 0, -1);
        return;
    }
    call->state = CALL_READING;
    if (s->lim.call_read_timeout_ns > 0) {
        struct timeval tv = pg_ns_to_tv(s->lim.call_read_timeout_ns);

        evtimer_add(call->read_ev, &tv);
    }
    if (ended) {
        request_end(call);
    }
}

/* ---- the message ---------------------------------------------------------- */

/* The prefix of the message is in: the declared length is checked before
 * a byte of the body is buffered. */
static void prefix_done(struct gcall *call)
{
    struct pg_grpc_server *s = call->conn->srv;
    struct pg_status st;
    int rc;

    call->pub.wire_len = call->reader.need;
    if (call->reader.compressed && call->codec == NULL) {
        answerf(call, 200, PG_GRPC_INTERNAL,
                "grpc: compressed flag set with identity or empty encoding");
        return;
    }
    if (s->ops.on_length == NULL) {
        return;
    }
    pg_status_clear(&st);
    rc = s->ops.on_length(&call->pub, call->reader.need, call->reader.compressed, &st, s->arg);
    if (rc != PG_GRPC_OK && call->state == CALL_READING) {
        answer(call, 200, rc, pg_status_text(&st), NULL, 0, -1);
    }
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *ud)
{
    struct gcall *call = stream_call(ng, stream_id);

    (void)flags;
    (void)ud;
    while (call != NULL && call->state == CALL_READING && len > 0) {
        size_t want = pg_grpc_reader_prefix_want(&call->reader);
        size_t n = want > 0 && want < len ? want : len;
        struct pg_status st;
        enum pg_err err;

        pg_status_clear(&st);
        err = pg_grpc_reader_feed(&call->reader, data, n, &st);
        data += n;
        len -= n;
        if (err == PG_ERR_LIMIT) {
            answerf(call, 200, PG_GRPC_RESOURCE_EXHAUSTED,
                    "grpc: received message larger than max (%zu vs. %zu)", call->reader.need,
                    call->reader.max);
        } else if (err == PG_ERR_NOMEM) {
            answerf(call, 200, PG_GRPC_RESOURCE_EXHAUSTED, "out of memory for the message");
        } else if (err != PG_ERR_OK && call->reader.n_msgs > 0) {
            answerf(call, 200, PG_GRPC_INTERNAL, "cardinality violation: received multiple "
                                                 "request messages for non-client-streaming RPC");
        } else if (err != PG_ERR_OK) {
            answerf(call, 200, PG_GRPC_INTERNAL, "grpc: %s", pg_status_text(&st));
        } else if (want > 0 && n == want) {
            prefix_done(call);
        }
    }
    return 0; /* anything else (an answered stream's DATA) is dropped here */
}

/* The client's END_STREAM: the message must be complete and alone. */
static void request_end(struct gcall *call)
{
    struct pg_grpc_server *s = call->conn->srv;

    call->req_ended = true;
    if (call->state != CALL_READING) {
        return;
    }
    if (!pg_grpc_reader_done(&call->reader)) {
        /* grpc-go's words: io.ErrUnexpectedEOF, or its cardinality check. */
        answerf(call, 200, PG_GRPC_INTERNAL, "%s",
                pg_grpc_reader_partial(&call->reader)
                    ? "unexpected EOF (request message cut short)"
                    : "cardinality violation: received no request message from "
                      "non-client-streaming RPC");
        return;
    }
    if (call->reader.compressed) {
        struct pg_status st;
        uint8_t *out = NULL;
        size_t out_len = 0;
        enum pg_err err;

        pg_status_clear(&st);
        err = call->codec->decode(call->arena, call->reader.buf, call->reader.got,
                                  s->lim.max_recv_msg_size, &out, &out_len, &st);
        if (err == PG_ERR_LIMIT) {
            answerf(call, 200, PG_GRPC_RESOURCE_EXHAUSTED,
                    "grpc: received message after decompression larger than max %zu",
                    s->lim.max_recv_msg_size);
            return;
        }
        if (err != PG_ERR_OK) {
            answerf(call, 200, err == PG_ERR_NOMEM ? PG_GRPC_RESOURCE_EXHAUSTED : PG_GRPC_INTERNAL,
                    "grpc: failed to decompress the received message: %s", pg_status_text(&st));
            return;
        }
        call->pub.msg = out;
        call->pub.msg_len = out_len;
    } else {
        call->pub.msg = call->reader.buf;
        call->pub.msg_len = call->reader.got;
    }
    call->pub.wire_len = call->reader.got;
    call->state = CALL_HANDLER;
    evtimer_del(call->read_ev);
    s->ops.on_call(&call->pub, s->arg);
}

/* ---- frames --------------------------------------------------------------- */

/* grpc-go's keepalive enforcement (internal/transport/http2_server.go
 * handlePing): a PING after we sent HEADERS or DATA is free; otherwise one
 * sooner than min_time (2 h without streams unless permit_without_stream)
 * is a strike, and more than two strikes end the connection. */
static void note_ping(struct gconn *c)
{
    struct pg_grpc_server *s = c->srv;
    int64_t now = pg_mono_ns();
    int64_t gap = c->last_ping_ns != 0 ? now - c->last_ping_ns : INT64_MAX;

    if (c->reset_ping_strikes) {
        c->reset_ping_strikes = false;
        c->ping_strikes = 0;
    } else if (c->n_streams == 0 && !s->lim.permit_without_stream) {
        c->ping_strikes += gap < NO_STREAM_PING_NS;
    } else {
        c->ping_strikes += gap < s->lim.min_ping_interval_ns;
    }
    c->last_ping_ns = now;
    if (c->ping_strikes > MAX_PING_STRIKES && !c->closing) {
        static const char why[] = "too_many_pings";

        nghttp2_submit_goaway(c->h2.ng, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(c->h2.ng),
                              NGHTTP2_ENHANCE_YOUR_CALM, (const uint8_t *)why, sizeof(why) - 1);
        c->goaway = true;
        c->final_goaway = true;
        c->closing = true;
        c->close_event = PG_GRPC_CLOSED_TOO_MANY_PINGS;
    }
}

void grpc_session_final_goaway(struct gconn *c)
{
    if (c->final_goaway || c->h2.ng == NULL) {
        return;
    }
    c->final_goaway = true;
    evtimer_del(c->goaway_ev);
    nghttp2_submit_goaway(c->h2.ng, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(c->h2.ng), NGHTTP2_NO_ERROR,
                          NULL, 0);
    call_kick(c);
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    struct gconn *c = session_conn(ud);
    struct gcall *call;
    bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

    if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK) && c->goaway &&
        memcmp(f->ping.opaque_data, GRPC_DRAIN_PING, 8) == 0) {
        grpc_session_final_goaway(c);
        return 0;
    }
    if (pg_h2_frame_seen(&c->h2, f)) {
        return 0;
    }
    switch (f->hd.type) {
    case NGHTTP2_SETTINGS:
        if (!(f->hd.flags & NGHTTP2_FLAG_ACK) && !c->got_settings) {
            c->got_settings = true;
            evtimer_del(c->hs_ev);
        }
        break;
    case NGHTTP2_PING:
        note_ping(c);
        break;
    case NGHTTP2_HEADERS:
        call = stream_call(ng, f->hd.stream_id);
        if (call == NULL) {
            break;
        }
        if (call->state == CALL_HEADERS) {
            headers_done(call, end);
        } else if (end) {
            request_end(call); /* the request's trailers */
        }
        break;
    case NGHTTP2_DATA:
        call = stream_call(ng, f->hd.stream_id);
        if (call != NULL && end) {
            request_end(call);
        }
        break;
    default:
        break;
    }
    return 0;
}

static int on_frame_send(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    struct gconn *c = session_conn(ud);
    struct gcall *call;

    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
        c->reset_ping_strikes = true;
        call = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) ? stream_call(ng, f->hd.stream_id) : NULL;
        if (call != NULL && call->rst_after_answer && !call->req_ended) {
            call->rst_after_answer = false;
            nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
        }
        break;
    case NGHTTP2_GOAWAY:
        /* nghttp2's own flood / rate limits end the session this way. */
        if (f->goaway.error_code != NGHTTP2_NO_ERROR && c->close_event < 0) {
            c->close_event = PG_GRPC_CLOSED_PROTOCOL;
        }
        break;
    default:
        break;
    }
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t stream_id, uint32_t error_code, void *ud)
{
    struct gcall *call = stream_call(ng, stream_id);

    (void)error_code;
    (void)ud;
    if (call != NULL) {
        grpc_call_end(call);
    }
    return 0;
}

void grpc_session_callbacks(nghttp2_session_callbacks *cbs)
{
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
}
