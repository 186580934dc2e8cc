/* SPDX-License-Identifier: Apache-2.0
 * The sub-sections of a scrape job's config: the client's tls_config and
 * authorization tables, and the discovery sections file_sd_configs and
 * kubernetes_sd_configs (tables, binding and checks). */
#include "scrape/scrape_config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "scrape/relabel.h"

#define NS 1000000000LL

/* ---- field tables ------------------------------------------------------ */

const struct pg_field pg_scrape_tls_fields[] = {
    PG_FIELD(struct tls_raw, "ca_file", PG_FT_STR, ca_file, NULL, "CA bundle (PEM)"),
    PG_FIELD(struct tls_raw, "cert_file", PG_FT_STR, cert_file, NULL, "client certificate"),
    PG_FIELD(struct tls_raw, "key_file", PG_FT_STR, key_file, NULL, "client key"),
    PG_FIELD(struct tls_raw, "server_name", PG_FT_STR, server_name, NULL, "SNI and name to verify"),
    PG_FIELD(struct tls_raw, "insecure_skip_verify", PG_FT_BOOL, insecure_skip_verify, "false",
             NULL),
    PG_FIELD_END,
};
/* The collector's configtls spelling, for remote: */
const struct pg_field pg_scrape_authz_fields[] = {
    PG_FIELD(struct authz_raw, "type", PG_FT_STR, type, "Bearer", NULL),
    PG_FIELD(struct authz_raw, "credentials", PG_FT_STR, credentials, NULL, NULL),
    PG_FIELD(struct authz_raw, "credentials_file", PG_FT_STR, credentials_file, NULL,
             "re-read at every scrape"),
    PG_FIELD_END,
};
static const struct pg_field attach_doc[] = {
    PG_FIELD(struct doc_raw, "node", PG_FT_BOOL, node, "false", "true is not supported"),
    PG_FIELD(struct doc_raw, "namespace", PG_FT_BOOL, node, "false", "true is not supported"),
    PG_FIELD_END,
};
struct ns_raw {
    struct pg_strlist names;
    bool own_namespace;
};
static const struct pg_field ns_fields[] = {
    PG_FIELD(struct ns_raw, "names", PG_FT_STRLIST, names, NULL, NULL),
    PG_FIELD(struct ns_raw, "own_namespace", PG_FT_BOOL, own_namespace, "false", NULL),
    PG_FIELD_END,
};
struct sel_raw {
    char *role, *label, *field;
};
static const struct pg_field sel_fields[] = {
    PG_FIELD(struct sel_raw, "role", PG_FT_STR, role, NULL, "pod (the only role)"),
    PG_FIELD(struct sel_raw, "label", PG_FT_STR, label, NULL, "label selector, e.g. app=x,tier!=db"),
    PG_FIELD(struct sel_raw, "field", PG_FT_STR, field, NULL,
             "field selector, e.g. spec.nodeName=${env:K8S_NODE_NAME}"),
    PG_FIELD_END,
};
struct k8s_raw {
    char *role, *api_server, *kubeconfig_file, *bearer_token, *bearer_token_file;
    struct ns_raw ns;
    bool has_ns;
    const struct pg_cfg_node *selectors, *attach_metadata;
    struct tls_raw tls;
    bool has_tls;
    struct authz_raw authz;
    bool has_authz;
    bool follow_redirects, enable_http2;
};
const struct pg_field pg_scrape_k8s_fields[] = {
    PG_FIELD(struct k8s_raw, "role", PG_FT_STR, role, NULL, "pod (required; the only role)"),
    PG_FIELD(struct k8s_raw, "api_server", PG_FT_STR, api_server, NULL,
             "https URL; unset = in-cluster (KUBERNETES_SERVICE_HOST, the pod's token and CA)"),
    PG_FIELD(struct k8s_raw, "kubeconfig_file", PG_FT_STR, kubeconfig_file, NULL,
             "not supported (use api_server with tls_config and authorization)"),
    PG_FIELD_SECTION_PRESENT(struct k8s_raw, "namespaces", ns, ns_fields, has_ns,
                             "unset = every namespace"),
    PG_FIELD_NODE_DOC(struct k8s_raw, "selectors", selectors, sel_fields, PG_SHAPE_LIST,
                      "server-side label/field selectors"),
    PG_FIELD_NODE_DOC(struct k8s_raw, "attach_metadata", attach_metadata, attach_doc, PG_SHAPE_MAP,
                      NULL),
    PG_FIELD_SECTION_PRESENT(struct k8s_raw, "tls_config", tls, pg_scrape_tls_fields, has_tls,
                             "for api_server"),
    PG_FIELD_SECTION_PRESENT(struct k8s_raw, "authorization", authz, pg_scrape_authz_fields, has_authz,
                             "for api_server"),
    PG_FIELD(struct k8s_raw, "bearer_token", PG_FT_STR, bearer_token, NULL, NULL),
    PG_FIELD(struct k8s_raw, "bearer_token_file", PG_FT_STR, bearer_token_file, NULL, NULL),
    PG_FIELD(struct k8s_raw, "follow_redirects", PG_FT_BOOL, follow_redirects, "true", NULL),
    PG_FIELD(struct k8s_raw, "enable_http2", PG_FT_BOOL, enable_http2, "true", "accepted"),
    PG_FIELD_END,
};
const struct pg_field pg_scrape_file_sd_fields[] = {
    PG_FIELD(struct pg_scrape_file_sd, "files", PG_FT_STRLIST, files, NULL,
             "*.json, *.yml, *.yaml"),
    PG_FIELD(struct pg_scrape_file_sd, "refresh_interval", PG_FT_DURATION, refresh_interval_ns,
             "5m", NULL),
    PG_FIELD_END,
};

