/* SPDX-License-Identifier: Apache-2.0
 * The gRPC-over-HTTP/2 wire details the gRPC client and server share, kept
 * free of any socket or nghttp2 state so they can be unit-tested and fuzzed:
 * status codes and their retry rules, grpc-timeout formatting and parsing,
 * grpc-message percent coding, the 5-byte length-prefixed message reader,
 * and the small google.rpc.Status / RetryInfo decoder and encoder for
 * grpc-status-details-bin. */
#ifndef PG_GRPC_GRPC_WIRE_H
#define PG_GRPC_GRPC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* gRPC status codes (grpc/doc/statuscodes.md). */
enum pg_grpc_code {
    PG_GRPC_OK = 0,
    PG_GRPC_CANCELLED = 1,
    PG_GRPC_UNKNOWN = 2,
    PG_GRPC_INVALID_ARGUMENT = 3,
    PG_GRPC_DEADLINE_EXCEEDED = 4,
    PG_GRPC_NOT_FOUND = 5,
    PG_GRPC_ALREADY_EXISTS = 6,
    PG_GRPC_PERMISSION_DENIED = 7,
    PG_GRPC_RESOURCE_EXHAUSTED = 8,
    PG_GRPC_FAILED_PRECONDITION = 9,
    PG_GRPC_ABORTED = 10,
    PG_GRPC_OUT_OF_RANGE = 11,
    PG_GRPC_UNIMPLEMENTED = 12,
    PG_GRPC_INTERNAL = 13,
    PG_GRPC_UNAVAILABLE = 14,
    PG_GRPC_DATA_LOSS = 15,
    PG_GRPC_UNAUTHENTICATED = 16,
};

/* "UNAVAILABLE", ...; "CODE_<n>" style text is never returned: unknown
 * numbers give "UNKNOWN_CODE". */
const char *pg_grpc_code_name(int code);
/* The OTLP retry rule: CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE,
 * UNAVAILABLE, DATA_LOSS always; RESOURCE_EXHAUSTED only when the server sent
 * RetryInfo; nothing else. */
bool pg_grpc_code_retryable(int code, bool has_retry_info);
/* gRPC code for a response that has an HTTP :status but no grpc-status, the
 * way grpc-go maps it (400->INTERNAL, 401->UNAUTHENTICATED,
 * 403->PERMISSION_DENIED, 404->UNIMPLEMENTED, 429/502/503/504->UNAVAILABLE,
 * anything else UNKNOWN). */
int pg_grpc_code_from_http(int http_status);
/* Parses a grpc-status header value (decimal, 0..INT32_MAX); false if bad. */
bool pg_grpc_status_parse(const char *s, size_t len, int *code);

/* Formats @ns as a grpc-timeout value ("<=8 digits><unit>", rounding up so
 * the server never sees a shorter deadline than ours). @buf needs 10 bytes.
 * Returns the length. */
size_t pg_grpc_timeout_format(int64_t ns, char *buf, size_t cap);
/* Parses a grpc-timeout value back to ns; false if malformed. */
bool pg_grpc_timeout_parse(const char *s, size_t len, int64_t *ns);

/* Percent-decodes a grpc-message value into @out (capacity >= @len + 1, NUL
 * terminated). Malformed escapes are kept literally, as the spec asks.
 * Returns the decoded length. */
size_t pg_grpc_message_decode(const char *in, size_t len, char *out);

/* Percent-encodes @in (NUL-terminated) as a grpc-message value: bytes
 * outside 0x20..0x7E and '%' become %XX. Into @out (@cap bytes, NUL
 * terminated, cut short at a whole escape). Returns the length. */
size_t pg_grpc_message_encode(const char *in, char *out, size_t cap);

/* What a google.rpc.Status from grpc-status-details-bin tells us. */
struct pg_grpc_status_details {
    int code;                /* Status.code (0 if absent) */
    bool has_retry_info;     /* a google.rpc.RetryInfo detail was present */
    int64_t retry_delay_ns;  /* its retry_delay, clamped to >= 0 */
};

/* Decodes the protobuf bytes of a google.rpc.Status (already base64-decoded).
 * Unknown details are skipped. Returns false when the bytes are malformed. */
bool pg_grpc_status_details_parse(const uint8_t *buf, size_t len,
                                  struct pg_grpc_status_details *out);

/* Encodes a google.rpc.Status {code, message, details: [RetryInfo
 * {retry_delay}] when @retry_delay_ns >= 0} into @out (the inverse of
 * pg_grpc_status_details_parse). Returns the length, 0 when @cap is short. */
size_t pg_grpc_status_details_encode(int code, const char *message, int64_t retry_delay_ns,
                                     uint8_t *out, size_t cap);

/* Incremental reader of the length-prefixed messages in a gRPC response
 * body. A unary call carries at most one message each way; a second one, or
 * a message over @max bytes, is an error. Owns its buffer (malloc), made
 * when the first byte after the prefix arrives (a server may refuse the
 * declared length before any of it is buffered). */
struct pg_grpc_reader {
    uint8_t hdr[5];
    size_t hdr_got;
    bool compressed;     /* flag byte of the current message */
    size_t need;         /* declared length of the current message */
    uint8_t *buf;        /* message bytes, malloc'd */
    size_t got;
    size_t max;          /* cap on one message */
    unsigned n_msgs;     /* complete messages seen */
};

void pg_grpc_reader_init(struct pg_grpc_reader *r, size_t max);
void pg_grpc_reader_free(struct pg_grpc_reader *r);
/* Feeds body bytes. Returns OK, LIMIT (message too big) or MALFORMED (second
 * message, bad flag byte) with a message in @st. */
enum pg_err pg_grpc_reader_feed(struct pg_grpc_reader *r, const uint8_t *data, size_t len,
                                struct pg_status *st);
/* True when a complete message was read and no partial one is pending. */
bool pg_grpc_reader_done(const struct pg_grpc_reader *r);
/* True when bytes of an unfinished message are buffered (a cut body). */
bool pg_grpc_reader_partial(const struct pg_grpc_reader *r);

/* Bytes still missing from the current 5-byte prefix (0 inside a message
 * body). A server feeds exactly these first to see the declared length. */
size_t pg_grpc_reader_prefix_want(const struct pg_grpc_reader *r);

/* Writes the 5-byte message prefix. */
void pg_grpc_prefix_write(uint8_t out[5], bool compressed, uint32_t len);

#endif
