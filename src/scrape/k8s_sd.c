/* SPDX-License-Identifier: Apache-2.0
 * Kubernetes pod discovery: the API list/watch client (see k8s_sd.h); a
 * pod becomes targets in k8s_pod.c. Ownership: the discovery owns
 * its watchers; a watcher owns its TLS context, in-flight call, stream
 * buffer and the list of pod sources it has synced into the scraper. */
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
#include "scrape/htab.h"

#define LOG_NAME "receiver/pprof/k8s_sd"
#define NS 1000000000LL
#define LIST_MAX_BYTES ((size_t)256 << 20)
#define WATCH_SECONDS 300
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000

/* ---- watch stream --------------------------------------------------------- */

void pg_k8s_stream_free(struct pg_k8s_stream *s)
{
    free(s->buf);
    memset(s, 0, sizeof(*s));
}

enum pg_k8s_feed pg_k8s_stream_feed(struct pg_k8s_stream *s, const uint8_t *p, size_t n,
                                    pg_k8s_event_fn fn, void *arg, char *why, size_t why_size)
{
    while (n > 0) {
        const uint8_t *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;

        if (s->len + take > PG_K8S_MAX_LINE) {
            snprintf(why, why_size, "a watch event is longer than %zu bytes", PG_K8S_MAX_LINE);
            s->len = 0;
            return PG_K8S_FEED_TOO_LONG;
        }
        if (!PG_VEC_RESERVE(NULL, s->buf, s->cap, s->len + take + 1, 4096, 0)) {
            snprintf(why, why_size, "out of memory");
            return PG_K8S_FEED_BAD;
        }
        memcpy(s->buf + s->len, p, take);
        s->len += take;
        p += take + (nl ? 1 : 0);
        n -= take + (nl ? 1 : 0);
        if (nl == NULL) {
            break;
        }
        {
            size_t len = s->len;
            struct json_object *ev;
            const char *type;
            bool go;

            s->len = 0;
            while (len > 0 && isspace((unsigned char)s->buf[len - 1])) {
                len--;
            }
            if (len == 0) {
                continue;
            }
            ev = pg_k8s_json_parse(s->buf, len, why, why_size);
            if (ev == NULL) {
                return PG_K8S_FEED_BAD;
            }
            type = pg_k8s_jstr(ev, "type");
            if (type == NULL || pg_k8s_jget(ev, "object") == NULL) {
                json_object_put(ev);
                snprintf(why, why_size, "watch event without type or object");
                return PG_K8S_FEED_BAD;
            }
            go = fn(arg, type, pg_k8s_jget(ev, "object"));
            json_object_put(ev);
            if (!go) {
                return PG_K8S_FEED_STOP;
            }
        }
    }
    return PG_K8S_FEED_OK;
}

/* ---- watchers --------------------------------------------------------------- */

enum wstate { W_IDLE = 0, W_LIST, W_WATCH };

struct watcher {
    struct pg_k8s_sd *k;                    /* borrowed back-pointer */
    size_t job, sd_index;
    const struct pg_scrape_k8s_sd *sd;      /* borrowed from the config */
    char host[256], prefix[256];
    unsigned port;
    bool tls;
    SSL_CTX *ssl;                           /* owned */
    char token_file[512];                   /* in-cluster token, or "" */
    char path[1024];                        /* /api/v1/[namespaces/NS/]pods */
    char selq[2048];                        /* &labelSelector=..&fieldSelector=.. */
    char ns[256];                           /* for logs; "" = all namespaces */
    char rv[128];
    enum wstate state;
    struct pg_http_call *call;              /* owned while in flight */
    struct pg_k8s_stream stream;
    int watch_status;
    bool relist, failed;
    char fail_why[300];
    struct pg_strset sources;               /* owned: pod sources synced (a set: pod churn is O(1) each) */
    int backoff_ms;
    int64_t started_ns;                     /* when the current request began */
    struct event *retry;                    /* owned */
    struct pg_metric *m_restarts, *m_events, *m_relists;
};

struct pg_k8s_sd {
    struct pg_sd_sink sink;                 /* the caller's: where pods' targets go */
    struct event_base *base;                /* borrowed */
    const struct pg_scrape_config *cfg;     /* borrowed */
    struct watcher *w;                      /* owned */
    size_t n;
};

