/* SPDX-License-Identifier: Apache-2.0
 * Binding of `scrape:` (Parca scrape_configs) and `remote:` (contrib
 * pprofreceiver) into pg_scrape_job values; see scrape_config.h for the
 * defaults and the inheritance rule. The client and discovery sub-sections
 * (tls_config, authorization, file_sd_configs, kubernetes_sd_configs) are
 * scrape_config_sd.c's; calls go this file -> that one. */
#include "scrape/scrape_config.h"
#include "scrape/scrape_config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include <stdarg.h>

#define NS 1000000000LL
#define LOG_NAME "receiver/pprof/scrape"



/* Parca's DefaultScrapeConfig profile set, in its order. */
static const struct {
    const char *name, *path;
    bool delta;
} default_profiles[] = {
    {"memory", "/debug/pprof/allocs", false},   {"block", "/debug/pprof/block", false},
    {"goroutine", "/debug/pprof/goroutine", false}, {"mutex", "/debug/pprof/mutex", false},
    {"process_cpu", "/debug/pprof/profile", true},
};
#define N_DEFAULT_PROFILES (sizeof(default_profiles) / sizeof(default_profiles[0]))

/* ---- field tables ------------------------------------------------------ */

struct basic_raw {
    char *username, *password, *password_file;
};

struct job_raw {
    char *job_name;
    const struct pg_cfg_node *params, *profiling_config, *relabel_configs, *static_configs,
        *file_sd_configs, *kubernetes_sd_configs;
    int64_t scrape_interval, scrape_timeout;
    char *scheme;
    bool normalized_addresses, follow_redirects, enable_http2;
    struct tls_raw tls;
    bool has_tls;
    struct authz_raw authz;
    bool has_authz;
    struct basic_raw basic;
    bool has_basic;
    char *bearer_token, *bearer_token_file;
};

static const struct pg_field remote_tls_fields[] = {
    PG_FIELD(struct tls_raw, "ca_file", PG_FT_STR, ca_file, NULL, "CA bundle (PEM)"),
    PG_FIELD(struct tls_raw, "cert_file", PG_FT_STR, cert_file, NULL, "client certificate"),
    PG_FIELD(struct tls_raw, "key_file", PG_FT_STR, key_file, NULL, "client key"),
    PG_FIELD(struct tls_raw, "server_name_override", PG_FT_STR, server_name, NULL, NULL),
    PG_FIELD(struct tls_raw, "insecure_skip_verify", PG_FT_BOOL, insecure_skip_verify, "false",
             NULL),
    PG_FIELD(struct tls_raw, "insecure", PG_FT_BOOL, insecure, "false",
             "plain http for an endpoint " "without a scheme"),
    PG_FIELD_END,
};
static const struct pg_field basic_fields[] = {
    PG_FIELD(struct basic_raw, "username", PG_FT_STR, username, NULL, NULL),
    PG_FIELD(struct basic_raw, "password", PG_FT_STR, password, NULL, NULL),
    PG_FIELD(struct basic_raw, "password_file", PG_FT_STR, password_file, NULL, NULL),
    PG_FIELD_END,
};

/* Documentation only (`pprofgate components`): profiling_config, the
 * names under pprof_config, attach_metadata and params are walked by hand
 * below; these tables list their keys. */
