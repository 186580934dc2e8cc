/* SPDX-License-Identifier: Apache-2.0
 * The debug exporter's text: the collector's `normal` and `detailed` blocks
 * for profiles (exporter/debugexporter internal/normal and internal/otlptext),
 * byte for byte, and pprofgate's annotations on top of them when asked (what
 * each profile holds: sample type, period, window, totals, top frames; every
 * table entry; each sample's link and stack). Pure functions over an OTLP
 * request so tests can compare golden text; they only read the request, so
 * the writer thread may format a batch other threads share.
 * docs/debug-exporter.md is the reference for every line. */
#ifndef PG_EXPORTER_DEBUG_FORMAT_H
#define PG_EXPORTER_DEBUG_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include "otlp/otlp.h"

enum pg_debug_verbosity { PG_DEBUG_BASIC = 0, PG_DEBUG_NORMAL, PG_DEBUG_DETAILED };

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

/* Total sample records (the collector's SampleCount). */
size_t pg_debug_sample_records(const struct pg_otlp_request *req);
size_t pg_debug_resource_profiles(const struct pg_otlp_request *req);

/* The collector's raw summary (use_internal_logger: false):
 * `Profiles\t{"resource profiles": N, "sample records": M}\n`. */
void pg_debug_format_summary(struct pg_debug_buf *b, size_t resource_profiles,
                             size_t sample_records);

/* The collector's text block for @v (nothing for basic); @req borrowed,
 * never written. With @annotate pprofgate's additions go in (the exporter's
 * `pprofgate_annotations`); without, the text is the collector's exactly. */
void pg_debug_format_text(struct pg_debug_buf *b, const struct pg_otlp_request *req,
                          enum pg_debug_verbosity v, bool annotate);

/* Helpers shared with tests: Go's time.Time.String() in UTC for unix nanos,
 * Go's time.Duration.String() (`10ms`, `1m30s`), RFC 3339 in UTC with the
 * fraction trimmed (`2023-11-14T22:13:20.5Z`), and pcommon's AsString for
 * doubles (ES6 number formatting). */
void pg_debug_go_time(char *buf, size_t size, unsigned long long unix_nano);
void pg_debug_go_duration(char *buf, size_t size, long long ns);
void pg_debug_rfc3339(char *buf, size_t size, unsigned long long unix_nano);
void pg_debug_es6_double(char *buf, size_t size, double v);

#endif
