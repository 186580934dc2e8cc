/* SPDX-License-Identifier: Apache-2.0
 * A strict HTTP/1.x request parser with no I/O: the head (request line and
 * header block, parsed whole once its blank line is in) and an incremental
 * chunked-body decoder. Strict where lenience lets two parsers disagree about
 * where a request ends (request smuggling): Content-Length and
 * Transfer-Encoding together, differing Content-Length values, any
 * transfer coding but a lone "chunked", obs-fold, whitespace before the
 * colon, bare CR, NUL or other control bytes, chunk sizes that are not plain
 * hex. Every refusal is a status code with a one-line reason. */
#ifndef PG_HTTP_HTTP_PARSE_H
#define PG_HTTP_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evkeyval;
struct evkeyvalq;

#define PG_HTTP_NO_LENGTH UINT64_MAX

/* What the head says; strings point into the caller's buffer copy (see
 * pg_http_parse_head), headers are appended to the caller's evkeyvalq. */
struct pg_http_head {
    char method[24];
    char *target;          /* request-target as sent (NUL-terminated, in @buf) */
    int minor;             /* HTTP/1.<minor>: 0 or 1 */
    uint64_t content_length; /* PG_HTTP_NO_LENGTH when absent */
    bool chunked;          /* Transfer-Encoding: chunked */
    bool keep_alive;       /* after this request (version default + Connection) */
    bool expect_continue;  /* Expect: 100-continue */
    size_t n_headers;
};

struct pg_http_parse_limits {
    size_t max_target;     /* request-target bytes (414 past it) */
    size_t max_headers;    /* header lines (431 past it) */
};

/* Parses a complete head: @buf holds @len bytes ending with the blank line
 * (CRLF CRLF, or LF LF) and is modified in place (NULs written after each
 * token). Headers go to @hdrs (evhttp_add_header: keys as sent). Returns 0
 * on success, else an HTTP status (400, 414, 417, 431, 501, 505) with the
 * reason in @why. */
int pg_http_parse_head(char *buf, size_t len, const struct pg_http_parse_limits *lim,
                       struct evkeyvalq *hdrs, struct pg_http_head *out, char *why,
                       size_t why_size);

/* The same without allocating: header @i becomes @slots[i], its key and
 * value pointing into @buf, linked into @hdrs (which the caller must then
 * never pass to evhttp_clear_headers). @n_slots at least
 * pg_http_head_lines(@buf, @len) holds every header; past @n_slots: 431. */
int pg_http_parse_head_in(char *buf, size_t len, const struct pg_http_parse_limits *lim,
                          struct evkeyvalq *hdrs, struct evkeyval *slots, size_t n_slots,
                          struct pg_http_head *out, char *why, size_t why_size);
/* Line feeds in @buf: an upper bound of its header lines. */
size_t pg_http_head_lines(const char *buf, size_t len);

/* The value of the first header named @name (ASCII case-insensitive) in @h, or NULL: as
 * evhttp_find_header, cheaper (the first byte and then glibc's strcasecmp, where libevent
 * calls a function per byte); a receiver looks up a few per request. */
const char *pg_http_find_header(const struct evkeyvalq *h, const char *name);

/* Incremental chunked-body decoder. Zero it to start. */
struct pg_http_chunked {
    int state;
    uint64_t left;         /* data bytes left in the current chunk */
    size_t line;           /* bytes of the current size/trailer line seen */
    size_t trailer_bytes;
    bool saw_digit, in_ext, cr;
};

enum pg_http_chunk_rc {
    PG_HTTP_CHUNK_MORE = 0, /* consumed what it could; feed more */
    PG_HTTP_CHUNK_DONE,     /* the last chunk and trailers are in: body complete */
    PG_HTTP_CHUNK_ERROR,    /* malformed: 400 with @why */
};

/* Feeds @len bytes of @in. *@consumed says how many were used. When the
 * decoder is inside chunk data, *@data_len (> 0) of those consumed bytes,
 * starting at @in[0], are body data; otherwise *@data_len is 0 and the
 * consumed bytes were framing. Call again with the rest. */
enum pg_http_chunk_rc pg_http_chunked_feed(struct pg_http_chunked *c, const uint8_t *in,
                                           size_t len, size_t *consumed, size_t *data_len,
                                           char *why, size_t why_size);

#endif
