/* SPDX-License-Identifier: Apache-2.0
 * The debug exporter through its component ops: batches are printed by the
 * writer thread in the order consumed; an output nobody reads never blocks
 * consume() (batches beyond the queue are counted as not printed), and
 * destroy() returns and releases every batch even with the writer stuck in
 * write(2); the collector's otelcol_exporter_* series account for every
 * sample (sent, send_failed, enqueue_failed). Run under ASan too: a batch
 * reference left behind is a leak. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "core/metrics.h"
#include "pg_test.h"
#include "pg_test_processor.h"

extern const struct pg_component_ops pg_exporter_debug;

/* A request with @n empty ResourceProfiles: the basic line shows n. */
static struct pg_batch *mk_batch(size_t n)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = pg_arena_zalloc(a, sizeof(*req));

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        req);
    req->resource_profiles = pg_arena_calloc(a, n ? n : 1, sizeof(*req->resource_profiles));
    for (size_t i = 0; i < n; i++) {
        req->resource_profiles[i] = pg_arena_zalloc(a, sizeof(struct pg_otlp_resprof));
        opentelemetry__proto__profiles__v1development__resource_profiles__init(
            req->resource_profiles[i]);
    }
    req->n_resource_profiles = n;
    return pg_batch_new(a, req);
}

/* One resource, scope and profile with @n samples of one value each. */
static struct pg_batch *mk_batch_samples(size_t n)
{
    struct pg_batch *b = mk_batch(0);
    struct pg_otlp_request *req = b->req;
    struct pg_otlp_resprof *rp = pg_arena_zalloc(b->arena, sizeof(*rp));
    struct pg_otlp_scopeprof *sp = pg_arena_zalloc(b->arena, sizeof(*sp));
    struct pg_otlp_profile *pr = pg_arena_zalloc(b->arena, sizeof(*pr));

    opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
    opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
    opentelemetry__proto__profiles__v1development__profile__init(pr);
    pr->samples = pg_arena_calloc(b->arena, n ? n : 1, sizeof(*pr->samples));
    for (size_t i = 0; i < n; i++) {
        pr->samples[i] = pg_arena_zalloc(b->arena, sizeof(**pr->samples));
        opentelemetry__proto__profiles__v1development__sample__init(pr->samples[i]);
    }
    pr->n_samples = n;
    sp->profiles = pg_arena_calloc(b->arena, 1, sizeof(*sp->profiles));
    sp->profiles[0] = pr;
    sp->n_profiles = 1;
    rp->scope_profiles = pg_arena_calloc(b->arena, 1, sizeof(*rp->scope_profiles));
    rp->scope_profiles[0] = sp;
    rp->n_scope_profiles = 1;
    req->resource_profiles = pg_arena_calloc(b->arena, 1, sizeof(*req->resource_profiles));
    req->resource_profiles[0] = rp;
    req->n_resource_profiles = 1;
    return b;
}

/* The collector's exporterhelper series of exporters::debug. */
struct exp_series {
    struct pg_metric *sent, *failed, *refused;
    int64_t sent0, failed0, refused0;
};

static void series_start(struct exp_series *m)
{
    m->sent = pg_metric_counter("otelcol_exporter_sent_profile_samples", "", "exporter=\"debug\"");
    m->failed = pg_metric_counter("otelcol_exporter_send_failed_profile_samples", "",
                                  "exporter=\"debug\"");
    m->refused = pg_metric_counter("otelcol_exporter_enqueue_failed_profile_samples", "",
                                   "exporter=\"debug\"");
    m->sent0 = pg_metric_value(m->sent);
    m->failed0 = pg_metric_value(m->failed);
    m->refused0 = pg_metric_value(m->refused);
}

#define SENT(m) (pg_metric_value((m)->sent) - (m)->sent0)
#define FAILED(m) (pg_metric_value((m)->failed) - (m)->failed0)
#define REFUSED(m) (pg_metric_value((m)->refused) - (m)->refused0)

static int refs(const struct pg_batch *b)
{
    return __atomic_load_n(&b->refcnt, __ATOMIC_ACQUIRE);
}

/* Polls idle() for up to 10 s. */
static bool wait_idle(struct pg_proc_fixture *f)
{
    for (int i = 0; i < 1000; i++) {
        struct timespec nap = {0, 10 * 1000000L};

        if (f->ops->idle(f->state)) {
            return true;
        }
        nanosleep(&nap, NULL);
    }
    return false;
}

