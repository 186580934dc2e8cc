/* SPDX-License-Identifier: Apache-2.0
 * The service graph: component ids, pipeline references, unused components,
 * fan-out of one receiver to several pipelines, exporters shared between
 * pipelines, processor errors, and the lifecycle order. Uses fake components
 * in a local registry so only core code is under test. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/service.h"
#include "pg_test.h"
#include "pg_test_diag.h"

static char trace[1024]; /* lifecycle events, in order */
static int exported[4];  /* batches seen by each fake exporter instance */
static struct pg_consumer *recv_next;

static void note(const char *what, const char *id)
{
    strncat(trace, what, sizeof(trace) - strlen(trace) - 1);
    strncat(trace, ":", sizeof(trace) - strlen(trace) - 1);
    strncat(trace, id, sizeof(trace) - strlen(trace) - 1);
    strncat(trace, " ", sizeof(trace) - strlen(trace) - 1);
}

struct fake {
    const char *id;
    int slot;
    int64_t knob;
    bool fail;
};

static const struct pg_field fake_fields[] = {
    {"knob", PG_FT_INT, offsetof(struct fake, knob), "1", 0, 100, NULL, NULL, 0, NULL},
    {"fail", PG_FT_BOOL, offsetof(struct fake, fail), "false", 0, 0, NULL, NULL, 0, NULL},
    PG_FIELD_END,
};

static int n_exporters;

static enum pg_err fake_create(const struct pg_component_ctx *ctx, void **state)
{
    struct fake *f = calloc(1, sizeof(*f));

    if (pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, fake_fields, f, ctx->path) != 0) {
        free(f);
        return PG_ERR_CONFIG;
    }
    f->id = ctx->log_name;
    if (ctx->next != NULL) {
        recv_next = ctx->next;
    }
    if (strncmp(ctx->log_name, "exporter/", 9) == 0) {
        f->slot = n_exporters++;
    }
    *state = f;
    return PG_ERR_OK;
}

static enum pg_err fake_start(void *state, struct pg_status *st)
{
    (void)st;
    note("start", ((struct fake *)state)->id);
    return PG_ERR_OK;
}

static enum pg_err fake_process(void *state, struct pg_batch **b, struct pg_status *st)
{
    struct fake *f = state;

    (void)b;
    if (f->fail) {
        return pg_status_set(st, PG_ERR_PROCESSING, "statement failed");
    }
    return PG_ERR_OK;
}

static enum pg_err fake_consume(void *state, struct pg_batch *b, struct pg_status *st)
{
    struct fake *f = state;

    (void)b;
    (void)st;
    exported[f->slot]++;
    return f->knob == 99 ? pg_status_set(st, PG_ERR_BUSY, "queue full") : PG_ERR_OK;
}

static void fake_shutdown(void *state)
{
    note("stop", ((struct fake *)state)->id);
}

static void fake_destroy(void *state)
{
    free(state);
}

/* knob 98: the exporter is full and asks senders to wait (block_on_overflow). */
static bool fake_would_block(void *state, const struct pg_batch *b)
{
    (void)b;
    return ((struct fake *)state)->knob == 98;
}

#define FAKE_OPS(type_, alias_, kind_, process_, consume_, would_block_)                           \
    {.type = (type_), .alias = (alias_), .kind = (kind_), .fields = fake_fields, .doc = NULL,      \
     .create = fake_create, .start = fake_start, .process = (process_), .consume = (consume_),      \
     .would_block = (would_block_), .shutdown = fake_shutdown, .idle = NULL,                       \
     .destroy = fake_destroy}
static const struct pg_component_ops fake_recv =
    FAKE_OPS("pprof", NULL, PG_KIND_RECEIVER, NULL, NULL, NULL);
static const struct pg_component_ops fake_proc =
    FAKE_OPS("transform", NULL, PG_KIND_PROCESSOR, fake_process, NULL, NULL);
static const struct pg_component_ops fake_exp =
    FAKE_OPS("otlp", "otlp_grpc", PG_KIND_EXPORTER, NULL, fake_consume, fake_would_block);
