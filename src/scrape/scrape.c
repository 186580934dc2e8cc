/* SPDX-License-Identifier: Apache-2.0
 * Scrape targets and their schedules: discovery sync, relabeling into
 * targets, timers, the scraper's lifecycle and /targets (see scrape.h and
 * docs/scrape.md); one scrape's HTTP exchange is scrape_exchange.c's.
 * Ownership: the scraper owns its targets; a target owns its label sets, URL
 * parts, timer and in-flight call. */
#include "scrape/scrape.h"
#include "scrape/scrape_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "core/arena.h"
#include "core/base64.h"
#include "core/clock.h"
#include "core/file_read.h"
#include "core/hostport.h"
#include "pipeline/batch.h"
#include "pipeline/receiver_metrics.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/utf8.h"
#include "core/vec.h"
#include "http/tls_client.h"
#include "http/client.h"
#include "otlp/otlp_build.h"
#include "scrape/file_sd.h"
#include "scrape/k8s_sd.h"
/* Running scrapers, for /targets (loop thread only). */
static struct pg_scraper *g_scrapers;

/* Metric label values: no quotes, backslashes or newlines. */
static void metric_value(char *dst, size_t cap, const char *src)
{
    size_t i = 0;

    for (; src && *src && i + 1 < cap; src++) {
        dst[i++] = (*src == '"' || *src == '\\' || *src == '\n') ? '_' : *src;
    }
    dst[i] = '\0';
}

struct pg_scraper *pg_scraper_create(struct pg_host *host, struct pg_consumer *next,
                                     const struct pg_scrape_config *cfg,
                                     const struct pg_translate_opts *opts, const char *receiver_id,
                                     size_t max_body, const char *default_service_name)
{
    struct pg_scraper *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        return NULL;
    }
    s->jobs = calloc(cfg->n_jobs + 1, sizeof(*s->jobs));
    if (s->jobs == NULL) {
        free(s);
        return NULL;
    }
    s->host = host;
    s->next = next;
    s->cfg = cfg;
    s->opts = *opts;
    s->opts.scope_name = "pprofgate/scrape";
    s->receiver_id = receiver_id;
    s->max_body = max_body;
    s->default_service_name = default_service_name;
    return s;
}

/* ---- resource attributes --------------------------------------------- */

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

/* ---- targets ------------------------------------------------------------ */

void pg_scrape_inflight_add(struct pg_scrape_target *t)
{
    struct pg_scrape_target **b = &t->s->inflight[t->url_hash % INFLIGHT_BUCKETS];

    t->next_inflight = *b;
    *b = t;
    t->s->in_flight++;
}

void pg_scrape_inflight_del(struct pg_scrape_target *t)
{
    for (struct pg_scrape_target **pp = &t->s->inflight[t->url_hash % INFLIGHT_BUCKETS];
         *pp != NULL;
         pp = &(*pp)->next_inflight) {
        if (*pp == t) {
            *pp = t->next_inflight;
            t->s->in_flight--;
            return;
        }
    }
}

static void target_free(struct pg_scrape_target *t)
{
    if (t->call != NULL) {
        pg_http_call_cancel(t->call);
        pg_scrape_inflight_del(t);
    }
    if (t->timer != NULL) {
        event_free(t->timer);
    }
    pg_labels_free(&t->labels);
    pg_labels_free(&t->attrs);
    free(t->url);
    free(t->host);
    free(t->path_query);
    free(t->hop_host);
    free(t->hop_pq);
    free(t);
}

static bool url_in_flight(const struct pg_scraper *s, const struct pg_scrape_target *self)
{
    for (const struct pg_scrape_target *t = s->inflight[self->url_hash % INFLIGHT_BUCKETS];
         t != NULL;
         t = t->next_inflight) {
        if (t != self && t->url_hash == self->url_hash && strcmp(t->url, self->url) == 0) {
            return true;
        }
    }
    return false;
}

