/* SPDX-License-Identifier: Apache-2.0
 * Per-request cost of the transform processor on a real SDK header
 * (tests/fixtures/sdk/push0.json): the shipped statement
 *   merge_maps(resource.attributes, ParseResourceAttributes(metadata[...]), "upsert")
 * against two baselines measured in the same run: ParseResourceAttributes on
 * the header alone, and the collector-style ParseKeyValue statement (on the
 * header with the apostrophe removed, since upstream fails on it). Also
 * counts malloc calls made while process() runs: with the request arena's
 * chunk already in place the answer must be 0 (no allocation outside it). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "pipeline/component.h"
#include "core/config.h"
#include "core/log.h"
#include "processor/ottl_kv.h"

extern const struct pg_component_ops pg_processor_transform;

/* ---- malloc counting (not under sanitizers, which own malloc) ---------- */
#if defined(__SANITIZE_ADDRESS__)
#define COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNT_MALLOC 0
#endif
#endif
#ifndef COUNT_MALLOC
#define COUNT_MALLOC 1
#endif

static atomic_long n_allocs;

#if COUNT_MALLOC
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t size);
void free(void *p);

void *malloc(size_t size)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __libc_realloc(p, size);
}

void free(void *p)
{
    __libc_free(p);
}
#endif

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static char *sdk_header(const char *fixtures)
{
    char path[1024];
    static char buf[8192];
    FILE *f;
    size_t n;
    char *p;
    char *e;

    snprintf(path, sizeof(path), "%s/sdk/push0.json", fixtures);
    f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strstr(buf, "\"otel-resource-attributes\": \"");
    if (p == NULL) {
        return NULL;
    }
    p += strlen("\"otel-resource-attributes\": \"");
    e = strchr(p, '"');
    if (e == NULL) {
        return NULL;
    }
    *e = '\0';
    return p;
}

/* A translated-push-shaped batch: one resource (no attributes yet), one
 * scope, two profiles, metadata as include_metadata leaves it. The arena's
 * first chunk is touched so that process() only bumps inside it. */
static struct pg_batch *mk_batch(const char *hdr)
{
    struct pg_arena *a = pg_arena_create(20u << 20);
    struct pg_otlp_request *req = pg_arena_zalloc(a, sizeof(*req));
    struct pg_otlp_resprof *rp = pg_arena_zalloc(a, sizeof(*rp));
    struct pg_otlp_scopeprof *sp = pg_arena_zalloc(a, sizeof(*sp));
    struct pg_batch *b;

    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
        req);
    opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
    opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
    sp->profiles = pg_arena_calloc(a, 2, sizeof(struct pg_otlp_profile *));
    for (int i = 0; i < 2; i++) {
        sp->profiles[i] = pg_arena_zalloc(a, sizeof(struct pg_otlp_profile));
        opentelemetry__proto__profiles__v1development__profile__init(sp->profiles[i]);
    }
    sp->n_profiles = 2;
    rp->scope_profiles = pg_arena_calloc(a, 1, sizeof(sp));
    rp->scope_profiles[0] = sp;
    rp->n_scope_profiles = 1;
    req->resource_profiles = pg_arena_calloc(a, 1, sizeof(rp));
    req->resource_profiles[0] = rp;
    req->n_resource_profiles = 1;
    b = pg_batch_new(a, req);
    b->metadata.entries = pg_arena_calloc(a, 6, sizeof(struct pg_metadata_entry));
    b->metadata.entries[0] = (struct pg_metadata_entry){"content-type", "application/octet-stream"};
    b->metadata.entries[1] = (struct pg_metadata_entry){"content-encoding", "gzip"};
    b->metadata.entries[2] = (struct pg_metadata_entry){"content-length", "4673"};
    b->metadata.entries[3] = (struct pg_metadata_entry){"otel-resource-attributes", hdr};
    b->metadata.entries[4] = (struct pg_metadata_entry){"host", "127.0.0.1:14040"};
    b->metadata.entries[5] = (struct pg_metadata_entry){"connection", "keep-alive"};
    b->metadata.n = 6;
    return b;
}

static void *create(struct pg_config **cfg, const char *stmt)
{
    char yaml[1024];
    struct pg_component_ctx ctx;
    void *state = NULL;

    snprintf(yaml, sizeof(yaml), "transform:\n  profile_statements:\n    - '%s'\n", stmt);
    *cfg = pg_config_load_string("bench.yaml", yaml, strlen(yaml));
    memset(&ctx, 0, sizeof(ctx));
    ctx.id = "transform";
    ctx.log_name = "processor/transform";
    ctx.config = pg_cfg_get((*cfg)->root, "transform");
    ctx.config_arena = (*cfg)->arena;
    ctx.diag = &(*cfg)->diag;
    if (pg_processor_transform.create(&ctx, &state) != PG_ERR_OK) {
        for (size_t i = 0; i < (*cfg)->diag.n; i++) {
            fprintf(stderr, "%s\n", (*cfg)->diag.msgs[i]);
        }
        exit(1);
    }
    return state;
}

