/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite lexer, recursive-descent parser and compile-time checks.
 * Grammar:  statement := editor "(" args ")" [ "where" bool ]
 *           bool := and { "or" and };  and := not { "and" not }
 *           not := "not" not | "(" bool ")" | value [ cmp value ]
 *           value := literal | list | map | path | Converter "(" args ")" { "[" key "]" }
 * Paths, functions, literal arguments and regexes are resolved here, so a bad
 * statement fails at config load with the column of the offending token. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "processor/ottl_internal.h"

/* Bounds that keep compile time and evaluation depth in check. */
#define MAX_DEPTH 64
#define MAX_ITEMS 256
#define MAX_KEYS 8
#define REGEX_MATCH_LIMIT 100000u
#define REGEX_DEPTH_LIMIT 10000u
#define REGEX_HEAP_LIMIT_KIB 1024u

enum tok_type {
    T_EOF,
    T_IDENT,
    T_STRING,
    T_INT,
    T_FLOAT,
    T_LPAREN,
    T_RPAREN,
    T_LBRACK,
    T_RBRACK,
    T_LBRACE,
    T_RBRACE,
    T_COMMA,
    T_DOT,
    T_COLON,
    T_ASSIGN,
    T_CMP,
    T_ERROR,
};

struct tok {
    enum tok_type t;
    int col;
    const char *p; /* into the source */
    size_t n;
    enum ottl_cmp cmp;
};

struct parser {
    struct pg_arena *a;
    const char *src;
    size_t len;
    size_t pos;
    struct tok cur;
    struct pg_ottl_error *err;
    bool failed;
    int depth;
    enum pg_ottl_ctx ctx;     /* given, or INFER */
    enum pg_ottl_ctx needed;  /* finest context seen in paths */
    bool metadata;            /* a path reads request metadata */
};

const char *pg_ottl_ctx_name(enum pg_ottl_ctx ctx)
{
    switch (ctx) {
    case PG_OTTL_CTX_RESOURCE:
        return "resource";
    case PG_OTTL_CTX_SCOPE:
        return "scope";
    case PG_OTTL_CTX_PROFILE:
        return "profile";
    default:
        return "inferred";
    }
}

