/* SPDX-License-Identifier: Apache-2.0
 * The floor for the otlp receiver's large-request figure (bench/otlp_in.sh):
 * CPU per bare protobuf-c unpack (and free) of one ExportProfilesServiceRequest
 * file, with the default allocator, no validation, no pipeline. Prints
 * "unpack_ms <ms of CPU per unpack>" after @n runs (default 20). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "otlp/otlp.h"

static double cpu_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    FILE *f;
    long size;
    unsigned char *buf;
    int n = argc > 2 ? atoi(argv[2]) : 20;
    double t0, t1;

    if (argc < 2 || n < 1) {
        fprintf(stderr, "usage: otlp_unpack REQUEST.pb [RUNS]\n");
        return 2;
    }
    f = fopen(argv[1], "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) <= 0) {
        fprintf(stderr, "otlp_unpack: cannot read %s\n", argv[1]);
        return 1;
    }
    rewind(f);
    buf = malloc((size_t)size);
    if (buf == NULL || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "otlp_unpack: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(f);
    t0 = cpu_ms();
    for (int i = 0; i < n; i++) {
        ProtobufCMessage *m =
            protobuf_c_message_unpack(&pg_otlp_request_descriptor, NULL, (size_t)size, buf);

        if (m == NULL) {
            fprintf(stderr, "otlp_unpack: %s is not an ExportProfilesServiceRequest\n", argv[1]);
            return 1;
        }
        protobuf_c_message_free_unpacked(m, NULL);
    }
    t1 = cpu_ms();
    printf("unpack_ms %.2f\n", (t1 - t0) / n);
    free(buf);
    return 0;
}