struct result {
    double ns;         /* median per request */
    long allocs;       /* malloc calls inside the timed calls, total */
    long chunk_growth; /* requests whose arena needed a new chunk */
    long build_allocs; /* malloc calls while building the batches: proves counting works */
    size_t attrs;
};

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x;
    double b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Median over ROUNDS of the mean over ITERS requests; batch build and free
 * are outside the timed part. mode 0: processor; 1: ParseResourceAttributes only. */
#define ROUNDS 101
#define ITERS 500

static struct result measure(void *state, const char *hdr, int mode)
{
    static struct pg_batch *batches[ITERS];
    double per[ROUNDS];
    struct result r = {0, 0, 0, 0, 0};

    for (int round = 0; round < ROUNDS; round++) {
        double t0;
        double t1;
        long a0;
        long a1;
        size_t fp[ITERS];
        a0 = atomic_load(&n_allocs);
        for (int i = 0; i < ITERS; i++) {
            batches[i] = mk_batch(hdr);
            fp[i] = pg_arena_footprint(batches[i]->arena);
        }
        r.build_allocs += atomic_load(&n_allocs) - a0;
        a0 = atomic_load(&n_allocs);
        t0 = now_ns();
        for (int i = 0; i < ITERS; i++) {
            struct pg_status st;
            if (mode == 0) {
                if (pg_processor_transform.process(state, &batches[i], &st) != PG_ERR_OK) {
                    fprintf(stderr, "process failed: %s\n", st.msg);
                    exit(1);
                }
            } else {
                struct pg_ottl_kv_list l = {0, 0, NULL};
                size_t skipped;
                (void)pg_ottl_parse_resource_attributes(batches[i]->arena, hdr, &l, &skipped, &st);
            }
        }
        t1 = now_ns();
        a1 = atomic_load(&n_allocs);
        r.allocs += a1 - a0;
        for (int i = 0; i < ITERS; i++) {
            struct pg_otlp_resource *res = batches[i]->req->resource_profiles[0]->resource;
            if (pg_arena_footprint(batches[i]->arena) != fp[i]) {
                r.chunk_growth++;
            }
            r.attrs = res ? res->n_attributes : 0;
            pg_batch_unref(batches[i]);
        }
        per[round] = (t1 - t0) / ITERS;
    }
    qsort(per, ROUNDS, sizeof(per[0]), cmp_double);
    r.ns = per[ROUNDS / 2];
    return r;
}

int main(int argc, char **argv)
{
    const char *fixtures = argc > 1 ? argv[1] : getenv("PG_FIXTURES");
    char *hdr;
    char *clean;
    struct pg_config *c1;
    struct pg_config *c2;
    void *def;
    void *coll;
    struct result base;
    struct result rd;
    struct result rc;

    pg_log_set_level(PG_LOG_ERROR);
    hdr = sdk_header(fixtures ? fixtures : "tests/fixtures");
    if (hdr == NULL) {
        fprintf(stderr, "cannot read sdk/push0.json under %s\n", fixtures ? fixtures : "tests/fixtures");
        return 1;
    }
    clean = strdup(hdr);
    for (char *p = clean; *p; p++) {
        if (*p == '\'') {
            *p = '_';
        }
    }
    def = create(&c1, "merge_maps(resource.attributes, ParseResourceAttributes(metadata["
                      "\"otel-resource-attributes\"]), \"upsert\")");
    coll = create(&c2, "set(resource.attributes, ParseKeyValue(metadata["
                       "\"otel-resource-attributes\"], \"=\", \",\"))");
    base = measure(NULL, hdr, 1);
    rd = measure(def, hdr, 0);
    rc = measure(coll, clean, 0);
    printf("ottl: SDK header %zu bytes, 10 pairs; %d rounds x %d requests, thread CPU time\n",
           strlen(hdr), ROUNDS, ITERS);
    printf("  baseline ParseResourceAttributes alone       %8.0f ns/request\n", base.ns);
    printf("  default statement (merge_maps + PRA), process %8.0f ns/request  (%.2fx baseline; "
           "target < 5000 ns)  attrs=%zu\n",
           rd.ns, rd.ns / base.ns, rd.attrs);
    printf("  collector statement (set + ParseKeyValue)     %8.0f ns/request  (%.2fx baseline)  "
           "attrs=%zu\n",
           rc.ns, rc.ns / base.ns, rc.attrs);
#if COUNT_MALLOC
    printf("  malloc calls inside process(): default %ld, collector %ld over %d requests "
           "(arena chunk growth: %ld, %ld) -> %s\n",
           rd.allocs, rc.allocs, ROUNDS * ITERS, rd.chunk_growth, rc.chunk_growth,
           rd.allocs == rd.chunk_growth && rc.allocs == rc.chunk_growth
               ? "no allocation outside the request arena"
               : "ALLOCATION OUTSIDE THE REQUEST ARENA");
    printf("  (counter check: %ld malloc calls seen while building the same batches)\n",
           rd.build_allocs);
#else
    printf("  malloc counting disabled under sanitizers\n");
#endif
    pg_processor_transform.destroy(def);
    pg_processor_transform.destroy(coll);
    pg_config_free(c1);
    pg_config_free(c2);
    free(clean);
    return 0;
}
