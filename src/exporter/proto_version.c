/* SPDX-License-Identifier: Apache-2.0
 * An exporter's protocol_version (proto_version.h): the conversion of each
 * part's body and the count and one log line of what the older version could
 * not carry as such. */
#include "exporter/proto_version.h"

#include <stdio.h>

#include "core/log.h"

void pg_exp_version_start(struct pg_exp_version *v, int version, const char *id, const char *log)
{
    char labels[160];

    v->version = (enum pg_otlp_proto_version)version;
    v->log = log;
    v->logged = 0;
    snprintf(labels, sizeof(labels), "exporter=\"%s\"", id);
    v->m_refs = v->version == PG_OTLP_PROTO_V1_9
                    ? pg_metric_counter("pprofgate_exporter_resolved_references",
                                        "Attribute keys and values given by string-table "
                                        "reference, sent as plain strings because the "
                                        "exporter's protocol_version has no references",
                                        labels)
                    : NULL;
}

const char *pg_exp_version_describe(const struct pg_exp_version *v)
{
    return v->version == PG_OTLP_PROTO_V1_9 ? ", OTLP Profiles v1.9 layout" : "";
}

static void count(struct pg_exp_version *v, const struct pg_otlp_version_stats *vs)
{
    if (vs->references == 0) {
        return;
    }
    pg_metric_add(v->m_refs, vs->references);
    if (__atomic_exchange_n(&v->logged, 1, __ATOMIC_RELAXED) == 0) {
        pg_log_info(v->log,
                    "protocol_version v1.9 has no string-table references: %zu attribute "
                    "key(s)/value(s) sent as plain strings (logged once; counted in "
                    "pprofgate_exporter_resolved_references)",
                    vs->references);
    }
}

enum pg_err pg_exp_version_encode(struct pg_exp_version *v, const uint8_t *enc, size_t len,
                                  uint8_t **out, size_t *out_len, struct pg_status *st)
{
    struct pg_otlp_version_stats vs = {0, 0};
    enum pg_err err = pg_otlp_version_encode(v->version, enc, len, out, out_len, &vs, st);

    if (err == PG_ERR_OK) {
        count(v, &vs);
    }
    return err;
}

enum pg_err pg_exp_version_prepare(struct pg_exp_version *v, struct pg_arena *a,
                                   struct pg_otlp_request *req, struct pg_status *st)
{
    struct pg_otlp_version_stats vs = {0, 0};
    enum pg_err err = pg_otlp_version_prepare(v->version, a, req, &vs, st);

    if (err == PG_ERR_OK) {
        count(v, &vs);
    }
    return err;
}
