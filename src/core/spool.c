/* SPDX-License-Identifier: Apache-2.0
 * The append-only, checksummed spool (see spool.h for the format). Old
 * segments are read-only after open; this run appends to fresh segments, so
 * a torn tail left by a crash is never written over, only skipped. Acks go to
 * a small per-segment log without fsync: losing one costs a duplicate
 * delivery after a crash, never a loss. */
#include "core/spool.h"

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
#include "core/storage.h"
#include "core/vec.h"

#define DEFAULT_MAX_BYTES (1ull << 30)
#define DEFAULT_SEGMENT_BYTES (8ull << 20)
#define DEFAULT_FSYNC_INTERVAL_NS 1000000000ll

struct rec {
    uint64_t id;
    uint64_t off;  /* header offset in the segment file */
    uint32_t len;  /* payload length */
    bool acked;
};

struct seg {
    uint64_t seq;
    int fd;            /* O_RDWR; the active segment is appended to with pwritev */
    int ack_fd;        /* opened on the first ack; -1 until then */
    uint64_t bytes;    /* file size (valid prefix for old segments counts whole file) */
    struct rec *recs;  /* owned; ascending ids */
    size_t n, cap;
    size_t n_acked;
    bool old;          /* found at open: replayable */
    bool damaged;      /* found at open with corrupt/truncated data, or empty */
    uint64_t orphan_acks; /* acks in its log for ids no longer in the file */
    uint64_t orphan_above; /* of those, ids past its last record (all when empty) */
    uint64_t orphan_hi;    /* the highest such id, 0 when none */
    uint64_t cut_id;       /* id of a record cut short at the end (intact header), 0 = none */
};

struct pg_spool {
    pthread_mutex_t mu;
    char *dir;        /* owned */
    char *log_name;   /* owned */
    int lock_fd;
    int dir_fd;
    uint64_t max_bytes, segment_bytes;
    enum pg_spool_fsync fsync;
    int64_t fsync_interval_ns;
    int64_t last_sync_ns;
    bool dirty;
    struct seg **segs;  /* owned; ascending seq */
    size_t n_segs, cap_segs;
    struct seg *active; /* one of segs, or NULL before the first append */
    uint64_t next_id, next_seq;
    uint64_t boot_id;   /* ids below this were found at open */
    struct pg_spool_stats stats;
};

/* ---- little helpers ----------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* crc32 over (length, id) then the payload: what the record crc covers. */
static uint32_t body_crc(uint32_t len, uint64_t id, const void *payload)
{
    uint8_t lid[12];
    uLong c;

    put32(lid, len);
    put64(lid + 4, id);
    c = crc32(0L, lid, sizeof(lid));
    /* zlib takes uInt lengths; records are bounded by PG_SPOOL_MAX_RECORD. */
    c = crc32(c, payload, (uInt)len);
    return (uint32_t)c;
}

void pg_spool_encode_header(uint8_t *hdr, uint64_t id, const void *payload, size_t len)
{
    put32(hdr, PG_SPOOL_MAGIC);
    put32(hdr + 4, (uint32_t)len);
    put64(hdr + 8, id);
    put32(hdr + 16, body_crc((uint32_t)len, id, payload));
    put32(hdr + 20, (uint32_t)crc32(0L, hdr, 20));
}

static bool header_ok(const uint8_t *p)
{
    return get32(p) == PG_SPOOL_MAGIC && get32(p + 20) == (uint32_t)crc32(0L, p, 20);
}

/* ---- parser ------------------------------------------------------------- */

void pg_spool_parse(const uint8_t *buf, size_t len, pg_spool_record_fn fn, void *arg,
                    struct pg_spool_parse_stats *ps)
{
    size_t off = 0;

    memset(ps, 0, sizeof(*ps));
    while (off < len) {
        size_t rest = len - off;
        uint32_t rlen;
        uint64_t id;

        if (rest < PG_SPOOL_HDR_SIZE) {
            ps->truncated = 1; /* a header cut short by a crash */
            break;
        }
        if (!header_ok(buf + off) || get32(buf + off + 4) > PG_SPOOL_MAX_RECORD) {
            /* Damaged header: its length cannot be trusted. Resynchronise on
             * the next header whose own checksum holds. */
            size_t p = off + 1;
            ps->corrupt++;
            while (p + PG_SPOOL_HDR_SIZE <= len &&
                   !(header_ok(buf + p) && get32(buf + p + 4) <= PG_SPOOL_MAX_RECORD)) {
                p++;
            }
            if (p + PG_SPOOL_HDR_SIZE > len) {
                break; /* nothing valid after the damage */
            }
            off = p;
            continue;
        }
        rlen = get32(buf + off + 4);
        id = get64(buf + off + 8);
        if (rlen > rest - PG_SPOOL_HDR_SIZE) {
            ps->truncated = 1; /* the header is intact, the payload is not all there */
            break;
        }
        if (get32(buf + off + 16) != body_crc(rlen, id, buf + off + PG_SPOOL_HDR_SIZE)) {
            ps->corrupt++; /* payload damaged; the length is trusted (header crc) */
        } else {
            ps->records++;
            if (fn != NULL) {
                fn(arg, id, off, buf + off + PG_SPOOL_HDR_SIZE, rlen);
            }
            ps->valid_end = off + PG_SPOOL_HDR_SIZE + rlen;
        }
        off += PG_SPOOL_HDR_SIZE + (size_t)rlen;
    }
}