static void arm(struct pg_scrape_target *t)
{
    int64_t now = pg_mono_ns(), d = t->deadline_ns - now;
    struct timeval tv;

    if (d < 0) {
        d = 0;
    }
    tv = pg_ns_to_tv(d);
    evtimer_add(t->timer, &tv);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct pg_scrape_target *t = arg;
    int64_t now = pg_mono_ns();

    (void)fd;
    (void)what;
    if (t->s->stopped) {
        return;
    }
    /* Ticks the loop slept through are missed, not made up. */
    t->deadline_ns += t->job->interval_ns;
    while (t->deadline_ns <= now) {
        t->deadline_ns += t->job->interval_ns;
        t->skipped++;
        pg_metric_add(t->m_skipped, 1);
    }
    arm(t);
    if (t->call != NULL) {
        /* Our own scrape still runs (a CPU window is as long as the
         * interval): run again as soon as it ends, as a Go ticker would.
         * A second tick meanwhile is missed. */
        if (t->pending) {
            t->skipped++;
            pg_metric_add(t->m_skipped, 1);
        }
        t->pending = true;
        return;
    }
    if (url_in_flight(t->s, t)) {
        t->skipped++;
        pg_metric_add(t->m_skipped, 1);
        pg_log_debug(LOG_NAME, "%s: another job is scraping the same URL; tick skipped", t->url);
        return;
    }
    pg_scrape_start_target(t);
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

static void append_query(char *q, size_t cap, const char *k, const char *v)
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
            append_query(pq, cap, keys[k], lv);
        }
        /* The label (after relabeling) replaces the first configured value;
         * the others are sent as configured, the key repeated. */
        for (size_t i = 0; i < params->n; i++) {
            if (strcmp(params->keys[i], keys[k]) == 0) {
                if (!(first && lv != NULL)) {
                    append_query(pq, cap, keys[k], params->values[i]);
                }
                first = false;
            }
        }
        has_seconds = has_seconds || strcmp(keys[k], "seconds") == 0;
    }
    return has_seconds;
}

/* Builds one target from a group entry and a profile: the Parca label order
 * (job, __scheme__, __name__, __profile_path__, __param_*), relabeling, then
 * address checks, instance and the URL. NULL when dropped (counted). */
