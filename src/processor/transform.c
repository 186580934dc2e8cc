/* SPDX-License-Identifier: Apache-2.0
 * The `transform` processor: the collector's profile_statements (flat list or
 * context groups with conditions and per-group error_mode), compiled once at
 * create() and run over every batch. error_mode propagate fails the request
 * (the receiver answers 500); ignore logs a rate-limited warning; silent
 * carries on quietly. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "pipeline/component.h"
#include "core/log.h"
#include "core/metrics.h"
#include "processor/ottl.h"

enum tf_mode { MODE_IGNORE = 0, MODE_SILENT, MODE_PROPAGATE, MODE_INHERIT };

static const char *const tf_modes[] = {"ignore", "silent", "propagate", NULL};

#define TF_MAX_GROUPS 256
#define TF_MAX_STMTS 256

struct tf_group {
    enum pg_ottl_ctx ctx;
    enum tf_mode mode;
    size_t nconds;
    struct pg_ottl_cond **conds;
    size_t nstmts;
    struct pg_ottl_stmt **stmts;
};

struct tf_config {
    int error_mode;
    const struct pg_cfg_node *profile_statements;
    const struct pg_cfg_node *trace_statements;
    const struct pg_cfg_node *metric_statements;
    const struct pg_cfg_node *log_statements;
};

struct tf_state {
    const char *log_name;
    struct tf_config cfg;
    size_t ngroups;
    struct tf_group *groups;
    pthread_mutex_t rl_mu; /* rl: the loops share it (process() runs on any loop) */
    struct pg_log_ratelimit rl;
    struct pg_metric *m_errors;
    struct pg_metric *m_skipped_pairs;
};

static const struct pg_field tf_fields[] = {
    PG_FIELD_ENUM(struct tf_config, "error_mode", error_mode, "propagate", tf_modes,
                  "what a failing statement does: ignore (warn, go on), silent, propagate (fail "
                  "the request)"),
    PG_FIELD(struct tf_config, "profile_statements", PG_FT_NODE, profile_statements, NULL,
             "OTTL statements: strings (context inferred) or groups {context, conditions, "
             "statements, error_mode}"),
    PG_FIELD(struct tf_config, "trace_statements", PG_FT_NODE, trace_statements, NULL,
             "accepted for collector configs; ignored (no traces here)"),
    PG_FIELD(struct tf_config, "metric_statements", PG_FT_NODE, metric_statements, NULL,
             "accepted for collector configs; ignored"),
    PG_FIELD(struct tf_config, "log_statements", PG_FT_NODE, log_statements, NULL,
             "accepted for collector configs; ignored"),
    PG_FIELD_END,
};

/* Reports a compile error: position of the statement's scalar, moved to the
 * bad column when the scalar maps 1:1 onto the text, then the statement line
 * and a caret under the column. */
static void report(struct pg_diag *diag, const struct pg_cfg_node *node, const char *path,
                   const char *what, const char *text, const struct pg_ottl_error *e)
{
    struct pg_cfg_node at = *node;
    size_t len = strlen(text);
    size_t col = (size_t)e->col > len ? len : (size_t)e->col;
    size_t ls = col;
    size_t le = col;
    bool simple = strchr(text, '\n') == NULL &&
                  (!node->quoted || (strchr(text, '"') == NULL && strchr(text, '\'') == NULL &&
                                     strchr(text, '\\') == NULL));

    if (simple) {
        at.col = node->col + (node->quoted ? 1 : 0) + (int)col;
    }
    while (ls > 0 && text[ls - 1] != '\n') {
        ls--;
    }
    while (le < len && text[le] != '\n') {
        le++;
    }
    pg_diag_add(diag, &at, path, "invalid %s: %s\n    %.*s\n    %*s^", what, e->msg,
                (int)(le - ls), text + ls, (int)(col - ls), "");
}

static bool parse_mode(struct pg_diag *diag, const struct pg_cfg_node *n, const char *path,
                       enum tf_mode *out)
{
    for (int i = 0; tf_modes[i] != NULL; i++) {
        if (n->kind == PG_CFG_SCALAR && strcmp(n->value, tf_modes[i]) == 0) {
            *out = (enum tf_mode)i;
            return true;
        }
    }
    pg_diag_add(diag, n, path, "error_mode: \"%s\" is not one of ignore, silent, propagate",
                n->kind == PG_CFG_SCALAR ? n->value : "");
    return false;
}

