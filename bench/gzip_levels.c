/* SPDX-License-Identifier: Apache-2.0
 * bench/gzip_levels FILE...: per pprof file, translates and encodes it once
 * into the OTLP request the otlp exporter would send, then gzips that request
 * at levels 1..9 with zlib (deflateInit2 per call, what the exporter did) and
 * with pg_gzip_compress (libdeflate, the thread's reused compressor); prints
 * the compressed sizes, their ratio and the median thread CPU time of each.
 * Figures only, no assertions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "codec/gzip.h"
#include "core/arena.h"
#include "otlp/otlp_encode.h"
#include "pprof/translate.h"

#define RUNS 41

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* zlib's gzip of @in at @level into @out (capacity @cap); the size or 0. */
static size_t zlib_gzip(const uint8_t *in, size_t len, int level, uint8_t *out, size_t cap)
{
    z_stream zs;
    size_t n = 0;

    memset(&zs, 0, sizeof(zs));
    if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        return 0;
    }
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    if (deflate(&zs, Z_FINISH) == Z_STREAM_END) {
        n = zs.total_out;
    }
    deflateEnd(&zs);
    return n;
}

int main(int argc, char **argv)
{
    for (int fi = 1; fi < argc; fi++) {
        FILE *f = fopen(argv[fi], "rb");
        static uint8_t data[64u << 20];
        size_t len = f ? fread(data, 1, sizeof(data), f) : 0;
        struct pg_arena *a = pg_arena_create(0);
        struct pg_translate_opts o;
        struct pg_translate_stats stats;
        struct pg_otlp_request *req;
        struct pg_status st;
        uint8_t *enc, *zout;
        size_t n, cap;

        if (f != NULL) {
            fclose(f);
        }
        pg_translate_opts_default(&o);
        if (len == 0 || a == NULL || pg_pprof_translate(a, data, len, &o, &req, &stats, &st) ||
            pg_otlp_request_encode(req, a, &enc, &n, &st)) {
            fprintf(stderr, "%s: cannot translate it\n", argv[fi]);
            return 1;
        }
        cap = compressBound((uLong)n) + 64;
        zout = malloc(cap);
        printf("%s: OTLP request %zu bytes\n", argv[fi], n);
        printf("level %9s %9s %8s %9s %9s %8s\n", "zlib_B", "pg_B", "pg/zlib", "zlib_us",
               "pg_us", "pg/zlib");
        /* Fewer rounds for large requests: zlib at 9 takes ~0.1 s a MB. */
        int runs = n > (1u << 20) ? 5 : RUNS;

        for (int level = 1; level <= 9; level++) {
            double tz[RUNS], tp[RUNS];
            size_t zn = 0, pn = 0;

            for (int r = 0; r < runs; r++) {
                uint8_t *p = NULL;
                double t0 = now_us();

                zn = zlib_gzip(enc, n, level, zout, cap);
                tz[r] = now_us() - t0;
                t0 = now_us();
                if (pg_gzip_compress(NULL, enc, n, level, &p, &pn, &st) != PG_ERR_OK) {
                    fprintf(stderr, "gzip: %s\n", st.msg);
                    return 1;
                }
                tp[r] = now_us() - t0;
                free(p);
            }
            qsort(tz, (size_t)runs, sizeof(double), cmp_double);
            qsort(tp, (size_t)runs, sizeof(double), cmp_double);
            printf("%5d %9zu %9zu %8.3f %9.1f %9.1f %8.2f\n", level, zn, pn,
                   zn ? (double)pn / (double)zn : 0.0, tz[runs / 2], tp[runs / 2],
                   tz[runs / 2] > 0 ? tp[runs / 2] / tz[runs / 2] : 0.0);
        }
        free(zout);
        pg_arena_destroy(a);
    }
    printf("(sizes of one gzip member; times: medians of %d runs (5 over 1 MiB) of thread CPU "
           "time, zlib including its per-call deflateInit2/deflateEnd)\n", RUNS);
    pg_gzip_thread_release();
    return 0;
}
