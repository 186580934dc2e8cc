/* SPDX-License-Identifier: Apache-2.0
 * Graph building: binds the config's component definitions, checks the
 * service: section and its pipelines, and creates every instance (no sockets
 * yet) in start order, wiring each receiver to the pipelines it feeds. Calls
 * down into the data path (service_fanout.c) and the lifecycle's free. */
#include "pipeline/service.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/metrics.h"
#include "core/suggest.h"
#include "pipeline/service_internal.h"

static bool id_ok(const char *id)
{
    const char *slash = strchr(id, '/');
    size_t tlen = slash ? (size_t)(slash - id) : strlen(id);

    if (tlen == 0 || (slash != NULL && slash[1] == '\0') || (slash && strchr(slash + 1, '/'))) {
        return false;
    }
    for (const char *p = id; *p; p++) {
        if (*p <= ' ' || *p == ':' || *p == '"') {
            return false;
        }
    }
    return true;
}

static char *types_of(struct pg_arena *a, const struct pg_component_ops *const *reg, size_t n,
                      enum pg_kind kind)
{
    char *s = pg_arena_strdup(a, "");

    for (size_t i = 0; i < n && s; i++) {
        if (reg[i] != NULL && reg[i]->kind == kind && strcmp(reg[i]->type, "telemetry_metrics") != 0) {
            s = pg_arena_sprintf(a, "%s%s%s", s, s[0] ? ", " : "", reg[i]->type);
        }
    }
    return (s && s[0]) ? s : (char *)"(none in this build)";
}

static struct def *find_def(struct pg_service *svc, enum pg_kind kind, const char *id)
{
    for (size_t i = 0; i < svc->n_defs; i++) {
        if (svc->defs[i].kind == kind && strcmp(svc->defs[i].id, id) == 0) {
            return &svc->defs[i];
        }
    }
    return NULL;
}

static char *defined_ids(struct pg_service *svc, enum pg_kind kind)
{
    char *s = pg_arena_strdup(svc->arena, "");

    for (size_t i = 0; i < svc->n_defs && s; i++) {
        if (svc->defs[i].kind == kind) {
            s = pg_arena_sprintf(svc->arena, "%s%s%s", s, s[0] ? ", " : "", svc->defs[i].id);
        }
    }
    return (s && s[0]) ? s : (char *)"(none)";
}

/* " (did you mean ...)" for an id that names no definition of @kind. */
static const char *closest_def(struct pg_service *svc, enum pg_kind kind, const char *id)
{
    struct pg_suggest sg;

    pg_suggest_init(&sg, id);
    for (size_t i = 0; i < svc->n_defs; i++) {
        if (svc->defs[i].kind == kind) {
            pg_suggest_offer(&sg, svc->defs[i].id);
        }
    }
    return pg_cfg_did_you_mean(svc->arena, &sg);
}

static void collect_defs(struct pg_service *svc, const struct pg_component_ops *const *reg,
                         size_t n_reg, enum pg_kind kind, const struct pg_cfg_node *section)
{
    const char *sec = pg_kind_section(kind);

    if (section == NULL || section->kind == PG_CFG_NULL) {
        return;
    }
    if (section->kind != PG_CFG_MAP) {
        pg_diag_add(svc->diag, section, sec, "expected a mapping of component ids");
        return;
    }
    for (size_t i = 0; i < section->n; i++) {
        const struct pg_cfg_node *key = section->keys[i];
        struct def *d = &svc->defs[svc->n_defs];
        char type[128];
        const char *slash;
        size_t tlen;

        if (!id_ok(key->value)) {
            pg_diag_add(svc->diag, key, pg_arena_sprintf(svc->arena, "%s::%s", sec, key->value),
                        "invalid component id \"%s\" (use type or type/name)",
                        key->value);
            continue;
        }
        slash = strchr(key->value, '/');
        tlen = slash ? (size_t)(slash - key->value) : strlen(key->value);
        if (tlen >= sizeof(type)) {
            tlen = sizeof(type) - 1;
        }
        memcpy(type, key->value, tlen);
        type[tlen] = '\0';
        d->ops = pg_component_find(reg, n_reg, kind, type);
        if (d->ops == NULL || strcmp(type, "telemetry_metrics") == 0) {
            struct pg_suggest sg;
            pg_suggest_init(&sg, type);
            for (size_t r = 0; r < n_reg; r++) {
                if (reg[r] != NULL && reg[r]->kind == kind &&
                    strcmp(reg[r]->type, "telemetry_metrics") != 0) {
                    pg_suggest_offer(&sg, reg[r]->type);
                }
            }
            pg_diag_add(svc->diag, key, pg_arena_sprintf(svc->arena, "%s::%s", sec, key->value),
                        "unknown %s type \"%s\"%s; valid types: %s",
                        pg_kind_name(kind), type, pg_cfg_did_you_mean(svc->arena, &sg),
                        types_of(svc->arena, reg, n_reg, kind));
            continue;
        }
        d->kind = kind;
        d->id = pg_arena_strdup(svc->arena, key->value);
        d->key = key;
        d->node = section->items[i];
        svc->n_defs++;
    }
}

