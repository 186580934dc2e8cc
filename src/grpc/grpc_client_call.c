/* SPDX-License-Identifier: Apache-2.0
 * One gRPC client call's life: its request headers (one copied block), the
 * body nghttp2 reads from (5-byte prefix + borrowed message), the response
 * headers, message and trailers of its stream, its final status (grpc-status,
 * else the HTTP status or RST_STREAM code), and the deferred delivery of
 * results, so a callback never runs inside nghttp2 and may start new calls.
 * Knows the connection only as data (grpc_client_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "codec/gzip.h"
#include "core/base64.h"
#include "grpc/grpc_client_internal.h"

static void list_add(struct client_call **head, struct client_call *call)
{
    call->prev = NULL;
    call->next = *head;
    if (*head != NULL) {
        (*head)->prev = call;
    }
    *head = call;
}

static void list_del(struct client_call **head, struct client_call *call)
{
    if (call->prev != NULL) {
        call->prev->next = call->next;
    } else {
        *head = call->next;
    }
    if (call->next != NULL) {
        call->next->prev = call->prev;
    }
    call->prev = call->next = NULL;
}

static void call_free(struct client_call *call)
{
    if (call->deadline != NULL) {
        event_free(call->deadline);
    }
    free(call->nv);
    free(call->nv_block);
    free(call->grpc_message);
    free(call->details_bin);
    free(call->res_message);
    free(call->res_body);
    pg_grpc_reader_free(&call->reader);
    free(call);
}


void pg_grpcc_finish(struct client_call *call, int code, const char *fmt, ...)
{
    struct pg_grpc_conn *c = call->conn;
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (call->stream_id > 0 && c->h2.ng != NULL) {
        nghttp2_session_set_stream_user_data(c->h2.ng, call->stream_id, NULL);
    }
    if (call->deadline != NULL) {
        evtimer_del(call->deadline);
    }
    call->res_code = code;
    free(call->res_message);
    call->res_message = strdup(msg);
    list_del(&c->active, call);
    c->n_active--;
    list_add(&c->done, call);
    event_active(c->done_ev, 0, 0);
}

void pg_grpcc_deliver(evutil_socket_t fd, short what, void *arg)
{
    struct pg_grpc_conn *c = arg;

    (void)fd;
    (void)what;
    while (c->done != NULL) {
        struct client_call *call = c->done;
        struct pg_grpc_result res;

        list_del(&c->done, call);
        memset(&res, 0, sizeof(res));
        res.code = call->res_code;
        res.message = call->res_message ? call->res_message : "";
        res.has_retry_info = call->res_retry_info;
        res.retry_delay_ns = call->res_retry_ns;
        res.response = call->res_body;
        res.response_len = call->res_body_len;
        res.http_status = call->http_status;
        call->cb(call->arg, &res);
        call_free(call);
    }
}

static ssize_t body_read_cb(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                            uint32_t *data_flags, nghttp2_data_source *source, void *ud)
{
    struct client_call *call = source->ptr;
    size_t total = call->body_len + 5;
    size_t n = 0;

    (void)s;
    (void)stream_id;
    (void)ud;
    while (n < length && call->sent < total) {
        size_t take;

        if (call->sent < 5) {
            uint8_t prefix[5];

            pg_grpc_prefix_write(prefix, call->compressed, (uint32_t)call->body_len);
            take = 5 - call->sent;
            take = take < length - n ? take : length - n;
            memcpy(buf + n, prefix + call->sent, take);
        } else {
            take = total - call->sent;
            take = take < length - n ? take : length - n;
            memcpy(buf + n, call->body + (call->sent - 5), take);
        }
        n += take;
        call->sent += take;
    }
    if (call->sent == total) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return (ssize_t)n;
}

static struct client_call *stream_call(nghttp2_session *s, int32_t id)
{
    return nghttp2_session_get_stream_user_data(s, id);
}

static char *dupn(const uint8_t *v, size_t n)
{
    char *p = malloc(n + 1);

    if (p != NULL) {
        memcpy(p, v, n);
        p[n] = '\0';
    }
    return p;
}

static int header_cb(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud)
{
    struct client_call *call;

    (void)flags;
    (void)ud;
    if (frame->hd.type != NGHTTP2_HEADERS) {
        return 0;
    }
    call = stream_call(s, frame->hd.stream_id);
    if (call == NULL) {
        return 0;
    }
#define IS(lit) (namelen == sizeof(lit) - 1 && memcmp(name, lit, namelen) == 0)
    if (IS(":status")) {
        int v = 0;

        for (size_t i = 0; i < valuelen && i < 3; i++) {
            v = v * 10 + (value[i] >= '0' && value[i] <= '9' ? value[i] - '0' : 0);
        }
        call->http_status = v;
    } else if (IS("grpc-status")) {
        int code;

        call->grpc_status = pg_grpc_status_parse((const char *)value, valuelen, &code)
                                ? code
                                : PG_GRPC_UNKNOWN;
    } else if (IS("grpc-message")) {
        free(call->grpc_message);
        call->grpc_message = malloc(valuelen + 1);
        if (call->grpc_message != NULL) {
            pg_grpc_message_decode((const char *)value, valuelen, call->grpc_message);
        }
    } else if (IS("grpc-status-details-bin")) {
        free(call->details_bin);
        call->details_bin = dupn(value, valuelen);
    } else if (IS("content-type")) {
        call->grpc_content = valuelen >= 16 && memcmp(value, "application/grpc", 16) == 0 &&
                             (valuelen == 16 || value[16] == '+' || value[16] == ';');
    } else if (IS("grpc-encoding")) {
        call->gzip_encoding = valuelen == 4 && memcmp(value, "gzip", 4) == 0;
    }
#undef IS
    return 0;
}

static int data_chunk_cb(nghttp2_session *s, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *ud)
{
    struct client_call *call = stream_call(s, stream_id);
    struct pg_status st;
    enum pg_err err;

    (void)flags;
    (void)ud;
    if (call == NULL) {
        return 0;
    }
    if (call->http_status != 200 || !call->grpc_content) {
        return 0; /* not a gRPC body (a proxy's error page): the status decides */
    }
    pg_status_clear(&st);
    err = pg_grpc_reader_feed(&call->reader, data, len, &st);
    if (err != PG_ERR_OK) {
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
        pg_grpcc_finish(call, err == PG_ERR_LIMIT ? PG_GRPC_RESOURCE_EXHAUSTED : PG_GRPC_INTERNAL,
               "bad response: %s", pg_status_text(&st));
    }
    return 0;
}

