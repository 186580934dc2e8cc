/* SPDX-License-Identifier: Apache-2.0
 * Exporter `debug`: prints what reached the end of the pipeline, in the
 * collector's debug-exporter formats, so operators can compare the two.
 * consume() only samples and queues the batch (a reference, or at `basic`
 * just its two counts): a writer thread formats it into one reused buffer
 * and writes it to every output.
 * So neither a stalled terminal or pipe nor the formatting of a huge profile
 * at `detailed` ever holds up the event loop; the queue is bounded and what
 * does not fit is counted and logged, never waited for. Every sample ends in
 * one of the collector's otelcol_exporter_{sent,send_failed,enqueue_failed}
 * counters. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/batch.h"
#include "pipeline/component.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/metrics.h"
#include "exporter/debug_format.h"

#define MAX_OUTPUTS 8
/* A batch's text is capped so a huge profile cannot take the process down. */
#define MAX_TEXT_BYTES (256u * 1024u * 1024u)
/* Batches waiting for the writer: at most this many, holding at most this
 * much batch memory (one batch is always taken, whatever its size). */
#define MAX_QUEUED_BATCHES 1024u
#define MAX_QUEUED_BYTES (64u * 1024u * 1024u)
/* After the service's drain deadline, how long destroy() still gives the
 * writer to finish before it abandons what is left. */
#define WRITER_GRACE_MS 200
#define POLL_MS 50
#define POLL_QUEUE_MS 5
#define LINGER_MS 200
/* At basic the writer prints up to this many queued summary lines with one
 * write (and one poll) per output instead of one each. */
#define MAX_COALESCED 64u
/* Spare items kept for reuse, so a push costs no malloc/free here. */
#define MAX_SPARE_ITEMS 64u

struct dbg_cfg {
    int verbosity;
    int64_t sampling_initial;
    int64_t sampling_thereafter;
    bool use_internal_logger;
    bool annotations;
    struct pg_strlist output_paths;
    const struct pg_cfg_node *sending_queue;
};

static const char *const verbosities[] = {"basic", "normal", "detailed", NULL};

static const struct pg_field dbg_fields[] = {
    PG_FIELD_ENUM(struct dbg_cfg, "verbosity", verbosity, "basic", verbosities,
                  "basic: one summary line; normal: a line per resource/scope/profile; detailed: "
                  "everything"),
    PG_FIELD_RANGE(struct dbg_cfg, "sampling_initial", PG_FT_INT, sampling_initial, "2", 0, 1e9,
                   "batches printed each second before sampling starts"),
    PG_FIELD_RANGE(struct dbg_cfg, "sampling_thereafter", PG_FT_INT, sampling_thereafter, "1", 0,
                   1e9, "then print every Nth batch in that second (1 = all, 0 = none)"),
    PG_FIELD(struct dbg_cfg, "use_internal_logger", PG_FT_BOOL, use_internal_logger, "true",
             "true: summary as a pprofgate log line; false: the collector's raw Profiles\\t{...} "
             "line"),
    PG_FIELD(struct dbg_cfg, "pprofgate_annotations", PG_FT_BOOL, annotations, "true",
             "true: normal/detailed name each profile's sample type, period, window, total and "
             "(detailed) top frames; false: the collector's text byte for byte"),
    PG_FIELD(struct dbg_cfg, "output_paths", PG_FT_STRLIST, output_paths, NULL,
             "stderr, stdout or files (appended); default: with use_internal_logger the log's "
             "outputs (service::telemetry::logs::output_paths, stderr), else stdout"),
    PG_FIELD(struct dbg_cfg, "sending_queue", PG_FT_NODE, sending_queue, NULL,
             "accepted for collector configs and ignored: output goes through this exporter's "
             "own bounded queue"),
    PG_FIELD_END,
};

/* A batch waiting to be printed. At `basic` the summary's counts are all
 * the writer needs, so no batch is kept: nothing of the request's memory
 * waits for the writer. Otherwise the item holds one reference. */
