/* SPDX-License-Identifier: Apache-2.0
 * Tables generated from PG_ERR_LIST and the pg_status helpers. */
#include "core/err.h"

#include <stdio.h>
#include <string.h>

static const char *const err_msgs[] = {
#define PG_X(name, msg, http) msg,
    PG_ERR_LIST(PG_X)
#undef PG_X
};

static const char *const err_names[] = {
#define PG_X(name, msg, http) #name,
    PG_ERR_LIST(PG_X)
#undef PG_X
};

static const int err_http[] = {
#define PG_X(name, msg, http) http,
    PG_ERR_LIST(PG_X)
#undef PG_X
};

const char *pg_strerror(enum pg_err err)
{
    if ((unsigned)err >= PG_ERR__COUNT) {
        return "unknown error";
    }
    return err_msgs[err];
}

const char *pg_err_name(enum pg_err err)
{
    if ((unsigned)err >= PG_ERR__COUNT) {
        return "UNKNOWN";
    }
    return err_names[err];
}

int pg_err_http_status(enum pg_err err)
{
    if ((unsigned)err >= PG_ERR__COUNT) {
        return 500;
    }
    return err_http[err];
}

bool pg_err_is_retryable(enum pg_err err)
{
    return err == PG_ERR_BUSY || err == PG_ERR_UNAVAILABLE || err == PG_ERR_TIMEOUT ||
           err == PG_ERR_IO;
}

enum pg_err pg_status_vset(struct pg_status *st, enum pg_err code, const char *fmt, va_list ap)
{
    if (st == NULL) {
        return code;
    }
    st->code = code;
    if (fmt == NULL) {
        st->msg[0] = '\0';
    } else {
        vsnprintf(st->msg, sizeof(st->msg), fmt, ap);
    }
    return code;
}

enum pg_err pg_status_set(struct pg_status *st, enum pg_err code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    pg_status_vset(st, code, fmt, ap);
    va_end(ap);
    return code;
}

void pg_status_clear(struct pg_status *st)
{
    if (st != NULL) {
        st->code = PG_ERR_OK;
        st->msg[0] = '\0';
    }
}

const char *pg_status_text(const struct pg_status *st)
{
    if (st == NULL || st->msg[0] == '\0') {
        return pg_strerror(st ? st->code : PG_ERR_INTERNAL);
    }
    return st->msg;
}
