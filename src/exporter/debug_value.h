/* SPDX-License-Identifier: Apache-2.0
 * Single values as the collector's debug text writes them (Go's time and
 * duration strings, pcommon's AsString and Type(value), hex ids, dictionary
 * strings with their range check) and the growable buffer they go into.
 * Shared by the collector's text (debug_format.c) and pprofgate's
 * annotations (debug_annotate.c); pure functions, any thread. */
#ifndef PG_EXPORTER_DEBUG_VALUE_H
#define PG_EXPORTER_DEBUG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "otlp/otlp.h"

/* A growable text buffer (malloc'd, reused between batches). Appends never
 * fail loudly: after an allocation failure or past @max, `truncated` is set
 * and further text is dropped. */
struct pg_debug_buf {
    char *p;       /* owned, NUL-terminated when len > 0 */
    size_t len;
    size_t cap;
    size_t max;    /* 0 = no limit */
    bool truncated;
};

void pg_debug_buf_reset(struct pg_debug_buf *b);
void pg_debug_buf_free(struct pg_debug_buf *b);
void pg_debug_buf_append(struct pg_debug_buf *b, const char *s, size_t n);
void pg_debug_buf_printf(struct pg_debug_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pg_debug_put(struct pg_debug_buf *b, const char *s);

/* Go's time.Time.String() in UTC for unix nanos, Go's time.Duration.String()
 * (`10ms`, `1m30s`), RFC 3339 in UTC with the fraction trimmed
 * (`2023-11-14T22:13:20.5Z`), and pcommon's AsString for doubles (ES6
 * number formatting). */
void pg_debug_go_time(char *buf, size_t size, unsigned long long unix_nano);
void pg_debug_go_duration(char *buf, size_t size, long long ns);
void pg_debug_rfc3339(char *buf, size_t size, unsigned long long unix_nano);
void pg_debug_es6_double(char *buf, size_t size, double v);

static inline const char *pg_debug_str0(const char *s)
{
    return s ? s : "";
}

/* string_table[@i], or NULL when @d is NULL or @i out of range. */
const char *pg_debug_dict_str(const pg_otlp_dict *d, int32_t i);
/* A KeyValue's key (its key_strindex resolved when the key is empty). */
const char *pg_debug_kv_key(const pg_otlp_kv *kv, const pg_otlp_dict *d);
/* Lowercase hex; an all-zero (empty) id prints as nothing, as pdata's. */
void pg_debug_put_hex(struct pg_debug_buf *b, const uint8_t *p, size_t n);
/* pcommon Value.AsString(), and "Type(AsString)". */
void pg_debug_put_as_string(struct pg_debug_buf *b, const pg_otlp_anyvalue *v,
                            const pg_otlp_dict *d);
void pg_debug_put_typed(struct pg_debug_buf *b, const pg_otlp_anyvalue *v, const pg_otlp_dict *d);

#endif