struct dbg_item {
    struct dbg_item *next;
    struct pg_batch *batch; /* NULL at basic */
    struct timespec at;     /* when it was consumed: the summary line's ts */
    size_t resource_profiles, sample_records;
    size_t bytes;           /* the batch's arena footprint, counted against MAX_QUEUED_BYTES */
};

struct dbg {
    struct dbg_cfg cfg;
    const char *log_name; /* borrowed (ctx) */
    int fds[MAX_OUTPUTS];
    bool owned[MAX_OUTPUTS];
    size_t n_fds;
    /* consume() side: any receiver loop (atomics) */
    long window;          /* monotonic second of the sampling window */
    uint64_t in_window;   /* batches seen in it */
    uint64_t sampled_out; /* sampled away, reported in the log at destroy */
    struct pg_log_ratelimit rl_drop; /* under mu */
    struct pg_metric *m_dropped;
    struct pg_metric *m_queued; /* gauge: batches waiting for the writer */
    /* The collector's exporterhelper series, in samples (its debug exporter
     * has them through its sending queue): sent = printed or sampled away
     * (zap's sampler drops the line, the push still succeeds); send_failed =
     * a write failed or shutdown abandoned it; enqueue_failed = the queue
     * was full. */
    struct pg_metric *m_sent, *m_send_failed, *m_enqueue_failed;
    struct pg_metric *m_queue_size; /* otelcol_exporter_queue_size, in batches */
    /* the queue, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct dbg_item *head, **tail;
    size_t q_len, q_bytes;
    struct dbg_item *current; /* taken by the writer, not yet done with: a NULL-ended chain */
    struct dbg_item *spare;   /* finished items for reuse, at most MAX_SPARE_ITEMS */
    size_t n_spare;
    uint64_t dropped;         /* did not fit in the queue */
    bool stop;
    /* the writer thread */
    pthread_t writer;
    bool writer_started;
    bool writer_done;         /* under mu: it returned */
    bool abandon;             /* atomic: stop writing, even mid-batch */
    bool sleeping;            /* under mu: in an untimed wait, needs a signal */
    bool is_file[MAX_OUTPUTS]; /* never blocks (regular file, /dev/null): no poll, one write */
    struct pg_debug_buf buf;  /* writer only */
    struct pg_log_ratelimit rl; /* writer only: write errors */
};

/* The writer's timed waits measure intervals: immune to clock steps. */
static void cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

static enum pg_err dbg_create(const struct pg_component_ctx *ctx, void **state)
{
    struct dbg *d = calloc(1, sizeof(*d));
    char path[256], labels[300];
    size_t problems;

