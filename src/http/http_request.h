/* SPDX-License-Identifier: Apache-2.0
 * Request-handling helpers of the pprof HTTP receiver that do not need a
 * socket: Content-Encoding parsing and the bounded decoding chain, request
 * headers to batch metadata, peer address formatting. Kept apart from the
 * HTTP server glue so unit tests and the fuzzer can drive them directly. */
#ifndef PG_HTTP_HTTP_REQUEST_H
#define PG_HTTP_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "core/err.h"

struct evkeyvalq;

/* Names accepted in `compression_algorithms` and in Content-Encoding, as
 * bits: "" and "identity" are one coding; "x-gzip" is an alias of "gzip";
 * "deflate" and "zlib" are both RFC 1950 zlib streams (as the collector). */
enum pg_http_coding_bit {
    PG_HTTP_ALLOW_IDENTITY = 1u << 0,
    PG_HTTP_ALLOW_GZIP = 1u << 1,
    PG_HTTP_ALLOW_DEFLATE = 1u << 2,
    PG_HTTP_ALLOW_ZLIB = 1u << 3,
};
#define PG_HTTP_ALLOW_ALL                                                                          \
    (PG_HTTP_ALLOW_IDENTITY | PG_HTTP_ALLOW_GZIP | PG_HTTP_ALLOW_DEFLATE | PG_HTTP_ALLOW_ZLIB)

/* A decoder step. */
enum pg_http_coding { PG_HTTP_CODING_GZIP = 0, PG_HTTP_CODING_ZLIB };

/* Codings in the order the sender applied them (decode last to first).
 * Identity entries are dropped while parsing. */
#define PG_HTTP_MAX_CODINGS 4
struct pg_http_codings {
    size_t n;
    enum pg_http_coding v[PG_HTTP_MAX_CODINGS];
};

/* Maps one `compression_algorithms` entry to its bit; 0 when pprofgate cannot
 * decode it (zstd, snappy, lz4, ...). Case-insensitive. */
unsigned pg_http_coding_bit_from_name(const char *name);
/* "identity, gzip, deflate" for the allowed bits, into @buf (always NUL-terminated). */
void pg_http_allowed_list(unsigned allowed, char *buf, size_t size);

/* Parses one Content-Encoding header value (a comma list, case-insensitive,
 * whitespace around items ignored) and appends its codings to @out, which the
 * caller zeroes before the first header line. An empty value is identity.
 * Errors: UNSUPPORTED (415) naming the coding and listing @allowed;
 * LIMIT (413) for more than PG_HTTP_MAX_CODINGS layers. */
enum pg_err pg_http_parse_content_encoding(const char *value, unsigned allowed,
                                           struct pg_http_codings *out, struct pg_status *st);

/* Removes the codings from @in (borrowed), last applied first. Each decoded
 * layer is capped at @max_layer bytes (LIMIT, inflating stops at the cap).
 * *@out points into @arena, or is @in itself when there is nothing to decode.
 * *@inflated_bytes (may be NULL) adds up the size of every decoded layer.
 * Errors: MALFORMED with zlib's reason, LIMIT, NOMEM. */
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
/* The same in @arena; NULL when @addr is NULL or on OOM. */
char *pg_http_format_peer(struct pg_arena *arena, const char *addr, unsigned port);

/* Validates a header name/value pair from config `response_headers`: a token
 * name and a value without CR/LF/NUL. */
bool pg_http_header_ok(const char *name, const char *value);

#endif
