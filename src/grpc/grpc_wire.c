/* SPDX-License-Identifier: Apache-2.0
 * gRPC wire helpers for the OTLP exporter: status codes, grpc-timeout,
 * grpc-message decoding, the length-prefixed message reader and a hand-written
 * decoder for the few google.rpc.Status / RetryInfo fields we honour. */
#include "grpc/grpc_wire.h"

#include "core/hex.h"
#include "core/pb_wire.h"
#include "core/vec.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const char *const code_names[] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

const char *pg_grpc_code_name(int code)
{
    if (code < 0 || (size_t)code >= sizeof(code_names) / sizeof(code_names[0])) {
        return "UNKNOWN_CODE";
    }
    return code_names[code];
}

bool pg_grpc_code_retryable(int code, bool has_retry_info)
{
    switch (code) {
    case PG_GRPC_CANCELLED:
    case PG_GRPC_DEADLINE_EXCEEDED:
    case PG_GRPC_ABORTED:
    case PG_GRPC_OUT_OF_RANGE:
    case PG_GRPC_UNAVAILABLE:
    case PG_GRPC_DATA_LOSS:
        return true;
    case PG_GRPC_RESOURCE_EXHAUSTED:
        return has_retry_info;
    default:
        return false;
    }
}

int pg_grpc_code_from_http(int http_status)
{
    switch (http_status) {
    case 400:
        return PG_GRPC_INTERNAL;
    case 401:
        return PG_GRPC_UNAUTHENTICATED;
    case 403:
        return PG_GRPC_PERMISSION_DENIED;
    case 404:
        return PG_GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return PG_GRPC_UNAVAILABLE;
    default:
        return PG_GRPC_UNKNOWN;
    }
}

bool pg_grpc_status_parse(const char *s, size_t len, int *code)
{
    long v = 0;

    if (len == 0 || len > 10) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    if (v > INT_MAX) {
        return false;
    }
    *code = (int)v;
    return true;
}

size_t pg_grpc_timeout_format(int64_t ns, char *buf, size_t cap)
{
    /* Units from finest to coarsest; pick the finest that fits in 8 digits. */
    static const struct {
        char unit;
        int64_t ns;
    } units[] = {
        {'n', 1}, {'u', 1000}, {'m', 1000000}, {'S', 1000000000LL},
        {'M', 60000000000LL}, {'H', 3600000000000LL},
    };
    int64_t v = 0;
    char unit = 'H';
    int n;

    if (ns < 1) {
        ns = 1; /* a zero or negative budget still has to be a valid header */
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        v = ns / units[i].ns + (ns % units[i].ns != 0);
        unit = units[i].unit;
        if (v <= 99999999) {
            break;
        }
    }
    if (v > 99999999) {
        v = 99999999;
    }
    n = snprintf(buf, cap, "%lld%c", (long long)v, unit);
    return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}

bool pg_grpc_timeout_parse(const char *s, size_t len, int64_t *ns)
{
    int64_t v = 0;
    int64_t mul;

    if (len < 2 || len > 9) {
        return false;
    }
    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    switch (s[len - 1]) {
    case 'n': mul = 1; break;
    case 'u': mul = 1000; break;
    case 'm': mul = 1000000; break;
    case 'S': mul = 1000000000LL; break;
    case 'M': mul = 60000000000LL; break;
    case 'H': mul = 3600000000000LL; break;
    default: return false;
    }
    if (v > INT64_MAX / mul) {
        return false;
    }
    *ns = v * mul;
    return true;
}

size_t pg_grpc_message_decode(const char *in, size_t len, char *out)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        int hi;
        int lo;

        if (in[i] == '%' && i + 2 < len && (hi = pg_hex_digit((unsigned char)in[i + 1])) >= 0 &&
            (lo = pg_hex_digit((unsigned char)in[i + 2])) >= 0) {
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = in[i];
        }
    }
    out[o] = '\0';
    return o;
}

/* ---- minimal protobuf reading ------------------------------------------ */

/* google.protobuf.Duration {int64 seconds = 1; int32 nanos = 2;} */
static bool parse_duration(struct pg_pb r, int64_t *ns)
{
    int64_t secs = 0;
    int64_t nanos = 0;

    while (r.p < r.end) {
        uint32_t num;
        uint32_t wt;
        uint64_t v = 0;
        struct pg_pb sub;

        if (!pg_pb_field(&r, &num, &wt, &v, &sub)) {
            return false;
        }
        if (num == 1 && wt == PG_PB_VARINT) {
            secs = (int64_t)v;
        } else if (num == 2 && wt == PG_PB_VARINT) {
            nanos = (int32_t)v;
        }
    }
    if (secs < 0 || nanos < 0) {
        *ns = 0;
        return true;
    }
    if (secs > INT64_MAX / 1000000000LL - 1) {
        secs = INT64_MAX / 1000000000LL - 1;
    }
    *ns = secs * 1000000000LL + nanos;
    return true;
}

