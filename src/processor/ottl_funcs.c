/* SPDX-License-Identifier: Apache-2.0
 * The OTTL-lite function table: editors (set, delete_key, delete_matching_keys,
 * keep_keys, keep_matching_keys, merge_maps, replace_pattern, limit) and
 * converters (ParseKeyValue, ParseResourceAttributes, IsMatch, Concat, Split,
 * ToLowerCase, ToUpperCase, Len), each with its compile-time argument checks. */
#include <string.h>

#include "processor/ottl_internal.h"
#include "processor/ottl_kv.h"

#define ARG(call, i) ((call)->u.call.args[(i)])

static enum pg_err eval_arg(const struct ottl_expr *call, size_t i, struct pg_ottl_env *env,
                            struct pg_ottl_value *out, struct pg_status *st)
{
    if (ARG(call, i) == NULL) {
        memset(out, 0, sizeof(*out));
        return PG_ERR_OK;
    }
    return pg_ottl_eval_expr(ARG(call, i), env, out, st);
}

static const char *lit_str(const struct ottl_expr *call, size_t i, const char *def)
{
    return ARG(call, i) ? ARG(call, i)->u.lit.u.s.p : def;
}

static enum pg_err want(struct pg_status *st, const char *fn, const char *what,
                        const struct pg_ottl_value *v)
{
    return pg_status_set(st, PG_ERR_PROCESSING, "%s: expected %s but got %s", fn, what,
                         pg_ottl_type_name(v->t));
}

static bool *keep_array(struct pg_ottl_env *env, size_t n)
{
    return pg_arena_calloc(env->a, n ? n : 1, sizeof(bool));
}

/* Editors of the form f(map target, typed value): one place evaluates and
 * type-checks the value before resolving the target, so all of them report
 * a wrong argument type the same way and in the same order. */
static enum pg_err target_and_arg(const struct ottl_expr *call, struct pg_ottl_env *env,
                                  const char *fn, enum pg_ottl_type t, const char *what,
                                  struct ottl_attrs *at, struct pg_ottl_value *arg,
                                  struct pg_status *st)
{
    enum pg_err err = eval_arg(call, 1, env, arg, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    if (arg->t != t) {
        return want(st, fn, what, arg);
    }
    return pg_ottl_attrs_for(ARG(call, 0), env, at, st);
}

/* ---- editors -------------------------------------------------------- */

static enum pg_err f_set(const struct ottl_expr *call, struct pg_ottl_env *env,
                         struct pg_ottl_value *out, struct pg_status *st)
{
    struct pg_ottl_value v;
    enum pg_err err = eval_arg(call, 1, env, &v, st);

    (void)out;
    if (err != PG_ERR_OK || v.t == PG_OTTL_NIL) {
        return err; /* set(x, nil) does nothing, as upstream */
    }
    return pg_ottl_path_set(ARG(call, 0), env, &v, st);
}

static enum pg_err f_delete_key(const struct ottl_expr *call, struct pg_ottl_env *env,
                                struct pg_ottl_value *out, struct pg_status *st)
{
    struct ottl_attrs at;
    struct pg_ottl_value k;
    enum pg_err err = target_and_arg(call, env, "delete_key", PG_OTTL_STR, "string key", &at, &k,
                                     st);
    long i;

    (void)out;
    if (err != PG_ERR_OK) {
        return err;
    }
    i = pg_ottl_attrs_find(&at, env, k.u.s.p);
    if (i >= 0) {
        size_t n = pg_ottl_attrs_count(&at);
        bool *keep = keep_array(env, n);
        if (keep == NULL) {
            return pg_ottl_oom(env, st);
        }
        memset(keep, 1, n * sizeof(bool));
        keep[i] = false;
        pg_ottl_attrs_filter(&at, keep);
    }
    return PG_ERR_OK;
}

/* keep (or delete) the keys a regex matches. */
static enum pg_err match_keys(const struct ottl_expr *call, struct pg_ottl_env *env, bool keep_on,
                              struct pg_status *st)
{
    struct ottl_attrs at;
    enum pg_err err = pg_ottl_attrs_for(ARG(call, 0), env, &at, st);
    size_t n;
    bool *keep;

