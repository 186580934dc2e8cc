/* SPDX-License-Identifier: Apache-2.0
 * The exporter helper's state, shared by its files: the queue (queue.c),
 * the consumers and their retries (consumer.c), turning a queued item into
 * wire parts (request.c) and the persistent queue (persistent_queue.c).
 * Not for exporters: they use exporterhelper.h. */
#ifndef PG_EXPORTERHELPER_INTERNAL_H
#define PG_EXPORTERHELPER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/time.h>

#include <event2/event.h>

#include "core/log.h"
#include "core/metrics.h"
#include "storage/spool.h"
#include "exporterhelper/exporterhelper.h"

/* One queued export: references to one or more batches (several when
 * sending_queue.batch merged them). */
struct pg_exph_item {
    struct pg_exph_item *next;
    struct pg_batch **batches; /* owned references */
    size_t n_batches;
    size_t cap_batches;
    size_t samples;
    /* With storage the batches are not kept: the item names spool records
     * (owned array of ids), read back when a consumer sends it. Acked when
     * the item is freed, unless keep_spooled (shutdown/abort: replayed at
     * the next start). */
    uint64_t *spool_ids;
    size_t n_spool_ids, cap_spool_ids;
    bool keep_spooled;
    uint8_t *raw;       /* owned: a replayed record already read (one id) */
    size_t raw_len;
    bool count_samples; /* samples unknown (replayed, bisected): count when decoded */
    uint64_t units;     /* what it counts against queue_size (sizer units) */
};

struct pg_exph_part {
    uint8_t *body; /* malloc'd: what the exporter sends (make_body's output) */
    size_t len;
    size_t samples;
};

struct pg_exph_consumer {
    struct pg_exph *h;
    struct pg_exph_item *item; /* owned; NULL when free */
    struct pg_exph_part *parts;
    size_t n_parts;
    size_t cur;
    struct pg_retry_state retry;
    struct event *timer; /* retry wait */
    bool in_call;
    bool abandoned;     /* dropped by the abort while its send was on the wire */
    uint64_t win_bytes; /* spooled bytes its item holds, charged to h->win_used */
    /* A replayed item's footprint (read back, encoded, compressed; an
     * estimate until prepared, then its bodies), charged to h->replay_used
     * and to memory_limiter as the replay's. */
    uint64_t replay_bytes;
    size_t replay_len;   /* stored bytes of the replayed record it holds */
    uint64_t prep_bytes; /* set by pg_exph_prepare(): its arena and the bodies */
    uint64_t rss_before; /* RSS when it took its replayed record */
};

/* Threads: consume() and would_block() run on any receiver loop; everything
 * else (consumers, timers, retries, replay, the transport) on the main loop.
 * `mu` guards the queue state below (the FIFO, the merge, the counters, the
 * flags); the main loop drops it while it encodes an item it has taken or
 * hands a part to the transport, so a push waits at most for a list update.
 * Recursive: a transport may report an outcome from inside send(). */
struct pg_exph {
    pthread_mutex_t mu;
    const char *id;
    const char *log;
    const struct pg_exph_config *cfg; /* borrowed */
    uint64_t max_request_bytes;
    const struct pg_exph_ops *ops;
    void *exporter;
    struct event_base *base;

    struct pg_exph_item *q_head, *q_tail; /* owned */
    size_t q_len;
    size_t q_cap;
    int sizer;
    uint64_t q_limit;           /* queue_size, in sizer units */
    uint64_t q_used;            /* units of queued, pending and in-flight items */
    /* block_on_overflow: room would_block() promised to a loop whose push
     * is on its way to consume() (a ticket per thread), counted as taken so
     * another loop cannot fill it in between. */
    uint64_t reserved;
    struct pg_exph_item *pending; /* owned: batch being accumulated (sending_queue.batch) */
    struct event *flush_timer;
    struct event *pump_ev;
    struct event *replay_timer; /* replay paused by the memory limit */

    struct pg_exph_consumer *consumers;
    size_t n_consumers;
    size_t busy;

    bool started;
    bool shutting_down;
    bool aborted;
    struct event *shutdown_timer;
    uint64_t seed;

    /* An outage: retryable failures with no success since outage_since_ns
     * (0 = none). Said when it begins, again at outage_next_ns (the gap
     * doubling up to OUTAGE_REPORT_MAX), and when an export succeeds again;
     * each attempt only at debug. */
    int64_t outage_since_ns, outage_next_ns, outage_gap_ns;
    uint64_t outage_failures;

    struct pg_metric *m_sent, *m_failed, *m_enqueue_failed, *m_retries;
    struct pg_metric *m_sent_requests, *m_capacity, *m_qsize, *m_inflight;
    char labels[160];

