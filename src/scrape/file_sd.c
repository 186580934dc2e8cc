/* SPDX-License-Identifier: Apache-2.0
 * file_sd_configs (see file_sd.h). The files go through the config loader's
 * YAML parser (JSON is YAML's flow syntax), nested under one key because the
 * loader wants a mapping at the top. Ownership: the watcher owns its file
 * table; the scraper owns the targets it builds from each group. */
#include "scrape/file_sd.h"

#include <glob.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/file_read.h"
#include "core/config.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/vec.h"
#include "scrape/scrape.h"

#define LOG_NAME "receiver/pprof/file_sd"
#define NS 1000000000LL
#define MAX_FILE_BYTES (16u << 20)
#define MAX_FILES 1024
#define POLL_MS 1000

struct watched {
    size_t job;
    char *path;             /* owned */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    size_t n_groups;        /* sources "file:<path>:<i>" currently synced */
    int64_t read_ns;        /* last read, monotonic */
    bool seen;              /* present in this poll */
};

struct pg_file_sd {
    struct pg_scraper *s;                /* borrowed */
    const struct pg_scrape_config *cfg;  /* borrowed */
    struct event *timer;                 /* owned */
    struct event *first;                 /* owned: the first read, once on the loop */
    struct watched *w;                   /* owned */
    size_t n, cap;
    struct pg_metric *m_reads, *m_failures;
};

/* ---- parsing ------------------------------------------------------------ */

long pg_file_sd_parse(const char *path, const char *text, size_t len, pg_file_sd_emit_fn emit,
                      void *arg, char *why, size_t why_size)
{
    size_t lines = 1, cap;
    char *wrapped, *o;
    struct pg_config *cfg;
    const struct pg_cfg_node *list;
    long n = 0;

    for (size_t i = 0; i < len; i++) {
        lines += text[i] == '\n';
        if (text[i] == '\0') {
            snprintf(why, why_size, "%s: NUL byte in the file", path);
            return -1;
        }
    }
    cap = len + 2 * lines + 8;
    if ((wrapped = malloc(cap)) == NULL) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    o = wrapped;
    memcpy(o, "g:\n  ", 5);
    o += 5;
    for (size_t i = 0; i < len; i++) {
        *o++ = text[i];
        if (text[i] == '\n') {
            *o++ = ' ';
            *o++ = ' ';
        }
    }
    *o++ = '\n';
    cfg = pg_config_load_string(path, wrapped, (size_t)(o - wrapped));
    free(wrapped);
    if (cfg == NULL) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    if (cfg->diag.n > 0 || cfg->root == NULL) {
        snprintf(why, why_size, "%s", cfg->diag.n ? cfg->diag.msgs[0] : "cannot parse");
        pg_config_free(cfg);
        return -1;
    }
    list = pg_cfg_get(cfg->root, "g");
    if (list == NULL || (list->kind != PG_CFG_SEQ && list->kind != PG_CFG_NULL)) {
        snprintf(why, why_size, "%s: expected a list of target groups", path);
        pg_config_free(cfg);
        return -1;
    }
    /* Validate everything first: a bad file changes nothing. */
    for (size_t i = 0; list->kind == PG_CFG_SEQ && i < list->n; i++) {
        const struct pg_cfg_node *g = list->items[i];

        if (g->kind != PG_CFG_MAP) {
            snprintf(why, why_size, "%s: group %zu is not a mapping", path, i);
            goto bad;
        }
        for (size_t k = 0; k < g->n; k++) {
            const char *key = g->keys[k]->value;
            const struct pg_cfg_node *v = g->items[k];

            if (strcmp(key, "targets") == 0) {
                if (v->kind != PG_CFG_SEQ && v->kind != PG_CFG_NULL) {
                    snprintf(why, why_size, "%s: group %zu: targets must be a list", path, i);
                    goto bad;
                }
                for (size_t j = 0; v->kind == PG_CFG_SEQ && j < v->n; j++) {
                    if (v->items[j]->kind != PG_CFG_SCALAR) {
                        snprintf(why, why_size, "%s: group %zu: targets must be strings", path, i);
                        goto bad;
                    }
                }
            } else if (strcmp(key, "labels") == 0) {
                if (v->kind != PG_CFG_MAP && v->kind != PG_CFG_NULL) {
                    snprintf(why, why_size, "%s: group %zu: labels must be a mapping", path, i);
                    goto bad;
                }
                for (size_t j = 0; v->kind == PG_CFG_MAP && j < v->n; j++) {
                    if (v->items[j]->kind != PG_CFG_SCALAR || v->keys[j]->value[0] == '\0') {
                        snprintf(why, why_size, "%s: group %zu: label values must be strings",
                                 path, i);
                        goto bad;
                    }
                }
            } else {
                snprintf(why, why_size, "%s: group %zu: unknown key \"%s\" (valid: targets, "
                                        "labels)", path, i, key);
                goto bad;
            }
        }
    }
    for (size_t i = 0; list->kind == PG_CFG_SEQ && i < list->n; i++) {
        const struct pg_cfg_node *g = list->items[i];
        const struct pg_cfg_node *tn = pg_cfg_get(g, "targets"), *ln = pg_cfg_get(g, "labels");
        struct pg_labels l = {0};
        const char **targets = calloc(tn && tn->kind == PG_CFG_SEQ ? tn->n + 1 : 1,
                                      sizeof(char *));
        size_t nt = 0;

        if (targets == NULL) {
            snprintf(why, why_size, "out of memory");
            goto bad;
        }
        for (size_t j = 0; tn != NULL && tn->kind == PG_CFG_SEQ && j < tn->n; j++) {
            targets[nt++] = tn->items[j]->value;
        }
        for (size_t j = 0; ln != NULL && ln->kind == PG_CFG_MAP && j < ln->n; j++) {
            pg_labels_set(&l, ln->keys[j]->value, ln->items[j]->value);
        }
        pg_labels_set(&l, "__meta_filepath", path);
        if (emit != NULL) {
            emit(arg, i, targets, nt, &l);
        }
        pg_labels_free(&l);
        free(targets);
        n++;
    }
    pg_config_free(cfg);
    return n;
bad:
    pg_config_free(cfg);
    return -1;
}

