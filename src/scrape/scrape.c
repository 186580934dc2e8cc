/* SPDX-License-Identifier: Apache-2.0
 * The scraper's lifecycle (create, start: static targets and discovery,
 * stop, destroy) (see scrape.h and docs/scrape.md).
 * Calls go one way: scrape.c -> scrape_sync.c (discovery's sink) ->
 * scrape_target.c -> scrape_exchange.c (one scrape) -> scrape_series.c,
 * scrape_url.c; the /targets page is scrape_page.c. Ownership: the scraper owns its targets, sources and
 * discovery watchers. */
#include "scrape/scrape.h"
#include "scrape/scrape_internal.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/log.h"
#include "http/client.h"
#include "pipeline/receiver_metrics.h"
#include "scrape/file_sd.h"
#include "scrape/k8s_sd.h"

/* Running scrapers, for /targets (loop thread only). */
static struct pg_scraper *g_scrapers;

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

/* ---- lifecycle ------------------------------------------------------------ */

/* Discovery's sink: what file_sd and k8s_sd find goes to pg_scraper_sync. */
static void sink_sync(void *arg, size_t job, const char *source,
                      const struct pg_scrape_tg_target *tg, size_t n)
{
    pg_scraper_sync(arg, job, source, tg, n);
}

enum pg_err pg_scraper_start(struct pg_scraper *s, struct pg_status *st)
{
    char labels[200], desc[1024];
    const struct pg_sd_sink sink = {s, sink_sync};

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
        pg_scrape_job_gauges(s, ji);
    }
    s->started = true;
    pg_scrape_sync_drain(s); /* static targets are there when start returns */
    for (struct pg_scrape_target *t = s->targets; t != NULL; t = t->next) {
        pg_scrape_target_begin(t);
    }
    if (pg_file_sd_start(&sink, s->host->base, s->cfg, &s->file_sd, st) != PG_ERR_OK ||
        pg_k8s_sd_start(&sink, s->host->base, s->cfg, &s->k8s_sd, st) != PG_ERR_OK) {
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
    return s == NULL || (s->in_flight == 0 && s->works == 0);
}

void pg_scraper_set_lane(struct pg_scraper *s, const struct pg_work_lane *lane)
{
    s->lane = *lane;
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
    pg_scrape_work_cancel(s); /* before any target is freed: a work reads its target */
    pg_scrape_sync_free(s);
    /* The series stay: a reloaded scraper with the same targets continues
     * them. (Every target belongs to an address freed above; none is left.) */
    while (s->targets != NULL) {
        struct pg_scrape_target *t = s->targets;

        s->targets = t->next;
        pg_scrape_mgroup_unref(s, t->mg, false);
        pg_scrape_target_free(t);
    }
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

struct pg_scraper *pg_scrape_first_running(void)
{
    return g_scrapers;
}
