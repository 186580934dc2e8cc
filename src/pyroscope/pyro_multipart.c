/* SPDX-License-Identifier: Apache-2.0
 * Splits a multipart/form-data body (RFC 7578 over RFC 2046 section 5.1) into its parts,
 * zero copy: the boundary from the Content-Type value, the delimiter lines (CRLF or bare LF,
 * as Go's mime/multipart reads them), each part's header block and its Content-Disposition
 * name and filename. Every count and size capped; failures name the byte offset. */
#include "pyroscope/pyro_multipart.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

static bool is_ws(uint8_t c)
{
    return c == ' ' || c == '\t';
}

static bool is_lws(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* RFC 2045 tspecials and CTLs end a token: a table of the 256 byte values built at compile
 * time (a token byte is looked at for every parameter of every part). */
#define IS_TOKEN(c)                                                                       \
    ((c) > 0x20 && (c) < 0x7f && (c) != '(' && (c) != ')' && (c) != '<' && (c) != '>' && \
     (c) != '@' && (c) != ',' && (c) != ';' && (c) != ':' && (c) != '\\' && (c) != '"' && \
     (c) != '/' && (c) != '[' && (c) != ']' && (c) != '?' && (c) != '=')
#define T4(n) IS_TOKEN(n), IS_TOKEN((n) + 1), IS_TOKEN((n) + 2), IS_TOKEN((n) + 3)
#define T16(n) T4(n), T4((n) + 4), T4((n) + 8), T4((n) + 12)
#define T64(n) T16(n), T16((n) + 16), T16((n) + 32), T16((n) + 48)
static const bool token_byte[256] = {T64(0), T64(64), T64(128), T64(192)};

static bool is_token(uint8_t c)
{
    return token_byte[c];
}

/* Reads a parameter value at *p (a token or a quoted-string, backslash escapes undone) into
 * @out (room @cap, NUL-terminated). False when malformed or too long. */
static bool read_param_value(const uint8_t **p, const uint8_t *end, char *out, size_t cap,
                             size_t *out_len)
{
    const uint8_t *q = *p;
    size_t n = 0;

    if (q < end && *q == '"') {
        for (q++; q < end && *q != '"'; q++) {
            if (*q == '\\' && q + 1 < end) {
                q++;
            }
            if (*q == '\0' || n + 1 >= cap) {
                return false;
            }
            out[n++] = (char)*q;
        }
        if (q >= end) {
            return false; /* no closing quote */
        }
        q++;
    } else {
        const uint8_t *t = q;
        /* four table loads per step: a boundary is 60 token bytes on every push */
        while (end - q >= 4 && (token_byte[q[0]] & token_byte[q[1]] & token_byte[q[2]] &
                                token_byte[q[3]])) {
            q += 4;
        }
        while (q < end && is_token(*q)) {
            q++;
        }
        n = (size_t)(q - t);
        if (n >= cap) {
            return false;
        }
        memcpy(out, t, n);
    }
    out[n] = '\0';
    *out_len = n;
    *p = q;
    return true;
}

/* A parameter find_param looks for, and where its value goes. */
struct param_out {
    const char *name;
    size_t name_len;
    char *out; /* room cap, NUL-terminated */
    size_t cap, len;
    bool found; /* the last one wins; Go refuses duplicates, either way one value */
    bool quoted; /* a quoted-string (may hold any byte but NUL); else a token (printable) */
};

/* Walks "type; k=v; k2=\"v2\"" in [p, end) once: checks the type is @want (case-insensitive),
 * then copies the value of each parameter of @ps[0..n) present. Returns 0 parsed, -1 type
 * differs, -2 malformed or too long. */
static int find_param(const uint8_t *p, const uint8_t *end, const char *want,
                      struct param_out *ps, size_t n_ps)
{
    size_t wlen = strlen(want);

    while (p < end && is_lws(*p)) {
        p++;
    }
    /* The type is everything up to ';' or white space: @want, then one of those or the end. */
    if ((size_t)(end - p) < wlen || strncasecmp((const char *)p, want, wlen) != 0 ||
        (p + wlen < end && p[wlen] != ';' && !is_lws(p[wlen]))) {
        return -1;
    }
    p += wlen;
    for (;;) {
        while (p < end && is_lws(*p)) {
            p++;
        }
        if (p == end) {
            return 0;
        }
        if (*p != ';') {
            return -2;
        }
        p++;
        while (p < end && is_lws(*p)) {
            p++;
        }
        if (p == end) {
            return 0; /* a trailing ';' */
        }
        const uint8_t *k = p;
        while (p < end && is_token(*p)) {
            p++;
        }
        size_t klen = (size_t)(p - k);
        while (p < end && is_lws(*p)) {
            p++;
        }
        if (klen == 0 || p == end || *p != '=') {
            return -2;
        }
        p++;
        while (p < end && is_lws(*p)) {
            p++;
        }
        struct param_out *mine = NULL;
        for (size_t i = 0; i < n_ps; i++) {
            if (ps[i].name_len == klen && strncasecmp((const char *)k, ps[i].name, klen) == 0) {
                mine = &ps[i];
                break;
            }
        }
        char scratch[PG_PYRO_MAX_PART_HEADERS];
        size_t n;
        bool quoted = p < end && *p == '"';
        if (!read_param_value(&p, end, mine ? mine->out : scratch,
                              mine ? mine->cap : sizeof(scratch), &n)) {
            return -2;
        }
        if (mine != NULL) {
            mine->len = n;
            mine->found = true;
            mine->quoted = quoted;
        }
    }
}

enum pg_err pg_pyro_multipart_boundary(const char *content_type, char *out, size_t out_size,
                                       struct pg_status *st)
{
    char b[PG_PYRO_MAX_BOUNDARY + 2];
    size_t n = 0;

    if (content_type == NULL) {
        return pg_status_set(st, PG_ERR_UNSUPPORTED,
                             "Content-Type missing, want multipart/form-data");
    }
    const uint8_t *p = (const uint8_t *)content_type, *end = p + strlen(content_type);
    struct param_out bp = {"boundary", 8, b, sizeof(b), 0, false, false};
    int r = find_param(p, end, "multipart/form-data", &bp, 1);
    n = bp.len;
    if (r == -1) {
        return pg_status_set(st, PG_ERR_UNSUPPORTED,
                             "Content-Type is not multipart/form-data (want multipart/form-data; "
                             "boundary=...)");
    }
    if (r == -2) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "Content-Type multipart/form-data: malformed parameters or a "
                             "boundary over %d characters", PG_PYRO_MAX_BOUNDARY);
    }
    if (!bp.found || n == 0) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "Content-Type multipart/form-data has no boundary parameter");
    }
    if (n > PG_PYRO_MAX_BOUNDARY) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "multipart boundary of %zu characters, over RFC 2046's %d", n,
                             PG_PYRO_MAX_BOUNDARY);
    }
    for (size_t i = 0; bp.quoted && i < n; i++) { /* a token is printable already */
        if ((uint8_t)b[i] < 0x20 || (uint8_t)b[i] > 0x7e) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "multipart boundary has a byte 0x%02x that is not printable",
                                 (unsigned)(uint8_t)b[i]);
        }
    }
    if (n + 1 > out_size) {
        return pg_status_set(st, PG_ERR_INTERNAL, "multipart boundary buffer too small");
    }
    memcpy(out, b, n + 1);
    return PG_ERR_OK;
}

