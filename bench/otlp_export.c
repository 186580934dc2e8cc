/* SPDX-License-Identifier: Apache-2.0
 * Export throughput of the `otlp` exporter to a real gRPC server
 * (tests/node/grpc_server.mjs, started by bench/otlp_export.sh): for an
 * SDK-sized and a large profile, with gzip and without, it queues N copies,
 * runs the loop until the server acknowledged all of them and prints
 * requests/s, MB/s of OTLP (uncompressed and on the wire) and the gateway's
 * CPU per request. Baseline, measured in the same run: the CPU to pack (and
 * gzip) one request, which any exporter must spend; the ratio is the cost of
 * everything else (HTTP/2, framing, queueing, bookkeeping).
 * usage: otlp_export GRPC_PORT [N_SMALL] [N_LARGE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <event2/event.h>

#include "codec/gzip.h"
#include "pipeline/component.h"
#include "core/config.h"
#include "core/log.h"
#include "core/metrics.h"
#include "grpc/grpc_wire.h"
#include "test_otlp_util.h"

extern const struct pg_component_ops pg_exporter_otlp;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* CPU seconds to pack (and gzip) @b once: the work any exporter does. */
static double baseline(const struct pg_batch *b, bool gzip, size_t *raw, size_t *wire)
{
    double best = 1e9;

    for (int i = 0; i < 5; i++) {
        double t0 = cpu_s();
        size_t n = protobuf_c_message_get_packed_size(&b->req->base);
        uint8_t *buf = malloc(n);
        uint8_t *z = NULL;
        size_t zn = n;
        struct pg_status st;

        protobuf_c_message_pack(&b->req->base, buf);
        if (gzip) {
            if (pg_gzip_compress(NULL, buf, n, 6, &z, &zn, &st) != PG_ERR_OK) {
                zn = n; /* counted as sent uncompressed */
            }
        }
        free(z);
        free(buf);
        *raw = n;
        *wire = zn;
        if (cpu_s() - t0 < best) {
            best = cpu_s() - t0;
        }
    }
    return best;
}

static void run(int port, const char *label, size_t profiles, size_t samples, size_t funcs,
                bool gzip, int n)
{
    struct event_base *base = event_base_new();
    struct pg_host host = {base, "bench", NULL};
    char yaml[512];
    char id[64];
    char labels[96];
    struct pg_config *cfg;
    struct pg_diag diag;
    struct pg_component_ctx ctx;
    struct pg_status st;
    void *state = NULL;
    struct pg_batch *b = tb_batch(profiles, samples, funcs, label, 1);
    struct pg_metric *sent;
    size_t raw = 0;
    size_t wire = 0;
    double base_cpu = baseline(b, gzip, &raw, &wire);
    int64_t want = (int64_t)pg_batch_sample_count(b) * n;
    double t0;
    double c0;
    double wall;
    double cpu;

    snprintf(id, sizeof(id), "otlp/%s-%s", label, gzip ? "gzip" : "none");
    snprintf(labels, sizeof(labels), "exporter=\"%s\"", id);
    snprintf(yaml, sizeof(yaml),
             "endpoint: 127.0.0.1:%d\ntls: {insecure: true}\ncompression: %s\n"
             "timeout: 60s\nsending_queue: {queue_size: %d}\n",
             port, gzip ? "gzip" : "none", n + 1);
    cfg = pg_config_load_string("bench.yaml", yaml, strlen(yaml));
    pg_diag_init(&diag);
    memset(&ctx, 0, sizeof(ctx));
    ctx.host = &host;
    ctx.id = id;
    ctx.log_name = id;
    ctx.config = cfg->root;
    ctx.config_arena = cfg->arena;
    ctx.diag = &diag;
    pg_status_clear(&st);
    if (pg_exporter_otlp.create(&ctx, &state) != PG_ERR_OK ||
        pg_exporter_otlp.start(state, &st) != PG_ERR_OK) {
        fprintf(stderr, "cannot start the exporter: %s\n", diag.n ? diag.msgs[0] : st.msg);
        exit(1);
    }
    sent = pg_metric_counter("otelcol_exporter_sent_profile_samples", "", labels);
    /* Warm the connection with one request (not timed). */
    pg_exporter_otlp.consume(state, b, &st);
    while (pg_metric_value(sent) < (int64_t)pg_batch_sample_count(b)) {
        event_base_loop(base, EVLOOP_ONCE);
    }
    want += (int64_t)pg_batch_sample_count(b);
    t0 = now_s();
    c0 = cpu_s();
    for (int i = 0; i < n; i++) {
        if (pg_exporter_otlp.consume(state, b, &st) != PG_ERR_OK) {
            fprintf(stderr, "consume: %s\n", st.msg);
            exit(1);
        }
    }
    while (pg_metric_value(sent) < want) {
        event_base_loop(base, EVLOOP_ONCE);
    }
    wall = now_s() - t0;
    cpu = cpu_s() - c0;
    printf("%-6s %-4s %6zu samples %8zu B OTLP %8zu B wire | %7.0f req/s %7.1f MB/s OTLP "
           "%6.1f MB/s wire | CPU %7.3f ms/req, baseline pack%s %7.3f ms, ratio %.2fx\n",
           label, gzip ? "gzip" : "none", pg_batch_sample_count(b), raw, wire, n / wall,
           (double)raw * n / wall / 1e6, (double)wire * n / wall / 1e6, cpu * 1e3 / n,
           gzip ? "+gzip" : "", base_cpu * 1e3, cpu / n / (base_cpu > 0 ? base_cpu : 1e-9));
    fflush(stdout);
    pg_exporter_otlp.shutdown(state);
    while (!pg_exporter_otlp.idle(state)) {
        event_base_loop(base, EVLOOP_ONCE);
    }
    pg_exporter_otlp.destroy(state);
    pg_batch_unref(b);
    pg_diag_free(&diag);
    pg_config_free(cfg);
    event_base_free(base);
}

int main(int argc, char **argv)
{
    int port;
    int n_small;
    int n_large;

    if (argc < 2) {
        fprintf(stderr, "usage: %s GRPC_PORT [N_SMALL] [N_LARGE]\n", argv[0]);
        return 2;
    }
    port = atoi(argv[1]);
    n_small = argc > 2 ? atoi(argv[2]) : 2000;
    n_large = argc > 3 ? atoi(argv[3]) : 20;
    pg_log_set_level(PG_LOG_WARN);
    /* SDK-sized: one profile of ~200 samples over 150 functions (a push is
     * 4-10 KB of OTLP); large: 2 profiles x 30 000 samples, 3 000 functions. */
    run(port, "sdk", 1, 200, 150, true, n_small);
    run(port, "sdk", 1, 200, 150, false, n_small);
    run(port, "large", 2, 30000, 3000, true, n_large);
    run(port, "large", 2, 30000, 3000, false, n_large);
    return 0;
}
