/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite recursive-descent parser and the compile entry points (tokens
 * are ottl_lex.c's, path/function/argument checks ottl_check.c's).
 * Grammar:  statement := editor "(" args ")" [ "where" bool ]
 *           bool := and { "or" and };  and := not { "and" not }
 *           not := "not" not | "(" bool ")" | value [ cmp value ]
 *           value := literal | list | map | path | Converter "(" args ")" { "[" key "]" }
 * Paths, functions, literal arguments and regexes are resolved here, so a bad
 * statement fails at config load with the column of the offending token. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "processor/ottl_parse_internal.h"

/* Bounds that keep compile time and evaluation depth in check. */
#define MAX_DEPTH 64
#define MAX_ITEMS 256
#define MAX_KEYS 8

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

static struct ottl_expr *new_expr(struct ottl_parser *ps, enum ottl_expr_kind k, int col)
{
    struct ottl_expr *e = pg_ottl_zalloc(ps, sizeof(*e));

    if (e != NULL) {
        e->kind = k;
        e->col = col;
    }
    return e;
}

static struct ottl_expr *parse_value(struct ottl_parser *ps);
static struct ottl_expr *parse_bool(struct ottl_parser *ps);

/* Zero or more ["k"] / [0] suffixes. */
static bool parse_keys(struct ottl_parser *ps, struct ottl_expr *e)
{
    struct ottl_key keys[MAX_KEYS];
    size_t n = 0;

    while (ps->cur.t == T_LBRACK && !ps->failed) {
        struct ottl_key *k;
        pg_ottl_lex(ps);
        if (n == MAX_KEYS) {
            pg_ottl_fail(ps, ps->cur.col, "more than %d index keys", MAX_KEYS);
            return false;
        }
        k = &keys[n];
        memset(k, 0, sizeof(*k));
        k->col = ps->cur.col;
        if (ps->cur.t == T_STRING) {
            size_t sl;
            k->s = pg_ottl_decode_string(ps, &ps->cur, &sl);
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
                pg_ottl_fail(ps, ps->cur.col, "invalid list index %s", tmp);
                return false;
            }
        } else {
            char buf[64];
            pg_ottl_fail(ps, ps->cur.col, "expected a string or integer key, found %s",
                 pg_ottl_tok_desc(&ps->cur, buf, sizeof(buf)));
            return false;
        }
        pg_ottl_lex(ps);
        if (!pg_ottl_expect(ps, T_RBRACK, "']'")) {
            return false;
        }
        n++;
    }
    if (n > 0) {
        e->keys = pg_arena_memdup(ps->a, keys, n * sizeof(keys[0]));
        if (e->keys == NULL) {
            pg_ottl_fail(ps, 0, "out of memory compiling the statement");
            return false;
        }
        e->nkeys = n;
    }
    return !ps->failed;
}