static struct pg_scrape_target *build_target(struct pg_scraper *s, size_t ji,
                                   struct pg_scrape_source *src,
                                   const struct pg_scrape_tg_target *tg,
                                   const struct pg_scrape_profile *p, size_t *dropped)
{
    const struct pg_scrape_job *job = &s->cfg->jobs[ji];
    struct pg_labels l = {0};
    struct pg_scrape_target *t;
    char addr[300], pq[2048], url[2600], secs[32];
    const char *scheme, *path, *a;
    int64_t seconds = pg_scrape_profile_seconds(job, p);
    bool has_seconds = false;

    if (tg->labels != NULL && !pg_labels_copy(&l, tg->labels)) {
        return NULL;
    }
    if (!pg_labels_set(&l, "__address__", tg->address) ||
        (pg_labels_get(&l, "job") == NULL && !pg_labels_set(&l, "job", job->job_name)) ||
        (pg_labels_get(&l, "__scheme__") == NULL &&
         !pg_labels_set(&l, "__scheme__", job->scheme)) ||
        !pg_labels_set(&l, "__name__", p->name) ||
        !pg_labels_set(&l, "__profile_path__", p->path)) {
        pg_labels_free(&l);
        return NULL;
    }
    for (size_t i = 0; i < job->params.n; i++) {
        char name[200];

        snprintf(name, sizeof(name), "__param_%s", job->params.keys[i]);
        if (pg_labels_get(&l, name) == NULL && !pg_labels_set(&l, name, job->params.values[i])) {
            pg_labels_free(&l);
            return NULL;
        }
    }
    if (!pg_relabel_apply(job->relabel, job->n_relabel, &l) ||
        (a = pg_labels_get(&l, "__address__")) == NULL) {
        pg_labels_free(&l);
        (*dropped)++;
        return NULL;
    }
    scheme = pg_labels_get(&l, "__scheme__");
    scheme = scheme != NULL ? scheme : job->scheme;
    snprintf(addr, sizeof(addr), "%s", a);
    pg_scrape_add_port(addr, sizeof(addr), scheme);
    path = pg_labels_get(&l, "__profile_path__");
    snprintf(pq, sizeof(pq), "%s%s", path && path[0] == '/' ? "" : "/", path ? path : "");
    has_seconds = pg_scrape_query(pq, sizeof(pq), &job->params, &l);
    if (seconds > 0 && !has_seconds) {
        snprintf(secs, sizeof(secs), "%lld", (long long)seconds);
        append_query(pq, sizeof(pq), "seconds", secs);
    }
    if ((t = calloc(1, sizeof(*t))) == NULL) {
        pg_labels_free(&l);
        return NULL;
    }
    t->s = s;
    t->job_index = ji;
    t->job = job;
    t->prof = p;
    t->health = -1;
    t->tls = strcmp(scheme, "https") == 0;
    if (!pg_scrape_split_target(addr, &t->host, &t->port)) {
        pg_log_warn(LOG_NAME, "job %s: target address \"%s\" is not host:port; dropped",
                    job->job_name, addr);
        pg_labels_free(&l);
        free(t);
        (*dropped)++;
        return NULL;
    }
    if (pg_labels_get(&l, "instance") == NULL) {
        pg_labels_set(&l, "instance", addr);
    }
    snprintf(url, sizeof(url), "%s://%s%s", scheme, addr, pq);
    t->url = strdup(url);
    t->path_query = strdup(pq);
    t->src = src;
    t->source = src->name;
    /* Drop the "__" labels now that the URL is built. */
    for (size_t i = 0; i < l.n;) {
        if (strncmp(l.v[i].name, "__", 2) == 0) {
            char name[256];

            snprintf(name, sizeof(name), "%s", l.v[i].name);
            pg_labels_del(&l, name);
        } else {
            i++;
        }
    }
    for (size_t i = 0; i < s->cfg->external_labels.n; i++) {
        if (pg_labels_get(&l, s->cfg->external_labels.keys[i]) == NULL) {
            pg_labels_set(&l, s->cfg->external_labels.keys[i], s->cfg->external_labels.values[i]);
        }
    }
    t->labels = l;
    if (t->url == NULL || t->path_query == NULL ||
        !pg_scrape_resource_labels(&t->labels, job->is_remote, &t->attrs)) {
        target_free(t);
        return NULL;
    }
    t->url_hash = 1469598103934665603ULL;
    for (const char *c = t->url; *c; c++) {
        t->url_hash = (t->url_hash ^ (unsigned char)*c) * 1099511628211ULL;
    }
    t->identity = pg_labels_hash(&t->labels) ^ t->url_hash;
    return t;
}

/* ---- indexes: metric groups and sources ------------------------------------ */

static struct pg_scrape_mgroup *mgroup_ref(struct pg_scraper *s, const char *labels)
{
    uint64_t h = pg_hash_str(PG_HASH_SEED, labels);
    struct pg_scrape_mgroup *g;

    for (struct pg_hnode *e = pg_htab_chain(&s->mgroups, h); e != NULL; e = e->next) {
        g = (struct pg_scrape_mgroup *)e;
        if (e->hash == h && strcmp(g->labels, labels) == 0) {
            g->refs++;
            return g;
        }
    }
    if ((g = calloc(1, sizeof(*g))) == NULL || (g->labels = strdup(labels)) == NULL ||
        !pg_htab_add(&s->mgroups, &g->h, h)) {
        if (g != NULL) {
            free(g->labels);
        }
        free(g);
        return NULL; /* its series then stay until the process ends */
    }
    g->refs = 1;
    return g;
}

