/* SPDX-License-Identifier: Apache-2.0
 * What every receiver does with an answer, whatever its protocol: the
 * status an error becomes (HTTP status, gRPC code, Retry-After), and the
 * per-code answer counters. The mapping follows the Collector's otlp
 * receiver (internal/errors) and consumererror: retryable errors are
 * UNAVAILABLE / 503 with a retry delay, bad data INVALID_ARGUMENT / 400,
 * a cap RESOURCE_EXHAUSTED / 413, the rest INTERNAL / 500. */
#ifndef PG_RECEIVERHELPER_ANSWER_H
#define PG_RECEIVERHELPER_ANSWER_H

#include <stddef.h>

#include "core/err.h"
#include "core/metrics.h"

/* The HTTP status a receiver answers @err with: the error table's, never
 * below 400 (an error must not look like success). */
int pg_rxh_http_status(enum pg_err err);
/* The gRPC status code (enum pg_grpc_code, grpc/grpc_wire.h) for @err. */
int pg_rxh_grpc_code(enum pg_err err);
/* The gRPC code an HTTP error status stands for, as the Collector's
 * statusconversion maps it (400 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 403
 * PERMISSION_DENIED, 404 UNIMPLEMENTED, 429 RESOURCE_EXHAUSTED,
 * 502/503/504 UNAVAILABLE, else UNKNOWN): the code of a google.rpc.Status
 * body. */
int pg_rxh_grpc_code_for_http(int http_status);
/* Seconds for Retry-After / RetryInfo when @err is backpressure the client
 * should wait out (BUSY, UNAVAILABLE), else -1. */
int pg_rxh_retry_after_s(enum pg_err err);

/* Answers by code: one counter series per code (created on first use),
 * looked up in a small table that one thread owns (a receiver loop's). */
struct pg_rxh_code_metric {
    int code;
    struct pg_metric *m;
};
#define PG_RXH_CODES 16
struct pg_rxh_codes {
    struct pg_rxh_code_metric v[PG_RXH_CODES];
    size_t n;
};

/* The series of @code: labels receiver="@id"[,@extra],code="@code"; kept
 * in @tab while it has room. Cold path of pg_rxh_count. */
struct pg_metric *pg_rxh_code_series(struct pg_rxh_codes *tab, const char *name, const char *help,
                                     const char *id, const char *extra, int code);

/* Adds one to @code's counter. Inline: every answer, 2xx included, passes
 * here on the push path. */
static inline void pg_rxh_count(struct pg_rxh_codes *tab, const char *name, const char *help,
                                const char *id, const char *extra, int code)
{
    for (size_t i = 0; i < tab->n; i++) {
        if (tab->v[i].code == code) {
            pg_metric_add(tab->v[i].m, 1);
            return;
        }
    }
    pg_metric_add(pg_rxh_code_series(tab, name, help, id, extra, code), 1);
}

#endif
