/* SPDX-License-Identifier: Apache-2.0
 * The pprof receiver's `scrape:` section (Parca's scrape_configs, keys
 * verbatim) and the upstream-compatible `remote:` section, bound into jobs
 * with Parca's defaults already applied: scrape_interval 10s, scrape_timeout
 * interval+3s, and the five Go profile types enabled unless an entry of
 * pprof_config says otherwise (a listed entry is enabled unless it says
 * `enabled: false`; `delta` is not inherited). Strings live in the config
 * arena; relabel rules and the job arrays are malloc'd
 * (pg_scrape_config_free). */
#ifndef PG_SCRAPE_SCRAPE_CONFIG_H
#define PG_SCRAPE_SCRAPE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "scrape/relabel.h"

struct pg_scrape_keep {
    char *type, *unit; /* unit NULL = any */
};

/* One effective profiling_config.pprof_config entry. */
struct pg_scrape_profile {
    char *name;
    char *path;           /* path_prefix already joined */
    bool enabled;
    bool delta;           /* adds ?seconds= */
    int64_t seconds;      /* 0 = scrape_interval in whole seconds when delta */
    struct pg_scrape_keep *keep; /* in the arena; n_keep 0 = keep all */
    size_t n_keep;
};

struct pg_scrape_group {   /* one static_configs item */
    struct pg_strlist targets;
    struct pg_strmap labels;
};

struct pg_scrape_file_sd {
    struct pg_strlist files;
    int64_t refresh_interval_ns;
};

/* kubernetes_sd_configs item, role pod (Prometheus keys). */
struct pg_scrape_k8s_sd {
    char *role;                    /* "pod" only */
    char *api_server;              /* NULL = in-cluster */
    struct pg_strlist namespaces;  /* empty = all (or own_namespace) */
    bool own_namespace;
    char *label_selector, *field_selector; /* from selectors (role pod), joined by "," */
    char *ca_file, *cert_file, *key_file, *server_name;
    bool insecure_skip_verify;
    char *auth_type, *credentials, *credentials_file, *bearer_token, *bearer_token_file;
};

/* Target-side HTTP client keys (Prometheus HTTPClientConfig subset). */
struct pg_scrape_client {
    char *ca_file, *cert_file, *key_file, *server_name;
    bool insecure_skip_verify;
    char *auth_type, *credentials, *credentials_file; /* authorization */
    char *bearer_token, *bearer_token_file;
    char *basic_user, *basic_password, *basic_password_file;
    struct pg_strmap headers;                         /* remote: headers */
    bool follow_redirects;                            /* Prometheus default: true */
};

struct pg_scrape_job {
    char *job_name;
    int64_t interval_ns, timeout_ns, initial_delay_ns; /* initial_delay: remote only (-1 = hash) */
    char *scheme;
    struct pg_strmap params;  /* a key repeated for each of its values, in config order */
    char *path_prefix;
    struct pg_scrape_profile *profiles; /* malloc'd */
    size_t n_profiles;
    struct pg_relabel_rule *relabel;    /* malloc'd */
    size_t n_relabel;
    struct pg_scrape_group *groups;     /* malloc'd */
    size_t n_groups;
    struct pg_scrape_file_sd *file_sd;  /* malloc'd */
    size_t n_file_sd;
    struct pg_scrape_k8s_sd *k8s_sd;    /* malloc'd */
    size_t n_k8s_sd;
    struct pg_scrape_client client;
    bool is_remote;                     /* built from `remote:` */
};

struct pg_scrape_config {
    struct pg_scrape_job *jobs; /* malloc'd */
    size_t n_jobs;
    struct pg_strmap external_labels;
};

/* The keys of `scrape:` and `remote:`, bound by pg_scrape_config_bind and
 * printed by `pprofgate components`. */
extern const struct pg_field pg_scrape_fields[];
extern const struct pg_field pg_scrape_remote_fields[];

/* Binds `scrape:` at @scrape and `remote:` at @remote (either may be NULL)
 * into @out. Returns the number of problems added to @diag. */
size_t pg_scrape_config_parse(struct pg_arena *arena, struct pg_diag *diag,
                              const struct pg_cfg_node *scrape, const struct pg_cfg_node *remote,
                              const char *path, struct pg_scrape_config *out);
void pg_scrape_config_free(struct pg_scrape_config *cfg);
/* One line per job naming its effective profile set, e.g.
 * "memory GET /debug/pprof/allocs keep inuse_space/bytes; process_cpu GET
 * /debug/pprof/profile?seconds=10". */
void pg_scrape_job_describe(const struct pg_scrape_job *job, char *buf, size_t cap);
/* The seconds= value a profile adds, or 0 for none. */
int64_t pg_scrape_profile_seconds(const struct pg_scrape_job *job,
                                  const struct pg_scrape_profile *p);

#endif
