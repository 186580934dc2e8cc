/* SPDX-License-Identifier: Apache-2.0
 * Spool cost: appends per second and MB/s with fsync always / interval,
 * each next to a baseline measured in the same run on the same directory
 * (plain write + fdatasync, plain write), then ack and replay speed.
 * Prints figures and ratios only; nothing is asserted.
 *   spool_bench [DIR] [RECORD_BYTES] [SECONDS_PER_CASE] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "storage/spool.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Baseline: append @len bytes to one file, with or without fdatasync. */
static double baseline(const char *dir, const unsigned char *buf, size_t len, bool sync,
                       double secs)
{
    char path[512];
    int fd;
    size_t n = 0;
    double t0, t;

    snprintf(path, sizeof(path), "%s/baseline.dat", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    t0 = now_s();
    do {
        if (write(fd, buf, len) != (ssize_t)len || (sync && fdatasync(fd) != 0)) {
            perror("write");
            exit(1);
        }
        n++;
        t = now_s();
    } while (t - t0 < secs);
    close(fd);
    unlink(path);
    return (double)n / (t - t0);
}

static double spool_case(const char *dir, const unsigned char *buf, size_t len,
                         enum pg_spool_fsync mode, double secs, uint64_t *ids, size_t cap,
                         size_t *n_out)
{
    struct pg_spool_options o = {0};
    struct pg_spool *s;
    struct pg_status st;
    size_t n = 0;
    double t0, t;

    o.dir = dir;
    o.fsync = mode;
    o.max_bytes = 8ull << 30;
    if (pg_spool_open(&o, &s, &st) != PG_ERR_OK) {
        fprintf(stderr, "%s\n", st.msg);
        exit(1);
    }
    t0 = now_s();
    do {
        if (pg_spool_append(s, buf, len, n < cap ? &ids[n] : NULL, &st) != PG_ERR_OK) {
            fprintf(stderr, "%s\n", st.msg);
            exit(1);
        }
        n++;
        t = now_s();
    } while (t - t0 < secs && n < cap);
    pg_spool_close(s); /* leaves the records for the replay measurement */
    *n_out = n;
    return (double)n / (t - t0);
}

/* `spool_bench fill DIR PAYLOAD_FILE TOTAL_BYTES`: a spool of copies of one
 * encoded request, as a gateway would leave it (for bench/spool_replay.py). */
static int fill(const char *dir, const char *payload_path, unsigned long long total)
{
    struct pg_spool_options o = {0};
    struct pg_spool *s;
    struct pg_status st;
    FILE *f = fopen(payload_path, "rb");
    unsigned char *buf;
    long len;
    unsigned long long done = 0, n = 0;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) <= 0) {
        perror(payload_path);
        return 1;
    }
    rewind(f);
    buf = malloc((size_t)len);
    if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        perror(payload_path);
        return 1;
    }
    fclose(f);
    o.dir = dir;
    o.max_bytes = total * 2 + (64u << 20);
    o.segment_bytes = 64u << 20;
    o.fsync = PG_SPOOL_FSYNC_NEVER;
    if (pg_spool_open(&o, &s, &st) != PG_ERR_OK) {
        fprintf(stderr, "%s\n", pg_status_text(&st));
        return 1;
    }
    do {
        if (pg_spool_append(s, buf, (size_t)len, NULL, &st) != PG_ERR_OK) {
            fprintf(stderr, "%s\n", pg_status_text(&st));
            return 1;
        }
        done += (unsigned long long)len + PG_SPOOL_HDR_SIZE;
        n++;
    } while (done < total);
    (void)pg_spool_sync(s, true, &st);
    pg_spool_close(s);
    free(buf);
    printf("%llu %llu\n", n, done);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "fill") == 0) {
        return fill(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    }
    const char *dir = argc > 1 ? argv[1] : "/tmp/pg_spool_bench";
    size_t len = argc > 2 ? (size_t)atol(argv[2]) : 16384;
    double secs = argc > 3 ? atof(argv[3]) : 2.0;
    size_t cap = 2000000, n = 0;
    unsigned char *buf = malloc(len);
    uint64_t *ids = malloc(cap * sizeof(*ids));
    double base_sync, base_nosync, sp_always, sp_interval, t0, t_replay, t_ack;
    struct pg_spool_options o = {0};
    struct pg_spool *s;
    struct pg_status st;
    uint64_t after = 0, id;
    uint8_t *data;
    size_t rlen, replayed = 0;
    char cmd[600];

    pg_log_set_level(PG_LOG_WARN);
    for (size_t i = 0; i < len; i++) {
        buf[i] = (unsigned char)(i * 2654435761u >> 13);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0) {
        return 1;
    }
    base_sync = baseline(dir, buf, len, true, secs);
    sp_always = spool_case(dir, buf, len, PG_SPOOL_FSYNC_ALWAYS, secs, ids, cap, &n);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0) {
        return 1;
    }
    base_nosync = baseline(dir, buf, len, false, secs);
    sp_interval = spool_case(dir, buf, len, PG_SPOOL_FSYNC_INTERVAL, secs, ids, cap, &n);

    o.dir = dir;
    o.max_bytes = 8ull << 30;
    t0 = now_s();
    if (pg_spool_open(&o, &s, &st) != PG_ERR_OK) {
        fprintf(stderr, "%s\n", st.msg);
        return 1;
    }
    while (pg_spool_next_replay(s, after, &id, &data, &rlen, &st) == PG_ERR_OK && data != NULL) {
        free(data);
        after = id;
        replayed++;
    }
    t_replay = now_s() - t0;
    t0 = now_s();
    for (size_t i = 0; i < n && i < cap; i++) {
        (void)pg_spool_ack(s, ids[i], &st);
    }
    t_ack = now_s() - t0;
    pg_spool_close(s);

    printf("spool bench: %zu-byte records, %.1f s per case, directory %s\n", len, secs, dir);
    printf("  fsync always:    %9.0f appends/s %8.1f MB/s   baseline write+fdatasync %9.0f/s"
           "   ratio %.2f\n", sp_always, sp_always * (double)len / 1e6, base_sync,
           sp_always / base_sync);
    printf("  fsync interval:  %9.0f appends/s %8.1f MB/s   baseline write           %9.0f/s"
           "   ratio %.2f\n", sp_interval, sp_interval * (double)len / 1e6, base_nosync,
           sp_interval / base_nosync);
    printf("  open + replay:   %zu records in %.3f s (%.0f records/s, %.1f MB/s incl. CRC check)\n",
           replayed, t_replay, (double)replayed / t_replay,
           (double)replayed * (double)len / 1e6 / t_replay);
    printf("  ack:             %zu acks in %.3f s (%.0f acks/s, segments deleted as they empty)\n",
           n, t_ack, (double)n / t_ack);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    free(buf);
    free(ids);
    return system(cmd) == 0 ? 0 : 1;
}