/* Collects the scalars of a string or list-of-strings node. */
static bool string_items(struct pg_diag *diag, const struct pg_cfg_node *n, const char *path,
                         const char *what, const struct pg_cfg_node ***items, size_t *count)
{
    if (n->kind != PG_CFG_SEQ) {
        pg_diag_add(diag, n, path, "%s: expected a list of strings", what);
        return false;
    }
    for (size_t i = 0; i < n->n; i++) {
        if (n->items[i]->kind != PG_CFG_SCALAR) {
            pg_diag_add(diag, n->items[i], path, "%s: expected a string", what);
            return false;
        }
    }
    *items = (const struct pg_cfg_node **)n->items;
    *count = n->n;
    return true;
}

/* The SDK README's recipe, ParseKeyValue over the Otel-Resource-Attributes
 * header, fails on a value with a quote or a second '=' (owner=o'brien);
 * under error_mode: propagate that costs the whole push (a 500 the SDK never
 * retries). Said by `validate` and at start, not refused: it is valid OTTL. */
static void warn_parse_key_value(struct pg_diag *diag, const struct pg_cfg_node *stmt,
                                 const char *path)
{
    static const char header[] = "otel-resource-attributes";
    const char *call = strstr(stmt->value, "ParseKeyValue(");
    bool reads_header = false;

    for (const char *p = call; p != NULL && *p != '\0' && !reads_header; p++) {
        reads_header = strncasecmp(p, header, sizeof(header) - 1) == 0;
    }
    if (!reads_header) {
        return;
    }
    pg_diag_warn(diag, stmt, path,
                 "ParseKeyValue(metadata[\"otel-resource-attributes\"] ...) with error_mode: "
                 "propagate fails the whole push when a value holds a quote or '=' (e.g. "
                 "owner=o'brien); use ParseResourceAttributes(metadata[\"otel-resource-"
                 "attributes\"]), which skips a bad pair, or error_mode: ignore");
}

static bool compile_group(struct tf_state *t, const struct pg_component_ctx *ctx,
                          const char *path, const struct pg_cfg_node *ctx_node,
                          const struct pg_cfg_node *const *conds, size_t nconds,
                          const struct pg_cfg_node *const *stmts, size_t nstmts, enum tf_mode mode,
                          struct tf_group *g)
{
    enum pg_ottl_ctx want = PG_OTTL_CTX_INFER;
    bool ok = true;
    struct pg_ottl_error e;

    (void)t;
    if (ctx_node != NULL && (ctx_node->kind != PG_CFG_SCALAR ||
                             !pg_ottl_ctx_parse(ctx_node->value, &want))) {
        pg_diag_add(ctx->diag, ctx_node, path,
                    "context: \"%s\" is not one of resource, scope, profile",
                    ctx_node->kind == PG_CFG_SCALAR ? ctx_node->value : "");
        return false;
    }
    if (nstmts > TF_MAX_STMTS || nconds > TF_MAX_STMTS) {
        pg_diag_add(ctx->diag, stmts[0], path, "more than %d statements in one group",
                    TF_MAX_STMTS);
        return false;
    }
    g->mode = mode;
    g->conds = pg_arena_calloc(ctx->config_arena, nconds + 1, sizeof(*g->conds));
    g->stmts = pg_arena_calloc(ctx->config_arena, nstmts + 1, sizeof(*g->stmts));
    if (g->conds == NULL || g->stmts == NULL) {
        pg_diag_add(ctx->diag, ctx->config, path, "out of memory");
        return false;
    }
    g->ctx = want == PG_OTTL_CTX_INFER ? PG_OTTL_CTX_RESOURCE : want;
    for (size_t i = 0; i < nconds; i++) {
        g->conds[i] = pg_ottl_compile_condition(ctx->config_arena, conds[i]->value, want, &e);
        if (g->conds[i] == NULL) {
            report(ctx->diag, conds[i], path, "condition", conds[i]->value, &e);
            ok = false;
        } else if (pg_ottl_cond_ctx(g->conds[i]) > g->ctx) {
            g->ctx = pg_ottl_cond_ctx(g->conds[i]);
        }
    }
    for (size_t i = 0; i < nstmts; i++) {
        g->stmts[i] = pg_ottl_compile(ctx->config_arena, stmts[i]->value, want, &e);
        if (g->stmts[i] == NULL) {
            report(ctx->diag, stmts[i], path, "statement", stmts[i]->value, &e);
            ok = false;
            continue;
        }
        if (pg_ottl_stmt_ctx(g->stmts[i]) > g->ctx) {
            g->ctx = pg_ottl_stmt_ctx(g->stmts[i]);
        }
        if (mode == MODE_PROPAGATE) {
            warn_parse_key_value(ctx->diag, stmts[i], path);
        }
    }
    g->nconds = nconds;
    g->nstmts = nstmts;
    return ok;
}

