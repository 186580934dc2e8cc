/* SPDX-License-Identifier: Apache-2.0
 * The persistent spool: round trip across restarts, acks and compaction,
 * truncation at every byte of the last record, every single-bit flip, the
 * byte cap, the directory lock and the storage registry. */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "storage/spool.h"
#include "storage/storage.h"
#include "pg_test.h"

static char tmp_root[256];
static int tmp_seq;

/* A fresh empty directory under one mkdtemp root (removed at the end). */
static void fresh_dir(char *out, size_t cap)
{
    if (tmp_root[0] == '\0') {
        snprintf(tmp_root, sizeof(tmp_root), "/tmp/pg_test_spool.XXXXXX");
        if (mkdtemp(tmp_root) == NULL) {
            perror("mkdtemp");
            exit(2);
        }
    }
    snprintf(out, cap, "%s/d%d", tmp_root, ++tmp_seq);
}

static void rm_rf(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[1024];

    if (d == NULL) {
        return;
    }
    while ((de = readdir(d)) != NULL) {
        struct stat sb;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            rm_rf(p);
        } else {
            unlink(p);
        }
    }
    closedir(d);
    rmdir(dir);
}

static size_t count_files(const char *dir, const char *ext)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t n = 0;

    if (d == NULL) {
        return 0;
    }
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > strlen(ext) && strcmp(de->d_name + l - strlen(ext), ext) == 0) {
            n++;
        }
    }
    closedir(d);
    return n;
}

static struct pg_spool *open_dir(const char *dir, uint64_t max_bytes, uint64_t seg_bytes)
{
    struct pg_spool_options o = {.dir = dir, .max_bytes = max_bytes, .segment_bytes = seg_bytes,
                                 .fsync = PG_SPOOL_FSYNC_ALWAYS, .log_name = "test/spool"};
    struct pg_spool *s = NULL;
    struct pg_status st;
    if (pg_spool_open(&o, &s, &st) != PG_ERR_OK) {
        fprintf(stderr, "  open %s: %s\n", dir, st.msg);
        return NULL;
    }
    return s;
}

/* Payload i: "rec-<i>-" repeated to @len bytes, so every record differs. */
static void payload(int i, char *buf, size_t len)
{
    char tag[32];
    int n = snprintf(tag, sizeof(tag), "rec-%d-", i);
    for (size_t k = 0; k < len; k++) {
        buf[k] = tag[k % (size_t)n];
    }
}

/* Drains the replay and checks it yields payloads @first..@first+@n-1. */
static size_t replay_all(struct pg_spool *s, int first, size_t plen, uint64_t *ids)
{
    uint64_t after = 0, id;
    uint8_t *data;
    size_t len, n = 0;
    struct pg_status st;
    char want[256];

    for (;;) {
        CHECK_INT(pg_spool_next_replay(s, after, &id, &data, &len, &st), PG_ERR_OK);
        if (data == NULL) {
            break;
        }
        if (first >= 0) {
            payload(first + (int)n, want, plen);
            CHECK_INT(len, plen);
            CHECK(len == plen && memcmp(data, want, plen) == 0);
        }
        if (ids != NULL) {
            ids[n] = id;
        }
        free(data);
        after = id;
        n++;
    }
    return n;
}

