/* SPDX-License-Identifier: Apache-2.0
 * Graph building, the pipeline consume path and the start/stop lifecycle.
 * Data flows one way: receiver -> fan-out over its pipelines -> each
 * pipeline's processors -> fan-out over its exporters (by reference). */
#include "pipeline/service.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/suggest.h"
#include "pipeline/service_internal.h"
#include "pipeline/service_name.h"

#define DRAIN_POLL_MS 50

const char *pg_kind_name(enum pg_kind kind)
{
    static const char *const n[] = {"receiver", "processor", "exporter", "extension"};
    return (unsigned)kind < 4 ? n[kind] : "component";
}

const char *pg_kind_section(enum pg_kind kind)
{
    static const char *const n[] = {"receivers", "processors", "exporters", "extensions"};
    return (unsigned)kind < 4 ? n[kind] : "components";
}

const struct pg_component_ops *pg_component_find(const struct pg_component_ops *const *registry,
                                                 size_t n, enum pg_kind kind, const char *type)
{
    for (size_t i = 0; i < n; i++) {
        const struct pg_component_ops *o = registry[i];
        if (o == NULL || o->kind != kind) {
            continue;
        }
        if (strcmp(o->type, type) == 0 || (o->alias != NULL && strcmp(o->alias, type) == 0)) {
            return o;
        }
    }
    return NULL;
}

static enum svc_state get_state(const struct pg_service *svc)
{
    return __atomic_load_n(&svc->state, __ATOMIC_ACQUIRE);
}

/* Main thread. */
static void set_state(struct pg_service *svc, enum svc_state state)
{
    __atomic_store_n(&svc->state, state, __ATOMIC_RELEASE);
}

bool pg_host_ready(const struct pg_host *host)
{
    return host != NULL && host->service != NULL && get_state(host->service) == SVC_RUNNING;
}

bool pg_service_running(const struct pg_service *svc)
{
    return get_state(svc) == SVC_RUNNING;
}

/* ---- the data path ---------------------------------------------------- */

/* Takes the caller's reference on @b. */
static enum pg_err run_pipeline(struct pg_service *svc, struct pipeline *p, struct pg_batch *b,
                                struct pg_status *st)
{
    enum pg_err first = PG_ERR_OK;
    struct pg_status est;

    for (size_t i = 0; i < p->n_procs; i++) {
        struct instance *pi = p->procs[i];
        enum pg_err err = pi->ops->process(pi->state, &b, st);
        if (err != PG_ERR_OK) {
            if (st != NULL && st->msg[0] == '\0') {
                pg_status_set(st, err, "%s: %s", pi->log_name, pg_strerror(err));
            }
            pg_batch_unref(b);
            return err;
        }
    }
    if (pg_service_name_missing(b)) {
        enum pg_err err = pg_batch_make_mutable(&b, st);
        if (err != PG_ERR_OK) {
            pg_batch_unref(b);
            return err;
        }
        pg_service_name_ensure(b, svc->m_fallbacks);
    }
    for (size_t i = 0; i < p->n_exps; i++) {
        struct instance *ei = p->exps[i];
        enum pg_err err;
        pg_status_clear(&est);
        err = ei->ops->consume(ei->state, b, &est);
        if (err != PG_ERR_OK && first == PG_ERR_OK) {
            first = err;
            if (st != NULL) {
                pg_status_set(st, err, "%s: %s", ei->log_name, pg_status_text(&est));
            }
        }
    }
    pg_batch_unref(b);
    return first;
}

/* What exporters set aside for this thread's push (would_block) and the
 * push did not use is given back once its entry is over. */
static void fanout_entry_end(const struct fanout *f)
{
    for (size_t i = 0; i < f->n; i++) {
        const struct pipeline *p = f->pipes[i];

        for (size_t j = 0; j < p->n_exps; j++) {
            const struct instance *ei = p->exps[j];

            if (ei->ops->entry_end != NULL) {
                ei->ops->entry_end(ei->state);
            }
        }
    }
}

