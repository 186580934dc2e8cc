/* SPDX-License-Identifier: Apache-2.0
 * Discovery's sink: pg_scraper_sync diffs a source's new addresses against
 * the ones it holds (by hash of address + group labels) and queues only the
 * difference as work for the loop: build (relabel, begin) an added address's
 * targets, free a removed one's. The queue runs in slices across loop
 * passes, so a 20 000-target file rewrite costs hashing on the loop at once
 * and what changed in slices of PACE_BUDGET_NS. Ownership: the scraper owns its
 * sources; a source owns its addresses (struct pg_scrape_raw) until a free
 * op takes one; an address owns the targets built from it. */
#include "scrape/scrape_internal.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/vec.h"

/* ---- sources and their addresses ------------------------------------------ */

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

static void glabels_unref(struct pg_scrape_glabels *g)
{
    if (g != NULL && --g->refs == 0) {
        pg_labels_free(&g->l);
        free(g);
    }
}

static void raw_free(struct pg_scrape_raw *r)
{
    glabels_unref(r->gl);
    free(r->address);
    free(r);
}

/* Frees @src when nothing refers to it any more. */
static void source_maybe_free(struct pg_scraper *s, struct pg_scrape_source *src)
{
    if (src->raws.n > 0 || src->pending > 0) {
        return;
    }
    pg_htab_del(&s->sources, &src->h);
    pg_htab_free(&src->raws);
    free(src->name);
    free(src);
}

static bool labels_equal(const struct pg_labels *a, const struct pg_labels *b)
{
    if (a->n != b->n) {
        return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        if (strcmp(a->v[i].name, b->v[i].name) != 0 || strcmp(a->v[i].value, b->v[i].value) != 0) {
            return false;
        }
    }
    return true;
}

static struct pg_scrape_raw *raw_find(const struct pg_scrape_source *src, uint64_t h,
                                      const char *address, const struct pg_labels *l)
{
    for (struct pg_hnode *e = pg_htab_chain(&src->raws, h); e != NULL; e = e->next) {
        struct pg_scrape_raw *r = (struct pg_scrape_raw *)e;

        if (e->hash == h && strcmp(r->address, address) == 0 && labels_equal(&r->gl->l, l)) {
            return r;
        }
    }
    return NULL;
}

/* ---- the work queue ---------------------------------------------------------- */

/* Same target: same source, identity and URL (two addresses that relabel
 * to one target make one target). */
static bool known(struct pg_scraper *s, const struct pg_scrape_target *t)
{
    for (struct pg_hnode *e = pg_htab_chain(&s->index, t->identity); e != NULL; e = e->next) {
        struct pg_scrape_target *o = (struct pg_scrape_target *)e;

        if (o != t && e->hash == t->identity && o->src == t->src && strcmp(o->url, t->url) == 0) {
            return true;
        }
    }
    return false;
}

static void build(struct pg_scraper *s, struct pg_scrape_raw *r)
{
    struct pg_scrape_source *src = r->src;
    const struct pg_scrape_job *job = &s->cfg->jobs[src->job_index];
    struct pg_scrape_job_state *js = &s->jobs[src->job_index];
    struct pg_scrape_tg_target tg = {r->address, &r->gl->l};
    size_t dropped = 0;

    if (js->m_builds == NULL) {
        pg_scrape_job_gauges(s, src->job_index);
    }
    pg_metric_add(js->m_builds, 1);
    for (size_t k = 0; k < job->n_profiles; k++) {
        struct pg_scrape_target *t;

        if (!job->profiles[k].enabled ||
            (t = pg_scrape_target_build(s, src->job_index, src, &tg, &job->profiles[k],
                                        &dropped)) == NULL) {
            continue;
        }
        if (known(s, t) || !pg_htab_add(&s->index, &t->h, t->identity)) {
            pg_scrape_target_free(t);
            continue;
        }
        t->next_src = r->targets;
        r->targets = t;
        t->prev = NULL;
        t->next = s->targets;
        if (s->targets != NULL) {
            s->targets->prev = t;
        }
        s->targets = t;
        src->n_targets++;
        src->added++;
        js->active++;
        if (s->started && !s->stopped) {
            pg_scrape_target_begin(t);
        }
    }
    r->dropped = dropped;
    src->dropped += dropped;
    js->dropped += dropped;
}