static bool compile_item(struct tf_state *t, const struct pg_component_ctx *ctx,
                         const char *path, const struct pg_cfg_node *item, struct tf_group *g)
{
    const struct pg_cfg_node *ctx_node = NULL;
    const struct pg_cfg_node *conds = NULL;
    const struct pg_cfg_node *stmts = NULL;
    const struct pg_cfg_node **ci = NULL;
    const struct pg_cfg_node **si = NULL;
    size_t nc = 0;
    size_t ns = 0;
    enum tf_mode mode = (enum tf_mode)t->cfg.error_mode;
    bool ok = true;

    if (item->kind == PG_CFG_SCALAR) {
        return compile_group(t, ctx, path, NULL, NULL, 0, &item, 1, mode, g);
    }
    if (item->kind != PG_CFG_MAP) {
        pg_diag_add(ctx->diag, item, path,
                    "profile_statements: each item is a statement string or a group with "
                    "context, conditions, statements, error_mode");
        return false;
    }
    for (size_t i = 0; i < item->n; i++) {
        const char *k = item->keys[i]->value;
        const struct pg_cfg_node *v = item->items[i];
        item->keys[i]->used = true;
        if (strcmp(k, "context") == 0) {
            ctx_node = v;
        } else if (strcmp(k, "conditions") == 0) {
            conds = v;
        } else if (strcmp(k, "statements") == 0) {
            stmts = v;
        } else if (strcmp(k, "error_mode") == 0) {
            ok = parse_mode(ctx->diag, v, path, &mode) && ok;
        } else {
            pg_diag_add(ctx->diag, item->keys[i], path,
                        "unknown key \"%s\" in a statement group (valid: context, conditions, "
                        "statements, error_mode)",
                        k);
            ok = false;
        }
    }
    if (stmts == NULL) {
        pg_diag_add(ctx->diag, item, path, "statement group without statements");
        return false;
    }
    if (conds != NULL) {
        if (conds->kind == PG_CFG_SCALAR) {
            ci = (const struct pg_cfg_node **)&conds;
            nc = 1;
        } else if (!string_items(ctx->diag, conds, path, "conditions", &ci, &nc)) {
            ok = false;
        }
    }
    if (stmts->kind == PG_CFG_SCALAR) {
        si = (const struct pg_cfg_node **)&stmts;
        ns = 1;
    } else if (!string_items(ctx->diag, stmts, path, "statements", &si, &ns)) {
        return false;
    }
    return compile_group(t, ctx, path, ctx_node, ci, nc, si, ns, mode, g) && ok;
}

static enum pg_err tf_create(const struct pg_component_ctx *ctx, void **state)
{
    struct tf_state *t = pg_arena_zalloc(ctx->config_arena, sizeof(*t));
    char *path = pg_arena_sprintf(ctx->config_arena, "processors::%s", ctx->id);
    const struct pg_cfg_node *ps;
    size_t problems;
    bool ok = true;
    char labels[160];