/* Any receiver loop's thread; no lock: each caller brings its own batch. */
static enum pg_err fanout_consume(struct pg_consumer *self, struct pg_batch *batch,
                                  struct pg_status *st)
{
    struct fanout *f = (struct fanout *)self;
    enum pg_err first = PG_ERR_OK;
    enum svc_state state = get_state(f->svc);

    if (state != SVC_RUNNING && state != SVC_DELAYING && state != SVC_DRAINING) {
        fanout_entry_end(f);
        pg_batch_unref(batch);
        return pg_status_set(st, PG_ERR_UNAVAILABLE, "pprofgate is not running yet");
    }
    if (f->n == 0) {
        pg_batch_unref(batch);
        return PG_ERR_OK;
    }
    for (size_t i = 0; i < f->n; i++) {
        struct pg_status pst;
        enum pg_err err;
        /* Every pipeline but the last gets its own reference; the last one
         * gets the caller's, so a single pipeline mutates without copying. */
        struct pg_batch *b = i + 1 < f->n ? pg_batch_ref(batch) : batch;
        pg_status_clear(&pst);
        err = run_pipeline(f->svc, f->pipes[i], b, &pst);
        if (err != PG_ERR_OK && first == PG_ERR_OK) {
            first = err;
            if (st != NULL) {
                *st = pst;
            }
        }
    }
    fanout_entry_end(f);
    if (state == SVC_DELAYING && first == PG_ERR_OK) {
        __atomic_add_fetch(&f->svc->delay_accepted, 1, __ATOMIC_RELAXED);
    }
    return first;
}

/* Asks every exporter of every pipeline fed by this receiver; the first one
 * that would make the sender wait names itself in @st. Processors are not
 * asked: they never hold data back. */
static bool fanout_would_block(struct pg_consumer *self, const struct pg_batch *batch,
                               struct pg_status *st)
{
    struct fanout *f = (struct fanout *)self;

    enum svc_state state = get_state(f->svc);

    if (state != SVC_RUNNING && state != SVC_DELAYING) {
        return false; /* consume() answers for a service that is not running */
    }
    for (size_t i = 0; i < f->n; i++) {
        const struct pipeline *p = f->pipes[i];

        for (size_t j = 0; j < p->n_exps; j++) {
            const struct instance *ei = p->exps[j];

            if (ei->ops->would_block != NULL && ei->ops->would_block(ei->state, batch)) {
                if (st != NULL) {
                    pg_status_set(st, PG_ERR_BUSY,
                                  "%s: sending queue is full (block_on_overflow: the request "
                                  "waits for room)", ei->log_name);
                }
                fanout_entry_end(f); /* held: room the others set aside goes back */
                return true;
            }
        }
    }
    return false;
}

/* Every processor and exporter behind this receiver must take calls from
 * several loops at once (pg_component_ops.any_thread). */
static bool instance_any_thread(const struct instance *in, char *why, size_t why_size)
{
    if (in->ops->any_thread) {
        return true;
    }
    snprintf(why, why_size, "%s takes data on the main loop only", in->log_name);
    return false;
}

static bool fanout_any_thread(struct pg_consumer *self, char *why, size_t why_size)
{
    struct fanout *f = (struct fanout *)self;

    for (size_t i = 0; i < f->n; i++) {
        const struct pipeline *p = f->pipes[i];

        for (size_t j = 0; j < p->n_procs; j++) {
            if (!instance_any_thread(p->procs[j], why, why_size)) {
                return false;
            }
        }
        for (size_t j = 0; j < p->n_exps; j++) {
            if (!instance_any_thread(p->exps[j], why, why_size)) {
                return false;
            }
        }
    }
    return true;
}

/* ---- building ----------------------------------------------------------- */

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
    in->fan.base.consume = fanout_consume;
    in->fan.base.would_block = fanout_would_block;
    in->fan.base.any_thread = fanout_any_thread;
    in->fan.svc = svc;
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