struct keep_raw {
    char *type, *unit;
};
static const struct pg_field keep_fields[] = {
    PG_FIELD(struct keep_raw, "type", PG_FT_STR, type, NULL, NULL),
    PG_FIELD(struct keep_raw, "unit", PG_FT_STR, unit, NULL, NULL),
    PG_FIELD_END,
};
struct profile_raw {
    bool enabled, delta;
    char *path;
    int64_t seconds;
    const struct pg_cfg_node *keep;
};
static const struct pg_field profile_fields[] = {
    PG_FIELD(struct profile_raw, "enabled", PG_FT_BOOL, enabled, "true",
             "a listed entry is enabled"),
    PG_FIELD(struct profile_raw, "path", PG_FT_STR, path, NULL,
             "default: Parca's path for the name"),
    PG_FIELD(struct profile_raw, "delta", PG_FT_BOOL, delta, "false",
             "add ?seconds= (not inherited)"),
    PG_FIELD_RANGE(struct profile_raw, "seconds", PG_FT_INT, seconds, "0", 0, 86400,
                   "0 = scrape_interval"),
    PG_FIELD_NODE_DOC(struct profile_raw, "keep_sample_type", keep, keep_fields, PG_SHAPE_LIST,
                      "sample types to keep (default: all)"),
    PG_FIELD_END,
};
struct group_raw {
    struct pg_strlist targets;
    struct pg_strmap labels;
};
static const struct pg_field group_fields[] = {
    PG_FIELD(struct group_raw, "targets", PG_FT_STRLIST, targets, NULL, "host:port"),
    PG_FIELD(struct group_raw, "labels", PG_FT_STRMAP, labels, NULL, NULL),
    PG_FIELD_END,
};
static const struct pg_field profiling_doc[] = {
    PG_FIELD(struct doc_raw, "path_prefix", PG_FT_STR, node, NULL,
             "prepended to every profile's path"),
    PG_FIELD_NODE_DOC(struct doc_raw, "pprof_config", node, profile_fields, PG_SHAPE_NAMED,
                      "profile name to settings; default memory (/debug/pprof/allocs), block, "
                      "goroutine, mutex (/debug/pprof/<name>) and process_cpu "
                      "(/debug/pprof/profile, delta), as Parca; a listed name replaces its default"),
    PG_FIELD_END,
};
static const struct pg_field params_doc[] = {
    PG_FIELD(struct doc_raw, "<name>", PG_FT_STRLIST, node, NULL,
             "values of one query parameter"),
    PG_FIELD_END,
};

static const struct pg_field job_fields[] = {
    PG_FIELD(struct job_raw, "job_name", PG_FT_STR, job_name, NULL, "required, unique"),
    PG_FIELD_NODE_DOC(struct job_raw, "params", params, params_doc, PG_SHAPE_MAP,
                      "query parameters added to every scrape URL"),
    PG_FIELD(struct job_raw, "scrape_interval", PG_FT_DURATION, scrape_interval, "10s", NULL),
    PG_FIELD(struct job_raw, "scrape_timeout", PG_FT_DURATION, scrape_timeout, "0",
             "0 = scrape_interval + 3s, as Parca (13s at the default interval)"),
    PG_FIELD(struct job_raw, "scheme", PG_FT_STR, scheme, "http", "http or https"),
    PG_FIELD(struct job_raw, "normalized_addresses", PG_FT_BOOL, normalized_addresses, "false",
             "accepted for Parca compatibility; no effect"),
    PG_FIELD_NODE_DOC(struct job_raw, "profiling_config", profiling_config, profiling_doc,
                      PG_SHAPE_MAP, "which profiles to scrape (Parca's keys)"),
    PG_FIELD_NODE_DOC(struct job_raw, "relabel_configs", relabel_configs, pg_relabel_fields,
                      PG_SHAPE_LIST, "Prometheus relabeling, applied to every discovered target"),
    PG_FIELD_NODE_DOC(struct job_raw, "static_configs", static_configs, group_fields,
                      PG_SHAPE_LIST, "fixed targets"),
    PG_FIELD_NODE_DOC(struct job_raw, "file_sd_configs", file_sd_configs, pg_scrape_file_sd_fields,
                      PG_SHAPE_LIST, "targets from JSON/YAML files, re-read when changed"),
    PG_FIELD_NODE_DOC(struct job_raw, "kubernetes_sd_configs", kubernetes_sd_configs, pg_scrape_k8s_fields,
                      PG_SHAPE_LIST, "pods from the Kubernetes API (list/watch)"),
    PG_FIELD(struct job_raw, "follow_redirects", PG_FT_BOOL, follow_redirects, "true",
             "up to 10 redirects, same scheme"),
    PG_FIELD(struct job_raw, "enable_http2", PG_FT_BOOL, enable_http2, "true",
             "accepted; scrapes use HTTP/1.1"),
    PG_FIELD_SECTION_PRESENT(struct job_raw, "tls_config", tls, pg_scrape_tls_fields, has_tls,
                             "https targets"),
    PG_FIELD_SECTION_PRESENT(struct job_raw, "authorization", authz, pg_scrape_authz_fields, has_authz,
                             "Authorization header"),
    PG_FIELD_SECTION_PRESENT(struct job_raw, "basic_auth", basic, basic_fields, has_basic, NULL),
    PG_FIELD(struct job_raw, "bearer_token", PG_FT_STR, bearer_token, NULL, NULL),
    PG_FIELD(struct job_raw, "bearer_token_file", PG_FT_STR, bearer_token_file, NULL, NULL),
    PG_FIELD_END,
};