    if (err != PG_ERR_OK) {
        return err;
    }
    n = pg_ottl_attrs_count(&at);
    keep = keep_array(env, n);
    if (keep == NULL) {
        return pg_ottl_oom(env, st);
    }
    for (size_t i = 0; i < n; i++) {
        const char *k = pg_ottl_attrs_key(&at, env, i);
        int m = pg_ottl_regex_search(call->u.call.re, k, strlen(k), st);
        if (m < 0) {
            return PG_ERR_PROCESSING;
        }
        keep[i] = keep_on ? m == 1 : m == 0;
    }
    pg_ottl_attrs_filter(&at, keep);
    return PG_ERR_OK;
}

static enum pg_err f_delete_matching_keys(const struct ottl_expr *call, struct pg_ottl_env *env,
                                          struct pg_ottl_value *out, struct pg_status *st)
{
    (void)out;
    return match_keys(call, env, false, st);
}

static enum pg_err f_keep_matching_keys(const struct ottl_expr *call, struct pg_ottl_env *env,
                                        struct pg_ottl_value *out, struct pg_status *st)
{
    (void)out;
    return match_keys(call, env, true, st);
}

static bool list_has(const struct pg_ottl_list *l, const char *k)
{
    size_t kl = strlen(k);

    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].t == PG_OTTL_STR && l->v[i].u.s.n == kl && memcmp(l->v[i].u.s.p, k, kl) == 0) {
            return true;
        }
    }
    return false;
}

static enum pg_err f_keep_keys(const struct ottl_expr *call, struct pg_ottl_env *env,
                               struct pg_ottl_value *out, struct pg_status *st)
{
    struct ottl_attrs at;
    struct pg_ottl_value keys;
    enum pg_err err = target_and_arg(call, env, "keep_keys", PG_OTTL_LIST, "a list of keys", &at,
                                     &keys, st);
    size_t n;
    bool *keep;

    (void)out;
    if (err != PG_ERR_OK) {
        return err;
    }
    n = pg_ottl_attrs_count(&at);
    keep = keep_array(env, n);
    if (keep == NULL) {
        return pg_ottl_oom(env, st);
    }
    for (size_t i = 0; i < n; i++) {
        keep[i] = list_has(keys.u.l, pg_ottl_attrs_key(&at, env, i));
    }
    pg_ottl_attrs_filter(&at, keep);
    return PG_ERR_OK;
}

static enum pg_err f_merge_maps(const struct ottl_expr *call, struct pg_ottl_env *env,
                                struct pg_ottl_value *out, struct pg_status *st)
{
    struct ottl_attrs at;
    struct pg_ottl_value src;
    const char *strategy = lit_str(call, 2, "upsert");
    enum pg_err err = target_and_arg(call, env, "merge_maps", PG_OTTL_MAP, "map", &at, &src, st);

    (void)out;
    if (err != PG_ERR_OK) {
        return err;
    }
    for (size_t i = 0; i < src.u.m->n; i++) {
        const struct pg_ottl_pair *p = &src.u.m->v[i];
        struct pg_ottl_value v = p->v;
        bool exists;
        v.lit = v.lit || src.lit;
        if (strategy[0] != 'u' || strategy[1] != 'p' || strategy[2] != 's') {
            exists = pg_ottl_attrs_find(&at, env, p->key) >= 0;
            if ((strategy[0] == 'i' && exists) || (strategy[0] == 'u' && !exists)) {
                continue; /* insert: absent only; update: present only */
            }
        }
        err = pg_ottl_attrs_set(&at, env, p->key, src.lit, &v, st);
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    return PG_ERR_OK;
}

static enum pg_err f_replace_pattern(const struct ottl_expr *call, struct pg_ottl_env *env,
                                     struct pg_ottl_value *out, struct pg_status *st)
{
    const struct ottl_regex *re = call->u.call.re;
    struct pg_ottl_value cur;
    struct pg_ottl_value rep;
    PCRE2_SIZE cap;
    PCRE2_SIZE outlen;
    PCRE2_UCHAR *buf;
    enum pg_err err = pg_ottl_path_get(ARG(call, 0), env, &cur, st);
    pcre2_match_data *md;
    int rc;