/* ---- watching ---------------------------------------------------------- */

struct emit_ctx {
    struct pg_file_sd *f;
    struct watched *w;
};

static void source_name(char *buf, size_t cap, const char *path, size_t i)
{
    snprintf(buf, cap, "file:%s:%zu", path, i);
}

static void emit_group(void *arg, size_t index, const char *const *targets, size_t n,
                       const struct pg_labels *labels)
{
    struct emit_ctx *c = arg;
    struct pg_scrape_tg_target *tg = calloc(n + 1, sizeof(*tg));
    char source[4200];

    if (tg == NULL) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        tg[i].address = targets[i];
        tg[i].labels = labels;
    }
    source_name(source, sizeof(source), c->w->path, index);
    pg_scraper_sync(c->f->s, c->w->job, source, tg, n);
    free(tg);
}

static void clear_groups(struct pg_file_sd *f, struct watched *w, size_t from)
{
    char source[4200];

    for (size_t i = from; i < w->n_groups; i++) {
        source_name(source, sizeof(source), w->path, i);
        pg_scraper_sync(f->s, w->job, source, NULL, 0);
    }
}

static void read_file(struct pg_file_sd *f, struct watched *w)
{
    char *buf, why[400];
    size_t len = 0;
    long n;
    struct emit_ctx c = {f, w};

    w->read_ns = pg_mono_ns();
    pg_metric_add(f->m_reads, 1);
    if ((buf = pg_file_read_all(w->path, MAX_FILE_BYTES, &len, NULL)) == NULL) {
        pg_metric_add(f->m_failures, 1);
        pg_log_warn(LOG_NAME, "%s: %s; keeping its previous targets", w->path,
                    errno == EFBIG ? "larger than 16 MiB" : strerror(errno));
        return;
    }
    /* Parse once without emitting: a bad file must change nothing. */
    n = pg_file_sd_parse(w->path, buf, len, NULL, NULL, why, sizeof(why));
    if (n < 0) {
        pg_metric_add(f->m_failures, 1);
        pg_log_warn(LOG_NAME, "%s; keeping its previous targets", why);
        free(buf);
        return;
    }
    pg_file_sd_parse(w->path, buf, len, emit_group, &c, why, sizeof(why));
    clear_groups(f, w, (size_t)n);
    w->n_groups = (size_t)n;
    free(buf);
}

static struct watched *find_or_add(struct pg_file_sd *f, size_t job, const char *path)
{
    for (size_t i = 0; i < f->n; i++) {
        if (f->w[i].job == job && strcmp(f->w[i].path, path) == 0) {
            return &f->w[i];
        }
    }
    if (f->n >= MAX_FILES) {
        return NULL;
    }
    if (!PG_VEC_GROW(NULL, f->w, f->cap, f->n, 8, MAX_FILES)) {
        return NULL;
    }
    memset(&f->w[f->n], 0, sizeof(f->w[0]));
    f->w[f->n].job = job;
    f->w[f->n].path = strdup(path);
    if (f->w[f->n].path == NULL) {
        return NULL;
    }
    return &f->w[f->n++];
}