struct scrape_raw {
    const struct pg_cfg_node *scrape_configs;
    struct pg_strmap external_labels;
};
const struct pg_field pg_scrape_fields[] = {
    PG_FIELD_NODE_DOC(struct scrape_raw, "scrape_configs", scrape_configs, job_fields,
                      PG_SHAPE_LIST, "one job per entry (Parca's scrape_configs)"),
    PG_FIELD(struct scrape_raw, "external_labels", PG_FT_STRMAP, external_labels, NULL,
             "added to every target (target labels win)"),
    PG_FIELD_END,
};

struct remote_raw {
    char *endpoint;
    int64_t collection_interval, initial_delay, timeout;
    struct pg_strmap headers;
    struct tls_raw tls;
    bool has_tls;
    char *compression;
};
const struct pg_field pg_scrape_remote_fields[] = {
    PG_FIELD(struct remote_raw, "endpoint", PG_FT_STR, endpoint, NULL, "URL of one pprof endpoint"),
    PG_FIELD(struct remote_raw, "collection_interval", PG_FT_DURATION, collection_interval, "10s",
             NULL),
    PG_FIELD(struct remote_raw, "initial_delay", PG_FT_DURATION, initial_delay, "1s", NULL),
    PG_FIELD(struct remote_raw, "timeout", PG_FT_DURATION, timeout, "0",
             "0 = collection_interval (10s by default)"),
    PG_FIELD(struct remote_raw, "headers", PG_FT_STRMAP, headers, NULL, NULL),
    PG_FIELD_SECTION_PRESENT(struct remote_raw, "tls", tls, remote_tls_fields, has_tls, NULL),
    PG_FIELD(struct remote_raw, "compression", PG_FT_STR, compression, NULL, "accepted; no effect"),
    PG_FIELD_END,
};

/* ---- helpers ------------------------------------------------------------ */

static char *join_path(struct pg_arena *a, const char *prefix, const char *path)
{
    size_t pl = prefix ? strlen(prefix) : 0;

    while (pl > 0 && prefix[pl - 1] == '/') {
        pl--;
    }
    while (*path == '/') {
        path++;
    }
    return pg_arena_sprintf(a, "%s%.*s/%s", pl > 0 && prefix[0] != '/' ? "/" : "", (int)pl,
                            pl ? prefix : "", path);
}

static size_t parse_params(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *n,
                           const char *path, struct pg_strmap *out)
{
    size_t total = 0;

    memset(out, 0, sizeof(*out));
    if (n == NULL || n->kind == PG_CFG_NULL) {
        return 0;
    }
    if (n->kind != PG_CFG_MAP) {
        pg_diag_add(d, n, path, "params must map names to lists of values");
        return 1;
    }
    for (size_t i = 0; i < n->n; i++) {
        total += n->items[i]->kind == PG_CFG_SEQ ? n->items[i]->n : 1;
    }
    out->keys = pg_arena_calloc(a, total + 1, sizeof(char *));
    out->values = pg_arena_calloc(a, total + 1, sizeof(char *));
    if (out->keys == NULL || out->values == NULL) {
        return 1;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct pg_cfg_node *v = n->items[i];
        size_t m = v->kind == PG_CFG_SEQ ? v->n : 1;

        for (size_t j = 0; j < m; j++) {
            const struct pg_cfg_node *s = v->kind == PG_CFG_SEQ ? v->items[j] : v;

            if (s->kind != PG_CFG_SCALAR) {
                pg_diag_add(d, s, path, "params: \"%s\" values must be strings", n->keys[i]->value);
                return 1;
            }
            out->keys[out->n] = pg_arena_strdup(a, n->keys[i]->value);
            out->values[out->n++] = pg_arena_strdup(a, s->value);
        }
    }
    return 0;
}