static void wlog_fail(struct watcher *w, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void wlog_fail(struct watcher *w, const char *reason, const char *fmt, ...)
{
    char l[512], jv[128];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(w->fail_why, sizeof(w->fail_why), fmt, ap);
    va_end(ap);
    snprintf(jv, sizeof(jv), "%s", w->k->cfg->jobs[w->job].job_name);
    for (char *c = jv; *c; c++) {
        *c = *c == '"' || *c == '\\' ? '_' : *c;
    }
    snprintf(l, sizeof(l), "job=\"%s\",reason=\"%s\"", jv, reason);
    pg_metric_add(pg_metric_counter("pprofgate_scrape_k8s_failures_total",
                                    "Kubernetes discovery failures by reason (connect, timeout, "
                                    "http_401, http_403, http_5xx, ..., parse, too_long).",
                                    l),
                  1);
    pg_log_warn(LOG_NAME, "job %s: pods%s%s: %s [%s]; retrying in %.3gs",
                w->k->cfg->jobs[w->job].job_name, w->ns[0] ? " in " : "", w->ns, w->fail_why,
                reason, (double)w->backoff_ms / 1000);
}

static void source_add(struct watcher *w, const char *src)
{
    if (!pg_strset_add(&w->sources, src)) {
        pg_log_warn(LOG_NAME, "out of memory remembering %s", src);
    }
}

static void source_del(struct watcher *w, const char *src)
{
    pg_strset_del(&w->sources, src);
}

struct sync_ctx {
    struct watcher *w;
    const char *source;
};

static void on_pod_targets(void *arg, const struct pg_scrape_tg_target *tg, size_t n)
{
    struct sync_ctx *c = arg;

    c->w->k->sink.sync(c->w->k->sink.arg, c->w->job, c->source, tg, n);
}

static void pod_source(const struct watcher *w, struct json_object *pod, char *buf, size_t cap)
{
    struct json_object *md = pg_k8s_jget(pod, "metadata");
    const char *ns = pg_k8s_jstr(md, "namespace"), *name = pg_k8s_jstr(md, "name");

    snprintf(buf, cap, "k8s/%zu/pod/%s/%s", w->sd_index, ns ? ns : "", name ? name : "");
}

static void pod_upsert(struct watcher *w, struct json_object *pod)
{
    char src[700];
    struct sync_ctx c = {w, src};

    pod_source(w, pod, src, sizeof(src));
    pg_k8s_pod_targets(pod, on_pod_targets, &c);
    source_add(w, src);
}

static void pod_delete(struct watcher *w, struct json_object *pod)
{
    char src[700];

    pod_source(w, pod, src, sizeof(src));
    w->k->sink.sync(w->k->sink.arg, w->job, src, NULL, 0);
    source_del(w, src);
}

static void start_request(struct watcher *w);

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    start_request(arg);
}

static void schedule(struct watcher *w, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    evtimer_add(w->retry, &tv);
}

static void fail_backoff(struct watcher *w, const char *reason, const char *why)
{
    w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (w->backoff_ms > BACKOFF_MAX_MS) {
        w->backoff_ms = BACKOFF_MAX_MS;
    }
    wlog_fail(w, reason, "%s", why);
    w->state = W_LIST; /* after a failure, always relist */
    schedule(w, w->backoff_ms);
}

static const char *status_reason(int status, char *buf, size_t cap)
{
    if (status >= 500) {
        return "http_5xx";
    }
    snprintf(buf, cap, "http_%d", status);
    return buf;
}

/* Relist: a pod source synced before that the new list lacks loses its targets. */
static void drop_unlisted(void *arg, const char *src)
{
    struct watcher *w = arg;

    if (!pg_strset_has(&w->sources, src)) {
        w->k->sink.sync(w->k->sink.arg, w->job, src, NULL, 0);
    }
}

