/* SPDX-License-Identifier: Apache-2.0
 * The spool's record format (header, checksum, parser) and the in-memory
 * index of its segments and records (see spool.h for the format). */
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

/* ---- little helpers ----------------------------------------------------- */

void pg_spool_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

void pg_spool_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

uint32_t pg_spool_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t pg_spool_get64(const uint8_t *p)
{
    return (uint64_t)pg_spool_get32(p) | (uint64_t)pg_spool_get32(p + 4) << 32;
}

/* crc32 over (length, id) then the payload: what the record crc covers. */
uint32_t pg_spool_body_crc(uint32_t len, uint64_t id, const void *payload)
{
    uint8_t lid[12];
    uLong c;

    pg_spool_put32(lid, len);
    pg_spool_put64(lid + 4, id);
    c = crc32(0L, lid, sizeof(lid));
    /* zlib takes uInt lengths; records are bounded by PG_SPOOL_MAX_RECORD. */
    c = crc32(c, payload, (uInt)len);
    return (uint32_t)c;
}

void pg_spool_encode_header(uint8_t *hdr, uint64_t id, const void *payload, size_t len)
{
    pg_spool_put32(hdr, PG_SPOOL_MAGIC);
    pg_spool_put32(hdr + 4, (uint32_t)len);
    pg_spool_put64(hdr + 8, id);
    pg_spool_put32(hdr + 16, pg_spool_body_crc((uint32_t)len, id, payload));
    pg_spool_put32(hdr + 20, (uint32_t)crc32(0L, hdr, 20));
}

bool pg_spool_header_ok(const uint8_t *p)
{
    return pg_spool_get32(p) == PG_SPOOL_MAGIC && pg_spool_get32(p + 20) == (uint32_t)crc32(0L, p,
        20);
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
        if (!pg_spool_header_ok(buf + off) || pg_spool_get32(buf + off + 4) > PG_SPOOL_MAX_RECORD) {
            /* Damaged header: its length cannot be trusted. Resynchronise on
             * the next header whose own checksum holds. */
            size_t p = off + 1;
            ps->corrupt++;
            while (p + PG_SPOOL_HDR_SIZE <= len &&
                   !(pg_spool_header_ok(buf + p) &&
                       pg_spool_get32(buf + p + 4) <= PG_SPOOL_MAX_RECORD)) {
                p++;
            }
            if (p + PG_SPOOL_HDR_SIZE > len) {
                break; /* nothing valid after the damage */
            }
            off = p;
            continue;
        }
        rlen = pg_spool_get32(buf + off + 4);
        id = pg_spool_get64(buf + off + 8);
        if (rlen > rest - PG_SPOOL_HDR_SIZE) {
            ps->truncated = 1; /* the header is intact, the payload is not all there */
            break;
        }
        if (pg_spool_get32(buf + off + 16) != pg_spool_body_crc(rlen, id,
            buf + off + PG_SPOOL_HDR_SIZE)) {
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

const char *pg_spool_lname(const struct pg_spool *s)
{
    return pg_spool_log_name(s);
}

/* Cuts a torn tail off after a failed write; if even that fails the tail
 * stays and replay's checksum skips it, so it is only worth a warning. */
void pg_spool_cut_back(const struct pg_spool *s, int fd, off_t len)
{
    if (ftruncate(fd, len) != 0) {
        pg_log_warn(pg_spool_lname(s), "cannot cut a torn record off the spool: %s",
            strerror(errno));
    }
}

void pg_spool_seg_path(const struct pg_spool *s, uint64_t seq, const char *ext, char *out,
                     size_t cap)
{
    snprintf(out, cap, "%s/%016" PRIx64 ".%s", s->dir, seq, ext);
}

bool pg_spool_rec_push(struct pg_spool_seg *g, uint64_t id, uint64_t off, uint32_t len)
{
    if (!PG_VEC_GROW(NULL, g->recs, g->cap, g->n, 16, 0)) {
        return false;
    }
    g->recs[g->n++] = (struct pg_spool_rec){id, off, len, false};
    return true;
}

/* Index of the first record of @g (ids ascending) whose id is >= @id; g->n
 * when there is none. Binary search: replay stays linear overall. */
size_t pg_spool_rec_lower_bound(const struct pg_spool_seg *g, uint64_t id)
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

struct pg_spool_rec *pg_spool_rec_find(struct pg_spool_seg *g, uint64_t id)
{
    size_t lo = pg_spool_rec_lower_bound(g, id);

    return lo < g->n && g->recs[lo].id == id ? &g->recs[lo] : NULL;
}

void pg_spool_seg_free(struct pg_spool_seg *g)
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

struct pg_spool_seg *pg_spool_seg_new(uint64_t seq)
{
    struct pg_spool_seg *g = calloc(1, sizeof(*g));
    if (g != NULL) {
        g->seq = seq;
        g->fd = -1;
        g->ack_fd = -1;
    }
    return g;
}

bool pg_spool_segs_push(struct pg_spool *s, struct pg_spool_seg *g)
{
    if (!PG_VEC_GROW(NULL, s->segs, s->cap_segs, s->n_segs, 8, 0)) {
        return false;
    }
    s->segs[s->n_segs++] = g;
    return true;
}

/* Unlinks a segment and its ack log and drops it from the index. */
void pg_spool_seg_remove(struct pg_spool *s, size_t idx)
{
    struct pg_spool_seg *g = s->segs[idx];
    char path[4096];

    pg_spool_seg_path(s, g->seq, "seg", path, sizeof(path));
    if (unlink(path) != 0 && errno != ENOENT) {
        pg_log_warn(pg_spool_lname(s), "cannot delete acknowledged segment %s: %s", path,
            strerror(errno));
    }
    pg_spool_seg_path(s, g->seq, "ack", path, sizeof(path));
    (void)unlink(path);
    s->stats.disk_bytes -= g->bytes;
    s->stats.segments--;
    if (g == s->active) {
        s->active = NULL;
    }
    pg_spool_seg_free(g);
    memmove(&s->segs[idx], &s->segs[idx + 1], (s->n_segs - idx - 1) * sizeof(*s->segs));
    s->n_segs--;
}

void pg_spool_mark_acked(struct pg_spool *s, struct pg_spool_seg *g, struct pg_spool_rec *r)
{
    r->acked = true;
    g->n_acked++;
    s->stats.pending--;
    s->stats.pending_bytes -= r->len;
    if (g->old) {
        s->stats.replay_pending--;
    }
}


/* Reads exactly @n bytes at @off; false on a short read or an error. */
bool pg_spool_pread_full(int fd, void *buf, size_t n, uint64_t off)
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
