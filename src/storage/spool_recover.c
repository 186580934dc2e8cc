/* SPDX-License-Identifier: Apache-2.0
 * Recovery at open: scans the spool directory, indexes each segment left by
 * an earlier run (skipping torn or damaged records, resynchronising on the
 * next intact header), loads its ack logs and reports what was lost. */
#include "storage/spool.h"
#include "storage/spool_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "core/clock.h"
#include "core/log.h"
#include "storage/storage.h"
#include "core/vec.h"

/* Reads the ack log of @g whole (it is 16 bytes per delivered record). */
static int read_small(int fd, uint8_t **out, size_t *len)
{
    struct stat sb;
    uint8_t *buf;
    size_t got = 0;

    *out = NULL;
    *len = 0;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        return -1;
    }
    buf = malloc((size_t)sb.st_size + 1);
    if (buf == NULL) {
        return -1;
    }
    while (got < (size_t)sb.st_size) {
        ssize_t r = pread(fd, buf + got, (size_t)sb.st_size - got, (off_t)got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break; /* shrank underneath us: use what we have */
        }
        got += (size_t)r;
    }
    *out = buf;
    *len = got;
    return 0;
}

static int rec_cmp(const void *a, const void *b)
{
    const struct pg_spool_rec *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Applies a segment's ack log; a damaged entry is skipped byte by byte. Acks
 * for ids the segment no longer holds (emptied or cut short) are counted in
 * g->orphan_acks: those records were delivered, not lost. */
static void load_acks(struct pg_spool *s, struct pg_spool_seg *g)
{
    char path[4096];
    int fd;
    uint8_t *buf;
    size_t len, off = 0;

    pg_spool_seg_path(s, g->seq, "ack", path, sizeof(path));
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        return;
    }
    if (read_small(fd, &buf, &len) != 0) {
        close(fd);
        return;
    }
    close(fd);
    while (off + PG_SPOOL_ACK_SIZE <= len) {
        const uint8_t *p = buf + off;
        if (pg_spool_get32(p) == PG_SPOOL_ACK_MAGIC &&
            pg_spool_get32(p + 4) == (uint32_t)crc32(0L, p + 8, 8)) {
            struct pg_spool_rec *r = pg_spool_rec_find(g, pg_spool_get64(p + 8));
            if (r != NULL && !r->acked) {
                r->acked = true;
                g->n_acked++;
            } else if (r == NULL) {
                uint64_t aid = pg_spool_get64(p + 8);
                g->orphan_acks++;
                if (g->n == 0 || aid > g->recs[g->n - 1].id) {
                    g->orphan_above++;
                    g->orphan_hi = aid > g->orphan_hi ? aid : g->orphan_hi;
                }
            }
            off += PG_SPOOL_ACK_SIZE;
        } else {
            off++;
        }
    }
    free(buf);
}


#define SCAN_CHUNK (1u << 20) /* resynchronisation reads this much at a time */

/* After a damaged header at @from: the offset of the next header whose own
 * checksum holds, or @size when there is none. Reads the file in bounded
 * chunks (overlapping by a header) so a huge damaged segment never sits in
 * memory whole. */
static bool stopped(const struct pg_spool *s)
{
    return s->stop != NULL && __atomic_load_n(s->stop, __ATOMIC_RELAXED);
}

static uint64_t resync(const struct pg_spool *s, int fd, uint64_t from, uint64_t size,
                       uint8_t *chunk)
{
    uint64_t base = from;

    while (base + PG_SPOOL_HDR_SIZE <= size && !stopped(s)) {
        size_t n = size - base < SCAN_CHUNK ? (size_t)(size - base) : SCAN_CHUNK;
        if (!pg_spool_pread_full(fd, chunk, n, base)) {
            return size;
        }
        for (size_t p = 0; p + PG_SPOOL_HDR_SIZE <= n; p++) {
            if (pg_spool_header_ok(chunk + p) &&
                pg_spool_get32(chunk + p + 4) <= PG_SPOOL_MAX_RECORD) {
                return base + p;
            }
        }
        if (base + n >= size) {
            break;
        }
        base += n - (PG_SPOOL_HDR_SIZE - 1);
    }
    return size;
}

