/* SPDX-License-Identifier: Apache-2.0
 * The `resource` processor: the collector's attribute actions (insert,
 * update, upsert, delete, hash, extract) applied to every resource, with
 * values from config, from another attribute or from request metadata
 * (from_context: metadata.<header>), so operators can pin k8s.pod.name and
 * friends from config and env. Shares the attribute view with OTTL. */
#include <pthread.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "pipeline/component.h"
#include "core/log.h"
#include "processor/ottl_internal.h"

enum ra_kind { RA_INSERT, RA_UPDATE, RA_UPSERT, RA_DELETE, RA_HASH, RA_EXTRACT };

static const char *const ra_kinds[] = {"insert", "update", "upsert", "delete",
                                       "hash",   "extract", NULL};

#define RA_MAX_ACTIONS 256

struct ra_action_cfg {
    char *key;
    const struct pg_cfg_node *value;
    char *from_attribute;
    char *from_context;
    char *action;
    char *pattern;
    char *converted_type;
};

static const struct pg_field ra_action_fields[] = {
    PG_FIELD(struct ra_action_cfg, "key", PG_FT_STR, key, NULL, "attribute to act on"),
    PG_FIELD(struct ra_action_cfg, "value", PG_FT_NODE, value, NULL,
             "literal value (string, int, double or bool)"),
    PG_FIELD(struct ra_action_cfg, "from_attribute", PG_FT_STR, from_attribute, NULL,
             "copy the value of this resource attribute"),
    PG_FIELD(struct ra_action_cfg, "from_context", PG_FT_STR, from_context, NULL,
             "metadata.<header>: request header value (include_metadata)"),
    PG_FIELD(struct ra_action_cfg, "action", PG_FT_STR, action, NULL,
             "insert, update, upsert, delete, hash or extract"),
    PG_FIELD(struct ra_action_cfg, "pattern", PG_FT_STR, pattern, NULL,
             "regex: keys to delete/hash, or named groups to extract"),
    PG_FIELD(struct ra_action_cfg, "converted_type", PG_FT_STR, converted_type, NULL,
             "not supported (convert action)"),
    PG_FIELD_END,
};

struct ra_action {
    enum ra_kind kind;
    const char *key;            /* config-owned */
    struct pg_ottl_value value; /* lit: config-owned */
    bool has_value;
    const char *from_attribute;
    const char *from_context;   /* header name (without "metadata.") */
    struct ottl_regex *re;      /* pattern */
};

struct ra_config {
    const struct pg_cfg_node *attributes;
};

static const struct pg_field ra_fields[] = {
    PG_FIELD(struct ra_config, "attributes", PG_FT_NODE, attributes, NULL,
             "list of {key, action, value|from_attribute|from_context, pattern}"),
    PG_FIELD_END,
};

struct ra_state {
    const char *log_name;
    struct ra_config cfg;
    size_t n;
    struct ra_action *actions;
    pthread_mutex_t rl_mu; /* rl: the loops share it (process() runs on any loop) */
    struct pg_log_ratelimit rl;
};

static void re_free(void *p)
{
    struct ottl_regex *re = p;

    pcre2_match_context_free(re->mctx);
    pcre2_code_free(re->code);
}

static struct ottl_regex *compile_re(const struct pg_component_ctx *ctx, const char *path,
                                     const struct pg_cfg_node *at, const char *pattern)
{
    struct ottl_regex *re = pg_arena_zalloc(ctx->config_arena, sizeof(*re));
    int ecode;
    PCRE2_SIZE eoff;

    if (re == NULL) {
        return NULL;
    }
    re->pattern = pattern;
    re->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ecode, &eoff, NULL);
    if (re->code == NULL) {
        PCRE2_UCHAR msg[120];
        pcre2_get_error_message(ecode, msg, sizeof(msg));
        pg_diag_add(ctx->diag, at, path, "pattern: invalid regular expression at offset %zu: %s",
                    (size_t)eoff, (char *)msg);
        return NULL;
    }
    re->mctx = pcre2_match_context_create(NULL);
    if (re->mctx == NULL ||
        pg_arena_cleanup_add(ctx->config_arena, re_free, re) != 0) {
        re_free(re);
        pg_diag_add(ctx->diag, at, path, "out of memory");
        return NULL;
    }
    (void)pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
    pcre2_set_match_limit(re->mctx, 100000);
    pcre2_set_depth_limit(re->mctx, 10000);
    pcre2_set_heap_limit(re->mctx, 1024);
    pg_ottl_regex_ready(re);
    return re;
}