PG_TEST(test_roundtrip_restart_ack)
{
    char dir[300], buf[100];
    struct pg_spool *s;
    struct pg_status st;
    struct pg_spool_stats ss;
    uint64_t ids[8] = {0}, rids[8] = {0}, id;

    fresh_dir(dir, sizeof(dir));
    s = open_dir(dir, 0, 0);
    CHECK(s != NULL);
    if (s == NULL) {
        return;
    }
    for (int i = 0; i < 5; i++) {
        payload(i, buf, sizeof(buf));
        CHECK_INT(pg_spool_append(s, buf, sizeof(buf), &ids[i], &st), PG_ERR_OK);
    }
    CHECK(ids[0] < ids[1] && ids[3] < ids[4]);
    /* Records of this run are not "replay": they flow through the live path. */
    CHECK_INT(replay_all(s, 0, sizeof(buf), NULL), 0);
    CHECK_INT(pg_spool_ack(s, ids[1], &st), PG_ERR_OK);
    CHECK_INT(pg_spool_ack(s, ids[1], &st), PG_ERR_OK); /* twice: no-op */
    CHECK_INT(pg_spool_ack(s, 999999, &st), PG_ERR_OK); /* unknown: no-op */
    pg_spool_close(s);

    s = open_dir(dir, 0, 0);
    CHECK(s != NULL);
    if (s == NULL) {
        return;
    }
    pg_spool_get_stats(s, &ss);
    CHECK_INT(ss.replay_pending, 4);
    CHECK_INT(ss.pending, 4);
    CHECK_INT(ss.corrupt, 0);
    CHECK_INT(ss.truncated, 0);
    CHECK_INT(replay_all(s, -1, 0, rids), 4);
    CHECK(rids[0] == ids[0] && rids[1] == ids[2] && rids[2] == ids[3] && rids[3] == ids[4]);
    /* New ids continue past the old ones. */
    CHECK_INT(pg_spool_append(s, "x", 1, &id, &st), PG_ERR_OK);
    CHECK(id > ids[4]);
    for (int i = 0; i < 4; i++) {
        CHECK_INT(pg_spool_ack(s, rids[i], &st), PG_ERR_OK);
    }
    /* The old segment is fully acked: deleted at once. */
    CHECK_INT(count_files(dir, ".seg"), 1);
    CHECK_INT(pg_spool_ack(s, id, &st), PG_ERR_OK);
    pg_spool_close(s);
    CHECK_INT(count_files(dir, ".seg"), 0);
    CHECK_INT(count_files(dir, ".ack"), 0);

    s = open_dir(dir, 0, 0);
    CHECK(s != NULL);
    if (s != NULL) {
        pg_spool_get_stats(s, &ss);
        CHECK_INT(ss.pending, 0);
        pg_spool_close(s);
    }
}

/* Several segments (small segment size): compaction deletes each as it is
 * fully acked, acks out of order included. */
PG_TEST(test_segments_compaction)
{
    char dir[300], buf[60];
    struct pg_spool *s;
    struct pg_status st;
    struct pg_spool_stats ss;
    uint64_t ids[20];

    fresh_dir(dir, sizeof(dir));
    s = open_dir(dir, 0, 200);
    if (s == NULL) {
        CHECK(false);
        return;
    }
    for (int i = 0; i < 20; i++) {
        payload(i, buf, sizeof(buf));
        CHECK_INT(pg_spool_append(s, buf, sizeof(buf), &ids[i], &st), PG_ERR_OK);
    }
    CHECK_INT(count_files(dir, ".seg"), 7); /* 3 records of 84 bytes fill one */
    for (int i = 19; i >= 10; i--) {
        CHECK_INT(pg_spool_ack(s, ids[i], &st), PG_ERR_OK);
    }
    pg_spool_close(s);
    s = open_dir(dir, 0, 200);
    if (s == NULL) {
        CHECK(false);
        return;
    }
    pg_spool_get_stats(s, &ss);
    CHECK_INT(ss.replay_pending, 10);
    CHECK_INT(replay_all(s, 0, sizeof(buf), NULL), 10);
    CHECK(count_files(dir, ".seg") <= 6);
    pg_spool_close(s);
}

/* Writes 3 records and returns the segment image plus the last record offset. */
static uint8_t *three_record_image(size_t *len, size_t *last_off)
{
    static const size_t sizes[3] = {37, 5, 41};
    uint8_t *img = calloc(1, 3 * PG_SPOOL_HDR_SIZE + 37 + 5 + 41);
    size_t off = 0;

    for (int i = 0; i < 3; i++) {
        char buf[64];
        payload(i, buf, sizes[i]);
        if (i == 2) {
            *last_off = off;
        }
        pg_spool_encode_header(img + off, (uint64_t)(i + 1), buf, sizes[i]);
        memcpy(img + off + PG_SPOOL_HDR_SIZE, buf, sizes[i]);
        off += PG_SPOOL_HDR_SIZE + sizes[i];
    }
    *len = off;
    return img;
}

static bool write_file(const char *path, const uint8_t *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);
    bool ok = fd >= 0 && write(fd, data, len) == (ssize_t)len;
    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