static size_t parse_keep(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *n,
                         const char *path, struct pg_scrape_profile *p)
{
    size_t problems = 0;

    if (n == NULL || n->kind == PG_CFG_NULL) {
        return 0;
    }
    if (n->kind != PG_CFG_SEQ) {
        pg_diag_add(d, n, path, "keep_sample_type must be a list of {type, unit}");
        return 1;
    }
    p->keep = pg_arena_calloc(a, n->n + 1, sizeof(*p->keep));
    if (p->keep == NULL) {
        return 1;
    }
    for (size_t i = 0; i < n->n; i++) {
        struct keep_raw k;
        char ip[300];

        pg_scrape_pathf(ip, sizeof(ip), "%s::keep_sample_type[%zu]", path, i);
        problems += pg_cfg_bind(a, d, n->items[i], keep_fields, &k, ip);
        if (k.type == NULL || k.type[0] == '\0') {
            pg_diag_add(d, n->items[i], ip, "type is required");
            problems++;
        }
        p->keep[p->n_keep].type = k.type;
        p->keep[p->n_keep++].unit = k.unit != NULL && k.unit[0] != '\0' ? k.unit : NULL;
    }
    return problems;
}

static size_t parse_profiles(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *pc,
                             const char *path, struct pg_scrape_job *job)
{
    const struct pg_cfg_node *pp = NULL;
    size_t problems = 0, cap;
    char p[300];

    pg_scrape_pathf(p, sizeof(p), "%s::profiling_config", path);
    if (pc != NULL && pc->kind != PG_CFG_NULL) {
        if (pc->kind != PG_CFG_MAP) {
            pg_diag_add(d, pc, p, "expected a mapping");
            return 1;
        }
        for (size_t i = 0; i < pc->n; i++) {
            const char *k = pc->keys[i]->value;

            if (strcmp(k, "path_prefix") == 0) {
                job->path_prefix = pc->items[i]->kind == PG_CFG_SCALAR
                                       ? pg_arena_strdup(a, pc->items[i]->value)
                                       : NULL;
            } else if (strcmp(k, "pprof_config") == 0) {
                pp = pc->items[i];
            } else {
                pg_diag_add(d, pc->keys[i], p, "unknown key \"%s\" (valid: path_prefix, "
                                               "pprof_config)", k);
                problems++;
            }
            pc->keys[i]->used = true;
        }
    }
    if (pp != NULL && pp->kind != PG_CFG_MAP && pp->kind != PG_CFG_NULL) {
        pg_diag_add(d, pp, p, "pprof_config must map profile names to settings");
        return problems + 1;
    }
    cap = N_DEFAULT_PROFILES + (pp != NULL ? pp->n : 0);
    job->profiles = calloc(cap, sizeof(*job->profiles));
    if (job->profiles == NULL) {
        return problems + 1;
    }
    /* Defaults first, in Parca's order; a listed entry replaces its default. */
    for (size_t i = 0; i < N_DEFAULT_PROFILES; i++) {
        struct pg_scrape_profile *prof = &job->profiles[job->n_profiles++];

        prof->name = (char *)default_profiles[i].name;
        prof->path = join_path(a, job->path_prefix, default_profiles[i].path);
        prof->enabled = true;
        prof->delta = default_profiles[i].delta;
    }
    for (size_t i = 0; pp != NULL && i < pp->n; i++) {
        const char *name = pp->keys[i]->value;
        struct pg_scrape_profile *prof = NULL;
        const char *dpath = NULL;
        struct profile_raw r;
        char ep[400];

        pg_scrape_pathf(ep, sizeof(ep), "%s::pprof_config::%s", p, name);
        for (size_t j = 0; j < N_DEFAULT_PROFILES; j++) {
            if (strcmp(default_profiles[j].name, name) == 0) {
                prof = &job->profiles[j];
                dpath = default_profiles[j].path;
            }
        }
        if (prof == NULL) {
            prof = &job->profiles[job->n_profiles++];
            prof->name = pg_arena_strdup(a, name);
        }
        problems += pg_cfg_bind(a, d, pp->items[i], profile_fields, &r, ep);
        if ((r.path == NULL || r.path[0] == '\0') && dpath == NULL) {
            pg_diag_add(d, pp->items[i], ep, "a custom profile needs a path");
            problems++;
            continue;
        }
        prof->enabled = r.enabled;
        prof->delta = r.delta; /* Parca: not inherited from the default */
        prof->seconds = r.seconds;
        prof->path = join_path(a, job->path_prefix, r.path && r.path[0] ? r.path : dpath);
        problems += parse_keep(a, d, r.keep, ep, prof);
        if (strcmp(name, "process_cpu") == 0 && prof->enabled && !prof->delta &&
            prof->seconds == 0 && job->timeout_ns <= 30 * NS) {
            pg_log_warn(LOG_NAME,
                        "%s: process_cpu is listed without delta: true, so no ?seconds= is sent, a "
                        "Go target profiles for its default 30s and the %.3gs scrape_timeout ends "
                        "every scrape (Parca does not inherit delta)",
                        ep, (double)job->timeout_ns / 1e9);
        }
        if (strcmp(name, "memory") == 0 && prof->enabled &&
            (prof->delta || prof->seconds > 0)) {
            bool inuse = prof->n_keep == 0;

            for (size_t k = 0; k < prof->n_keep; k++) {
                inuse = inuse || strncmp(prof->keep[k].type, "inuse_", 6) == 0;
            }
            if (inuse) {
                pg_log_warn(LOG_NAME,
                            "%s: with ?seconds= Go returns the difference of two heap snapshots, "
                            "so inuse_* become changes of the live heap, not its size",
                            ep);
            }
        }
    }
    return problems;
}