/* Drops one reference; the last removes the group's series (@remove) and frees it. */
static void mgroup_unref(struct pg_scraper *s, struct pg_scrape_mgroup *g, bool remove)
{
    if (g == NULL || --g->refs > 0) {
        return;
    }
    for (size_t i = 0; remove && i < g->n_series; i++) {
        pg_metric_remove(g->series[i]);
    }
    pg_htab_del(&s->mgroups, &g->h);
    free(g->series);
    free(g->labels);
    free(g);
}

void pg_scrape_track_series(struct pg_scrape_target *t, struct pg_metric *m)
{
    struct pg_scrape_mgroup *g = t->mg;

    if (g == NULL) {
        return;
    }
    for (size_t i = 0; i < g->n_series; i++) {
        if (g->series[i] == m) {
            return;
        }
    }
    if (PG_VEC_GROW(NULL, g->series, g->cap_series, g->n_series, 8, 0)) {
        g->series[g->n_series++] = m;
    }
}

static struct pg_scrape_source *source_get(struct pg_scraper *s, size_t ji, const char *name)
{
    uint64_t h = pg_hash_str(PG_HASH_SEED ^ ji, name);
    struct pg_scrape_source *src;

    for (struct pg_hnode *e = pg_htab_chain(&s->sources, h); e != NULL; e = e->next) {
        src = (struct pg_scrape_source *)e;
        if (e->hash == h && src->job_index == ji && strcmp(src->name, name) == 0) {
            return src;
        }
    }
    if ((src = calloc(1, sizeof(*src))) == NULL || (src->name = strdup(name)) == NULL ||
        !pg_htab_add(&s->sources, &src->h, h)) {
        if (src != NULL) {
            free(src->name);
        }
        free(src);
        return NULL;
    }
    src->job_index = ji;
    return src;
}

static void source_free(struct pg_scraper *s, struct pg_scrape_source *src)
{
    pg_htab_del(&s->sources, &src->h);
    free(src->name);
    free(src);
}

static void target_begin(struct pg_scrape_target *t)
{
    struct pg_scraper *s = t->s;
    const struct pg_scrape_job *job = t->job;
    char jv[128], iv[200], pv[64];
    int64_t now = pg_mono_ns(), interval = job->interval_ns;

    metric_value(jv, sizeof(jv), job->job_name);
    metric_value(iv, sizeof(iv), pg_labels_get(&t->labels, "instance"));
    metric_value(pv, sizeof(pv), t->prof->name);
    snprintf(t->mlabels, sizeof(t->mlabels), "receiver=\"%s\",job=\"%s\",instance=\"%s\",profile=\"%s\"",
             s->receiver_id, jv, iv, pv);
    t->mg = mgroup_ref(s, t->mlabels);
    t->m_up = pg_metric_gauge("pprofgate_scrape_target_up",
                              "1 when the target's last scrape delivered a profile, else 0.",
                              t->mlabels);
    {
        static const double b[] = {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120};

        t->m_dur = pg_metric_histogram("pprofgate_scrape_duration_seconds",
                                       "Time from request to response per scrape.", t->mlabels, b,
                                       sizeof(b) / sizeof(b[0]));
    }
    t->m_bytes = pg_metric_counter("pprofgate_scrape_bytes_total",
                                   "Response body bytes received from targets.", t->mlabels);
    t->m_samples = pg_metric_counter("pprofgate_scrape_samples_total",
                                     "OTLP sample records produced from scraped profiles.",
                                     t->mlabels);
    t->m_skipped = pg_metric_counter("pprofgate_scrape_skipped_ticks_total",
                                     "Scrape ticks missed because a request to the same URL was "
                                     "still running (never doubled).",
                                     t->mlabels);
    t->m_scrapes = pg_metric_counter("pprofgate_scrape_requests_total",
                                     "Scrape requests sent.", t->mlabels);
    pg_scrape_track_series(t, t->m_up);
    pg_scrape_track_series(t, t->m_dur);
    pg_scrape_track_series(t, t->m_bytes);
    pg_scrape_track_series(t, t->m_samples);
    pg_scrape_track_series(t, t->m_skipped);
    pg_scrape_track_series(t, t->m_scrapes);
    t->timer = evtimer_new(s->host->base, on_tick, t);
    if (t->timer == NULL) {
        return;
    }
    if (job->initial_delay_ns >= 0) {
        t->deadline_ns = now + job->initial_delay_ns;
    } else {
        /* A stable offset inside the interval per target, so restarts and
         * many targets do not scrape in one burst. */
        int64_t offset = (int64_t)(t->identity % (uint64_t)interval);

        t->deadline_ns = now - now % interval + offset;
        if (t->deadline_ns <= now) {
            t->deadline_ns += interval;
        }
    }
    arm(t);
}