static void handle_list(struct watcher *w, const struct pg_http_response *r)
{
    struct json_object *doc, *items;
    char why[300], rbuf[32];
    struct pg_strset old;

    if (r->status != 200) {
        snprintf(why, sizeof(why), "list: HTTP %d", r->status);
        fail_backoff(w, status_reason(r->status, rbuf, sizeof(rbuf)), why);
        return;
    }
    doc = pg_k8s_json_parse((const char *)r->body, r->len, why, sizeof(why));
    items = pg_k8s_jarr(doc, "items");
    if (doc == NULL || items == NULL) {
        if (doc != NULL) {
            snprintf(why, sizeof(why), "list: no items array");
        }
        json_object_put(doc);
        fail_backoff(w, "parse", why);
        return;
    }
    snprintf(w->rv, sizeof(w->rv), "%s", pg_k8s_jstr(pg_k8s_jget(doc, "metadata"), "resourceVersion")
                                             ? pg_k8s_jstr(pg_k8s_jget(doc, "metadata"), "resourceVersion")
                                             : "");
    /* Pods from before that are gone now lose their targets. */
    old = w->sources;
    memset(&w->sources, 0, sizeof(w->sources));
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        pod_upsert(w, json_object_array_get_idx(items, i));
    }
    pg_strset_each(&old, drop_unlisted, w);
    pg_strset_free(&old);
    pg_log_info(LOG_NAME, "job %s: listed %zu pods%s%s (resourceVersion %s)",
                w->k->cfg->jobs[w->job].job_name, json_object_array_length(items),
                w->ns[0] ? " in " : "", w->ns, w->rv);
    json_object_put(doc);
    w->backoff_ms = 0;
    w->state = W_WATCH;
    start_request(w);
}

static bool on_event(void *arg, const char *type, struct json_object *obj)
{
    struct watcher *w = arg;
    const char *rv = pg_k8s_jstr(pg_k8s_jget(obj, "metadata"), "resourceVersion");

    pg_metric_add(w->m_events, 1);
    if (strcmp(type, "ERROR") == 0) {
        struct json_object *code = pg_k8s_jget(obj, "code");

        if (code != NULL && json_object_get_int(code) == 410) {
            w->relist = true; /* resourceVersion too old: list again */
        } else {
            w->failed = true;
            snprintf(w->fail_why, sizeof(w->fail_why), "watch ERROR event: %s",
                     pg_k8s_jstr(obj, "message") ? pg_k8s_jstr(obj, "message") : "(no message)");
        }
        return false;
    }
    if (rv != NULL) {
        snprintf(w->rv, sizeof(w->rv), "%s", rv);
    }
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
        pod_upsert(w, obj);
    } else if (strcmp(type, "DELETED") == 0) {
        pod_delete(w, obj);
    }
    /* BOOKMARK: only the resourceVersion. */
    return true;
}

static bool on_watch_data(void *arg, int status, const uint8_t *p, size_t n)
{
    struct watcher *w = arg;
    char why[280];
    enum pg_k8s_feed f;

    w->watch_status = status;
    if (status != 200) {
        return true; /* an error body: judged at the end */
    }
    f = pg_k8s_stream_feed(&w->stream, p, n, on_event, w, why, sizeof(why));
    if (f == PG_K8S_FEED_BAD || f == PG_K8S_FEED_TOO_LONG) {
        w->failed = true;
        snprintf(w->fail_why, sizeof(w->fail_why), "%s%s",
                 f == PG_K8S_FEED_TOO_LONG ? "too_long:" : "parse:", why);
        return false;
    }
    return f == PG_K8S_FEED_OK;
}

