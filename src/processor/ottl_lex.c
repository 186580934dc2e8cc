/* SPDX-License-Identifier: Apache-2.0
 * The OTTL-lite lexer: tokens, their descriptions for messages, string
 * literals with Go escapes, and the compile's first-error record. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "processor/ottl_parse_internal.h"

void pg_ottl_fail(struct ottl_parser *ps, int col, const char *fmt, ...)
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

void pg_ottl_lex(struct ottl_parser *ps)
{
    const char *s = ps->src;
    size_t i = ps->pos;
    struct ottl_tok *t = &ps->cur;

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
            pg_ottl_fail(ps, (int)i, "unterminated string literal");
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
        pg_ottl_fail(ps, t->col, "unexpected character '%c'", s[i]);
    }
}

bool pg_ottl_tok_is(const struct ottl_parser *ps, const char *word)
{
    return ps->cur.t == T_IDENT && ps->cur.n == strlen(word) &&
           memcmp(ps->cur.p, word, ps->cur.n) == 0;
}

const char *pg_ottl_tok_desc(const struct ottl_tok *t, char *buf, size_t cap)
{
    if (t->t == T_EOF) {
        return "end of statement";
    }
    snprintf(buf, cap, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->p);
    return buf;
}

bool pg_ottl_expect(struct ottl_parser *ps, enum ottl_tok_type t, const char *what)
{
    char buf[64];

    if (ps->cur.t != t) {
        pg_ottl_fail(ps, ps->cur.col, "expected %s, found %s", what, pg_ottl_tok_desc(&ps->cur, buf, sizeof(buf)));
        return false;
    }
    pg_ottl_lex(ps);
    return true;
}

void *pg_ottl_zalloc(struct ottl_parser *ps, size_t n)
{
    void *p = pg_arena_zalloc(ps->a, n);

    if (p == NULL) {
        pg_ottl_fail(ps, 0, "out of memory compiling the statement");
    }
    return p;
}

/* Decodes a double-quoted literal (Go escapes: \" \\ \/ \n \t \r \b \f \0 \xHH
 * \uHHHH). */
char *pg_ottl_decode_string(struct ottl_parser *ps, const struct ottl_tok *t, size_t *out_len)
{
    char *out = pg_ottl_zalloc(ps, t->n + 1);
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
                    pg_ottl_fail(ps, t->col + (int)i - 1, "invalid \\%c escape in string literal", c);
                    return NULL;
                }
                cp = cp * 16 + (unsigned long)v;
            }
            i += nd;
            if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
                pg_ottl_fail(ps, t->col + (int)(i - nd) - 1, "invalid code point in string literal");
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
            pg_ottl_fail(ps, t->col + (int)i - 1, "unknown escape \\%c in string literal", c);
            return NULL;
        }
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}
