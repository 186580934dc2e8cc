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

#include "exporter/debug_value.h"
#include "otlp/otlp.h"

enum pg_debug_verbosity { PG_DEBUG_BASIC = 0, PG_DEBUG_NORMAL, PG_DEBUG_DETAILED };

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

#endif