/* ---- binding ------------------------------------------------------------- */

static bool sd_file_ok(const char *f)
{
    const char *dot = strrchr(f, '.');
    const char *slash = strrchr(f, '/');

    if (dot == NULL || (slash != NULL && dot < slash)) {
        return false;
    }
    if (strcasecmp(dot, ".json") != 0 && strcasecmp(dot, ".yml") != 0 &&
        strcasecmp(dot, ".yaml") != 0) {
        return false;
    }
    /* Prometheus: globbing only in the last path element. */
    return slash == NULL || strpbrk(f, "*?[") == NULL || strpbrk(f, "*?[") > slash;
}

size_t pg_scrape_parse_file_sd(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *n,
                            const char *path, struct pg_scrape_job *job)
{
    size_t problems = 0;

    if (n == NULL || n->kind == PG_CFG_NULL) {
        return 0;
    }
    if (n->kind != PG_CFG_SEQ) {
        pg_diag_add(d, n, path, "file_sd_configs must be a list");
        return 1;
    }
    job->file_sd = calloc(n->n + 1, sizeof(*job->file_sd));
    if (job->file_sd == NULL) {
        return 1;
    }
    for (size_t i = 0; i < n->n; i++) {
        struct pg_scrape_file_sd *f = &job->file_sd[job->n_file_sd++];
        char p[300];

        pg_scrape_pathf(p, sizeof(p), "%s::file_sd_configs[%zu]", path, i);
        problems += pg_cfg_bind(a, d, n->items[i], pg_scrape_file_sd_fields, f, p);
        for (size_t j = 0; j < f->files.n; j++) {
            if (!sd_file_ok(f->files.v[j])) {
                pg_diag_add(d, n->items[i], p,
                            "\"%s\": file names must end in .json, .yml or .yaml, with globs only "
                            "in the last path element",
                            f->files.v[j]);
                problems++;
            }
        }
        if (f->refresh_interval_ns < NS) {
            f->refresh_interval_ns = NS;
        }
    }
    return problems;
}


static char *join_sel(struct pg_arena *a, char *prev, const char *add)
{
    if (add == NULL || add[0] == '\0') {
        return prev;
    }
    return prev == NULL ? pg_arena_strdup(a, add) : pg_arena_sprintf(a, "%s,%s", prev, add);
}

/* attach_metadata: node/namespace metadata would need a node or namespace
 * watch, which is not built: `true` is refused (relabel rules reading
 * __meta_kubernetes_node_* would otherwise silently see nothing); `false`
 * is what happens anyway. */
