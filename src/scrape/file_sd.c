/* SPDX-License-Identifier: Apache-2.0
 * file_sd_configs (see file_sd.h). The files go through the config loader's
 * YAML parser (JSON is YAML's flow syntax), nested under one key because the
 * loader wants a mapping at the top. Files are stat'ed on the loop but read
 * and parsed on a reader thread (a 20 000-target file costs ~100 ms of YAML),
 * and the groups handed to the sink on the loop. Ownership: the watcher owns
 * its file table and the reader's results; the sink's owner (the scraper)
 * owns the targets it builds from each group. */
#include "scrape/file_sd.h"

#include <glob.h>
#include <errno.h>
#include <pthread.h>
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
    bool due;               /* changed or due for a refresh: read at the next chance */
};

/* One group of a file as the reader parsed it. */
struct rgroup {
    struct pg_labels labels;             /* owned */
    char **targets;                      /* owned, each owned */
    size_t n;
};

/* One file the reader thread reads: in (job, path), out (groups or why). */
struct rfile {
    size_t job;
    char *path;                          /* owned */
    long n_groups;                       /* -1: failed, @why says why */
    struct rgroup *g;                    /* owned: n_groups */
    char why[400];
};

struct pg_file_sd {
    struct pg_sd_sink sink;              /* the caller's: where groups go */
    const struct pg_scrape_config *cfg;  /* borrowed */
    struct event *timer;                 /* owned */
    struct event *first;                 /* owned: the first poll, once on the loop */
    struct event *done;                  /* owned: the reader thread finished */
    struct watched *w;                   /* owned */
    size_t n, cap;
    /* The reader: while @reading, @batch belongs to the thread. */
    pthread_t thread;
    bool reading;
    struct rfile *batch;                 /* owned */
    size_t n_batch;
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

/* ---- reading (the reader thread) ----------------------------------------- */

static void rgroups_free(struct rfile *r)
{
    for (long i = 0; i < r->n_groups; i++) {
        pg_labels_free(&r->g[i].labels);
        for (size_t k = 0; k < r->g[i].n; k++) {
            free(r->g[i].targets[k]);
        }
        free(r->g[i].targets);
    }
    free(r->g);
    r->g = NULL;
    r->n_groups = 0;
}

struct collect {
    struct rfile *r;
    bool oom;
};

static void collect_group(void *arg, size_t index, const char *const *targets, size_t n,
                          const struct pg_labels *labels)
{
    struct collect *c = arg;
    struct rgroup *g = &c->r->g[index];

    if (c->oom || (g->targets = calloc(n + 1, sizeof(char *))) == NULL ||
        !pg_labels_copy(&g->labels, labels)) {
        c->oom = true;
        return;
    }
    for (; g->n < n; g->n++) {
        if ((g->targets[g->n] = strdup(targets[g->n])) == NULL) {
            c->oom = true;
            return;
        }
    }
}

/* Reads and parses one file (no loop state touched). */
static void read_one(struct rfile *r)
{
    size_t len = 0;
    char *buf = pg_file_read_all(r->path, MAX_FILE_BYTES, &len, NULL);
    struct collect c = {r, false};
    long n;

    r->n_groups = -1;
    if (buf == NULL) {
        snprintf(r->why, sizeof(r->why), "%s: %s", r->path,
                 errno == EFBIG ? "larger than 16 MiB" : strerror(errno));
        return;
    }
    /* Parse once without collecting: a bad file must change nothing. */
    n = pg_file_sd_parse(r->path, buf, len, NULL, NULL, r->why, sizeof(r->why));
    if (n >= 0 && (r->g = calloc((size_t)n + 1, sizeof(*r->g))) == NULL) {
        snprintf(r->why, sizeof(r->why), "%s: out of memory", r->path);
        n = -1;
    }
    if (n >= 0) {
        r->n_groups = n;
        pg_file_sd_parse(r->path, buf, len, collect_group, &c, r->why, sizeof(r->why));
        if (c.oom) {
            rgroups_free(r);
            r->n_groups = -1;
            snprintf(r->why, sizeof(r->why), "%s: out of memory", r->path);
        }
    }
    free(buf);
}

static void *reader_main(void *arg)
{
    struct pg_file_sd *f = arg;

    for (size_t i = 0; i < f->n_batch; i++) {
        read_one(&f->batch[i]);
    }
    event_active(f->done, 0, 0); /* libevent is thread-enabled (main.c) */
    return NULL;
}

static void batch_free(struct pg_file_sd *f)
{
    for (size_t i = 0; i < f->n_batch; i++) {
        rgroups_free(&f->batch[i]);
        free(f->batch[i].path);
    }
    free(f->batch);
    f->batch = NULL;
    f->n_batch = 0;
}

/* ---- watching (the loop) ------------------------------------------------- */

static void source_name(char *buf, size_t cap, const char *path, size_t i)
{
    snprintf(buf, cap, "file:%s:%zu", path, i);
}

static void clear_groups(struct pg_file_sd *f, struct watched *w, size_t from)
{
    char source[4200];

    for (size_t i = from; i < w->n_groups; i++) {
        source_name(source, sizeof(source), w->path, i);
        f->sink.sync(f->sink.arg, w->job, source, NULL, 0);
    }
}

static struct watched *find(struct pg_file_sd *f, size_t job, const char *path)
{
    for (size_t i = 0; i < f->n; i++) {
        if (f->w[i].job == job && strcmp(f->w[i].path, path) == 0) {
            return &f->w[i];
        }
    }
    return NULL;
}

/* A read's result reaches the sink: each group replaces its source (the
 * sink diffs it against what it holds, so an unchanged group costs hashing
 * only), and groups the file no longer has are cleared. */
static void apply(struct pg_file_sd *f, struct rfile *r)
{
    struct watched *w = find(f, r->job, r->path);
    char source[4200];

    if (w == NULL) {
        return; /* the file went away while it was read */
    }
    if (r->n_groups < 0) {
        pg_metric_add(f->m_failures, 1);
        pg_log_warn(LOG_NAME, "%s; keeping its previous targets", r->why);
        return;
    }
    for (long i = 0; i < r->n_groups; i++) {
        struct rgroup *g = &r->g[i];
        struct pg_scrape_tg_target *tg = calloc(g->n + 1, sizeof(*tg));

        if (tg == NULL) {
            pg_log_warn(LOG_NAME, "%s: out of memory; group %ld unchanged", r->path, i);
            continue;
        }
        for (size_t k = 0; k < g->n; k++) {
            tg[k].address = g->targets[k];
            tg[k].labels = &g->labels;
        }
        source_name(source, sizeof(source), w->path, (size_t)i);
        f->sink.sync(f->sink.arg, w->job, source, tg, g->n);
        free(tg);
    }
    clear_groups(f, w, (size_t)r->n_groups);
    w->n_groups = (size_t)r->n_groups;
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
    struct pg_file_sd *f = arg;

    (void)fd;
    (void)what;
    pthread_join(f->thread, NULL);
    f->reading = false;
    for (size_t i = 0; i < f->n_batch; i++) {
        apply(f, &f->batch[i]);
    }
    batch_free(f);
}

/* Hands the files due for a read to a reader thread (one at a time; what
 * is not handed now is read after the next poll). */
static void start_reads(struct pg_file_sd *f)
{
    size_t due = 0;

    for (size_t i = 0; i < f->n; i++) {
        due += f->w[i].due;
    }
    if (due == 0 || f->reading || (f->batch = calloc(due, sizeof(*f->batch))) == NULL) {
        return;
    }
    for (size_t i = 0; i < f->n; i++) {
        struct watched *w = &f->w[i];

        if (!w->due || (f->batch[f->n_batch].path = strdup(w->path)) == NULL) {
            continue;
        }
        f->batch[f->n_batch++].job = w->job;
        w->due = false;
        w->read_ns = pg_mono_ns();
        pg_metric_add(f->m_reads, 1);
    }
    if (pthread_create(&f->thread, NULL, reader_main, f) != 0) {
        pg_log_warn(LOG_NAME, "cannot start the file reader thread: %s; retrying",
                    strerror(errno));
        for (size_t i = 0; i < f->n_batch; i++) {
            struct watched *w = find(f, f->batch[i].job, f->batch[i].path);

            if (w != NULL) {
                w->due = true;
            }
        }
        batch_free(f);
        return;
    }
    f->reading = true;
}

static struct watched *find_or_add(struct pg_file_sd *f, size_t job, const char *path)
{
    struct watched *w = find(f, job, path);