static void poll_files(struct pg_file_sd *f)
{
    int64_t now = pg_mono_ns();

    for (size_t i = 0; i < f->n; i++) {
        f->w[i].seen = false;
    }
    for (size_t ji = 0; ji < f->cfg->n_jobs; ji++) {
        const struct pg_scrape_job *job = &f->cfg->jobs[ji];

        for (size_t k = 0; k < job->n_file_sd; k++) {
            const struct pg_scrape_file_sd *sd = &job->file_sd[k];

            for (size_t p = 0; p < sd->files.n; p++) {
                glob_t g;

                if (glob(sd->files.v[p], 0, NULL, &g) != 0) {
                    continue;
                }
                for (size_t m = 0; m < g.gl_pathc; m++) {
                    struct stat sb;
                    struct watched *w;
                    bool changed;

                    if (stat(g.gl_pathv[m], &sb) != 0 || !S_ISREG(sb.st_mode) ||
                        (w = find_or_add(f, ji, g.gl_pathv[m])) == NULL) {
                        continue;
                    }
                    w->seen = true;
                    changed = w->read_ns == 0 || w->ino != sb.st_ino || w->dev != sb.st_dev ||
                              w->size != sb.st_size || w->mtime.tv_sec != sb.st_mtim.tv_sec ||
                              w->mtime.tv_nsec != sb.st_mtim.tv_nsec;
                    if (changed || now - w->read_ns >= sd->refresh_interval_ns) {
                        w->ino = sb.st_ino;
                        w->dev = sb.st_dev;
                        w->size = sb.st_size;
                        w->mtime = sb.st_mtim;
                        read_file(f, w);
                    }
                }
                globfree(&g);
            }
        }
    }
    /* Files gone: their targets go too. */
    for (size_t i = 0; i < f->n;) {
        if (!f->w[i].seen) {
            clear_groups(f, &f->w[i], 0);
            pg_log_info(LOG_NAME, "%s is gone; its targets were removed", f->w[i].path);
            free(f->w[i].path);
            f->w[i] = f->w[--f->n];
        } else {
            i++;
        }
    }
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    poll_files(arg);
}

enum pg_err pg_file_sd_start(struct pg_scraper *s, struct event_base *base,
                             const struct pg_scrape_config *cfg, struct pg_file_sd **out,
                             struct pg_status *st)
{
    struct pg_file_sd *f;
    struct timeval tv = {POLL_MS / 1000, (POLL_MS % 1000) * 1000}, zero = {0, 0};
    bool any = false;

    *out = NULL;
    for (size_t i = 0; i < cfg->n_jobs; i++) {
        any = any || cfg->jobs[i].n_file_sd > 0;
    }
    if (!any) {
        return PG_ERR_OK;
    }
    if ((f = calloc(1, sizeof(*f))) == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory");
    }
    f->s = s;
    f->cfg = cfg;
    f->m_reads = pg_metric_counter("pprofgate_scrape_file_sd_reads_total",
                                   "Target files read by file_sd_configs.", NULL);
    f->m_failures = pg_metric_counter("pprofgate_scrape_file_sd_failures_total",
                                      "Target files that could not be read or parsed (previous "
                                      "targets kept).",
                                      NULL);
    f->timer = event_new(base, -1, EV_PERSIST, on_poll, f);
    if (f->timer == NULL || event_add(f->timer, &tv) != 0) {
        pg_file_sd_free(f);
        return pg_status_set(st, PG_ERR_INTERNAL, "cannot arm the file_sd timer");
    }
    /* The first read runs on the loop at once, not here: a file of thousands
     * of targets must not delay the listeners or the signal handlers. */
    f->first = evtimer_new(base, on_poll, f);
    if (f->first == NULL || evtimer_add(f->first, &zero) != 0) {
        pg_file_sd_free(f);
        return pg_status_set(st, PG_ERR_INTERNAL, "cannot arm the file_sd timer");
    }
    *out = f;
    return PG_ERR_OK;
}

void pg_file_sd_free(struct pg_file_sd *f)
{
    if (f == NULL) {
        return;
    }
    if (f->timer != NULL) {
        event_free(f->timer);
    }
    if (f->first != NULL) {
        event_free(f->first);
    }
    for (size_t i = 0; i < f->n; i++) {
        free(f->w[i].path);
    }
    free(f->w);
    free(f);
}