/* Indexes a segment by walking its record headers (24 bytes each, found by
 * their lengths): start-up reads O(records), not O(bytes), and never holds a
 * segment in memory. Payload checksums are verified when a record is read
 * back for sending (pg_spool_next_replay), where a mismatch is skipped and
 * counted like damage found here. */
static enum pg_err index_segment(struct pg_spool *s, struct pg_spool_seg *g, const char *path,
                                 uint64_t size, struct pg_spool_parse_stats *ps,
                                 struct pg_status *st)
{
    uint64_t off = 0;
    uint8_t hdr[PG_SPOOL_HDR_SIZE];
    uint8_t *chunk = NULL;

    memset(ps, 0, sizeof(*ps));
    while (off < size) {
        if (stopped(s)) {
            free(chunk);
            return pg_status_set(st, PG_ERR_IO, "spool: recovery stopped by shutdown");
        }
        uint32_t rlen;

        if (size - off < PG_SPOOL_HDR_SIZE) {
            ps->truncated = 1;
            break;
        }
        if (!pg_spool_pread_full(g->fd, hdr, sizeof(hdr), off)) {
            int e = errno;
            free(chunk);
            return pg_status_set(st, PG_ERR_IO, "spool: cannot read %s: %s", path,
                                 e ? strerror(e) : "short read");
        }
        if (!pg_spool_header_ok(hdr) || pg_spool_get32(hdr + 4) > PG_SPOOL_MAX_RECORD) {
            ps->corrupt++;
            if (chunk == NULL && (chunk = malloc(SCAN_CHUNK)) == NULL) {
                return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory indexing %s", path);
            }
            off = resync(s, g->fd, off + 1, size, chunk);
            continue;
        }
        rlen = pg_spool_get32(hdr + 4);
        if (rlen > size - off - PG_SPOOL_HDR_SIZE) {
            ps->truncated = 1; /* the header is intact, the payload is not all there */
            g->cut_id = pg_spool_get64(hdr + 8);
            break;
        }
        if (!pg_spool_rec_push(g, pg_spool_get64(hdr + 8), off, rlen)) {
            free(chunk);
            return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory indexing %s", path);
        }
        ps->records++;
        off += PG_SPOOL_HDR_SIZE + (uint64_t)rlen;
        ps->valid_end = (size_t)off;
    }
    free(chunk);
    return PG_ERR_OK;
}

static enum pg_err load_segment(struct pg_spool *s, uint64_t seq, struct pg_status *st)
{
    char path[4096];
    struct pg_spool_seg *g = pg_spool_seg_new(seq);
    struct pg_spool_parse_stats ps;
    struct stat sb;
    enum pg_err err;