static struct instance *instantiate(struct pg_service *svc, struct def *d)
{
    struct instance *in = pg_arena_zalloc(svc->arena, sizeof(*in));
    struct pg_component_ctx ctx;
    char *path;
    enum pg_err err;

    if (in == NULL) {
        return NULL;
    }
    in->ops = d->ops;
    in->kind = d->kind;
    in->id = d->id;
    in->def = d->node;
    in->key = d->key;
    in->log_name = pg_arena_sprintf(svc->arena, "%s/%s", pg_kind_name(d->kind), d->id);
    pg_svc_fanout_init(&in->fan, svc);
    path = pg_arena_sprintf(svc->arena, "%s::%s", pg_kind_section(d->kind), d->id);
    memset(&ctx, 0, sizeof(ctx));
    ctx.host = &svc->host;
    ctx.id = in->id;
    ctx.log_name = in->log_name;
    ctx.config = d->node;
    ctx.config_arena = svc->cfg->arena;
    ctx.diag = svc->diag;
    ctx.next = d->kind == PG_KIND_RECEIVER ? &in->fan.base : NULL;
    ctx.path = path;
    err = d->ops->create(&ctx, &in->state);
    if (err != PG_ERR_OK) {
        if (svc->diag->n == 0) {
            pg_diag_add(svc->diag, d->key, NULL, "%s %s: %s", pg_kind_name(d->kind), d->id,
                        pg_strerror(err));
        }
        return NULL;
    }
    in->created = true;
    svc->order[svc->n_order++] = in;
    return in;
}

/* Binds an unused definition's config and drops the instance again. */
static void check_unused(struct pg_service *svc, struct def *d)
{
    struct instance *in = instantiate(svc, d);

    if (in == NULL) {
        return;
    }
    svc->n_order--; /* instantiate appended it last */
    if (in->ops->destroy != NULL) {
        in->ops->destroy(in->state);
    }
    in->created = false;
}

/* Parses one id list of a pipeline; marks defs used; returns the defs. */
static struct def **pipe_list(struct pg_service *svc, const struct pg_cfg_node *pnode,
                              const char *pid, const char *key, enum pg_kind kind, size_t *n_out,
                              bool required)
{
    const struct pg_cfg_node *list = pg_cfg_get(pnode, key);
    char *path = pg_arena_sprintf(svc->arena, "service::pipelines::%s::%s", pid, key);
    struct def **out;

    *n_out = 0;
    if (list == NULL || list->kind == PG_CFG_NULL || (list->kind == PG_CFG_SEQ && list->n == 0)) {
        if (required) {
            pg_diag_add(svc->diag, list ? list : pnode, path, "at least one %s is required",
                        pg_kind_name(kind));
        }
        return NULL;
    }
    if (list->kind != PG_CFG_SEQ) {
        pg_diag_add(svc->diag, list, path, "expected a list of %s ids", pg_kind_name(kind));
        return NULL;
    }
    out = pg_arena_calloc(svc->arena, list->n, sizeof(*out));
    for (size_t i = 0; i < list->n && out; i++) {
        const struct pg_cfg_node *it = list->items[i];
        struct def *d = it->kind == PG_CFG_SCALAR ? find_def(svc, kind, it->value) : NULL;
        if (d == NULL) {
            pg_diag_add(svc->diag, it, path, "%s \"%s\" is not defined under %s:%s; defined: %s",
                        pg_kind_name(kind), it->value, pg_kind_section(kind),
                        closest_def(svc, kind, it->value), defined_ids(svc, kind));
            continue;
        }
        for (size_t j = 0; j < *n_out; j++) {
            if (out[j] == d) {
                pg_diag_add(svc->diag, it, path, "%s \"%s\" is listed twice", pg_kind_name(kind),
                            it->value);
                d = NULL;
                break;
            }
        }
        if (d != NULL) {
            d->used = true;
            out[(*n_out)++] = d;
        }
    }
    return out;
}