bool pg_ottl_ctx_parse(const char *s, enum pg_ottl_ctx *out)
{
    static const enum pg_ottl_ctx all[] = {PG_OTTL_CTX_RESOURCE, PG_OTTL_CTX_SCOPE,
                                           PG_OTTL_CTX_PROFILE};
    for (size_t i = 0; i < 3; i++) {
        if (strcmp(s, pg_ottl_ctx_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    }
    return false;
}

static const char *kind_name(enum ottl_kind k)
{
    static const char *const names[] = {"any", "nil", "bool", "int", "double",
                                        "string", "bytes", "map", "list"};
    return names[k];
}

static void fail(struct parser *ps, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(struct parser *ps, int col, const char *fmt, ...)
{
    va_list ap;

    if (ps->failed) {
        return; /* keep the first error: it is the cause */
    }
    ps->failed = true;
    ps->err->col = col;
    va_start(ap, fmt);
    vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
    va_end(ap);
}

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static void lex(struct parser *ps)
{
    const char *s = ps->src;
    size_t i = ps->pos;
    struct tok *t = &ps->cur;

    while (i < ps->len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) {
        i++;
    }
    t->col = (int)i;
    t->p = s + i;
    t->n = 1;
    if (i >= ps->len) {
        t->t = T_EOF;
        t->n = 0;
        ps->pos = i;
        return;
    }
    switch (s[i]) {
    case '(':
        t->t = T_LPAREN;
        break;
    case ')':
        t->t = T_RPAREN;
        break;
    case '[':
        t->t = T_LBRACK;
        break;
    case ']':
        t->t = T_RBRACK;
        break;
    case '{':
        t->t = T_LBRACE;
        break;
    case '}':
        t->t = T_RBRACE;
        break;
    case ',':
        t->t = T_COMMA;
        break;
    case '.':
        t->t = T_DOT;
        break;
    case ':':
        t->t = T_COLON;
        break;
    case '=':
        if (i + 1 < ps->len && s[i + 1] == '=') {
            t->t = T_CMP;
            t->cmp = CMP_EQ;
            t->n = 2;
        } else {
            t->t = T_ASSIGN;
        }
        break;
    case '!':
        if (i + 1 < ps->len && s[i + 1] == '=') {
            t->t = T_CMP;
            t->cmp = CMP_NE;
            t->n = 2;
        } else {
            t->t = T_ERROR;
        }
        break;
    case '<':
    case '>':
        t->t = T_CMP;
        if (i + 1 < ps->len && s[i + 1] == '=') {
            t->cmp = s[i] == '<' ? CMP_LE : CMP_GE;
            t->n = 2;
        } else {
            t->cmp = s[i] == '<' ? CMP_LT : CMP_GT;
        }
        break;
    case '"': {
        size_t j = i + 1;
        while (j < ps->len && s[j] != '"') {
            if (s[j] == '\\' && j + 1 < ps->len) {
                j++;
            }
            j++;
        }
        if (j >= ps->len) {
            t->t = T_ERROR;
            t->n = ps->len - i;
            fail(ps, (int)i, "unterminated string literal");
            ps->pos = ps->len;
            return;
        }
        t->t = T_STRING;
        t->n = j + 1 - i;
        break;
    }
    default:
        if (is_ident_start(s[i])) {
            size_t j = i + 1;
            while (j < ps->len && (is_ident_start(s[j]) || is_digit(s[j]))) {
                j++;
            }
            t->t = T_IDENT;
            t->n = j - i;
        } else if (is_digit(s[i]) ||
                   ((s[i] == '-' || s[i] == '+') && i + 1 < ps->len && is_digit(s[i + 1]))) {
            size_t j = i + 1;
            bool flt = false;
            while (j < ps->len && is_digit(s[j])) {
                j++;
            }
            if (j < ps->len && s[j] == '.' && j + 1 < ps->len && is_digit(s[j + 1])) {
                flt = true;
                j++;
                while (j < ps->len && is_digit(s[j])) {
                    j++;
                }
            }
            if (j < ps->len && (s[j] == 'e' || s[j] == 'E')) {
                size_t k = j + 1;
                if (k < ps->len && (s[k] == '-' || s[k] == '+')) {
                    k++;
                }
                if (k < ps->len && is_digit(s[k])) {
                    flt = true;
                    j = k;
                    while (j < ps->len && is_digit(s[j])) {
                        j++;
                    }
                }
            }
            t->t = flt ? T_FLOAT : T_INT;
            t->n = j - i;
        } else {
            t->t = T_ERROR;
        }
        break;
    }
    ps->pos = i + t->n;
    if (t->t == T_ERROR) {
        fail(ps, t->col, "unexpected character '%c'", s[i]);
    }
}

static bool tok_is(const struct parser *ps, const char *word)
{
    return ps->cur.t == T_IDENT && ps->cur.n == strlen(word) &&
           memcmp(ps->cur.p, word, ps->cur.n) == 0;
}

static const char *tok_desc(const struct tok *t, char *buf, size_t cap)
{
    if (t->t == T_EOF) {
        return "end of statement";
    }
    snprintf(buf, cap, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->p);
    return buf;
}

static bool expect(struct parser *ps, enum tok_type t, const char *what)
{
    char buf[64];

    if (ps->cur.t != t) {
        fail(ps, ps->cur.col, "expected %s, found %s", what, tok_desc(&ps->cur, buf, sizeof(buf)));
        return false;
    }
    lex(ps);
    return true;
}

static void *zalloc(struct parser *ps, size_t n)
{
    void *p = pg_arena_zalloc(ps->a, n);

    if (p == NULL) {
        fail(ps, 0, "out of memory compiling the statement");
    }
    return p;
}

/* Decodes a double-quoted literal (Go escapes: \" \\ \/ \n \t \r \b \f \0 \xHH
 * \uHHHH). */
static char *decode_string(struct parser *ps, const struct tok *t, size_t *out_len)
{
    char *out = zalloc(ps, t->n + 1);
    size_t o = 0;

    if (out == NULL) {
        return NULL;
    }
    for (size_t i = 1; i + 1 < t->n; i++) {
        char c = t->p[i];
        if (c != '\\') {
            out[o++] = c;
            continue;
        }
        i++;
        c = t->p[i];
        switch (c) {
        case '"':
        case '\\':
        case '/':
        case '\'':
            out[o++] = c;
            break;
        case 'n':
            out[o++] = '\n';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 'b':
            out[o++] = '\b';
            break;
        case 'f':
            out[o++] = '\f';
            break;
        case 'x':
        case 'u': {
            size_t nd = c == 'x' ? 2 : 4;
            unsigned long cp = 0;
            for (size_t k = 1; k <= nd; k++) {
                char h = i + k + 1 < t->n ? t->p[i + k] : 0;
                int v = (h >= '0' && h <= '9') ? h - '0'
                        : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                        : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                 : -1;
                if (v < 0) {
                    fail(ps, t->col + (int)i - 1, "invalid \\%c escape in string literal", c);
                    return NULL;
                }
                cp = cp * 16 + (unsigned long)v;
            }
            i += nd;
            if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
                fail(ps, t->col + (int)(i - nd) - 1, "invalid code point in string literal");
                return NULL;
            }
            if (c == 'x' || cp < 0x80) {
                out[o++] = (char)cp;
            } else if (cp < 0x800) {
                out[o++] = (char)(0xC0 | (cp >> 6));
                out[o++] = (char)(0x80 | (cp & 0x3F));
            } else {
                out[o++] = (char)(0xE0 | (cp >> 12));
                out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                out[o++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            fail(ps, t->col + (int)i - 1, "unknown escape \\%c in string literal", c);
            return NULL;
        }
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

static struct ottl_expr *new_expr(struct parser *ps, enum ottl_expr_kind k, int col)
{
    struct ottl_expr *e = zalloc(ps, sizeof(*e));

    if (e != NULL) {
        e->kind = k;
        e->col = col;
    }
    return e;
}

static struct ottl_expr *parse_value(struct parser *ps);
static struct ottl_expr *parse_bool(struct parser *ps);

/* Zero or more ["k"] / [0] suffixes. */
static bool parse_keys(struct parser *ps, struct ottl_expr *e)
{
    struct ottl_key keys[MAX_KEYS];
    size_t n = 0;

    while (ps->cur.t == T_LBRACK && !ps->failed) {
        struct ottl_key *k;
        lex(ps);
        if (n == MAX_KEYS) {
            fail(ps, ps->cur.col, "more than %d index keys", MAX_KEYS);
            return false;
        }
        k = &keys[n];
        memset(k, 0, sizeof(*k));
        k->col = ps->cur.col;
        if (ps->cur.t == T_STRING) {
            size_t sl;
            k->s = decode_string(ps, &ps->cur, &sl);
            if (k->s == NULL) {
                return false;
            }
        } else if (ps->cur.t == T_INT) {
            char tmp[32];
            snprintf(tmp, sizeof(tmp), "%.*s", (int)(ps->cur.n < 31 ? ps->cur.n : 31), ps->cur.p);
            errno = 0;
            k->is_int = true;
            k->i = strtoll(tmp, NULL, 10);
            if (errno != 0 || k->i < 0) {
                fail(ps, ps->cur.col, "invalid list index %s", tmp);
                return false;
            }
        } else {
            char buf[64];
            fail(ps, ps->cur.col, "expected a string or integer key, found %s",
                 tok_desc(&ps->cur, buf, sizeof(buf)));
            return false;
        }
        lex(ps);
        if (!expect(ps, T_RBRACK, "']'")) {
            return false;
        }
        n++;
    }
    if (n > 0) {
        e->keys = pg_arena_memdup(ps->a, keys, n * sizeof(keys[0]));
        if (e->keys == NULL) {
            fail(ps, 0, "out of memory compiling the statement");
            return false;
        }
        e->nkeys = n;
    }
    return !ps->failed;
}

struct path_def {
    const char *name; /* without context prefix */
    enum pg_ottl_ctx ctx;
    enum ottl_path_id id;
    enum ottl_kind kind;
};

static const struct path_def path_defs[] = {
    {"attributes", PG_OTTL_CTX_RESOURCE, P_RES_ATTRS, K_MAP},
    {"dropped_attributes_count", PG_OTTL_CTX_RESOURCE, P_RES_DROPPED, K_INT},
    {"name", PG_OTTL_CTX_SCOPE, P_SCOPE_NAME, K_STR},
    {"version", PG_OTTL_CTX_SCOPE, P_SCOPE_VERSION, K_STR},
    {"attributes", PG_OTTL_CTX_SCOPE, P_SCOPE_ATTRS, K_MAP},
    {"dropped_attributes_count", PG_OTTL_CTX_SCOPE, P_SCOPE_DROPPED, K_INT},
    {"attributes", PG_OTTL_CTX_PROFILE, P_PROF_ATTRS, K_MAP},
    {"sample_type.type", PG_OTTL_CTX_PROFILE, P_PROF_SAMPLE_TYPE_TYPE, K_STR},
    {"sample_type.unit", PG_OTTL_CTX_PROFILE, P_PROF_SAMPLE_TYPE_UNIT, K_STR},
    {"period_type.type", PG_OTTL_CTX_PROFILE, P_PROF_PERIOD_TYPE_TYPE, K_STR},
    {"period_type.unit", PG_OTTL_CTX_PROFILE, P_PROF_PERIOD_TYPE_UNIT, K_STR},
    {"period", PG_OTTL_CTX_PROFILE, P_PROF_PERIOD, K_INT},
    {"duration_unix_nano", PG_OTTL_CTX_PROFILE, P_PROF_DURATION, K_INT},
    {"duration_nano", PG_OTTL_CTX_PROFILE, P_PROF_DURATION, K_INT},
    {"time_unix_nano", PG_OTTL_CTX_PROFILE, P_PROF_TIME, K_INT},
    {"dropped_attributes_count", PG_OTTL_CTX_PROFILE, P_PROF_DROPPED, K_INT},
    {"original_payload_format", PG_OTTL_CTX_PROFILE, P_PROF_ORIG_FORMAT, K_STR},
    {"profile_id", PG_OTTL_CTX_PROFILE, P_PROF_ID, K_BYTES},
    {"sample_count", PG_OTTL_CTX_PROFILE, P_PROF_SAMPLE_COUNT, K_INT},
    {NULL, 0, 0, 0},
};

static const struct path_def *find_path(const char *rest, enum pg_ottl_ctx ctx)
{
    for (const struct path_def *d = path_defs; d->name != NULL; d++) {
        if (d->ctx == ctx && strcmp(d->name, rest) == 0) {
            return d;
        }
    }
    return NULL;
}

static bool path_settable(enum ottl_path_id id)
{
    return id != P_METADATA && id != P_OTELCOL_METADATA && id != P_OTELCOL_ADDR &&
           id != P_PROF_SAMPLE_COUNT;
}

static bool path_is_attrs(enum ottl_path_id id)
{
    return id == P_RES_ATTRS || id == P_SCOPE_ATTRS || id == P_PROF_ATTRS;
}

/* @first is the already-consumed first identifier. */
static struct ottl_expr *parse_path(struct parser *ps, const struct tok *first)
{
    char dotted[128];
    size_t dl = 0;
    struct ottl_expr *e = new_expr(ps, E_PATH, first->col);
    const struct path_def *d = NULL;
    const char *rest;
    enum pg_ottl_ctx pctx;

    if (e == NULL) {
        return NULL;
    }
    if (first->n >= sizeof(dotted)) {
        fail(ps, first->col, "path too long");
        return NULL;
    }
    memcpy(dotted, first->p, first->n);
    dl = first->n;
    dotted[dl] = '\0';
    while (ps->cur.t == T_DOT && !ps->failed) {
        lex(ps);
        if (ps->cur.t != T_IDENT) {
            char buf[64];
            fail(ps, ps->cur.col, "expected a path segment after '.', found %s",
                 tok_desc(&ps->cur, buf, sizeof(buf)));
            return NULL;
        }
        if (dl + 1 + ps->cur.n >= sizeof(dotted)) {
            fail(ps, first->col, "path too long");
            return NULL;
        }
        dotted[dl++] = '.';
        memcpy(dotted + dl, ps->cur.p, ps->cur.n);
        dl += ps->cur.n;
        dotted[dl] = '\0';
        lex(ps);
    }
    if (!parse_keys(ps, e)) {
        return NULL;
    }
    if (strcmp(dotted, "metadata") == 0 || strcmp(dotted, "otelcol.client.metadata") == 0) {
        bool bare = dotted[0] == 'm';
        if (e->nkeys == 0 || e->keys[0].is_int) {
            fail(ps, first->col, "%s needs a header name key, e.g. %s[\"otel-resource-attributes\"]",
                 dotted, dotted);
            return NULL;
        }
        e->u.path.id = bare ? P_METADATA : P_OTELCOL_METADATA;
        ps->metadata = true;
        e->u.path.meta_key = e->keys[0].s;
        e->keys++;
        e->nkeys--;
        e->rkind = bare ? K_STR : K_LIST;
        if (e->nkeys > 0) {
            e->rkind = K_ANY;
        }
        return e;
    }
    if (strcmp(dotted, "otelcol.client.addr") == 0) {
        e->u.path.id = P_OTELCOL_ADDR;
        e->rkind = e->nkeys ? K_ANY : K_STR;
        return e;
    }
    rest = NULL;
    pctx = PG_OTTL_CTX_INFER;
    if (strncmp(dotted, "resource.", 9) == 0) {
        pctx = PG_OTTL_CTX_RESOURCE;
        rest = dotted + 9;
    } else if (strncmp(dotted, "scope.", 6) == 0) {
        pctx = PG_OTTL_CTX_SCOPE;
        rest = dotted + 6;
    } else if (strncmp(dotted, "profile.", 8) == 0) {
        pctx = PG_OTTL_CTX_PROFILE;
        rest = dotted + 8;
    }
    if (rest != NULL) {
        d = find_path(rest, pctx);
    } else if (ps->ctx != PG_OTTL_CTX_INFER) {
        /* With an explicit context, unprefixed paths name that context. */
        d = find_path(dotted, ps->ctx);
    } else {
        fail(ps, first->col,
             "path '%s' has no context prefix: write resource., scope. or profile. (or set "
             "context: in a statement group)",
             dotted);
        return NULL;
    }
    if (d == NULL) {
        fail(ps, first->col, "unknown path '%s'", dotted);
        return NULL;
    }
    if (ps->ctx != PG_OTTL_CTX_INFER && d->ctx > ps->ctx) {
        fail(ps, first->col, "path '%s' is not available in context %s", dotted,
             pg_ottl_ctx_name(ps->ctx));
        return NULL;
    }
    if (d->ctx > ps->needed) {
        ps->needed = d->ctx;
    }
    e->u.path.id = d->id;
    e->rkind = e->nkeys ? K_ANY : d->kind;
    if (e->nkeys > 0 && !path_is_attrs(d->id)) {
        fail(ps, e->keys[0].col - 1, "path '%s' cannot be indexed", dotted);
        return NULL;
    }
    if (e->nkeys > 0 && e->keys[0].is_int) {
        fail(ps, e->keys[0].col, "attributes are indexed by string keys, e.g. %s[\"service.name\"]",
             dotted);
        return NULL;
    }
    return e;
}

static const struct ottl_func *find_func(const struct tok *t)
{
    for (const struct ottl_func *f = pg_ottl_funcs; f->name != NULL; f++) {
        if (strlen(f->name) == t->n && memcmp(f->name, t->p, t->n) == 0) {
            return f;
        }
    }
    return NULL;
}

/* Edit distance, capped: for "did you mean" hints. */
static size_t edit_distance(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    size_t row[64];

    if (an >= 63 || bn >= 63) {
        return 99;
    }
    for (size_t j = 0; j <= bn; j++) {
        row[j] = j;
    }
    for (size_t i = 1; i <= an; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t up = row[j];
            size_t cost = (a[i - 1] | 32) == (b[j - 1] | 32) ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best) {
                best = up + 1;
            }
            if (row[j - 1] + 1 < best) {
                best = row[j - 1] + 1;
            }
            row[j] = best;
            diag = up;
        }
    }
    return row[bn];
}

static const char *closest_func(const struct tok *t)
{
    const char *best = NULL;
    size_t bd = 4;

    for (const struct ottl_func *f = pg_ottl_funcs; f->name != NULL; f++) {
        size_t d = edit_distance(t->p, t->n, f->name);
        if (d < bd) {
            bd = d;
            best = f->name;
        }
    }
    return best;
}

static void regex_free(void *p)
{
    struct ottl_regex *re = p;

    pcre2_match_context_free(re->mctx);
    pcre2_code_free(re->code);
}

static struct ottl_regex *compile_regex(struct parser *ps, const struct ottl_expr *lit)
{
    struct ottl_regex *re = zalloc(ps, sizeof(*re));
    int ecode;
    PCRE2_SIZE eoff;

    if (re == NULL) {
        return NULL;
    }
    re->pattern = lit->u.lit.u.s.p;
    re->code = pcre2_compile((PCRE2_SPTR)lit->u.lit.u.s.p, lit->u.lit.u.s.n,
                             PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ecode, &eoff, NULL);
    if (re->code == NULL) {
        PCRE2_UCHAR msg[120];
        pcre2_get_error_message(ecode, msg, sizeof(msg));
        /* Point at the literal: +1 for the opening quote, then the offset. */
        fail(ps, lit->col + 1 + (int)eoff, "invalid regular expression: %s", (char *)msg);
        return NULL;
    }
    re->mctx = pcre2_match_context_create(NULL);
    if (re->mctx == NULL ||
        pg_arena_cleanup_add(ps->a, regex_free, re) != 0) {
        regex_free(re);
        fail(ps, lit->col, "out of memory compiling a regular expression");
        return NULL;
    }
    /* JIT when available: faster and allocation-free at match time. */
    (void)pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
    pcre2_set_match_limit(re->mctx, REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(re->mctx, REGEX_DEPTH_LIMIT);
    pcre2_set_heap_limit(re->mctx, REGEX_HEAP_LIMIT_KIB);
    pg_ottl_regex_ready(re);
    return re;
}

static bool kind_compatible(enum ottl_kind have, enum ottl_kind want)
{
    return have == K_ANY || want == K_ANY || have == K_NIL || have == want ||
           (want == K_DOUBLE && have == K_INT);
}

/* Checks the arguments of a resolved call against its parameter types. */
static bool check_call(struct parser *ps, struct ottl_expr *call)
{
    const struct ottl_func *f = call->u.call.fn;
    const char *msg;
    int col = call->col;

    for (size_t i = 0; i < f->nparams; i++) {
        struct ottl_expr *a = call->u.call.args[i];
        if (a == NULL) {
            if (i < f->min_args) {
                fail(ps, call->col, "%s: missing argument '%s'", f->name, f->pnames[i]);
                return false;
            }
            continue;
        }
        switch (f->ptypes[i]) {
        case PA_TARGET:
            if (a->kind != E_PATH || !path_settable(a->u.path.id)) {
                fail(ps, a->col, "%s: argument '%s' must be a settable path", f->name,
                     f->pnames[i]);
                return false;
            }
            if (path_is_attrs(a->u.path.id) && a->nkeys > 1) {
                fail(ps, a->keys[1].col, "%s: setting nested keys is not supported", f->name);
                return false;
            }
            break;
        case PA_MAPTARGET:
            if (a->kind != E_PATH || !path_is_attrs(a->u.path.id) || a->nkeys != 0) {
                fail(ps, a->col, "%s: argument '%s' must be an attributes map path such as "
                     "resource.attributes", f->name, f->pnames[i]);
                return false;
            }
            break;
        case PA_REGEX:
        case PA_STRLIT:
            if (a->kind != E_LIT || a->u.lit.t != PG_OTTL_STR) {
                fail(ps, a->col, "%s: argument '%s' must be a string literal", f->name,
                     f->pnames[i]);
                return false;
            }
            if (f->ptypes[i] == PA_REGEX) {
                call->u.call.re = compile_regex(ps, a);
                if (call->u.call.re == NULL) {
                    return false;
                }
            }
            break;
        case PA_INTLIT:
            if (a->kind != E_LIT || a->u.lit.t != PG_OTTL_INT) {
                fail(ps, a->col, "%s: argument '%s' must be an integer literal", f->name,
                     f->pnames[i]);
                return false;
            }
            break;
        case PA_LIST:
            if (!kind_compatible(a->rkind, K_LIST)) {
                fail(ps, a->col, "%s: argument '%s' must be a list, got %s", f->name,
                     f->pnames[i], kind_name(a->rkind));
                return false;
            }
            break;
        case PA_ANY:
            break;
        }
    }
    if (f->check != NULL && (msg = f->check(call, &col)) != NULL) {
        fail(ps, col, "%s: %s", f->name, msg);
        return false;
    }
    call->rkind = call->nkeys ? K_ANY : f->result;
    return true;
}

/* After the name: "(" args ")". */
static struct ottl_expr *parse_call(struct parser *ps, const struct tok *name, bool want_editor)
{
    const struct ottl_func *f = find_func(name);
    struct ottl_expr *e;
    size_t npos = 0;
    size_t seen = 0;
    bool named_seen = false;

    if (f == NULL) {
        const char *hint = closest_func(name);
        fail(ps, name->col, "unknown function '%.*s'%s%s%s", (int)name->n, name->p,
             hint ? " (did you mean " : "", hint ? hint : "", hint ? "?)" : "");
        return NULL;
    }
    if (f->editor != want_editor) {
        fail(ps, name->col, want_editor ? "'%s' is a converter; a statement must start with an "
                                          "editor such as set(...)"
                                        : "'%s' is an editor and cannot be used as a value",
             f->name);
        return NULL;
    }
    e = new_expr(ps, E_CALL, name->col);
    if (e == NULL) {
        return NULL;
    }
    e->u.call.fn = f;
    e->u.call.args = zalloc(ps, OTTL_MAX_PARAMS * sizeof(struct ottl_expr *));
    if (e->u.call.args == NULL || !expect(ps, T_LPAREN, "'('")) {
        return NULL;
    }
    while (ps->cur.t != T_RPAREN && !ps->failed) {
        size_t slot;
        struct ottl_expr *arg;
        int acol = ps->cur.col;

        if (seen++ > 0 && !expect(ps, T_COMMA, "',' or ')'")) {
            return NULL;
        }
        acol = ps->cur.col;
        /* name = value */
        if (ps->cur.t == T_IDENT) {
            size_t save = ps->pos;
            struct tok id = ps->cur;
            lex(ps);
            if (ps->cur.t == T_ASSIGN) {
                size_t k;
                lex(ps);
                for (k = 0; k < f->nparams; k++) {
                    if (strlen(f->pnames[k]) == id.n && memcmp(f->pnames[k], id.p, id.n) == 0) {
                        break;
                    }
                }
                if (k == f->nparams) {
                    fail(ps, id.col, "%s has no parameter '%.*s'", f->name, (int)id.n, id.p);
                    return NULL;
                }
                if (e->u.call.args[k] != NULL) {
                    fail(ps, id.col, "%s: parameter '%s' given twice", f->name, f->pnames[k]);
                    return NULL;
                }
                arg = parse_value(ps);
                if (arg == NULL) {
                    return NULL;
                }
                e->u.call.args[k] = arg;
                named_seen = true;
                continue;
            }
            ps->pos = save; /* not a named argument: rewind */
            ps->cur = id;
        }
        if (named_seen) {
            fail(ps, acol, "%s: positional argument after a named one", f->name);
            return NULL;
        }
        slot = npos;
        if (slot >= f->nparams) {
            fail(ps, acol, "%s takes at most %zu arguments", f->name, f->nparams);
            return NULL;
        }
        arg = parse_value(ps);
        if (arg == NULL) {
            return NULL;
        }
        e->u.call.args[slot] = arg;
        npos++;
    }
    if (ps->failed || !expect(ps, T_RPAREN, "')'")) {
        return NULL;
    }
    if (!want_editor && !parse_keys(ps, e)) {
        return NULL;
    }
    if (!check_call(ps, e)) {
        return NULL;
    }
    return e;
}

static struct ottl_expr *parse_literal_number(struct parser *ps)
{
    char tmp[64];
    struct ottl_expr *e = new_expr(ps, E_LIT, ps->cur.col);
    char *end;

    if (e == NULL) {
        return NULL;
    }
    if (ps->cur.n >= sizeof(tmp)) {
        fail(ps, ps->cur.col, "number literal too long");
        return NULL;
    }
    memcpy(tmp, ps->cur.p, ps->cur.n);
    tmp[ps->cur.n] = '\0';
    errno = 0;
    if (ps->cur.t == T_INT) {
        e->u.lit.t = PG_OTTL_INT;
        e->u.lit.u.i = strtoll(tmp, &end, 10);
        e->rkind = K_INT;
    } else {
        e->u.lit.t = PG_OTTL_DOUBLE;
        e->u.lit.u.d = strtod(tmp, &end);
        e->rkind = K_DOUBLE;
    }
    if (errno != 0 || *end != '\0') {
        fail(ps, ps->cur.col, "number out of range: %s", tmp);
        return NULL;
    }
    e->u.lit.lit = true;
    lex(ps);
    return e;
}

static struct ottl_expr *parse_value(struct parser *ps)
{
    struct ottl_expr *e = NULL;
    struct tok t = ps->cur;

    if (ps->failed) {
        return NULL;
    }
    if (++ps->depth > MAX_DEPTH) {
        fail(ps, t.col, "expression nested too deeply");
        return NULL;
    }
    switch (t.t) {
    case T_STRING: {
        size_t n;
        char *s = decode_string(ps, &t, &n);
        if (s == NULL) {
            break;
        }
        e = new_expr(ps, E_LIT, t.col);
        if (e != NULL) {
            pg_ottl_set_str(&e->u.lit, s, n);
            e->u.lit.lit = true;
            e->rkind = K_STR;
            lex(ps);
        }
        break;
    }
    case T_INT:
    case T_FLOAT:
        e = parse_literal_number(ps);
        break;
    case T_LBRACK: {
        struct ottl_expr *items[MAX_ITEMS];
        size_t n = 0;
        e = new_expr(ps, E_LIST, t.col);
        lex(ps);
        while (e != NULL && ps->cur.t != T_RBRACK && !ps->failed) {
            if (n > 0 && !expect(ps, T_COMMA, "',' or ']'")) {
                break;
            }
            if (n == MAX_ITEMS) {
                fail(ps, ps->cur.col, "list literal longer than %d items", MAX_ITEMS);
                break;
            }
            items[n] = parse_value(ps);
            if (items[n] == NULL) {
                break;
            }
            n++;
        }
        if (ps->failed || e == NULL || !expect(ps, T_RBRACK, "']'")) {
            e = NULL;
            break;
        }
        e->u.list.items = n ? pg_arena_memdup(ps->a, items, n * sizeof(items[0])) : NULL;
        e->u.list.n = n;
        e->rkind = K_LIST;
        break;
    }
    case T_LBRACE: {
        const char *keys[MAX_ITEMS];
        struct ottl_expr *vals[MAX_ITEMS];
        size_t n = 0;
        e = new_expr(ps, E_MAP, t.col);
        lex(ps);
        while (e != NULL && ps->cur.t != T_RBRACE && !ps->failed) {
            size_t kl;
            if (n > 0 && !expect(ps, T_COMMA, "',' or '}'")) {
                break;
            }
            if (n == MAX_ITEMS) {
                fail(ps, ps->cur.col, "map literal longer than %d entries", MAX_ITEMS);
                break;
            }
            if (ps->cur.t != T_STRING) {
                char buf[64];
                fail(ps, ps->cur.col, "expected a string map key, found %s",
                     tok_desc(&ps->cur, buf, sizeof(buf)));
                break;
            }
            keys[n] = decode_string(ps, &ps->cur, &kl);
            lex(ps);
            if (keys[n] == NULL || !expect(ps, T_COLON, "':'")) {
                break;
            }
            vals[n] = parse_value(ps);
            if (vals[n] == NULL) {
                break;
            }
            n++;
        }
        if (ps->failed || e == NULL || !expect(ps, T_RBRACE, "'}'")) {
            e = NULL;
            break;
        }
        e->u.map.keys = n ? pg_arena_memdup(ps->a, keys, n * sizeof(keys[0])) : NULL;
        e->u.map.vals = n ? pg_arena_memdup(ps->a, vals, n * sizeof(vals[0])) : NULL;
        e->u.map.n = n;
        e->rkind = K_MAP;
        break;
    }
    case T_IDENT:
        if (tok_is(ps, "true") || tok_is(ps, "false") || tok_is(ps, "nil")) {
            e = new_expr(ps, E_LIT, t.col);
            if (e != NULL) {
                e->u.lit.lit = true;
                if (tok_is(ps, "nil")) {
                    e->u.lit.t = PG_OTTL_NIL;
                    e->rkind = K_NIL;
                } else {
                    e->u.lit.t = PG_OTTL_BOOL;
                    e->u.lit.u.b = tok_is(ps, "true");
                    e->rkind = K_BOOL;
                }
                lex(ps);
            }
            break;
        }
        lex(ps);
        if (ps->cur.t == T_LPAREN) {
            e = parse_call(ps, &t, false);
        } else {
            e = parse_path(ps, &t);
        }
        break;
    default: {
        char buf[64];
        fail(ps, t.col, "expected a value, found %s", tok_desc(&t, buf, sizeof(buf)));
        break;
    }
    }
    ps->depth--;
    return ps->failed ? NULL : e;
}

static struct ottl_expr *parse_not(struct parser *ps)
{
    struct ottl_expr *e;
    int col = ps->cur.col;

    if (++ps->depth > MAX_DEPTH) {
        fail(ps, col, "expression nested too deeply");
        return NULL;
    }
    if (tok_is(ps, "not")) {
        lex(ps);
        e = new_expr(ps, E_NOT, col);
        if (e != NULL) {
            e->u.bin.l = parse_not(ps);
            e->rkind = K_BOOL;
        }
    } else if (ps->cur.t == T_LPAREN) {
        lex(ps);
        e = parse_bool(ps);
        if (e != NULL && !expect(ps, T_RPAREN, "')'")) {
            e = NULL;
        }
    } else {
        struct ottl_expr *l = parse_value(ps);
        if (l != NULL && ps->cur.t == T_CMP) {
            enum ottl_cmp op = ps->cur.cmp;
            int ccol = ps->cur.col;
            lex(ps);
            e = new_expr(ps, E_CMP, ccol);
            if (e != NULL) {
                e->u.bin.op = op;
                e->u.bin.l = l;
                e->u.bin.r = parse_value(ps);
                e->rkind = K_BOOL;
            }
        } else if (l != NULL) {
            /* A bare value must be a boolean literal or converter. */
            if (!((l->kind == E_LIT && l->u.lit.t == PG_OTTL_BOOL) ||
                  (l->kind == E_CALL && kind_compatible(l->rkind, K_BOOL)))) {
                fail(ps, l->col, "expected a condition (a comparison, true/false or a "
                     "boolean converter such as IsMatch)");
                e = NULL;
            } else {
                e = l;
            }
        } else {
            e = NULL;
        }
    }
    ps->depth--;
    return ps->failed ? NULL : e;
}

static struct ottl_expr *parse_and(struct parser *ps)
{
    struct ottl_expr *l = parse_not(ps);

    while (l != NULL && tok_is(ps, "and") && !ps->failed) {
        struct ottl_expr *e = new_expr(ps, E_AND, ps->cur.col);
        lex(ps);
        if (e == NULL) {
            return NULL;
        }
        e->u.bin.l = l;
        e->u.bin.r = parse_not(ps);
        e->rkind = K_BOOL;
        l = e;
    }
    return ps->failed ? NULL : l;
}

static struct ottl_expr *parse_bool(struct parser *ps)
{
    struct ottl_expr *l;

    if (++ps->depth > MAX_DEPTH) {
        fail(ps, ps->cur.col, "expression nested too deeply");
        return NULL;
    }
    l = parse_and(ps);
    while (l != NULL && tok_is(ps, "or") && !ps->failed) {
        struct ottl_expr *e = new_expr(ps, E_OR, ps->cur.col);
        lex(ps);
        if (e == NULL) {
            return NULL;
        }
        e->u.bin.l = l;
        e->u.bin.r = parse_and(ps);
        e->rkind = K_BOOL;
        l = e;
    }
    ps->depth--;
    return ps->failed ? NULL : l;
}

static bool parser_init(struct parser *ps, struct pg_arena *a, const char *text,
                        enum pg_ottl_ctx ctx, struct pg_ottl_error *err)
{
    memset(ps, 0, sizeof(*ps));
    ps->a = a;
    ps->src = text;
    ps->len = strlen(text);
    ps->err = err;
    ps->ctx = ctx;
    ps->needed = PG_OTTL_CTX_RESOURCE;
    err->col = 0;
    err->msg[0] = '\0';
    lex(ps);
    if (ps->cur.t == T_EOF && !ps->failed) {
        fail(ps, 0, "empty statement");
    }
    return !ps->failed;
}

static bool expect_eof(struct parser *ps)
{
    char buf[64];

    if (!ps->failed && ps->cur.t != T_EOF) {
        fail(ps, ps->cur.col, "unexpected %s", tok_desc(&ps->cur, buf, sizeof(buf)));
    }
    return !ps->failed;
}

struct pg_ottl_stmt *pg_ottl_compile(struct pg_arena *arena, const char *text,
                                     enum pg_ottl_ctx ctx, struct pg_ottl_error *err)
{
    struct parser ps;
    struct pg_ottl_stmt *s;
    struct tok name;

    if (!parser_init(&ps, arena, text, ctx, err)) {
        return NULL;
    }
    name = ps.cur;
    if (name.t != T_IDENT) {
        char buf[64];
        fail(&ps, name.col, "a statement starts with an editor such as set(...), found %s",
             tok_desc(&name, buf, sizeof(buf)));
        return NULL;
    }
    lex(&ps);
    if (ps.cur.t != T_LPAREN) {
        fail(&ps, name.col, "a statement starts with an editor call such as set(...)");
        return NULL;
    }
    s = zalloc(&ps, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->call = parse_call(&ps, &name, true);
    if (s->call == NULL) {
        return NULL;
    }
    if (tok_is(&ps, "where")) {
        lex(&ps);
        s->where = parse_bool(&ps);
        if (s->where == NULL) {
            return NULL;
        }
    }
    if (!expect_eof(&ps)) {
        return NULL;
    }
    s->text = pg_arena_strdup(arena, text);
    s->ctx = ctx == PG_OTTL_CTX_INFER ? ps.needed : ctx;
    s->metadata = ps.metadata;
    return s->text ? s : NULL;
}

struct pg_ottl_cond *pg_ottl_compile_condition(struct pg_arena *arena, const char *text,
                                               enum pg_ottl_ctx ctx, struct pg_ottl_error *err)
{
    struct parser ps;
    struct pg_ottl_cond *c;

    if (!parser_init(&ps, arena, text, ctx, err)) {
        return NULL;
    }
    c = zalloc(&ps, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->expr = parse_bool(&ps);
    if (c->expr == NULL || !expect_eof(&ps)) {
        return NULL;
    }
    c->text = pg_arena_strdup(arena, text);
    c->ctx = ctx == PG_OTTL_CTX_INFER ? ps.needed : ctx;
    c->metadata = ps.metadata;
    return c->text ? c : NULL;
}

enum pg_ottl_ctx pg_ottl_stmt_ctx(const struct pg_ottl_stmt *s)
{
    return s->ctx;
}

enum pg_ottl_ctx pg_ottl_cond_ctx(const struct pg_ottl_cond *c)
{
    return c->ctx;
}

const char *pg_ottl_stmt_text(const struct pg_ottl_stmt *s)
{
    return s->text;
}

const char *pg_ottl_cond_text(const struct pg_ottl_cond *c)
{
    return c->text;
}

bool pg_ottl_stmt_reads_metadata(const struct pg_ottl_stmt *s)
{
    return s->metadata;
}

bool pg_ottl_cond_reads_metadata(const struct pg_ottl_cond *c)
{
    return c->metadata;
}
