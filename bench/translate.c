/* SPDX-License-Identifier: Apache-2.0
 * bench/translate FILE...: per pprof file, in one process, times zlib inflate
 * alone (the baseline: one inflate() call into an ISIZE buffer), pprofgate's
 * own inflate, and the full path (inflate + decode + validate + translate +
 * encode with pg_otlp_request_encode); prints them, full / zlib, the split of
 * the full path, the OTLP size and the request's peak memory against the raw
 * pprof size. Plain pprof inputs are gzip'd in memory first so every path
 * starts from the same compressed body. Figures only, no assertions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "codec/gzip.h"
#include "codec/inflate.h"
#include "core/arena.h"
#include "otlp/otlp_encode.h"
#include "pprof/translate.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: robust on a busy machine */
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
        if (f) {
            fclose(f);
        }
        return NULL;
    }
    rewind(f);
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* The baseline, "zlib inflate alone": one inflate() call into a buffer of the
 * gzip ISIZE, the cheapest way to use zlib on a whole body. */
static int zlib_gunzip(const unsigned char *gz, size_t gz_len, size_t *out_len)
{
    size_t isize = (size_t)gz[gz_len - 4] | (size_t)gz[gz_len - 3] << 8 |
                   (size_t)gz[gz_len - 2] << 16 | (size_t)gz[gz_len - 1] << 24;
    unsigned char *out = malloc(isize + 1);
    z_stream z;
    int rc;

    memset(&z, 0, sizeof(z));
    if (out == NULL || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        free(out);
        return -1;
    }
    z.next_in = (Bytef *)gz;
    z.avail_in = (uInt)gz_len;
    z.next_out = out;
    z.avail_out = (uInt)(isize + 1);
    rc = inflate(&z, Z_FINISH);
    *out_len = z.total_out;
    inflateEnd(&z);
    free(out);
    return rc == Z_STREAM_END ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MAX_RUNS 64

int main(int argc, char **argv)
{
    int runs = 15;
    int first = 1;

    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        runs = atoi(argv[2]);
        runs = runs < 1 ? 1 : runs > MAX_RUNS ? MAX_RUNS : runs;
        first = 3;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: translate [-n RUNS] FILE...\n");
        return 2;
    }
    printf("%-28s %9s %9s %9s %9s %6s %9s %9s %10s %9s %6s\n", "file", "gz_bytes", "zlib",
           "pg_infl", "full", "ratio", "xlate", "encode", "otlp_bytes", "peak_mem", "x_raw");
    for (int fi = first; fi < argc; fi++) {
        size_t len, gz_len, raw_len = 0, otlp_len = 0, peak = 0, peak_out = 0, peak_scratch = 0;
        unsigned char *data = slurp(argv[fi], &len), *gz;
        double t_inf[MAX_RUNS], t_zlib[MAX_RUNS], t_full[MAX_RUNS], t_x[MAX_RUNS],
            t_enc[MAX_RUNS];
        const char *name = strrchr(argv[fi], '/') ? strrchr(argv[fi], '/') + 1 : argv[fi];
        int ok = 1;

        if (data == NULL) {
            fprintf(stderr, "cannot read %s\n", argv[fi]);
            return 1;
        }
        if (pg_is_gzip(data, len)) {
            gz = data;
            gz_len = len;
        } else {
            struct pg_status gst;
            uint8_t *packed = NULL;

            if (pg_gzip_compress(NULL, data, len, 6, &packed, &gz_len, &gst) != PG_ERR_OK) {
                fprintf(stderr, "gzip %s: %s\n", argv[fi], gst.msg);
                return 1;
            }
            gz = packed;
        }
        /* Baseline and full path alternate within each round, so a neighbour's load burst
         * on the shared machine hits both the same way. */
        for (int r = 0; r < runs && ok; r++) {
            struct pg_arena *a = pg_arena_create(0);
            struct pg_translate_opts o;
            struct pg_translate_stats stats;
            struct pg_otlp_request *req;
            struct pg_status st;
            uint8_t *buf;
            size_t n;
            double t0, t1;

            {
                size_t zlen = 0;
                t0 = now_ms();
                if (zlib_gunzip(gz, gz_len, &zlen) != 0) {
                    fprintf(stderr, "%s: zlib cannot inflate it in one call\n", name);
                    ok = 0;
                }
                t_zlib[r] = now_ms() - t0;
            }
            {
                struct pg_arena *ia = pg_arena_create(0);
                uint8_t *iout;
                size_t iout_len;
                t0 = now_ms();
                if (pg_inflate(ia, gz, gz_len, PG_INFLATE_GZIP, (size_t)1 << 30, &iout, &iout_len,
                               &st) != PG_ERR_OK) {
                    fprintf(stderr, "%s: %s\n", name, st.msg);
                    ok = 0;
                }
                t_inf[r] = now_ms() - t0;
                pg_arena_destroy(ia);
            }
            t0 = now_ms();
            pg_translate_opts_default(&o);
            o.limits.max_inflated_bytes = (size_t)1 << 30;
            if (pg_pprof_translate(a, gz, gz_len, &o, &req, &stats, &st) != PG_ERR_OK) {
                fprintf(stderr, "%s: %s\n", name, st.msg);
                ok = 0;
                pg_arena_destroy(a);
                break;
            }
            t1 = now_ms();
            /* Peak for one request as the translator measured it: the most its arenas held
             * at once (request arena + scratch arena with the inflated pprof, indexes and
             * hash tables + compact per-sample records; scratch is released before the
             * Sample structs are allocated). The encoded bytes are the exporter's buffer and
             * are not counted. */
            peak = stats.peak_bytes;
            peak_out = pg_arena_footprint(a);
            peak_scratch = stats.scratch_bytes;
            if (pg_otlp_request_encode(req, a, &buf, &n, &st) != PG_ERR_OK) {
                fprintf(stderr, "%s: %s\n", name, st.msg);
                ok = 0;
                pg_arena_destroy(a);
                break;
            }
            t_full[r] = now_ms() - t0;
            t_x[r] = t1 - t0;
            t_enc[r] = t_full[r] - t_x[r];
            otlp_len = n;
            raw_len = stats.raw_pprof_bytes;
            pg_arena_destroy(a);
        }
        if (ok) {
            qsort(t_inf, (size_t)runs, sizeof(double), cmp_double);
            qsort(t_zlib, (size_t)runs, sizeof(double), cmp_double);
            qsort(t_full, (size_t)runs, sizeof(double), cmp_double);
            qsort(t_x, (size_t)runs, sizeof(double), cmp_double);
            qsort(t_enc, (size_t)runs, sizeof(double), cmp_double);
            printf("%-28s %9zu %7.2fms %7.2fms %7.2fms %5.2fx %7.2fms %7.2fms %10zu %8.1fM "
                   "%5.2fx\n", name, gz_len, t_zlib[runs / 2], t_inf[runs / 2], t_full[runs / 2],
                   t_full[runs / 2] / t_zlib[runs / 2], t_x[runs / 2], t_enc[runs / 2], otlp_len,
                   peak / 1048576.0, raw_len ? (double)peak / (double)raw_len : 0.0);
            if (getenv("PG_BENCH_VERBOSE") != NULL) {
                printf("  request arena %.1fM, scratch %.1fM (released before the samples are "
                       "built), raw pprof %.1fM\n",
                       peak_out / 1048576.0, peak_scratch / 1048576.0, raw_len / 1048576.0);
            }
        }
        if (gz != data) {
            free(gz);
        }
        free(data);
    }
    printf("(medians of %d runs of thread CPU time; zlib = zlib inflate alone, the baseline; "
           "pg_infl = pprofgate's inflate (libdeflate when built with it, else zlib); "
           "full = pg_infl+decode+validate+translate+encode; ratio = full / zlib; "
           "x_raw = peak memory / uncompressed pprof bytes)\n", runs);
    return 0;
}