    /* Persistent queue (sending_queue.storage). */
    struct pg_spool *spool; /* owned; NULL without storage */
    uint64_t replay_after;  /* replay cursor: last record id taken */
    bool replay_done;
    size_t replayed;
    /* The in-memory window of this run's queued records: stored bytes read
     * back and held by consumers, charged to memory_limiter's in-flight
     * bytes too. A consumer takes a record only while it fits, except when
     * the window is empty (a larger record is sent alone). */
    uint64_t win_limit, win_used;
    /* The replay's own budget (persistent_queue.c): what replayed items hold
     * in all (replay_used) plus every other in-flight byte of the process
     * stays under replay_limit, so live pushes keep the rest of the soft
     * limit. live_turn: the next take prefers this run's queue (the two
     * alternate while both have work). */
    uint64_t replay_limit, replay_used;
    bool live_turn;
    /* Peak memory per stored byte of a replayed record that is decoded and
     * split (over max_request_bytes), in 1/16: starts at a measured 12x,
     * raised to the largest seen. */
    uint64_t split_ratio16;
    int64_t replay_alone_since_ns; /* a record over the budget waits for room since */
    /* Replay progress, for the log and the metrics. */
    uint64_t replay_total, replay_total_bytes, replay_read_bytes;
    bool replay_sized;   /* totals read after a background scan of the spool ended */
    int64_t replay_start_ns, replay_log_ns;
    struct pg_log_ratelimit replay_pause_rl;
    struct pg_metric *m_replay_left, *m_replay_left_bytes, *m_replay_mem;
    struct pg_metric *m_replayed, *m_replayed_bytes;
};

/* The exporter's lock (struct pg_exph mu), for every file of the room. */
static inline void pg_exph_lock(const struct pg_exph *h)
{
    pthread_mutex_lock(&((struct pg_exph *)h)->mu);
}

static inline void pg_exph_unlock(const struct pg_exph *h)
{
    pthread_mutex_unlock(&((struct pg_exph *)h)->mu);
}

/* Calls go one way: exporterhelper.c (lifecycle) -> queue.c, consumer.c ->
 * persistent_queue.c, request.c -> item.c, obsreport.c (and the leaves
 * config.c, retry.c, split.c). */

/* obsreport.c */
void pg_exph_count_drop(struct pg_exph *h, const char *reason, size_t samples);
void pg_exph_update_gauges(struct pg_exph *h);

/* item.c */
void pg_exph_item_free(struct pg_exph *h, struct pg_exph_item *it);
bool pg_exph_item_add(struct pg_exph_item *it, struct pg_batch *b, size_t samples);
/* Records @id as carried by @it (acked when @it is freed). */
bool pg_exph_item_add_spool_id(struct pg_exph_item *it, uint64_t id);

/* queue.c: moves the batch being accumulated (sending_queue.batch) to the
 * FIFO. Under the lock. */
void pg_exph_flush_pending(struct pg_exph *h);

/* consumer.c */
void pg_exph_pump(struct pg_exph *h);
void pg_exph_consumer_release(struct pg_exph_consumer *c);
void pg_exph_on_retry_timer(evutil_socket_t fd, short what, void *arg);

/* request.c: encodes the consumer's item into parts; false when nothing is
 * left to send (everything dropped and counted). */
bool pg_exph_prepare(struct pg_exph_consumer *c);

/* persistent_queue.c */
enum pg_err pg_exph_spool_encode(struct pg_exph *h, struct pg_batch *batch,
                                 struct pg_arena **arena, uint8_t **enc, size_t *enc_len,
                                 struct pg_status *st);
void pg_exph_window_init(struct pg_exph *h);
void pg_exph_replay_start(struct pg_exph *h);
/* Whether a consumer may take the next replayed record now (false: the
 * replay budget, memory_limiter or RSS leaves no room; a release or the
 * replay timer pumps again). */
bool pg_exph_replay_room(struct pg_exph *h);
struct pg_exph_item *pg_exph_replay_take(struct pg_exph *h);
/* What a replayed record of @len stored bytes takes in memory until sent. */
uint64_t pg_exph_replay_footprint(const struct pg_exph *h, size_t len);
/* Replayed item's footprint: @c charges @bytes in all from now (the
 * estimate when taken, its bodies once prepared, 0 when released). */
void pg_exph_replay_charge(struct pg_exph_consumer *c, uint64_t bytes);
/* After @c prepared its replayed record: learn its peak, charge its bodies. */
void pg_exph_replay_prepared(struct pg_exph_consumer *c);

#endif