PG_TEST(test_parse_truncation_every_offset)
{
    size_t len, last, fails = 0;
    uint8_t *img = three_record_image(&len, &last);
    struct pg_spool_parse_stats ps;

    pg_spool_parse(img, len, NULL, NULL, &ps);
    CHECK_INT(ps.records, 3);
    CHECK_INT(ps.corrupt, 0);
    CHECK_INT(ps.truncated, 0);
    CHECK_INT(ps.valid_end, len);
    for (size_t cut = last + 1; cut < len; cut++) {
        pg_spool_parse(img, cut, NULL, NULL, &ps);
        if (ps.records != 2 || ps.truncated != 1 || ps.corrupt != 0 || ps.valid_end != last) {
            fails++;
            fprintf(stderr, "  cut at %zu: records=%llu truncated=%llu corrupt=%llu\n", cut,
                    (unsigned long long)ps.records, (unsigned long long)ps.truncated,
                    (unsigned long long)ps.corrupt);
        }
    }
    CHECK_INT(fails, 0);
    /* Cutting exactly at the record boundary is a clean file. */
    pg_spool_parse(img, last, NULL, NULL, &ps);
    CHECK_INT(ps.records, 2);
    CHECK_INT(ps.truncated, 0);
    free(img);
}

/* The same through the real open path: a crash mid-write of the last record
 * leaves 2 records to replay, the cut is counted, and new appends work. The
 * torn record's id (3) is reused: it was never acknowledged to anyone. */
PG_TEST(test_open_truncated_every_offset)
{
    size_t len, last, fails = 0;
    uint8_t *img = three_record_image(&len, &last);

    for (size_t cut = last + 1; cut < len; cut++) {
        char dir[300], path[400];
        struct pg_spool *s;
        struct pg_spool_stats ss;
        struct pg_status st;
        uint64_t id = 0;

        fresh_dir(dir, sizeof(dir));
        mkdir(dir, 0750);
        snprintf(path, sizeof(path), "%s/%016x.seg", dir, 1);
        if (!write_file(path, img, cut)) {
            fails++;
            continue;
        }
        s = open_dir(dir, 0, 0);
        if (s == NULL) {
            fails++;
            continue;
        }
        pg_spool_get_stats(s, &ss);
        if (ss.replay_pending != 2 || ss.truncated != 1 || ss.corrupt != 0 ||
            replay_all(s, -1, 0, NULL) != 2 ||
            pg_spool_append(s, "new", 3, &id, &st) != PG_ERR_OK || id != 3) {
            fails++;
            fprintf(stderr, "  open cut %zu: pending=%llu truncated=%llu id=%llu\n", cut,
                    (unsigned long long)ss.replay_pending, (unsigned long long)ss.truncated,
                    (unsigned long long)id);
        }
        pg_spool_close(s);
        rm_rf(dir);
    }
    CHECK_INT(fails, 0);
    free(img);
}

/* Every single-bit flip anywhere in the image loses exactly the damaged
 * record: CRC32 detects all one-bit errors, and the parser resynchronises. */
PG_TEST(test_parse_every_bit_flip)
{
    size_t len, last, fails = 0;
    uint8_t *img = three_record_image(&len, &last);
    struct pg_spool_parse_stats ps;

    for (size_t i = 0; i < len; i++) {
        for (int b = 0; b < 8; b++) {
            img[i] ^= (uint8_t)(1u << b);
            pg_spool_parse(img, len, NULL, NULL, &ps);
            /* A flip in the last record's length can make it look longer than
             * the file: that reads as a truncated tail, also one loss. */
            if (ps.records != 2 || ps.corrupt + ps.truncated != 1) {
                fails++;
                if (fails < 5) {
                    fprintf(stderr, "  flip byte %zu bit %d: records=%llu corrupt=%llu trunc=%llu\n",
                            i, b, (unsigned long long)ps.records,
                            (unsigned long long)ps.corrupt, (unsigned long long)ps.truncated);
                }
            }
            img[i] ^= (uint8_t)(1u << b);
        }
    }
    CHECK_INT(fails, 0);
    free(img);
}

/* Flips through the open path, for one byte in each field of the middle
 * record, plus a garbage tail and a segment of pure garbage. */