/* The longest service::shutdown_delay: a pod's grace period is about a
 * minute, and a longer wait is more likely a typo (5m for 5s). */
#define SHUTDOWN_DELAY_MAX_NS (5LL * 60 * 1000000000LL)

/* service::shutdown_delay: a duration, 0 (the default) for none. */
static void bind_shutdown_delay(struct pg_service *svc, const struct pg_cfg_node *service)
{
    const struct pg_cfg_node *n = pg_cfg_get(service, "shutdown_delay");
    int64_t ns = 0;

    if (n == NULL || n->kind == PG_CFG_NULL) {
        return;
    }
    if (n->kind != PG_CFG_SCALAR || !pg_parse_duration(n->value, &ns) || ns < 0 ||
        ns > SHUTDOWN_DELAY_MAX_NS) {
        pg_diag_add(svc->diag, n, "service::shutdown_delay",
                    "expected a duration from 0s to 5m (e.g. 5s): how long receivers keep "
                    "accepting after SIGTERM while health_check reports not ready");
        return;
    }
    svc->shutdown_delay_ns = ns;
}

static const char *const top_keys[] = {"receivers", "processors", "exporters", "extensions",
                                       "connectors", "service", NULL};

/* Reports every key of @map not in the NULL-terminated @valid to the build's
 * diagnostics, under @path. */
static void service_check_keys(struct pg_service *svc, const struct pg_cfg_node *map,
                               const char *path, const char *const *valid)
{
    (void)pg_cfg_check_keys(svc->diag, svc->arena, map, path, valid);
}

/* A processor that reads request headers behind a receiver that drops them
 * sees nothing, silently (an empty Otel-Resource-Attributes): a warning
 * (`validate` lists it, the start logs it), once per pair. */
static void warn_metadata(struct pg_service *svc)
{
    for (size_t i = 0; i < svc->n_defs; i++) {
        struct instance *rx = svc->defs[i].kind == PG_KIND_RECEIVER ? svc->defs[i].inst : NULL;
        if (rx == NULL || rx->ops->metadata_use == NULL || rx->ops->metadata_use(rx->state)) {
            continue;
        }
        for (size_t p = 0; p < rx->fan.n; p++) {
            const struct pipeline *pl = rx->fan.pipes[p];
            for (size_t j = 0; j < pl->n_procs; j++) {
                const struct instance *pi = pl->procs[j];
                const char *what =
                    pi->ops->metadata_use ? pi->ops->metadata_use(pi->state) : NULL;
                if (what != NULL) {
                    pg_diag_warn(svc->diag, pi->key,
                                 pg_arena_sprintf(svc->arena, "processors::%s", pi->id),
                                 "pipeline %s: %s reads request headers (%s) but receiver "
                                 "%s drops them (include_metadata is not true), so it always "
                                 "sees none; set include_metadata: true in the receiver",
                                 pl->id, pi->log_name, what, rx->id);
                }
            }
        }
    }
}

/* service::extensions: marks each listed extension used (instantiated first, in start order). */
static void list_extensions(struct pg_service *svc, const struct pg_cfg_node *service)
{
    struct pg_diag *diag = svc->diag;
    const struct pg_cfg_node *exts = pg_cfg_get(service, "extensions");

    if (exts != NULL && exts->kind != PG_CFG_NULL) {
        if (exts->kind != PG_CFG_SEQ) {
            pg_diag_add(diag, exts, "service::extensions", "expected a list of extension ids");
        } else {
            for (size_t i = 0; i < exts->n; i++) {
                struct def *d = find_def(svc, PG_KIND_EXTENSION, exts->items[i]->value);
                if (d == NULL) {
                    pg_diag_add(diag, exts->items[i], "service::extensions",
                                "extension \"%s\" is not defined under extensions:%s; "
                                "defined: %s",
                                exts->items[i]->value,
                                closest_def(svc, PG_KIND_EXTENSION, exts->items[i]->value),
                                defined_ids(svc, PG_KIND_EXTENSION));
                    continue;
                }
                if (d->used) {
                    continue;
                }
                d->used = true;
            }
        }
    }
}

/* The id lists of every pipeline under service::pipelines, per pipeline (parallel arrays,
 * in the service arena). */
struct pipe_lists {
    struct def ***recv, ***proc, ***exp;
    size_t *n_recv, *n_proc, *n_exp;
};