    if (g == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory indexing %s", s->dir);
    }
    pg_spool_seg_path(s, seq, "seg", path, sizeof(path));
    /* O_NONBLOCK: a FIFO planted under a segment's name must not hang the
     * start; anything but a regular file is refused below with its type. */
    g->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (g->fd < 0) {
        int e = errno;
        pg_spool_seg_free(g);
        return pg_status_set(st, PG_ERR_IO, "spool: cannot open segment %s: %s", path,
                             e == ELOOP ? "it is a symbolic link" : strerror(e));
    }
    if (fstat(g->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        const char *what = S_ISFIFO(sb.st_mode) ? "a FIFO"
                           : S_ISDIR(sb.st_mode) ? "a directory"
                           : S_ISSOCK(sb.st_mode) ? "a socket"
                                                  : "not a regular file";
        pg_spool_seg_free(g);
        return pg_status_set(st, PG_ERR_IO,
                             "spool: segment %s is %s, not a regular file; remove it or point "
                             "file_storage at another directory", path, what);
    }
    err = index_segment(s, g, path, (uint64_t)sb.st_size, &ps, st);
    if (err != PG_ERR_OK) {
        pg_spool_seg_free(g);
        return err;
    }
    if (g->n > 1) {
        qsort(g->recs, g->n, sizeof(*g->recs), rec_cmp);
    }
    g->bytes = (uint64_t)sb.st_size;
    g->old = true;
    if (ps.corrupt || ps.truncated) {
        pg_log_warn(pg_spool_lname(s),
                    "spool segment %s: %" PRIu64 " valid records; skipped %" PRIu64
                    " corrupt region(s)%s; the skipped data is lost",
                    path, ps.records, ps.corrupt,
                    ps.truncated ? " and a record cut short at the end (the number of records "
                                   "lost follows)" : "");
    }
    g->damaged = ps.corrupt > 0 || ps.truncated > 0 || g->n == 0;
    s->stats.corrupt += ps.corrupt;
    s->stats.truncated += ps.truncated;
    for (size_t i = 0; i < g->n; i++) {
        if (g->recs[i].id >= s->next_id) {
            s->next_id = g->recs[i].id + 1;
        }
    }
    load_acks(s, g);
    if (!pg_spool_segs_push(s, g)) {
        pg_spool_seg_free(g);
        return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory indexing %s", s->dir);
    }
    s->stats.segments++;
    s->stats.disk_bytes += g->bytes;
    for (size_t i = 0; i < g->n; i++) {
        if (!g->recs[i].acked) {
            s->stats.pending++;
            s->stats.replay_pending++;
            s->stats.pending_bytes += g->recs[i].len;
        }
    }
    return PG_ERR_OK;
}

/* The end of a chain of consecutive segments (no later segment to compare
 * ids with): if it was cut short or emptied, only its own traces tell what
 * is gone: the id of a record whose header survived the cut, and acks for
 * ids past the last record found. Records from the highest such id on left
 * no trace, so the count is a lower bound, and the log says so. */
static void report_tail(struct pg_spool *s, uint64_t last_id, uint64_t hi, uint64_t acked,
                        const struct pg_spool_seg *damaged)
{
    char path[4096];
    uint64_t lost;

    if (damaged == NULL) {
        return;
    }
    pg_spool_seg_path(s, damaged->seq, "seg", path, sizeof(path));
    if (hi <= last_id) {
        pg_log_warn(pg_spool_lname(s),
                    "spool %s: segment %s ends %s; how many records it lost cannot be told "
                    "(no later segment or ack records their ids): at least 0. If the gateway "
                    "was killed while writing, the record being written was never answered 204",
                    s->dir, path, damaged->n == 0 ? "empty" : "cut short");
        return;
    }
    lost = hi - last_id > acked ? hi - last_id - acked : 0;
    s->stats.lost += lost;
    pg_log_error(pg_spool_lname(s),
                 "spool %s: at least %" PRIu64 " record(s) (ids %" PRIu64 "..%" PRIu64 ", "
                 "%" PRIu64 " of those delivered before) are missing from %s on (%s, at the end "
                 "of the spool); a lower bound: any records after id %" PRIu64 " left no trace. "
                 "A record being written when the gateway was killed was never answered 204",
                 s->dir, lost, last_id + 1, hi, acked, path,
                 damaged->n == 0 ? "emptied" : "cut short", hi);
}

/* Ids are consecutive across segments of consecutive sequence numbers (each
 * segment is filled in order before the next is created, and a new run
 * continues after the highest id left). So a gap between two such segments
 * is records that were there and are gone: an emptied segment, a cut tail;
 * that count is exact. Acks found for missing ids were delivered; the rest
 * is reported as lost. The end of each chain goes to report_tail(). */
static void report_lost(struct pg_spool *s)
{
    bool have_prev = false, have_max = false; /* have_max: a record earlier in this chain */
    uint64_t prev_max = 0, prev_seq = 0, orphans = 0;
    uint64_t tail_hi = 0, tail_acked = 0; /* traces past prev_max (report_tail) */
    struct pg_spool_seg *first_damaged = NULL;

    for (size_t i = 0; i < s->n_segs; i++) {
        struct pg_spool_seg *g = s->segs[i];
        bool chain = have_prev && g->seq == prev_seq + 1;

        if (!chain) {
            if (have_max) {
                report_tail(s, prev_max, tail_hi, tail_acked, first_damaged);
            }
            orphans = 0;
            first_damaged = NULL;
            prev_max = 0;
            have_max = false;
            tail_hi = tail_acked = 0;
        }
        if ((g->damaged || g->n == 0) && first_damaged == NULL) {
            first_damaged = g;
        }
        /* Acks for ids before this segment's first record fill the gap. */
        orphans += g->orphan_acks - g->orphan_above;
        if (g->n == 0) {
            orphans += g->orphan_above;
        }
        if (g->n > 0) {
            uint64_t lo = g->recs[0].id;
            if (chain && have_max && lo > prev_max + 1) {
                uint64_t gap = lo - prev_max - 1;
                uint64_t lost = gap > orphans ? gap - orphans : 0;
                if (lost > 0) {
                    char path[4096];
                    pg_spool_seg_path(s, first_damaged != NULL ? first_damaged->seq : prev_seq,
                        "seg",
                             path, sizeof(path));
                    pg_log_error(pg_spool_lname(s),
                                 "spool %s: %" PRIu64 " record(s) (ids %" PRIu64 "..%" PRIu64
                                 ") are missing, from %s on (emptied or cut short outside "
                                 "this process); %" PRIu64 " of the gap were delivered before; the "
                                 "missing ones are lost (an exact count: the next segment's "
                                 "first id bounds the gap)",
                                 s->dir, lost, prev_max + 1, lo - 1, path, gap - lost);
                    s->stats.lost += lost;
                }
            }
            prev_max = g->recs[g->n - 1].id;
            have_max = true;
            /* What lies past its last record counts for the next gap or the tail. */
            orphans = g->orphan_above;
            tail_acked = g->orphan_above;
            tail_hi = g->orphan_hi > g->cut_id ? g->orphan_hi : g->cut_id;
            first_damaged = g->damaged ? g : NULL;
        } else {
            tail_acked += g->orphan_above;
            tail_hi = g->orphan_hi > tail_hi ? g->orphan_hi : tail_hi;
            tail_hi = g->cut_id > tail_hi ? g->cut_id : tail_hi;
        }
        if (g->n == 0 && g->bytes == 0) {
            char path[4096];
            pg_spool_seg_path(s, g->seq, "seg", path, sizeof(path));
            pg_log_warn(pg_spool_lname(s),
                "spool segment %s is empty (%" PRIu64 " delivered record(s) "
                        "recorded in its ack log)", path, g->orphan_acks);
        }
        have_prev = true;
        prev_seq = g->seq;
    }
    if (have_max) {
        report_tail(s, prev_max, tail_hi, tail_acked, first_damaged);
    }
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The segment files in @s->dir: ascending sequence numbers (owned by the
 * caller) and their total size. */
static enum pg_err list_dir(struct pg_spool *s, uint64_t **out, size_t *n_out, uint64_t *bytes,
                            struct pg_status *st)
{
    DIR *d = opendir(s->dir);
    struct dirent *de;
    uint64_t *seqs = NULL;
    size_t n = 0, cap = 0;

    *out = NULL;
    *n_out = 0;
    *bytes = 0;
    if (d == NULL) {
        return pg_status_set(st, PG_ERR_IO, "spool: cannot list %s: %s", s->dir, strerror(errno));
    }
    while ((de = readdir(d)) != NULL) {
        char *end;
        uint64_t seq;
        struct stat sb;

        if (strlen(de->d_name) != 20 || strcmp(de->d_name + 16, ".seg") != 0) {
            continue;
        }
        errno = 0;
        seq = strtoull(de->d_name, &end, 16);
        if (errno != 0 || end != de->d_name + 16) {
            continue;
        }
        if (!PG_VEC_GROW(NULL, seqs, cap, n, 16, 0)) {
            free(seqs);
            closedir(d);
            return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory listing %s", s->dir);
        }
        seqs[n++] = seq;
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode)) {
            *bytes += (uint64_t)sb.st_size;
        }
    }
    closedir(d);
    if (n > 1) {
        qsort(seqs, n, sizeof(*seqs), u64_cmp);
    }
    *out = seqs;
    *n_out = n;
    return PG_ERR_OK;
}