    (void)out;
    if (err == PG_ERR_OK) {
        err = eval_arg(call, 2, env, &rep, st);
    }
    if (err != PG_ERR_OK) {
        return err;
    }
    if (cur.t != PG_OTTL_STR) {
        return PG_ERR_OK; /* only strings are rewritten */
    }
    if (rep.t != PG_OTTL_STR) {
        return want(st, "replace_pattern", "string replacement", &rep);
    }
    md = pg_ottl_regex_md(re);
    if (md == NULL) {
        return pg_ottl_oom(env, st);
    }
    cap = cur.u.s.n * 2 + rep.u.s.n + 64;
    for (int attempt = 0; attempt < 2; attempt++) {
        buf = pg_arena_alloc(env->a, cap);
        if (buf == NULL) {
            return pg_ottl_oom(env, st);
        }
        outlen = cap;
        rc = pcre2_substitute(re->code, (PCRE2_SPTR)cur.u.s.p, cur.u.s.n, 0,
                              PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH |
                                  PCRE2_SUBSTITUTE_UNSET_EMPTY,
                              md, re->mctx, (PCRE2_SPTR)rep.u.s.p, rep.u.s.n, buf, &outlen);
        if (rc != PCRE2_ERROR_NOMEMORY) {
            break;
        }
        cap = outlen + 1;
    }
    if (rc < 0) {
        PCRE2_UCHAR msg[120];
        if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
            rc == PCRE2_ERROR_HEAPLIMIT) {
            return pg_status_set(st, PG_ERR_PROCESSING, "regex /%s/ hit its match limit",
                                 re->pattern);
        }
        pcre2_get_error_message(rc, msg, sizeof(msg));
        return pg_status_set(st, PG_ERR_PROCESSING, "replace_pattern: %s", (char *)msg);
    }
    if (rc == 0) {
        return PG_ERR_OK; /* nothing matched: leave the value alone */
    }
    pg_ottl_set_str(&cur, (const char *)buf, outlen);
    return pg_ottl_path_set(ARG(call, 0), env, &cur, st);
}

static enum pg_err f_limit(const struct ottl_expr *call, struct pg_ottl_env *env,
                           struct pg_ottl_value *out, struct pg_status *st)
{
    struct ottl_attrs at;
    int64_t limit = ARG(call, 1)->u.lit.u.i;
    struct pg_ottl_value prio;
    enum pg_err err = eval_arg(call, 2, env, &prio, st);
    size_t n;
    size_t kept = 0;
    bool *keep;

    (void)out;
    if (err != PG_ERR_OK) {
        return err;
    }
    err = pg_ottl_attrs_for(ARG(call, 0), env, &at, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    n = pg_ottl_attrs_count(&at);
    if ((int64_t)n <= limit) {
        return PG_ERR_OK;
    }
    keep = keep_array(env, n);
    if (keep == NULL) {
        return pg_ottl_oom(env, st);
    }
    /* Priority keys first, then the rest in order, up to the limit. */
    if (prio.t == PG_OTTL_LIST) {
        for (size_t i = 0; i < n && (int64_t)kept < limit; i++) {
            if (list_has(prio.u.l, pg_ottl_attrs_key(&at, env, i))) {
                keep[i] = true;
                kept++;
            }
        }
    }
    for (size_t i = 0; i < n && (int64_t)kept < limit; i++) {
        if (!keep[i]) {
            keep[i] = true;
            kept++;
        }
    }
    pg_ottl_attrs_filter(&at, keep);
    return PG_ERR_OK;
}

/* ---- converters ----------------------------------------------------- */

static enum pg_err kv_to_map(struct pg_ottl_env *env, const struct pg_ottl_kv_list *kv,
                             struct pg_ottl_value *out, struct pg_status *st)
{
    struct pg_ottl_map *m = pg_arena_zalloc(env->a, sizeof(*m));

