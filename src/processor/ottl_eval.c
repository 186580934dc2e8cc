/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite evaluation: the environment, expressions, comparisons and
 * statement execution. Values and the attribute-map view are ottl_value.c's,
 * regex matching ottl_regex.c's, path reads and writes ottl_path.c's. Every
 * allocation comes from the batch arena. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "processor/ottl_internal.h"

#include "core/utf8.h"


void pg_ottl_env_init(struct pg_ottl_env *env, struct pg_batch *b)
{
    memset(env, 0, sizeof(*env));
    env->b = b;
    env->a = b->arena;
}

/* ---- expressions ---------------------------------------------------- */

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);

    if (c != 0) {
        return c;
    }
    return an < bn ? -1 : an > bn ? 1 : 0;
}

static bool values_equal(const struct pg_ottl_value *a, const struct pg_ottl_value *b);

static bool maps_equal(const struct pg_ottl_map *a, const struct pg_ottl_map *b)
{
    if (a->n != b->n) {
        return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        size_t j;
        for (j = 0; j < b->n; j++) {
            if (strcmp(a->v[i].key, b->v[j].key) == 0) {
                break;
            }
        }
        if (j == b->n || !values_equal(&a->v[i].v, &b->v[j].v)) {
            return false;
        }
    }
    return true;
}

static bool values_equal(const struct pg_ottl_value *a, const struct pg_ottl_value *b)
{
    if ((a->t == PG_OTTL_INT || a->t == PG_OTTL_DOUBLE) &&
        (b->t == PG_OTTL_INT || b->t == PG_OTTL_DOUBLE)) {
        if (a->t == PG_OTTL_INT && b->t == PG_OTTL_INT) {
            return a->u.i == b->u.i;
        }
        return (a->t == PG_OTTL_INT ? (double)a->u.i : a->u.d) ==
               (b->t == PG_OTTL_INT ? (double)b->u.i : b->u.d);
    }
    if (a->t != b->t) {
        return false;
    }
    switch (a->t) {
    case PG_OTTL_NIL:
        return true;
    case PG_OTTL_BOOL:
        return a->u.b == b->u.b;
    case PG_OTTL_STR:
    case PG_OTTL_BYTES:
        return cmp_bytes(a->u.s.p, a->u.s.n, b->u.s.p, b->u.s.n) == 0;
    case PG_OTTL_MAP:
        return maps_equal(a->u.m, b->u.m);
    case PG_OTTL_LIST:
        if (a->u.l->n != b->u.l->n) {
            return false;
        }
        for (size_t i = 0; i < a->u.l->n; i++) {
            if (!values_equal(&a->u.l->v[i], &b->u.l->v[i])) {
                return false;
            }
        }
        return true;
    default:
        return false;
    }
}

/* OTTL comparison: equality across any types (numbers compare numerically),
 * ordering only between numbers or between strings; otherwise false. */
static bool compare(const struct pg_ottl_value *a, const struct pg_ottl_value *b, enum ottl_cmp op)
{
    int c;

    if (op == CMP_EQ) {
        return values_equal(a, b);
    }
    if (op == CMP_NE) {
        return !values_equal(a, b);
    }
    if ((a->t == PG_OTTL_INT || a->t == PG_OTTL_DOUBLE) &&
        (b->t == PG_OTTL_INT || b->t == PG_OTTL_DOUBLE)) {
        if (a->t == PG_OTTL_INT && b->t == PG_OTTL_INT) {
            c = a->u.i < b->u.i ? -1 : a->u.i > b->u.i ? 1 : 0;
        } else {
            double x = a->t == PG_OTTL_INT ? (double)a->u.i : a->u.d;
            double y = b->t == PG_OTTL_INT ? (double)b->u.i : b->u.d;
            if (x != x || y != y) {
                return false; /* NaN orders with nothing */
            }
            c = x < y ? -1 : x > y ? 1 : 0;
        }
    } else if (a->t == PG_OTTL_STR && b->t == PG_OTTL_STR) {
        c = cmp_bytes(a->u.s.p, a->u.s.n, b->u.s.p, b->u.s.n);
    } else {
        return false;
    }
    switch (op) {
    case CMP_LT:
        return c < 0;
    case CMP_LE:
        return c <= 0;
    case CMP_GT:
        return c > 0;
    default:
        return c >= 0;
    }
}

