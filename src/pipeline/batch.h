/* SPDX-License-Identifier: Apache-2.0
 * The unit of data flowing receiver -> processors -> exporters: one OTLP
 * ExportProfilesServiceRequest (resource profiles + one shared dictionary)
 * plus the request metadata, all living in one arena that the batch owns.
 * Fan-out hands out references, never copies; a processor that mutates a
 * shared batch first calls pg_batch_make_mutable(). Refcounts are atomic so an
 * exporter may hold a batch on another thread. */
#ifndef PG_PIPELINE_BATCH_H
#define PG_PIPELINE_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "otlp/otlp.h"

/* One request header value. Keys are lower-cased; a header line that appears
 * several times gives several entries, in order. */
struct pg_metadata_entry {
    const char *key;   /* in the batch arena */
    const char *value; /* in the batch arena */
};

struct pg_metadata {
    size_t n;
    struct pg_metadata_entry *entries; /* in the batch arena */
    const char *peer_addr;             /* "ip:port" of the client, or NULL */
};

/* Case-insensitive lookup of the @idx-th value of @key; NULL when absent. */
const char *pg_metadata_get(const struct pg_metadata *md, const char *key, size_t idx);
size_t pg_metadata_count(const struct pg_metadata *md, const char *key);

struct pg_batch {
    int refcnt;                   /* atomic; starts at 1 */
    struct pg_arena *arena;       /* owned: everything below lives in it */
    struct pg_otlp_request *req;  /* in arena */
    struct pg_metadata metadata;  /* in arena; empty unless include_metadata */
    uint64_t received_unix_nano;  /* when the receiver accepted it */
    size_t raw_bytes;             /* size of the body as received */
    const char *receiver_id;      /* static or config-owned, e.g. "pprof" */
    /* Receiver's `default_service_name` (config-owned) or NULL: used by the
     * pipeline when no service.name survives the processors. */
    const char *default_service_name;
    bool heap;                    /* the struct itself was calloc'd, not in arena */
};

/* Wraps @req (allocated in @arena) in a batch with one reference. Takes
 * ownership of @arena on success and on failure (destroyed then). */
struct pg_batch *pg_batch_new(struct pg_arena *arena, struct pg_otlp_request *req);
struct pg_batch *pg_batch_ref(struct pg_batch *b);
/* Drops a reference; the last one destroys the arena. NULL ok. */
void pg_batch_unref(struct pg_batch *b);

/* Consumes the caller's reference on *@b. On success *@b has refcnt 1 and may
 * be modified: the same batch when it was not shared, else a deep copy in a
 * new arena of the same cap. On failure *@b is untouched (still the caller's). */
PG_MUST_CHECK
enum pg_err pg_batch_make_mutable(struct pg_batch **b, struct pg_status *st);

/* Total sample records over every profile (the collector's SampleCount). */
size_t pg_batch_sample_count(const struct pg_batch *b);
size_t pg_batch_profile_count(const struct pg_batch *b);

/* Serialises b->req as protobuf into @arena; *@out/@len point into it. */
PG_MUST_CHECK
enum pg_err pg_batch_encode(const struct pg_batch *b, struct pg_arena *arena, uint8_t **out,
                            size_t *len, struct pg_status *st);

#endif
