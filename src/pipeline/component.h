/* SPDX-License-Identifier: Apache-2.0
 * The component contract, modelled on the collector's: every receiver,
 * processor, exporter and extension is a struct pg_component_ops registered in
 * the one static table of src/components.c. create() binds config and builds
 * state without opening sockets (so `validate` can run it); start() opens
 * listeners/connections; shutdown() stops intake and begins flushing; idle()
 * reports when flushing is done; destroy() frees. Start order: extensions,
 * exporters, processors, receivers; stop order is the reverse. Everything runs
 * on the main libevent loop in host->base except the pipeline entry
 * (process/consume/would_block), which runs on the receiver's loops. */
#ifndef PG_PIPELINE_COMPONENT_H
#define PG_PIPELINE_COMPONENT_H

#include <stdbool.h>

#include "pipeline/batch.h"
#include "core/config.h"
#include "core/err.h"

struct event_base;

enum pg_kind { PG_KIND_RECEIVER = 0, PG_KIND_PROCESSOR, PG_KIND_EXPORTER, PG_KIND_EXTENSION };

/* Process-wide services handed to every component. */
struct pg_host {
    struct event_base *base; /* borrowed: the main loop */
    const char *version;     /* build version, e.g. "0.1.0" */
    struct pg_service *service; /* opaque; for pg_host_* queries below */
};

/* True while every pipeline is running (for health checks). */
bool pg_host_ready(const struct pg_host *host);

/* What a receiver hands its data to: the fan-out over its pipelines.
 * Takes the caller's reference on @batch (also on error): a batch that only
 * one pipeline sees is then never copied when a processor mutates it.
 * Returns OK when every pipeline accepted it, else the first error (BUSY
 * means "answer 503 Retry-After"). */
struct pg_consumer {
    enum pg_err (*consume)(struct pg_consumer *self, struct pg_batch *batch, struct pg_status *st);
    /* Optional: true (with the reason in @st) when an exporter downstream
     * is full and configured to make callers wait (block_on_overflow)
     * rather than refuse: the receiver then holds the request and asks
     * again later instead of consuming. Borrowed @batch; nothing consumed. */
    bool (*would_block)(struct pg_consumer *self, const struct pg_batch *batch,
                        struct pg_status *st);
    /* Optional: true when consume() and would_block() may be called from
     * several threads at once (each with its own batches); else (or NULL)
     * only from the main loop's thread. False names the reason in @why. */
    bool (*any_thread)(struct pg_consumer *self, char *why, size_t why_size);
    /* Optional: true when every processor and exporter downstream takes
     * profiles whose samples are kept in wire form (otlp/otlp_lazy.h); else
     * (or NULL) the receiver unpacks samples into structs. */
    bool (*lazy_samples)(struct pg_consumer *self);
};

static inline enum pg_err pg_consumer_consume(struct pg_consumer *c, struct pg_batch *b,
                                              struct pg_status *st)
{
    return c->consume(c, b, st);
}

static inline bool pg_consumer_would_block(struct pg_consumer *c, const struct pg_batch *b,
                                           struct pg_status *st)
{
    return c->would_block != NULL && c->would_block(c, b, st);
}

/* Everything create() gets. Borrowed for the duration of create(); host,
 * id, log_name and next stay valid until destroy(). */
struct pg_component_ctx {
    struct pg_host *host;
    const char *id;              /* "pprof" or "pprof/self" */
    const char *log_name;        /* "receiver/pprof/self": prefix for log lines */
    const struct pg_cfg_node *config; /* the component's map, or NULL if empty */
    struct pg_arena *config_arena;    /* lives as long as the process: bind strings here */
    struct pg_diag *diag;        /* add every config problem here */
    struct pg_consumer *next;    /* receivers only: where batches go */
    const char *path;            /* "receivers::pprof/self": pass to pg_cfg_bind */
};

struct pg_component_ops {
    const char *type;            /* "pprof", "transform", "debug", "otlp", ... */
    const char *alias;           /* another accepted type name ("otlp_grpc"), or NULL */
    enum pg_kind kind;
    const struct pg_field *fields; /* for `pprofgate components`; may be NULL */
    const char *doc;             /* one line */

    /* Binds config into new state. On problems, adds them to ctx->diag and
     * returns PG_ERR_CONFIG (state then NULL). No sockets, threads or timers. */
    enum pg_err (*create)(const struct pg_component_ctx *ctx, void **state);
    /* Opens listeners/connections/timers on host->base. */
    enum pg_err (*start)(void *state, struct pg_status *st);
    /* Processors: may replace *batch (pg_batch_make_mutable); the reference in
     * *batch stays the caller's. A non-OK return fails the request
     * (error_mode propagate). */
    enum pg_err (*process)(void *state, struct pg_batch **batch, struct pg_status *st);
    /* Exporters: borrowed reference; pg_batch_ref() to keep it. Must not block:
     * queue and return OK, or BUSY when full. */
    enum pg_err (*consume)(void *state, struct pg_batch *batch, struct pg_status *st);
    /* Exporters, optional: true when consume() would refuse @batch for a
     * full queue and the exporter is configured to make the sender wait
     * (sending_queue.block_on_overflow). When false it may set the room
     * aside for the calling thread's next consume(), so another loop cannot
     * take it in between; entry_end() gives back what was not used. */
    bool (*would_block)(void *state, const struct pg_batch *batch);
    /* Exporters, optional: the calling thread's pipeline entry is over
     * (consumed, refused by a processor, or held after all). */
    void (*entry_end)(void *state);
    /* Stop intake, begin flushing. Idempotent; safe if start() never ran. */
    void (*shutdown)(void *state);
    /* Optional: true once nothing is in flight (drain finished). */
    bool (*idle)(void *state);
    /* Frees state; logs what could not be delivered. After shutdown(). */
    void (*destroy)(void *state);
    /* Processors and exporters: process() / consume() / would_block() may
     * run on several receiver loops at once, each with its own batch (its
     * arena the caller's); state shared between calls is atomic or locked.
     * Without it a receiver keeps one loop. */
    bool any_thread;
    /* Processors, optional: the first statement/setting that reads request
     * metadata (headers), or NULL. Receivers, optional: non-NULL when their
     * batches carry metadata (the setting that turns it on). The service
     * warns when a pipeline reads what one of its receivers drops. */
    const char *(*metadata_use)(void *state);
    /* Processors and exporters, optional: true when this instance, as
     * configured, never reads a profile's samples[] directly: it counts them
     * with pg_otlp_profile_sample_count / pg_batch_sample_count, encodes with
     * pg_otlp_request_encode (which writes lazy samples verbatim), or takes an
     * eager copy (encode + unpack, as exporterhelper/request.c). NULL or false: the otlp receiver
     * keeps every sample as a struct for its pipelines. */
    bool (*lazy_samples)(void *state);
};

/* The registry (defined in src/components.c, above core). NULL-terminated. */
extern const struct pg_component_ops *const pg_components[];
extern const size_t pg_components_count;
/* Finds @type (or its alias) of @kind in @registry (@n entries). */
const struct pg_component_ops *pg_component_find(const struct pg_component_ops *const *registry,
                                                 size_t n, enum pg_kind kind, const char *type);
const char *pg_kind_name(enum pg_kind kind);        /* "receiver" ... */
const char *pg_kind_section(enum pg_kind kind);     /* "receivers" ... */

#endif