PG_TEST(test_open_bit_flips_and_garbage)
{
    size_t len, last;
    uint8_t *img = three_record_image(&len, &last);
    size_t mid = PG_SPOOL_HDR_SIZE + 37;
    static const size_t field_offs[] = {0, 4, 8, 16, 20, PG_SPOOL_HDR_SIZE + 2};

    for (size_t k = 0; k < sizeof(field_offs) / sizeof(field_offs[0]); k++) {
        char dir[300], path[400];
        struct pg_spool *s;
        struct pg_spool_stats ss;
        uint64_t ids[4] = {0};

        fresh_dir(dir, sizeof(dir));
        mkdir(dir, 0750);
        snprintf(path, sizeof(path), "%s/%016x.seg", dir, 1);
        img[mid + field_offs[k]] ^= 0x10;
        CHECK(write_file(path, img, len));
        img[mid + field_offs[k]] ^= 0x10;
        s = open_dir(dir, 0, 0);
        CHECK(s != NULL);
        if (s == NULL) {
            continue;
        }
        /* A damaged header is found at open; a damaged payload when the
         * record is read back (open only walks headers): one loss either way. */
        CHECK_INT(replay_all(s, -1, 0, ids), 2);
        CHECK(ids[0] == 1 && ids[1] == 3);
        pg_spool_get_stats(s, &ss);
        CHECK_INT(ss.corrupt, 1);
        pg_spool_close(s);
        rm_rf(dir);
    }
    {
        char dir[300], path[400];
        uint8_t junk[777];
        struct pg_spool *s;
        struct pg_spool_stats ss;

        for (size_t i = 0; i < sizeof(junk); i++) {
            junk[i] = (uint8_t)(i * 131u + 7u);
        }
        fresh_dir(dir, sizeof(dir));
        mkdir(dir, 0750);
        snprintf(path, sizeof(path), "%s/%016x.seg", dir, 7);
        CHECK(write_file(path, junk, sizeof(junk)));
        snprintf(path, sizeof(path), "%s/%016x.ack", dir, 7);
        CHECK(write_file(path, junk, 100));
        s = open_dir(dir, 0, 0);
        CHECK(s != NULL);
        if (s != NULL) {
            pg_spool_get_stats(s, &ss);
            CHECK_INT(ss.pending, 0);
            CHECK(ss.corrupt >= 1);
            CHECK_INT(count_files(dir, ".seg"), 0); /* nothing recoverable: removed */
            pg_spool_close(s);
        }
        rm_rf(dir);
    }
    free(img);
}

PG_TEST(test_cap_busy_then_frees)
{
    char dir[300], buf[100];
    struct pg_spool *s;
    struct pg_status st;
    struct pg_spool_stats ss;
    uint64_t ids[64];
    int n = 0;
    enum pg_err err = PG_ERR_OK;

    fresh_dir(dir, sizeof(dir));
    s = open_dir(dir, 1000, 250);
    if (s == NULL) {
        CHECK(false);
        return;
    }
    while (n < 64) {
        payload(n, buf, sizeof(buf));
        err = pg_spool_append(s, buf, sizeof(buf), &ids[n], &st);
        if (err != PG_ERR_OK) {
            break;
        }
        n++;
    }
    CHECK_INT(err, PG_ERR_BUSY);
    CHECK(strstr(st.msg, "spool full") != NULL);
    CHECK_INT(n, 1000 / (PG_SPOOL_HDR_SIZE + 100));
    pg_spool_get_stats(s, &ss);
    CHECK(ss.disk_bytes <= 1000);
    CHECK_INT(ss.refused_full, 1);
    for (int i = 0; i < n; i++) {
        CHECK_INT(pg_spool_ack(s, ids[i], &st), PG_ERR_OK);
    }
    /* Acked segments were deleted, so there is room again. */
    CHECK_INT(pg_spool_append(s, buf, sizeof(buf), &ids[0], &st), PG_ERR_OK);
    CHECK_INT(pg_spool_append(s, buf, sizeof(buf), &ids[0], &st), PG_ERR_OK);
    /* A record that alone exceeds the cap can never fit: LIMIT, not BUSY. */
    {
        char *big = calloc(1, 2000);
        CHECK_INT(pg_spool_append(s, big, 2000, &ids[0], &st), PG_ERR_LIMIT);
        free(big);
    }
    pg_spool_close(s);
}

PG_TEST(test_lock_second_process)
{
    char dir[300];
    struct pg_spool *a, *b = NULL;
    struct pg_spool_options o = {0};
    struct pg_status st;

    fresh_dir(dir, sizeof(dir));
    a = open_dir(dir, 0, 0);
    CHECK(a != NULL);
    o.dir = dir;
    /* flock is per open file description, so a second open in this process
     * conflicts exactly as another process would. */
    CHECK_INT(pg_spool_open(&o, &b, &st), PG_ERR_BUSY);
    {
        char want[64];
        snprintf(want, sizeof(want), "locked by a running gateway (pid %ld)", (long)getpid());
        CHECK(strstr(st.msg, want) != NULL);
    }
    CHECK(b == NULL);
    pg_spool_close(a);
    CHECK_INT(pg_spool_open(&o, &b, &st), PG_ERR_OK);
    pg_spool_close(b);
}

