/* SPDX-License-Identifier: Apache-2.0
 * What an exporter's `protocol_version: v1.9` adds per part: CPU of
 * pg_otlp_version_encode (the Sample renumbering in a copy) against, in the
 * same run and interleaved, what every part already costs: encoding the
 * request (pg_otlp_request_encode) and gzip at the default level. Prints one
 * line per request file with the ratios (bench/README.md). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "codec/gzip.h"
#include "core/arena.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_version.h"

static double cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long size;
    unsigned char *buf = NULL;

    if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0) {
        rewind(f);
        buf = malloc((size_t)size);
        if (buf != NULL && fread(buf, 1, (size_t)size, f) != (size_t)size) {
            free(buf);
            buf = NULL;
        }
        *len = (size_t)size;
    }
    if (f != NULL) {
        fclose(f);
    }
    return buf;
}

int main(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[1]) : 0;

    if (argc < 3 || n < 1) {
        fprintf(stderr, "usage: otlp_version RUNS REQUEST.pb...\n");
        return 2;
    }
    for (int f = 2; f < argc; f++) {
        size_t len = 0;
        unsigned char *buf = slurp(argv[f], &len);
        struct pg_arena *keep = pg_arena_create(0);
        ProtobufCAllocator alloc;
        const struct pg_otlp_request *req;
        double t_enc = 0, t_v19 = 0, t_gz = 0;
        struct pg_otlp_version_stats vs = {0, 0};
        struct pg_status st;

        if (buf == NULL || keep == NULL) {
            fprintf(stderr, "otlp_version: cannot read %s\n", argv[f]);
            return 1;
        }
        pg_arena_protobuf_allocator(keep, &alloc);
        req = (const struct pg_otlp_request *)protobuf_c_message_unpack(
            &pg_otlp_request_descriptor, &alloc, len, buf);
        if (req == NULL) {
            fprintf(stderr, "otlp_version: %s is not a request\n", argv[f]);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct pg_arena *a = pg_arena_create(0);
            uint8_t *enc = NULL, *v19 = NULL, *gz = NULL;
            size_t enc_len = 0, v19_len = 0, gz_len = 0;
            double t0 = cpu_ns(), t1, t2, t3;

            if (a == NULL || pg_otlp_request_encode(req, a, &enc, &enc_len, &st) != PG_ERR_OK) {
                return 1;
            }
            t1 = cpu_ns();
            if (pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, enc, enc_len, &v19, &v19_len, &vs,
                                       &st) != PG_ERR_OK) {
                fprintf(stderr, "otlp_version: %s\n", st.msg);
                return 1;
            }
            t2 = cpu_ns();
            if (pg_gzip_compress(NULL, enc, enc_len, 6, &gz, &gz_len, &st) != PG_ERR_OK) {
                return 1;
            }
            t3 = cpu_ns();
            t_enc += t1 - t0;
            t_v19 += t2 - t1;
            t_gz += t3 - t2;
            free(v19);
            free(gz);
            pg_arena_destroy(a);
        }
        printf("%s: %zu bytes, per part: encode %.1f us, v1.9 rewrite %.1f us, gzip-6 %.1f us; "
               "v1.9/encode %.3f, v1.9/gzip %.3f (%zu samples renumbered, %zu references)\n",
               argv[f], len, t_enc / n / 1e3, t_v19 / n / 1e3, t_gz / n / 1e3, t_v19 / t_enc,
               t_v19 / t_gz, vs.samples / (size_t)n, vs.references / (size_t)n);
        pg_arena_destroy(keep);
        free(buf);
    }
    return 0;
}