    *state = NULL;
    if (t == NULL || path == NULL) {
        pg_diag_add(ctx->diag, ctx->config, NULL, "out of memory");
        return PG_ERR_CONFIG;
    }
    t->log_name = ctx->log_name;
    problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, tf_fields, &t->cfg, path);
    ps = t->cfg.profile_statements;
    if (ps != NULL && ps->kind == PG_CFG_SEQ) {
        if (ps->n > TF_MAX_GROUPS) {
            pg_diag_add(ctx->diag, ps, path, "profile_statements: more than %d entries",
                        TF_MAX_GROUPS);
            return PG_ERR_CONFIG;
        }
        t->groups = pg_arena_calloc(ctx->config_arena, ps->n + 1, sizeof(*t->groups));
        if (t->groups == NULL) {
            return PG_ERR_CONFIG;
        }
        for (size_t i = 0; i < ps->n; i++) {
            ok = compile_item(t, ctx, path, ps->items[i], &t->groups[i]) && ok;
        }
        t->ngroups = ps->n;
    } else if (ps != NULL && ps->kind == PG_CFG_SCALAR) {
        t->groups = pg_arena_calloc(ctx->config_arena, 1, sizeof(*t->groups));
        if (t->groups == NULL) {
            return PG_ERR_CONFIG;
        }
        ok = compile_item(t, ctx, path, ps, &t->groups[0]);
        t->ngroups = 1;
    } else if (ps != NULL && ps->kind != PG_CFG_NULL) {
        pg_diag_add(ctx->diag, ps, path, "profile_statements: expected a list");
        ok = false;
    }
    if (problems > 0 || !ok) {
        return PG_ERR_CONFIG;
    }
    if (t->cfg.trace_statements || t->cfg.metric_statements || t->cfg.log_statements) {
        pg_log_info(t->log_name, "trace/metric/log_statements are ignored: pprofgate carries "
                                 "profiles only");
    }
    t->rl = (struct pg_log_ratelimit)PG_LOG_RATELIMIT_INIT(1.0, 10.0);
    pthread_mutex_init(&t->rl_mu, NULL);
    snprintf(labels, sizeof(labels), "processor=\"%s\"", ctx->id);
    t->m_errors = pg_metric_counter("pprofgate_processor_transform_errors_total",
                                    "Statements that failed at run time", labels);
    t->m_skipped_pairs =
        pg_metric_counter("pprofgate_processor_transform_malformed_resource_pairs_total",
                          "Malformed pairs ParseResourceAttributes skipped", labels);
    *state = t;
    return PG_ERR_OK;
}

/* Applies the error mode to a failed statement or condition. Returns OK to
 * go on, else the error that fails the request. */
static enum pg_err on_error(struct tf_state *t, enum tf_mode mode, const char *text,
                            enum pg_err err, struct pg_status *st)
{
    unsigned long suppressed = 0;
    char reason[PG_STATUS_MSG_MAX];
    bool log = false;

    if (err == PG_ERR_NOMEM || err == PG_ERR_LIMIT || err == PG_ERR_INTERNAL) {
        return err; /* resource exhaustion is never "ignored" */
    }
    pg_metric_add(t->m_errors, 1);
    snprintf(reason, sizeof(reason), "%s", st->msg);
    if (mode == MODE_PROPAGATE) {
        /* The statement is cut so that the reason survives the status size. */
        size_t tl = strlen(text);
        return pg_status_set(st, PG_ERR_PROCESSING, "failed to execute statement: %.*s%s, %s",
                             (int)(tl > 72 ? 69 : tl), text, tl > 72 ? "..." : "", reason);
    }
    if (mode == MODE_IGNORE) {
        pthread_mutex_lock(&t->rl_mu);
        log = pg_log_ratelimit_ok(&t->rl, &suppressed);
        pthread_mutex_unlock(&t->rl_mu);
    }
    if (log) {
        pg_log_warn(t->log_name, "failed to execute statement: %s, %s (error_mode=ignore%s)",
                    text, reason, suppressed ? ", earlier warnings suppressed" : "");
    }
    pg_status_clear(st);
    return PG_ERR_OK;
}

static enum pg_err run_item(struct tf_state *t, const struct tf_group *g, struct pg_ottl_env *env,
                            struct pg_status *st)
{
    enum pg_err err;