static char *tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "/tmp/pg-debugexp-%d-%s", (int)getpid(), name);
    unlink(buf);
    return buf;
}

/* Creates and starts exporters::debug with @settings (YAML lines, each
 * indented four spaces) writing to @path; false (torn down) on failure. */
static bool start_debug(struct pg_proc_fixture *f, const char *settings, const char *path)
{
    char yaml[512];
    struct pg_status st;

    snprintf(yaml, sizeof(yaml), "exporters:\n  debug:\n%s    output_paths: [\"%s\"]\n",
             settings, path);
    pg_comp_setup(f, &pg_exporter_debug, "exporters", yaml);
    CHECK_INT(f->err, PG_ERR_OK);
    if (f->err == PG_ERR_OK) {
        CHECK_INT(f->ops->start(f->state, &st), PG_ERR_OK);
        return true;
    }
    pg_proc_teardown(f);
    return false;
}

/* More batches than one coalesced write holds and than the writer keeps
 * spare items for: every line, once, in order. */
PG_TEST(test_prints_in_order_then_idle)
{
    enum { N = 200 };
    char path[128];
    struct pg_proc_fixture f;
    struct pg_batch *b[N];
    struct pg_status st;
    unsigned char *text;
    size_t len = 0;
    const char *p;

    tmp_path(path, sizeof(path), "out.txt");
    if (!start_debug(&f, "    verbosity: basic\n    sampling_initial: 1000\n", path)) {
        return;
    }
    CHECK(f.ops->idle(f.state));
    for (size_t i = 0; i < N; i++) {
        b[i] = mk_batch(i + 1);
        CHECK_INT(f.ops->consume(f.state, b[i], &st), PG_ERR_OK);
        CHECK_INT(refs(b[i]), 1); /* basic keeps only the counts, never the batch */
    }
    CHECK(wait_idle(&f));
    for (size_t i = 0; i < N; i++) {
        CHECK_INT(refs(b[i]), 1); /* printed and let go */
        pg_batch_unref(b[i]);
    }
    f.ops->shutdown(f.state);
    pg_proc_teardown(&f);

    text = pg_test_read_file(path, &len);
    CHECK(text != NULL);
    p = (const char *)text;
    for (size_t i = 0; text != NULL && i < N; i++) {
        char want[64];
        const char *hit;

        snprintf(want, sizeof(want), "resource_profiles=%zu sample_records=0\n", i + 1);
        hit = strstr(p, want);
        CHECK(hit != NULL); /* and after the previous one: consumed order */
        if (hit == NULL) {
            fprintf(stderr, "  missing or out of order: %s", want);
            break;
        }
        p = hit + strlen(want);
    }
    {
        size_t lines = 0;

        for (size_t i = 0; text != NULL && i < len; i++) {
            lines += text[i] == '\n';
        }
        CHECK_INT(lines, N);
    }
    free(text);
    unlink(path);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "  consume() or destroy() blocked on a stalled output\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(1);
}