static const char retry_info_url[] = "type.googleapis.com/google.rpc.RetryInfo";

/* google.protobuf.Any {string type_url = 1; bytes value = 2;} */
static bool parse_any(struct pg_pb r, struct pg_grpc_status_details *out)
{
    struct pg_pb type = {NULL, NULL};
    struct pg_pb value = {NULL, NULL};

    while (r.p < r.end) {
        uint32_t num;
        uint32_t wt;
        uint64_t v;
        struct pg_pb sub = {NULL, NULL};

        if (!pg_pb_field(&r, &num, &wt, &v, &sub)) {
            return false;
        }
        if (num == 1 && wt == PG_PB_LEN) {
            type = sub;
        } else if (num == 2 && wt == PG_PB_LEN) {
            value = sub;
        }
    }
    if (type.p != NULL && (size_t)(type.end - type.p) == sizeof(retry_info_url) - 1 &&
        memcmp(type.p, retry_info_url, sizeof(retry_info_url) - 1) == 0) {
        /* RetryInfo {google.protobuf.Duration retry_delay = 1;} */
        out->has_retry_info = true;
        while (value.p != NULL && value.p < value.end) {
            uint32_t num;
            uint32_t wt;
            uint64_t v;
            struct pg_pb sub = {NULL, NULL};

            if (!pg_pb_field(&value, &num, &wt, &v, &sub)) {
                return false;
            }
            if (num == 1 && wt == PG_PB_LEN && !parse_duration(sub, &out->retry_delay_ns)) {
                return false;
            }
        }
    }
    return true;
}

bool pg_grpc_status_details_parse(const uint8_t *buf, size_t len,
                                  struct pg_grpc_status_details *out)
{
    struct pg_pb r = {buf, buf + len};

    memset(out, 0, sizeof(*out));
    /* google.rpc.Status {int32 code = 1; string message = 2; repeated Any details = 3;} */
    while (r.p < r.end) {
        uint32_t num;
        uint32_t wt;
        uint64_t v = 0;
        struct pg_pb sub = {NULL, NULL};

        if (!pg_pb_field(&r, &num, &wt, &v, &sub)) {
            return false;
        }
        if (num == 1 && wt == PG_PB_VARINT) {
            out->code = (int)(int32_t)v;
        } else if (num == 3 && wt == PG_PB_LEN && !parse_any(sub, out)) {
            return false;
        }
    }
    return true;
}

/* ---- length-prefixed messages ------------------------------------------ */

void pg_grpc_reader_init(struct pg_grpc_reader *r, size_t max)
{
    memset(r, 0, sizeof(*r));
    r->max = max;
}

void pg_grpc_reader_free(struct pg_grpc_reader *r)
{
    free(r->buf);
    r->buf = NULL;
}

enum pg_err pg_grpc_reader_feed(struct pg_grpc_reader *r, const uint8_t *data, size_t len,
                                struct pg_status *st)
{
    while (len > 0) {
        size_t take;

        if (r->hdr_got < 5) {
            take = 5 - r->hdr_got;
            take = take < len ? take : len;
            memcpy(r->hdr + r->hdr_got, data, take);
            r->hdr_got += take;
            data += take;
            len -= take;
            if (r->hdr_got < 5) {
                break;
            }
            if (r->n_msgs > 0) {
                return pg_status_set(st, PG_ERR_MALFORMED,
                                     "unary gRPC call carries more than one message");
            }
            if (r->hdr[0] > 1) {
                return pg_status_set(st, PG_ERR_MALFORMED,
                                     "gRPC message has invalid flags byte 0x%02x", r->hdr[0]);
            }
            r->compressed = r->hdr[0] == 1;
            r->need = (size_t)r->hdr[1] << 24 | (size_t)r->hdr[2] << 16 |
                      (size_t)r->hdr[3] << 8 | r->hdr[4];
            if (r->need > r->max) {
                return pg_status_set(st, PG_ERR_LIMIT,
                                     "gRPC message of %zu bytes exceeds the %zu-byte cap",
                                     r->need, r->max);
            }
            /* The buffer comes with the first body byte, so a server can
             * admit the declared length between prefix and body. */
            free(r->buf);
            r->buf = NULL;
            r->got = 0;
            if (r->need > 0) {
                continue;
            }
        }
        if (r->buf == NULL) {
            r->buf = malloc(r->need ? r->need : 1);
            if (r->buf == NULL) {
                return pg_status_set(st, PG_ERR_NOMEM, "no memory for a gRPC message");
            }
        }
        take = r->need - r->got;
        take = take < len ? take : len;
        memcpy(r->buf + r->got, data, take);
        r->got += take;
        data += take;
        len -= take;
        if (r->got == r->need) {
            r->n_msgs++;
            /* Header is reset so a following message is detected as the second. */
            r->hdr_got = 0;
            if (len > 0) {
                continue;
            }
        }
    }
    return PG_ERR_OK;
}

