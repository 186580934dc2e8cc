/* SPDX-License-Identifier: Apache-2.0
 * Request-handling helpers of the pprof HTTP receiver that do not need a
 * socket: Content-Encoding parsing and the bounded decoding chain (the
 * codings and their decoders are the codec table's, codec/codec.h), request
 * headers to batch metadata, peer address formatting. Kept apart from the
 * HTTP server glue so unit tests and the fuzzer can drive them directly. */
#ifndef PG_HTTP_HTTP_REQUEST_H
#define PG_HTTP_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"
#include "core/arena.h"
#include "pipeline/batch.h"
#include "core/err.h"

struct evkeyvalq;

/* Codings in the order the sender applied them (decode last to first), as
 * rows of the codec table (codec/codec.h). Identity entries are dropped
 * while parsing, so every entry has a decoder. */
#define PG_HTTP_MAX_CODINGS 4
struct pg_http_codings {
    size_t n;
    const struct pg_codec *v[PG_HTTP_MAX_CODINGS]; /* borrowed: static table rows */
};

/* Parses one Content-Encoding header value (a comma list, case-insensitive,
 * whitespace around items ignored) and appends its codings to @out, which the
 * caller zeroes before the first header line. An empty value is identity.
 * @allowed is a set of codec rows (pg_codec_bit).
 * Errors: UNSUPPORTED (415) naming the coding and listing @allowed;
 * LIMIT (413) for more than PG_HTTP_MAX_CODINGS layers. */
enum pg_err pg_http_parse_content_encoding(const char *value, unsigned allowed,
                                           struct pg_http_codings *out, struct pg_status *st);

/* Removes the codings from @in (borrowed), last applied first. Each decoded
 * layer is capped at @max_layer bytes (LIMIT, inflating stops at the cap).
 * *@out points into @arena, or is @in itself when there is nothing to decode.
 * *@inflated_bytes (may be NULL) adds up the size of every decoded layer.
 * Errors: MALFORMED with the decoder's reason, LIMIT, NOMEM. */
enum pg_err pg_http_decode_body(struct pg_arena *arena, const uint8_t *in, size_t len,
                                const struct pg_http_codings *codings, size_t max_layer,
                                const uint8_t **out, size_t *out_len, size_t *inflated_bytes,
                                struct pg_status *st);

/* Copies every header of @headers (borrowed) into @md as metadata in @arena:
 * keys lower-cased, a repeated header line gives one more entry, values kept
 * as sent. When no "host" header exists and @host is not NULL, adds it (as
 * the collector does from req.Host). @md->peer_addr is left alone.
 * Errors: NOMEM / LIMIT from the arena. */
enum pg_err pg_http_metadata_from_headers(struct pg_arena *arena, const struct evkeyvalq *headers,
                                          const char *host, struct pg_metadata *md,
                                          struct pg_status *st);

/* "1.2.3.4:5678", or "[::1]:5678" for addresses holding ':', into @buf
 * (snprintf's result). */
int pg_http_hostport(char *buf, size_t size, const char *addr, unsigned port);

/* Validates a header name/value pair from config `response_headers`: a token
 * name and a value without CR/LF/NUL. */
bool pg_http_header_ok(const char *name, const char *value);

#endif