/* @first is the already-consumed first identifier. */
static struct ottl_expr *parse_path(struct ottl_parser *ps, const struct ottl_tok *first)
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
        pg_ottl_fail(ps, first->col, "path too long");
        return NULL;
    }
    memcpy(dotted, first->p, first->n);
    dl = first->n;
    dotted[dl] = '\0';
    while (ps->cur.t == T_DOT && !ps->failed) {
        pg_ottl_lex(ps);
        if (ps->cur.t != T_IDENT) {
            char buf[64];
            pg_ottl_fail(ps, ps->cur.col, "expected a path segment after '.', found %s",
                 pg_ottl_tok_desc(&ps->cur, buf, sizeof(buf)));
            return NULL;
        }
        if (dl + 1 + ps->cur.n >= sizeof(dotted)) {
            pg_ottl_fail(ps, first->col, "path too long");
            return NULL;
        }
        dotted[dl++] = '.';
        memcpy(dotted + dl, ps->cur.p, ps->cur.n);
        dl += ps->cur.n;
        dotted[dl] = '\0';
        pg_ottl_lex(ps);
    }
    if (!parse_keys(ps, e)) {
        return NULL;
    }
    if (strcmp(dotted, "metadata") == 0 || strcmp(dotted, "otelcol.client.metadata") == 0) {
        bool bare = dotted[0] == 'm';
        if (e->nkeys == 0 || e->keys[0].is_int) {
            pg_ottl_fail(ps, first->col, "%s needs a header name key, e.g. %s[\"otel-resource-attributes\"]",
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
        d = pg_ottl_find_path(rest, pctx);
    } else if (ps->ctx != PG_OTTL_CTX_INFER) {
        /* With an explicit context, unprefixed paths name that context. */
        d = pg_ottl_find_path(dotted, ps->ctx);
    } else {
        pg_ottl_fail(ps, first->col,
             "path '%s' has no context prefix: write resource., scope. or profile. (or set "
             "context: in a statement group)",
             dotted);
        return NULL;
    }
    if (d == NULL) {
        pg_ottl_fail(ps, first->col, "unknown path '%s'", dotted);
        return NULL;
    }
    if (ps->ctx != PG_OTTL_CTX_INFER && d->ctx > ps->ctx) {
        pg_ottl_fail(ps, first->col, "path '%s' is not available in context %s", dotted,
             pg_ottl_ctx_name(ps->ctx));
        return NULL;
    }
    if (d->ctx > ps->needed) {
        ps->needed = d->ctx;
    }
    e->u.path.id = d->id;
    e->rkind = e->nkeys ? K_ANY : d->kind;
    if (e->nkeys > 0 && !pg_ottl_path_is_attrs(d->id)) {
        pg_ottl_fail(ps, e->keys[0].col - 1, "path '%s' cannot be indexed", dotted);
        return NULL;
    }
    if (e->nkeys > 0 && e->keys[0].is_int) {
        pg_ottl_fail(ps, e->keys[0].col, "attributes are indexed by string keys, e.g. %s[\"service.name\"]",
             dotted);
        return NULL;
    }
    return e;
}

/* After the name: "(" args ")". */
static struct ottl_expr *parse_call(struct ottl_parser *ps, const struct ottl_tok *name, bool want_editor)
{
    const struct ottl_func *f = pg_ottl_find_func(name);
    struct ottl_expr *e;
    size_t npos = 0;
    size_t seen = 0;
    bool named_seen = false;

    if (f == NULL) {
        const char *hint = pg_ottl_closest_func(name);
        pg_ottl_fail(ps, name->col, "unknown function '%.*s'%s%s%s", (int)name->n, name->p,
             hint ? " (did you mean " : "", hint ? hint : "", hint ? "?)" : "");
        return NULL;
    }
    if (f->editor != want_editor) {
        pg_ottl_fail(ps, name->col, want_editor ? "'%s' is a converter; a statement must start with an "
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
    e->u.call.args = pg_ottl_zalloc(ps, OTTL_MAX_PARAMS * sizeof(struct ottl_expr *));
    if (e->u.call.args == NULL || !pg_ottl_expect(ps, T_LPAREN, "'('")) {
        return NULL;
    }
    while (ps->cur.t != T_RPAREN && !ps->failed) {
        size_t slot;
        struct ottl_expr *arg;
        int acol = ps->cur.col;

        if (seen++ > 0 && !pg_ottl_expect(ps, T_COMMA, "',' or ')'")) {
            return NULL;
        }
        acol = ps->cur.col;
        /* name = value */
        if (ps->cur.t == T_IDENT) {
            size_t save = ps->pos;
            struct ottl_tok id = ps->cur;
            pg_ottl_lex(ps);
            if (ps->cur.t == T_ASSIGN) {
                size_t k;
                pg_ottl_lex(ps);
                for (k = 0; k < f->nparams; k++) {
                    if (strlen(f->pnames[k]) == id.n && memcmp(f->pnames[k], id.p, id.n) == 0) {
                        break;
                    }
                }
                if (k == f->nparams) {
                    pg_ottl_fail(ps, id.col, "%s has no parameter '%.*s'", f->name, (int)id.n, id.p);
                    return NULL;
                }
                if (e->u.call.args[k] != NULL) {
                    pg_ottl_fail(ps, id.col, "%s: parameter '%s' given twice", f->name, f->pnames[k]);
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
            pg_ottl_fail(ps, acol, "%s: positional argument after a named one", f->name);
            return NULL;
        }
        slot = npos;
        if (slot >= f->nparams) {
            pg_ottl_fail(ps, acol, "%s takes at most %zu arguments", f->name, f->nparams);
            return NULL;
        }
        arg = parse_value(ps);
        if (arg == NULL) {
            return NULL;
        }
        e->u.call.args[slot] = arg;
        npos++;
    }
    if (ps->failed || !pg_ottl_expect(ps, T_RPAREN, "')'")) {
        return NULL;
    }
    if (!want_editor && !parse_keys(ps, e)) {
        return NULL;
    }
    if (!pg_ottl_check_call(ps, e)) {
        return NULL;
    }
    return e;
}

static struct ottl_expr *parse_literal_number(struct ottl_parser *ps)
{
    char tmp[64];
    struct ottl_expr *e = new_expr(ps, E_LIT, ps->cur.col);
    char *end;

    if (e == NULL) {
        return NULL;
    }
    if (ps->cur.n >= sizeof(tmp)) {
        pg_ottl_fail(ps, ps->cur.col, "number literal too long");
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
        pg_ottl_fail(ps, ps->cur.col, "number out of range: %s", tmp);
        return NULL;
    }
    e->u.lit.lit = true;
    pg_ottl_lex(ps);
    return e;
}

static struct ottl_expr *parse_value(struct ottl_parser *ps)
{
    struct ottl_expr *e = NULL;
    struct ottl_tok t = ps->cur;

    if (ps->failed) {
        return NULL;
    }
    if (++ps->depth > MAX_DEPTH) {
        pg_ottl_fail(ps, t.col, "expression nested too deeply");
        return NULL;
    }
    switch (t.t) {
    case T_STRING: {
        size_t n;
        char *s = pg_ottl_decode_string(ps, &t, &n);
        if (s == NULL) {
            break;
        }
        e = new_expr(ps, E_LIT, t.col);
        if (e != NULL) {
            pg_ottl_set_str(&e->u.lit, s, n);
            e->u.lit.lit = true;
            e->rkind = K_STR;
            pg_ottl_lex(ps);
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
        pg_ottl_lex(ps);
        while (e != NULL && ps->cur.t != T_RBRACK && !ps->failed) {
            if (n > 0 && !pg_ottl_expect(ps, T_COMMA, "',' or ']'")) {
                break;
            }
            if (n == MAX_ITEMS) {
                pg_ottl_fail(ps, ps->cur.col, "list literal longer than %d items", MAX_ITEMS);
                break;
            }
            items[n] = parse_value(ps);
            if (items[n] == NULL) {
                break;
            }
            n++;
        }
        if (ps->failed || e == NULL || !pg_ottl_expect(ps, T_RBRACK, "']'")) {
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
        pg_ottl_lex(ps);
        while (e != NULL && ps->cur.t != T_RBRACE && !ps->failed) {
            size_t kl;
            if (n > 0 && !pg_ottl_expect(ps, T_COMMA, "',' or '}'")) {
                break;
            }
            if (n == MAX_ITEMS) {
                pg_ottl_fail(ps, ps->cur.col, "map literal longer than %d entries", MAX_ITEMS);
                break;
            }
            if (ps->cur.t != T_STRING) {
                char buf[64];
                pg_ottl_fail(ps, ps->cur.col, "expected a string map key, found %s",
                     pg_ottl_tok_desc(&ps->cur, buf, sizeof(buf)));
                break;
            }
            keys[n] = pg_ottl_decode_string(ps, &ps->cur, &kl);
            pg_ottl_lex(ps);
            if (keys[n] == NULL || !pg_ottl_expect(ps, T_COLON, "':'")) {
                break;
            }
            vals[n] = parse_value(ps);
            if (vals[n] == NULL) {
                break;
            }
            n++;
        }
        if (ps->failed || e == NULL || !pg_ottl_expect(ps, T_RBRACE, "'}'")) {
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
        if (pg_ottl_tok_is(ps, "true") || pg_ottl_tok_is(ps, "false") || pg_ottl_tok_is(ps, "nil")) {
            e = new_expr(ps, E_LIT, t.col);
            if (e != NULL) {
                e->u.lit.lit = true;
                if (pg_ottl_tok_is(ps, "nil")) {
                    e->u.lit.t = PG_OTTL_NIL;
                    e->rkind = K_NIL;
                } else {
                    e->u.lit.t = PG_OTTL_BOOL;
                    e->u.lit.u.b = pg_ottl_tok_is(ps, "true");
                    e->rkind = K_BOOL;
                }
                pg_ottl_lex(ps);
            }
            break;
        }
        pg_ottl_lex(ps);
        if (ps->cur.t == T_LPAREN) {
            e = parse_call(ps, &t, false);
        } else {
            e = parse_path(ps, &t);
        }
        break;
    default: {
        char buf[64];
        pg_ottl_fail(ps, t.col, "expected a value, found %s", pg_ottl_tok_desc(&t, buf, sizeof(buf)));
        break;
    }
    }
    ps->depth--;
    return ps->failed ? NULL : e;
}

static struct ottl_expr *parse_not(struct ottl_parser *ps)
{
    struct ottl_expr *e;
    int col = ps->cur.col;

    if (++ps->depth > MAX_DEPTH) {
        pg_ottl_fail(ps, col, "expression nested too deeply");
        return NULL;
    }
    if (pg_ottl_tok_is(ps, "not")) {
        pg_ottl_lex(ps);
        e = new_expr(ps, E_NOT, col);
        if (e != NULL) {
            e->u.bin.l = parse_not(ps);
            e->rkind = K_BOOL;
        }
    } else if (ps->cur.t == T_LPAREN) {
        pg_ottl_lex(ps);
        e = parse_bool(ps);
        if (e != NULL && !pg_ottl_expect(ps, T_RPAREN, "')'")) {
            e = NULL;
        }
    } else {
        struct ottl_expr *l = parse_value(ps);
        if (l != NULL && ps->cur.t == T_CMP) {
            enum ottl_cmp op = ps->cur.cmp;
            int ccol = ps->cur.col;
            pg_ottl_lex(ps);
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
                  (l->kind == E_CALL && pg_ottl_kind_compatible(l->rkind, K_BOOL)))) {
                pg_ottl_fail(ps, l->col, "expected a condition (a comparison, true/false or a "
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

static struct ottl_expr *parse_and(struct ottl_parser *ps)
{
    struct ottl_expr *l = parse_not(ps);

    while (l != NULL && pg_ottl_tok_is(ps, "and") && !ps->failed) {
        struct ottl_expr *e = new_expr(ps, E_AND, ps->cur.col);
        pg_ottl_lex(ps);
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

static struct ottl_expr *parse_bool(struct ottl_parser *ps)
{
    struct ottl_expr *l;

    if (++ps->depth > MAX_DEPTH) {
        pg_ottl_fail(ps, ps->cur.col, "expression nested too deeply");
        return NULL;
    }
    l = parse_and(ps);
    while (l != NULL && pg_ottl_tok_is(ps, "or") && !ps->failed) {
        struct ottl_expr *e = new_expr(ps, E_OR, ps->cur.col);
        pg_ottl_lex(ps);
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

static bool parser_init(struct ottl_parser *ps, struct pg_arena *a, const char *text,
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
    pg_ottl_lex(ps);
    if (ps->cur.t == T_EOF && !ps->failed) {
        pg_ottl_fail(ps, 0, "empty statement");
    }
    return !ps->failed;
}

static bool expect_eof(struct ottl_parser *ps)
{
    char buf[64];

    if (!ps->failed && ps->cur.t != T_EOF) {
        pg_ottl_fail(ps, ps->cur.col, "unexpected %s", pg_ottl_tok_desc(&ps->cur, buf, sizeof(buf)));
    }
    return !ps->failed;
}

struct pg_ottl_stmt *pg_ottl_compile(struct pg_arena *arena, const char *text,
                                     enum pg_ottl_ctx ctx, struct pg_ottl_error *err)
{
    struct ottl_parser ps;
    struct pg_ottl_stmt *s;
    struct ottl_tok name;

    if (!parser_init(&ps, arena, text, ctx, err)) {
        return NULL;
    }
    name = ps.cur;
    if (name.t != T_IDENT) {
        char buf[64];
        pg_ottl_fail(&ps, name.col, "a statement starts with an editor such as set(...), found %s",
             pg_ottl_tok_desc(&name, buf, sizeof(buf)));
        return NULL;
    }
    pg_ottl_lex(&ps);
    if (ps.cur.t != T_LPAREN) {
        pg_ottl_fail(&ps, name.col, "a statement starts with an editor call such as set(...)");
        return NULL;
    }
    s = pg_ottl_zalloc(&ps, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->call = parse_call(&ps, &name, true);
    if (s->call == NULL) {
        return NULL;
    }
    if (pg_ottl_tok_is(&ps, "where")) {
        pg_ottl_lex(&ps);
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
    struct ottl_parser ps;
    struct pg_ottl_cond *c;

    if (!parser_init(&ps, arena, text, ctx, err)) {
        return NULL;
    }
    c = pg_ottl_zalloc(&ps, sizeof(*c));
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