static enum pg_err eval_bool(const struct ottl_expr *e, struct pg_ottl_env *env, bool *out,
                             struct pg_status *st)
{
    struct pg_ottl_value v;
    enum pg_err err = pg_ottl_eval_expr(e, env, &v, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    if (v.t != PG_OTTL_BOOL) {
        return pg_ottl_type_err(st, "condition", "bool", &v);
    }
    *out = v.u.b;
    return PG_ERR_OK;
}

enum pg_err pg_ottl_eval_expr(const struct ottl_expr *e, struct pg_ottl_env *env,
                              struct pg_ottl_value *out, struct pg_status *st)
{
    enum pg_err err = PG_ERR_OK;

    memset(out, 0, sizeof(*out));
    switch (e->kind) {
    case E_LIT:
        *out = e->u.lit;
        return PG_ERR_OK;
    case E_PATH:
        return pg_ottl_path_get(e, env, out, st);
    case E_CALL:
        err = e->u.call.fn->impl(e, env, out, st);
        if (err == PG_ERR_OK) {
            err = pg_ottl_apply_keys(env, e->keys, e->nkeys, out, st);
        }
        return err;
    case E_LIST: {
        size_t n = e->u.list.n;
        struct pg_ottl_list *l = pg_arena_zalloc(env->a, sizeof(*l));
        if (l == NULL || (n && (l->v = pg_arena_calloc(env->a, n, sizeof(*l->v))) == NULL)) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n && err == PG_ERR_OK; i++) {
            err = pg_ottl_eval_expr(e->u.list.items[i], env, &l->v[i], st);
        }
        l->n = n;
        out->t = PG_OTTL_LIST;
        out->u.l = l;
        return err;
    }
    case E_MAP: {
        size_t n = e->u.map.n;
        struct pg_ottl_map *m = pg_arena_zalloc(env->a, sizeof(*m));
        if (m == NULL || (n && (m->v = pg_arena_calloc(env->a, n, sizeof(*m->v))) == NULL)) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n && err == PG_ERR_OK; i++) {
            /* Keys live in the compile arena: copy when stored (lit). */
            m->v[i].key = e->u.map.keys[i];
            err = pg_ottl_eval_expr(e->u.map.vals[i], env, &m->v[i].v, st);
        }
        m->n = n;
        out->t = PG_OTTL_MAP;
        out->u.m = m;
        out->lit = true;
        return err;
    }
    case E_CMP: {
        struct pg_ottl_value l;
        struct pg_ottl_value r;
        err = pg_ottl_eval_expr(e->u.bin.l, env, &l, st);
        if (err == PG_ERR_OK) {
            err = pg_ottl_eval_expr(e->u.bin.r, env, &r, st);
        }
        if (err == PG_ERR_OK) {
            out->t = PG_OTTL_BOOL;
            out->u.b = compare(&l, &r, e->u.bin.op);
        }
        return err;
    }
    case E_AND:
    case E_OR: {
        bool l = false; /* read below even when eval_bool failed */
        bool r = false;
        err = eval_bool(e->u.bin.l, env, &l, st);
        /* Short-circuit like Go's && and ||. */
        if (err == PG_ERR_OK && (e->kind == E_AND ? l : !l)) {
            err = eval_bool(e->u.bin.r, env, &r, st);
        } else {
            r = l;
        }
        out->t = PG_OTTL_BOOL;
        out->u.b = e->kind == E_AND ? (l && r) : (l || r);
        return err;
    }
    case E_NOT: {
        bool v = false;
        err = eval_bool(e->u.bin.l, env, &v, st);
        out->t = PG_OTTL_BOOL;
        out->u.b = !v;
        return err;
    }
    }
    return pg_status_set(st, PG_ERR_INTERNAL, "bad expression node");
}

enum pg_err pg_ottl_exec(const struct pg_ottl_stmt *s, struct pg_ottl_env *env,
                         struct pg_status *st)
{
    struct pg_ottl_value dummy;

    if (s->where != NULL) {
        bool ok = false;
        enum pg_err err = eval_bool(s->where, env, &ok, st);
        if (err != PG_ERR_OK || !ok) {
            return err;
        }
    }
    return s->call->u.call.fn->impl(s->call, env, &dummy, st);
}

enum pg_err pg_ottl_eval_cond(const struct pg_ottl_cond *c, struct pg_ottl_env *env, bool *out,
                              struct pg_status *st)
{
    return eval_bool(c->expr, env, out, st);
}
