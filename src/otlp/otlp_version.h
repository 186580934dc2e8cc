/* SPDX-License-Identifier: Apache-2.0
 * The OTLP Profiles version an exporter writes (its `protocol_version`), for a
 * downstream older than pprofgate. OTLP has no version negotiation, and v1.9
 * (Collector v0.140 - v0.147) numbers Sample fields 2-4 differently from
 * v1.10/v1.11, so an older peer misreads or refuses current bytes. Batches,
 * the persistent queue's spool and the exporter helper's parts hold the
 * current layout only; each exporter turns its own copy of the encoded bytes
 * into its version when it makes a part's body, so exporters of different
 * versions share one batch. Runs on any thread. */
#ifndef PG_OTLP_OTLP_VERSION_H
#define PG_OTLP_OTLP_VERSION_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "otlp/otlp.h"

enum pg_otlp_proto_version {
    PG_OTLP_PROTO_V1_11 = 0, /* the current layout (the default) */
    PG_OTLP_PROTO_V1_10,     /* the same bytes as v1.11: no field changed */
    PG_OTLP_PROTO_V1_9,      /* Sample 2 values, 3 attribute_indices, 4 link_index; no
                              * KeyValue.key_strindex / AnyValue.string_value_strindex */
};

/* The names the config takes, in enum order ("v1.11", "v1.10", "v1.9"); NULL-terminated
 * for PG_FIELD_ENUM. */
extern const char *const pg_otlp_proto_version_names[];

/* What writing an older version changed, added to by each call. */
struct pg_otlp_version_stats {
    size_t samples;    /* Samples written with the older numbering */
    size_t references; /* attribute keys/values given by string-table reference, written as
                        * plain strings (the version has no references) */
};

/* @enc, @len: a request in the current layout (pg_otlp_request_encode's bytes). For v1.10
 * and v1.11 *@out is NULL: send @enc. For v1.9 *@out (malloc'd, the caller frees it) holds
 * *@out_len bytes of the same request in the v1.9 layout: Sample fields renumbered (the
 * same length: every tag is one byte) and, when any attribute is given by reference, the
 * request decoded, its references resolved (otlp_refs.h) and encoded again first (longer
 * by the strings' bytes). MALFORMED when @enc is not a well-formed request; NOMEM/LIMIT. */
PG_MUST_CHECK
enum pg_err pg_otlp_version_encode(enum pg_otlp_proto_version v, const uint8_t *enc, size_t len,
                                   uint8_t **out, size_t *out_len,
                                   struct pg_otlp_version_stats *stats, struct pg_status *st);

/* The same for a decoded request about to be written as OTLP/JSON (fields named, not
 * numbered: only the references differ): for v1.9 resolves them in @req, in @a. */
PG_MUST_CHECK
enum pg_err pg_otlp_version_prepare(enum pg_otlp_proto_version v, struct pg_arena *a,
                                    struct pg_otlp_request *req,
                                    struct pg_otlp_version_stats *stats, struct pg_status *st);

#endif