    if (g->nconds > 0) {
        bool any = false;
        for (size_t i = 0; i < g->nconds && !any; i++) {
            err = pg_ottl_eval_cond(g->conds[i], env, &any, st);
            if (err != PG_ERR_OK) {
                any = false;
                err = on_error(t, g->mode, pg_ottl_cond_text(g->conds[i]), err, st);
                if (err != PG_ERR_OK) {
                    return err;
                }
            }
        }
        if (!any) {
            return PG_ERR_OK;
        }
    }
    for (size_t i = 0; i < g->nstmts; i++) {
        err = pg_ottl_exec(g->stmts[i], env, st);
        if (err != PG_ERR_OK) {
            err = on_error(t, g->mode, pg_ottl_stmt_text(g->stmts[i]), err, st);
            if (err != PG_ERR_OK) {
                return err;
            }
        }
    }
    return PG_ERR_OK;
}

static enum pg_err run_group(struct tf_state *t, const struct tf_group *g, struct pg_ottl_env *env,
                             struct pg_status *st)
{
    struct pg_otlp_request *req = env->b->req;
    enum pg_err err = PG_ERR_OK;

    for (size_t i = 0; i < req->n_resource_profiles && err == PG_ERR_OK; i++) {
        struct pg_otlp_resprof *rp = req->resource_profiles[i];
        env->rp = rp;
        env->sp = NULL;
        env->p = NULL;
        if (g->ctx == PG_OTTL_CTX_RESOURCE) {
            err = run_item(t, g, env, st);
            continue;
        }
        for (size_t j = 0; j < rp->n_scope_profiles && err == PG_ERR_OK; j++) {
            struct pg_otlp_scopeprof *sp = rp->scope_profiles[j];
            env->sp = sp;
            env->p = NULL;
            if (g->ctx == PG_OTTL_CTX_SCOPE) {
                err = run_item(t, g, env, st);
                continue;
            }
            for (size_t k = 0; k < sp->n_profiles && err == PG_ERR_OK; k++) {
                env->p = sp->profiles[k];
                err = run_item(t, g, env, st);
            }
        }
    }
    return err;
}

static enum pg_err tf_process(void *state, struct pg_batch **batch, struct pg_status *st)
{
    struct tf_state *t = state;
    struct pg_ottl_env env;
    enum pg_err err;
    struct pg_status local;

    if (t->ngroups == 0) {
        return PG_ERR_OK;
    }
    if (st == NULL) {
        st = &local;
    }
    err = pg_batch_make_mutable(batch, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    pg_ottl_env_init(&env, *batch);
    for (size_t i = 0; i < t->ngroups; i++) {
        err = run_group(t, &t->groups[i], &env, st);
        if (err != PG_ERR_OK) {
            break;
        }
    }
    if (env.ra_skipped > 0) {
        pg_metric_add(t->m_skipped_pairs, env.ra_skipped);
    }
    return err;
}

static void tf_shutdown(void *state)
{
    (void)state;
}

static const char *tf_metadata_use(void *state)
{
    const struct tf_state *t = state;
    for (size_t g = 0; g < t->ngroups; g++) {
        for (size_t i = 0; i < t->groups[g].nconds; i++) {
            if (pg_ottl_cond_reads_metadata(t->groups[g].conds[i])) {
                return pg_ottl_cond_text(t->groups[g].conds[i]);
            }
        }
        for (size_t i = 0; i < t->groups[g].nstmts; i++) {
            if (pg_ottl_stmt_reads_metadata(t->groups[g].stmts[i])) {
                return pg_ottl_stmt_text(t->groups[g].stmts[i]);
            }
        }
    }
    return NULL;
}

static void tf_destroy(void *state)
{
    /* Everything, including PCRE2 code, lives in the config arena. */
    (void)state;
}

const struct pg_component_ops pg_processor_transform = {
    .type = "transform",
    .alias = NULL,
    .kind = PG_KIND_PROCESSOR,
    .any_thread = true,
    .fields = tf_fields,
    .doc = "OTTL profile_statements (collector-compatible, plus ParseResourceAttributes)",
    .create = tf_create,
    .start = NULL,
    .process = tf_process,
    .consume = NULL,
    .shutdown = tf_shutdown,
    .idle = NULL,
    .destroy = tf_destroy,
    .metadata_use = tf_metadata_use,
};