    *state = NULL;
    if (d == NULL) {
        pg_diag_add(ctx->diag, ctx->config, ctx->id, "out of memory");
        return PG_ERR_CONFIG;
    }
    snprintf(path, sizeof(path), "exporters::%s", ctx->id);
    problems = pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, dbg_fields, &d->cfg, path);
    if (d->cfg.output_paths.n > MAX_OUTPUTS) {
        pg_diag_add(ctx->diag, ctx->config, path, "output_paths: at most %d outputs",
                    MAX_OUTPUTS);
        problems++;
    }
    for (size_t i = 0; i < d->cfg.output_paths.n; i++) {
        if (d->cfg.output_paths.v[i] == NULL || d->cfg.output_paths.v[i][0] == '\0') {
            pg_diag_add(ctx->diag, ctx->config, path, "output_paths: empty path");
            problems++;
        }
    }
    if (problems > 0) {
        free(d);
        return PG_ERR_CONFIG;
    }
    d->log_name = ctx->log_name;
    d->buf.max = MAX_TEXT_BYTES;
    d->window = -1;
    d->rl = (struct pg_log_ratelimit)PG_LOG_RATELIMIT_INIT(1.0, 5.0);
    d->rl_drop = (struct pg_log_ratelimit)PG_LOG_RATELIMIT_INIT(1.0, 5.0);
    pthread_mutex_init(&d->mu, NULL);
    cond_init_monotonic(&d->cv);
    d->tail = &d->head;
    snprintf(labels, sizeof(labels), "exporter=\"%s\"", ctx->id);
    d->m_dropped = pg_metric_counter("pprofgate_debug_exporter_dropped_batches_total",
                                     "Batches the debug exporter did not print because its "
                                     "output was not keeping up",
                                     labels);
    d->m_queued = pg_metric_gauge("pprofgate_debug_exporter_queue_batches",
                                  "Batches waiting for the debug exporter's writer", labels);
    /* Same names, help and labels as exporterhelper/queue.c registers. */
    d->m_sent = pg_metric_counter("otelcol_exporter_sent_profile_samples",
                                  "Profile samples successfully sent to destination", labels);
    d->m_send_failed = pg_metric_counter("otelcol_exporter_send_failed_profile_samples",
                                         "Profile samples the exporter failed to send", labels);
    d->m_enqueue_failed =
        pg_metric_counter("otelcol_exporter_enqueue_failed_profile_samples",
                          "Profile samples refused because the sending queue was full", labels);
    pg_metric_set(pg_metric_gauge("otelcol_exporter_queue_capacity",
                                  "Fixed capacity of the sending queue, in sizer units", labels),
                  MAX_QUEUED_BATCHES);
    d->m_queue_size = pg_metric_gauge("otelcol_exporter_queue_size",
                                      "Current size of the sending queue, in sizer units", labels);
    if (d->cfg.sending_queue != NULL) {
        pg_log_info(ctx->log_name, "sending_queue is ignored: the debug exporter has its own "
                                   "bounded queue");
    }
    *state = d;
    return PG_ERR_OK;
}

static enum pg_err open_outputs(struct dbg *d, struct pg_status *st)
{
    const struct pg_strlist *paths = &d->cfg.output_paths;

    if (paths->n == 0) {
        /* As the collector's: its internal logger writes where its logs go;
         * without it the exporter's own zap logger defaults to stdout. */
        if (d->cfg.use_internal_logger) {
            d->n_fds = pg_log_output_fds(d->fds, MAX_OUTPUTS);
        } else {
            d->fds[d->n_fds++] = STDOUT_FILENO;
        }
        return PG_ERR_OK;
    }
    for (size_t i = 0; i < paths->n; i++) {
        int fd = pg_output_open(paths->v[i], &d->owned[d->n_fds]);

        if (fd < 0) {
            return pg_status_set(st, PG_ERR_IO, "%s: cannot open output %s: %s", d->log_name,
                                 paths->v[i], strerror(errno));
        }
        d->fds[d->n_fds++] = fd;
    }
    return PG_ERR_OK;
}

/* zap's sampler: in each second the first `initial` entries pass, then every
 * `thereafter`-th. */
static bool sample_ok(struct dbg *d)
{
    long sec = (long)(pg_mono_ns() / PG_NS_PER_SEC);
    uint64_t n;

    /* The loop that first sees a new second restarts the count; a batch
     * counted into the old second meanwhile is at most one more printed. */
    if (__atomic_load_n(&d->window, __ATOMIC_RELAXED) != sec &&
        __atomic_exchange_n(&d->window, sec, __ATOMIC_RELAXED) != sec) {
        __atomic_store_n(&d->in_window, 0, __ATOMIC_RELAXED);
    }
    n = __atomic_add_fetch(&d->in_window, 1, __ATOMIC_RELAXED);
    if (n <= (uint64_t)d->cfg.sampling_initial) {
        return true;
    }
    return d->cfg.sampling_thereafter > 0 &&
           (n - (uint64_t)d->cfg.sampling_initial) % (uint64_t)d->cfg.sampling_thereafter == 0;
}