static void update_job_gauges(struct pg_scraper *s, size_t ji)
{
    struct pg_scrape_job_state *js = &s->jobs[ji];

    if (js->m_active == NULL) {
        char jv[128], l[256];

        metric_value(jv, sizeof(jv), s->cfg->jobs[ji].job_name);
        snprintf(l, sizeof(l), "receiver=\"%s\",job=\"%s\",state=\"active\"", s->receiver_id, jv);
        js->m_active = pg_metric_gauge("pprofgate_scrape_targets",
                                       "Targets per job after relabeling (active) or dropped by it.",
                                       l);
        snprintf(l, sizeof(l), "receiver=\"%s\",job=\"%s\",state=\"dropped\"", s->receiver_id, jv);
        js->m_dropped = pg_metric_gauge("pprofgate_scrape_targets",
                                        "Targets per job after relabeling (active) or dropped by it.",
                                        l);
    }
    pg_metric_set(js->m_active, (int64_t)js->active);
    pg_metric_set(js->m_dropped, (int64_t)js->dropped);
}

/* ---- pacing ----------------------------------------------------------------- */

static void run_op(struct pg_scraper *s, struct pg_scrape_op op)
{
    if (op.free) {
        /* A gone target's series go with it (pod churn must not grow
         * /metrics), unless a live target has the same job/instance/profile:
         * the metric group is shared, so a re-sourced target keeps its counters. */
        mgroup_unref(s, op.t->mg, true);
        target_free(op.t);
    } else if (s->started && !s->stopped) {
        target_begin(op.t);
    }
}

static void on_pace(evutil_socket_t fd, short what, void *arg)
{
    struct pg_scraper *s = arg;
    struct timeval zero = {0, 0};

    (void)fd;
    (void)what;
    for (size_t k = 0; k < PACE_SLICE && s->ops_head < s->n_ops; k++) {
        run_op(s, s->ops[s->ops_head++]);
    }
    if (s->ops_head < s->n_ops) {
        evtimer_add(s->pace, &zero); /* the rest after the loop's other events */
    } else {
        s->ops_head = s->n_ops = 0;
    }
}

/* Queues @t's begin or free; done at once when no pacing timer exists. */
static void queue_op(struct pg_scraper *s, struct pg_scrape_target *t, bool free_it)
{
    struct pg_scrape_op op = {t, free_it};
    struct timeval zero = {0, 0};

    if (s->pace == NULL && s->host != NULL && s->host->base != NULL) {
        s->pace = evtimer_new(s->host->base, on_pace, s);
    }
    if (s->pace == NULL || !PG_VEC_GROW(NULL, s->ops, s->cap_ops, s->n_ops, 256, 0)) {
        run_op(s, op);
        return;
    }
    s->ops[s->n_ops++] = op;
    if (!evtimer_pending(s->pace, NULL)) {
        evtimer_add(s->pace, &zero);
    }
}