/* A YAML scalar as a typed value: quoted -> string; else int, double, bool,
 * or string, like the collector's config unmarshalling. */
static bool scalar_value(const struct pg_cfg_node *n, struct pg_ottl_value *v)
{
    char *end;
    long long i;
    double d;

    memset(v, 0, sizeof(*v));
    v->lit = true;
    if (n->kind != PG_CFG_SCALAR) {
        return false;
    }
    if (!n->quoted && n->value[0] != '\0') {
        errno = 0;
        i = strtoll(n->value, &end, 10);
        if (errno == 0 && *end == '\0') {
            v->t = PG_OTTL_INT;
            v->u.i = i;
            return true;
        }
        d = strtod(n->value, &end);
        if (*end == '\0' && strchr(n->value, 'x') == NULL && strchr(n->value, 'X') == NULL) {
            v->t = PG_OTTL_DOUBLE;
            v->u.d = d;
            return true;
        }
        if (strcmp(n->value, "true") == 0 || strcmp(n->value, "false") == 0) {
            v->t = PG_OTTL_BOOL;
            v->u.b = n->value[0] == 't';
            return true;
        }
    }
    pg_ottl_set_str(v, n->value, strlen(n->value));
    v->lit = true;
    return true;
}

static bool bind_action(const struct pg_component_ctx *ctx, const char *path,
                        const struct pg_cfg_node *item, struct ra_action *a)
{
    struct ra_action_cfg c;
    size_t problems = pg_cfg_bind(ctx->config_arena, ctx->diag, item, ra_action_fields, &c, path);
    int kind = -1;
    int sources;

    if (problems > 0) {
        return false;
    }
    if (c.action == NULL) {
        pg_diag_add(ctx->diag, item, path, "action is required (one of insert, update, upsert, "
                    "delete, hash, extract)");
        return false;
    }
    for (int i = 0; ra_kinds[i] != NULL; i++) {
        if (strcmp(c.action, ra_kinds[i]) == 0) {
            kind = i;
        }
    }
    if (kind < 0) {
        pg_diag_add(ctx->diag, pg_cfg_get(item, "action"), path,
                    "action \"%s\" is not one of insert, update, upsert, delete, hash, extract%s",
                    c.action, strcmp(c.action, "convert") == 0 ? " (convert is not supported)" : "");
        return false;
    }
    a->kind = (enum ra_kind)kind;
    a->key = c.key;
    sources = (c.value != NULL) + (c.from_attribute != NULL) + (c.from_context != NULL);
    if (c.converted_type != NULL) {
        pg_diag_add(ctx->diag, item, path, "converted_type: the convert action is not supported");
        return false;
    }
    switch (a->kind) {
    case RA_INSERT:
    case RA_UPDATE:
    case RA_UPSERT:
        if (a->key == NULL || a->key[0] == '\0') {
            pg_diag_add(ctx->diag, item, path, "key is required for action %s", c.action);
            return false;
        }
        if (sources != 1) {
            pg_diag_add(ctx->diag, item, path,
                        "action %s needs exactly one of value, from_attribute, from_context",
                        c.action);
            return false;
        }
        if (c.value != NULL && !scalar_value(c.value, &a->value)) {
            pg_diag_add(ctx->diag, c.value, path, "value: expected a scalar");
            return false;
        }
        a->has_value = c.value != NULL;
        a->from_attribute = c.from_attribute;
        if (c.from_context != NULL) {
            const char *h = c.from_context;
            if (strncmp(h, "metadata.", 9) == 0) {
                h += 9;
            } else if (strncmp(h, "auth.", 5) == 0) {
                pg_diag_add(ctx->diag, pg_cfg_get(item, "from_context"), path,
                            "from_context: auth.* is not supported (no authenticators)");
                return false;
            }
            if (h[0] == '\0') {
                pg_diag_add(ctx->diag, pg_cfg_get(item, "from_context"), path,
                            "from_context: missing header name (metadata.<header>)");
                return false;
            }
            a->from_context = h;
        }
        return true;
    case RA_DELETE:
    case RA_HASH:
        if ((a->key == NULL) == (c.pattern == NULL)) {
            pg_diag_add(ctx->diag, item, path, "action %s needs either key or pattern", c.action);
            return false;
        }
        if (sources != 0) {
            pg_diag_add(ctx->diag, item, path, "action %s takes no value", c.action);
            return false;
        }
        break;
    case RA_EXTRACT:
        if (a->key == NULL || c.pattern == NULL) {
            pg_diag_add(ctx->diag, item, path, "action extract needs key and pattern");
            return false;
        }
        break;
    }
    if (c.pattern != NULL) {
        uint32_t groups = 0;
        a->re = compile_re(ctx, path, pg_cfg_get(item, "pattern"), c.pattern);
        if (a->re == NULL) {
            return false;
        }
        pcre2_pattern_info(a->re->code, PCRE2_INFO_NAMECOUNT, &groups);
        if (a->kind == RA_EXTRACT && groups == 0) {
            pg_diag_add(ctx->diag, pg_cfg_get(item, "pattern"), path,
                        "pattern: extract needs named groups, e.g. ^(?P<name>[^/]+)/");
            return false;
        }
    }
    return true;
}