/* After "--boundary" at @p: 2 when "--" follows (the close), 1 when white space then a line
 * end follows (a delimiter; *@next is the byte after the line end), 0 otherwise (content that
 * happens to hold the boundary as a prefix). */
static int delimiter_kind(const uint8_t *p, const uint8_t *end, const uint8_t **next)
{
    if (end - p >= 2 && p[0] == '-' && p[1] == '-') {
        *next = p + 2;
        return 2;
    }
    while (p < end && is_ws(*p)) {
        p++;
    }
    if (p < end && *p == '\n') {
        *next = p + 1;
        return 1;
    }
    if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {
        *next = p + 2;
        return 1;
    }
    return 0;
}

/* The next delimiter at or after @from that starts a line: its kind (as delimiter_kind, -1
 * none), *@content_end where the content before it ends (its line break excluded) and *@next
 * after it. @nl_b is "\n--boundary" (@dlen + 1 bytes). A memchr per line end, not memmem:
 * glibc's memmem sets up a 256-entry shift table per call, which costs more than the few
 * line ends of a gzip'd profile. @at_start: a delimiter at @from itself counts (the body's
 * first line). */
static int next_delimiter(const uint8_t *from, const uint8_t *end, const char *nl_b,
                          size_t dlen, bool at_start, const uint8_t **content_end,
                          const uint8_t **next)
{
    const uint8_t *p = from;

    if (at_start && (size_t)(end - p) >= dlen && memcmp(p, nl_b + 1, dlen) == 0) {
        int k = delimiter_kind(p + dlen, end, next);
        if (k != 0) {
            *content_end = p;
            return k;
        }
    }
    while ((size_t)(end - p) > dlen) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL || (size_t)(end - nl - 1) < dlen) {
            return -1;
        }
        if (nl[1] == '-' && memcmp(nl + 1, nl_b + 1, dlen) == 0) {
            int k = delimiter_kind(nl + 1 + dlen, end, next);
            if (k != 0) {
                *content_end = nl > from && nl[-1] == '\r' ? nl - 1 : nl;
                return k;
            }
        }
        p = nl + 1;
    }
    return -1;
}