/* ---- segments ----------------------------------------------------------- */

const char *pg_spool_log_name(const struct pg_spool *s)
{
    return s->log_name != NULL ? s->log_name : "spool";
}

static const char *lname(const struct pg_spool *s)
{
    return pg_spool_log_name(s);
}

/* Cuts a torn tail off after a failed write; if even that fails the tail
 * stays and replay's checksum skips it, so it is only worth a warning. */
static void cut_back(const struct pg_spool *s, int fd, off_t len)
{
    if (ftruncate(fd, len) != 0) {
        pg_log_warn(lname(s), "cannot cut a torn record off the spool: %s", strerror(errno));
    }
}

static void seg_path(const struct pg_spool *s, uint64_t seq, const char *ext, char *out,
                     size_t cap)
{
    snprintf(out, cap, "%s/%016" PRIx64 ".%s", s->dir, seq, ext);
}

static bool rec_push(struct seg *g, uint64_t id, uint64_t off, uint32_t len)
{
    if (!PG_VEC_GROW(NULL, g->recs, g->cap, g->n, 16, 0)) {
        return false;
    }
    g->recs[g->n++] = (struct rec){id, off, len, false};
    return true;
}

/* Index of the first record of @g (ids ascending) whose id is >= @id; g->n
 * when there is none. Binary search: replay stays linear overall. */