/* Writer thread. A pipe, terminal or socket is polled before each write of
 * at most PIPE_BUF bytes of whole lines (which then does not block on a
 * pipe and is not interleaved with other writers' lines), so a writer
 * facing a reader that stopped reading still notices destroy()'s abandon
 * within POLL_MS. Regular files and /dev/null are written in one go. */
static bool write_all(struct dbg *d, size_t i, const char *p, size_t n)
{
    const char *why = NULL;

    while (n > 0) {
        size_t chunk = n;
        ssize_t w;

        if (!d->is_file[i]) {
            struct pollfd pfd = {.fd = d->fds[i], .events = POLLOUT};
            int r;

            if (__atomic_load_n(&d->abandon, __ATOMIC_ACQUIRE)) {
                return false;
            }
            r = poll(&pfd, 1, POLL_MS);
            if (r == 0 || (r < 0 && errno == EINTR)) {
                continue;
            }
            if (r < 0 || (pfd.revents & (POLLERR | POLLNVAL))) {
                why = r < 0 ? strerror(errno) : "output error";
                break;
            }
            chunk = n < PIPE_BUF ? n : PIPE_BUF;
            if (chunk < n) {
                /* Whole lines per write: a log line on the same pipe can
                 * only land between lines. */
                size_t cut = chunk;

                while (cut > 0 && p[cut - 1] != '\n') {
                    cut--;
                }
                chunk = cut > 0 ? cut : chunk;
            }
        }
        w = write(d->fds[i], p, chunk);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            why = strerror(errno);
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    if (why != NULL) {
        unsigned long suppressed = 0;

        if (pg_log_ratelimit_ok(&d->rl, &suppressed)) {
            pg_log_warn(d->log_name, "write failed: %s" PG_LOG_SUPPRESSED_FMT, why,
                        PG_LOG_SUPPRESSED(suppressed));
        }
    }
    return why == NULL;
}

/* Writer thread: appends one batch's text to d->buf. */
static void format_batch(struct dbg *d, const struct dbg_item *it)
{
    if (d->cfg.use_internal_logger) {
        static const char *const keys[] = {"resource_profiles", "sample_records"};
        const long long vals[] = {(long long)it->resource_profiles,
                                  (long long)it->sample_records};
        char line[512];
        size_t n = pg_log_format(line, sizeof(line), PG_LOG_INFO, d->log_name, &it->at,
                                 "Profiles", keys, vals, 2);

        pg_debug_buf_append(&d->buf, line, n);
    } else {
        pg_debug_format_summary(&d->buf, it->resource_profiles, it->sample_records);
    }
    if (it->batch != NULL) {
        pg_debug_format_text(&d->buf, it->batch->req, (enum pg_debug_verbosity)d->cfg.verbosity,
                             d->cfg.annotations);
    }
    if (!d->cfg.use_internal_logger && d->cfg.verbosity != PG_DEBUG_BASIC) {
        pg_debug_buf_append(&d->buf, "\n", 1);
    }
    if (d->buf.truncated) {
        /* The buffer is full: make room for the notice by cutting the tail. */
        static const char note[] = "\n[debug exporter: output truncated at 256 MiB]\n";

        if (d->buf.len > sizeof(note)) {
            d->buf.len -= sizeof(note);
        }
        d->buf.truncated = false;
        d->buf.max = 0;
        pg_debug_buf_append(&d->buf, note, sizeof(note) - 1);
        d->buf.max = MAX_TEXT_BYTES;
    }
}

/* Writer thread: formats a chain of batches (one, or at basic up to
 * MAX_COALESCED summary lines) into d->buf and writes it everywhere; their
 * samples count as sent when every output took the text. */
static void print_chain(struct dbg *d, const struct dbg_item *chain)
{
    bool ok = true;
    size_t samples = 0;

    pg_debug_buf_reset(&d->buf);
    for (const struct dbg_item *it = chain; it != NULL; it = it->next) {
        format_batch(d, it);
        samples += it->sample_records;
    }
    for (size_t i = 0; i < d->n_fds; i++) {
        ok = write_all(d, i, d->buf.p, d->buf.len) && ok;
    }
    pg_metric_add(ok ? d->m_sent : d->m_send_failed, samples);
    /* Do not keep a huge buffer around after one huge batch. */
    if (d->buf.cap > 16u * 1024u * 1024u) {
        pg_debug_buf_free(&d->buf);
    }
}

/* Under mu: keeps @it for reuse, or frees it when enough are kept. */
static void item_release(struct dbg *d, struct dbg_item *it)
{
    if (d->n_spare < MAX_SPARE_ITEMS) {
        it->next = d->spare;
        d->spare = it;
        d->n_spare++;
    } else {
        free(it);
    }
}

/* Oldest first; after stop it still drains what was queued (the service
 * waits for idle() up to its deadline), then returns. Under load a wake-up
 * per batch would cost a context switch per request: after a batch the
 * writer looks at the queue every POLL_QUEUE_MS, unasked, for LINGER_MS, and
 * only then sleeps until consume() signals; an idle gateway costs nothing. */
static void *writer_main(void *arg)
{
    struct dbg *d = arg;
    int lingered = LINGER_MS; /* start asleep */

    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (d->head == NULL && !d->stop) {
            if (lingered >= LINGER_MS) {
                d->sleeping = true; /* the next consume() wakes us */
                pthread_cond_wait(&d->cv, &d->mu);
                d->sleeping = false;
                lingered = 0;
            } else {
                struct timespec until;

                until = pg_mono_ts();
                until.tv_nsec += POLL_QUEUE_MS * 1000000L;
                until.tv_sec += until.tv_nsec / 1000000000L;
                until.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&d->cv, &d->mu, &until);
                lingered += POLL_QUEUE_MS;
            }
        }
        lingered = 0;
        if (d->head == NULL || __atomic_load_n(&d->abandon, __ATOMIC_ACQUIRE)) {
            break; /* destroy() frees what is left */
        }
        /* Take the oldest batch; at basic the summary lines behind it too. */
        {
            struct dbg_item *chain = d->head, *last = chain;
            size_t n = 1, bytes = chain->bytes;

            while (last->next != NULL && last->batch == NULL && last->next->batch == NULL &&
                   n < MAX_COALESCED) {
                last = last->next;
                bytes += last->bytes;
                n++;
            }
            d->head = last->next;
            if (d->head == NULL) {
                d->tail = &d->head;
            }
            last->next = NULL;
            d->current = chain;
            pthread_mutex_unlock(&d->mu);

            print_chain(d, chain);
            for (struct dbg_item *it = chain; it != NULL; it = it->next) {
                pg_batch_unref(it->batch);
                it->batch = NULL;
            }

            pthread_mutex_lock(&d->mu);
            d->current = NULL;
            d->q_len -= n;
            d->q_bytes -= bytes;
            pg_metric_set(d->m_queued, (int64_t)d->q_len);
            pg_metric_set(d->m_queue_size, (int64_t)d->q_len);
            while (chain != NULL) {
                struct dbg_item *next = chain->next;

                item_release(d, chain);
                chain = next;
            }
        }
    }
    d->writer_done = true;
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static enum pg_err dbg_start(void *state, struct pg_status *st)
{
    struct dbg *d = state;
    enum pg_err err = open_outputs(d, st);
    int e;

    if (err != PG_ERR_OK) {
        return err;
    }
    for (size_t i = 0; i < d->n_fds; i++) {
        struct stat sb;

        /* A character device that is not a terminal (/dev/null) never
         * makes a write wait either; a terminal can (^S). */
        d->is_file[i] = fstat(d->fds[i], &sb) == 0 &&
                        (S_ISREG(sb.st_mode) || (S_ISCHR(sb.st_mode) && !isatty(d->fds[i])));
    }
    e = pthread_create(&d->writer, NULL, writer_main, d);
    if (e != 0) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot start the writer thread: %s",
                             d->log_name, strerror(e));
    }
    d->writer_started = true;
    return PG_ERR_OK;
}