/* Parses one part's header block [h, hend) (lines end in CRLF or LF, folded lines continue
 * the header before them) into @part. */
static enum pg_err parse_headers(struct pg_arena *a, const uint8_t *body, const uint8_t *h,
                                 const uint8_t *hend, struct pg_pyro_part *part,
                                 struct pg_status *st)
{
    const uint8_t *cd = NULL, *cd_end = NULL, *ct = NULL, *ct_end = NULL;
    const uint8_t **open_end = NULL; /* the value end a folded line extends */

    while (h < hend) {
        const uint8_t *eol = memchr(h, '\n', (size_t)(hend - h));
        const uint8_t *le = eol != NULL ? eol : hend;
        const uint8_t *next = eol != NULL ? eol + 1 : hend;
        if (le > h && le[-1] == '\r') {
            le--;
        }
        if (is_ws(*h)) {
            if (open_end == NULL) {
                return pg_status_set(st, PG_ERR_MALFORMED,
                                     "multipart: a part's header block starts with a folded "
                                     "line at offset %zu", (size_t)(h - body));
            }
            *open_end = le;
            h = next;
            continue;
        }
        const uint8_t *colon = memchr(h, ':', (size_t)(le - h));
        if (colon == NULL || colon == h) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "multipart: part header line without a name and ':' at offset "
                                 "%zu", (size_t)(h - body));
        }
        size_t nlen = (size_t)(colon - h);
        open_end = NULL;
        if (nlen == 19 && strncasecmp((const char *)h, "Content-Disposition", 19) == 0) {
            cd = colon + 1;
            cd_end = le;
            open_end = &cd_end;
        } else if (nlen == 12 && strncasecmp((const char *)h, "Content-Type", 12) == 0) {
            ct = colon + 1;
            ct_end = le;
            open_end = &ct_end;
        }
        h = next;
    }
    if (cd == NULL) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "multipart: part at offset %zu has no Content-Disposition header",
                             (size_t)(hend - body));
    }
    char val[PG_PYRO_MAX_PART_HEADERS], fval[PG_PYRO_MAX_PART_HEADERS];
    struct param_out ps[2] = {{"name", 4, val, sizeof(val), 0, false, false},
                              {"filename", 8, fval, sizeof(fval), 0, false, false}};
    int r = find_param(cd, cd_end, "form-data", ps, 2); /* one walk for both */
    size_t n = ps[0].len;
    if (r != 0 || !ps[0].found || n == 0 || memchr(val, '\0', n) != NULL) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "multipart: part at offset %zu: Content-Disposition is not "
                             "form-data with a name", (size_t)(cd - body));
    }
    if (ct != NULL) {
        while (ct < ct_end && is_lws(*ct)) {
            ct++;
        }
        while (ct_end > ct && is_lws(ct_end[-1])) {
            ct_end--;
        }
    }
    /* name, filename and content type, NUL-terminated, in one allocation */
    size_t flen = ps[1].found ? ps[1].len : 0, clen = ct != NULL ? (size_t)(ct_end - ct) : 0;
    char *strs = pg_arena_alloc(a, n + flen + clen + 3);
    if (strs == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "multipart: out of memory");
    }
    memcpy(strs, val, n);
    strs[n] = '\0';
    part->name = strs;
    strs += n + 1;
    part->filename = NULL;
    if (ps[1].found) {
        memcpy(strs, fval, flen);
        strs[flen] = '\0';
        part->filename = strs;
        strs += flen + 1;
    }
    part->content_type = NULL;
    if (ct != NULL) {
        memcpy(strs, ct, clen);
        strs[clen] = '\0';
        part->content_type = strs;
    }
    return PG_ERR_OK;
}

/* The end of the header block starting at @h (the blank line), *@next after it; NULL when
 * there is none within the cap or the body. */
