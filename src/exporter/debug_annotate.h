/* SPDX-License-Identifier: Apache-2.0
 * pprofgate's annotations on the collector's debug text (the exporter's
 * `pprofgate_annotations`): what each profile holds (sample type, period,
 * window, value total, top leaf frames by self value), pprof's sample-type
 * order by name, every attribute and link table entry, each sample's link
 * and stack. Called by debug_format.c at the places docs/debug-exporter.md
 * names; pure functions over a request they only read (the writer thread
 * formats batches other threads share). */
#ifndef PG_EXPORTER_DEBUG_ANNOTATE_H
#define PG_EXPORTER_DEBUG_ANNOTATE_H

#include "exporter/debug_value.h"

/* Scratch for the top frames: self value per leaf frame of one profile,
 * reused between the profiles of a batch (malloc'd; the caller starts it
 * zeroed and frees it with pg_debug_frames_free). */
struct pg_debug_frame_slot;
struct pg_debug_frames {
    struct pg_debug_frame_slot *v;
    size_t cap, n;
    bool incomplete; /* a frame did not fit */
};

void pg_debug_frames_free(struct pg_debug_frames *t);

/* "type/unit" of @vt into @out (returned); "?" for an unset or missing part. */
const char *pg_debug_value_type_name(char *out, size_t size, const pg_otlp_dict *d,
                                     const pg_otlp_valuetype *vt);

/* normal: ` sample_type=… total=… [period=… period_type=…] start=… duration=…`
 * after a profile line's `samples=N`; ` pprof_sample_types=…` at the end of
 * a scope line (nothing when sample_type_order cannot be decoded). */
void pg_debug_annot_profile_fields(struct pg_debug_buf *b, const pg_otlp_dict *d,
                                   const pg_otlp_profile *p);
void pg_debug_annot_scope_fields(struct pg_debug_buf *b, const pg_otlp_dict *d,
                                 const pg_otlp_scopeprof *sp);

/* detailed: the `pprof sample types:` line after a scope's attributes; the
 * Sample type / Period / Duration / Total / Top frames lines after a
 * profile's header (@d may be NULL: no top frames); a sample's Link and
 * Stack lines; every attribute and link table entry. */
void pg_debug_annot_scope_lines(struct pg_debug_buf *b, const pg_otlp_dict *d,
                                const pg_otlp_scopeprof *sp);
void pg_debug_annot_profile_lines(struct pg_debug_buf *b, const pg_otlp_dict *d,
                                  const pg_otlp_profile *p, struct pg_debug_frames *t);
void pg_debug_annot_sample(struct pg_debug_buf *b, const pg_otlp_dict *d, const pg_otlp_sample *s);
void pg_debug_annot_tables(struct pg_debug_buf *b, const pg_otlp_dict *d);

#endif
