/* SPDX-License-Identifier: Apache-2.0
 * The persistent queue behind `sending_queue.storage`: a directory of
 * append-only segment files holding checksummed records (one encoded OTLP
 * request each), plus a per-segment ack log. A record is appended before the
 * receiver answers 204 and acknowledged once the destination took it (or
 * dropped it for good); fully acknowledged segments are deleted. Opening a
 * spool replays what the previous run left: corrupt or truncated records are
 * skipped, logged and counted, never fatal. Also holds the tiny registry
 * through which an exporter finds a started `file_storage` extension by id. */
#ifndef PG_STORAGE_SPOOL_H
#define PG_STORAGE_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* ---- on-disk format (little endian) ------------------------------------
 * record := magic u32 "PGS1" | length u32 | id u64 | crc u32 | hdr_crc u32 | payload
 *   crc     = zlib crc32 over (length, id, payload)
 *   hdr_crc = zlib crc32 over the first 20 header bytes (so a flipped length
 *             is detected before we trust it to find the next record)
 * ack     := magic u32 "PGA1" | crc u32 (over id) | id u64   (16 bytes)
 * Segment files are "<seq %016llx>.seg" with their ack log "<seq>.ack". */
#define PG_SPOOL_MAGIC 0x31534750u     /* "PGS1" read as little endian */
#define PG_SPOOL_ACK_MAGIC 0x31414750u /* "PGA1" */
#define PG_SPOOL_HDR_SIZE 24u
#define PG_SPOOL_ACK_SIZE 16u
/* No single record may be larger than this (a sanity bound for the parser). */
#define PG_SPOOL_MAX_RECORD (256u * 1024u * 1024u)

enum pg_spool_fsync {
    PG_SPOOL_FSYNC_ALWAYS = 0, /* fdatasync after every append (before the 204) */
    PG_SPOOL_FSYNC_INTERVAL,   /* at most every fsync_interval_ns (and on close) */
    PG_SPOOL_FSYNC_NEVER,      /* tests only: leave it to the kernel */
};

struct pg_spool_options {
    const char *dir;             /* borrowed for open(); created if missing */
    uint64_t max_bytes;          /* cap on segment bytes on disk; 0 = 1 GiB */
    uint64_t segment_bytes;      /* rotate the active segment past this; 0 = 8 MiB */
    enum pg_spool_fsync fsync;
    int64_t fsync_interval_ns;   /* INTERVAL: 0 = 1 s */
    const char *log_name;        /* log prefix ("extension/file_storage"); NULL ok */
};

struct pg_spool_stats {
    uint64_t pending;            /* records not yet acknowledged */
    uint64_t pending_bytes;      /* their payload bytes */
    uint64_t replay_pending;     /* of those, left by a previous run */
    uint64_t disk_bytes;         /* segment bytes on disk (what the cap limits) */
    uint64_t segments;
    uint64_t appended;           /* this run */
    uint64_t acked;              /* this run */
    uint64_t corrupt;            /* records/regions skipped at open: bad checksum or header */
    uint64_t truncated;          /* records cut short at the end of a segment */
    uint64_t lost;               /* records missing at open (emptied/cut segments), by id gaps */
    uint64_t refused_full;       /* appends refused: cap reached */
    uint64_t refused_disk;       /* appends refused: ENOSPC / EDQUOT */
};

struct pg_spool;

/* True while a large spool left by an earlier run is still being indexed in
 * the background (pg_spool_open returned at once). Meanwhile appends get ids
 * above every earlier one in new segments, and replay finds nothing yet: a
 * replayer that sees this should retry later, not stop. So data accepted
 * during recovery is sent first, the earlier backlog once the scan ends. */
bool pg_spool_recovering(struct pg_spool *s);

/* Opens (creating) the spool directory, takes an exclusive lock on it (a
 * second process gets PG_ERR_BUSY), and indexes every segment. The caller
 * owns *@out: pg_spool_close(). Thread-safe afterwards (one mutex). */