/* Same target: same source, identity and URL, not yet claimed by this sync. */
static struct pg_scrape_target *find_known(struct pg_scraper *s, const struct pg_scrape_target *t)
{
    for (struct pg_hnode *e = pg_htab_chain(&s->index, t->identity); e != NULL; e = e->next) {
        struct pg_scrape_target *o = (struct pg_scrape_target *)e;

        if (o != t && e->hash == t->identity && o->src == t->src && !o->marked &&
            strcmp(o->url, t->url) == 0) {
            return o;
        }
    }
    return NULL;
}

/* Replaces the targets of one source. Costs what the source held and holds
 * (hash lookups), not what the scraper holds: a pod event or one file group
 * among thousands stays cheap. */
void pg_scraper_sync(struct pg_scraper *s, size_t ji, const char *source,
                     const struct pg_scrape_tg_target *tg, size_t n)
{
    const struct pg_scrape_job *job = &s->cfg->jobs[ji];
    struct pg_scrape_job_state *js = &s->jobs[ji];
    struct pg_scrape_source *src = source_get(s, ji, source);
    struct pg_scrape_target *fresh = NULL, *gone = NULL, *kept = NULL;
    size_t added = 0, removed = 0, dropped = 0;

    if (src == NULL) {
        pg_log_warn(LOG_NAME, "job %s: %s: out of memory; targets unchanged", job->job_name,
                    source);
        return;
    }
    for (struct pg_scrape_target *t = src->targets; t != NULL; t = t->next_src) {
        t->marked = false;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < job->n_profiles; k++) {
            struct pg_scrape_target *t, *o;

            if (!job->profiles[k].enabled) {
                continue;
            }
            t = build_target(s, ji, src, &tg[i], &job->profiles[k], &dropped);
            if (t == NULL) {
                continue;
            }
            if ((o = find_known(s, t)) != NULL) {
                o->marked = true;
                target_free(t);
                continue;
            }
            if (!pg_htab_add(&s->index, &t->h, t->identity)) {
                target_free(t);
                continue;
            }
            t->marked = true;
            t->next_src = fresh;
            fresh = t;
        }
    }
    /* This source's targets that are gone leave every index (freed below). */
    while (src->targets != NULL) {
        struct pg_scrape_target *t = src->targets;

        src->targets = t->next_src;
        if (t->marked) {
            t->next_src = kept;
            kept = t;
            continue;
        }
        pg_htab_del(&s->index, &t->h);
        if (t->timer != NULL) {
            event_del(t->timer); /* no more ticks while it waits to be freed */
        }
        t->pending = false;
        if (t->prev != NULL) {
            t->prev->next = t->next;
        } else {
            s->targets = t->next;
        }
        if (t->next != NULL) {
            t->next->prev = t->prev;
        }
        t->next_src = gone;
        gone = t;
        removed++;
    }
    src->targets = kept;
    while (fresh != NULL) {
        struct pg_scrape_target *t = fresh;

        fresh = t->next_src;
        t->next_src = src->targets;
        src->targets = t;
        t->prev = NULL;
        t->next = s->targets;
        if (s->targets != NULL) {
            s->targets->prev = t;
        }
        s->targets = t;
        if (s->started && !s->stopped) {
            queue_op(s, t, false);
        }
        added++;
    }
    /* Freed after the begins queued above: a new target that shares a gone
     * one's labels takes its metric group first. */
    while (gone != NULL) {
        struct pg_scrape_target *t = gone;

        gone = t->next_src;
        queue_op(s, t, true);
    }
    src->n_targets = src->n_targets + added - removed;
    js->active = js->active + added - removed;
    js->dropped = js->dropped - src->dropped + dropped;
    src->dropped = dropped;
    if (src->n_targets == 0 && src->dropped == 0) {
        source_free(s, src);
    }
    update_job_gauges(s, ji);
    if (added || removed) {
        pg_log_info(LOG_NAME, "job %s: %s: %zu targets added, %zu removed (%zu active, %zu dropped "
                              "by relabeling)",
                    job->job_name, source, added, removed, js->active, js->dropped);
    }
}

