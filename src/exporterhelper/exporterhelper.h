/* SPDX-License-Identifier: Apache-2.0
 * What every exporter shares, as the collector's exporterhelper: the
 * standard keys (timeout, retry_on_failure, sending_queue with its sizer,
 * batch and storage, shutdown_timeout), the bounded sending queue drained by
 * num_consumers consumers, merging pushes into batches, splitting requests
 * over a byte cap, retrying with backoff, the persistent queue on a
 * file_storage spool (this run's records read back through a bounded memory
 * window; the previous run's replayed at start within a memory budget of its
 * own, alternating with this run's) and the exporter metrics. An exporter brings only its transport:
 * it turns one encoded OTLP request into a body and sends it, then reports
 * SENT, RETRYABLE (with the server's delay) or PERMANENT.
 * pg_exph_consume() and pg_exph_would_block() may be called from any
 * receiver loop's thread at once; everything else (consumers, timers,
 * retries, replay, the transport's callbacks) runs on the main loop. */
#ifndef PG_EXPORTERHELPER_EXPORTERHELPER_H
#define PG_EXPORTERHELPER_EXPORTERHELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "exporterhelper/retry.h"
#include "pipeline/batch.h"

struct event_base;

/* ---- configuration: the standard keys -------------------------------------- */

enum pg_exph_sizer { PG_EXPH_SIZER_REQUESTS, PG_EXPH_SIZER_ITEMS, PG_EXPH_SIZER_BYTES };

struct pg_exph_batch_config {
    int64_t flush_timeout;
    int64_t min_size; /* samples */
    int64_t max_size; /* samples; 0 = no limit */
};

struct pg_exph_queue_config {
    bool enabled;
    int64_t queue_size;
    int64_t num_consumers;
    bool block_on_overflow;
    struct pg_exph_batch_config batch;
    bool has_batch;
    char *storage; /* id of a file_storage extension, or NULL */
    uint64_t replay_memory; /* bytes a replay of the spool may hold; 0 = derived */
    int sizer;     /* enum pg_exph_sizer: the unit of queue_size */
};

struct pg_exph_config {
    int64_t timeout; /* per attempt: the transport applies it */
    struct pg_retry_config retry;
    struct pg_exph_queue_config queue;
    int64_t shutdown_timeout;
};

extern const struct pg_field pg_exph_retry_fields[];
extern const struct pg_field pg_exph_queue_fields[];

/* The rows an exporter puts in its field table to bind the standard keys
 * into its `struct pg_exph_config` @member (of struct @st). */
#define PG_EXPH_FIELDS(st, member)                                                                 \
    {"timeout", PG_FT_DURATION, offsetof(st, member.timeout), "5s", 0, 0, NULL, NULL,             \
     PG_NO_PRESENT, "per attempt"},                                                                \
        {"retry_on_failure", PG_FT_SECTION, offsetof(st, member.retry), NULL, 0, 0,                \
         pg_exph_retry_fields, NULL, PG_NO_PRESENT, NULL},                                         \
        {"sending_queue", PG_FT_SECTION, offsetof(st, member.queue), NULL, 0, 0,                   \
         pg_exph_queue_fields, NULL, PG_NO_PRESENT, NULL},                                         \
        {"shutdown_timeout", PG_FT_DURATION, offsetof(st, member.shutdown_timeout), "10s", 0, 0,   \
         NULL, NULL, PG_NO_PRESENT, "how long shutdown drains the queue; then the rest stays in the spool (storage) or is dropped"}

/* After pg_cfg_bind: the checks the field table cannot express (batch sizes,
 * the storage extension exists). Adds each problem to @diag; returns their
 * number. */
size_t pg_exph_config_check(const struct pg_exph_config *c, struct pg_diag *diag,
                            const struct pg_cfg_node *at, const char *path);

const char *pg_exph_sizer_name(int sizer);

/* ---- what an exporter implements ------------------------------------------- */

/* One consumer: it sends one request at a time. Opaque. */
struct pg_exph_consumer;

enum pg_exph_outcome {
    PG_EXPH_SENT = 0,  /* accepted by the destination */
    PG_EXPH_RETRYABLE, /* try again after a backoff */
    PG_EXPH_PERMANENT, /* rejected for good: dropped and counted */
};

struct pg_exph_result {
    enum pg_exph_outcome outcome;
    int64_t retry_after_ns; /* RETRYABLE: the destination's throttle (RetryInfo), < 0 = none */
    const char *status;     /* the destination's status name, for logs ("UNAVAILABLE") */
    const char *reason;     /* PERMANENT: the drop metric's reason label ("invalid_argument") */
    const char *message;    /* the destination's message */
};

