/* SPDX-License-Identifier: Apache-2.0
 * Strict HTTP/1.x request parsing (see http_parse.h). Pure functions over
 * caller-owned bytes; the only allocation is evhttp_add_header's copy of
 * each header into the caller's list. */
#include "http/http_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "core/hex.h"

#define MAX_CHUNK_LINE 4096
#define MAX_TRAILER_BYTES (16 * 1024)

static int failf(char *why, size_t size, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int failf(char *why, size_t size, int code, const char *fmt, ...)
{
    va_list ap;

    if (why != NULL && size > 0) {
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* RFC 9110 tchar. */
/* RFC 9110 tchar, one table lookup a byte (every header name byte is checked). */
static const bool tchar_table[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
    ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1,
};

static inline bool is_tchar(unsigned char c)
{
    return tchar_table[c];
}

/* field-vchar, SP or HTAB (obs-text allowed; every other control byte is not). */
static inline bool is_value_byte(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* How many leading bytes of @s[0..n), taken sixteen at a time, are all in [@lo, 0x7e]: the
 * byte checks after it see only the rest, so a long target or header value (a Pyroscope
 * query of ~400 bytes) costs a few instructions per sixteen bytes (GCC/clang vectors: SSE2
 * on x86-64, plain code elsewhere). */
typedef uint8_t pg_v16u8 __attribute__((vector_size(16)));
static size_t printable_prefix(const char *s, size_t n, unsigned char lo)
{
    size_t i = 0;

    for (; n - i >= 16; i += 16) {
        pg_v16u8 w;
        uint64_t bad[2];

        memcpy(&w, s + i, 16);
        pg_v16u8 out = (pg_v16u8)((w < lo) | (w > 0x7e)); /* 0xff per byte outside */
        memcpy(bad, &out, 16);
        if ((bad[0] | bad[1]) != 0) {
            break;
        }
    }
    return i;
}

/* Case-insensitive compare of [s, s+n) with the NUL-terminated @lit. */
static bool eq_ci(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

/* Calls @fn on each comma-separated, OWS-trimmed item of @v (empty items
 * skipped, as RFC 9110's list rule allows). Stops at the first non-zero. */
static int for_each_item(const char *v, int (*fn)(const char *s, size_t n, void *arg), void *arg)
{
    while (*v != '\0') {
        const char *end = strchr(v, ',');
        size_t n = end ? (size_t)(end - v) : strlen(v);
        const char *s = v;
        int rc;

        while (n > 0 && (*s == ' ' || *s == '\t')) {
            s++;
            n--;
        }
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) {
            n--;
        }
        if (n > 0 && (rc = fn(s, n, arg)) != 0) {
            return rc;
        }
        if (end == NULL) {
            break;
        }
        v = end + 1;
    }
    return 0;
}

struct head_state {
    struct pg_http_head *out;
    bool has_cl, has_te, conn_close, conn_keep;
    int hosts;
    char *why;
    size_t why_size;
};

static int te_item(const char *s, size_t n, void *arg)
{
    struct head_state *h = arg;

    if (!eq_ci(s, n, "chunked")) {
        return failf(h->why, h->why_size, 501, "Transfer-Encoding \"%.*s\" not supported "
                     "(only chunked)", (int)(n > 40 ? 40 : n), s);
    }
    if (h->out->chunked) {
        return failf(h->why, h->why_size, 400, "Transfer-Encoding lists chunked twice");
    }
    h->out->chunked = true;
    return 0;
}

static int conn_item(const char *s, size_t n, void *arg)
{
    struct head_state *h = arg;

    if (eq_ci(s, n, "close")) {
        h->conn_close = true;
    } else if (eq_ci(s, n, "keep-alive")) {
        h->conn_keep = true;
    }
    return 0;
}

static int content_length(struct head_state *h, const char *v)
{
    uint64_t n = 0;
    size_t digits = 0;

    for (const char *p = v; *p != '\0'; p++, digits++) {
        if (*p < '0' || *p > '9' || digits >= 18) {
            return failf(h->why, h->why_size, 400, "invalid Content-Length \"%.40s\"", v);
        }
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (digits == 0) {
        return failf(h->why, h->why_size, 400, "empty Content-Length");
    }
    if (h->has_cl && n != h->out->content_length) {
        return failf(h->why, h->why_size, 400, "differing Content-Length headers");
    }
    h->has_cl = true;
    h->out->content_length = n;
    return 0;
}

static int special_header(struct head_state *h, const char *name, size_t nlen, const char *v)
{
    if (eq_ci(name, nlen, "Content-Length")) {
        return content_length(h, v);
    }
    if (eq_ci(name, nlen, "Transfer-Encoding")) {
        h->has_te = true;
        if (v[0] == '\0') {
            return failf(h->why, h->why_size, 400, "empty Transfer-Encoding");
        }
        return for_each_item(v, te_item, h);
    }
    if (eq_ci(name, nlen, "Connection")) {
        return for_each_item(v, conn_item, h);
    }
    if (eq_ci(name, nlen, "Expect")) {
        if (strcasecmp(v, "100-continue") != 0) {
            return failf(h->why, h->why_size, 417, "unsupported Expect \"%.40s\"", v);
        }
        h->out->expect_continue = true;
        return 0;
    }
    if (eq_ci(name, nlen, "Host")) {
        h->hosts++;
    }
    return 0;
}

/* The request line "METHOD SP target SP HTTP/1.x", NUL-terminated in place. */
static int request_line(char *line, const struct pg_http_parse_limits *lim,
                        struct pg_http_head *out, char *why, size_t why_size)
{
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    const char *ver;
    size_t mlen, tlen;

    if (sp1 == NULL || sp2 == NULL || strchr(sp2 + 1, ' ') != NULL) {
        return failf(why, why_size, 400, "malformed request line");
    }
    mlen = (size_t)(sp1 - line);
    tlen = (size_t)(sp2 - sp1 - 1);
    if (mlen == 0 || mlen >= sizeof(out->method)) {
        return failf(why, why_size, mlen == 0 ? 400 : 501, "method not supported");
    }
    for (size_t i = 0; i < mlen; i++) {
        if (!is_tchar((unsigned char)line[i])) {
            return failf(why, why_size, 400, "malformed method");
        }
    }
    if (tlen == 0) {
        return failf(why, why_size, 400, "empty request target");
    }
    if (lim->max_target > 0 && tlen > lim->max_target) {
        return failf(why, why_size, 414, "request target of %zu bytes is longer than %zu", tlen,
                     lim->max_target);
    }
    for (size_t i = printable_prefix(sp1 + 1, tlen, 0x21); i < tlen; i++) {
        unsigned char c = (unsigned char)sp1[1 + i];

        if (c <= 0x20 || c >= 0x7f) {
            return failf(why, why_size, 400, "invalid byte in the request target");
        }
    }
    ver = sp2 + 1;
    if (strncmp(ver, "HTTP/", 5) != 0 || ver[5] < '0' || ver[5] > '9' || ver[6] != '.' ||
        ver[7] < '0' || ver[7] > '9' || ver[8] != '\0') {
        return failf(why, why_size, 400, "malformed HTTP version");
    }
    if (ver[5] != '1' || ver[7] > '1') {
        return failf(why, why_size, 505, "HTTP version %s not supported (HTTP/1.0, HTTP/1.1)",
                     ver);
    }
    memcpy(out->method, line, mlen);
    out->method[mlen] = '\0';
    *sp2 = '\0';
    out->target = sp1 + 1;
    out->minor = ver[7] - '0';
    return 0;
}

int pg_http_parse_head(char *buf, size_t len, const struct pg_http_parse_limits *lim,
                       struct evkeyvalq *hdrs, struct pg_http_head *out, char *why,
                       size_t why_size)
{
    return pg_http_parse_head_in(buf, len, lim, hdrs, NULL, 0, out, why, why_size);
}

size_t pg_http_head_lines(const char *buf, size_t len)
{
    size_t n = 0;

    for (const char *p = buf, *e = buf + len; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++) {
        n++;
    }
    return n;
}

int pg_http_parse_head_in(char *buf, size_t len, const struct pg_http_parse_limits *lim,
                          struct evkeyvalq *hdrs, struct evkeyval *slots, size_t n_slots,
                          struct pg_http_head *out, char *why, size_t why_size)
{
    struct head_state h = {.out = out, .why = why, .why_size = why_size};
    size_t pos = 0;
    bool first = true;
    int rc;

    memset(out, 0, sizeof(*out));
    out->content_length = PG_HTTP_NO_LENGTH;
    /* RFC 9112 2.2: empty lines before the request line are ignored. */
    while (pos < len && (buf[pos] == '\r' || buf[pos] == '\n')) {
        if (buf[pos] == '\r' && (pos + 1 >= len || buf[pos + 1] != '\n')) {
            return failf(why, why_size, 400, "bare CR in the request head");
        }
        pos++;
    }
    while (pos < len) {
        char *line = buf + pos;
        char *nl = memchr(line, '\n', len - pos);
        size_t n;

        if (nl == NULL) {
            return failf(why, why_size, 400, "request head without its blank line");
        }
        n = (size_t)(nl - line);
        pos += n + 1;
        if (n > 0 && line[n - 1] == '\r') {
            n--;
        }
        /* libc's vector scans, not a byte loop: every head byte passes here */
        {
            const char *cr = memchr(line, '\r', n), *nul = memchr(line, '\0', n);

            if (cr != NULL && (nul == NULL || cr < nul)) {
                return failf(why, why_size, 400, "bare CR in the request head");
            }
            if (nul != NULL) {
                return failf(why, why_size, 400, "NUL byte in the request head");
            }
        }
        line[n] = '\0';
        if (first) {
            first = false;
            if ((rc = request_line(line, lim, out, why, why_size)) != 0) {
                return rc;
            }
            continue;
        }
        if (n == 0) {
            break; /* the blank line */
        }
        if (line[0] == ' ' || line[0] == '\t') {
            return failf(why, why_size, 400, "obsolete header line folding");
        }
        {
            char *colon = strchr(line, ':');
            char *v, *end;
            size_t nlen;

            if (colon == NULL || colon == line) {
                return failf(why, why_size, 400, "malformed header line");
            }
            nlen = (size_t)(colon - line);
            for (size_t i = 0; i < nlen; i++) {
                if (!is_tchar((unsigned char)line[i])) {
                    return failf(why, why_size, 400, "invalid header name \"%.*s\"",
                                 (int)(nlen > 40 ? 40 : nlen), line);
                }
            }
            v = colon + 1;
            while (*v == ' ' || *v == '\t') {
                v++;
            }
            end = line + n;
            while (end > v && (end[-1] == ' ' || end[-1] == '\t')) {
                end--;
            }
            *end = '\0';
            for (const char *p = v + printable_prefix(v, (size_t)(end - v), 0x20); p < end; p++) {
                if (!is_value_byte((unsigned char)*p)) {
                    return failf(why, why_size, 400, "control byte in header \"%.*s\"",
                                 (int)(nlen > 40 ? 40 : nlen), line);
                }
            }
            if (lim->max_headers > 0 && out->n_headers >= lim->max_headers) {
                return failf(why, why_size, 431, "more than %zu header lines (max_request_headers)",
                             lim->max_headers);
            }
            out->n_headers++;
            if ((rc = special_header(&h, line, nlen, v)) != 0) {
                return rc;
            }
            *colon = '\0';
            if (hdrs != NULL && slots != NULL) {
                /* Linked in place: the bytes were checked above as strictly
                 * as evhttp_add_header would (no CR, LF or NUL). */
                struct evkeyval *kv;

                if (out->n_headers > n_slots) {
                    return failf(why, why_size, 431, "more than %zu header lines", n_slots);
                }
                kv = &slots[out->n_headers - 1];
                kv->key = line;
                kv->value = v;
                TAILQ_INSERT_TAIL(hdrs, kv, next);
            } else if (hdrs != NULL && evhttp_add_header(hdrs, line, v) != 0) {
                return failf(why, why_size, 400, "invalid header \"%.40s\"", line);
            }
        }
    }
    if (first) {
        return failf(why, why_size, 400, "empty request");
    }
    if (h.has_te && h.has_cl) {
        return failf(why, why_size, 400, "both Content-Length and Transfer-Encoding");
    }
    if (h.has_te && out->minor == 0) {
        return failf(why, why_size, 400, "Transfer-Encoding in an HTTP/1.0 request");
    }
    if (h.has_te && !out->chunked) {
        return failf(why, why_size, 400, "Transfer-Encoding without chunked");
    }
    if (out->minor == 1 && h.hosts != 1) {
        return failf(why, why_size, 400, h.hosts == 0 ? "missing required Host header"
                                                      : "more than one Host header");
    }
    if (out->expect_continue && out->minor == 0) {
        out->expect_continue = false; /* RFC 9110 10.1.1: ignored for HTTP/1.0 */
    }
    out->keep_alive = out->minor == 1 ? !h.conn_close : (h.conn_keep && !h.conn_close);
    return 0;
}

/* ---- chunked bodies --------------------------------------------------- */

enum { CH_SIZE = 0, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER, CH_DONE };

static enum pg_http_chunk_rc chunk_fail(char *why, size_t size, const char *msg)
{
    failf(why, size, 400, "%s", msg);
    return PG_HTTP_CHUNK_ERROR;
}

enum pg_http_chunk_rc pg_http_chunked_feed(struct pg_http_chunked *c, const uint8_t *in,
                                           size_t len, size_t *consumed, size_t *data_len,
                                           char *why, size_t why_size)
{
    size_t i = 0;

    *consumed = 0;
    *data_len = 0;
    if (c->state == CH_DONE) {
        return PG_HTTP_CHUNK_DONE;
    }
    if (c->state == CH_DATA) {
        size_t n = c->left < len ? (size_t)c->left : len;

        c->left -= n;
        if (c->left == 0) {
            c->state = CH_DATA_CR;
        }
        *consumed = n;
        *data_len = n;
        return PG_HTTP_CHUNK_MORE;
    }
    for (; i < len; i++) {
        unsigned char b = in[i];

        switch (c->state) {
        case CH_SIZE:
            if (++c->line > MAX_CHUNK_LINE) {
                return chunk_fail(why, why_size, "chunk size line too long");
            }
            if (c->cr) {
                if (b != '\n') {
                    return chunk_fail(why, why_size, "bare CR in a chunk size line");
                }
                if (!c->saw_digit) {
                    return chunk_fail(why, why_size, "missing chunk size");
                }
                c->cr = false;
                c->line = 0;
                c->saw_digit = false;
                c->in_ext = false;
                c->state = c->left == 0 ? CH_TRAILER : CH_DATA;
                *consumed = i + 1;
                return PG_HTTP_CHUNK_MORE; /* data (if any) starts at the next call */
            }
            if (b == '\r') {
                c->cr = true;
            } else if (c->in_ext) {
                if (!is_value_byte(b)) {
                    return chunk_fail(why, why_size, "control byte in a chunk extension");
                }
            } else if (pg_hex_digit(b) >= 0) {
                if ((c->left >> 56) != 0) {
                    return chunk_fail(why, why_size, "chunk size too large");
                }
                c->left = c->left * 16 + (uint64_t)pg_hex_digit(b);
                c->saw_digit = true;
            } else if (b == ';' && c->saw_digit) {
                c->in_ext = true;
            } else {
                return chunk_fail(why, why_size, "invalid chunk size");
            }
            break;
        case CH_DATA_CR:
            if (b != '\r') {
                return chunk_fail(why, why_size, "chunk data longer than its size");
            }
            c->state = CH_DATA_LF;
            break;
        case CH_DATA_LF:
            if (b != '\n') {
                return chunk_fail(why, why_size, "chunk data not followed by CRLF");
            }
            c->state = CH_SIZE;
            break;
        case CH_TRAILER:
            if (++c->trailer_bytes > MAX_TRAILER_BYTES) {
                return chunk_fail(why, why_size, "chunked trailers too long");
            }
            if (c->cr) {
                if (b != '\n') {
                    return chunk_fail(why, why_size, "bare CR in chunked trailers");
                }
                c->cr = false;
                if (c->line == 0) {
                    c->state = CH_DONE;
                    *consumed = i + 1;
                    return PG_HTTP_CHUNK_DONE;
                }
                c->line = 0;
            } else if (b == '\r') {
                c->cr = true;
            } else if (!is_value_byte(b)) {
                return chunk_fail(why, why_size, "control byte in chunked trailers");
            } else {
                c->line++;
            }
            break;
        default:
            return chunk_fail(why, why_size, "chunked decoder misuse");
        }
    }
    *consumed = len;
    return PG_HTTP_CHUNK_MORE;
}

const char *pg_http_find_header(const struct evkeyvalq *h, const char *name)
{
    const struct evkeyval *kv;
    int c0 = name[0] | 0x20; /* header names are tokens: letters, digits, -_ etc. */

    TAILQ_FOREACH(kv, h, next) {
        if ((kv->key[0] | 0x20) == c0 && strcasecmp(kv->key, name) == 0) {
            return kv->value;
        }
    }
    return NULL;
}