bool pg_grpc_reader_done(const struct pg_grpc_reader *r)
{
    return r->n_msgs == 1 && r->hdr_got == 0;
}

bool pg_grpc_reader_partial(const struct pg_grpc_reader *r)
{
    return r->hdr_got > 0;
}

size_t pg_grpc_reader_prefix_want(const struct pg_grpc_reader *r)
{
    return r->hdr_got < 5 ? 5 - r->hdr_got : 0;
}

/* ---- answers -------------------------------------------------------------- */

size_t pg_grpc_message_encode(const char *in, char *out, size_t cap)
{
    static const char hexd[] = "0123456789ABCDEF";
    size_t n = 0;

    if (cap == 0) {
        return 0;
    }
    for (; *in != '\0'; in++) {
        unsigned char ch = (unsigned char)*in;

        if (ch >= 0x20 && ch <= 0x7e && ch != '%') {
            if (n + 1 >= cap) {
                break;
            }
            out[n++] = (char)ch;
        } else {
            if (n + 3 >= cap) {
                break;
            }
            out[n++] = '%';
            out[n++] = hexd[ch >> 4];
            out[n++] = hexd[ch & 15];
        }
    }
    out[n] = '\0';
    return n;
}

/* Appends a length-delimited field's key and length. */
static uint8_t *put_len(uint8_t *p, uint32_t field, size_t len)
{
    p = pg_pb_put_varint(p, pg_pb_key(field, PG_PB_LEN));
    return pg_pb_put_varint(p, len);
}

size_t pg_grpc_status_details_encode(int code, const char *message, int64_t retry_delay_ns,
                                     uint8_t *out, size_t cap)
{
    /* Duration {int64 seconds = 1; int32 nanos = 2;} in RetryInfo {retry_delay = 1}
     * in Any {type_url = 1; value = 2} in Status {code = 1; message = 2; details = 3}. */
    uint64_t secs = retry_delay_ns > 0 ? (uint64_t)(retry_delay_ns / 1000000000LL) : 0;
    uint64_t nanos = retry_delay_ns > 0 ? (uint64_t)(retry_delay_ns % 1000000000LL) : 0;
    size_t msg_len = message != NULL ? strlen(message) : 0;
    size_t url_len = sizeof(retry_info_url) - 1;
    size_t dur = (secs ? 1 + pg_pb_varint_len(secs) : 0) + (nanos ? 1 + pg_pb_varint_len(nanos) : 0);
    size_t ri = 1 + pg_pb_varint_len(dur) + dur;
    size_t any = 1 + pg_pb_varint_len(url_len) + url_len + 1 + pg_pb_varint_len(ri) + ri;
    size_t total = (code != 0 ? 1 + pg_pb_varint_len((uint64_t)(int64_t)code) : 0) +
                   (msg_len ? 1 + pg_pb_varint_len(msg_len) + msg_len : 0) +
                   (retry_delay_ns >= 0 ? 1 + pg_pb_varint_len(any) + any : 0);
    uint8_t *p = out;

    if (total > cap) {
        return 0;
    }
    if (code != 0) {
        p = pg_pb_put_varint(p, pg_pb_key(1, PG_PB_VARINT));
        p = pg_pb_put_varint(p, (uint64_t)(int64_t)code);
    }
    if (msg_len) {
        p = put_len(p, 2, msg_len);
        memcpy(p, message, msg_len);
        p += msg_len;
    }
    if (retry_delay_ns >= 0) {
        p = put_len(p, 3, any);
        p = put_len(p, 1, url_len);
        memcpy(p, retry_info_url, url_len);
        p += url_len;
        p = put_len(p, 2, ri);
        p = put_len(p, 1, dur);
        if (secs) {
            p = pg_pb_put_varint(p, pg_pb_key(1, PG_PB_VARINT));
            p = pg_pb_put_varint(p, secs);
        }
        if (nanos) {
            p = pg_pb_put_varint(p, pg_pb_key(2, PG_PB_VARINT));
            p = pg_pb_put_varint(p, nanos);
        }
    }
    return (size_t)(p - out);
}

void pg_grpc_prefix_write(uint8_t out[5], bool compressed, uint32_t len)
{
    out[0] = compressed ? 1 : 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}
