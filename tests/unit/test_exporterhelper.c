/* SPDX-License-Identifier: Apache-2.0
 * The shared exporter helper driven by a fake exporter (an in-test vtable,
 * no gRPC, no sockets): retryable failures then success, permanent
 * rejection, retry_on_failure disabled, a full queue refused to the caller,
 * a push larger than the whole queue, bisect of a rejected merged batch,
 * splitting under max_request_bytes with the exporter's body, abandoning a
 * send on stop, replay of a persistent queue by a new helper, the replay's
 * memory budget (what it holds, live bytes shrinking it, live items taken
 * beside it), and pushes from several threads while the loop sends (memory
 * and persistent queue, and during a replay while receivers admit and
 * release memory; label "threads": ThreadSanitizer runs this file). Retry
 * intervals are 0, so nothing waits on the clock: the loop only runs until
 * the work is done (bounded in iterations). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "core/config.h"
#include "core/memlimit.h"
#include "core/metrics.h"
#include "core/storage.h"
#include "exporterhelper/exporterhelper.h"
#include "otlp/otlp_encode.h"
#include "pg_test.h"
#include "test_otlp_util.h"

/* The standard keys bound the way an exporter binds them: one row. */
struct fake_cfg {
    struct pg_exph_config helper;
};

static const struct pg_field fake_fields[] = {
    PG_EXPH_FIELDS(struct fake_cfg, helper),
    PG_FIELD_END,
};

#define MAX_HELD 8

struct fake {
    struct event_base *base;
    struct pg_exph *h;
    struct fake_cfg cfg;
    struct pg_config *yaml;
    char id[32];
    char labels[64];
    /* behaviour */
    int retryable_left;         /* answer RETRYABLE this many times first */
    bool permanent;             /* reject every send */
    const char *poison;         /* reject a request naming this service.name */
    bool hold;                  /* keep the sends unanswered (in held[]) */
    size_t max_body;            /* largest body seen (without the prefix) */
    uint64_t replay_peak;       /* most memory a replay held at a send */
    /* observed */
    int sends;
    bool bad_body;              /* a body without make_body's prefix */
    struct pg_exph_consumer *held[MAX_HELD];
    int n_held;
};

struct answer {
    struct pg_exph_consumer *c;
    struct pg_exph_result r;
};

static void on_answer(evutil_socket_t fd, short what, void *arg)
{
    struct answer *a = arg;

    (void)fd;
    (void)what;
    pg_exph_send_done(a->c, &a->r);
    free(a);
}

/* The body is "F" + the OTLP encoding: proves make_body's output is sent. */
static enum pg_err fake_make_body(void *exporter, const uint8_t *enc, size_t len, uint8_t **body,
                                  size_t *body_len, struct pg_status *st)
{
    uint8_t *b = malloc(len + 1);

    (void)exporter;
    (void)st;
    if (b == NULL) {
        return PG_ERR_NOMEM;
    }
    b[0] = 'F';
    memcpy(b + 1, enc, len);
    *body = b;
    *body_len = len + 1;
    return PG_ERR_OK;
}