static void on_response(void *arg, const struct pg_http_response *r)
{
    struct watcher *w = arg;
    char rbuf[32];

    w->call = NULL;
    if (r->fail != PG_HTTP_OK && !(w->state == W_WATCH && (w->relist || w->failed))) {
        pg_k8s_stream_free(&w->stream);
        fail_backoff(w, pg_http_fail_name(r->fail), r->why);
        return;
    }
    if (w->state == W_LIST) {
        handle_list(w, r);
        return;
    }
    /* The watch ended. */
    pg_metric_add(w->m_restarts, 1);
    pg_k8s_stream_free(&w->stream);
    if (w->relist || r->status == 410) {
        w->relist = false;
        pg_metric_add(w->m_relists, 1);
        pg_log_info(LOG_NAME, "job %s: watch expired (410 Gone); listing again",
                    w->k->cfg->jobs[w->job].job_name);
        w->state = W_LIST;
        /* A server that expires every watch at once must not spin us. */
        if (pg_mono_ns() - w->started_ns < NS) {
            schedule(w, 1000);
        } else {
            start_request(w);
        }
    } else if (w->failed) {
        char reason[32];
        const char *colon = strchr(w->fail_why, ':');
        char why[300];

        w->failed = false;
        snprintf(reason, sizeof(reason), "%.*s", colon ? (int)(colon - w->fail_why) : 5,
                 colon ? w->fail_why : "parse");
        if (strncmp(w->fail_why, "watch ERROR", 11) == 0) {
            snprintf(reason, sizeof(reason), "watch_error");
        }
        snprintf(why, sizeof(why), "%s", colon && strncmp(w->fail_why, "watch", 5) != 0
                                              ? colon + 1 : w->fail_why);
        fail_backoff(w, reason, why);
    } else if (r->status != 200) {
        char why[64];

        snprintf(why, sizeof(why), "watch: HTTP %d", r->status);
        fail_backoff(w, status_reason(r->status, rbuf, sizeof(rbuf)), why);
    } else if (pg_mono_ns() - w->started_ns < NS) {
        schedule(w, 1000); /* ended at once: resume, but not in a tight loop */
    } else {
        start_request(w); /* the server ended the watch (timeoutSeconds): resume */
    }
}

static void url_escape(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    for (const unsigned char *p = (const unsigned char *)s; *p && n + 4 < cap; p++) {
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            dst[n++] = (char)*p;
        } else {
            dst[n++] = '%';
            dst[n++] = hex[*p >> 4];
            dst[n++] = hex[*p & 15];
        }
    }
    dst[n] = '\0';
}

static void start_request(struct watcher *w)
{
    const struct pg_scrape_k8s_sd *sd = w->sd;
    struct pg_http_get_opts o;
    struct pg_http_header h[2];
    struct pg_status st = {0};
    char pq[4096], auth[8300], tok[8192], rvq[300];
    const char *tfile = sd->credentials_file ? sd->credentials_file
                        : sd->bearer_token_file ? sd->bearer_token_file
                        : w->token_file[0] ? w->token_file : NULL;

    if (w->state == W_IDLE) {
        w->state = W_LIST;
    }
    memset(&o, 0, sizeof(o));
    if (w->state == W_LIST) {
        snprintf(pq, sizeof(pq), "%s%s?limit=0%s", w->prefix, w->path, w->selq);
    } else {
        url_escape(rvq, sizeof(rvq), w->rv);
        snprintf(pq, sizeof(pq), "%s%s?watch=true&allowWatchBookmarks=true&timeoutSeconds=%d"
                                 "&resourceVersion=%s%s",
                 w->prefix, w->path, WATCH_SECONDS, rvq, w->selq);
        o.on_data = on_watch_data;
        w->watch_status = 0;
        w->relist = w->failed = false;
    }
    o.host = w->host;
    o.port = w->port;
    o.path_query = pq;
    o.timeout_ns = w->state == W_WATCH ? (int64_t)(WATCH_SECONDS + 30) * NS : 60 * NS;
    o.max_body = LIST_MAX_BYTES;
    if (w->tls) {
        o.ssl_ctx = w->ssl;
        o.server_name = sd->server_name;
        o.verify = !sd->insecure_skip_verify;
    }
    /* The token is read for every request: projected tokens rotate. */
    if (tfile != NULL) {
        if (!pg_file_read_small(tfile, tok, sizeof(tok), PG_TRIM_SPACE, NULL)) {
            char why[700];

            snprintf(why, sizeof(why), "cannot read the token file %s: %s", tfile, strerror(errno));
            fail_backoff(w, "auth", why);
            return;
        }
        snprintf(auth, sizeof(auth), "%s %s", sd->auth_type ? sd->auth_type : "Bearer", tok);
    } else if (sd->credentials != NULL || sd->bearer_token != NULL) {
        snprintf(auth, sizeof(auth), "%s %s", sd->auth_type ? sd->auth_type : "Bearer",
                 sd->credentials ? sd->credentials : sd->bearer_token);
    } else {
        auth[0] = '\0';
    }
    if (auth[0] != '\0') {
        h[o.n_headers++] = (struct pg_http_header){"Authorization", auth};
    }
    h[o.n_headers++] = (struct pg_http_header){"Accept", "application/json"};
    o.headers = h;
    w->started_ns = pg_mono_ns();
    w->call = pg_http_get(w->k->base, &o, on_response, w, &st);
    if (w->call == NULL) {
        fail_backoff(w, "connect", pg_status_text(&st));
    }
}

