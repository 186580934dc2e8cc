/* SPDX-License-Identifier: Apache-2.0
 * The `protocol_version` key the otlp and otlphttp exporters share: the
 * OTLP Profiles version their requests are written in, for a downstream
 * older than pprofgate (otlp/otlp_version.h). The exporter helper hands each
 * exporter the current-layout encoding of a part (from a batch or read back
 * from the spool, which holds the current layout only); the exporter turns
 * it into its version while making the part's body, once per part, so two
 * exporters of different versions share one batch. What an older version
 * cannot hold as such is counted (pprofgate_exporter_resolved_references)
 * and logged once. Any thread. */
#ifndef PG_EXPORTER_PROTO_VERSION_H
#define PG_EXPORTER_PROTO_VERSION_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/config.h"
#include "core/err.h"
#include "core/metrics.h"
#include "otlp/otlp_version.h"

/* The field row; @member is an int (enum pg_otlp_proto_version). */
#define PG_EXP_VERSION_FIELD(st, member)                                                          \
    PG_FIELD_ENUM(st, "protocol_version", member, "v1.11", pg_otlp_proto_version_names,            \
                  "OTLP Profiles version written (pprofgate): v1.11 (the same bytes as v1.10) "   \
                  "or v1.9 for a Collector v0.140.0 - v0.147.0 downstream")

struct pg_exp_version {
    enum pg_otlp_proto_version version;
    const char *log;
    struct pg_metric *m_refs;
    int logged; /* the first conversion logged (atomic) */
};

/* At start: the version and the counter (labelled exporter=@id). */
void pg_exp_version_start(struct pg_exp_version *v, int version, const char *id, const char *log);

/* "" for the default version, else e.g. ", OTLP v1.9 layout" for the start line. */
const char *pg_exp_version_describe(const struct pg_exp_version *v);

/* The protobuf body of the current-layout @enc in the exporter's version: *@out NULL (send
 * @enc) or malloc'd (the caller frees it). */
PG_MUST_CHECK
enum pg_err pg_exp_version_encode(struct pg_exp_version *v, const uint8_t *enc, size_t len,
                                  uint8_t **out, size_t *out_len, struct pg_status *st);

/* A decoded request about to be written as OTLP/JSON, made fit for the version, in @a. */
PG_MUST_CHECK
enum pg_err pg_exp_version_prepare(struct pg_exp_version *v, struct pg_arena *a,
                                   struct pg_otlp_request *req, struct pg_status *st);

#endif
