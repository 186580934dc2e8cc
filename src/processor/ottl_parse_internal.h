/* SPDX-License-Identifier: Apache-2.0
 * What the OTTL compiler's files share (private to ottl_lex.c, ottl_check.c,
 * ottl_parse.c): the token, the parser state and the path table's row.
 * Calls go ottl_parse.c -> ottl_check.c -> ottl_lex.c. Config-load time,
 * one thread per compile. */
#ifndef PG_OTTL_PARSE_INTERNAL_H
#define PG_OTTL_PARSE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "processor/ottl_internal.h"

enum ottl_tok_type {
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

struct ottl_tok {
    enum ottl_tok_type t;
    int col;
    const char *p; /* into the source */
    size_t n;
    enum ottl_cmp cmp;
};

struct ottl_parser {
    struct pg_arena *a;
    const char *src;
    size_t len;
    size_t pos;
    struct ottl_tok cur;
    struct pg_ottl_error *err;
    bool failed;
    int depth;
    enum pg_ottl_ctx ctx;     /* given, or INFER */
    enum pg_ottl_ctx needed;  /* finest context seen in paths */
    bool metadata;            /* a path reads request metadata */
};

struct path_def {
    const char *name; /* without context prefix */
    enum pg_ottl_ctx ctx;
    enum ottl_path_id id;
    enum ottl_kind kind;
};

/* ---- ottl_lex.c ---- */

/* Records the first error (its column and message); later ones are dropped. */
void pg_ottl_fail(struct ottl_parser *ps, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Zeroed arena memory; fails the compile when out of memory. */
void *pg_ottl_zalloc(struct ottl_parser *ps, size_t n);
/* Reads the next token into ps->cur. */
void pg_ottl_lex(struct ottl_parser *ps);
/* True when the current token is the identifier @word. */
bool pg_ottl_tok_is(const struct ottl_parser *ps, const char *word);
/* @t quoted for a message (at most 40 bytes), in @buf. */
const char *pg_ottl_tok_desc(const struct ottl_tok *t, char *buf, size_t cap);
/* Consumes a token of type @t, or fails with "expected @what". */
bool pg_ottl_expect(struct ottl_parser *ps, enum ottl_tok_type t, const char *what);
/* Decodes a double-quoted literal (Go escapes) into the arena. */
char *pg_ottl_decode_string(struct ottl_parser *ps, const struct ottl_tok *t, size_t *out_len);

/* ---- ottl_check.c ---- */

const char *pg_ottl_kind_name(enum ottl_kind k);
/* The path row named @rest (without its context prefix) in @ctx, or NULL. */
const struct path_def *pg_ottl_find_path(const char *rest, enum pg_ottl_ctx ctx);
bool pg_ottl_path_settable(enum ottl_path_id id);
bool pg_ottl_path_is_attrs(enum ottl_path_id id);
/* The function named by @t, or NULL; the closest name for a hint, or NULL. */
const struct ottl_func *pg_ottl_find_func(const struct ottl_tok *t);
const char *pg_ottl_closest_func(const struct ottl_tok *t);
bool pg_ottl_kind_compatible(enum ottl_kind have, enum ottl_kind want);
/* Checks the arguments of a resolved call against its parameter types
 * (compiles its regex argument). */
bool pg_ottl_check_call(struct ottl_parser *ps, struct ottl_expr *call);

#endif