struct pg_exph_ops {
    /* Optional: the body sent for one part, from its OTLP encoding @enc
     * (borrowed), malloc'd into *@body (e.g. compressed). NULL, or *@body
     * left NULL: a copy of the encoding is sent. Once per part, not per
     * attempt. */
    enum pg_err (*make_body)(void *exporter, const uint8_t *enc, size_t len, uint8_t **body,
                             size_t *body_len, struct pg_status *st);
    /* Starts sending @body (borrowed until the outcome is reported) without
     * blocking. The outcome comes later, exactly once, on the loop, through
     * pg_exph_send_done(@c). Non-OK: not started; the part is dropped and
     * counted (reason "internal"). */
    enum pg_err (*send)(void *exporter, struct pg_exph_consumer *c, const uint8_t *body,
                        size_t len, struct pg_status *st);
};

struct pg_exph_params {
    const char *id;                    /* component id, for messages and metric labels */
    const char *log;                   /* log prefix ("exporter/otlp") */
    const struct pg_exph_config *cfg;  /* borrowed; outlives the helper */
    uint64_t max_request_bytes;        /* parts are split under this encoded size; 0 = no cap */
    const struct pg_exph_ops *ops;     /* borrowed, static */
    void *exporter;                    /* handed back to every op */
};

struct pg_exph;

/* At create(): no events, files or metrics yet. NULL when out of memory. */
struct pg_exph *pg_exph_new(const struct pg_exph_params *p);

/* At start(): timers on @base, metrics, the persistent queue opened; the
 * previous run's backlog starts replaying from the loop. */
enum pg_err pg_exph_start(struct pg_exph *h, struct event_base *base, struct pg_status *st);

/* An exporter's consume(): queues @batch (borrowed; a reference is taken,
 * or with storage the batch is spooled before this returns OK). BUSY when
 * the queue is full, LIMIT when it could never fit, UNAVAILABLE while
 * shutting down. Never blocks. */
enum pg_err pg_exph_consume(struct pg_exph *h, struct pg_batch *batch, struct pg_status *st);

/* An exporter's would_block(): true when consume() would refuse @batch for a
 * full queue and block_on_overflow is set. When false, the room is set aside
 * for this thread's next consume() (other loops see it taken) until that
 * consume() or pg_exph_entry_end(). */
bool pg_exph_would_block(struct pg_exph *h, const struct pg_batch *batch);

/* An exporter's entry_end(): this thread's pipeline entry is over; room
 * would_block() set aside and consume() did not use is given back. */
void pg_exph_entry_end(struct pg_exph *h);

/* An exporter's shutdown(): no more intake; the queue drains until
 * shutdown_timeout, then what is left stays in the spool (with storage) or is
 * dropped, logged and counted. */
void pg_exph_shutdown(struct pg_exph *h);

/* An exporter's idle(): nothing queued, merging or in flight. */
bool pg_exph_idle(const struct pg_exph *h);

/* The component ops an exporter forwards to its helper, for a state whose first member is
 * its `struct pg_exph *` (the otlp and otlphttp exporters'): consume, would_block and
 * entry_end from any loop, shutdown and idle from the main loop, as the calls above. */
enum pg_err pg_exph_op_consume(void *state, struct pg_batch *batch, struct pg_status *st);
bool pg_exph_op_would_block(void *state, const struct pg_batch *batch);
void pg_exph_op_entry_end(void *state);
void pg_exph_op_shutdown(void *state);
bool pg_exph_op_idle(void *state);

/* Drops everything still queued or in flight (kept on disk with storage)
 * and logs what was lost. Sends still on the wire are abandoned: their
 * pg_exph_send_done() only frees them. Call before the transport is torn
 * down; then pg_exph_free(). */
void pg_exph_stop(struct pg_exph *h);

/* Frees the helper, once the transport can call pg_exph_send_done() no more. */
void pg_exph_free(struct pg_exph *h);

/* The transport reports the outcome of a send() on @c. */
void pg_exph_send_done(struct pg_exph_consumer *c, const struct pg_exph_result *r);

/* The exporter pointer given in pg_exph_params, for a transport callback. */
void *pg_exph_consumer_exporter(const struct pg_exph_consumer *c);

/* "10 consumers, queue 1000 requests", for the exporter's start-up line. */
void pg_exph_describe(const struct pg_exph *h, char *buf, size_t len);

#endif