PG_TEST(test_stalled_output_never_blocks)
{
    enum { N = 3000 };
    char path[128];
    struct pg_proc_fixture f;
    struct pg_batch **b = calloc(N, sizeof(*b));
    struct pg_status st;
    struct pg_metric *dropped;
    int64_t dropped0;
    char head[64] = {0};
    int rfd;
    struct exp_series m;

    tmp_path(path, sizeof(path), "fifo");
    CHECK_INT(mkfifo(path, 0600), 0);
    /* A reader that never reads: the writer fills the pipe and blocks. */
    rfd = open(path, O_RDONLY | O_NONBLOCK);
    PG_REQUIRE(rfd >= 0);
    (void)fcntl(rfd, F_SETPIPE_SZ, 4096);
    dropped = pg_metric_counter("pprofgate_debug_exporter_dropped_batches_total", "",
                                "exporter=\"debug\"");
    dropped0 = pg_metric_value(dropped);
    series_start(&m);
    if (rfd < 0 || b == NULL ||
        !start_debug(&f, "    verbosity: detailed\n    sampling_initial: 100000\n", path)) {
        free(b);
        return;
    }

    signal(SIGALRM, on_alarm);
    alarm(60); /* a blocking consume() or destroy() ends the test here */
    for (size_t i = 0; i < N; i++) {
        b[i] = mk_batch_samples(3);
        CHECK_INT(f.ops->consume(f.state, b[i], &st), PG_ERR_OK);
    }
    /* The queue holds 1024; the pipe took a few more before it filled. */
    CHECK(pg_metric_value(dropped) - dropped0 >= N / 3);
    CHECK_INT(REFUSED(&m), 3 * (pg_metric_value(dropped) - dropped0));
    CHECK(!f.ops->idle(f.state));
    f.ops->shutdown(f.state);
    pg_proc_teardown(&f); /* cancels the writer stuck in write(2) */
    alarm(0);
    /* Every sample accounted for: printed, abandoned at shutdown, or
     * refused by the full queue. */
    CHECK(FAILED(&m) > 0);
    CHECK_INT(SENT(&m) + FAILED(&m) + REFUSED(&m), 3 * N);

    for (size_t i = 0; i < N; i++) {
        if (refs(b[i]) != 1) {
            fprintf(stderr, "  batch %zu still referenced after destroy\n", i);
            CHECK_INT(refs(b[i]), 1);
            break;
        }
    }
    for (size_t i = 0; i < N; i++) {
        pg_batch_unref(b[i]);
    }
    free(b);
    /* What the writer managed to write before the pipe filled is intact. */
    CHECK(read(rfd, head, sizeof(head) - 1) > 0);
    CHECK(strncmp(head, "ts=", 3) == 0);
    close(rfd);
    unlink(path);
}

PG_TEST(test_sampling_counts_nothing_as_dropped)
{
    char path[128];
    struct pg_proc_fixture f;
    struct pg_status st;
    struct pg_metric *dropped;
    int64_t dropped0;
    struct exp_series m;

    tmp_path(path, sizeof(path), "sampled.txt");
    dropped = pg_metric_counter("pprofgate_debug_exporter_dropped_batches_total", "",
                                "exporter=\"debug\"");
    dropped0 = pg_metric_value(dropped);
    series_start(&m);
    if (!start_debug(&f, "    sampling_initial: 1\n    sampling_thereafter: 0\n", path)) {
        return;
    }
    for (int i = 0; i < 20; i++) {
        struct pg_batch *b = mk_batch_samples(2);

        CHECK_INT(f.ops->consume(f.state, b, &st), PG_ERR_OK);
        pg_batch_unref(b);
    }
    CHECK(wait_idle(&f));
    CHECK_INT(pg_metric_value(dropped), dropped0); /* sampled away is not "dropped" */
    /* ... but sent, as the collector counts a push its logger sampled away. */
    CHECK_INT(SENT(&m), 40);
    CHECK_INT(FAILED(&m) + REFUSED(&m), 0);
    f.ops->shutdown(f.state);
    pg_proc_teardown(&f);
    unlink(path);
}

/* An output that fails every write (/dev/full: ENOSPC): the samples count as
 * send_failed, not sent. */
PG_TEST(test_write_failure_counts_send_failed)
{
    struct pg_proc_fixture f;
    struct pg_status st;
    struct exp_series m;

    series_start(&m);
    if (access("/dev/full", W_OK) != 0) {
        fprintf(stderr, "  no /dev/full here: write-failure case not run\n");
        return;
    }
    if (!start_debug(&f, "    verbosity: normal\n", "/dev/full")) {
        return;
    }
    for (int i = 0; i < 2; i++) {
        struct pg_batch *b = mk_batch_samples(4);

        CHECK_INT(f.ops->consume(f.state, b, &st), PG_ERR_OK);
        pg_batch_unref(b);
    }
    CHECK(wait_idle(&f));
    CHECK_INT(FAILED(&m), 8);
    CHECK_INT(SENT(&m) + REFUSED(&m), 0);
    f.ops->shutdown(f.state);
    pg_proc_teardown(&f);
}

struct pipe_reader {
    int fd;
    char *buf;
    size_t len, cap;
};