/* https://host[:port][/prefix] */
static bool parse_server(struct watcher *w, const char *url)
{
    const char *rest, *slash;
    char authority[sizeof(w->host) + 8];
    size_t hl;

    w->tls = strncmp(url, "https://", 8) == 0;
    rest = url + (w->tls ? 8 : 7);
    slash = strchr(rest, '/');
    hl = slash ? (size_t)(slash - rest) : strlen(rest);
    snprintf(w->prefix, sizeof(w->prefix), "%s", slash ? slash : "");
    while (w->prefix[0] && w->prefix[strlen(w->prefix) - 1] == '/') {
        w->prefix[strlen(w->prefix) - 1] = '\0';
    }
    if (hl == 0 || hl >= sizeof(authority)) {
        return false;
    }
    memcpy(authority, rest, hl);
    authority[hl] = '\0';
    return pg_hostport_split_default(authority, w->tls ? 443 : 80, w->host, sizeof(w->host),
                                     &w->port) &&
           w->host[0] != '\0' && w->port > 0;
}

static enum pg_err watcher_init(struct pg_k8s_sd *k, struct watcher *w, size_t ji, size_t si,
                                const char *ns, struct pg_status *st)
{
    const struct pg_scrape_k8s_sd *sd = &k->cfg->jobs[ji].k8s_sd[si];
    const char *sa = getenv("PPROFGATE_K8S_SERVICEACCOUNT_DIR");
    char ca[600], q[1500];
    struct pg_tls_client_config tc = {sd->ca_file, sd->cert_file, sd->key_file,
                                      sd->insecure_skip_verify};

    sa = sa && sa[0] ? sa : PG_K8S_SA_DIR;
    w->k = k;
    w->job = ji;
    w->sd_index = si;
    w->sd = sd;
    snprintf(w->ns, sizeof(w->ns), "%s", ns ? ns : "");
    if (sd->api_server != NULL) {
        if (!parse_server(w, sd->api_server)) {
            return pg_status_set(st, PG_ERR_CONFIG, "kubernetes_sd_configs: bad api_server %s",
                                 sd->api_server);
        }
    } else {
        const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
        char url[400];

        if (h == NULL || h[0] == '\0' || p == NULL || p[0] == '\0') {
            return pg_status_set(st, PG_ERR_CONFIG,
                                 "kubernetes_sd_configs without api_server needs to run in a pod "
                                 "(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT unset)");
        }
        snprintf(url, sizeof(url), strchr(h, ':') ? "https://[%s]:%s" : "https://%s:%s", h, p);
        if (!parse_server(w, url)) {
            return pg_status_set(st, PG_ERR_CONFIG, "bad in-cluster address %s", url);
        }
        snprintf(w->token_file, sizeof(w->token_file), "%s/token", sa);
        if (tc.ca_file == NULL) {
            snprintf(ca, sizeof(ca), "%s/ca.crt", sa);
            tc.ca_file = ca;
        }
    }
    if (w->tls) {
        w->ssl = pg_tls_client_ctx_new(&tc, st);
        if (w->ssl == NULL) {
            return st->code;
        }
    }
    if (ns != NULL) {
        char e[300];

        url_escape(e, sizeof(e), ns);
        snprintf(w->path, sizeof(w->path), "/api/v1/namespaces/%s/pods", e);
    } else {
        snprintf(w->path, sizeof(w->path), "/api/v1/pods");
    }
    w->selq[0] = '\0';
    if (sd->label_selector != NULL) {
        url_escape(q, sizeof(q), sd->label_selector);
        snprintf(w->selq + strlen(w->selq), sizeof(w->selq) - strlen(w->selq),
                 "&labelSelector=%s", q);
    }
    if (sd->field_selector != NULL) {
        url_escape(q, sizeof(q), sd->field_selector);
        snprintf(w->selq + strlen(w->selq), sizeof(w->selq) - strlen(w->selq),
                 "&fieldSelector=%s", q);
    }
    {
        char jv[128], l[300];

        snprintf(jv, sizeof(jv), "%s", k->cfg->jobs[ji].job_name);
        for (char *c = jv; *c; c++) {
            *c = *c == '"' || *c == '\\' ? '_' : *c;
        }
        snprintf(l, sizeof(l), "job=\"%s\"", jv);
        w->m_restarts = pg_metric_counter("pprofgate_scrape_k8s_watch_restarts_total",
                                          "Pod watches that ended and were started again.", l);
        w->m_relists = pg_metric_counter("pprofgate_scrape_k8s_relists_total",
                                         "Pod lists forced by 410 Gone.", l);
        w->m_events = pg_metric_counter("pprofgate_scrape_k8s_watch_events_total",
                                        "Pod watch events received.", l);
    }
    w->retry = evtimer_new(k->base, on_retry, w);
    if (w->retry == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
    }
    return PG_ERR_OK;
}