    if (m == NULL || (kv->n && (m->v = pg_arena_calloc(env->a, kv->n, sizeof(*m->v))) == NULL)) {
        return pg_ottl_oom(env, st);
    }
    for (size_t i = 0; i < kv->n; i++) {
        m->v[i].key = kv->v[i].key;
        pg_ottl_set_str(&m->v[i].v, kv->v[i].value, strlen(kv->v[i].value));
    }
    m->n = kv->n;
    memset(out, 0, sizeof(*out));
    out->t = PG_OTTL_MAP;
    out->u.m = m;
    return PG_ERR_OK;
}

static enum pg_err f_parse_key_value(const struct ottl_expr *call, struct pg_ottl_env *env,
                                     struct pg_ottl_value *out, struct pg_status *st)
{
    struct pg_ottl_value t;
    struct pg_ottl_kv_list kv = {0, 0, NULL};
    enum pg_err err = eval_arg(call, 0, env, &t, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    if (t.t != PG_OTTL_STR) {
        return want(st, "ParseKeyValue", "string", &t);
    }
    err = pg_ottl_parse_key_value(env->a, t.u.s.p, lit_str(call, 1, "="), lit_str(call, 2, " "),
                                  &kv, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    return kv_to_map(env, &kv, out, st);
}

static enum pg_err f_parse_resource_attributes(const struct ottl_expr *call,
                                               struct pg_ottl_env *env, struct pg_ottl_value *out,
                                               struct pg_status *st)
{
    struct pg_ottl_value t;
    struct pg_ottl_kv_list kv = {0, 0, NULL};
    enum pg_err err = eval_arg(call, 0, env, &t, st);
    size_t skipped = 0;

    if (err != PG_ERR_OK) {
        return err;
    }
    if (t.t == PG_OTTL_STR) {
        err = pg_ottl_parse_resource_attributes(env->a, t.u.s.p, &kv, &skipped, st);
    } else if (t.t == PG_OTTL_LIST) {
        /* Several header lines: merged in order, later keys win. */
        for (size_t i = 0; i < t.u.l->n && err == PG_ERR_OK; i++) {
            size_t sk = 0;
            if (t.u.l->v[i].t != PG_OTTL_STR) {
                return want(st, "ParseResourceAttributes", "a list of strings", &t.u.l->v[i]);
            }
            err = pg_ottl_parse_resource_attributes(env->a, t.u.l->v[i].u.s.p, &kv, &sk, st);
            skipped += sk;
        }
    } else if (t.t != PG_OTTL_NIL) {
        return want(st, "ParseResourceAttributes", "string", &t);
    }
    if (err != PG_ERR_OK) {
        return err;
    }
    env->ra_skipped += skipped;
    return kv_to_map(env, &kv, out, st);
}

static enum pg_err f_is_match(const struct ottl_expr *call, struct pg_ottl_env *env,
                              struct pg_ottl_value *out, struct pg_status *st)
{
    struct pg_ottl_value t;
    enum pg_err err = eval_arg(call, 0, env, &t, st);
    const char *p;
    size_t n;
    bool nomem;
    int m;

    if (err != PG_ERR_OK) {
        return err;
    }
    memset(out, 0, sizeof(*out));
    out->t = PG_OTTL_BOOL;
    if (!pg_ottl_to_text(env, &t, &p, &n, &nomem)) {
        return nomem ? pg_ottl_oom(env, st) : PG_ERR_OK; /* nil and containers: false */
    }
    m = pg_ottl_regex_search(call->u.call.re, p, n, st);
    if (m < 0) {
        return PG_ERR_PROCESSING;
    }
    out->u.b = m == 1;
    return PG_ERR_OK;
}

static enum pg_err f_concat(const struct ottl_expr *call, struct pg_ottl_env *env,
                            struct pg_ottl_value *out, struct pg_status *st)
{
    struct pg_ottl_value l;
    const char *delim = lit_str(call, 1, "");
    size_t dl = strlen(delim);
    size_t total = 0;
    const char **parts;
    size_t *lens;
    char *buf;
    size_t o = 0;
    enum pg_err err = eval_arg(call, 0, env, &l, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    if (l.t != PG_OTTL_LIST) {
        return want(st, "Concat", "list", &l);
    }
    parts = pg_arena_calloc(env->a, l.u.l->n + 1, sizeof(*parts));
    lens = pg_arena_calloc(env->a, l.u.l->n + 1, sizeof(*lens));
    if (parts == NULL || lens == NULL) {
        return pg_ottl_oom(env, st);
    }
    for (size_t i = 0; i < l.u.l->n; i++) {
        bool nomem;
        if (l.u.l->v[i].t == PG_OTTL_NIL) {
            parts[i] = "";
            lens[i] = 0;
        } else if (!pg_ottl_to_text(env, &l.u.l->v[i], &parts[i], &lens[i], &nomem)) {
            return nomem ? pg_ottl_oom(env, st) : want(st, "Concat", "scalar", &l.u.l->v[i]);
        }
        total += lens[i] + dl;
    }
    buf = pg_arena_alloc(env->a, total + 1);
    if (buf == NULL) {
        return pg_ottl_oom(env, st);
    }
    for (size_t i = 0; i < l.u.l->n; i++) {
        if (i > 0) {
            memcpy(buf + o, delim, dl);
            o += dl;
        }
        memcpy(buf + o, parts[i], lens[i]);
        o += lens[i];
    }
    buf[o] = '\0';
    pg_ottl_set_str(out, buf, o);
    return PG_ERR_OK;
}

static enum pg_err f_split(const struct ottl_expr *call, struct pg_ottl_env *env,
                           struct pg_ottl_value *out, struct pg_status *st)
{
    struct pg_ottl_value t;
    const char *delim = lit_str(call, 1, ",");
    size_t dl = strlen(delim);
    struct pg_ottl_list *l;
    size_t n = 1;
    const char *p;
    enum pg_err err = eval_arg(call, 0, env, &t, st);

    if (err != PG_ERR_OK || t.t == PG_OTTL_NIL) {
        return err;
    }
    if (t.t != PG_OTTL_STR) {
        return want(st, "Split", "string", &t);
    }
    for (p = t.u.s.p; (p = strstr(p, delim)) != NULL; p += dl) {
        n++;
    }
    l = pg_arena_zalloc(env->a, sizeof(*l));
    if (l == NULL || (l->v = pg_arena_calloc(env->a, n, sizeof(*l->v))) == NULL) {
        return pg_ottl_oom(env, st);
    }
    p = t.u.s.p;
    for (size_t i = 0; i < n; i++) {
        const char *e = i + 1 < n ? strstr(p, delim) : p + strlen(p);
        char *s = pg_arena_strndup(env->a, p, (size_t)(e - p));
        if (s == NULL) {
            return pg_ottl_oom(env, st);
        }
        pg_ottl_set_str(&l->v[i], s, (size_t)(e - p));
        p = e + dl;
    }
    l->n = n;
    out->t = PG_OTTL_LIST;
    out->u.l = l;
    return PG_ERR_OK;
}

static enum pg_err change_case(const struct ottl_expr *call, struct pg_ottl_env *env,
                               struct pg_ottl_value *out, bool upper, struct pg_status *st)
{
    struct pg_ottl_value t;
    char *s;
    enum pg_err err = eval_arg(call, 0, env, &t, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    if (t.t != PG_OTTL_STR) {
        return want(st, upper ? "ToUpperCase" : "ToLowerCase", "string", &t);
    }
    s = pg_arena_strndup(env->a, t.u.s.p, t.u.s.n);
    if (s == NULL) {
        return pg_ottl_oom(env, st);
    }
    /* ASCII only: multi-byte UTF-8 passes through unchanged. */
    for (size_t i = 0; i < t.u.s.n; i++) {
        if (upper && s[i] >= 'a' && s[i] <= 'z') {
            s[i] = (char)(s[i] - 32);
        } else if (!upper && s[i] >= 'A' && s[i] <= 'Z') {
            s[i] = (char)(s[i] + 32);
        }
    }
    pg_ottl_set_str(out, s, t.u.s.n);
    return PG_ERR_OK;
}

static enum pg_err f_to_lower(const struct ottl_expr *call, struct pg_ottl_env *env,
                              struct pg_ottl_value *out, struct pg_status *st)
{
    return change_case(call, env, out, false, st);
}

static enum pg_err f_to_upper(const struct ottl_expr *call, struct pg_ottl_env *env,
                              struct pg_ottl_value *out, struct pg_status *st)
{
    return change_case(call, env, out, true, st);
}

static enum pg_err f_len(const struct ottl_expr *call, struct pg_ottl_env *env,
                         struct pg_ottl_value *out, struct pg_status *st)
{
    struct pg_ottl_value t;
    enum pg_err err = eval_arg(call, 0, env, &t, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    memset(out, 0, sizeof(*out));
    out->t = PG_OTTL_INT;
    switch (t.t) {
    case PG_OTTL_STR:
    case PG_OTTL_BYTES:
        out->u.i = (int64_t)t.u.s.n;
        return PG_ERR_OK;
    case PG_OTTL_MAP:
        out->u.i = (int64_t)t.u.m->n;
        return PG_ERR_OK;
    case PG_OTTL_LIST:
        out->u.i = (int64_t)t.u.l->n;
        return PG_ERR_OK;
    default:
        return want(st, "Len", "string, bytes, map or list", &t);
    }
}

/* ---- compile-time checks -------------------------------------------- */

static bool static_kind_is(const struct ottl_expr *e, enum ottl_kind k)
{
    return e != NULL && e->rkind == k;
}

static const char *check_set(const struct ottl_expr *call, int *col)
{
    const struct ottl_expr *t = ARG(call, 0);
    const struct ottl_expr *v = ARG(call, 1);
    enum ottl_kind want_k = t->rkind;

    *col = v->col;
    if (want_k == K_ANY || v->rkind == K_ANY || v->rkind == K_NIL) {
        return NULL;
    }
    if (want_k == K_MAP && v->rkind != K_MAP) {
        return "a whole attributes map can only be set to a map";
    }
    if (want_k == K_INT && v->rkind != K_INT) {
        return "this path takes an integer";
    }
    if (want_k == K_STR && v->rkind != K_STR) {
        return "this path takes a string";
    }
    if (want_k == K_BYTES && v->rkind != K_BYTES) {
        return "this path takes bytes";
    }
    return NULL;
}

static const char *check_string_target(const struct ottl_expr *t, int *col)
{
    *col = t->col;
    if (static_kind_is(t, K_LIST)) {
        return "target is a list (otelcol.client.metadata[...] holds every header line); take "
               "one value with [0]";
    }
    if (t->rkind != K_ANY && t->rkind != K_STR && t->rkind != K_NIL) {
        return "target must be a string";
    }
    return NULL;
}

static const char *check_parse_key_value(const struct ottl_expr *call, int *col)
{
    const char *d = lit_str(call, 1, "=");
    const char *pd = lit_str(call, 2, " ");
    const char *msg = check_string_target(ARG(call, 0), col);

    if (msg != NULL) {
        return msg;
    }
    if (d[0] == '\0') {
        *col = ARG(call, 1)->col;
        return "delimiter cannot be set to an empty string";
    }
    if (pd[0] == '\0') {
        *col = ARG(call, 2)->col;
        return "pair delimiter cannot be set to an empty string";
    }
    if (strcmp(d, pd) == 0) {
        *col = ARG(call, 2) ? ARG(call, 2)->col : ARG(call, 1)->col;
        return "pair delimiter cannot be equal to delimiter";
    }
    return NULL;
}

static const char *check_pra(const struct ottl_expr *call, int *col)
{
    const struct ottl_expr *t = ARG(call, 0);

    *col = t->col;
    if (t->rkind != K_ANY && t->rkind != K_STR && t->rkind != K_NIL && t->rkind != K_LIST) {
        return "target must be a string (or a list of strings)";
    }
    return NULL;
}

static const char *check_str_target(const struct ottl_expr *call, int *col)
{
    return check_string_target(ARG(call, 0), col);
}

static const char *check_merge_maps(const struct ottl_expr *call, int *col)
{
    const char *s = lit_str(call, 2, "upsert");
    const struct ottl_expr *src = ARG(call, 1);

    if (src->rkind != K_ANY && src->rkind != K_MAP) {
        *col = src->col;
        return "source must be a map";
    }
    if (strcmp(s, "insert") != 0 && strcmp(s, "update") != 0 && strcmp(s, "upsert") != 0) {
        *col = ARG(call, 2)->col;
        return "strategy must be \"insert\", \"update\" or \"upsert\"";
    }
    return NULL;
}

static const char *check_string_list_literal(const struct ottl_expr *l, int *col)
{
    if (l == NULL || l->kind != E_LIST) {
        return NULL;
    }
    for (size_t i = 0; i < l->u.list.n; i++) {
        const struct ottl_expr *it = l->u.list.items[i];
        if (it->rkind != K_STR && it->rkind != K_ANY) {
            *col = it->col;
            return "keys must be strings";
        }
    }
    return NULL;
}

static const char *check_keep_keys(const struct ottl_expr *call, int *col)
{
    return check_string_list_literal(ARG(call, 1), col);
}

static const char *check_limit(const struct ottl_expr *call, int *col)
{
    int64_t lim = ARG(call, 1)->u.lit.u.i;
    const struct ottl_expr *prio = ARG(call, 2);

    *col = ARG(call, 1)->col;
    if (lim < 1) {
        return "limit cannot be less than 1";
    }
    if (prio != NULL) {
        if (prio->kind != E_LIST) {
            *col = prio->col;
            return "priority_keys must be a list literal";
        }
        if ((int64_t)prio->u.list.n > lim) {
            return "limit cannot be less than the number of priority keys";
        }
        return check_string_list_literal(prio, col);
    }
    return NULL;
}

static const char *check_split(const struct ottl_expr *call, int *col)
{
    const char *msg = check_string_target(ARG(call, 0), col);

    if (msg == NULL && lit_str(call, 1, ",")[0] == '\0') {
        *col = ARG(call, 1)->col;
        return "delimiter cannot be empty";
    }
    return msg;
}

/* clang-format off */
const struct ottl_func pg_ottl_funcs[] = {
    {"set", true, 2, 2, {"target", "value"}, {PA_TARGET, PA_ANY}, K_NIL, f_set, check_set},
    {"delete_key", true, 2, 2, {"target", "key"}, {PA_MAPTARGET, PA_ANY}, K_NIL, f_delete_key, NULL},
    {"delete_matching_keys", true, 2, 2, {"target", "pattern"}, {PA_MAPTARGET, PA_REGEX}, K_NIL,
     f_delete_matching_keys, NULL},
    {"keep_keys", true, 2, 2, {"target", "keys"}, {PA_MAPTARGET, PA_LIST}, K_NIL, f_keep_keys,
     check_keep_keys},
    {"keep_matching_keys", true, 2, 2, {"target", "pattern"}, {PA_MAPTARGET, PA_REGEX}, K_NIL,
     f_keep_matching_keys, NULL},
    {"merge_maps", true, 3, 3, {"target", "source", "strategy"},
     {PA_MAPTARGET, PA_ANY, PA_STRLIT}, K_NIL, f_merge_maps, check_merge_maps},
    {"replace_pattern", true, 3, 3, {"target", "regex", "replacement"},
     {PA_TARGET, PA_REGEX, PA_ANY}, K_NIL, f_replace_pattern, NULL},
    {"limit", true, 2, 3, {"target", "limit", "priority_keys"},
     {PA_MAPTARGET, PA_INTLIT, PA_LIST}, K_NIL, f_limit, check_limit},
    {"ParseKeyValue", false, 1, 3, {"target", "delimiter", "pair_delimiter"},
     {PA_ANY, PA_STRLIT, PA_STRLIT}, K_MAP, f_parse_key_value, check_parse_key_value},
    {"ParseResourceAttributes", false, 1, 1, {"target"}, {PA_ANY}, K_MAP,
     f_parse_resource_attributes, check_pra},
    {"IsMatch", false, 2, 2, {"target", "pattern"}, {PA_ANY, PA_REGEX}, K_BOOL, f_is_match, NULL},
    {"Concat", false, 2, 2, {"vals", "delimiter"}, {PA_LIST, PA_STRLIT}, K_STR, f_concat, NULL},
    {"Split", false, 2, 2, {"target", "delimiter"}, {PA_ANY, PA_STRLIT}, K_LIST, f_split,
     check_split},
    {"ToLowerCase", false, 1, 1, {"target"}, {PA_ANY}, K_STR, f_to_lower, check_str_target},
    {"ToUpperCase", false, 1, 1, {"target"}, {PA_ANY}, K_STR, f_to_upper, check_str_target},
    {"Len", false, 1, 1, {"target"}, {PA_ANY}, K_INT, f_len, NULL},
    {NULL, false, 0, 0, {NULL}, {PA_ANY}, K_ANY, NULL, NULL},
};
/* clang-format on */