/* A removed address: its targets leave every index and are freed, with
 * their series (pod churn must not grow /metrics) unless a live target has
 * the same job/instance/profile (the metric group is shared, so a
 * re-sourced target keeps its counters). */
static void unbuild(struct pg_scraper *s, struct pg_scrape_raw *r, bool remove_series)
{
    struct pg_scrape_source *src = r->src;
    struct pg_scrape_job_state *js = &s->jobs[src->job_index];

    while (r->targets != NULL) {
        struct pg_scrape_target *t = r->targets;

        r->targets = t->next_src;
        pg_htab_del(&s->index, &t->h);
        if (t->prev != NULL) {
            t->prev->next = t->next;
        } else {
            s->targets = t->next;
        }
        if (t->next != NULL) {
            t->next->prev = t->prev;
        }
        pg_scrape_mgroup_unref(s, t->mg, remove_series);
        pg_scrape_target_free(t);
        src->n_targets--;
        src->removed++;
        js->active--;
    }
    src->dropped -= r->dropped;
    js->dropped -= r->dropped;
    r->dropped = 0;
}

static void run_op(struct pg_scraper *s, struct pg_scrape_op op)
{
    struct pg_scrape_source *src = op.raw->src;
    const struct pg_scrape_job *job = &s->cfg->jobs[src->job_index];
    struct pg_scrape_job_state *js = &s->jobs[src->job_index];

    if (op.free) {
        unbuild(s, op.raw, true);
        raw_free(op.raw);
    } else {
        build(s, op.raw);
    }
    src->pending--;
    if (src->pending == 0 && (src->added || src->removed)) {
        pg_log_info(LOG_NAME, "job %s: %s: %zu targets added, %zu removed (%zu active, %zu dropped "
                              "by relabeling)",
                    job->job_name, src->name, src->added, src->removed, js->active, js->dropped);
        src->added = src->removed = 0;
    }
    if (src->pending == 0) {
        pg_scrape_job_gauges(s, src->job_index);
        source_maybe_free(s, src);
    }
}

static void on_pace(evutil_socket_t fd, short what, void *arg)
{
    struct pg_scraper *s = arg;
    struct timeval zero = {0, 0};

    (void)fd;
    (void)what;
    int64_t end = pg_mono_ns() + PACE_BUDGET_NS;

    /* A slice ends on time, not on a count: an op costs ~30 us idle but
     * ten times that on a busy machine. */
    for (size_t k = 0; s->ops_head < s->n_ops; k++) {
        if (k % 16 == 15 && pg_mono_ns() >= end) {
            break;
        }
        run_op(s, s->ops[s->ops_head++]);
    }
    if (s->ops_head < s->n_ops) {
        evtimer_add(s->pace, &zero); /* the rest after the loop's other events */
    } else {
        s->ops_head = s->n_ops = 0;
    }
}