int64_t pg_scrape_profile_seconds(const struct pg_scrape_job *job,
                                  const struct pg_scrape_profile *p)
{
    if (p->seconds > 0) {
        return p->seconds;
    }
    if (!p->delta) {
        return 0;
    }
    return job->interval_ns / NS > 0 ? job->interval_ns / NS : 1;
}

static size_t parse_groups(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *n,
                           const char *path, struct pg_scrape_job *job)
{
    size_t problems = 0;

    if (n == NULL || n->kind == PG_CFG_NULL) {
        return 0;
    }
    if (n->kind != PG_CFG_SEQ) {
        pg_diag_add(d, n, path, "static_configs must be a list");
        return 1;
    }
    job->groups = calloc(n->n + 1, sizeof(*job->groups));
    if (job->groups == NULL) {
        return 1;
    }
    for (size_t i = 0; i < n->n; i++) {
        struct group_raw g;
        char p[300];

        pg_scrape_pathf(p, sizeof(p), "%s::static_configs[%zu]", path, i);
        problems += pg_cfg_bind(a, d, n->items[i], group_fields, &g, p);
        job->groups[job->n_groups].targets = g.targets;
        job->groups[job->n_groups++].labels = g.labels;
    }
    return problems;
}

static void copy_tls(struct pg_scrape_client *c, const struct tls_raw *t)
{
    c->ca_file = t->ca_file;
    c->cert_file = t->cert_file;
    c->key_file = t->key_file;
    c->server_name = t->server_name;
    c->insecure_skip_verify = t->insecure_skip_verify;
}