struct pg_service *pg_service_build(struct pg_config *cfg,
                                    const struct pg_component_ops *const *reg, size_t n_reg,
                                    struct event_base *base, struct pg_diag *diag)
{
    struct pg_service *svc;
    const struct pg_cfg_node *root = cfg->root;
    const struct pg_cfg_node *service;
    const struct pg_cfg_node *pipes;
    const struct pg_cfg_node *exts;
    const char *metrics_addr = NULL;
    const struct pg_cfg_node *metrics_node = NULL;
    size_t n_total = 0;
    size_t before = diag->n;
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

    /* Extensions listed in service.extensions are instantiated first. */
    exts = pg_cfg_get(service, "extensions");
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

    pipes = pg_cfg_get(service, "pipelines");
    if (pipes == NULL || pipes->kind != PG_CFG_MAP || pipes->n == 0) {
        pg_diag_add(diag, pipes ? pipes : service, "service::pipelines",
                    "at least one pipeline (profiles: or profiles/<name>:) is required");
        goto fail;
    }
    svc->pipes = pg_arena_calloc(svc->arena, pipes->n, sizeof(struct pipeline));
    if (svc->pipes == NULL) {
        goto fail;
    }
    struct def ***p_recv = pg_arena_calloc(svc->arena, pipes->n, sizeof(void *));
    struct def ***p_proc = pg_arena_calloc(svc->arena, pipes->n, sizeof(void *));
    struct def ***p_exp = pg_arena_calloc(svc->arena, pipes->n, sizeof(void *));
    size_t *n_recv = pg_arena_calloc(svc->arena, pipes->n, sizeof(size_t));
    size_t *n_proc = pg_arena_calloc(svc->arena, pipes->n, sizeof(size_t));
    size_t *n_exp = pg_arena_calloc(svc->arena, pipes->n, sizeof(size_t));
    if (!p_recv || !p_proc || !p_exp || !n_recv || !n_proc || !n_exp) {
        goto fail;
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
        p_recv[i] = pipe_list(svc, pn, pid, "receivers", PG_KIND_RECEIVER, &n_recv[i], true);
        p_proc[i] = pipe_list(svc, pn, pid, "processors", PG_KIND_PROCESSOR, &n_proc[i], false);
        p_exp[i] = pipe_list(svc, pn, pid, "exporters", PG_KIND_EXPORTER, &n_exp[i], true);
        svc->pipes[svc->n_pipes].id = pg_arena_strdup(svc->arena, pid);
        svc->n_pipes++;
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
            n_inst += n_proc[i];
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
    for (size_t i = 0; i < svc->n_defs; i++) {
        if (svc->defs[i].kind == PG_KIND_EXPORTER && svc->defs[i].used) {
            svc->defs[i].inst = instantiate(svc, &svc->defs[i]);
        }
    }
    for (size_t i = 0; i < svc->n_pipes; i++) {
        struct pipeline *p = &svc->pipes[i];
        p->procs = pg_arena_calloc(svc->arena, n_proc[i] + 1, sizeof(void *));
        p->exps = pg_arena_calloc(svc->arena, n_exp[i] + 1, sizeof(void *));
        if (p->procs == NULL || p->exps == NULL) {
            goto fail;
        }
        for (size_t j = 0; j < n_proc[i]; j++) {
            struct instance *in = instantiate(svc, p_proc[i][j]);
            if (in != NULL) {
                p->procs[p->n_procs++] = in;
            }
        }
        for (size_t j = 0; j < n_exp[i]; j++) {
            if (p_exp[i][j]->inst != NULL) {
                p->exps[p->n_exps++] = p_exp[i][j]->inst;
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
            for (size_t j = 0; j < n_recv[pi]; j++) {
                if (p_recv[pi][j] == d) {
                    d->inst->fan.pipes[d->inst->fan.n++] = &svc->pipes[pi];
                }
            }
        }
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

/* ---- lifecycle ---------------------------------------------------------- */

static int start_rank(enum pg_kind k)
{
    switch (k) {
    case PG_KIND_EXTENSION:
        return 0;
    case PG_KIND_EXPORTER:
        return 1;
    case PG_KIND_PROCESSOR:
        return 2;
    default:
        return 3;
    }
}

enum pg_err pg_service_start(struct pg_service *svc, struct pg_status *st)
{
    char why[512];

    if (svc->n_log_paths > 0 &&
        !pg_log_open_outputs(svc->log_paths, svc->n_log_paths, why, sizeof(why))) {
        return pg_status_set(st, PG_ERR_IO, "service::telemetry::logs::output_paths: %s", why);
    }
    set_state(svc, SVC_STARTING);
    for (int rank = 0; rank < 4; rank++) {
        for (size_t i = 0; i < svc->n_order; i++) {
            struct instance *in = svc->order[i];
            enum pg_err err;
            if (start_rank(in->kind) != rank || in->started) {
                continue;
            }
            if (in->ops->start != NULL) {
                pg_status_clear(st);
                err = in->ops->start(in->state, st);
                if (err != PG_ERR_OK) {
                    struct pg_status inner = *st;
                    pg_status_set(st, err, "%s failed to start: %s", in->log_name,
                                  pg_status_text(&inner));
                    return err;
                }
            }
            in->started = true;
            pg_log_debug("service", "%s started", in->log_name);
        }
    }
    set_state(svc, SVC_RUNNING);
    return PG_ERR_OK;
}

static void shutdown_kind(struct pg_service *svc, enum pg_kind kind)
{
    for (size_t i = svc->n_order; i-- > 0;) {
        struct instance *in = svc->order[i];
        if (in->kind == kind && !in->shut) {
            if (in->ops->shutdown != NULL) {
                in->ops->shutdown(in->state);
            }
            in->shut = true;
        }
    }
}

static void destroy_all(struct pg_service *svc)
{
    for (size_t i = svc->n_order; i-- > 0;) {
        struct instance *in = svc->order[i];
        if (in->created) {
            if (!in->shut && in->ops->shutdown != NULL) {
                in->ops->shutdown(in->state);
            }
            in->shut = true;
            if (in->ops->destroy != NULL) {
                in->ops->destroy(in->state);
            }
            in->created = false;
        }
    }
}

/* Every component of @kind (or of every kind, -1) has nothing in flight. */
static bool kind_idle(struct pg_service *svc, int kind)
{
    for (size_t i = 0; i < svc->n_order; i++) {
        struct instance *in = svc->order[i];
        if (kind >= 0 && in->kind != (enum pg_kind)kind) {
            continue;
        }
        if (in->created && in->ops->idle != NULL && !in->ops->idle(in->state)) {
            return false;
        }
    }
    return true;
}

static void drain_tick(evutil_socket_t fd, short what, void *arg)
{
    struct pg_service *svc = arg;
    struct timeval tv = {0, DRAIN_POLL_MS * 1000};
    bool late = pg_mono_ns() >= svc->drain_deadline_ns;
    bool idle;

    (void)fd;
    (void)what;
    /* Exporters refuse intake once told to shut down: they are told only
     * when every receiver loop has answered what it accepted (and whatever
     * they consumed is queued), so nothing accepted meets a closed exporter.
     * Their consumers keep sending meanwhile. */
    if (!svc->exporters_shut &&
        (late || (kind_idle(svc, PG_KIND_RECEIVER) && kind_idle(svc, PG_KIND_PROCESSOR)))) {
        shutdown_kind(svc, PG_KIND_EXPORTER);
        svc->exporters_shut = true;
    }
    idle = svc->exporters_shut && kind_idle(svc, -1);
    if (!idle && !late) {
        event_add(svc->drain_timer, &tv);
        return;
    }
    if (!idle) {
        pg_log_warn("service", "drain deadline passed with data still in flight; each "
                               "exporter says what stays in its spool or was dropped");
    }
    shutdown_kind(svc, PG_KIND_EXTENSION);
    destroy_all(svc);
    set_state(svc, SVC_STOPPED);
    pg_log_info("service", "stopped");
    event_base_loopexit(svc->host.base, NULL);
}

/* The drain proper: receivers stop accepting (and answer what they hold),
 * exporters drain until idle or the deadline. */
static void begin_drain(struct pg_service *svc)
{
    struct timeval tv = {0, 0};

    pg_log_info("service", "shutting down: receivers stop accepting, exporters drain "
                           "(up to %.0fs)", (double)svc->drain_budget_ns / 1e9);
    set_state(svc, SVC_DRAINING);
    shutdown_kind(svc, PG_KIND_RECEIVER);
    shutdown_kind(svc, PG_KIND_PROCESSOR);
    svc->drain_deadline_ns = pg_mono_ns() + svc->drain_budget_ns;
    svc->drain_timer = evtimer_new(svc->host.base, drain_tick, svc);
    if (svc->drain_timer == NULL) {
        drain_tick(-1, 0, svc);
        return;
    }
    event_add(svc->drain_timer, &tv);
}

static uint64_t delay_accepted(struct pg_service *svc)
{
    return __atomic_load_n(&svc->delay_accepted, __ATOMIC_RELAXED);
}

static void on_delay_over(evutil_socket_t fd, short what, void *arg)
{
    struct pg_service *svc = arg;

    (void)fd;
    (void)what;
    pg_log_info("service", "shutdown delay over: %" PRIu64 " request(s) accepted during it",
                delay_accepted(svc));
    begin_drain(svc);
}

void pg_service_shutdown(struct pg_service *svc, int64_t deadline_ns)
{
    enum svc_state state = get_state(svc);

    if (state == SVC_DELAYING || state == SVC_DRAINING || state == SVC_STOPPED) {
        return;
    }
    svc->drain_budget_ns = deadline_ns;
    if (svc->shutdown_delay_ns > 0 && state == SVC_RUNNING) {
        struct timeval tv = pg_ns_to_tv(svc->shutdown_delay_ns);

        svc->delay_timer = evtimer_new(svc->host.base, on_delay_over, svc);
        if (svc->delay_timer != NULL && evtimer_add(svc->delay_timer, &tv) == 0) {
            /* Health turns 503 now (pg_host_ready): load balancers and the
             * kubelet stop routing here while the delay runs. */
            set_state(svc, SVC_DELAYING);
            svc->delay_end_ns = pg_mono_ns() + svc->shutdown_delay_ns;
            pg_log_info("service",
                        "shutting down: health reports not ready; receivers keep accepting "
                        "for %.1fs (service::shutdown_delay) so clients can send their last "
                        "profiles; a second signal ends the delay",
                        (double)svc->shutdown_delay_ns / 1e9);
            return;
        }
    }
    begin_drain(svc);
}

bool pg_service_end_delay(struct pg_service *svc)
{
    if (get_state(svc) != SVC_DELAYING) {
        return false;
    }
    evtimer_del(svc->delay_timer);
    pg_log_info("service", "shutdown delay cut short with %.1fs left: %" PRIu64
                " request(s) accepted during it",
                (double)(svc->delay_end_ns - pg_mono_ns()) / 1e9, delay_accepted(svc));
    begin_drain(svc);
    return true;
}

void pg_service_free(struct pg_service *svc)
{
    if (svc == NULL) {
        return;
    }
    destroy_all(svc);
    if (svc->drain_timer != NULL) {
        event_free(svc->drain_timer);
    }
    if (svc->delay_timer != NULL) {
        event_free(svc->delay_timer);
    }
    pg_arena_destroy(svc->arena);
    free(svc);
}