/* ---- lifecycle ------------------------------------------------------------ */

enum pg_err pg_scraper_start(struct pg_scraper *s, struct pg_status *st)
{
    char labels[200], desc[1024];

    snprintf(labels, sizeof(labels), "receiver=\"%s\",transport=\"scrape\"", s->receiver_id);
    pg_receiver_sample_counters(labels, &s->m_accepted, &s->m_refused);
    for (size_t ji = 0; ji < s->cfg->n_jobs; ji++) {
        const struct pg_scrape_job *job = &s->cfg->jobs[ji];

        pg_scrape_job_describe(job, desc, sizeof(desc));
        pg_log_info(LOG_NAME, "job %s: every %.3gs (timeout %.3gs): %s", job->job_name,
                    (double)job->interval_ns / 1e9, (double)job->timeout_ns / 1e9, desc);
        for (size_t g = 0; g < job->n_groups; g++) {
            const struct pg_scrape_group *grp = &job->groups[g];
            struct pg_labels gl = {0};
            struct pg_scrape_tg_target *tg = calloc(grp->targets.n + 1, sizeof(*tg));
            char source[64];

            if (tg == NULL) {
                return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
            }
            for (size_t i = 0; i < grp->labels.n; i++) {
                pg_labels_set(&gl, grp->labels.keys[i], grp->labels.values[i]);
            }
            for (size_t i = 0; i < grp->targets.n; i++) {
                tg[i].address = grp->targets.v[i];
                tg[i].labels = &gl;
            }
            snprintf(source, sizeof(source), "static/%zu", g);
            pg_scraper_sync(s, ji, source, tg, grp->targets.n);
            pg_labels_free(&gl);
            free(tg);
        }
        update_job_gauges(s, ji);
    }
    s->started = true;
    for (struct pg_scrape_target *t = s->targets; t != NULL; t = t->next) {
        target_begin(t);
    }
    if (pg_file_sd_start(s, s->host->base, s->cfg, &s->file_sd, st) != PG_ERR_OK ||
        pg_k8s_sd_start(s, s->host->base, s->cfg, &s->k8s_sd, st) != PG_ERR_OK) {
        return st->code;
    }
    s->next_global = g_scrapers;
    g_scrapers = s;
    return PG_ERR_OK;
}

void pg_scraper_stop(struct pg_scraper *s)
{
    if (s == NULL || s->stopped) {
        return;
    }
    s->stopped = true;
    pg_file_sd_free(s->file_sd);
    s->file_sd = NULL;
    pg_k8s_sd_free(s->k8s_sd);
    s->k8s_sd = NULL;
    for (struct pg_scrape_target *t = s->targets; t != NULL; t = t->next) {
        if (t->timer != NULL) {
            event_del(t->timer);
        }
        t->pending = false;
        /* A profile window (seconds=N) would hold the drain for N seconds
         * for data nobody waits for: cancel it. Plain snapshots finish. */
        if (t->call != NULL && pg_scrape_profile_seconds(t->job, t->prof) > 0) {
            pg_http_call_cancel(t->call);
            t->call = NULL;
            pg_scrape_inflight_del(t);
        }
    }
}

bool pg_scraper_idle(const struct pg_scraper *s)
{
    return s == NULL || s->in_flight == 0;
}