/* Never blocks: queues a reference for the writer, or counts the batch as
 * not printed when the writer is that far behind (a stalled terminal or
 * pipe). The batch still reaches every other exporter either way. */
static enum pg_err dbg_consume(void *state, struct pg_batch *batch, struct pg_status *st)
{
    struct dbg *d = state;
    struct dbg_item *it;
    bool fits;
    uint64_t dropped;
    size_t waiting;
    struct timespec at;
    size_t rps, samples, bytes = 0;
    bool log_drop = false;
    unsigned long suppressed = 0;

    samples = pg_debug_sample_records(batch->req);
    if (!sample_ok(d)) {
        __atomic_add_fetch(&d->sampled_out, 1, __ATOMIC_RELAXED);
        pg_metric_add(d->m_sent, samples);
        return PG_ERR_OK;
    }
    at = pg_real_ts();
    rps = pg_debug_resource_profiles(batch->req);
    if (d->cfg.verbosity != PG_DEBUG_BASIC) {
        bytes = pg_arena_footprint(batch->arena);
    }
    pthread_mutex_lock(&d->mu);
    fits = !d->stop && (d->q_len == 0 || (d->q_len < MAX_QUEUED_BATCHES &&
                                          d->q_bytes + bytes <= MAX_QUEUED_BYTES));
    if (fits) {
        it = d->spare;
        if (it != NULL) {
            d->spare = it->next;
            d->n_spare--;
        } else {
            it = malloc(sizeof(*it)); /* only until MAX_SPARE_ITEMS are in circulation */
        }
        if (it == NULL) {
            pthread_mutex_unlock(&d->mu);
            return pg_status_set(st, PG_ERR_NOMEM, "%s: out of memory", d->log_name);
        }
        it->next = NULL;
        it->at = at;
        it->resource_profiles = rps;
        it->sample_records = samples;
        it->bytes = bytes;
        it->batch = d->cfg.verbosity != PG_DEBUG_BASIC ? pg_batch_ref(batch) : NULL;
        *d->tail = it;
        d->tail = &it->next;
        d->q_len++;
        d->q_bytes += bytes;
        pg_metric_set(d->m_queued, (int64_t)d->q_len);
        pg_metric_set(d->m_queue_size, (int64_t)d->q_len);
        if (d->sleeping) {
            pthread_cond_signal(&d->cv);
        }
    } else {
        d->dropped++;
        log_drop = pg_log_ratelimit_ok(&d->rl_drop, &suppressed);
    }
    dropped = d->dropped;
    waiting = d->q_len;
    pthread_mutex_unlock(&d->mu);
    if (!fits) {
        pg_metric_add(d->m_dropped, 1);
        pg_metric_add(d->m_enqueue_failed, samples);
        if (log_drop) {
            pg_log_warn(d->log_name,
                        "output is not keeping up (%zu batches waiting): batch not printed, "
                        "%llu so far" PG_LOG_SUPPRESSED_FMT,
                        waiting, (unsigned long long)dropped, PG_LOG_SUPPRESSED(suppressed));
        }
    }
    return PG_ERR_OK;
}