/* grpc-go's mapping of HTTP/2 RST_STREAM codes. */
static int code_from_h2(uint32_t e)
{
    switch (e) {
    case NGHTTP2_REFUSED_STREAM:
        return PG_GRPC_UNAVAILABLE;
    case NGHTTP2_CANCEL:
        return PG_GRPC_CANCELLED;
    case NGHTTP2_ENHANCE_YOUR_CALM:
        return PG_GRPC_RESOURCE_EXHAUSTED;
    case NGHTTP2_INADEQUATE_SECURITY:
        return PG_GRPC_PERMISSION_DENIED;
    default:
        return PG_GRPC_INTERNAL;
    }
}

/* Builds the final result of a stream that closed normally or by reset. */
static void complete_stream(struct pg_grpc_conn *c, struct client_call *call, uint32_t h2err)
{
    struct pg_grpc_status_details det;
    struct pg_status st;

    if (call->grpc_status >= 0) {
        if (call->details_bin != NULL) {
            size_t n = strlen(call->details_bin), cap = pg_base64_decoded_max(n);
            uint8_t *bin = malloc(cap);
            long blen = bin != NULL ? pg_base64_decode(call->details_bin, n, PG_BASE64_LENIENT,
                                                       bin, cap)
                                    : -1;

            if (blen >= 0 && pg_grpc_status_details_parse(bin, (size_t)blen, &det) &&
                det.has_retry_info) {
                call->res_retry_info = true;
                call->res_retry_ns = det.retry_delay_ns;
            }
            free(bin);
        }
        if (call->grpc_status == PG_GRPC_OK && pg_grpc_reader_done(&call->reader)) {
            pg_status_clear(&st);
            if (call->reader.compressed) {
                uint8_t *out;
                size_t out_len;

                if (!call->gzip_encoding ||
                    pg_gzip_decompress(call->reader.buf, call->reader.got,
                                       c->cfg.max_response_bytes, &out, &out_len,
                                       &st) != PG_ERR_OK) {
                    pg_grpcc_finish(call, PG_GRPC_INTERNAL, "cannot decompress the response: %s",
                           call->gzip_encoding ? pg_status_text(&st) : "unknown grpc-encoding");
                    return;
                }
                call->res_body = out;
                call->res_body_len = out_len;
            } else {
                call->res_body = call->reader.buf;
                call->res_body_len = call->reader.got;
                call->reader.buf = NULL;
            }
        } else if (call->grpc_status == PG_GRPC_OK && pg_grpc_reader_partial(&call->reader)) {
            pg_grpcc_finish(call, PG_GRPC_INTERNAL, "response message cut short");
            return;
        }
        pg_grpcc_finish(call, call->grpc_status, "%s", call->grpc_message ? call->grpc_message : "");
        return;
    }
    if (call->http_status != 0 && call->http_status != 200) {
        pg_grpcc_finish(call, pg_grpc_code_from_http(call->http_status), "unexpected HTTP status %d",
               call->http_status);
        return;
    }
    if (call->http_status == 200 && !call->grpc_content) {
        pg_grpcc_finish(call, PG_GRPC_UNKNOWN, "response is not gRPC (content-type is not application/grpc)");
        return;
    }
    if (h2err != NGHTTP2_NO_ERROR) {
        pg_grpcc_finish(call, code_from_h2(h2err), "stream reset by the server: %s",
               nghttp2_http2_strerror(h2err));
        return;
    }
    pg_grpcc_finish(call, PG_GRPC_INTERNAL, "server closed the stream without a grpc-status");
}