    if (w != NULL) {
        return w;
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
                        w->due = true;
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
    start_reads(f);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    poll_files(arg);
}

enum pg_err pg_file_sd_start(const struct pg_sd_sink *sink, struct event_base *base,
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
    f->sink = *sink;
    f->cfg = cfg;
    f->m_reads = pg_metric_counter("pprofgate_scrape_file_sd_reads_total",
                                   "Target files read by file_sd_configs.", NULL);
    f->m_failures = pg_metric_counter("pprofgate_scrape_file_sd_failures_total",
                                      "Target files that could not be read or parsed (previous "
                                      "targets kept).",
                                      NULL);
    f->timer = event_new(base, -1, EV_PERSIST, on_poll, f);
    f->done = event_new(base, -1, 0, on_done, f);
    if (f->timer == NULL || f->done == NULL || event_add(f->timer, &tv) != 0) {
        pg_file_sd_free(f);
        return pg_status_set(st, PG_ERR_INTERNAL, "cannot arm the file_sd timer");
    }
    /* The first poll runs on the loop at once, not here: a file of thousands
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
    if (f->reading) {
        pthread_join(f->thread, NULL); /* bounded: at most MAX_FILES reads under 16 MiB */
    }
    batch_free(f);
    if (f->timer != NULL) {
        event_free(f->timer);
    }
    if (f->first != NULL) {
        event_free(f->first);
    }
    if (f->done != NULL) {
        event_free(f->done);
    }
    for (size_t i = 0; i < f->n; i++) {
        free(f->w[i].path);
    }
    free(f->w);
    free(f);
}