static void dbg_shutdown(void *state)
{
    (void)state; /* intake ends with the pipeline; the writer keeps draining */
}

static bool dbg_idle(void *state)
{
    struct dbg *d = state;
    bool idle;

    pthread_mutex_lock(&d->mu);
    idle = d->q_len == 0;
    pthread_mutex_unlock(&d->mu);
    return idle;
}

/* Waits up to @ms for the writer to return. */
static bool writer_returned(struct dbg *d, int ms)
{
    bool done = false;

    for (int waited = 0; !done; waited += 5) {
        struct timespec nap = {0, 5 * 1000000L};

        pthread_mutex_lock(&d->mu);
        done = d->writer_done;
        pthread_mutex_unlock(&d->mu);
        if (done || waited >= ms) {
            break;
        }
        nanosleep(&nap, NULL);
    }
    return done;
}

/* Stops the writer: gives it WRITER_GRACE_MS to drain, then tells it to
 * abandon the rest, which it notices within POLL_MS. False when it is still
 * stuck inside one write(2) after that (a terminal stopped with ^S takes a
 * whole chunk only when resumed): then it is detached and the state must
 * outlive it. */
static bool stop_writer(struct dbg *d)
{
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    if (!writer_returned(d, WRITER_GRACE_MS)) {
        __atomic_store_n(&d->abandon, true, __ATOMIC_RELEASE);
        if (!writer_returned(d, 4 * POLL_MS)) {
            pthread_detach(d->writer);
            return false;
        }
    }
    pthread_join(d->writer, NULL);
    d->writer_started = false;
    return true;
}

