/* SPDX-License-Identifier: Apache-2.0
 * The scraper's self-metric series: per-target series grouped by their
 * label set (struct pg_scrape_mgroup, shared by targets with equal labels,
 * removed with the last of them) and the per-job target gauges. */
#include "scrape/scrape_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "core/vec.h"

struct pg_scrape_mgroup *pg_scrape_mgroup_ref(struct pg_scraper *s, const char *labels)
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
void pg_scrape_mgroup_unref(struct pg_scraper *s, struct pg_scrape_mgroup *g, bool remove)
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

void pg_scrape_job_gauges(struct pg_scraper *s, size_t ji)
{
    struct pg_scrape_job_state *js = &s->jobs[ji];

    if (js->m_active == NULL) {
        char jv[128], l[256];

        pg_scrape_metric_value(jv, sizeof(jv), s->cfg->jobs[ji].job_name);
        snprintf(l, sizeof(l), "receiver=\"%s\",job=\"%s\",state=\"active\"", s->receiver_id, jv);
        js->m_active = pg_metric_gauge("pprofgate_scrape_targets",
                                       "Targets per job after relabeling (active) or dropped by it.",
                                       l);
        snprintf(l, sizeof(l), "receiver=\"%s\",job=\"%s\",state=\"dropped\"", s->receiver_id, jv);
        js->m_dropped = pg_metric_gauge("pprofgate_scrape_targets",
                                        "Targets per job after relabeling (active) or dropped by it.",
                                        l);
        snprintf(l, sizeof(l), "receiver=\"%s\",job=\"%s\"", s->receiver_id, jv);
        js->m_builds = pg_metric_counter("pprofgate_scrape_sd_builds_total",
                                         "Discovered addresses relabeled into targets: the work "
                                         "discovery churn costs (an unchanged address costs none).",
                                         l);
    }
    pg_metric_set(js->m_active, (int64_t)js->active);
    pg_metric_set(js->m_dropped, (int64_t)js->dropped);
}