static int stream_close_cb(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *ud)
{
    struct pg_grpc_conn *c = ((struct pg_h2 *)ud)->owner;
    struct client_call *call = stream_call(s, stream_id);

    if (call == NULL) {
        return 0;
    }
    nghttp2_session_set_stream_user_data(s, stream_id, NULL);
    if (error_code == NGHTTP2_REFUSED_STREAM && call->http_status == 0 && !call->resubmitted) {
        /* Never processed by the server (e.g. above a GOAWAY's last stream):
         * safe to send again transparently, as grpc-go does once. */
        call->resubmitted = true;
        call->stream_id = 0;
        call->sent = 0;
        return 0;
    }
    complete_stream(c, call, error_code);
    return 0;
}

void pg_grpcc_submit_pending(struct pg_grpc_conn *c)
{
    struct client_call *call;
    struct client_call *next;

    if (c->state != ST_READY || c->h2.ng == NULL || c->goaway) {
        return;
    }
    for (call = c->active; call != NULL; call = next) {
        nghttp2_data_provider dp;
        int32_t id;

        next = call->next;
        if (call->stream_id != 0) {
            continue;
        }
        /* nghttp2 itself holds streams beyond the server's
         * MAX_CONCURRENT_STREAMS until earlier ones close. */
        dp.source.ptr = call;
        dp.read_callback = body_read_cb;
        id = nghttp2_submit_request(c->h2.ng, NULL, call->nv, call->n_nv, &dp, call);
        if (id < 0) {
            pg_grpcc_finish(call, PG_GRPC_UNAVAILABLE, "cannot open a stream: %s", nghttp2_strerror(id));
            continue;
        }
        call->stream_id = id;
    }
}

