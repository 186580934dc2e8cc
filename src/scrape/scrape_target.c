/* SPDX-License-Identifier: Apache-2.0
 * One scrape target: built from a discovered address and a profile (labels,
 * relabeling, URL), begun (metric series, a timer at a stable offset inside
 * the interval), ticked, freed. Ownership: a target owns its label sets, URL
 * parts, timer and in-flight call; its metric group is shared (refcounted). */
#include "scrape/scrape_internal.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "http/client.h"

void pg_scrape_target_free(struct pg_scrape_target *t)
{
    if (t->call != NULL) {
        pg_http_call_cancel(t->call);
        pg_scrape_inflight_del(t);
        t->call = NULL;
    }
    if (t->timer != NULL) {
        event_free(t->timer);
        t->timer = NULL;
    }
    if (t->work != NULL) {
        t->dead = true; /* its translation reads it: the work's end frees the rest */
        return;
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
    if (t->call != NULL || t->work != NULL) {
        /* Our own scrape (or its translation) still runs (a CPU window is as long as the
         * interval): run again as soon as it ends, as a Go ticker would.
         * A second tick meanwhile is missed. */
        if (t->pending) {
            t->skipped++;
            pg_metric_add(t->m_skipped, 1);
        }
        t->pending = true;
        return;
    }
    if (pg_scrape_url_in_flight(t)) {
        t->skipped++;
        pg_metric_add(t->m_skipped, 1);
        pg_log_debug(LOG_NAME, "%s: another job is scraping the same URL; tick skipped", t->url);
        return;
    }
    pg_scrape_start_target(t);
}

/* Builds one target from a group entry and a profile: the Parca label order
 * (job, __scheme__, __name__, __profile_path__, __param_*), relabeling, then
 * address checks, instance and the URL. NULL when dropped (counted). */
struct pg_scrape_target *pg_scrape_target_build(struct pg_scraper *s, size_t ji,
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
        pg_scrape_append_query(pq, sizeof(pq), "seconds", secs);
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
        pg_scrape_target_free(t);
        return NULL;
    }
    t->url_hash = 1469598103934665603ULL;
    for (const char *c = t->url; *c; c++) {
        t->url_hash = (t->url_hash ^ (unsigned char)*c) * 1099511628211ULL;
    }
    t->identity = pg_labels_hash(&t->labels) ^ t->url_hash;
    return t;
}

void pg_scrape_target_begin(struct pg_scrape_target *t)
{
    struct pg_scraper *s = t->s;
    const struct pg_scrape_job *job = t->job;
    char jv[128], iv[200], pv[64];
    int64_t now = pg_mono_ns(), interval = job->interval_ns;

    if (t->timer != NULL) {
        return; /* begun already */
    }

    pg_scrape_metric_value(jv, sizeof(jv), job->job_name);
    pg_scrape_metric_value(iv, sizeof(iv), pg_labels_get(&t->labels, "instance"));
    pg_scrape_metric_value(pv, sizeof(pv), t->prof->name);
    snprintf(t->mlabels, sizeof(t->mlabels), "receiver=\"%s\",job=\"%s\",instance=\"%s\",profile=\"%s\"",
             s->receiver_id, jv, iv, pv);
    t->mg = pg_scrape_mgroup_ref(s, t->mlabels);
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