/* Indexes the listed segments into @s, reports what is lost and drops the
 * segments whose every record was delivered. */
static enum pg_err load_listed(struct pg_spool *s, const uint64_t *seqs, size_t n,
                               struct pg_status *st)
{
    enum pg_err err = PG_ERR_OK;

    for (size_t i = 0; i < n && err == PG_ERR_OK; i++) {
        err = load_segment(s, seqs[i], st);
        if (seqs[i] >= s->next_seq) {
            s->next_seq = seqs[i] + 1;
        }
    }
    if (err == PG_ERR_OK) {
        report_lost(s);
        /* Only now: an empty segment still told report_lost() about its gap. */
        for (size_t i = 0; i < s->n_segs; i++) {
            if (s->segs[i]->n_acked == s->segs[i]->n) {
                pg_spool_seg_remove(s, i);
                i--;
            }
        }
    }
    return err;
}

enum pg_err pg_spool_scan_dir(struct pg_spool *s, struct pg_status *st)
{
    uint64_t *seqs, bytes;
    size_t n;
    enum pg_err err = list_dir(s, &seqs, &n, &bytes, st);

    if (err == PG_ERR_OK) {
        err = load_listed(s, seqs, n, st);
    }
    free(seqs);
    return err;
}

/* ---- background recovery ----------------------------------------------- */

