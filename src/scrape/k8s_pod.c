/* SPDX-License-Identifier: Apache-2.0
 * Kubernetes pods -> scrape targets: the JSON field helpers and the mapping
 * of one pod object to its targets and their __meta_kubernetes_* labels (see
 * k8s_sd.h). The API watch client that feeds it is k8s_sd.c. */
#include "scrape/k8s_sd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "core/clock.h"
#include "core/file_read.h"
#include "core/hostport.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/vec.h"
#include "http/tls_client.h"
#include "http/client.h"

/* ---- JSON helpers ------------------------------------------------------ */

struct json_object *pg_k8s_json_parse(const char *p, size_t len, char *why, size_t why_size)
{
    struct json_tokener *tok = json_tokener_new_ex(PG_K8S_JSON_DEPTH);
    struct json_object *o;
    enum json_tokener_error e;

    if (tok == NULL) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    if (len > (size_t)INT32_MAX) {
        json_tokener_free(tok);
        snprintf(why, why_size, "JSON document too large");
        return NULL;
    }
    o = json_tokener_parse_ex(tok, p, (int)len);
    e = json_tokener_get_error(tok);
    if (o == NULL || e != json_tokener_success) {
        snprintf(why, why_size, "invalid JSON: %s",
                 e == json_tokener_continue ? "truncated" : json_tokener_error_desc(e));
        json_object_put(o);
        o = NULL;
    } else if (json_tokener_get_parse_end(tok) < len) {
        size_t end = json_tokener_get_parse_end(tok);

        while (end < len && isspace((unsigned char)p[end])) {
            end++;
        }
        if (end < len) {
            snprintf(why, why_size, "invalid JSON: trailing bytes");
            json_object_put(o);
            o = NULL;
        }
    }
    json_tokener_free(tok);
    return o;
}

struct json_object *pg_k8s_jget(struct json_object *o, const char *k)
{
    struct json_object *v = NULL;

    if (o == NULL || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, k, &v)) {
        return NULL;
    }
    return v;
}

const char *pg_k8s_jstr(struct json_object *o, const char *k)
{
    struct json_object *v = pg_k8s_jget(o, k);

    return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                  : NULL;
}

struct json_object *pg_k8s_jarr(struct json_object *o, const char *k)
{
    struct json_object *v = pg_k8s_jget(o, k);

    return v != NULL && json_object_is_type(v, json_type_array) ? v : NULL;
}

/* ---- pod -> targets ---------------------------------------------------- */

/* Prometheus's strutil.SanitizeLabelName: [^a-zA-Z0-9_] -> _ */
static void sanitize(char *dst, size_t cap, const char *prefix, const char *name)
{
    size_t n = (size_t)snprintf(dst, cap, "%s", prefix);

    for (const char *p = name; *p && n + 1 < cap; p++) {
        dst[n++] = isalnum((unsigned char)*p) || *p == '_' ? *p : '_';
    }
    dst[n < cap ? n : cap - 1] = '\0';
}

static void map_labels(struct pg_labels *l, struct json_object *m, const char *value_prefix,
                       const char *present_prefix)
{
    char name[512];

    if (m == NULL || !json_object_is_type(m, json_type_object)) {
        return;
    }
    json_object_object_foreach(m, k, v)
    {
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";

        sanitize(name, sizeof(name), value_prefix, k);
        pg_labels_set(l, name, s);
        sanitize(name, sizeof(name), present_prefix, k);
        pg_labels_set(l, name, "true");
    }
}

static const char *container_id(struct json_object *status, const char *key, const char *name)
{
    struct json_object *a = pg_k8s_jarr(status, key);

    for (size_t i = 0; a != NULL && i < json_object_array_length(a); i++) {
        struct json_object *cs = json_object_array_get_idx(a, i);
        const char *n = pg_k8s_jstr(cs, "name");

        if (n != NULL && strcmp(n, name) == 0) {
            return pg_k8s_jstr(cs, "containerID");
        }
    }
    return NULL;
}

struct tg_list {
    struct pg_scrape_tg_target *v;
    struct pg_labels *labels;
    char **addrs;
    size_t n, cap;
};

static bool tg_add(struct tg_list *t, const struct pg_labels *base, const char *addr)
{
    if (t->n == t->cap) {
        /* Three parallel arrays: each grows to the same next capacity. */
        size_t cv = t->cap, cl = t->cap, ca = t->cap;

        if (!PG_VEC_GROW(NULL, t->v, cv, t->n, 4, 0) ||
            !PG_VEC_GROW(NULL, t->labels, cl, t->n, 4, 0) ||
            !PG_VEC_GROW(NULL, t->addrs, ca, t->n, 4, 0)) {
            return false;
        }
        t->cap = cv;
    }
    if (!pg_labels_copy(&t->labels[t->n], base)) {
        return false;
    }
    if ((t->addrs[t->n] = strdup(addr)) == NULL) {
        pg_labels_free(&t->labels[t->n]);
        return false;
    }
    t->n++;
    return true;
}

static void tg_free(struct tg_list *t)
{
    for (size_t i = 0; i < t->n; i++) {
        pg_labels_free(&t->labels[i]);
        free(t->addrs[i]);
    }
    free(t->v);
    free(t->labels);
    free(t->addrs);
}

static void add_containers(struct tg_list *t, const struct pg_labels *group, struct json_object *spec,
                           struct json_object *status, const char *ip, bool init)
{
    struct json_object *cs = pg_k8s_jarr(spec, init ? "initContainers" : "containers");

