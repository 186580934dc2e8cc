/* SPDX-License-Identifier: Apache-2.0
 * The running spool: open, append, ack, replay and read (see spool.h for the
 * format; spool_segment.c holds it, spool_recover.c reads an earlier run). Old
 * segments are read-only after open; this run appends to fresh segments, so
 * a torn tail left by a crash is never written over, only skipped. Acks go to
 * a small per-segment log without fsync: losing one costs a duplicate
 * delivery after a crash, never a loss. */
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
#include "core/vec.h"

#define DEFAULT_MAX_BYTES (1ull << 30)
#define DEFAULT_SEGMENT_BYTES (8ull << 20)
#define DEFAULT_FSYNC_INTERVAL_NS 1000000000ll

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
            pg_log_debug(pg_spool_lname(s), "cannot write the pid into %s: %s", path,
                strerror(errno));
        }
    }
    err = pg_spool_recover(s, st);
    if (err != PG_ERR_OK) {
        pg_spool_close(s);
        return err;
    }
    s->boot_id = s->next_id; /* in a background recovery: above every earlier id */
    s->last_sync_ns = pg_mono_ns();
    if (s->stats.replay_pending > 0 || s->stats.corrupt > 0 || s->stats.truncated > 0) {
        pg_log_info(pg_spool_lname(s),
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
    pg_spool_recover_join(s); /* before anything the scan would merge into */
    if (s->dirty) {
        (void)sync_active(s);
    }
    for (size_t i = 0; i < s->n_segs; i++) {
        if (s->segs[i]->n_acked == s->segs[i]->n && s->lock_fd >= 0) {
            s->active = s->segs[i] == s->active ? NULL : s->active;
            pg_spool_seg_remove(s, i);
            i--;
        }
    }
    for (size_t i = 0; i < s->n_segs; i++) {
        if (s->segs[i]->ack_fd >= 0) {
            (void)fdatasync(s->segs[i]->ack_fd);
        }
        pg_spool_seg_free(s->segs[i]);
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
    struct pg_spool_seg *g;
    struct pg_spool_seg *prev = s->active;

    g = pg_spool_seg_new(s->next_seq);
    if (g == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "spool: out of memory");
    }
    pg_spool_seg_path(s, g->seq, "seg", path, sizeof(path));
    g->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (g->fd < 0) {
        int e = errno;
        pg_spool_seg_free(g);
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
    if (!pg_spool_segs_push(s, g)) {
        (void)unlink(path);
        pg_spool_seg_free(g);
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
                pg_spool_seg_remove(s, i);
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
    struct pg_spool_seg *g;

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
            pg_spool_cut_back(s, g->fd, (off_t)g->bytes);
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
        (s->fsync == PG_SPOOL_FSYNC_INTERVAL &&
            pg_mono_ns() - s->last_sync_ns >= s->fsync_interval_ns)) {
        if (sync_active(s) != 0) {
            int e = errno;
            pg_spool_cut_back(s, g->fd, (off_t)g->bytes);
            err = pg_status_set(st, e == ENOSPC || e == EDQUOT ? PG_ERR_BUSY : PG_ERR_IO,
                                "spool: fsync under %s failed: %s", s->dir, strerror(e));
            if (e == ENOSPC || e == EDQUOT) {
                s->stats.refused_disk++;
            }
            goto out;
        }
    }
    if (!pg_spool_rec_push(g, id, g->bytes, (uint32_t)len)) {
        pg_spool_cut_back(s, g->fd, (off_t)g->bytes);
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

static enum pg_err write_ack(struct pg_spool *s, struct pg_spool_seg *g, uint64_t id,
    struct pg_status *st)
{
    uint8_t rec[PG_SPOOL_ACK_SIZE];
    ssize_t w;

    if (g->ack_fd < 0) {
        char path[4096];
        struct stat sb;
        pg_spool_seg_path(s, g->seq, "ack", path, sizeof(path));
        g->ack_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (g->ack_fd < 0) {
            return pg_status_set(st, PG_ERR_IO, "spool: cannot open %s: %s", path,
                                 strerror(errno));
        }
        /* A torn entry from a crash would misalign what we append next. */
        if (fstat(g->ack_fd, &sb) == 0 && sb.st_size % PG_SPOOL_ACK_SIZE != 0) {
            pg_spool_cut_back(s, g->ack_fd, sb.st_size - sb.st_size % PG_SPOOL_ACK_SIZE);
        }
    }
    pg_spool_put32(rec, PG_SPOOL_ACK_MAGIC);
    pg_spool_put64(rec + 8, id);
    pg_spool_put32(rec + 4, (uint32_t)crc32(0L, rec + 8, 8));
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

static struct pg_spool_seg *seg_for_id(struct pg_spool *s, uint64_t id, size_t *idx)
{
    for (size_t i = 0; i < s->n_segs; i++) {
        struct pg_spool_seg *g = s->segs[i];
        if (g->n > 0 && id >= g->recs[0].id && id <= g->recs[g->n - 1].id) {
            *idx = i;
            return g;
        }
    }
    return NULL;
}

enum pg_err pg_spool_ack(struct pg_spool *s, uint64_t id, struct pg_status *st)
{
    struct pg_spool_seg *g;
    struct pg_spool_rec *r;
    size_t idx = 0;
    enum pg_err err = PG_ERR_OK;

    pthread_mutex_lock(&s->mu);
    g = seg_for_id(s, id, &idx);
    r = g != NULL ? pg_spool_rec_find(g, id) : NULL;
    if (r == NULL || r->acked) {
        goto out;
    }
    pg_spool_mark_acked(s, g, r);
    s->stats.acked++;
    if (g->n_acked == g->n && g != s->active) {
        pg_spool_seg_remove(s, idx);
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
        struct pg_spool_seg *g = s->segs[i];
        size_t lo;
        if (!g->old || g->n == 0 || g->recs[g->n - 1].id <= after_id) {
            continue;
        }
        /* Start past @after_id (< the last id here, so + 1 cannot wrap). */
        lo = pg_spool_rec_lower_bound(g, after_id + 1);
        for (size_t j = lo; j < g->n; j++) {
            struct pg_spool_rec *r = &g->recs[j];
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
            if (got != (ssize_t)r->len || !pg_spool_header_ok(hdr) ||
                pg_spool_get64(hdr + 8) != r->id ||
                pg_spool_get32(hdr + 16) != pg_spool_body_crc(r->len, r->id, buf)) {
                /* Changed on disk since open: skip it rather than send garbage. */
                pg_log_warn(pg_spool_lname(s),
                            "spool %s: record %" PRIu64 " failed its checksum on replay; "
                            "skipped", s->dir, r->id);
                s->stats.corrupt++;
                free(buf);
                pg_spool_mark_acked(s, g, r);
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
        struct pg_spool_seg *g = s->segs[i];
        if (!g->old || g->n == 0 || g->recs[g->n - 1].id <= after_id) {
            continue;
        }
        size_t lo = pg_spool_rec_lower_bound(g, after_id + 1); /* as in pg_spool_next_replay */
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
    struct pg_spool_seg *g;
    struct pg_spool_rec *r;
    size_t idx, len = 0;

    pthread_mutex_lock(&s->mu);
    g = seg_for_id(s, id, &idx);
    r = g != NULL ? pg_spool_rec_find(g, id) : NULL;
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
    struct pg_spool_seg *g;
    struct pg_spool_rec *r;
    uint8_t *buf = NULL;
    size_t idx;

    *data = NULL;
    *len = 0;
    pthread_mutex_lock(&s->mu);
    g = seg_for_id(s, id, &idx);
    r = g != NULL ? pg_spool_rec_find(g, id) : NULL;
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
    if (!pg_spool_pread_full(g->fd, hdr, sizeof(hdr), r->off) ||
        !pg_spool_pread_full(g->fd, buf, r->len, r->off + PG_SPOOL_HDR_SIZE) ||
        !pg_spool_header_ok(hdr) || pg_spool_get64(hdr + 8) != id ||
        pg_spool_get32(hdr + 16) != pg_spool_body_crc(r->len, id, buf)) {
        /* Changed on disk underneath us: never send garbage; it is lost. */
        s->stats.corrupt++;
        pg_spool_mark_acked(s, g, r);
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
