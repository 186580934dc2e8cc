/* SPDX-License-Identifier: Apache-2.0
 * What scrape_config.c takes from scrape_config_sd.c: the raw binding types
 * both bind into and the sub-section tables and parsers (calls go
 * scrape_config.c -> scrape_config_sd.c, never back). */
#ifndef PG_SCRAPE_CONFIG_INTERNAL_H
#define PG_SCRAPE_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "scrape/scrape_config.h"

struct tls_raw {
    char *ca_file, *cert_file, *key_file, *server_name;
    bool insecure_skip_verify, insecure;
};
struct authz_raw {
    char *type, *credentials, *credentials_file;
};
struct doc_raw {
    const struct pg_cfg_node *node;
};
extern const struct pg_field pg_scrape_tls_fields[];
extern const struct pg_field pg_scrape_authz_fields[];
extern const struct pg_field pg_scrape_file_sd_fields[];
extern const struct pg_field pg_scrape_k8s_fields[];

/* file_sd_configs / kubernetes_sd_configs of one job at @path into @job;
 * returns the number of problems added to @d. */
size_t pg_scrape_parse_file_sd(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *n,
                               const char *path, struct pg_scrape_job *job);
size_t pg_scrape_parse_k8s_sd(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *n,
                              const char *path, struct pg_scrape_job *job);

#endif
