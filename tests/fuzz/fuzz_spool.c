/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the spool's record parser and its replay path: the
 * input is taken as a segment file (and its tail as that segment's ack log),
 * opened, replayed and acknowledged, as a restart after a crash would. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "storage/spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_rec(void *arg, uint64_t id, size_t off, const uint8_t *payload, size_t len)
{
    size_t *sum = arg;
    /* Touch every byte so ASan sees any out-of-bounds payload. */
    for (size_t i = 0; i < len; i++) {
        *sum += payload[i];
    }
    *sum += (size_t)id + off;
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f != NULL) {
        if (n > 0) {
            fwrite(p, 1, n, f);
        }
        fclose(f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[64];
    char path[128];
    struct pg_spool_parse_stats ps;
    struct pg_spool_options opt = {0};
    struct pg_spool *s = NULL;
    struct pg_status st;
    size_t sum = 0, ack_len;

    pg_spool_parse(data, size, on_rec, &sum, &ps);
    if (ps.valid_end > size || (ps.records == 0 && ps.valid_end != 0)) {
        abort();
    }

    if (dir[0] == '\0') {
        pg_log_set_level(PG_LOG_OFF);
        snprintf(dir, sizeof(dir), "/tmp/fuzz_spool.%d", (int)getpid());
    }
    mkdir(dir, 0700);
    /* The last size/8 bytes double as the ack log. */
    ack_len = size / 8;
    snprintf(path, sizeof(path), "%s/%016x.seg", dir, 1);
    write_file(path, data, size);
    snprintf(path, sizeof(path), "%s/%016x.ack", dir, 1);
    write_file(path, data + size - ack_len, ack_len);
    opt.dir = dir;
    opt.fsync = PG_SPOOL_FSYNC_NEVER;
    if (pg_spool_open(&opt, &s, &st) == PG_ERR_OK) {
        uint64_t after = 0, id;
        uint8_t *rec;
        size_t len;
        while (pg_spool_next_replay(s, after, &id, &rec, &len, &st) == PG_ERR_OK && rec != NULL) {
            free(rec);
            (void)pg_spool_ack(s, id, &st);
            after = id;
        }
        pg_spool_close(s);
    }
    snprintf(path, sizeof(path), "%s/%016x.seg", dir, 1);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%016x.ack", dir, 1);
    unlink(path);
    snprintf(path, sizeof(path), "%s/LOCK", dir);
    unlink(path);
    return 0;
}