/* Queues @r's build or free; done at once when no pacing timer exists. */
static void queue_op(struct pg_scraper *s, struct pg_scrape_raw *r, bool free_it)
{
    struct pg_scrape_op op = {r, free_it};
    struct timeval zero = {0, 0};

    r->src->pending++;
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

void pg_scrape_sync_drain(struct pg_scraper *s)
{
    while (s->ops_head < s->n_ops) {
        run_op(s, s->ops[s->ops_head++]);
    }
    s->ops_head = s->n_ops = 0;
}

/* ---- the sink ------------------------------------------------------------------ */

void pg_scraper_sync(struct pg_scraper *s, size_t ji, const char *source,
                     const struct pg_scrape_tg_target *tg, size_t n)
{
    const struct pg_scrape_job *job = &s->cfg->jobs[ji];
    struct pg_scrape_source *src = source_get(s, ji, source);
    const struct pg_labels *last_l = NULL;
    struct pg_scrape_glabels *gl = NULL;
    struct pg_scrape_raw *gone = NULL;
    uint64_t lh = 0;

    if (src == NULL) {
        pg_log_warn(LOG_NAME, "job %s: %s: out of memory; targets unchanged", job->job_name,
                    source);
        return;
    }
    src->pending++; /* keeps @src while this sync's own ops may run at once */
    for (size_t i = 0; i < n; i++) {
        static const struct pg_labels none;
        const struct pg_labels *l = tg[i].labels != NULL ? tg[i].labels : &none;
        struct pg_scrape_raw *r;
        uint64_t h;

        /* A group's targets share one label set: hashed and copied once. */
        if (l != last_l) {
            last_l = l;
            lh = pg_labels_hash(l);
            glabels_unref(gl);
            gl = NULL;
        }
        h = pg_hash_str(lh, tg[i].address);
        if ((r = raw_find(src, h, tg[i].address, l)) != NULL) {
            r->seen = src->epoch + 1;
            continue;
        }
        if (gl == NULL && (gl = calloc(1, sizeof(*gl))) != NULL) {
            gl->refs = 1; /* this loop's */
            if (!pg_labels_copy(&gl->l, l)) {
                free(gl);
                gl = NULL;
            }
        }
        if (gl == NULL || (r = calloc(1, sizeof(*r))) == NULL ||
            (r->address = strdup(tg[i].address)) == NULL || !pg_htab_add(&src->raws, &r->h, h)) {
            if (r != NULL) {
                free(r->address);
            }
            free(r);
            pg_log_warn(LOG_NAME, "job %s: %s: out of memory; target %s skipped", job->job_name,
                        source, tg[i].address);
            continue;
        }
        gl->refs++;
        r->gl = gl;
        r->src = src;
        r->seen = src->epoch + 1;
        queue_op(s, r, false);
    }
    glabels_unref(gl);
    /* Addresses this sync did not list go (freed after the builds queued
     * above: a new target that shares a gone one's labels takes its metric
     * group first). */
    src->epoch++;
    for (size_t b = 0; b < src->raws.cap; b++) {
        for (struct pg_hnode *e = src->raws.b[b], *nx; e != NULL; e = nx) {
            struct pg_scrape_raw *r = (struct pg_scrape_raw *)e;

            nx = e->next;
            if (r->seen != src->epoch) {
                pg_htab_del(&src->raws, e);
                r->h.next = gone != NULL ? &gone->h : NULL; /* h is first: a raw is its node */
                gone = r;
            }
        }
    }
    while (gone != NULL) {
        struct pg_scrape_raw *r = gone;

        gone = (struct pg_scrape_raw *)r->h.next;
        queue_op(s, r, true);
    }
    src->pending--;
    if (src->pending == 0) {
        pg_scrape_job_gauges(s, ji);
        source_maybe_free(s, src);
    }
}

/* Destroy: pending builds are dropped (their addresses are in the sources
 * below), pending frees are done; the series stay (a reloaded scraper with
 * the same targets continues them). */
void pg_scrape_sync_free(struct pg_scraper *s)
{
    for (size_t i = s->ops_head; i < s->n_ops; i++) {
        if (s->ops[i].free) {
            unbuild(s, s->ops[i].raw, false);
            raw_free(s->ops[i].raw);
        }
    }
    free(s->ops);
    s->ops = NULL;
    s->n_ops = s->ops_head = 0;
    if (s->pace != NULL) {
        event_free(s->pace);
        s->pace = NULL;
    }
    for (size_t i = 0; i < s->sources.cap; i++) {
        while (s->sources.b[i] != NULL) {
            struct pg_scrape_source *src = (struct pg_scrape_source *)s->sources.b[i];

            for (size_t b = 0; b < src->raws.cap; b++) {
                while (src->raws.b[b] != NULL) {
                    struct pg_scrape_raw *r = (struct pg_scrape_raw *)src->raws.b[b];

                    pg_htab_del(&src->raws, &r->h);
                    unbuild(s, r, false);
                    raw_free(r);
                }
            }
            src->pending = 0;
            source_maybe_free(s, src);
        }
    }
    pg_htab_free(&s->sources);
}