/* Parses service::pipelines into svc->pipes and @pl; false when out of memory. */
static bool parse_pipelines(struct pg_service *svc, const struct pg_cfg_node *pipes,
                            struct pipe_lists *pl)
{
    struct pg_diag *diag = svc->diag;

    svc->pipes = pg_arena_calloc(svc->arena, pipes->n, sizeof(struct pipeline));
    pl->recv = pg_arena_calloc(svc->arena, pipes->n, sizeof(void *));
    pl->proc = pg_arena_calloc(svc->arena, pipes->n, sizeof(void *));
    pl->exp = pg_arena_calloc(svc->arena, pipes->n, sizeof(void *));
    pl->n_recv = pg_arena_calloc(svc->arena, pipes->n, sizeof(size_t));
    pl->n_proc = pg_arena_calloc(svc->arena, pipes->n, sizeof(size_t));
    pl->n_exp = pg_arena_calloc(svc->arena, pipes->n, sizeof(size_t));
    if (!svc->pipes || !pl->recv || !pl->proc || !pl->exp || !pl->n_recv || !pl->n_proc ||
        !pl->n_exp) {
        return false;
    }
    for (size_t i = 0; i < pipes->n; i++) {
        const char *pid = pipes->keys[i]->value;
        const struct pg_cfg_node *pn = pipes->items[i];
        static const char *const pipe_keys[] = {"receivers", "processors", "exporters", NULL};
        char *ppath = pg_arena_sprintf(svc->arena, "service::pipelines::%s", pid);
        if (strncmp(pid, "profiles", 8) != 0 || (pid[8] != '\0' && pid[8] != '/') ||
            !id_ok(pid)) {
            pg_diag_add(diag, pipes->keys[i], "service::pipelines",
                        "pipeline \"%s\": pprofgate handles profiles pipelines only "
                        "(profiles or profiles/<name>)",
                        pid);
            continue;
        }
        if (pn == NULL || pn->kind != PG_CFG_MAP) {
            pg_diag_add(diag, pn ? pn : pipes->keys[i], ppath,
                        "expected a mapping with receivers, processors and exporters");
            continue;
        }
        service_check_keys(svc, pn, ppath, pipe_keys);
        pl->recv[i] =
            pipe_list(svc, pn, pid, "receivers", PG_KIND_RECEIVER, &pl->n_recv[i], true);
        pl->proc[i] =
            pipe_list(svc, pn, pid, "processors", PG_KIND_PROCESSOR, &pl->n_proc[i], false);
        pl->exp[i] = pipe_list(svc, pn, pid, "exporters", PG_KIND_EXPORTER, &pl->n_exp[i], true);
        svc->pipes[svc->n_pipes].id = pg_arena_strdup(svc->arena, pid);
        svc->n_pipes++;
    }
    return true;
}

/* service::telemetry::metrics::address: the telemetry_metrics extension, in the spare
 * definition slot, its config made from the address (and the section's auth). */
static void add_metrics_endpoint(struct pg_service *svc,
                                 const struct pg_component_ops *const *reg, size_t n_reg,
                                 const struct pg_cfg_node *service,
                                 const struct pg_cfg_node *metrics_node)
{
    struct pg_diag *diag = svc->diag;
    struct pg_config *cfg = svc->cfg;
    const struct pg_component_ops *mops =
        pg_component_find(reg, n_reg, PG_KIND_EXTENSION, "telemetry_metrics");

    if (mops == NULL) {
        pg_diag_add(diag, metrics_node, "service::telemetry::metrics::address",
                    "this build has no metrics endpoint");
    } else {
        struct def *d = &svc->defs[svc->n_defs]; /* spare slot allocated above */
        struct pg_cfg_node *map = pg_arena_zalloc(cfg->arena, sizeof(*map));
        struct pg_cfg_node *k = pg_arena_zalloc(cfg->arena, sizeof(*k));
        /* The metrics section's `auth` goes with the endpoint. */
        const struct pg_cfg_node *mauth =
            pg_cfg_get(pg_cfg_get(pg_cfg_get(service, "telemetry"), "metrics"), "auth");
        struct pg_cfg_node *ak = mauth ? pg_arena_zalloc(cfg->arena, sizeof(*ak)) : NULL;
        if (map && k && (mauth == NULL || ak != NULL)) {
            *k = *metrics_node;
            k->kind = PG_CFG_SCALAR;
            k->value = "endpoint";
            map->kind = PG_CFG_MAP;
            map->file = metrics_node->file;
            map->line = metrics_node->line;
            map->col = metrics_node->col;
            map->n = mauth ? 2 : 1;
            map->keys = pg_arena_calloc(cfg->arena, 2, sizeof(void *));
            map->items = pg_arena_calloc(cfg->arena, 2, sizeof(void *));
            if (map->keys && map->items) {
                map->keys[0] = k;
                map->items[0] = (struct pg_cfg_node *)metrics_node;
                if (mauth != NULL) {
                    *ak = *k;
                    ak->value = "auth";
                    map->keys[1] = ak;
                    map->items[1] = (struct pg_cfg_node *)mauth;
                }
                d->kind = PG_KIND_EXTENSION;
                d->id = "telemetry_metrics";
                d->key = metrics_node;
                d->node = map;
                d->ops = mops;
                d->used = true;
                d->inst = instantiate(svc, d);
            }
        }
    }
}