static const struct pg_component_ops fake_ext =
    FAKE_OPS("health_check", NULL, PG_KIND_EXTENSION, NULL, NULL, NULL);
static const struct pg_component_ops *const registry[] = {&fake_recv, &fake_proc, &fake_exp, &fake_ext};

PG_TEST(test_bad_graphs)
{
    static const struct {
        const char *yaml;
        const char *want;
    } cases[] = {
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n", "a service: section"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\nservice: {pipelines: {}}\n",
         "at least one pipeline"},
        {"receivers: {pprfo: {}}\nexporters: {otlp: {}}\n"
         "service: {pipelines: {profiles: {receivers: [pprfo], exporters: [otlp]}}}\n",
         "t.yaml:1:13: receivers::pprfo: unknown receiver type \"pprfo\" (did you mean \"pprof\"?); "
         "valid types: pprof"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {pipelines: {profiles: {receivers: [pprof], exporters: [debug]}}}\n",
         "exporter \"debug\" is not defined under exporters:; defined: otlp"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {pipelines: {profiles: {receivers: [pprof], exporters: [otpl]}}}\n",
         "exporter \"otpl\" is not defined under exporters: (did you mean \"otlp\"?); defined: otlp"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\nservce: {}\n",
         "unknown key \"servce\" (did you mean \"service\"?)"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}, otlp/2: {knob: 500}}\n"
         "service: {pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "exporters::otlp/2::knob: 500 is outside"}, /* unused, still checked */
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {pipelines: {traces: {receivers: [pprof], exporters: [otlp]}}}\n",
         "profiles pipelines only"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {pipelines: {profiles: {receivers: [pprof]}}}\n",
         "at least one exporter is required"},
        {"receivers: {pprof: {knob: 500}}\nexporters: {otlp: {}}\n"
         "service: {pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "receivers::pprof::knob: 500 is outside [0, 100]"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\nsevrice: {}\n"
         "service: {pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "unknown key \"sevrice\""},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {telemetry: {logs: {level: loud}}, pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "\"loud\" is not one of"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {telemetry: {logs: {level: inf}}, pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "\"inf\" is not one of: debug, info, warn, error, none (did you mean \"info\"?)"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {telemetry: {logs: {encoding: xml}}, pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "\"xml\" is not one of: console (key=value lines), logfmt, json"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {telemetry: {logs: {output_paths: stderr}}, pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "output_paths: expected a list of paths"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {telemetry: {logs: {output_paths: [a, b, c, d, e]}}, pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "output_paths: at most 4 outputs"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {telemetry: {metrics: {readers: [{periodic: {exporter: {otlp: {}}}}]}}, pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "periodic (push) readers are not supported"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {telemetry: {metrics: {readers: [{pull: {exporter: {prometheus: {host: h}}}}]}}, pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "prometheus::port: expected a port number"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\n"
         "service: {telemetry: {metrics: {address: a, readers: []}}, pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "address and readers both set"},
    };
    struct event_base *base = event_base_new();

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_config *cfg = pg_config_load_string("t.yaml", cases[i].yaml, strlen(cases[i].yaml));
        struct pg_service *svc = pg_service_build(cfg, registry, 4, base, &cfg->diag);
        CHECK(svc == NULL);
        CHECK(pg_test_diag_has(&cfg->diag, cases[i].want));
        pg_service_free(svc);
        pg_config_free(cfg);
    }
    event_base_free(base);
}

/* The collector loads a config with a spare component: a warning, and the
 * spare is not built. */
PG_TEST(test_unused_component_warns)
{
    static const struct {
        const char *yaml;
        const char *want;
    } cases[] = {
        {"receivers: {pprof: {}}\nexporters: {otlp: {}, otlp/2: {}}\n"
         "service: {pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "t.yaml:2:23: exporters::otlp/2: warning: exporter \"otlp/2\" is defined but not used"},
        {"receivers: {pprof: {}}\nexporters: {otlp: {}}\nextensions: {health_check: {}}\n"
         "service: {pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
         "list it in service::extensions"},
    };
    struct event_base *base = event_base_new();

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_config *cfg = pg_config_load_string("t.yaml", cases[i].yaml, strlen(cases[i].yaml));
        struct pg_service *svc = pg_service_build(cfg, registry, 4, base, &cfg->diag);
        bool found = false;
        CHECK(svc != NULL);
        CHECK_INT(cfg->diag.n, 0);
        CHECK_INT(cfg->diag.n_warn, 1);
        for (size_t j = 0; j < cfg->diag.n_all; j++) {
            found = found || (cfg->diag.all[j].warning && strstr(cfg->diag.all[j].text, cases[i].want));
        }
        if (!found && cfg->diag.n_all > 0) {
            fprintf(stderr, "  want \"%s\", have \"%s\"\n", cases[i].want, cfg->diag.all[0].text);
        }
        CHECK(found);
        /* Spares are not started: only what a pipeline or
         * service::extensions uses. */
        if (svc != NULL) {
            struct pg_status st;
            trace[0] = '\0';
            pg_status_clear(&st);
            CHECK_INT(pg_service_start(svc, &st), PG_ERR_OK);
            CHECK(strstr(trace, "start:exporter/otlp ") != NULL);
            CHECK(strstr(trace, "otlp/2") == NULL && strstr(trace, "health_check") == NULL);
        }
        pg_service_free(svc);
        pg_config_free(cfg);
    }
    event_base_free(base);
}

static struct pg_batch *empty_batch(void)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *req = pg_arena_alloc(a, sizeof(*req));

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(req);
    return pg_batch_new(a, req);
}

PG_TEST(test_fanout_and_lifecycle)
{
    static const char yaml[] = "receivers: {pprof: {}}\n"
                               "processors: {transform: {}, transform/bad: {fail: true}}\n"
                               "exporters: {otlp: {}, otlp_grpc/b: {}, otlp/busy: {knob: 99}}\n"
                               "extensions: {health_check: {}}\n"
                               "service:\n"
                               "  extensions: [health_check]\n"
                               "  pipelines:\n"
                               "    profiles: {receivers: [pprof], processors: [transform], exporters: [otlp, otlp_grpc/b]}\n"
                               "    profiles/2: {receivers: [pprof], exporters: [otlp]}\n"
                               "    profiles/3: {receivers: [pprof], processors: [transform/bad], exporters: [otlp/busy]}\n";
    struct event_base *base = event_base_new();
    struct pg_config *cfg = pg_config_load_string("t.yaml", yaml, sizeof(yaml) - 1);
    struct pg_service *svc;
    struct pg_status st;
    struct pg_batch *b;
    enum pg_err err;

    trace[0] = '\0';
    n_exporters = 0;
    memset(exported, 0, sizeof(exported));
    svc = pg_service_build(cfg, registry, 4, base, &cfg->diag);
    CHECK(svc != NULL);
    if (svc == NULL) {
        pg_test_diag_has(&cfg->diag, "");
        pg_config_free(cfg);
        event_base_free(base);
        return;
    }
    CHECK_INT(pg_service_start(svc, &st), PG_ERR_OK);
    CHECK(strncmp(trace, "start:extension/health_check start:exporter/", 44) == 0);
    CHECK(strstr(trace, "start:receiver/pprof") != NULL);
    CHECK(strstr(trace, "start:receiver/pprof") > strstr(trace, "start:processor/transform"));

    b = empty_batch();
    pg_status_clear(&st);
    err = pg_consumer_consume(recv_next, pg_batch_ref(b), &st); /* consume takes a reference */
    /* profiles/3's processor fails: the request fails, the others still ran. */
    CHECK_INT(err, PG_ERR_PROCESSING);
    CHECK(strstr(st.msg, "statement failed") != NULL);
    CHECK_INT(exported[0], 2); /* otlp serves profiles and profiles/2 */
    CHECK_INT(exported[1], 1); /* otlp_grpc/b (alias type) */
    CHECK_INT(exported[2], 0); /* behind the failing processor */
    CHECK_INT(b->refcnt, 1);   /* every pipeline dropped its reference */
    pg_batch_unref(b);

    trace[0] = '\0';
    pg_service_shutdown(svc, 1000000000LL);
    event_base_dispatch(base);
    CHECK(strncmp(trace, "stop:receiver/pprof", 19) == 0);
    CHECK(strstr(trace, "stop:extension/health_check") != NULL);
    CHECK(strstr(trace, "stop:extension/health_check") > strstr(trace, "stop:exporter/otlp"));
    pg_service_free(svc);
    pg_config_free(cfg);
    event_base_free(base);
}

PG_TEST(test_busy_exporter_maps_to_busy)
{
    static const char yaml[] = "receivers: {pprof: {}}\n"
                               "exporters: {otlp/busy: {knob: 99}}\n"
                               "service: {pipelines: {profiles: {receivers: [pprof], exporters: [otlp/busy]}}}\n";
    struct event_base *base = event_base_new();
    struct pg_config *cfg = pg_config_load_string("t.yaml", yaml, sizeof(yaml) - 1);
    struct pg_service *svc = pg_service_build(cfg, registry, 4, base, &cfg->diag);
    struct pg_status st;
    struct pg_batch *b = empty_batch();

    n_exporters = 0;
    CHECK(svc != NULL);
    /* Before start the fan-out refuses: nothing is running yet. */
    CHECK_INT(pg_consumer_consume(recv_next, pg_batch_ref(b), &st), PG_ERR_UNAVAILABLE);
    CHECK_INT(pg_service_start(svc, &st), PG_ERR_OK);
    CHECK_INT(pg_consumer_consume(recv_next, pg_batch_ref(b), &st), PG_ERR_BUSY);
    CHECK_INT(b->refcnt, 1);
    CHECK(strstr(st.msg, "exporter/otlp/busy: queue full") != NULL);
    pg_batch_unref(b);
    pg_service_free(svc);
    pg_config_free(cfg);
    event_base_free(base);
}

/* The receiver's would_block asks every exporter of every pipeline it feeds,
 * names the full one, and consumes nothing; before start it says no (consume
 * answers that case). */
PG_TEST(test_would_block_asks_every_exporter)
{
    static const char yaml[] = "receivers: {pprof: {}}\n"
                               "exporters: {otlp: {}, otlp/full: {knob: 98}}\n"
                               "service:\n"
                               "  pipelines:\n"
                               "    profiles: {receivers: [pprof], exporters: [otlp]}\n"
                               "    profiles/2: {receivers: [pprof], exporters: [otlp/full]}\n";
    struct event_base *base = event_base_new();
    struct pg_config *cfg = pg_config_load_string("t.yaml", yaml, sizeof(yaml) - 1);
    struct pg_service *svc;
    struct pg_status st;
    struct pg_batch *b = empty_batch();

    n_exporters = 0;
    memset(exported, 0, sizeof(exported));
    svc = pg_service_build(cfg, registry, 4, base, &cfg->diag);
    CHECK(svc != NULL);
    if (svc != NULL) {
        pg_status_clear(&st);
        CHECK(!pg_consumer_would_block(recv_next, b, &st));
        CHECK_INT(pg_service_start(svc, &st), PG_ERR_OK);
        pg_status_clear(&st);
        CHECK(pg_consumer_would_block(recv_next, b, &st));
        CHECK(strstr(st.msg, "exporter/otlp/full: sending queue is full") != NULL);
        CHECK_INT(exported[0] + exported[1], 0);
        CHECK_INT(b->refcnt, 1);
        pg_service_free(svc);
    }
    pg_batch_unref(b);
    pg_config_free(cfg);
    event_base_free(base);
}

/* Processors are instantiated once per pipeline: a graph with many more
 * processor instances than component definitions must still build. */
PG_TEST(test_many_pipelines)
{
    struct event_base *base = event_base_new();
    size_t cap = 64 * 1024;
    char *yaml = malloc(cap);
    size_t n = 0;
    struct pg_config *cfg;
    struct pg_service *svc;

    n += (size_t)snprintf(yaml + n, cap - n,
                          "receivers: {pprof: {}}\nprocessors: {transform: {}, transform/b: {}}\n"
                          "exporters: {otlp: {}}\nservice:\n  pipelines:\n");
    for (int i = 0; i < 300; i++) {
        n += (size_t)snprintf(yaml + n, cap - n,
                              "    profiles/%d: {receivers: [pprof], processors: [transform, "
                              "transform/b], exporters: [otlp]}\n",
                              i);
    }
    cfg = pg_config_load_string("t.yaml", yaml, n);
    svc = pg_service_build(cfg, registry, 4, base, &cfg->diag);
    CHECK(svc != NULL);
    CHECK_INT(cfg->diag.n, 0);
    pg_service_free(svc);
    pg_config_free(cfg);
    free(yaml);
    event_base_free(base);
}

/* service::shutdown_delay: checked at build; during the delay the service
 * is not ready but the receivers still run and their pushes are taken; the
 * delay ends on its own or when pg_service_end_delay() cuts it short. */
PG_TEST(test_shutdown_delay)
{
    static const char *const bad[] = {"10m", "soon", "-1s", "[1s]"};
    struct event_base *base = event_base_new();
    struct pg_status st;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char yaml[256];
        struct pg_config *cfg;
        struct pg_service *svc;

        snprintf(yaml, sizeof(yaml),
                 "receivers: {pprof: {}}\nexporters: {otlp: {}}\nservice: {shutdown_delay: %s, "
                 "pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n", bad[i]);
        cfg = pg_config_load_string("t.yaml", yaml, strlen(yaml));
        svc = pg_service_build(cfg, registry, 4, base, &cfg->diag);
        CHECK(svc == NULL);
        CHECK(pg_test_diag_has(&cfg->diag, "service::shutdown_delay: expected a duration from 0s "
                                           "to 5m"));
        pg_service_free(svc);
        pg_config_free(cfg);
    }
    for (int cut = 0; cut < 2; cut++) {
        char yaml[256];
        struct pg_config *cfg;
        struct pg_service *svc;
        struct pg_batch *b = empty_batch();

        snprintf(yaml, sizeof(yaml),
                 "receivers: {pprof: {}}\nexporters: {otlp: {}}\nservice: {shutdown_delay: %s, "
                 "pipelines: {profiles: {receivers: [pprof], exporters: [otlp]}}}\n",
                 cut ? "1m" : "50ms");
        cfg = pg_config_load_string("t.yaml", yaml, strlen(yaml));
        n_exporters = 0;
        memset(exported, 0, sizeof(exported));
        svc = pg_service_build(cfg, registry, 4, base, &cfg->diag);
        PG_REQUIRE(svc != NULL);
        CHECK_INT(pg_service_start(svc, &st), PG_ERR_OK);
        CHECK(pg_service_running(svc));
        CHECK(!pg_service_end_delay(svc)); /* no delay running yet */
        trace[0] = '\0';
        pg_service_shutdown(svc, 1000000000LL);
        CHECK(!pg_service_running(svc)); /* health: not ready at once */
        CHECK(strstr(trace, "stop:") == NULL);
        CHECK_INT(pg_consumer_consume(recv_next, pg_batch_ref(b), &st), PG_ERR_OK);
        CHECK_INT(exported[0], 1);
        pg_service_shutdown(svc, 1000000000LL); /* idempotent */
        if (cut) {
            CHECK(pg_service_end_delay(svc));
            CHECK(strncmp(trace, "stop:receiver/pprof", 19) == 0);
            CHECK(!pg_service_end_delay(svc));
        }
        event_base_dispatch(base); /* cut: returns at once; else after 50 ms */
        CHECK(strncmp(trace, "stop:receiver/pprof", 19) == 0);
        CHECK(strstr(trace, "stop:exporter/otlp") != NULL);
        pg_batch_unref(b);
        pg_service_free(svc);
        pg_config_free(cfg);
    }
    event_base_free(base);
}

PG_TEST_MAIN(PG_CASE(test_bad_graphs), PG_CASE(test_unused_component_warns),
             PG_CASE(test_fanout_and_lifecycle),
             PG_CASE(test_busy_exporter_maps_to_busy),
             PG_CASE(test_would_block_asks_every_exporter), PG_CASE(test_many_pipelines),
             PG_CASE(test_shutdown_delay))