void pg_scraper_destroy(struct pg_scraper *s)
{
    struct pg_scraper **pp;

    if (s == NULL) {
        return;
    }
    pg_scraper_stop(s);
    for (pp = &g_scrapers; *pp != NULL; pp = &(*pp)->next_global) {
        if (*pp == s) {
            *pp = s->next_global;
            break;
        }
    }
    /* Pending begins are dropped (their targets are in the list below);
     * pending frees are done. */
    for (size_t i = s->ops_head; i < s->n_ops; i++) {
        if (s->ops[i].free) {
            mgroup_unref(s, s->ops[i].t->mg, false);
            target_free(s->ops[i].t);
        }
    }
    free(s->ops);
    if (s->pace != NULL) {
        event_free(s->pace);
    }
    /* The series stay: a reloaded scraper with the same targets continues them. */
    while (s->targets != NULL) {
        struct pg_scrape_target *t = s->targets;

        s->targets = t->next;
        mgroup_unref(s, t->mg, false);
        target_free(t);
    }
    for (size_t i = 0; i < s->sources.cap; i++) {
        while (s->sources.b[i] != NULL) {
            source_free(s, (struct pg_scrape_source *)s->sources.b[i]);
        }
    }
    pg_htab_free(&s->sources);
    pg_htab_free(&s->index);
    pg_htab_free(&s->mgroups);
    for (size_t i = 0; i < s->cfg->n_jobs; i++) {
        if (s->jobs[i].ssl != NULL) {
            SSL_CTX_free(s->jobs[i].ssl);
        }
    }
    free(s->jobs);
    free(s);
}

/* ---- /targets -------------------------------------------------------------- */

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);

    /* JSON must be UTF-8: a byte that starts no valid sequence is U+FFFD. */
    for (size_t i = 0; i < n;) {
        size_t k = pg_utf8_seq(p + i, n - i);

        if (k == 0) {
            fputs("\\ufffd", out);
            i++;
        } else if (p[i] == '"' || p[i] == '\\') {
            fprintf(out, "\\%c", p[i++]);
        } else if (p[i] < 0x20 || p[i] == 0x7f) {
            fprintf(out, "\\u%04x", p[i++]);
        } else {
            fwrite(p + i, 1, k, out);
            i += k;
        }
    }
    fputc('"', out);
}

static void write_targets(const struct pg_scraper *s, FILE *out, bool *firstp)
{
    bool first = *firstp;

    for (const struct pg_scrape_target *t = s->targets; t != NULL; t = t->next) {
        fputs(first ? "\n    {" : ",\n    {", out);
        first = false;
        fputs("\"job\":", out);
        json_str(out, t->job->job_name);
        fputs(",\"profile\":", out);
        json_str(out, t->prof->name);
        fputs(",\"scrapeUrl\":", out);
        json_str(out, t->url);
        fputs(",\"source\":", out);
        json_str(out, t->source);
        fputs(",\"labels\":{", out);
        for (size_t i = 0; i < t->labels.n; i++) {
            if (i) {
                fputc(',', out);
            }
            json_str(out, t->labels.v[i].name);
            fputc(':', out);
            json_str(out, t->labels.v[i].value);
        }
        fputs("},\"health\":", out);
        json_str(out, t->health == 1 ? "up" : t->health == 0 ? "down" : "unknown");
        fputs(",\"lastError\":", out);
        json_str(out, t->last_error);
        fprintf(out, ",\"lastScrapeUnixMs\":%lld,\"lastScrapeDurationSeconds\":%.6f,"
                     "\"scrapes\":%llu,\"skippedTicks\":%llu,\"inFlight\":%s}",
                (long long)t->last_unix_ms, t->last_duration, (unsigned long long)t->scrapes,
                (unsigned long long)t->skipped, t->call != NULL ? "true" : "false");
    }
    *firstp = first;
}

void pg_scraper_write_targets_json(const struct pg_scraper *s, FILE *out)
{
    bool first = true;

    write_targets(s, out, &first);
}

void pg_scrape_targets_json(FILE *out)
{
    size_t dropped = 0;
    bool first = true;

    fputs("{\"activeTargets\":[", out);
    for (const struct pg_scraper *s = g_scrapers; s != NULL; s = s->next_global) {
        write_targets(s, out, &first);
        for (size_t i = 0; i < s->cfg->n_jobs; i++) {
            dropped += s->jobs[i].dropped;
        }
    }
    fprintf(out, "\n  ],\"droppedTargets\":%zu}\n", dropped);
}