static enum pg_err ra_create(const struct pg_component_ctx *ctx, void **state)
{
    struct ra_state *t = pg_arena_zalloc(ctx->config_arena, sizeof(*t));
    char *path = pg_arena_sprintf(ctx->config_arena, "processors::%s", ctx->id);
    const struct pg_cfg_node *list;
    bool ok = true;

    *state = NULL;
    if (t == NULL || path == NULL) {
        return PG_ERR_CONFIG;
    }
    t->log_name = ctx->log_name;
    if (pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, ra_fields, &t->cfg, path) > 0) {
        return PG_ERR_CONFIG;
    }
    list = t->cfg.attributes;
    if (list == NULL || list->kind == PG_CFG_NULL || (list->kind == PG_CFG_SEQ && list->n == 0)) {
        pg_diag_add(ctx->diag, ctx->config, path, "attributes: at least one action is required");
        return PG_ERR_CONFIG;
    }
    if (list->kind != PG_CFG_SEQ || list->n > RA_MAX_ACTIONS) {
        pg_diag_add(ctx->diag, list, path, "attributes: expected a list of at most %d actions",
                    RA_MAX_ACTIONS);
        return PG_ERR_CONFIG;
    }
    t->actions = pg_arena_calloc(ctx->config_arena, list->n, sizeof(*t->actions));
    if (t->actions == NULL) {
        return PG_ERR_CONFIG;
    }
    for (size_t i = 0; i < list->n; i++) {
        char *ipath = pg_arena_sprintf(ctx->config_arena, "%s::attributes[%zu]", path, i);
        ok = bind_action(ctx, ipath ? ipath : path, list->items[i], &t->actions[i]) && ok;
    }
    if (!ok) {
        return PG_ERR_CONFIG;
    }
    t->n = list->n;
    t->rl = (struct pg_log_ratelimit)PG_LOG_RATELIMIT_INIT(1.0, 10.0);
    pthread_mutex_init(&t->rl_mu, NULL);
    *state = t;
    return PG_ERR_OK;
}

/* Every value of header @h joined with ";" (as the collector does), or NULL. */
static const char *context_value(struct pg_ottl_env *env, const char *h)
{
    size_t n = pg_metadata_count(&env->b->metadata, h);
    size_t len = 0;
    char *s;
    char *o;

    if (n == 0) {
        return NULL;
    }
    if (n == 1) {
        return pg_metadata_get(&env->b->metadata, h, 0);
    }
    for (size_t i = 0; i < n; i++) {
        len += strlen(pg_metadata_get(&env->b->metadata, h, i)) + 1;
    }
    s = pg_arena_alloc(env->a, len);
    if (s == NULL) {
        return NULL;
    }
    o = s;
    for (size_t i = 0; i < n; i++) {
        const char *v = pg_metadata_get(&env->b->metadata, h, i);
        size_t l = strlen(v);
        if (i > 0) {
            *o++ = ';';
        }
        memcpy(o, v, l);
        o += l;
    }
    *o = '\0';
    return s;
}

static enum pg_err hash_at(struct ottl_attrs *at, struct pg_ottl_env *env, size_t i,
                           struct pg_status *st)
{
    static const char hex[] = "0123456789abcdef";
    struct pg_ottl_value v;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    const char *p;
    size_t n;
    bool nomem;
    char *out;
    enum pg_err err = pg_ottl_attrs_value(at, env, i, &v, st);