static const uint8_t *headers_end(const uint8_t *h, const uint8_t *end, const uint8_t **next)
{
    const uint8_t *p = h;

    if (p < end && *p == '\n') { /* no headers at all */
        *next = p + 1;
        return p;
    }
    if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {
        *next = p + 2;
        return p;
    }
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) {
            return NULL;
        }
        if (nl + 1 < end && nl[1] == '\n') {
            *next = nl + 2;
            return nl + 1;
        }
        if (end - nl >= 3 && nl[1] == '\r' && nl[2] == '\n') {
            *next = nl + 3;
            return nl + 1;
        }
        p = nl + 1;
    }
    return NULL;
}

enum pg_err pg_pyro_multipart_parse(struct pg_arena *a, const uint8_t *body, size_t len,
                                    const char *boundary, struct pg_pyro_part **parts,
                                    size_t *n_parts, struct pg_status *st)
{
    char nl_b[PG_PYRO_MAX_BOUNDARY + 4]; /* "\n--" boundary */
    size_t blen = boundary != NULL ? strlen(boundary) : 0;
    const uint8_t *end = body + len, *content_end, *next;

    *parts = NULL;
    *n_parts = 0;
    if (blen == 0 || blen > PG_PYRO_MAX_BOUNDARY) {
        return pg_status_set(st, PG_ERR_MALFORMED, "multipart: boundary empty or over %d bytes",
                             PG_PYRO_MAX_BOUNDARY);
    }
    nl_b[0] = '\n';
    nl_b[1] = nl_b[2] = '-';
    memcpy(nl_b + 3, boundary, blen);
    size_t dlen = blen + 2;

    int kind = body != NULL ? next_delimiter(body, end, nl_b, dlen, true, &content_end, &next)
                            : -1;
    if (kind < 0) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "multipart: no opening boundary line \"--%s\" in the body",
                             boundary);
    }
    struct pg_pyro_part *out = pg_arena_alloc(a, PG_PYRO_MAX_PARTS * sizeof(*out));
    if (out == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "multipart: out of memory");
    }
    size_t n = 0;
    while (kind == 1) {
        const uint8_t *h = next, *hnext;
        if (n == PG_PYRO_MAX_PARTS) {
            return pg_status_set(st, PG_ERR_LIMIT, "multipart: more than %d parts (at offset %zu)",
                                 PG_PYRO_MAX_PARTS, (size_t)(h - body));
        }
        size_t window = (size_t)(end - h) < PG_PYRO_MAX_PART_HEADERS + 4
                            ? (size_t)(end - h)
                            : PG_PYRO_MAX_PART_HEADERS + 4;
        const uint8_t *hend = headers_end(h, h + window, &hnext);
        if (hend == NULL || (size_t)(hend - h) > PG_PYRO_MAX_PART_HEADERS) {
            if (hend == NULL && window == (size_t)(end - h)) {
                return pg_status_set(st, PG_ERR_MALFORMED,
                                     "multipart: boundary never closed (the body ends in the "
                                     "headers of part %zu at offset %zu)", n + 1,
                                     (size_t)(h - body));
            }
            return pg_status_set(st, PG_ERR_LIMIT,
                                 "multipart: header block of part %zu at offset %zu is over "
                                 "%u bytes", n + 1, (size_t)(h - body), PG_PYRO_MAX_PART_HEADERS);
        }
        enum pg_err err = parse_headers(a, body, h, hend, &out[n], st);
        if (err != PG_ERR_OK) {
            return err;
        }
        const uint8_t *data = hnext;
        /* The delimiter's line break belongs to it, so the search starts one byte back to
         * find a delimiter right after an empty body's blank line. */
        kind = next_delimiter(data > body ? data - 1 : data, end, nl_b, dlen, false,
                              &content_end, &next);
        if (kind < 0) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "multipart: boundary never closed (part %zu \"%s\" at offset "
                                 "%zu runs to the end of the body)", n + 1, out[n].name,
                                 (size_t)(data - body));
        }
        out[n].data = data;
        out[n].len = content_end > data ? (size_t)(content_end - data) : 0;
        n++;
    }
    *parts = out;
    *n_parts = n;
    return PG_ERR_OK;
}

const struct pg_pyro_part *pg_pyro_multipart_find(const struct pg_pyro_part *parts, size_t n,
                                                  const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (parts[i].name != NULL && strcmp(parts[i].name, name) == 0) {
            return &parts[i];
        }
    }
    return NULL;
}
