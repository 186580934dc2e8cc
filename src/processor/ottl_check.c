/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite compile-time checks: the path table, function lookup and "did you
 * mean" suggestions, argument arity and kinds, regex compilation with its
 * limits. */
#include <stdio.h>
#include <string.h>

#include "processor/ottl_parse_internal.h"

#define REGEX_MATCH_LIMIT 100000u
#define REGEX_DEPTH_LIMIT 10000u
#define REGEX_HEAP_LIMIT_KIB 1024u

const char *pg_ottl_kind_name(enum ottl_kind k)
{
    static const char *const names[] = {"any", "nil", "bool", "int", "double",
                                        "string", "bytes", "map", "list"};
    return names[k];
}

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

const struct path_def *pg_ottl_find_path(const char *rest, enum pg_ottl_ctx ctx)
{
    for (const struct path_def *d = path_defs; d->name != NULL; d++) {
        if (d->ctx == ctx && strcmp(d->name, rest) == 0) {
            return d;
        }
    }
    return NULL;
}

bool pg_ottl_path_settable(enum ottl_path_id id)
{
    return id != P_METADATA && id != P_OTELCOL_METADATA && id != P_OTELCOL_ADDR &&
           id != P_PROF_SAMPLE_COUNT;
}

bool pg_ottl_path_is_attrs(enum ottl_path_id id)
{
    return id == P_RES_ATTRS || id == P_SCOPE_ATTRS || id == P_PROF_ATTRS;
}

const struct ottl_func *pg_ottl_find_func(const struct ottl_tok *t)
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

const char *pg_ottl_closest_func(const struct ottl_tok *t)
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

static struct ottl_regex *compile_regex(struct ottl_parser *ps, const struct ottl_expr *lit)
{
    struct ottl_regex *re = pg_ottl_zalloc(ps, sizeof(*re));
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
        pg_ottl_fail(ps, lit->col + 1 + (int)eoff, "invalid regular expression: %s", (char *)msg);
        return NULL;
    }
    re->mctx = pcre2_match_context_create(NULL);
    if (re->mctx == NULL ||
        pg_arena_cleanup_add(ps->a, regex_free, re) != 0) {
        regex_free(re);
        pg_ottl_fail(ps, lit->col, "out of memory compiling a regular expression");
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

bool pg_ottl_kind_compatible(enum ottl_kind have, enum ottl_kind want)
{
    return have == K_ANY || want == K_ANY || have == K_NIL || have == want ||
           (want == K_DOUBLE && have == K_INT);
}

/* Checks the arguments of a resolved call against its parameter types. */
bool pg_ottl_check_call(struct ottl_parser *ps, struct ottl_expr *call)
{
    const struct ottl_func *f = call->u.call.fn;
    const char *msg;
    int col = call->col;

    for (size_t i = 0; i < f->nparams; i++) {
        struct ottl_expr *a = call->u.call.args[i];
        if (a == NULL) {
            if (i < f->min_args) {
                pg_ottl_fail(ps, call->col, "%s: missing argument '%s'", f->name, f->pnames[i]);
                return false;
            }
            continue;
        }
        switch (f->ptypes[i]) {
        case PA_TARGET:
            if (a->kind != E_PATH || !pg_ottl_path_settable(a->u.path.id)) {
                pg_ottl_fail(ps, a->col, "%s: argument '%s' must be a settable path", f->name,
                     f->pnames[i]);
                return false;
            }
            if (pg_ottl_path_is_attrs(a->u.path.id) && a->nkeys > 1) {
                pg_ottl_fail(ps, a->keys[1].col, "%s: setting nested keys is not supported", f->name);
                return false;
            }
            break;
        case PA_MAPTARGET:
            if (a->kind != E_PATH || !pg_ottl_path_is_attrs(a->u.path.id) || a->nkeys != 0) {
                pg_ottl_fail(ps, a->col, "%s: argument '%s' must be an attributes map path such as "
                     "resource.attributes", f->name, f->pnames[i]);
                return false;
            }
            break;
        case PA_REGEX:
        case PA_STRLIT:
            if (a->kind != E_LIT || a->u.lit.t != PG_OTTL_STR) {
                pg_ottl_fail(ps, a->col, "%s: argument '%s' must be a string literal", f->name,
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
                pg_ottl_fail(ps, a->col, "%s: argument '%s' must be an integer literal", f->name,
                     f->pnames[i]);
                return false;
            }
            break;
        case PA_LIST:
            if (!pg_ottl_kind_compatible(a->rkind, K_LIST)) {
                pg_ottl_fail(ps, a->col, "%s: argument '%s' must be a list, got %s", f->name,
                     f->pnames[i], pg_ottl_kind_name(a->rkind));
                return false;
            }
            break;
        case PA_ANY:
            break;
        }
    }
    if (f->check != NULL && (msg = f->check(call, &col)) != NULL) {
        pg_ottl_fail(ps, col, "%s: %s", f->name, msg);
        return false;
    }
    call->rkind = call->nkeys ? K_ANY : f->result;
    return true;
}