/* Processor instances per pipeline, the exporters each lists, and the receivers (last in
 * start order), each fanning out to every pipeline that lists it; false when out of memory. */
static bool wire_pipelines(struct pg_service *svc, const struct pipe_lists *pl)
{
    for (size_t i = 0; i < svc->n_pipes; i++) {
        struct pipeline *p = &svc->pipes[i];
        p->procs = pg_arena_calloc(svc->arena, pl->n_proc[i] + 1, sizeof(void *));
        p->exps = pg_arena_calloc(svc->arena, pl->n_exp[i] + 1, sizeof(void *));
        if (p->procs == NULL || p->exps == NULL) {
            return false;
        }
        for (size_t j = 0; j < pl->n_proc[i]; j++) {
            struct instance *in = instantiate(svc, pl->proc[i][j]);
            if (in != NULL) {
                p->procs[p->n_procs++] = in;
            }
        }
        for (size_t j = 0; j < pl->n_exp[i]; j++) {
            if (pl->exp[i][j]->inst != NULL) {
                p->exps[p->n_exps++] = pl->exp[i][j]->inst;
            }
        }
    }
    for (size_t i = 0; i < svc->n_defs; i++) {
        struct def *d = &svc->defs[i];
        if (d->kind != PG_KIND_RECEIVER || !d->used) {
            continue;
        }
        d->inst = instantiate(svc, d);
        if (d->inst == NULL) {
            continue;
        }
        /* The receiver feeds every pipeline that lists it. */
        d->inst->fan.pipes = pg_arena_calloc(svc->arena, svc->n_pipes + 1, sizeof(void *));
        for (size_t pi = 0; pi < svc->n_pipes && d->inst->fan.pipes; pi++) {
            for (size_t j = 0; j < pl->n_recv[pi]; j++) {
                if (pl->recv[pi][j] == d) {
                    d->inst->fan.pipes[d->inst->fan.n++] = &svc->pipes[pi];
                }
            }
        }
    }
    return true;
}

struct pg_service *pg_service_build(struct pg_config *cfg,
                                    const struct pg_component_ops *const *reg, size_t n_reg,
                                    struct event_base *base, struct pg_diag *diag)
{
    struct pg_service *svc;
    const struct pg_cfg_node *root = cfg->root;
    const struct pg_cfg_node *service;
    const struct pg_cfg_node *pipes;
    const char *metrics_addr = NULL;
    const struct pg_cfg_node *metrics_node = NULL;
    size_t n_total = 0;
    size_t before = diag->n;
    struct pipe_lists pl;
    static const char *const service_keys[] = {"pipelines", "extensions", "telemetry",
                                               "shutdown_delay", NULL};

    if (root == NULL) {
        return NULL;
    }
    svc = calloc(1, sizeof(*svc));
    if (svc == NULL) {
        return NULL;
    }
    svc->arena = pg_arena_create(0);
    if (svc->arena == NULL) {
        free(svc);
        return NULL;
    }
    svc->cfg = cfg;
    svc->diag = diag;
    svc->host.base = base;
    svc->host.version = PG_VERSION;
    svc->host.service = svc;
    svc->m_fallbacks = pg_metric_counter("pprofgate_service_name_fallbacks_total",
                                         "Resources that got service.name from the fallback rule",
                                         NULL);