struct client_call *pg_grpcc_call_new(struct pg_grpc_conn *c, const struct pg_grpc_request *req,
                                      pg_grpc_done_fn cb, void *arg,
                                      event_callback_fn on_deadline, struct pg_status *st)
{
    struct client_call *call = calloc(1, sizeof(*call));
    char timeout[16];
    size_t block = 0;
    size_t n_nv = 4 + req->n_headers + 1;
    char *p;
    size_t i;

    if (call == NULL) {
        pg_status_set(st, PG_ERR_NOMEM, "no memory for a gRPC call");
        return NULL;
    }
    pg_grpc_timeout_format(req->timeout_ns, timeout, sizeof(timeout));
    /* Names and values of the five fixed headers, each with two NULs. */
    block += sizeof(":method") + sizeof("POST") + sizeof(":scheme") + sizeof("https") +
             sizeof(":authority") + strlen(c->authority) + 1 + sizeof(":path") +
             strlen(req->path) + 1 + sizeof("grpc-timeout") + strlen(timeout) + 1;
    for (i = 0; i < req->n_headers; i++) {
        block += strlen(req->headers[i].name) + strlen(req->headers[i].value) + 2;
    }
    call->nv = calloc(n_nv, sizeof(nghttp2_nv));
    call->nv_block = malloc(block);
    call->deadline = evtimer_new(c->base, on_deadline, call);
    if (call->nv == NULL || call->nv_block == NULL || call->deadline == NULL) {
        call_free(call);
        pg_status_set(st, PG_ERR_NOMEM, "no memory for a gRPC call");
        return NULL;
    }
    p = call->nv_block;
#define ADD(n, v)                                                                                  \
    do {                                                                                           \
        size_t nl_ = strlen(n), vl_ = strlen(v);                                                   \
        memcpy(p, n, nl_ + 1);                                                                     \
        call->nv[call->n_nv].name = (uint8_t *)p;                                                  \
        call->nv[call->n_nv].namelen = nl_;                                                        \
        p += nl_ + 1;                                                                              \
        memcpy(p, v, vl_ + 1);                                                                     \
        call->nv[call->n_nv].value = (uint8_t *)p;                                                 \
        call->nv[call->n_nv].valuelen = vl_;                                                       \
        p += vl_ + 1;                                                                              \
        call->nv[call->n_nv].flags = NGHTTP2_NV_FLAG_NONE;                                         \
        call->n_nv++;                                                                              \
    } while (0)
    ADD(":method", "POST");
    ADD(":scheme", c->cfg.tls ? "https" : "http");
    ADD(":authority", c->authority);
    ADD(":path", req->path);
    ADD("grpc-timeout", timeout);
    for (i = 0; i < req->n_headers; i++) {
        ADD(req->headers[i].name, req->headers[i].value);
    }
#undef ADD
    call->conn = c;
    call->body = req->body;
    call->body_len = req->body_len;
    call->compressed = req->compressed;
    call->timeout_ns = req->timeout_ns;
    call->cb = cb;
    call->arg = arg;
    call->grpc_status = -1;
    pg_grpc_reader_init(&call->reader, c->cfg.max_response_bytes);
    list_add(&c->active, call);
    c->n_active++;
    return call;
}

void pg_grpcc_free_all(struct pg_grpc_conn *c)
{
    while (c->active != NULL) {
        struct client_call *call = c->active;

        list_del(&c->active, call);
        call_free(call);
    }
    while (c->done != NULL) {
        struct client_call *call = c->done;

        list_del(&c->done, call);
        call_free(call);
    }
}

void pg_grpcc_stream_callbacks(nghttp2_session_callbacks *cbs)
{
    nghttp2_session_callbacks_set_on_header_callback(cbs, header_cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, data_chunk_cb);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, stream_close_cb);
}