/* Spools at least this large are indexed on a thread (a damaged 3 GiB
 * segment took 85 s, all of it before the receiver listened). */
#define ASYNC_SCAN_BYTES (64ull << 20)

struct recover_job {
    struct pg_spool *s;    /* borrowed: joined before it is closed */
    struct pg_spool shadow; /* indexed here, merged into s at the end */
    uint64_t *seqs;        /* owned */
    size_t n;
};

/* An id above every id the listed segments can hold, read cheaply: the first
 * record of the newest segment with an intact first header, plus as many
 * records as the bytes from there on could hold, and the newest ack log's
 * ids (records cut off after they were delivered). The wall clock in ns is
 * a floor, so a run after this one, which continues from the highest id it
 * finds, still stays above it. */
static uint64_t id_bound(struct pg_spool *s, const uint64_t *seqs, size_t n)
{
    struct timespec ts;
    uint64_t bound = 1, tail_bytes = 0;

    clock_gettime(CLOCK_REALTIME, &ts);
    bound = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    for (size_t i = n; i-- > 0;) {
        char path[4096];
        uint8_t hdr[PG_SPOOL_HDR_SIZE];
        struct stat sb;
        int fd;

        pg_spool_seg_path(s, seqs[i], "seg", path, sizeof(path));
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0) {
            continue;
        }
        if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
            tail_bytes += (uint64_t)sb.st_size;
            if (pg_spool_pread_full(fd, hdr, sizeof(hdr), 0) && pg_spool_header_ok(hdr)) {
                uint64_t b = pg_spool_get64(hdr + 8) + tail_bytes / PG_SPOOL_HDR_SIZE + 1;

                bound = b > bound ? b : bound;
                close(fd);
                break;
            }
        }
        close(fd);
    }
    if (n > 0) {
        struct pg_spool_seg probe = {.seq = seqs[n - 1]};

        load_acks(s, &probe); /* no records: every ack counts as orphan_hi */
        bound = probe.orphan_hi + 1 > bound ? probe.orphan_hi + 1 : bound;
    }
    return bound;
}

