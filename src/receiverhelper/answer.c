/* SPDX-License-Identifier: Apache-2.0
 * pg_err -> HTTP status / gRPC code / retry delay, and the answer
 * counters' series (answer.h). */
#include "receiverhelper/answer.h"

#include <stdio.h>

#include "grpc/grpc_wire.h"

int pg_rxh_http_status(enum pg_err err)
{
    int code = pg_err_http_status(err);

    return code < 400 ? 500 : code;
}

int pg_rxh_grpc_code(enum pg_err err)
{
    switch (err) {
    case PG_ERR_OK:
        return PG_GRPC_OK;
    case PG_ERR_MALFORMED:
        return PG_GRPC_INVALID_ARGUMENT;
    case PG_ERR_LIMIT:
        /* Without RetryInfo: the OTLP spec makes it permanent, as it is. */
        return PG_GRPC_RESOURCE_EXHAUSTED;
    case PG_ERR_UNSUPPORTED:
        return PG_GRPC_UNIMPLEMENTED;
    case PG_ERR_TIMEOUT:
        return PG_GRPC_DEADLINE_EXCEEDED;
    case PG_ERR_BUSY:
    case PG_ERR_UNAVAILABLE:
    case PG_ERR_IO:
        /* The Collector's rule for an error without a status: retryable
         * means UNAVAILABLE. */
        return PG_GRPC_UNAVAILABLE;
    default:
        /* ... and a permanent one INTERNAL (NOMEM, PROCESSING, PERMANENT,
         * CONFIG, INTERNAL). */
        return PG_GRPC_INTERNAL;
    }
}

int pg_rxh_grpc_code_for_http(int http_status)
{
    switch (http_status) {
    case 200:
    case 204:
        return PG_GRPC_OK;
    case 400:
        return PG_GRPC_INVALID_ARGUMENT;
    case 401:
        return PG_GRPC_UNAUTHENTICATED;
    case 403:
        return PG_GRPC_PERMISSION_DENIED;
    case 404:
        return PG_GRPC_UNIMPLEMENTED;
    case 429:
        return PG_GRPC_RESOURCE_EXHAUSTED;
    case 502:
    case 503:
    case 504:
        return PG_GRPC_UNAVAILABLE;
    default:
        return PG_GRPC_UNKNOWN;
    }
}

int pg_rxh_retry_after_s(enum pg_err err)
{
    return err == PG_ERR_BUSY || err == PG_ERR_UNAVAILABLE ? 1 : -1;
}

struct pg_metric *pg_rxh_code_series(struct pg_rxh_codes *tab, const char *name, const char *help,
                                     const char *id, const char *extra, int code)
{
    char labels[240];
    struct pg_metric *m;

    if (extra != NULL && extra[0] != '\0') {
        snprintf(labels, sizeof(labels), "receiver=\"%s\",%s,code=\"%d\"", id, extra, code);
    } else {
        snprintf(labels, sizeof(labels), "receiver=\"%s\",code=\"%d\"", id, code);
    }
    m = pg_metric_counter(name, help, labels);
    if (tab->n < PG_RXH_CODES) {
        tab->v[tab->n].code = code;
        tab->v[tab->n++].m = m;
    }
    return m;
}
