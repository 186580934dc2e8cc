/* SPDX-License-Identifier: Apache-2.0
 * A target's address, URL query and resource attributes from its labels:
 * pure string work, no scraper state (see scrape.h and docs/scrape.md). */
#include "scrape/scrape.h"
#include "scrape/scrape_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/hostport.h"

/* Metric label values: no quotes, backslashes or newlines. */
void pg_scrape_metric_value(char *dst, size_t cap, const char *src)
{
    size_t i = 0;

    for (; src && *src && i + 1 < cap; src++) {
        dst[i++] = (*src == '"' || *src == '\\' || *src == '\n') ? '_' : *src;
    }
    dst[i] = '\0';
}

bool pg_scrape_resource_labels(const struct pg_labels *l, bool remote, struct pg_labels *out)
{
    const char *job = pg_labels_get(l, "job");
    const char *inst = pg_labels_get(l, "instance");

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < l->n; i++) {
        const char *n = l->v[i].name;

        if (strncmp(n, "__", 2) == 0 || strcmp(n, "job") == 0 || strcmp(n, "instance") == 0) {
            continue;
        }
        if (!pg_labels_set(out, n, l->v[i].value)) {
            return false;
        }
    }
    /* remote: mirrors the contrib receiver, which sets no attributes. */
    if (!remote && job != NULL && pg_labels_get(out, "service.name") == NULL &&
        !pg_labels_set(out, "service.name", job)) {
        return false;
    }
    if (!remote && inst != NULL && pg_labels_get(out, "service.instance.id") == NULL &&
        !pg_labels_set(out, "service.instance.id", inst)) {
        return false;
    }
    return true;
}

void pg_scrape_add_port(char *addr, size_t cap, const char *scheme)
{
    const char *colon = strrchr(addr, ':');
    const char *bracket = strrchr(addr, ']');
    size_t n = strlen(addr);

    if (colon != NULL && (bracket == NULL || colon > bracket)) {
        return;
    }
    if (addr[0] != '[' && strchr(addr, ':') != NULL) {
        return; /* bare IPv6 without a port: leave as written */
    }
    snprintf(addr + n, cap - n, ":%s", strcmp(scheme, "https") == 0 ? "443" : "80");
}

/* A target's "host:port" / "[v6]:port" as a malloc'd host (the caller's) and
 * a port. False when malformed, without a host or with port 0. */
bool pg_scrape_split_target(const char *addr, char **host, unsigned *port)
{
    char h[300];

    if (!pg_hostport_split(addr, h, sizeof(h), port) || h[0] == '\0' || *port == 0) {
        return false;
    }
    *host = strdup(h);
    return *host != NULL;
}

void pg_scrape_append_query(char *q, size_t cap, const char *k, const char *v)
{
    size_t n = strlen(q);
    static const char hex[] = "0123456789ABCDEF";

    if (n + 2 >= cap) {
        return;
    }
    q[n++] = strchr(q, '?') ? '&' : '?';
    for (int pass = 0; pass < 2; pass++) {
        for (const unsigned char *p = (const unsigned char *)(pass ? v : k); *p && n + 4 < cap;
             p++) {
            if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                *p == '-' || *p == '_' || *p == '.' || *p == '~') {
                q[n++] = (char)*p;
            } else {
                q[n++] = '%';
                q[n++] = hex[*p >> 4];
                q[n++] = hex[*p & 15];
            }
        }
        if (pass == 0 && n + 1 < cap) {
            q[n++] = '=';
        }
    }
    q[n] = '\0';
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool pg_scrape_query(char *pq, size_t cap, const struct pg_strmap *params,
                     const struct pg_labels *l)
{
    const char *keys[256];
    size_t nk = 0;
    bool has_seconds = false;

    for (size_t i = 0; i < l->n && nk < 256; i++) {
        if (strncmp(l->v[i].name, "__param_", 8) == 0) {
            keys[nk++] = l->v[i].name + 8;
        }
    }
    for (size_t i = 0; i < params->n && nk < 256; i++) {
        bool seen = false;

        for (size_t k = 0; k < nk && !seen; k++) {
            seen = strcmp(keys[k], params->keys[i]) == 0;
        }
        if (!seen) {
            keys[nk++] = params->keys[i];
        }
    }
    /* url.Values.Encode order: by key, values in config order. */
    qsort(keys, nk, sizeof(keys[0]), cmp_str);
    for (size_t k = 0; k < nk; k++) {
        char name[200];
        const char *lv;
        bool first = true;

        snprintf(name, sizeof(name), "__param_%s", keys[k]);
        lv = pg_labels_get(l, name);
        if (lv != NULL) {
            pg_scrape_append_query(pq, cap, keys[k], lv);
        }
        /* The label (after relabeling) replaces the first configured value;
         * the others are sent as configured, the key repeated. */
        for (size_t i = 0; i < params->n; i++) {
            if (strcmp(params->keys[i], keys[k]) == 0) {
                if (!(first && lv != NULL)) {
                    pg_scrape_append_query(pq, cap, keys[k], params->values[i]);
                }
                first = false;
            }
        }
        has_seconds = has_seconds || strcmp(keys[k], "seconds") == 0;
    }
    return has_seconds;
}