    service_check_keys(svc, root, "", top_keys);
    for (int k = 0; k < 4; k++) {
        const struct pg_cfg_node *sec = pg_cfg_get(root, pg_kind_section((enum pg_kind)k));
        if (sec != NULL && sec->kind == PG_CFG_MAP) {
            n_total += sec->n;
        }
    }
    svc->defs = pg_arena_calloc(svc->arena, n_total + 1, sizeof(struct def));
    if (svc->defs == NULL) {
        pg_service_free(svc);
        return NULL;
    }
    if (pg_cfg_get(root, "connectors") != NULL) {
        pg_diag_add(diag, pg_cfg_get(root, "connectors"), "connectors",
                    "connectors are not supported by pprofgate");
    }
    for (int k = 0; k < 4; k++) {
        collect_defs(svc, reg, n_reg, (enum pg_kind)k, pg_cfg_get(root, pg_kind_section((enum pg_kind)k)));
    }

    service = pg_cfg_get(root, "service");
    if (service == NULL || service->kind != PG_CFG_MAP) {
        pg_diag_add(diag, service ? service : root, "service",
                    "a service: section with at least one pipeline is required");
        goto fail;
    }
    service_check_keys(svc, service, "service", service_keys);
    bind_shutdown_delay(svc, service);
    pg_service_apply_telemetry(svc, pg_cfg_get(service, "telemetry"), &metrics_addr, &metrics_node);

    list_extensions(svc, service);

    pipes = pg_cfg_get(service, "pipelines");
    if (pipes == NULL || pipes->kind != PG_CFG_MAP || pipes->n == 0) {
        pg_diag_add(diag, pipes ? pipes : service, "service::pipelines",
                    "at least one pipeline (profiles: or profiles/<name>:) is required");
        goto fail;
    }
    if (!parse_pipelines(svc, pipes, &pl)) {
        goto fail;
    }
    /* The collector (v0.161) loads a config with a spare component and
     * simply does not build it: a warning here, not an error. */
    for (size_t i = 0; i < svc->n_defs; i++) {
        const struct def *d = &svc->defs[i];
        if (!d->used) {
            pg_diag_warn(diag, d->key, pg_arena_sprintf(svc->arena, "%s::%s",
                                                        pg_kind_section(d->kind), d->id),
                         "%s \"%s\" is defined but not used, so it is not started%s",
                         pg_kind_name(d->kind), d->id,
                         d->kind == PG_KIND_EXTENSION
                             ? " (list it in service::extensions to run it)"
                             : "; add it to a pipeline or remove it");
        }
    }
    /* Instances: one per definition (+ the metrics endpoint), plus one
     * processor per pipeline that lists it. */
    {
        size_t n_inst = svc->n_defs + 1;
        for (size_t i = 0; i < pipes->n; i++) {
            n_inst += pl.n_proc[i];
        }
        svc->order = pg_arena_calloc(svc->arena, n_inst, sizeof(struct instance *));
        if (svc->order == NULL) {
            goto fail;
        }
    }
    if (diag->n > before) {
        /* Still bind every component once so `validate` lists their
         * config problems together with the graph's. */
        for (size_t i = 0; i < svc->n_defs; i++) {
            (void)instantiate(svc, &svc->defs[i]);
        }
        goto fail;
    }

    /* An unused component is not started, but its config is still checked
     * (as the collector unmarshals and validates every component): created
     * and destroyed at once. */
    for (size_t i = 0; i < svc->n_defs; i++) {
        if (!svc->defs[i].used) {
            check_unused(svc, &svc->defs[i]);
        }
    }
    if (diag->n > before) {
        goto fail;
    }

    /* Instances, in start order: extensions, exporters, processors, receivers;
     * only those a pipeline or service::extensions uses. */
    for (size_t i = 0; i < svc->n_defs; i++) {
        if (svc->defs[i].kind == PG_KIND_EXTENSION && svc->defs[i].used) {
            svc->defs[i].inst = instantiate(svc, &svc->defs[i]);
        }
    }
    if (metrics_addr != NULL) {
        add_metrics_endpoint(svc, reg, n_reg, service, metrics_node);
    }
    for (size_t i = 0; i < svc->n_defs; i++) {
        if (svc->defs[i].kind == PG_KIND_EXPORTER && svc->defs[i].used) {
            svc->defs[i].inst = instantiate(svc, &svc->defs[i]);
        }
    }
    if (!wire_pipelines(svc, &pl)) {
        goto fail;
    }
    if (diag->n > before) {
        goto fail;
    }
    warn_metadata(svc);
    svc->diag = NULL;
    return svc;
fail:
    svc->diag = NULL;
    pg_service_free(svc);
    return NULL;
}