enum pg_err pg_k8s_sd_start(const struct pg_sd_sink *sink, struct event_base *base,
                            const struct pg_scrape_config *cfg, struct pg_k8s_sd **out,
                            struct pg_status *st)
{
    struct pg_k8s_sd *k;
    size_t total = 0;

    *out = NULL;
    for (size_t j = 0; j < cfg->n_jobs; j++) {
        for (size_t i = 0; i < cfg->jobs[j].n_k8s_sd; i++) {
            const struct pg_scrape_k8s_sd *sd = &cfg->jobs[j].k8s_sd[i];

            total += sd->namespaces.n > 0 ? sd->namespaces.n : 1;
        }
    }
    if (total == 0) {
        return PG_ERR_OK;
    }
    if ((k = calloc(1, sizeof(*k))) == NULL || (k->w = calloc(total, sizeof(*k->w))) == NULL) {
        free(k);
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
    }
    k->sink = *sink;
    k->base = base;
    k->cfg = cfg;
    for (size_t j = 0; j < cfg->n_jobs; j++) {
        for (size_t i = 0; i < cfg->jobs[j].n_k8s_sd; i++) {
            const struct pg_scrape_k8s_sd *sd = &cfg->jobs[j].k8s_sd[i];
            size_t nn = sd->namespaces.n > 0 ? sd->namespaces.n : 1;

            for (size_t n = 0; n < nn; n++) {
                const char *ns = sd->namespaces.n > 0 ? sd->namespaces.v[n] : NULL;
                char own[256];

                if (ns == NULL && sd->own_namespace) {
                    const char *sa = getenv("PPROFGATE_K8S_SERVICEACCOUNT_DIR");
                    char p[600];

                    snprintf(p, sizeof(p), "%s/namespace", sa && sa[0] ? sa : PG_K8S_SA_DIR);
                    if (!pg_file_read_small(p, own, sizeof(own), PG_TRIM_SPACE, NULL)) {
                        int e = errno;

                        pg_k8s_sd_free(k);
                        return pg_status_set(st, PG_ERR_CONFIG,
                                             "namespaces.own_namespace: cannot read %s: %s", p,
                                             strerror(e));
                    }
                    ns = own;
                }
                if (watcher_init(k, &k->w[k->n++], j, i, ns, st) != PG_ERR_OK) {
                    pg_k8s_sd_free(k);
                    return st->code;
                }
            }
        }
    }
    for (size_t i = 0; i < k->n; i++) {
        start_request(&k->w[i]);
    }
    *out = k;
    return PG_ERR_OK;
}

void pg_k8s_sd_free(struct pg_k8s_sd *k)
{
    if (k == NULL) {
        return;
    }
    for (size_t i = 0; i < k->n; i++) {
        struct watcher *w = &k->w[i];

        if (w->call != NULL) {
            pg_http_call_cancel(w->call);
        }
        if (w->retry != NULL) {
            event_free(w->retry);
        }
        if (w->ssl != NULL) {
            SSL_CTX_free(w->ssl);
        }
        pg_k8s_stream_free(&w->stream);
        pg_strset_free(&w->sources);
    }
    free(k->w);
    free(k);
}