PG_TEST(test_interval_fsync_and_bad_dir)
{
    char dir[300];
    struct pg_spool_options o = {0};
    struct pg_spool *s = NULL;
    struct pg_status st;
    uint64_t id;

    fresh_dir(dir, sizeof(dir));
    o.dir = dir;
    o.fsync = PG_SPOOL_FSYNC_INTERVAL;
    o.fsync_interval_ns = 1;
    CHECK_INT(pg_spool_open(&o, &s, &st), PG_ERR_OK);
    if (s != NULL) {
        CHECK_INT(pg_spool_append(s, "abc", 3, &id, &st), PG_ERR_OK);
        CHECK_INT(pg_spool_sync(s, true, &st), PG_ERR_OK);
        pg_spool_close(s);
    }
    o.dir = "/proc/self/definitely/not/here";
    CHECK_INT(pg_spool_open(&o, &s, &st), PG_ERR_IO);
    CHECK(strstr(st.msg, "cannot create directory") != NULL);
    o.dir = "";
    CHECK_INT(pg_spool_open(&o, &s, &st), PG_ERR_CONFIG);
}

PG_TEST(test_storage_registry)
{
    char dir[300], sub[400];
    struct pg_spool_options o = {0};
    struct pg_spool *s = NULL;
    struct pg_status st;
    uint64_t id;

    fresh_dir(dir, sizeof(dir));
    o.dir = dir;
    CHECK(pg_storage_register("file_storage/a", &o));
    CHECK(pg_storage_known("file_storage/a"));
    CHECK(!pg_storage_known("file_storage/b"));
    CHECK(strstr(pg_storage_ids(), "file_storage/a") != NULL);
    CHECK_INT(pg_storage_open("file_storage/b", "exporter/otlp", &s, &st), PG_ERR_CONFIG);
    CHECK(strstr(st.msg, "file_storage/b") != NULL);
    CHECK_INT(pg_storage_open("file_storage/a", "exporter/otlp/x", &s, &st), PG_ERR_OK);
    if (s != NULL) {
        CHECK_INT(pg_spool_append(s, "abc", 3, &id, &st), PG_ERR_OK);
        pg_storage_close(s);
    }
    snprintf(sub, sizeof(sub), "%s/exporter_otlp_x", dir);
    CHECK_INT(count_files(sub, ".seg"), 1);
    pg_storage_unregister("file_storage/a");
    CHECK(!pg_storage_known("file_storage/a"));
}


/* Every open failure through the registry returns (the registry lock is not
 * held while a spool opens and, on failure, closes) with a message
 * naming the path and the cause; none of them may block. */