static void *recover_main(void *arg)
{
    struct recover_job *j = arg;
    struct pg_spool *s = j->s, *sh = &j->shadow;
    struct pg_status st;
    enum pg_err err;
    int64_t t0 = pg_mono_ns();

    pg_status_clear(&st);
    err = load_listed(sh, j->seqs, j->n, &st);
    pthread_mutex_lock(&s->mu);
    if (err == PG_ERR_OK && __atomic_load_n(&s->recover_stop, __ATOMIC_RELAXED)) {
        err = pg_status_set(&st, PG_ERR_IO, "stopped by shutdown");
    }
    if (err == PG_ERR_OK) {
        struct pg_spool_seg **all = calloc(sh->n_segs + s->n_segs + 1, sizeof(*all));

        if (all != NULL) {
            /* Earlier segments have lower sequence numbers: they go first. */
            memcpy(all, sh->segs, sh->n_segs * sizeof(*all));
            memcpy(all + sh->n_segs, s->segs, s->n_segs * sizeof(*all));
            free(s->segs);
            s->segs = all;
            s->n_segs += sh->n_segs;
            s->cap_segs = s->n_segs + 1;
            free(sh->segs);
            sh->segs = NULL;
            sh->n_segs = 0;
            s->stats.pending += sh->stats.pending;
            s->stats.replay_pending += sh->stats.replay_pending;
            s->stats.pending_bytes += sh->stats.pending_bytes;
            s->stats.segments += sh->stats.segments;
            s->stats.corrupt += sh->stats.corrupt;
            s->stats.truncated += sh->stats.truncated;
            s->stats.lost += sh->stats.lost;
            s->stats.disk_bytes += sh->stats.disk_bytes;
        } else {
            err = pg_status_set(&st, PG_ERR_NOMEM, "spool: out of memory merging the recovery");
        }
    }
    if (err == PG_ERR_OK) {
        pg_log_info(pg_spool_lname(s),
                    "spool %s: background recovery done in %.1fs: %" PRIu64 " record(s) (%" PRIu64
                    " bytes) to replay; %" PRIu64 " corrupt, %" PRIu64 " truncated skipped",
                    s->dir, (double)(pg_mono_ns() - t0) / 1e9, s->stats.replay_pending,
                    s->stats.pending_bytes, s->stats.corrupt, s->stats.truncated);
    } else {
        /* Not deleted: the files stay for the next start. */
        pg_log_error(pg_spool_lname(s), "spool %s: background recovery ended: %s; the earlier "
                     "run's records stay on disk for the next start", s->dir,
                     pg_status_text(&st));
    }
    __atomic_store_n(&s->recovering, false, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < sh->n_segs; i++) {
        pg_spool_seg_free(sh->segs[i]);
    }
    free(sh->segs);
    pthread_mutex_destroy(&sh->mu);
    free(j->seqs);
    free(j);
    return NULL;
}

enum pg_err pg_spool_recover(struct pg_spool *s, struct pg_status *st)
{
    uint64_t *seqs, bytes;
    size_t n;
    enum pg_err err = list_dir(s, &seqs, &n, &bytes, st);
    struct recover_job *j;

    if (err != PG_ERR_OK) {
        return err;
    }
    if (bytes < ASYNC_SCAN_BYTES || (j = calloc(1, sizeof(*j))) == NULL) {
        err = load_listed(s, seqs, n, st);
        free(seqs);
        return err;
    }
    j->s = s;
    j->seqs = seqs;
    j->n = n;
    pthread_mutex_init(&j->shadow.mu, NULL);
    j->shadow.dir = s->dir;
    j->shadow.log_name = s->log_name;
    j->shadow.lock_fd = -1;
    j->shadow.dir_fd = s->dir_fd;
    j->shadow.next_id = 1;
    j->shadow.next_seq = 1;
    j->shadow.stop = &s->recover_stop;
    /* New records: ids above every earlier one, and a sequence gap so the
     * next start does not read the id jump as lost records. */
    s->next_id = id_bound(s, seqs, n);
    s->next_seq = (n > 0 ? seqs[n - 1] : 0) + 2;
    /* The earlier bytes count against max_size once indexed (what is left
     * of them: a damaged region is dropped): until then the cap holds for
     * this run's data, so a huge earlier spool does not refuse new data. */
    __atomic_store_n(&s->recovering, true, __ATOMIC_RELEASE);
    if (pthread_create(&s->recover_thread, NULL, recover_main, j) != 0) {
        __atomic_store_n(&s->recovering, false, __ATOMIC_RELEASE);
        pthread_mutex_destroy(&j->shadow.mu);
        free(j);
        s->next_id = 1;
        s->next_seq = 1;
        err = load_listed(s, seqs, n, st);
        free(seqs);
        return err;
    }
    s->recover_started = true;
    pg_log_info(pg_spool_lname(s),
                "spool %s: %zu segment(s), %" PRIu64 " bytes from an earlier run: indexed in "
                "the background; new data is accepted meanwhile (ids from %" PRIu64
                "), the earlier records are replayed when the scan ends",
                s->dir, n, bytes, s->next_id);
    return PG_ERR_OK;
}

void pg_spool_recover_join(struct pg_spool *s)
{
    if (s->recover_started) {
        __atomic_store_n(&s->recover_stop, true, __ATOMIC_RELAXED);
        pthread_join(s->recover_thread, NULL);
        s->recover_started = false;
    }
}

bool pg_spool_recovering(struct pg_spool *s)
{
    return s != NULL && __atomic_load_n(&s->recovering, __ATOMIC_ACQUIRE);
}