static void dbg_destroy(void *state)
{
    struct dbg *d = state;
    size_t unprinted = 0;

    if (d == NULL) {
        return;
    }
    if (d->writer_started && !stop_writer(d)) {
        /* Only at exit: leaving it (and what it holds) beats hanging. */
        pg_log_warn(d->log_name, "output is blocked inside a write; leaving it behind");
        return;
    }
    /* An abandoned writer leaves its item; what it never took is here too. */
    while (d->current != NULL) {
        struct dbg_item *it = d->current;

        d->current = it->next;
        pg_metric_add(d->m_send_failed, it->sample_records);
        pg_batch_unref(it->batch);
        free(it);
        unprinted++;
    }
    while (d->spare != NULL) {
        struct dbg_item *it = d->spare;

        d->spare = it->next;
        free(it);
    }
    while (d->head != NULL) {
        struct dbg_item *it = d->head;

        d->head = it->next;
        pg_metric_add(d->m_send_failed, it->sample_records);
        pg_batch_unref(it->batch);
        free(it);
        unprinted++;
    }
    if (unprinted > 0) {
        pg_log_warn(d->log_name, "batches not printed, the output did not drain "
                                 "before the shutdown deadline: %zu", unprinted);
    }
    if (d->dropped > 0) {
        pg_log_warn(d->log_name, "%llu batches were not printed because the output was not "
                                 "keeping up", (unsigned long long)d->dropped);
    }
    if (d->sampled_out > 0) {
        pg_log_info(d->log_name, "%llu batches were not printed because of sampling",
                    (unsigned long long)d->sampled_out);
    }
    for (size_t i = 0; i < d->n_fds; i++) {
        if (d->owned[i]) {
            close(d->fds[i]);
        }
    }
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    pg_debug_buf_free(&d->buf);
    free(d);
}

/* At `basic` only the counts are printed (pg_debug_sample_records counts lazy samples); the
 * other levels print each sample. */
static bool dbg_lazy_samples(void *state)
{
    const struct dbg *d = state;

    return d->cfg.verbosity == PG_DEBUG_BASIC;
}

const struct pg_component_ops pg_exporter_debug = {
    .type = "debug",
    .alias = NULL,
    .kind = PG_KIND_EXPORTER,
    .any_thread = true, /* the sampler is atomic; the queue to the writer is locked */
    .lazy_samples = dbg_lazy_samples,
    .fields = dbg_fields,
    .doc = "prints received profiles in the collector's debug-exporter formats",
    .create = dbg_create,
    .start = dbg_start,
    .process = NULL,
    .consume = dbg_consume,
    .shutdown = dbg_shutdown,
    .idle = dbg_idle,
    .destroy = dbg_destroy,
};