static size_t parse_job(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *item,
                        const char *p, struct pg_scrape_job *job)
{
    struct job_raw r;
    size_t problems = pg_cfg_bind(a, d, item, job_fields, &r, p);
    char rp[300];

    job->job_name = r.job_name;
    job->interval_ns = r.scrape_interval;
    job->timeout_ns = r.scrape_timeout;
    job->initial_delay_ns = -1;
    job->scheme = r.scheme;
    job->client.follow_redirects = r.follow_redirects;
    if (job->job_name == NULL || job->job_name[0] == '\0') {
        pg_diag_add(d, item, p, "job_name is required");
        problems++;
    }
    if (job->interval_ns < NS) {
        pg_diag_add(d, pg_cfg_get(item, "scrape_interval"), p, "scrape_interval must be >= 1s");
        problems++;
        job->interval_ns = NS;
    }
    if (job->timeout_ns == 0) {
        job->timeout_ns = job->interval_ns + 3 * NS;
    }
    if (job->scheme == NULL ||
        (strcmp(job->scheme, "http") != 0 && strcmp(job->scheme, "https") != 0)) {
        pg_diag_add(d, pg_cfg_get(item, "scheme"), p, "scheme must be http or https");
        problems++;
    }
    problems += pg_scrape_parse_k8s_sd(a, d, r.kubernetes_sd_configs, p, job);
    problems += parse_params(a, d, r.params, p, &job->params);
    problems += parse_profiles(a, d, r.profiling_config, p, job);
    pg_scrape_pathf(rp, sizeof(rp), "%s::relabel_configs", p);
    problems += pg_relabel_parse(a, d, r.relabel_configs, rp, &job->relabel, &job->n_relabel);
    problems += parse_groups(a, d, r.static_configs, p, job);
    problems += pg_scrape_parse_file_sd(a, d, r.file_sd_configs, p, job);
    if (r.has_tls) {
        copy_tls(&job->client, &r.tls);
    }
    if (r.has_authz) {
        job->client.auth_type = r.authz.type;
        job->client.credentials = r.authz.credentials;
        job->client.credentials_file = r.authz.credentials_file;
    }
    if (r.has_basic) {
        job->client.basic_user = r.basic.username;
        job->client.basic_password = r.basic.password;
        job->client.basic_password_file = r.basic.password_file;
    }
    job->client.bearer_token = r.bearer_token;
    job->client.bearer_token_file = r.bearer_token_file;
    for (size_t i = 0; i < job->n_profiles; i++) {
        const struct pg_scrape_profile *prof = &job->profiles[i];
        int64_t s = pg_scrape_profile_seconds(job, prof);

        if (prof->enabled && s > 0 && s * NS >= job->timeout_ns) {
            pg_diag_add(d, item, p,
                        "profile %s asks for %llds of data (seconds=%lld) but scrape_timeout is "
                        "%.3gs: the timeout must be longer",
                        prof->name, (long long)s, (long long)s, (double)job->timeout_ns / 1e9);
            problems++;
        }
    }
    return problems;
}

/* remote.endpoint "http://h:p/path?q" -> one static target and one profile. */
static size_t parse_remote(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *n,
                           const char *path, struct pg_scrape_job *job)
{
    struct remote_raw r;
    size_t problems;
    char p[300];
    const char *ep, *rest, *slash;
    char *hostport;

    pg_scrape_pathf(p, sizeof(p), "%s::remote", path);
    problems = pg_cfg_bind(a, d, n, pg_scrape_remote_fields, &r, p);
    if (r.endpoint == NULL || r.endpoint[0] == '\0') {
        pg_diag_add(d, n, p, "remote.endpoint must be specified");
        return problems + 1;
    }
    ep = r.endpoint;
    job->scheme = r.has_tls && !r.tls.insecure ? "https" : "http";
    if (strncmp(ep, "http://", 7) == 0) {
        job->scheme = "http";
        rest = ep + 7;
    } else if (strncmp(ep, "https://", 8) == 0) {
        job->scheme = "https";
        rest = ep + 8;
    } else if (strstr(ep, "://") != NULL) {
        pg_diag_add(d, n, p, "remote.endpoint \"%s\": scheme must be http or https", ep);
        return problems + 1;
    } else {
        rest = ep;
    }
    slash = strchr(rest, '/');
    hostport = slash ? pg_arena_strndup(a, rest, (size_t)(slash - rest)) : pg_arena_strdup(a, rest);
    if (hostport == NULL || hostport[0] == '\0') {
        pg_diag_add(d, n, p, "remote.endpoint \"%s\" has no host", ep);
        return problems + 1;
    }
    job->job_name = "remote";
    job->is_remote = true;
    job->interval_ns = r.collection_interval > 0 ? r.collection_interval : 10 * NS;
    job->timeout_ns = r.timeout > 0 ? r.timeout : job->interval_ns;
    job->initial_delay_ns = r.initial_delay;
    job->client.headers = r.headers;
    job->client.follow_redirects = true; /* Go's client, as upstream */
    if (r.has_tls) {
        copy_tls(&job->client, &r.tls);
    }
    job->profiles = calloc(1, sizeof(*job->profiles));
    job->groups = calloc(1, sizeof(*job->groups));
    if (job->profiles == NULL || job->groups == NULL) {
        return problems + 1;
    }
    job->n_profiles = 1;
    job->profiles[0].name = "remote";
    job->profiles[0].path = pg_arena_strdup(a, slash ? slash : "/");
    job->profiles[0].enabled = true;
    job->n_groups = 1;
    job->groups[0].targets.n = 1;
    job->groups[0].targets.v = pg_arena_calloc(a, 1, sizeof(char *));
    if (job->groups[0].targets.v == NULL) {
        return problems + 1;
    }
    job->groups[0].targets.v[0] = hostport;
    return problems;
}