static bool names_service(const uint8_t *buf, size_t len, const char *service)
{
    struct pg_otlp_request *req = (struct pg_otlp_request *)protobuf_c_message_unpack(
        &pg_otlp_request_descriptor, NULL, len, buf);
    bool found = false;

    if (req == NULL) {
        return false;
    }
    for (size_t i = 0; i < req->n_resource_profiles && !found; i++) {
        const struct pg_otlp_resource *res = req->resource_profiles[i]->resource;

        for (size_t k = 0; res != NULL && k < res->n_attributes && !found; k++) {
            const struct pg_otlp_anyvalue *v = res->attributes[k]->value;

            found = strcmp(res->attributes[k]->key, "service.name") == 0 && v != NULL &&
                    v->value_case == PG_OTLP_ANYVALUE_STR && strcmp(v->string_value, service) == 0;
        }
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
    return found;
}

static enum pg_err fake_send(void *exporter, struct pg_exph_consumer *c, const uint8_t *body,
                             size_t len, struct pg_status *st)
{
    struct fake *f = exporter;
    struct answer *a;
    struct timeval now = {0, 0};

    (void)st;
    f->sends++;
    if (pg_memlimit_replay() > f->replay_peak) {
        f->replay_peak = pg_memlimit_replay();
    }
    if (len < 1 || body[0] != 'F') {
        f->bad_body = true;
    } else if (len - 1 > f->max_body) {
        f->max_body = len - 1;
    }
    if (f->hold) {
        if (f->n_held == MAX_HELD) {
            return PG_ERR_NOMEM;
        }
        f->held[f->n_held++] = c;
        return PG_ERR_OK;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return PG_ERR_NOMEM;
    }
    a->c = c;
    a->r.retry_after_ns = -1;
    a->r.status = "OK";
    a->r.message = "";
    if (f->retryable_left > 0) {
        f->retryable_left--;
        a->r.outcome = PG_EXPH_RETRYABLE;
        a->r.status = "UNAVAILABLE";
        a->r.message = "fake outage";
    } else if (f->permanent ||
               (f->poison != NULL && len > 0 && names_service(body + 1, len - 1, f->poison))) {
        a->r.outcome = PG_EXPH_PERMANENT;
        a->r.status = "INVALID_ARGUMENT";
        a->r.reason = "invalid_argument";
        a->r.message = "fake rejection";
    }
    /* Answered later, from the loop, as a transport does. */
    return event_base_once(f->base, -1, EV_TIMEOUT, on_answer, a, &now) == 0 ? PG_ERR_OK
                                                                            : PG_ERR_NOMEM;
}

static const struct pg_exph_ops fake_ops = {
    .make_body = fake_make_body,
    .send = fake_send,
};

static bool fake_open(struct fake *f, const char *id, const char *yaml, uint64_t max_request_bytes)
{
    struct pg_diag diag;
    struct pg_status st;
    struct pg_exph_params p;
    size_t problems;

    memset(f, 0, sizeof(*f));
    snprintf(f->id, sizeof(f->id), "%s", id);
    snprintf(f->labels, sizeof(f->labels), "exporter=\"%s\"", id);
    f->base = event_base_new();
    f->yaml = pg_config_load_string("fake.yaml", yaml, strlen(yaml));
    if (f->base == NULL || f->yaml == NULL) {
        return false;
    }
    pg_diag_init(&diag);
    problems = pg_cfg_bind(f->yaml->arena, &diag, f->yaml->root, fake_fields, &f->cfg, "fake");
    problems += pg_exph_config_check(&f->cfg.helper, &diag, f->yaml->root, "fake");
    for (size_t i = 0; i < diag.n; i++) {
        fprintf(stderr, "  config: %s\n", diag.msgs[i]);
    }
    pg_diag_free(&diag);
    if (problems > 0) {
        return false;
    }
    p = (struct pg_exph_params){.id = f->id,
                                .log = "exporter/fake",
                                .cfg = &f->cfg.helper,
                                .max_request_bytes = max_request_bytes,
                                .ops = &fake_ops,
                                .exporter = f};
    f->h = pg_exph_new(&p);
    pg_status_clear(&st);
    if (f->h == NULL || pg_exph_start(f->h, f->base, &st) != PG_ERR_OK) {
        fprintf(stderr, "  start: %s\n", pg_status_text(&st));
        return false;
    }
    return true;
}

static void fake_close(struct fake *f)
{
    if (f->h != NULL) {
        pg_exph_stop(f->h);
        pg_exph_free(f->h);
    }
    pg_config_free(f->yaml);
    if (f->base != NULL) {
        event_base_free(f->base);
    }
}

/* Reopens the exporter @id on its spool: nothing was left to replay. */
static void expect_no_replay(const char *id, const char *yaml)
{
    struct fake f;

    if (fake_open(&f, id, yaml, 0)) {
        for (int i = 0; i < 50; i++) {
            event_base_loop(f.base, EVLOOP_NONBLOCK);
        }
        CHECK_INT(f.sends, 0);
    } else {
        CHECK(false);
    }
    fake_close(&f);
}

/* Unregisters the spool @name and removes its directory @dir. */
static void drop_spool(const char *name, const char *dir)
{
    char cmd[128];

    pg_storage_unregister(name);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

static int64_t counter(const struct fake *f, const char *name)
{
    return pg_metric_value(pg_metric_counter(name, "test", f->labels));
}

static int64_t sent(const struct fake *f)
{
    return counter(f, "otelcol_exporter_sent_profile_samples");
}

static int64_t dropped(const struct fake *f, const char *reason)
{
    char labels[128];

    snprintf(labels, sizeof(labels), "%s,reason=\"%s\"", f->labels, reason);
    return pg_metric_value(
        pg_metric_counter("pprofgate_exporter_dropped_profile_samples", "test", labels));
}

/* Runs the loop until @want samples were sent or dropped, bounded in turns. */
static void run_until(struct fake *f, int64_t want)
{
    for (int i = 0; i < 5000; i++) {
        if (sent(f) + counter(f, "otelcol_exporter_send_failed_profile_samples") >= want &&
            pg_exph_idle(f->h)) {
            return;
        }
        event_base_loop(f->base, EVLOOP_NONBLOCK);
    }
}

static enum pg_err push(struct fake *f, size_t samples, const char *service, unsigned seed)
{
    struct pg_batch *b = tb_batch(1, samples, 20, service, seed);
    struct pg_status st;
    enum pg_err err;

    pg_status_clear(&st);
    err = pg_exph_consume(f->h, b, &st);
    pg_batch_unref(b); /* the helper took its own reference (or spooled it) */
    return err;
}

#define NO_WAIT "retry_on_failure: {initial_interval: 0s, randomization_factor: 0}\n"

PG_TEST(retryable_then_sent)
{
    struct fake f;

    PG_REQUIRE(fake_open(&f, "fake/retry", NO_WAIT, 0));
    f.retryable_left = 3;
    CHECK_INT(push(&f, 10, "svc", 1), PG_ERR_OK);
    run_until(&f, 10);
    CHECK_INT(f.sends, 4);
    CHECK_INT(sent(&f), 10);
    CHECK_INT(counter(&f, "pprofgate_exporter_retries"), 3);
    CHECK_INT(counter(&f, "pprofgate_exporter_sent_requests"), 1);
    CHECK(!f.bad_body);
    fake_close(&f);
}

PG_TEST(permanent_dropped_not_retried)
{
    struct fake f;

    PG_REQUIRE(fake_open(&f, "fake/permanent", NO_WAIT, 0));
    f.permanent = true;
    CHECK_INT(push(&f, 7, "svc", 2), PG_ERR_OK);
    run_until(&f, 7);
    CHECK_INT(f.sends, 1);
    CHECK_INT(sent(&f), 0);
    CHECK_INT(dropped(&f, "invalid_argument"), 7);
    fake_close(&f);
}

PG_TEST(retry_disabled_drops_at_first_failure)
{
    struct fake f;

    PG_REQUIRE(fake_open(&f, "fake/noretry", "retry_on_failure: {enabled: false}\n", 0));
    f.retryable_left = 5;
    CHECK_INT(push(&f, 4, "svc", 3), PG_ERR_OK);
    run_until(&f, 4);
    CHECK_INT(f.sends, 1);
    CHECK_INT(dropped(&f, "retry_disabled"), 4);
    fake_close(&f);
}

/* queue_size 1 + one consumer: two pushes are held, the third is refused
 * (BUSY, counted), and would_block says so with block_on_overflow. Then
 * stop drops and counts what was held; the send on the wire is abandoned
 * and freed when its answer finally comes. */
PG_TEST(full_queue_refused_then_stop_abandons)
{
    struct fake f;

    PG_REQUIRE(fake_open(&f, "fake/full",
                         "sending_queue: {queue_size: 1, num_consumers: 1, "
                         "block_on_overflow: true}\n",
                         0));
    f.hold = true;
    CHECK_INT(push(&f, 5, "svc", 4), PG_ERR_OK);
    CHECK_INT(push(&f, 5, "svc", 5), PG_ERR_OK);
    {
        struct pg_batch *b = tb_batch(1, 5, 20, "svc", 6);

        CHECK(pg_exph_would_block(f.h, b));
        pg_batch_unref(b);
    }
    CHECK_INT(push(&f, 5, "svc", 6), PG_ERR_BUSY);
    CHECK_INT(counter(&f, "otelcol_exporter_enqueue_failed_profile_samples"), 5);
    for (int i = 0; i < 100 && f.n_held == 0; i++) {
        event_base_loop(f.base, EVLOOP_NONBLOCK);
    }
    CHECK_INT(f.n_held, 1);
    CHECK_INT(push(&f, 5, "svc", 7), PG_ERR_BUSY); /* one in flight + one waiting */
    CHECK(!pg_exph_idle(f.h));
    pg_exph_stop(f.h);
    CHECK_INT(dropped(&f, "shutdown"), 10);
    CHECK(pg_exph_idle(f.h));
    if (f.n_held == 1) {
        struct pg_exph_result r = {PG_EXPH_SENT, -1, "OK", NULL, ""};

        pg_exph_send_done(f.held[0], &r); /* abandoned: only freed */
    }
    CHECK_INT(sent(&f), 0);
    fake_close(&f);
}

/* Another loop's check-then-push, on a thread of its own. */
struct other_loop {
    struct fake *f;
    bool would_block;
    enum pg_err consumed;
};

static void *other_loop_main(void *arg)
{
    struct other_loop *o = arg;
    struct pg_batch *b = tb_batch(1, 5, 20, "svc", 99);
    struct pg_status st;

    o->would_block = pg_exph_would_block(o->f->h, b);
    pg_status_clear(&st);
    o->consumed = pg_exph_consume(o->f->h, b, &st);
    pg_batch_unref(b);
    return NULL;
}

static void other_loop_run(struct other_loop *o)
{
    pthread_t th;

    PG_REQUIRE(pthread_create(&th, NULL, other_loop_main, o) == 0);
    pthread_join(th, NULL);
}

/* block_on_overflow with several loops: the room one loop was told about is
 * its own until it consumes (or its entry ends), so a loop that checks in
 * between waits instead of taking it and leaving the first a 503. */
PG_TEST(block_on_overflow_room_is_set_aside)
{
    struct fake f;
    struct pg_batch *b = tb_batch(1, 5, 20, "svc", 60);
    struct other_loop o;
    struct pg_status st;

    PG_REQUIRE(fake_open(&f, "fake/aside",
                         "sending_queue: {queue_size: 1, num_consumers: 1, "
                         "block_on_overflow: true}\n",
                         0));
    f.hold = true;
    CHECK_INT(push(&f, 5, "svc", 61), PG_ERR_OK); /* one slot of two left */
    CHECK(!pg_exph_would_block(f.h, b));         /* ... set aside for this thread */
    o = (struct other_loop){.f = &f};
    other_loop_run(&o);
    CHECK(o.would_block);
    CHECK_INT(o.consumed, PG_ERR_BUSY);
    pg_status_clear(&st);
    CHECK_INT(pg_exph_consume(f.h, b, &st), PG_ERR_OK); /* the room was still there */
    CHECK(pg_exph_would_block(f.h, b));                /* and now it is full */
    pg_exph_entry_end(f.h);
    /* Room not used (a processor refused the push) goes back at the entry's end. */
    pg_exph_stop(f.h);
    fake_close(&f);
    PG_REQUIRE(fake_open(&f, "fake/aside2",
                         "sending_queue: {queue_size: 1, num_consumers: 1, "
                         "block_on_overflow: true}\n",
                         0));
    f.hold = true;
    CHECK_INT(push(&f, 5, "svc", 62), PG_ERR_OK);
    CHECK(!pg_exph_would_block(f.h, b));
    pg_exph_entry_end(f.h);
    o = (struct other_loop){.f = &f};
    other_loop_run(&o);
    CHECK(!o.would_block);
    CHECK_INT(o.consumed, PG_ERR_OK);
    pg_batch_unref(b);
    fake_close(&f);
}

PG_TEST(larger_than_whole_queue_is_a_limit)
{
    struct fake f;

    PG_REQUIRE(fake_open(&f, "fake/items", "sending_queue: {sizer: items, queue_size: 10}\n", 0));
    CHECK_INT(push(&f, 20, "svc", 8), PG_ERR_LIMIT);
    CHECK_INT(push(&f, 6, "svc", 9), PG_ERR_OK);
    CHECK_INT(push(&f, 6, "svc", 10), PG_ERR_BUSY); /* 12 > 10 */
    run_until(&f, 6);
    CHECK_INT(sent(&f), 6);
    fake_close(&f);
}

/* Four pushes merged into one request; the destination rejects any request
 * holding the poisoned one: halves are retried until only it is dropped. */
PG_TEST(bisect_drops_only_the_rejected_push)
{
    struct fake f;
    static const char *const services[] = {"a", "b", "poison", "d"};

    PG_REQUIRE(fake_open(&f, "fake/bisect",
                         NO_WAIT "sending_queue: {batch: {min_size: 20, flush_timeout: 10s}}\n",
                         0));
    f.poison = "poison";
    for (unsigned i = 0; i < 4; i++) {
        CHECK_INT(push(&f, 5, services[i], 20 + i), PG_ERR_OK);
    }
    run_until(&f, 20);
    CHECK_INT(sent(&f), 15);
    CHECK_INT(dropped(&f, "invalid_argument"), 5);
    CHECK_INT(f.sends, 5); /* abcd, ab, pd, p, d */
    fake_close(&f);
}

PG_TEST(split_under_max_request_bytes)
{
    struct fake f;

    PG_REQUIRE(fake_open(&f, "fake/split", NO_WAIT, 4096));
    CHECK_INT(push(&f, 400, "svc", 30), PG_ERR_OK);
    run_until(&f, 400);
    CHECK_INT(sent(&f), 400);
    CHECK(f.sends > 1);
    CHECK(f.max_body <= 4096);
    CHECK(!f.bad_body);
    fake_close(&f);
}

/* With storage, a push is on disk before consume() returns; a helper that
 * stops before sending keeps it there, and the next one replays it. */
PG_TEST(persistent_queue_replayed_by_the_next_helper)
{
    char dir[64];
    struct pg_spool_options opt;
    struct fake f;
    const char *yaml = NO_WAIT "sending_queue: {storage: file_storage/exph}\n";

    snprintf(dir, sizeof(dir), "/tmp/pg_test_exph.XXXXXX");
    PG_REQUIRE(mkdtemp(dir) != NULL);
    memset(&opt, 0, sizeof(opt));
    opt.dir = dir;
    opt.fsync = PG_SPOOL_FSYNC_NEVER;
    PG_REQUIRE(pg_storage_register("file_storage/exph", &opt));

    if (fake_open(&f, "fake/spool1", yaml, 0)) {
        f.hold = true;
        CHECK_INT(push(&f, 3, "svc", 40), PG_ERR_OK);
        CHECK_INT(push(&f, 4, "svc", 41), PG_ERR_OK);
    } else {
        CHECK(false);
    }
    fake_close(&f); /* nothing sent: both stay on disk */
    /* Kept for the next start is not lost: not counted as dropped. */
    CHECK_INT(dropped(&f, "shutdown"), 0);
    CHECK_INT(counter(&f, "otelcol_exporter_send_failed_profile_samples"), 0);

    if (fake_open(&f, "fake/spool2", yaml, 0)) {
        run_until(&f, 7);
        CHECK_INT(sent(&f), 7);
        CHECK_INT(f.sends, 2);
    } else {
        CHECK(false);
    }
    fake_close(&f); /* delivered: acknowledged */

    expect_no_replay("fake/spool3", yaml);
    drop_spool("file_storage/exph", dir);
}

/* Receiver loops push from their own threads while the main loop sends. */
#define PUSHERS 4
#define PUSHES 60
#define PUSH_SAMPLES 3

struct pusher {
    struct fake *f;
    unsigned idx;
    int ok, busy, other;
    int *running; /* atomic: pushers not finished */
};

static void *pusher_main(void *arg)
{
    struct pusher *p = arg;

    for (unsigned i = 0; i < PUSHES; i++) {
        enum pg_err err = push(p->f, PUSH_SAMPLES, "svc", 1000 + p->idx * PUSHES + i);

        if (err == PG_ERR_OK) {
            p->ok++;
        } else if (err == PG_ERR_BUSY) {
            p->busy++;
        } else {
            p->other++;
        }
    }
    __atomic_sub_fetch(p->running, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Checks every accepted push was sent exactly once and every refusal is a
 * BUSY counted as such. */
static void concurrent_pushes(struct fake *f)
{
    struct pusher ps[PUSHERS];
    pthread_t th[PUSHERS];
    int running = PUSHERS, ok = 0, busy = 0, other = 0;

    for (unsigned i = 0; i < PUSHERS; i++) {
        ps[i] = (struct pusher){.f = f, .idx = i, .running = &running};
        PG_REQUIRE(pthread_create(&th[i], NULL, pusher_main, &ps[i]) == 0);
    }
    /* The main loop sends meanwhile (bounded: the pushers are). */
    while (__atomic_load_n(&running, __ATOMIC_ACQUIRE) > 0) {
        event_base_loop(f->base, EVLOOP_NONBLOCK);
    }
    for (unsigned i = 0; i < PUSHERS; i++) {
        pthread_join(th[i], NULL);
        ok += ps[i].ok;
        busy += ps[i].busy;
        other += ps[i].other;
    }
    run_until(f, (int64_t)ok * PUSH_SAMPLES);
    CHECK_INT(ok + busy, PUSHERS * PUSHES);
    CHECK_INT(other, 0);
    CHECK(ok > 0);
    CHECK_INT(f->sends, ok); /* one request per push, none twice */
    CHECK_INT(sent(f), (int64_t)ok * PUSH_SAMPLES);
    CHECK_INT(counter(f, "otelcol_exporter_enqueue_failed_profile_samples"),
              (int64_t)busy * PUSH_SAMPLES);
    CHECK(pg_exph_idle(f->h));
}

PG_TEST(pushes_from_several_threads)
{
    struct fake f;

    evthread_use_pthreads(); /* as main() does: other threads wake the loop */
    PG_REQUIRE(fake_open(&f, "fake/threads",
                         NO_WAIT "sending_queue: {queue_size: 20, num_consumers: 2}\n", 0));
    concurrent_pushes(&f);
    fake_close(&f);
}

PG_TEST(persistent_pushes_from_several_threads)
{
    char dir[64];
    struct pg_spool_options opt;
    struct fake f;
    const char *yaml = NO_WAIT "sending_queue: {storage: file_storage/exphmt, queue_size: 20}\n";

    evthread_use_pthreads();
    snprintf(dir, sizeof(dir), "/tmp/pg_test_exph.XXXXXX");
    PG_REQUIRE(mkdtemp(dir) != NULL);
    memset(&opt, 0, sizeof(opt));
    opt.dir = dir;
    opt.fsync = PG_SPOOL_FSYNC_NEVER;
    PG_REQUIRE(pg_storage_register("file_storage/exphmt", &opt));
    if (fake_open(&f, "fake/spoolmt", yaml, 0)) {
        concurrent_pushes(&f);
    } else {
        CHECK(false);
    }
    fake_close(&f);
    /* Every accepted record was acknowledged once sent, and no refused
     * push was left on disk: the next run has nothing to replay. */
    expect_no_replay("fake/spoolmt2", yaml);
    drop_spool("file_storage/exphmt", dir);
}

/* ---- the replay's memory budget -------------------------------------------- */

#define REPLAY_RECORDS 8
#define REPLAY_SAMPLES 4000

/* Encoded size of the records replay_spool() writes. */
static size_t replay_record_len(void)
{
    struct pg_batch *b = tb_batch(1, REPLAY_SAMPLES, 20, "svc", 500);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_status st;
    uint8_t *enc = NULL;
    size_t len = 0;

    CHECK(a != NULL && pg_batch_encode(b, a, &enc, &len, &st) == PG_ERR_OK);
    pg_arena_destroy(a);
    pg_batch_unref(b);
    return len;
}

/* Registers storage @name in a new directory (*@dir) and leaves
 * REPLAY_RECORDS records there for the next helper, as a killed run does. */
static void replay_spool(const char *name, char *dir, size_t dir_len, const char *yaml)
{
    struct pg_spool_options opt;
    struct fake f;

    snprintf(dir, dir_len, "/tmp/pg_test_exph.XXXXXX");
    PG_REQUIRE(mkdtemp(dir) != NULL);
    memset(&opt, 0, sizeof(opt));
    opt.dir = dir;
    opt.fsync = PG_SPOOL_FSYNC_NEVER;
    PG_REQUIRE(pg_storage_register(name, &opt));
    PG_REQUIRE(fake_open(&f, "fake/replay0", yaml, 0));
    f.hold = true;
    for (unsigned i = 0; i < REPLAY_RECORDS; i++) {
        CHECK_INT(push(&f, REPLAY_SAMPLES, "svc", 500 + i), PG_ERR_OK);
    }
    fake_close(&f); /* not sent: all stay on disk */
}

static int64_t gauge(const struct fake *f, const char *name)
{
    return pg_metric_value(pg_metric_gauge(name, "test", f->labels));
}

/* Runs the loop for up to @ms of wall time (the replay's pause timer is
 * 250 ms), or until @f holds @held sends. */
static void run_for(struct fake *f, int ms, int held)
{
    for (int i = 0; i < ms / 5 && f->n_held < held; i++) {
        event_base_loop(f->base, EVLOOP_NONBLOCK);
        usleep(5000);
    }
}

static void answer_held(struct fake *f)
{
    struct pg_exph_result ok = {.outcome = PG_EXPH_SENT, .retry_after_ns = -1, .status = "OK",
                                .message = ""};
    int n = f->n_held;

    f->n_held = 0;
    for (int i = 0; i < n; i++) {
        pg_exph_send_done(f->held[i], &ok);
    }
}

/* Budget 3 records' worth: the replay takes records while what it holds
 * (a record as read and its body until prepared, then the body) and every
 * other in-flight byte fit; bytes a receiver holds shrink it to nothing;
 * this run's pushes are taken beside a replay whose budget is full; all
 * arrives once answered, and the progress metrics end at 0. */
PG_TEST(replay_budget_bounds_what_the_replay_holds)
{
    char dir[64], yaml[256];
    size_t len = replay_record_len();
    /* A record charges 2 x len + 256 KiB until prepared, then its body. */
    uint64_t budget = 3 * (uint64_t)len + 2 * len + (256u << 10);
    struct fake f;

    snprintf(yaml, sizeof(yaml),
             NO_WAIT "sending_queue: {storage: file_storage/exphrb, replay_memory: %llu}\n",
             (unsigned long long)budget);
    replay_spool("file_storage/exphrb", dir, sizeof(dir), yaml);
    pg_memlimit_reset();
    pg_memlimit_configure(256u << 20, 32u << 20, 0);

    /* A receiver holds most of the budget: nothing is replayed. */
    pg_memlimit_charge((size_t)(budget - len));
    PG_REQUIRE(fake_open(&f, "fake/replay1", yaml, 0));
    f.hold = true;
    run_for(&f, 300, 1);
    CHECK_INT(f.n_held, 0);
    CHECK_INT(gauge(&f, "pprofgate_exporter_replay_pending_requests"), REPLAY_RECORDS);
    /* Its bytes released: the replay resumes (the pause timer) and holds
     * three records: a fourth being read would pass the budget by 3 bytes. */
    pg_memlimit_release((size_t)(budget - len));
    run_for(&f, 1000, 8);
    CHECK_INT(f.n_held, 3);
    CHECK(pg_memlimit_replay() <= budget);
    CHECK(pg_memlimit_inflight() <= budget);
    CHECK_INT(gauge(&f, "pprofgate_exporter_replay_memory_bytes"), (int64_t)pg_memlimit_replay());
    CHECK_INT(gauge(&f, "pprofgate_exporter_replay_pending_requests"), REPLAY_RECORDS - 3);
    /* This run's pushes do not wait behind the backlog. */
    CHECK_INT(push(&f, 7, "live", 900), PG_ERR_OK);
    CHECK_INT(push(&f, 7, "live", 901), PG_ERR_OK);
    run_for(&f, 200, 5);
    CHECK_INT(f.n_held, 5);
    /* Answered: the rest of the backlog follows, within the budget. */
    for (int round = 0; round < 10 && !pg_exph_idle(f.h); round++) {
        answer_held(&f);
        run_for(&f, 300, 8);
        CHECK(pg_memlimit_replay() <= budget);
    }
    answer_held(&f);
    run_until(&f, REPLAY_RECORDS * REPLAY_SAMPLES + 14);
    CHECK_INT(sent(&f), REPLAY_RECORDS * REPLAY_SAMPLES + 14);
    CHECK_INT(f.sends, REPLAY_RECORDS + 2);
    CHECK_INT(pg_memlimit_replay(), 0);
    CHECK_INT(gauge(&f, "pprofgate_exporter_replay_pending_requests"), 0);
    CHECK_INT(gauge(&f, "pprofgate_exporter_replay_memory_bytes"), 0);
    CHECK_INT(counter(&f, "pprofgate_exporter_replayed_requests"), REPLAY_RECORDS);
    fake_close(&f);
    CHECK_INT(pg_memlimit_inflight(), 0);
    pg_memlimit_reset();
    expect_no_replay("fake/replay2", yaml);
    drop_spool("file_storage/exphrb", dir);
}

/* A refusal while a replay holds memory says how much is the replay's. */
PG_TEST(refusal_names_the_replays_share)
{
    struct pg_status st;

    pg_memlimit_reset();
    pg_memlimit_configure(10u << 20, 2u << 20, 0);
    pg_memlimit_charge_replay(6u << 20);
    pg_status_clear(&st);
    CHECK(!pg_memlimit_admit(3u << 20, &st));
    CHECK(strstr(pg_status_text(&st), "a spool replay holds 6.0 MiB of it") != NULL);
    pg_memlimit_release_replay(6u << 20);
    CHECK_INT(pg_memlimit_replay(), 0);
    CHECK_INT(pg_memlimit_inflight(), 0);
    pg_status_clear(&st);
    pg_memlimit_charge(9u << 20);
    CHECK(!pg_memlimit_admit(3u << 20, &st));
    CHECK(strstr(pg_status_text(&st), "replay") == NULL); /* not blamed without a share */
    pg_memlimit_reset();
}

/* A queue full of the previous run's backlog says so in the refusal. */
PG_TEST(full_queue_names_the_backlog)
{
    char dir[64];
    const char *yaml = NO_WAIT "sending_queue: {storage: file_storage/exphfq, queue_size: 8}\n";
    struct fake f;
    struct pg_batch *b;
    struct pg_status st;

    replay_spool("file_storage/exphfq", dir, sizeof(dir), yaml);
    PG_REQUIRE(fake_open(&f, "fake/replayfq", yaml, 0));
    b = tb_batch(1, 5, 20, "live", 77);
    pg_status_clear(&st);
    CHECK_INT(pg_exph_consume(f.h, b, &st), PG_ERR_BUSY);
    CHECK(strstr(pg_status_text(&st), "8 request(s) of it left by the previous run") != NULL);
    pg_batch_unref(b);
    fake_close(&f);
    drop_spool("file_storage/exphfq", dir);
}

/* Receiver threads push and admit/release memory while the loop replays a
 * backlog within a small budget: every record of both runs is sent once,
 * the budget is never passed, and nothing stays charged. */
struct admitter {
    int *running;
    int admitted;
};

static void *admitter_main(void *arg)
{
    struct admitter *a = arg;

    while (__atomic_load_n(a->running, __ATOMIC_ACQUIRE) > 0) {
        struct pg_status st;

        pg_status_clear(&st);
        if (pg_memlimit_admit(64u << 10, &st)) {
            a->admitted++;
            pg_memlimit_release(64u << 10);
        }
    }
    return NULL;
}

PG_TEST(replay_while_threads_push)
{
    char dir[64], yaml[256];
    size_t len = replay_record_len();
    uint64_t budget = 2 * (uint64_t)len + 2 * len + (256u << 10);
    struct fake f;
    struct pusher ps[2];
    pthread_t th[3];
    struct admitter adm;
    int running = 2, ok = 0;

    evthread_use_pthreads();
    snprintf(yaml, sizeof(yaml),
             NO_WAIT "sending_queue: {storage: file_storage/exphrt, replay_memory: %llu}\n",
             (unsigned long long)budget);
    replay_spool("file_storage/exphrt", dir, sizeof(dir), yaml);
    pg_memlimit_reset();
    pg_memlimit_configure(256u << 20, 32u << 20, 0);
    PG_REQUIRE(fake_open(&f, "fake/replayt", yaml, 0));
    adm = (struct admitter){.running = &running};
    for (unsigned i = 0; i < 2; i++) {
        ps[i] = (struct pusher){.f = &f, .idx = 10 + i, .running = &running};
        PG_REQUIRE(pthread_create(&th[i], NULL, pusher_main, &ps[i]) == 0);
    }
    PG_REQUIRE(pthread_create(&th[2], NULL, admitter_main, &adm) == 0);
    while (__atomic_load_n(&running, __ATOMIC_ACQUIRE) > 0) {
        event_base_loop(f.base, EVLOOP_NONBLOCK);
    }
    for (unsigned i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
    }
    for (unsigned i = 0; i < 2; i++) {
        ok += ps[i].ok;
        CHECK_INT(ps[i].other, 0);
    }
    for (int i = 0; i < 400 && sent(&f) < REPLAY_RECORDS * REPLAY_SAMPLES + ok * PUSH_SAMPLES;
         i++) {
        run_for(&f, 5, 1);
    }
    CHECK(ok > 0);
    CHECK_INT(sent(&f), REPLAY_RECORDS * REPLAY_SAMPLES + ok * PUSH_SAMPLES);
    CHECK_INT(f.sends, REPLAY_RECORDS + ok);
    CHECK(f.replay_peak > 0 && f.replay_peak <= budget);
    CHECK_INT(pg_memlimit_replay(), 0);
    fake_close(&f);
    CHECK_INT(pg_memlimit_inflight(), 0);
    pg_memlimit_reset();
    expect_no_replay("fake/replayt2", yaml);
    drop_spool("file_storage/exphrt", dir);
}

PG_TEST(config_checks)
{
    static const char *const bad[] = {
        "sending_queue: {batch: {min_size: 100, max_size: 10}}\n",
        "sending_queue: {storage: file_storage/missing}\n",
        "sending_queue: {sizer: samples}\n",
        "retry_on_failure: {multiplier: 0.5}\n",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct pg_config *cfg = pg_config_load_string("bad.yaml", bad[i], strlen(bad[i]));
        struct pg_diag diag;
        struct fake_cfg fc;
        size_t problems;

        PG_REQUIRE(cfg != NULL);
        pg_diag_init(&diag);
        memset(&fc, 0, sizeof(fc));
        problems = pg_cfg_bind(cfg->arena, &diag, cfg->root, fake_fields, &fc, "fake");
        problems += pg_exph_config_check(&fc.helper, &diag, cfg->root, "fake");
        CHECK(problems > 0 && diag.n > 0);
        pg_diag_free(&diag);
        pg_config_free(cfg);
    }
}

PG_TEST_MAIN(PG_CASE(retryable_then_sent), PG_CASE(permanent_dropped_not_retried),
             PG_CASE(retry_disabled_drops_at_first_failure),
             PG_CASE(full_queue_refused_then_stop_abandons),
             PG_CASE(block_on_overflow_room_is_set_aside),
             PG_CASE(larger_than_whole_queue_is_a_limit),
             PG_CASE(bisect_drops_only_the_rejected_push), PG_CASE(split_under_max_request_bytes),
             PG_CASE(persistent_queue_replayed_by_the_next_helper),
             PG_CASE(pushes_from_several_threads), PG_CASE(persistent_pushes_from_several_threads),
             PG_CASE(replay_budget_bounds_what_the_replay_holds),
             PG_CASE(refusal_names_the_replays_share), PG_CASE(full_queue_names_the_backlog),
             PG_CASE(replay_while_threads_push),
             PG_CASE(config_checks))