static void *read_all(void *arg)
{
    struct pipe_reader *r = arg;

    for (;;) {
        ssize_t n;

        if (r->cap - r->len < 65536) {
            r->cap = r->cap * 2 + 65536;
            r->buf = realloc(r->buf, r->cap);
        }
        n = read(r->fd, r->buf + r->len, r->cap - r->len - 1);
        if (n <= 0) {
            break;
        }
        r->len += (size_t)n;
    }
    r->buf[r->len] = '\0';
    return NULL;
}

/* Another writer on the same pipe (as log lines on a shared stderr) only
 * ever lands between the exporter's lines. */
PG_TEST(test_pipe_writes_whole_lines)
{
    char path[128];
    struct pg_proc_fixture f;
    struct pg_status st;
    struct pipe_reader r = {0};
    pthread_t reader;
    struct pg_batch *b;
    int wfd;
    size_t marks = 0, misplaced = 0;

    tmp_path(path, sizeof(path), "lines.fifo");
    CHECK_INT(mkfifo(path, 0600), 0);
    r.fd = open(path, O_RDONLY | O_NONBLOCK);
    wfd = open(path, O_WRONLY);
    PG_REQUIRE(r.fd >= 0 && wfd >= 0);
    fcntl(r.fd, F_SETFL, fcntl(r.fd, F_GETFL) & ~O_NONBLOCK);
    pthread_create(&reader, NULL, read_all, &r);
    b = mk_batch(3000); /* ~150 KB of text: many PIPE_BUF chunks */
    if (start_debug(&f, "    verbosity: detailed\n", path)) {
        CHECK_INT(f.ops->consume(f.state, b, &st), PG_ERR_OK);
        for (int i = 0; i < 3000 && !f.ops->idle(f.state); i++) {
            static const char mark[] = "MARK\n";

            (void)!write(wfd, mark, sizeof(mark) - 1);
        }
        CHECK(wait_idle(&f));
        pg_proc_teardown(&f);
    }
    close(wfd);
    pthread_join(reader, NULL);
    pg_batch_unref(b);
    CHECK(strstr(r.buf, "ResourceProfiles #2999") != NULL);
    for (const char *m = r.buf; (m = strstr(m, "MARK")) != NULL; m += 4) {
        marks++;
        misplaced += !(m == r.buf || m[-1] == '\n') || m[4] != '\n';
    }
    CHECK(marks > 0);
    CHECK_INT(misplaced, 0);
    free(r.buf);
    close(r.fd);
    unlink(path);
}

/* A terminal stopped with ^S (output flow off): consume() does not wait,
 * and destroy() gives up on the output and releases the batch. */
PG_TEST(test_stopped_terminal)
{
    struct pg_proc_fixture f;
    struct pg_status st;
    struct termios tio;
    struct pg_batch *b;
    const char *name;
    int m, s = -1;

    m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0 || (name = ptsname(m)) == NULL ||
        (s = open(name, O_RDWR | O_NOCTTY)) < 0) {
        /* Some containers have no /dev/ptmx; the FIFO cases above cover the
         * same writer paths, so say so instead of failing. */
        fprintf(stderr, "  no pseudo-terminal here: stopped-terminal case not run\n");
        if (m >= 0) {
            close(m);
        }
        return;
    }
    tcgetattr(s, &tio);
    cfmakeraw(&tio);
    tcsetattr(s, TCSANOW, &tio);
    CHECK_INT(tcflow(s, TCOOFF), 0);
    b = mk_batch(3000);
    if (start_debug(&f, "    verbosity: detailed\n", name)) {
        signal(SIGALRM, on_alarm);
        alarm(60);
        CHECK_INT(f.ops->consume(f.state, b, &st), PG_ERR_OK);
        CHECK_INT(f.ops->consume(f.state, b, &st), PG_ERR_OK);
        usleep(100 * 1000);
        CHECK(!f.ops->idle(f.state));
        pg_proc_teardown(&f);
        alarm(0);
    }
    CHECK_INT(refs(b), 1);
    pg_batch_unref(b);
    tcflow(s, TCOON);
    close(s);
    close(m);
}

PG_TEST_MAIN(PG_CASE(test_prints_in_order_then_idle), PG_CASE(test_stalled_output_never_blocks),
             PG_CASE(test_sampling_counts_nothing_as_dropped),
             PG_CASE(test_write_failure_counts_send_failed), PG_CASE(test_pipe_writes_whole_lines),
             PG_CASE(test_stopped_terminal))