size_t pg_scrape_config_parse(struct pg_arena *arena, struct pg_diag *diag,
                              const struct pg_cfg_node *scrape, const struct pg_cfg_node *remote,
                              const char *path, struct pg_scrape_config *out)
{
    struct scrape_raw r = {0};
    const struct pg_cfg_node *list;
    size_t problems = 0, cap = 1;
    char p[300];

    memset(out, 0, sizeof(*out));
    pg_scrape_pathf(p, sizeof(p), "%s::scrape", path);
    if (scrape != NULL) {
        problems += pg_cfg_bind(arena, diag, scrape, pg_scrape_fields, &r, p);
        out->external_labels = r.external_labels;
    }
    list = r.scrape_configs;
    if (list != NULL && list->kind != PG_CFG_SEQ && list->kind != PG_CFG_NULL) {
        pg_diag_add(diag, list, p, "scrape_configs must be a list");
        return problems + 1;
    }
    if (list != NULL && list->kind == PG_CFG_SEQ) {
        cap += list->n;
    }
    out->jobs = calloc(cap, sizeof(*out->jobs));
    if (out->jobs == NULL) {
        pg_diag_add(diag, scrape, p, "out of memory");
        return problems + 1;
    }
    for (size_t i = 0; list != NULL && list->kind == PG_CFG_SEQ && i < list->n; i++) {
        struct pg_scrape_job *job = &out->jobs[out->n_jobs++];
        char jp[300];

        pg_scrape_pathf(jp, sizeof(jp), "%s::scrape_configs[%zu]", p, i);
        if (list->items[i]->kind != PG_CFG_MAP) {
            pg_diag_add(diag, list->items[i], jp, "expected a mapping");
            problems++;
            continue;
        }
        problems += parse_job(arena, diag, list->items[i], jp, job);
        for (size_t j = 0; j + 1 < out->n_jobs && job->job_name; j++) {
            if (out->jobs[j].job_name && strcmp(out->jobs[j].job_name, job->job_name) == 0) {
                pg_diag_add(diag, list->items[i], jp, "job_name \"%s\" is used twice",
                            job->job_name);
                problems++;
            }
        }
    }
    if (remote != NULL) {
        problems += parse_remote(arena, diag, remote, path, &out->jobs[out->n_jobs++]);
    }
    return problems;
}

void pg_scrape_config_free(struct pg_scrape_config *cfg)
{
    for (size_t i = 0; cfg != NULL && i < cfg->n_jobs; i++) {
        struct pg_scrape_job *j = &cfg->jobs[i];

        pg_relabel_rules_free(j->relabel, j->n_relabel);
        free(j->profiles);
        free(j->groups);
        free(j->file_sd);
        free(j->k8s_sd);
    }
    if (cfg != NULL) {
        free(cfg->jobs);
        memset(cfg, 0, sizeof(*cfg));
    }
}

void pg_scrape_job_describe(const struct pg_scrape_job *job, char *buf, size_t cap)
{
    size_t off = 0;
    int any = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < job->n_profiles && off < cap; i++) {
        const struct pg_scrape_profile *p = &job->profiles[i];
        int64_t s = pg_scrape_profile_seconds(job, p);

        if (!p->enabled) {
            continue;
        }
        off += (size_t)snprintf(buf + off, cap - off, "%s%s %s", any++ ? "; " : "", p->name,
                                p->path);
        if (s > 0 && off < cap) {
            off += (size_t)snprintf(buf + off, cap - off, "?seconds=%lld", (long long)s);
        }
        for (size_t k = 0; k < p->n_keep && off < cap; k++) {
            off += (size_t)snprintf(buf + off, cap - off, "%s%s%s%s", k ? "," : " keep ",
                                    p->keep[k].type, p->keep[k].unit ? "/" : "",
                                    p->keep[k].unit ? p->keep[k].unit : "");
        }
    }
    if (!any) {
        snprintf(buf, cap, "(no profile enabled)");
    }
}
