/* SPDX-License-Identifier: Apache-2.0
 * What the spool files share (private to storage/spool*.c): the spool, its
 * segments and their record index. spool_segment.c holds the record format
 * and the in-memory segment index, spool_recover.c reads what an earlier run
 * left at open, spool.c the running spool (append, ack, replay, read). */
#ifndef PG_SPOOL_INTERNAL_H
#define PG_SPOOL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"
#include "storage/spool.h"

struct pg_spool_rec {
    uint64_t id;
    uint64_t off;  /* header offset in the segment file */
    uint32_t len;  /* payload length */
    bool acked;
};

struct pg_spool_seg {
    uint64_t seq;
    int fd;            /* O_RDWR; the active segment is appended to with pwritev */
    int ack_fd;        /* opened on the first ack; -1 until then */
    uint64_t bytes;    /* file size (valid prefix for old segments counts whole file) */
    struct pg_spool_rec *recs;  /* owned; ascending ids */
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
    struct pg_spool_seg **segs;  /* owned; ascending seq */
    size_t n_segs, cap_segs;
    struct pg_spool_seg *active; /* one of segs, or NULL before the first append */
    uint64_t next_id, next_seq;
    uint64_t boot_id;   /* ids below this were found at open */
    struct pg_spool_stats stats;
    /* Background recovery of a large earlier spool (spool_recover.c). */
    bool recovering;           /* atomic: the scan runs; its segments come later */
    bool recover_stop;         /* atomic: close asks the scan to end */
    const bool *stop;          /* the scan's own spool: the owner's recover_stop */
    pthread_t recover_thread;  /* valid while recover_started */
    bool recover_started;
};

void pg_spool_put32(uint8_t *p, uint32_t v);
void pg_spool_put64(uint8_t *p, uint64_t v);
uint32_t pg_spool_get32(const uint8_t *p);
uint64_t pg_spool_get64(const uint8_t *p);
uint32_t pg_spool_body_crc(uint32_t len, uint64_t id, const void *payload);
bool pg_spool_header_ok(const uint8_t *p);
const char *pg_spool_lname(const struct pg_spool *s);
void pg_spool_cut_back(const struct pg_spool *s, int fd, off_t len);
void pg_spool_seg_path(const struct pg_spool *s, uint64_t seq, const char *ext, char *out,
                          size_t cap);
bool pg_spool_rec_push(struct pg_spool_seg *g, uint64_t id, uint64_t off, uint32_t len);
size_t pg_spool_rec_lower_bound(const struct pg_spool_seg *g, uint64_t id);
struct pg_spool_rec *pg_spool_rec_find(struct pg_spool_seg *g, uint64_t id);
void pg_spool_seg_free(struct pg_spool_seg *g);
struct pg_spool_seg *pg_spool_seg_new(uint64_t seq);
bool pg_spool_segs_push(struct pg_spool *s, struct pg_spool_seg *g);
void pg_spool_seg_remove(struct pg_spool *s, size_t idx);
void pg_spool_mark_acked(struct pg_spool *s, struct pg_spool_seg *g, struct pg_spool_rec *r);
bool pg_spool_pread_full(int fd, void *buf, size_t n, uint64_t off);
enum pg_err pg_spool_scan_dir(struct pg_spool *s, struct pg_status *st);
/* Lists the segments and recovers them now, or (a large spool) on a thread
 * while appends go on: see pg_spool_recovering(). */
enum pg_err pg_spool_recover(struct pg_spool *s, struct pg_status *st);
/* Ends a background recovery (close): its partial index is dropped. */
void pg_spool_recover_join(struct pg_spool *s);

#endif