    if (err != PG_ERR_OK) {
        return err;
    }
    if (!pg_ottl_to_text(env, &v, &p, &n, &nomem)) {
        return nomem ? pg_ottl_oom(env, st) : PG_ERR_OK; /* containers are left alone */
    }
    if (!EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL)) {
        return pg_status_set(st, PG_ERR_INTERNAL, "sha256 failed");
    }
    out = pg_arena_alloc(env->a, mdlen * 2 + 1);
    if (out == NULL) {
        return pg_ottl_oom(env, st);
    }
    for (unsigned int k = 0; k < mdlen; k++) {
        out[2 * k] = hex[md[k] >> 4];
        out[2 * k + 1] = hex[md[k] & 15];
    }
    out[mdlen * 2] = '\0';
    pg_ottl_set_str(&v, out, mdlen * 2);
    return pg_ottl_attrs_set(at, env, pg_ottl_attrs_key(at, env, i), false, &v, st);
}

static enum pg_err extract(const struct ra_action *a, struct ottl_attrs *at,
                           struct pg_ottl_env *env, struct pg_status *st)
{
    long i = pg_ottl_attrs_find(at, env, a->key);
    struct pg_ottl_value v;
    uint32_t count = 0;
    uint32_t esize = 0;
    PCRE2_SPTR table = NULL;
    PCRE2_SIZE *ov;
    pcre2_match_data *md;
    enum pg_err err;
    int rc;