PG_TEST(test_storage_open_failures)
{
    static const struct {
        const char *name;
        const char *want; /* in the message */
    } cases[] = {
        {"second_gateway", "locked by a running gateway"},
        {"lock_is_dir", "LOCK: it is a directory"},
        {"fifo_segment", "is a FIFO"},
        {"fifo_lock", "not a regular file"},
        {"proc", "/proc/exporter_otlp"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char dir[300], sub[400], path[500];
        struct pg_spool_options o = {.fsync = PG_SPOOL_FSYNC_ALWAYS, .log_name = "test/spool"};
        struct pg_spool *holder = NULL, *s = NULL;
        struct pg_status st;

        fresh_dir(dir, sizeof(dir));
        mkdir(dir, 0750);
        snprintf(sub, sizeof(sub), "%s/exporter_otlp", dir);
        mkdir(sub, 0750);
        o.dir = strcmp(cases[i].name, "proc") == 0 ? "/proc" : dir;
        CHECK(pg_storage_register("file_storage/f", &o));
        if (strcmp(cases[i].name, "second_gateway") == 0) {
            CHECK_INT(pg_storage_open("file_storage/f", "exporter/otlp", &holder, &st), PG_ERR_OK);
        } else if (strcmp(cases[i].name, "lock_is_dir") == 0) {
            snprintf(path, sizeof(path), "%s/LOCK", sub);
            CHECK(mkdir(path, 0750) == 0);
        } else if (strcmp(cases[i].name, "fifo_segment") == 0) {
            snprintf(path, sizeof(path), "%s/%016x.seg", sub, 3);
            CHECK(mkfifo(path, 0640) == 0);
        } else if (strcmp(cases[i].name, "fifo_lock") == 0) {
            snprintf(path, sizeof(path), "%s/LOCK", sub);
            CHECK(mkfifo(path, 0640) == 0);
        }
        pg_status_clear(&st);
        CHECK(pg_storage_open("file_storage/f", "exporter/otlp", &s, &st) != PG_ERR_OK);
        CHECK(s == NULL);
        if (strstr(st.msg, cases[i].want) == NULL) {
            fprintf(stderr, "  %s: got \"%s\"\n", cases[i].name, st.msg);
            CHECK(strstr(st.msg, cases[i].want) != NULL);
        }
        /* The registry still works after the failure (its lock was released). */
        CHECK(pg_storage_known("file_storage/f"));
        pg_storage_sync_all();
        pg_storage_close(holder);
        pg_storage_unregister("file_storage/f");
    }
}

static bool add_ack(const char *dir, unsigned seq, uint64_t id)
{
    char path[400];
    uint8_t ack[PG_SPOOL_ACK_SIZE];
    uint32_t c;
    int fd;
    bool ok;

    memcpy(ack, "PGA1", 4);
    for (int i = 0; i < 8; i++) {
        ack[8 + i] = (uint8_t)(id >> (8 * i));
    }
    c = (uint32_t)crc32(0L, ack + 8, 8);
    for (int i = 0; i < 4; i++) {
        ack[4 + i] = (uint8_t)(c >> (8 * i));
    }
    snprintf(path, sizeof(path), "%s/%016x.ack", dir, seq);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0640);
    ok = fd >= 0 && write(fd, ack, sizeof(ack)) == (ssize_t)sizeof(ack);
    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

/* A spool in @dir (made fresh, @cap bytes) of twelve 88-byte records in six
 * segments that rotate past 100 bytes: ids 1-2 in segment 1, 3-4 in 2, ...
 * 11-12 in 6. Closed again; false (after a failed check) if it could not be
 * written. */
static bool spool_of_twelve(char *dir, size_t cap)
{
    struct pg_spool *s;
    struct pg_status st;
    uint64_t id;
    char buf[64];

    fresh_dir(dir, cap);
    s = open_dir(dir, 0, 100);
    CHECK(s != NULL);
    if (s == NULL) {
        return false;
    }
    memset(buf, 'x', sizeof(buf));
    for (int i = 0; i < 12; i++) {
        CHECK_INT(pg_spool_append(s, buf, sizeof(buf), &id, &st), PG_ERR_OK);
    }
    pg_spool_close(s);
    return true;
}

/* Segments emptied outside the process: the records missing between their
 * neighbours' ids are counted as lost, minus those an ack log says were
 * delivered. */
PG_TEST(test_emptied_segment_reports_lost)
{
    char dir[300], path[400];
    struct pg_spool *s;
    struct pg_spool_stats ss;

    if (!spool_of_twelve(dir, sizeof(dir))) {
        return;
    }
    snprintf(path, sizeof(path), "%s/%016x.seg", dir, 3);
    CHECK(truncate(path, 0) == 0);
    snprintf(path, sizeof(path), "%s/%016x.seg", dir, 4);
    CHECK(truncate(path, 0) == 0);
    CHECK(add_ack(dir, 4, 8)); /* id 8 was delivered before segment 4 was emptied */
    s = open_dir(dir, 0, 100);
    CHECK(s != NULL);
    if (s != NULL) {
        pg_spool_get_stats(s, &ss);
        CHECK_INT(ss.lost, 3);
        CHECK_INT(ss.pending, 8);
        CHECK_INT(count_files(dir, ".seg"), 4); /* the emptied ones are removed */
        CHECK_INT(replay_all(s, -1, 0, NULL), 8);
        pg_spool_close(s);
    }
    /* Reported once: the next start sees no gap in consecutive segments. */
    s = open_dir(dir, 0, 100);
    CHECK(s != NULL);
    if (s != NULL) {
        pg_spool_get_stats(s, &ss);
        CHECK_INT(ss.lost, 0);
        pg_spool_close(s);
    }
}

/* An ack entry for @id in segment @seq's ack log (appended). */
/* Segments cut short or emptied: the number of records lost. Between two
 * segments the next one's first id makes it exact; at the end of the spool
 * only a surviving header of the cut record and acks past the last record
 * tell, so that count is a lower bound. 88-byte records, two per segment:
 * ids 1-2 in segment 1 ... 11-12 in segment 6. */
PG_TEST(test_cut_and_emptied_segments_counted)
{
    static const struct {
        const char *name;
        unsigned seq;        /* segment to damage */
        long keep;           /* bytes kept (truncate) */
        unsigned seq2;       /* a second segment emptied, 0 = none */
        unsigned ack_seq;    /* ack log to write, 0 = none */
        uint64_t ack_id;
        uint64_t lost;       /* stats.lost after open */
        uint64_t pending;
    } cases[] = {
        /* Record 12's header survives: at least 1 (exactly 1 here). */
        {"last segment cut in a payload", 6, 88 + 40, 0, 0, 0, 1, 11},
        /* Only part of record 12's header left: nothing identifies it. */
        {"last segment cut in a header", 6, 88 + 10, 0, 0, 0, 0, 11},
        /* Its ack log says 12 was delivered: 11 is lost. */
        {"last segment emptied, ack log", 6, 0, 0, 6, 12, 1, 10},
        {"last segment emptied, no trace", 6, 0, 0, 0, 0, 0, 10},
        /* Exact: segment 4 starts at id 7, so only 6 is missing. */
        {"middle segment cut", 3, 88 + 40, 0, 0, 0, 1, 11},
        {"middle segment emptied", 3, 0, 0, 0, 0, 2, 10},
        /* 9, 10, 12 are gone; the ack for 11 shows 9 and 10 (a lower bound). */
        {"last two emptied, ack of 11", 5, 0, 6, 6, 11, 2, 8},
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char dir[300], path[400];
        struct pg_spool *s;
        struct pg_spool_stats ss;

        if (!spool_of_twelve(dir, sizeof(dir))) {
            return;
        }
        snprintf(path, sizeof(path), "%s/%016x.seg", dir, cases[c].seq);
        CHECK(truncate(path, cases[c].keep) == 0);
        if (cases[c].seq2 != 0) {
            snprintf(path, sizeof(path), "%s/%016x.seg", dir, cases[c].seq2);
            CHECK(truncate(path, 0) == 0);
        }
        if (cases[c].ack_seq != 0) {
            CHECK(add_ack(dir, cases[c].ack_seq, cases[c].ack_id));
        }
        s = open_dir(dir, 0, 100);
        CHECK(s != NULL);
        if (s == NULL) {
            return;
        }
        pg_spool_get_stats(s, &ss);
        if (ss.lost != cases[c].lost || ss.pending != cases[c].pending) {
            fprintf(stderr, "  %s: lost %llu (want %llu), pending %llu (want %llu)\n",
                    cases[c].name, (unsigned long long)ss.lost,
                    (unsigned long long)cases[c].lost, (unsigned long long)ss.pending,
                    (unsigned long long)cases[c].pending);
        }
        CHECK_INT(ss.lost, cases[c].lost);
        CHECK_INT(ss.pending, cases[c].pending);
        CHECK_INT(replay_all(s, -1, 0, NULL), cases[c].pending);
        pg_spool_close(s);
        rm_rf(dir);
    }
}

static void cleanup(void)
{
    if (tmp_root[0] != '\0') {
        rm_rf(tmp_root);
    }
}

static void test_cleanup(void)
{
    cleanup();
}

PG_TEST_MAIN(PG_CASE(test_roundtrip_restart_ack), PG_CASE(test_segments_compaction),
             PG_CASE(test_parse_truncation_every_offset), PG_CASE(test_open_truncated_every_offset),
             PG_CASE(test_parse_every_bit_flip), PG_CASE(test_open_bit_flips_and_garbage),
             PG_CASE(test_cap_busy_then_frees), PG_CASE(test_lock_second_process),
             PG_CASE(test_interval_fsync_and_bad_dir), PG_CASE(test_storage_registry),
             PG_CASE(test_storage_open_failures), PG_CASE(test_emptied_segment_reports_lost),
             PG_CASE(test_cut_and_emptied_segments_counted),
             PG_CASE(test_cleanup))