static size_t check_attach_metadata(struct pg_diag *d, const struct pg_cfg_node *n,
                                    const char *path)
{
    size_t problems = 0;

    if (n == NULL || n->kind == PG_CFG_NULL) {
        return 0;
    }
    if (n->kind != PG_CFG_MAP) {
        pg_diag_add(d, n, path, "attach_metadata must be a map (node: false)");
        return 1;
    }
    for (size_t i = 0; i < n->n; i++) {
        const char *key = n->keys[i]->value;
        const struct pg_cfg_node *v = n->items[i];
        bool on = false;

        if (strcmp(key, "node") != 0 && strcmp(key, "namespace") != 0) {
            pg_diag_add(d, n->keys[i], path, "attach_metadata.%s: unknown key (Prometheus has "
                                             "node and namespace)", key);
            problems++;
        } else if (v->kind != PG_CFG_SCALAR || !pg_parse_bool(v->value, &on)) {
            pg_diag_add(d, v, path, "attach_metadata.%s must be true or false", key);
            problems++;
        } else if (on) {
            pg_diag_add(d, v, path,
                        "attach_metadata.%s: true is not supported: pprofgate does not watch "
                        "%ss, so no __meta_kubernetes_%s_* labels would be attached; remove it "
                        "(or set it to false) and relabel from the pod's own labels "
                        "(__meta_kubernetes_pod_node_name for the node)",
                        key, key, key);
            problems++;
        }
    }
    return problems;
}

size_t pg_scrape_parse_k8s_sd(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *n,
                           const char *path, struct pg_scrape_job *job)
{
    size_t problems = 0;

    if (n == NULL || n->kind == PG_CFG_NULL) {
        return 0;
    }
    if (n->kind != PG_CFG_SEQ) {
        pg_diag_add(d, n, path, "kubernetes_sd_configs must be a list");
        return 1;
    }
    job->k8s_sd = calloc(n->n + 1, sizeof(*job->k8s_sd));
    if (job->k8s_sd == NULL) {
        return 1;
    }
    for (size_t i = 0; i < n->n; i++) {
        struct pg_scrape_k8s_sd *k = &job->k8s_sd[job->n_k8s_sd++];
        struct k8s_raw r;
        char p[300];

        pg_scrape_pathf(p, sizeof(p), "%s::kubernetes_sd_configs[%zu]", path, i);
        problems += pg_cfg_bind(a, d, n->items[i], pg_scrape_k8s_fields, &r, p);
        if (r.role == NULL || strcmp(r.role, "pod") != 0) {
            pg_diag_add(d, n->items[i], p, "role \"%s\" is not supported (only pod)",
                        r.role ? r.role : "");
            problems++;
        }
        if (r.kubeconfig_file != NULL) {
            pg_diag_add(d, n->items[i], p,
                        "kubeconfig_file is not supported; use api_server with tls_config and "
                        "authorization, or run in-cluster");
            problems++;
        }
        problems += check_attach_metadata(d, r.attach_metadata, p);
        if (r.api_server != NULL && strncmp(r.api_server, "https://", 8) != 0 &&
            strncmp(r.api_server, "http://", 7) != 0) {
            pg_diag_add(d, n->items[i], p, "api_server must start with https:// or http://");
            problems++;
        }
        k->role = r.role;
        k->api_server = r.api_server;
        k->namespaces = r.ns.names;
        k->own_namespace = r.ns.own_namespace;
        for (size_t j = 0; r.selectors != NULL && r.selectors->kind == PG_CFG_SEQ &&
                           j < r.selectors->n; j++) {
            struct sel_raw sr;
            char sp[400];

            pg_scrape_pathf(sp, sizeof(sp), "%s::selectors[%zu]", p, j);
            problems += pg_cfg_bind(a, d, r.selectors->items[j], sel_fields, &sr, sp);
            if (sr.role == NULL || strcmp(sr.role, "pod") != 0) {
                pg_diag_add(d, r.selectors->items[j], sp,
                            "role pod discovery takes only selectors with role: pod");
                problems++;
                continue;
            }
            k->label_selector = join_sel(a, k->label_selector, sr.label);
            k->field_selector = join_sel(a, k->field_selector, sr.field);
        }
        if (r.selectors != NULL && r.selectors->kind != PG_CFG_SEQ &&
            r.selectors->kind != PG_CFG_NULL) {
            pg_diag_add(d, r.selectors, p, "selectors must be a list");
            problems++;
        }
        if (r.has_tls) {
            k->ca_file = r.tls.ca_file;
            k->cert_file = r.tls.cert_file;
            k->key_file = r.tls.key_file;
            k->server_name = r.tls.server_name;
            k->insecure_skip_verify = r.tls.insecure_skip_verify;
        }
        if (r.has_authz) {
            k->auth_type = r.authz.type;
            k->credentials = r.authz.credentials;
            k->credentials_file = r.authz.credentials_file;
        }
        k->bearer_token = r.bearer_token;
        k->bearer_token_file = r.bearer_token_file;
    }
    return problems;
}