    if (i < 0) {
        return PG_ERR_OK;
    }
    err = pg_ottl_attrs_value(at, env, (size_t)i, &v, st);
    if (err != PG_ERR_OK || v.t != PG_OTTL_STR) {
        return err;
    }
    md = pg_ottl_regex_md(a->re);
    if (md == NULL) {
        return pg_ottl_oom(env, st);
    }
    rc = pcre2_match(a->re->code, (PCRE2_SPTR)v.u.s.p, v.u.s.n, 0, 0, md, a->re->mctx);
    if (rc == PCRE2_ERROR_NOMATCH) {
        return PG_ERR_OK;
    }
    if (rc < 0) {
        return pg_status_set(st, PG_ERR_PROCESSING, "extract %s: regex /%s/ failed (%d)", a->key,
                             a->re->pattern, rc);
    }
    ov = pcre2_get_ovector_pointer(md);
    pcre2_pattern_info(a->re->code, PCRE2_INFO_NAMECOUNT, &count);
    pcre2_pattern_info(a->re->code, PCRE2_INFO_NAMEENTRYSIZE, &esize);
    pcre2_pattern_info(a->re->code, PCRE2_INFO_NAMETABLE, &table);
    for (uint32_t k = 0; k < count; k++) {
        PCRE2_SPTR ent = table + (size_t)k * esize;
        int g = (ent[0] << 8) | ent[1];
        const char *name = (const char *)ent + 2;
        struct pg_ottl_value cv;
        char *s;
        if (g >= rc || ov[2 * g] == PCRE2_UNSET) {
            continue;
        }
        s = pg_arena_strndup(env->a, v.u.s.p + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
        if (s == NULL) {
            return pg_ottl_oom(env, st);
        }
        pg_ottl_set_str(&cv, s, ov[2 * g + 1] - ov[2 * g]);
        /* Group names live in the compiled pattern (config-owned): copy. */
        err = pg_ottl_attrs_set(at, env, name, true, &cv, st);
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    return PG_ERR_OK;
}

static enum pg_err apply(const struct ra_action *a, struct ottl_attrs *at, struct pg_ottl_env *env,
                         struct pg_status *st)
{
    struct pg_ottl_value v;
    enum pg_err err;
    size_t n;
    bool *keep;

    switch (a->kind) {
    case RA_INSERT:
    case RA_UPDATE:
    case RA_UPSERT: {
        long i = pg_ottl_attrs_find(at, env, a->key);
        if ((a->kind == RA_INSERT && i >= 0) || (a->kind == RA_UPDATE && i < 0)) {
            return PG_ERR_OK;
        }
        if (a->has_value) {
            v = a->value;
        } else if (a->from_attribute != NULL) {
            long j = pg_ottl_attrs_find(at, env, a->from_attribute);
            if (j < 0) {
                return PG_ERR_OK;
            }
            err = pg_ottl_attrs_value(at, env, (size_t)j, &v, st);
            if (err != PG_ERR_OK) {
                return err;
            }
        } else {
            const char *s = context_value(env, a->from_context);
            if (s == NULL) {
                return PG_ERR_OK;
            }
            pg_ottl_set_str(&v, s, strlen(s));
        }
        return pg_ottl_attrs_set(at, env, a->key, true, &v, st);
    }
    case RA_DELETE:
    case RA_HASH:
        n = pg_ottl_attrs_count(at);
        keep = pg_arena_calloc(env->a, n ? n : 1, sizeof(bool));
        if (keep == NULL) {
            return pg_ottl_oom(env, st);
        }
        for (size_t i = 0; i < n; i++) {
            const char *k = pg_ottl_attrs_key(at, env, i);
            bool hit;
            if (a->re != NULL) {
                int m = pg_ottl_regex_search(a->re, k, strlen(k), st);
                if (m < 0) {
                    return PG_ERR_PROCESSING;
                }
                hit = m == 1;
            } else {
                hit = strcmp(k, a->key) == 0;
            }
            keep[i] = !hit;
            if (hit && a->kind == RA_HASH) {
                err = hash_at(at, env, i, st);
                if (err != PG_ERR_OK) {
                    return err;
                }
                keep[i] = true;
            }
        }
        if (a->kind == RA_DELETE) {
            pg_ottl_attrs_filter(at, keep);
        }
        return PG_ERR_OK;
    case RA_EXTRACT:
        return extract(a, at, env, st);
    }
    return PG_ERR_OK;
}

static enum pg_err ra_process(void *state, struct pg_batch **batch, struct pg_status *st)
{
    struct ra_state *t = state;
    struct pg_ottl_env env;
    enum pg_err err = pg_batch_make_mutable(batch, st);
    struct pg_otlp_request *req;

    if (err != PG_ERR_OK) {
        return err;
    }
    pg_ottl_env_init(&env, *batch);
    req = (*batch)->req;
    for (size_t r = 0; r < req->n_resource_profiles; r++) {
        struct pg_otlp_resprof *rp = req->resource_profiles[r];
        struct ottl_attrs at;
        if (rp->resource == NULL) {
            static const struct pg_otlp_resource init =
                OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
            rp->resource = pg_arena_alloc(env.a, sizeof(*rp->resource));
            if (rp->resource == NULL) {
                return pg_ottl_oom(&env, st);
            }
            *rp->resource = init;
        }
        memset(&at, 0, sizeof(at));
        at.kv = &rp->resource->attributes;
        at.nkv = &rp->resource->n_attributes;
        env.rp = rp;
        for (size_t i = 0; i < t->n; i++) {
            err = apply(&t->actions[i], &at, &env, st);
            if (err == PG_ERR_PROCESSING) {
                /* Like the collector: a failing action is logged, the data flows on. */
                unsigned long sup = 0;
                bool log;

                pthread_mutex_lock(&t->rl_mu);
                log = pg_log_ratelimit_ok(&t->rl, &sup);
                pthread_mutex_unlock(&t->rl_mu);
                if (log) {
                    pg_log_warn(t->log_name, "attributes[%zu]: %s", i, st ? st->msg : "");
                }
                pg_status_clear(st);
            } else if (err != PG_ERR_OK) {
                return err;
            }
        }
    }
    return PG_ERR_OK;
}

static void ra_shutdown(void *state)
{
    (void)state;
}

static void ra_destroy(void *state)
{
    (void)state; /* config arena owns everything */
}

static const char *ra_metadata_use(void *state)
{
    const struct ra_state *t = state;
    for (size_t i = 0; i < t->n; i++) {
        if (t->actions[i].from_context != NULL) {
            return "from_context: metadata.<header>";
        }
    }
    return NULL;
}

/* Resource attributes only; a shared batch is copied by encode + unpack (eager). */
static bool ra_lazy_samples(void *state)
{
    (void)state;
    return true;
}

const struct pg_component_ops pg_processor_resource = {
    .type = "resource",
    .alias = NULL,
    .kind = PG_KIND_PROCESSOR,
    .any_thread = true,
    .fields = ra_fields,
    .doc = "insert/update/upsert/delete/hash/extract resource attributes (collector actions)",
    .create = ra_create,
    .start = NULL,
    .process = ra_process,
    .consume = NULL,
    .shutdown = ra_shutdown,
    .idle = NULL,
    .destroy = ra_destroy,
    .metadata_use = ra_metadata_use,
    .lazy_samples = ra_lazy_samples,
};