PG_MUST_CHECK
enum pg_err pg_spool_open(const struct pg_spool_options *opt, struct pg_spool **out,
                          struct pg_status *st);
/* Syncs, deletes fully acknowledged segments, unlocks, frees. NULL ok. A
 * spool that pg_storage_open opened closes with pg_storage_close instead. */
void pg_spool_close(struct pg_spool *s);

/* Appends one record and, with fsync ALWAYS, makes it durable before
 * returning. BUSY when the cap is reached or the disk is full (the message
 * says which): the receiver answers 503 Retry-After. IO for other failures.
 * *@id_out gets the record id (monotonic across restarts). */
PG_MUST_CHECK
enum pg_err pg_spool_append(struct pg_spool *s, const void *data, size_t len, uint64_t *id_out,
                            struct pg_status *st);
/* Marks @id delivered (or dropped for good). Unknown/already acked ids are a
 * no-op returning OK. A segment whose records are all acked is deleted. */
enum pg_err pg_spool_ack(struct pg_spool *s, uint64_t id, struct pg_status *st);
/* With fsync INTERVAL: syncs when the interval has passed (or @force). */
enum pg_err pg_spool_sync(struct pg_spool *s, bool force, struct pg_status *st);

/* Replay of what the previous run left: the first unacked record with an id
 * greater than @after_id among those found at open. On success *@data is
 * malloc'd (the caller frees it) and @id, @len are set; when there is none
 * left, returns OK with *@data == NULL. A record that fails its checksum when
 * read back is skipped (logged, counted, acked). */
PG_MUST_CHECK
enum pg_err pg_spool_next_replay(struct pg_spool *s, uint64_t after_id, uint64_t *id,
                                 uint8_t **data, size_t *len, struct pg_status *st);

/* What pg_spool_next_replay would return next, without reading it: its id
 * and payload length (false when replay is over). Lets a reader keep a
 * bounded window in memory. */
bool pg_spool_peek_replay(struct pg_spool *s, uint64_t after_id, uint64_t *id, size_t *len);
/* The payload length of pending record @id; 0 when it is not pending. */
size_t pg_spool_record_len(struct pg_spool *s, uint64_t id);

/* Reads pending record @id back (any run's): *@data malloc'd, the caller
 * frees it. INTERNAL when it is not pending; IO when its checksum fails
 * (then it is counted, acked and logged by the caller: it cannot be sent). */
enum pg_err pg_spool_read(struct pg_spool *s, uint64_t id, uint8_t **data, size_t *len,
                          struct pg_status *st);

void pg_spool_get_stats(struct pg_spool *s, struct pg_spool_stats *out);

/* ---- parser (exposed for the fuzzer and tests) --------------------------- */

struct pg_spool_parse_stats {
    uint64_t records;   /* valid records */
    uint64_t corrupt;   /* corrupt regions skipped */
    uint64_t truncated; /* 1 when the buffer ends inside a record */
    size_t valid_end;   /* offset just past the last valid record */
};

/* Called for each valid record at @off (header offset) in the buffer. */
typedef void (*pg_spool_record_fn)(void *arg, uint64_t id, size_t off, const uint8_t *payload,
                                   size_t len);

/* Walks a segment image: valid records are reported; a damaged region is
 * skipped by scanning for the next record whose header checksum holds. Never
 * reads outside [buf, buf+len). */
void pg_spool_parse(const uint8_t *buf, size_t len, pg_spool_record_fn fn, void *arg,
                    struct pg_spool_parse_stats *ps);
/* Encodes a record header for @payload into @hdr (PG_SPOOL_HDR_SIZE bytes). */
void pg_spool_encode_header(uint8_t *hdr, uint64_t id, const void *payload, size_t len);

/* The spool's name in log lines ("spool" when none was given). */
const char *pg_spool_log_name(const struct pg_spool *s);

#endif
