/* SPDX-License-Identifier: Apache-2.0
 * One error enum for all of pprofgate: 0 is success, every other value comes
 * with a human message carried in struct pg_status. The list is an X-macro so
 * names, messages and the HTTP status mapping cannot drift apart. */
#ifndef PG_CORE_ERR_H
#define PG_CORE_ERR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* X(name, default message, HTTP status a receiver answers with) */
#define PG_ERR_LIST(X)                                                       \
    X(OK,          "ok",                                    204)             \
    X(NOMEM,       "out of memory",                         500)             \
    X(LIMIT,       "size limit exceeded",                   413)             \
    X(MALFORMED,   "malformed input",                       400)             \
    X(UNSUPPORTED, "unsupported media type or encoding",    415)             \
    X(CONFIG,      "invalid configuration",                 500)             \
    X(BUSY,        "pipeline full, retry later",            503)             \
    X(UNAVAILABLE, "downstream unavailable",                503)             \
    X(PROCESSING,  "processing failed",                     500)             \
    X(PERMANENT,   "rejected by destination",               500)             \
    X(TIMEOUT,     "timed out",                             504)             \
    X(IO,          "I/O error",                             500)             \
    X(INTERNAL,    "internal error",                        500)

enum pg_err {
#define PG_X(name, msg, http) PG_ERR_##name,
    PG_ERR_LIST(PG_X)
#undef PG_X
    PG_ERR__COUNT
};

const char *pg_strerror(enum pg_err err);
const char *pg_err_name(enum pg_err err);
int pg_err_http_status(enum pg_err err);
/* BUSY, UNAVAILABLE, TIMEOUT and IO are worth retrying; the rest are not. */
bool pg_err_is_retryable(enum pg_err err);

/* An error code plus a one-line human message (it becomes a log line or an
 * HTTP response body). Embedded by value; never allocated. */
/* On functions whose result says whether they worked: ignoring it is a
 * compile error under -Werror (gcc does not accept a (void) cast either). */
#define PG_MUST_CHECK __attribute__((warn_unused_result))

#define PG_STATUS_MSG_MAX 256
struct pg_status {
    enum pg_err code;
    char msg[PG_STATUS_MSG_MAX];
};

/* Sets code and a printf-formatted message; returns code so callers can
 * `return pg_status_set(st, PG_ERR_MALFORMED, "...")`. @st may be NULL. */
enum pg_err pg_status_set(struct pg_status *st, enum pg_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum pg_err pg_status_vset(struct pg_status *st, enum pg_err code, const char *fmt, va_list ap);
void pg_status_clear(struct pg_status *st);
/* The message, or the code's default message when none was set. */
const char *pg_status_text(const struct pg_status *st);

#endif