static size_t rec_lower_bound(const struct seg *g, uint64_t id)
{
    size_t lo = 0, hi = g->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->recs[mid].id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static struct rec *rec_find(struct seg *g, uint64_t id)
{
    size_t lo = rec_lower_bound(g, id);

    return lo < g->n && g->recs[lo].id == id ? &g->recs[lo] : NULL;
}

static void seg_free(struct seg *g)
{
    if (g == NULL) {
        return;
    }
    if (g->fd >= 0) {
        close(g->fd);
    }
    if (g->ack_fd >= 0) {
        close(g->ack_fd);
    }
    free(g->recs);
    free(g);
}

static struct seg *seg_new(uint64_t seq)
{
    struct seg *g = calloc(1, sizeof(*g));
    if (g != NULL) {
        g->seq = seq;
        g->fd = -1;
        g->ack_fd = -1;
    }
    return g;
}

static bool segs_push(struct pg_spool *s, struct seg *g)
{
    if (!PG_VEC_GROW(NULL, s->segs, s->cap_segs, s->n_segs, 8, 0)) {
        return false;
    }
    s->segs[s->n_segs++] = g;
    return true;
}

/* Unlinks a segment and its ack log and drops it from the index. */
static void seg_remove(struct pg_spool *s, size_t idx)
{
    struct seg *g = s->segs[idx];
    char path[4096];

    seg_path(s, g->seq, "seg", path, sizeof(path));
    if (unlink(path) != 0 && errno != ENOENT) {
        pg_log_warn(lname(s), "cannot delete acknowledged segment %s: %s", path, strerror(errno));
    }
    seg_path(s, g->seq, "ack", path, sizeof(path));
    (void)unlink(path);
    s->stats.disk_bytes -= g->bytes;
    s->stats.segments--;
    if (g == s->active) {
        s->active = NULL;
    }
    seg_free(g);
    memmove(&s->segs[idx], &s->segs[idx + 1], (s->n_segs - idx - 1) * sizeof(*s->segs));
    s->n_segs--;
}

static void mark_acked(struct pg_spool *s, struct seg *g, struct rec *r)
{
    r->acked = true;
    g->n_acked++;
    s->stats.pending--;
    s->stats.pending_bytes -= r->len;
    if (g->old) {
        s->stats.replay_pending--;
    }
}

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
    const struct rec *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Applies a segment's ack log; a damaged entry is skipped byte by byte. Acks
 * for ids the segment no longer holds (emptied or cut short) are counted in
 * g->orphan_acks: those records were delivered, not lost. */
static void load_acks(struct pg_spool *s, struct seg *g)
{
    char path[4096];
    int fd;
    uint8_t *buf;
    size_t len, off = 0;

    seg_path(s, g->seq, "ack", path, sizeof(path));
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
        if (get32(p) == PG_SPOOL_ACK_MAGIC && get32(p + 4) == (uint32_t)crc32(0L, p + 8, 8)) {
            struct rec *r = rec_find(g, get64(p + 8));
            if (r != NULL && !r->acked) {
                r->acked = true;
                g->n_acked++;
            } else if (r == NULL) {
                uint64_t aid = get64(p + 8);
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

/* Reads exactly @n bytes at @off; false on a short read or an error. */
static bool pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        got += (size_t)r;
    }
    return true;
}

#define SCAN_CHUNK (1u << 20) /* resynchronisation reads this much at a time */

/* After a damaged header at @from: the offset of the next header whose own
 * checksum holds, or @size when there is none. Reads the file in bounded
 * chunks (overlapping by a header) so a huge damaged segment never sits in
 * memory whole. */
static uint64_t resync(int fd, uint64_t from, uint64_t size, uint8_t *chunk)
{
    uint64_t base = from;

    while (base + PG_SPOOL_HDR_SIZE <= size) {
        size_t n = size - base < SCAN_CHUNK ? (size_t)(size - base) : SCAN_CHUNK;
        if (!pread_full(fd, chunk, n, base)) {
            return size;
        }
        for (size_t p = 0; p + PG_SPOOL_HDR_SIZE <= n; p++) {
            if (header_ok(chunk + p) && get32(chunk + p + 4) <= PG_SPOOL_MAX_RECORD) {
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
static enum pg_err index_segment(struct pg_spool *s, struct seg *g, const char *path,
                                 uint64_t size, struct pg_spool_parse_stats *ps,
                                 struct pg_status *st)
{
    uint64_t off = 0;
    uint8_t hdr[PG_SPOOL_HDR_SIZE];
    uint8_t *chunk = NULL;

    memset(ps, 0, sizeof(*ps));
    while (off < size) {
        uint32_t rlen;

        if (size - off < PG_SPOOL_HDR_SIZE) {
            ps->truncated = 1;
            break;
        }
        if (!pread_full(g->fd, hdr, sizeof(hdr), off)) {
            int e = errno;
            free(chunk);
            return pg_status_set(st, PG_ERR_IO, "spool: cannot read %s: %s", path,
                                 e ? strerror(e) : "short read");
        }
        if (!header_ok(hdr) || get32(hdr + 4) > PG_SPOOL_MAX_RECORD) {
            ps->corrupt++;
            if (chunk == NULL && (chunk = malloc(SCAN_CHUNK)) == NULL) {
                return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory indexing %s", path);
            }
            off = resync(g->fd, off + 1, size, chunk);
            continue;
        }
        rlen = get32(hdr + 4);
        if (rlen > size - off - PG_SPOOL_HDR_SIZE) {
            ps->truncated = 1; /* the header is intact, the payload is not all there */
            g->cut_id = get64(hdr + 8);
            break;
        }
        if (!rec_push(g, get64(hdr + 8), off, rlen)) {
            free(chunk);
            return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory indexing %s", path);
        }
        ps->records++;
        off += PG_SPOOL_HDR_SIZE + (uint64_t)rlen;
        ps->valid_end = (size_t)off;
    }
    free(chunk);
    (void)s;
    return PG_ERR_OK;
}

static enum pg_err load_segment(struct pg_spool *s, uint64_t seq, struct pg_status *st)
{
    char path[4096];
    struct seg *g = seg_new(seq);
    struct pg_spool_parse_stats ps;
    struct stat sb;
    enum pg_err err;

    if (g == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory indexing %s", s->dir);
    }
    seg_path(s, seq, "seg", path, sizeof(path));
    /* O_NONBLOCK: a FIFO planted under a segment's name must not hang the
     * start; anything but a regular file is refused below with its type. */
    g->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (g->fd < 0) {
        int e = errno;
        seg_free(g);
        return pg_status_set(st, PG_ERR_IO, "spool: cannot open segment %s: %s", path,
                             e == ELOOP ? "it is a symbolic link" : strerror(e));
    }
    if (fstat(g->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        const char *what = S_ISFIFO(sb.st_mode) ? "a FIFO"
                           : S_ISDIR(sb.st_mode) ? "a directory"
                           : S_ISSOCK(sb.st_mode) ? "a socket"
                                                  : "not a regular file";
        seg_free(g);
        return pg_status_set(st, PG_ERR_IO,
                             "spool: segment %s is %s, not a regular file; remove it or point "
                             "file_storage at another directory", path, what);
    }
    err = index_segment(s, g, path, (uint64_t)sb.st_size, &ps, st);
    if (err != PG_ERR_OK) {
        seg_free(g);
        return err;
    }
    if (g->n > 1) {
        qsort(g->recs, g->n, sizeof(*g->recs), rec_cmp);
    }
    g->bytes = (uint64_t)sb.st_size;
    g->old = true;
    if (ps.corrupt || ps.truncated) {
        pg_log_warn(lname(s),
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
    if (!segs_push(s, g)) {
        seg_free(g);
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
                        const struct seg *damaged)
{
    char path[4096];
    uint64_t lost;

    if (damaged == NULL) {
        return;
    }
    seg_path(s, damaged->seq, "seg", path, sizeof(path));
    if (hi <= last_id) {
        pg_log_warn(lname(s),
                    "spool %s: segment %s ends %s; how many records it lost cannot be told "
                    "(no later segment or ack records their ids): at least 0. If the gateway "
                    "was killed while writing, the record being written was never answered 204",
                    s->dir, path, damaged->n == 0 ? "empty" : "cut short");
        return;
    }
    lost = hi - last_id > acked ? hi - last_id - acked : 0;
    s->stats.lost += lost;
    pg_log_error(lname(s),
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
    struct seg *first_damaged = NULL;

    for (size_t i = 0; i < s->n_segs; i++) {
        struct seg *g = s->segs[i];
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
                    seg_path(s, first_damaged != NULL ? first_damaged->seq : prev_seq, "seg",
                             path, sizeof(path));
                    pg_log_error(lname(s),
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
            seg_path(s, g->seq, "seg", path, sizeof(path));
            pg_log_warn(lname(s), "spool segment %s is empty (%" PRIu64 " delivered record(s) "
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

static enum pg_err scan_dir(struct pg_spool *s, struct pg_status *st)
{
    DIR *d = opendir(s->dir);
    struct dirent *de;
    uint64_t *seqs = NULL;
    size_t n = 0, cap = 0;
    enum pg_err err = PG_ERR_OK;

    if (d == NULL) {
        return pg_status_set(st, PG_ERR_IO, "spool: cannot list %s: %s", s->dir, strerror(errno));
    }
    while ((de = readdir(d)) != NULL) {
        char *end;
        uint64_t seq;
        if (strlen(de->d_name) != 20 || strcmp(de->d_name + 16, ".seg") != 0) {
            continue;
        }
        errno = 0;
        seq = strtoull(de->d_name, &end, 16);
        if (errno != 0 || end != de->d_name + 16) {
            continue;
        }
        if (!PG_VEC_GROW(NULL, seqs, cap, n, 16, 0)) {
            err = pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory listing %s", s->dir);
            goto out;
        }
        seqs[n++] = seq;
    }
    if (n > 1) {
        qsort(seqs, n, sizeof(*seqs), u64_cmp);
    }
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
                seg_remove(s, i);
                i--;
            }
        }
    }
out:
    free(seqs);
    closedir(d);
    return err;
}

static int mkdir_p(const char *dir)
{
    char buf[4096];
    size_t len = strlen(dir);

    if (len == 0 || len >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0750) != 0 && errno != EEXIST) {
                return -1;
            }
            buf[i] = c;
        }
    }
    return 0;
}

/* ---- public API --------------------------------------------------------- */


enum pg_err pg_spool_open(const struct pg_spool_options *opt, struct pg_spool **out,
                          struct pg_status *st)
{
    struct pg_spool *s;
    char path[4096];
    enum pg_err err;

    *out = NULL;
    if (opt == NULL || opt->dir == NULL || opt->dir[0] == '\0') {
        return pg_status_set(st, PG_ERR_CONFIG, "spool: no directory given");
    }
    if (strlen(opt->dir) > 4000) {
        return pg_status_set(st, PG_ERR_CONFIG, "spool: directory path too long");
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    s->lock_fd = -1;
    s->dir_fd = -1;
    s->dir = strdup(opt->dir);
    s->log_name = opt->log_name ? strdup(opt->log_name) : NULL;
    s->max_bytes = opt->max_bytes ? opt->max_bytes : DEFAULT_MAX_BYTES;
    s->segment_bytes = opt->segment_bytes ? opt->segment_bytes : DEFAULT_SEGMENT_BYTES;
    s->fsync = opt->fsync;
    s->fsync_interval_ns =
        opt->fsync_interval_ns > 0 ? opt->fsync_interval_ns : DEFAULT_FSYNC_INTERVAL_NS;
    s->next_id = 1;
    s->next_seq = 1;
    if (s->dir == NULL || (opt->log_name && s->log_name == NULL)) {
        pg_spool_close(s);
        return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory");
    }
    if (mkdir_p(s->dir) != 0) {
        err = pg_status_set(st, PG_ERR_IO, "spool: cannot create directory %s: %s", s->dir,
                            strerror(errno));
        pg_spool_close(s);
        return err;
    }
    s->dir_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dir_fd < 0) {
        err = pg_status_set(st, PG_ERR_IO, "spool: cannot open directory %s: %s", s->dir,
                            strerror(errno));
        pg_spool_close(s);
        return err;
    }
    snprintf(path, sizeof(path), "%s/LOCK", s->dir);
    /* O_NONBLOCK|O_NOFOLLOW: a FIFO or a symlink planted as LOCK is refused
     * at once instead of blocking the start or following it elsewhere. */
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0640);
    if (s->lock_fd < 0) {
        int e = errno;
        err = pg_status_set(st, PG_ERR_IO, "spool: cannot open lock file %s: %s", path,
                            e == EISDIR ? "it is a directory" : e == ELOOP ? "it is a symbolic link"
                                                                           : strerror(e));
        pg_spool_close(s);
        return err;
    }
    {
        struct stat sb;
        if (fstat(s->lock_fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            err = pg_status_set(st, PG_ERR_IO, "spool: lock file %s is not a regular file", path);
            pg_spool_close(s);
            return err;
        }
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[32] = "";
        ssize_t n = pread(s->lock_fd, holder, sizeof(holder) - 1, 0);
        long pid = n > 0 ? strtol(holder, NULL, 10) : 0;
        if (e == EWOULDBLOCK && pid > 0) {
            err = pg_status_set(st, PG_ERR_BUSY,
                                "spool: directory %s is locked by a running gateway (pid %ld); "
                                "each gateway needs its own file_storage directory",
                                s->dir, pid);
        } else {
            err = pg_status_set(st, e == EWOULDBLOCK ? PG_ERR_BUSY : PG_ERR_IO,
                                "spool: directory %s is locked by another process (%s)", s->dir,
                                strerror(e));
        }
        pg_spool_close(s);
        return err;
    }
    {
        /* Who holds it, for the message a second gateway prints. */
        char me[32];
        int n = snprintf(me, sizeof(me), "%ld\n", (long)getpid());
        if (ftruncate(s->lock_fd, 0) != 0 || pwrite(s->lock_fd, me, (size_t)n, 0) != n) {
            pg_log_debug(lname(s), "cannot write the pid into %s: %s", path, strerror(errno));
        }
    }
    err = scan_dir(s, st);
    if (err != PG_ERR_OK) {
        pg_spool_close(s);
        return err;
    }
    s->boot_id = s->next_id;
    s->last_sync_ns = pg_mono_ns();
    if (s->stats.replay_pending > 0 || s->stats.corrupt > 0 || s->stats.truncated > 0) {
        pg_log_info(lname(s),
                    "spool %s: %" PRIu64 " record(s) (%" PRIu64 " bytes) to replay from %" PRIu64
                    " segment(s); %" PRIu64 " corrupt, %" PRIu64 " truncated skipped",
                    s->dir, s->stats.replay_pending, s->stats.pending_bytes, s->stats.segments,
                    s->stats.corrupt, s->stats.truncated);
    }
    *out = s;
    return PG_ERR_OK;
}

static int sync_active(struct pg_spool *s)
{
    int rc = 0;
    if (s->active != NULL && s->active->fd >= 0 && fdatasync(s->active->fd) != 0) {
        rc = -1;
    }
    s->last_sync_ns = pg_mono_ns();
    s->dirty = false;
    return rc;
}

void pg_spool_close(struct pg_spool *s)
{
    if (s == NULL) {
        return;
    }
    pg_storage_untrack(s);
    if (s->dirty) {
        (void)sync_active(s);
    }
    for (size_t i = 0; i < s->n_segs; i++) {
        if (s->segs[i]->n_acked == s->segs[i]->n && s->lock_fd >= 0) {
            s->active = s->segs[i] == s->active ? NULL : s->active;
            seg_remove(s, i);
            i--;
        }
    }
    for (size_t i = 0; i < s->n_segs; i++) {
        if (s->segs[i]->ack_fd >= 0) {
            (void)fdatasync(s->segs[i]->ack_fd);
        }
        seg_free(s->segs[i]);
    }
    free(s->segs);
    if (s->lock_fd >= 0) {
        close(s->lock_fd); /* releases the flock */
    }
    if (s->dir_fd >= 0) {
        close(s->dir_fd);
    }
    pthread_mutex_destroy(&s->mu);
    free(s->dir);
    free(s->log_name);
    free(s);
}

/* Starts a new active segment (the old one stays until all of it is acked). */
static enum pg_err rotate(struct pg_spool *s, struct pg_status *st)
{
    char path[4096];
    struct seg *g;
    struct seg *prev = s->active;

    g = seg_new(s->next_seq);
    if (g == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory");
    }
    seg_path(s, g->seq, "seg", path, sizeof(path));
    g->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (g->fd < 0) {
        int e = errno;
        seg_free(g);
        if (e == ENOSPC || e == EDQUOT) {
            s->stats.refused_disk++;
            return pg_status_set(st, PG_ERR_BUSY, "spool: disk full under %s: %s", s->dir,
                                 strerror(e));
        }
        return pg_status_set(st, PG_ERR_IO, "spool: cannot create %s: %s", path, strerror(e));
    }
    if (s->dirty) {
        (void)sync_active(s); /* the previous active segment must be durable too */
    }
    if (!segs_push(s, g)) {
        (void)unlink(path);
        seg_free(g);
        return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory");
    }
    s->next_seq++;
    s->stats.segments++;
    s->active = g;
    if (s->fsync == PG_SPOOL_FSYNC_ALWAYS && s->dir_fd >= 0) {
        (void)fsync(s->dir_fd); /* the new name must survive a crash too */
    }
    if (prev != NULL && prev->n_acked == prev->n) {
        for (size_t i = 0; i < s->n_segs; i++) {
            if (s->segs[i] == prev) {
                seg_remove(s, i);
                break;
            }
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_spool_append(struct pg_spool *s, const void *data, size_t len, uint64_t *id_out,
                            struct pg_status *st)
{
    uint8_t hdr[PG_SPOOL_HDR_SIZE];
    struct iovec iov[2];
    uint64_t id, need = PG_SPOOL_HDR_SIZE + (uint64_t)len;
    size_t done = 0;
    enum pg_err err = PG_ERR_OK;
    struct seg *g;

    if (len > PG_SPOOL_MAX_RECORD) {
        return pg_status_set(st, PG_ERR_LIMIT, "spool: record of %zu bytes exceeds the %u-byte cap",
                             len, PG_SPOOL_MAX_RECORD);
    }
    if (need > s->max_bytes) {
        /* Could never fit, even empty: a retry cannot help, so not BUSY. */
        return pg_status_set(st, PG_ERR_LIMIT,
                             "spool: a %zu-byte request is larger than the spool max_size (%" PRIu64
                             " bytes)", len, s->max_bytes);
    }
    pthread_mutex_lock(&s->mu);
    if (s->stats.disk_bytes + need > s->max_bytes) {
        s->stats.refused_full++;
        err = pg_status_set(st, PG_ERR_BUSY,
                            "spool full: %" PRIu64 " of %" PRIu64 " bytes used under %s",
                            s->stats.disk_bytes, s->max_bytes, s->dir);
        goto out;
    }
    if (s->active == NULL || s->active->bytes >= s->segment_bytes) {
        err = rotate(s, st);
        if (err != PG_ERR_OK) {
            goto out;
        }
    }
    g = s->active;
    id = s->next_id;
    pg_spool_encode_header(hdr, id, data, len);
    iov[0] = (struct iovec){hdr, sizeof(hdr)};
    iov[1] = (struct iovec){(void *)data, len};
    while (done < need) {
        ssize_t w;
        struct iovec v[2];
        int nv = 0;
        if (done < sizeof(hdr)) {
            v[nv++] = (struct iovec){hdr + done, sizeof(hdr) - done};
            v[nv++] = iov[1];
        } else {
            v[nv++] = (struct iovec){(uint8_t *)data + (done - sizeof(hdr)), need - done};
        }
        w = pwritev(g->fd, v, nv, (off_t)(g->bytes + done));
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            /* Cut the partial record off so the segment stays a clean prefix. */
            cut_back(s, g->fd, (off_t)g->bytes);
            if (e == ENOSPC || e == EDQUOT) {
                s->stats.refused_disk++;
                err = pg_status_set(st, PG_ERR_BUSY, "spool: disk full under %s: %s", s->dir,
                                    strerror(e));
            } else {
                err = pg_status_set(st, PG_ERR_IO, "spool: write to %s failed: %s", s->dir,
                                    strerror(e));
            }
            goto out;
        }
        done += (size_t)w;
    }
    s->dirty = true;
    if (s->fsync == PG_SPOOL_FSYNC_ALWAYS ||
        (s->fsync == PG_SPOOL_FSYNC_INTERVAL && pg_mono_ns() - s->last_sync_ns >= s->fsync_interval_ns)) {
        if (sync_active(s) != 0) {
            int e = errno;
            cut_back(s, g->fd, (off_t)g->bytes);
            err = pg_status_set(st, e == ENOSPC || e == EDQUOT ? PG_ERR_BUSY : PG_ERR_IO,
                                "spool: fsync under %s failed: %s", s->dir, strerror(e));
            if (e == ENOSPC || e == EDQUOT) {
                s->stats.refused_disk++;
            }
            goto out;
        }
    }
    if (!rec_push(g, id, g->bytes, (uint32_t)len)) {
        cut_back(s, g->fd, (off_t)g->bytes);
        err = pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory");
        goto out;
    }
    g->bytes += need;
    s->next_id++;
    s->stats.disk_bytes += need;
    s->stats.pending++;
    s->stats.pending_bytes += len;
    s->stats.appended++;
    if (id_out != NULL) {
        *id_out = id;
    }
out:
    pthread_mutex_unlock(&s->mu);
    return err;
}

static enum pg_err write_ack(struct pg_spool *s, struct seg *g, uint64_t id, struct pg_status *st)
{
    uint8_t rec[PG_SPOOL_ACK_SIZE];
    ssize_t w;

    if (g->ack_fd < 0) {
        char path[4096];
        struct stat sb;
        seg_path(s, g->seq, "ack", path, sizeof(path));
        g->ack_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (g->ack_fd < 0) {
            return pg_status_set(st, PG_ERR_IO, "spool: cannot open %s: %s", path,
                                 strerror(errno));
        }
        /* A torn entry from a crash would misalign what we append next. */
        if (fstat(g->ack_fd, &sb) == 0 && sb.st_size % PG_SPOOL_ACK_SIZE != 0) {
            cut_back(s, g->ack_fd, sb.st_size - sb.st_size % PG_SPOOL_ACK_SIZE);
        }
    }
    put32(rec, PG_SPOOL_ACK_MAGIC);
    put64(rec + 8, id);
    put32(rec + 4, (uint32_t)crc32(0L, rec + 8, 8));
    do {
        w = write(g->ack_fd, rec, sizeof(rec));
    } while (w < 0 && errno == EINTR);
    if (w != (ssize_t)sizeof(rec)) {
        /* Not fatal: the record is delivered again after a restart. */
        return pg_status_set(st, PG_ERR_IO, "spool: cannot record ack under %s: %s", s->dir,
                             w < 0 ? strerror(errno) : "short write");
    }
    return PG_ERR_OK;
}

static struct seg *seg_for_id(struct pg_spool *s, uint64_t id, size_t *idx)
{
    for (size_t i = 0; i < s->n_segs; i++) {
        struct seg *g = s->segs[i];
        if (g->n > 0 && id >= g->recs[0].id && id <= g->recs[g->n - 1].id) {
            *idx = i;
            return g;
        }
    }
    return NULL;
}

enum pg_err pg_spool_ack(struct pg_spool *s, uint64_t id, struct pg_status *st)
{
    struct seg *g;
    struct rec *r;
    size_t idx = 0;
    enum pg_err err = PG_ERR_OK;

    pthread_mutex_lock(&s->mu);
    g = seg_for_id(s, id, &idx);
    r = g != NULL ? rec_find(g, id) : NULL;
    if (r == NULL || r->acked) {
        goto out;
    }
    mark_acked(s, g, r);
    s->stats.acked++;
    if (g->n_acked == g->n && g != s->active) {
        seg_remove(s, idx);
    } else {
        err = write_ack(s, g, id, st);
    }
out:
    pthread_mutex_unlock(&s->mu);
    return err;
}

enum pg_err pg_spool_sync(struct pg_spool *s, bool force, struct pg_status *st)
{
    enum pg_err err = PG_ERR_OK;

    pthread_mutex_lock(&s->mu);
    if (s->dirty && (force || pg_mono_ns() - s->last_sync_ns >= s->fsync_interval_ns)) {
        if (sync_active(s) != 0) {
            err = pg_status_set(st, PG_ERR_IO, "spool: fsync under %s failed: %s", s->dir,
                                strerror(errno));
        }
        for (size_t i = 0; i < s->n_segs; i++) {
            if (s->segs[i]->ack_fd >= 0) {
                (void)fdatasync(s->segs[i]->ack_fd);
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    return err;
}

enum pg_err pg_spool_next_replay(struct pg_spool *s, uint64_t after_id, uint64_t *id,
                                 uint8_t **data, size_t *len, struct pg_status *st)
{
    enum pg_err err = PG_ERR_OK;

    *data = NULL;
    *len = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_segs; i++) {
        struct seg *g = s->segs[i];
        size_t lo;
        if (!g->old || g->n == 0 || g->recs[g->n - 1].id <= after_id) {
            continue;
        }
        /* Start past @after_id (< the last id here, so + 1 cannot wrap). */
        lo = rec_lower_bound(g, after_id + 1);
        for (size_t j = lo; j < g->n; j++) {
            struct rec *r = &g->recs[j];
            uint8_t *buf;
            uint8_t hdr[PG_SPOOL_HDR_SIZE];
            ssize_t got;
            if (r->acked || r->id <= after_id) {
                continue;
            }
            buf = malloc(r->len ? r->len : 1);
            if (buf == NULL) {
                err = pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory replaying");
                goto out;
            }
            got = pread(g->fd, hdr, sizeof(hdr), (off_t)r->off);
            if (got == (ssize_t)sizeof(hdr)) {
                got = pread(g->fd, buf, r->len, (off_t)(r->off + PG_SPOOL_HDR_SIZE));
            } else {
                got = -1;
            }
            if (got != (ssize_t)r->len || !header_ok(hdr) || get64(hdr + 8) != r->id ||
                get32(hdr + 16) != body_crc(r->len, r->id, buf)) {
                /* Changed on disk since open: skip it rather than send garbage. */
                pg_log_warn(lname(s), "spool %s: record %" PRIu64 " failed its checksum on replay; "
                                      "skipped", s->dir, r->id);
                s->stats.corrupt++;
                free(buf);
                mark_acked(s, g, r);
                (void)write_ack(s, g, r->id, NULL);
                continue;
            }
            *id = r->id;
            *data = buf;
            *len = r->len;
            goto out;
        }
    }
out:
    pthread_mutex_unlock(&s->mu);
    return err;
}

bool pg_spool_peek_replay(struct pg_spool *s, uint64_t after_id, uint64_t *id, size_t *len)
{
    bool found = false;

    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_segs && !found; i++) {
        struct seg *g = s->segs[i];
        if (!g->old || g->n == 0 || g->recs[g->n - 1].id <= after_id) {
            continue;
        }
        size_t lo = rec_lower_bound(g, after_id + 1); /* as in pg_spool_next_replay */
        for (size_t j = lo; j < g->n; j++) {
            if (!g->recs[j].acked) {
                *id = g->recs[j].id;
                *len = g->recs[j].len;
                found = true;
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

size_t pg_spool_record_len(struct pg_spool *s, uint64_t id)
{
    struct seg *g;
    struct rec *r;
    size_t idx, len = 0;

    pthread_mutex_lock(&s->mu);
    g = seg_for_id(s, id, &idx);
    r = g != NULL ? rec_find(g, id) : NULL;
    if (r != NULL && !r->acked) {
        len = r->len;
    }
    pthread_mutex_unlock(&s->mu);
    return len;
}

enum pg_err pg_spool_read(struct pg_spool *s, uint64_t id, uint8_t **data, size_t *len,
                          struct pg_status *st)
{
    enum pg_err err = PG_ERR_OK;
    uint8_t hdr[PG_SPOOL_HDR_SIZE];
    struct seg *g;
    struct rec *r;
    uint8_t *buf = NULL;
    size_t idx;

    *data = NULL;
    *len = 0;
    pthread_mutex_lock(&s->mu);
    g = seg_for_id(s, id, &idx);
    r = g != NULL ? rec_find(g, id) : NULL;
    if (r == NULL || r->acked) {
        err = pg_status_set(st, PG_ERR_INTERNAL, "spool %s: record %" PRIu64 " is not pending",
                            s->dir, id);
        goto out;
    }
    buf = malloc(r->len ? r->len : 1);
    if (buf == NULL) {
        err = pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory reading record %" PRIu64, id);
        goto out;
    }
    if (!pread_full(g->fd, hdr, sizeof(hdr), r->off) ||
        !pread_full(g->fd, buf, r->len, r->off + PG_SPOOL_HDR_SIZE) || !header_ok(hdr) ||
        get64(hdr + 8) != id || get32(hdr + 16) != body_crc(r->len, id, buf)) {
        /* Changed on disk underneath us: never send garbage; it is lost. */
        s->stats.corrupt++;
        mark_acked(s, g, r);
        (void)write_ack(s, g, id, NULL);
        free(buf);
        buf = NULL;
        err = pg_status_set(st, PG_ERR_IO, "spool %s: record %" PRIu64 " failed its checksum when "
                            "read back; dropped", s->dir, id);
        goto out;
    }
    *data = buf;
    *len = r->len;
out:
    pthread_mutex_unlock(&s->mu);
    return err;
}

void pg_spool_get_stats(struct pg_spool *s, struct pg_spool_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->stats;
    pthread_mutex_unlock(&s->mu);
}