    for (size_t i = 0; cs != NULL && i < json_object_array_length(cs); i++) {
        struct json_object *c = json_object_array_get_idx(cs, i);
        struct json_object *ports = pg_k8s_jarr(c, "ports");
        const char *name = pg_k8s_jstr(c, "name"), *id;
        struct pg_labels l;
        size_t np = ports ? json_object_array_length(ports) : 0;

        if (name == NULL || !pg_labels_copy(&l, group)) {
            continue;
        }
        id = container_id(status, init ? "initContainerStatuses" : "containerStatuses", name);
        pg_labels_set(&l, "__meta_kubernetes_pod_container_name", name);
        pg_labels_set(&l, "__meta_kubernetes_pod_container_image", pg_k8s_jstr(c, "image"));
        pg_labels_set(&l, "__meta_kubernetes_pod_container_init", init ? "true" : "false");
        pg_labels_set(&l, "__meta_kubernetes_pod_container_id", id);
        if (np == 0) {
            tg_add(t, &l, ip);
        }
        for (size_t k = 0; k < np; k++) {
            struct json_object *p = json_object_array_get_idx(ports, k);
            struct json_object *num = pg_k8s_jget(p, "containerPort");
            const char *proto = pg_k8s_jstr(p, "protocol");
            char nbuf[16], addr[300];
            int64_t port = num != NULL && json_object_is_type(num, json_type_int)
                               ? json_object_get_int64(num)
                               : 0;

            if (port <= 0 || port > 65535) {
                continue;
            }
            snprintf(nbuf, sizeof(nbuf), "%lld", (long long)port);
            snprintf(addr, sizeof(addr), strchr(ip, ':') ? "[%s]:%s" : "%s:%s", ip, nbuf);
            pg_labels_set(&l, "__meta_kubernetes_pod_container_port_name", pg_k8s_jstr(p, "name"));
            pg_labels_set(&l, "__meta_kubernetes_pod_container_port_number", nbuf);
            pg_labels_set(&l, "__meta_kubernetes_pod_container_port_protocol",
                          proto ? proto : "TCP");
            tg_add(t, &l, addr);
        }
        pg_labels_free(&l);
    }
}

void pg_k8s_pod_targets(struct json_object *pod, pg_k8s_targets_fn fn, void *arg)
{
    struct json_object *md = pg_k8s_jget(pod, "metadata"), *spec = pg_k8s_jget(pod, "spec"),
                       *status = pg_k8s_jget(pod, "status"), *owners = pg_k8s_jarr(md, "ownerReferences"),
                       *conds = pg_k8s_jarr(status, "conditions");
    const char *ip = pg_k8s_jstr(status, "podIP");
    const char *ready = "unknown";
    struct pg_labels g = {0};
    struct tg_list t = {0};

    if (ip == NULL || ip[0] == '\0') {
        fn(arg, NULL, 0); /* Prometheus: an empty group until the pod has an IP */
        return;
    }
    pg_labels_set(&g, "__meta_kubernetes_namespace", pg_k8s_jstr(md, "namespace"));
    pg_labels_set(&g, "__meta_kubernetes_pod_name", pg_k8s_jstr(md, "name"));
    pg_labels_set(&g, "__meta_kubernetes_pod_uid", pg_k8s_jstr(md, "uid"));
    pg_labels_set(&g, "__meta_kubernetes_pod_ip", ip);
    pg_labels_set(&g, "__meta_kubernetes_pod_host_ip", pg_k8s_jstr(status, "hostIP"));
    pg_labels_set(&g, "__meta_kubernetes_pod_phase", pg_k8s_jstr(status, "phase"));
    pg_labels_set(&g, "__meta_kubernetes_pod_node_name", pg_k8s_jstr(spec, "nodeName"));
    for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
        struct json_object *c = json_object_array_get_idx(conds, i);
        const char *type = pg_k8s_jstr(c, "type"), *st = pg_k8s_jstr(c, "status");

        if (type != NULL && strcmp(type, "Ready") == 0 && st != NULL) {
            ready = strcasecmp(st, "true") == 0 ? "true" : strcasecmp(st, "false") == 0 ? "false"
                                                                                         : "unknown";
        }
    }
    pg_labels_set(&g, "__meta_kubernetes_pod_ready", ready);
    for (size_t i = 0; owners != NULL && i < json_object_array_length(owners); i++) {
        struct json_object *o = json_object_array_get_idx(owners, i);
        struct json_object *ctl = pg_k8s_jget(o, "controller");

        if (ctl != NULL && json_object_get_boolean(ctl)) {
            pg_labels_set(&g, "__meta_kubernetes_pod_controller_kind", pg_k8s_jstr(o, "kind"));
            pg_labels_set(&g, "__meta_kubernetes_pod_controller_name", pg_k8s_jstr(o, "name"));
        }
    }
    map_labels(&g, pg_k8s_jget(md, "labels"), "__meta_kubernetes_pod_label_",
               "__meta_kubernetes_pod_labelpresent_");
    map_labels(&g, pg_k8s_jget(md, "annotations"), "__meta_kubernetes_pod_annotation_",
               "__meta_kubernetes_pod_annotationpresent_");
    add_containers(&t, &g, spec, status, ip, false);
    add_containers(&t, &g, spec, status, ip, true);
    for (size_t i = 0; i < t.n; i++) {
        t.v[i].address = t.addrs[i];
        t.v[i].labels = &t.labels[i];
    }
    fn(arg, t.v, t.n);
    tg_free(&t);
    pg_labels_free(&g);
}
