/* SPDX-License-Identifier: Apache-2.0
 * Pyroscope's text formats, `format=folded` ("a;b;c 42" per line) and `format=lines` (one
 * stack per line, each counting 1), turned into an uncompressed, encoded pprof Profile so
 * the rest of the path is the pprof path. Pure converter of the pyroscope room: no I/O,
 * every size capped, output in the caller's arena; failures MALFORMED (400) or LIMIT (413)
 * naming the line. */
#ifndef PG_PYROSCOPE_PYRO_FOLDED_H
#define PG_PYROSCOPE_PYRO_FOLDED_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

enum pg_pyro_text_format { PG_PYRO_FOLDED, PG_PYRO_LINES };

struct pg_pyro_folded_opts {
    const char *sample_type, *sample_unit; /* e.g. "cpu","nanoseconds" or "samples","count" */
    const char *period_type, *period_unit; /* may be NULL: no period type written */
    int64_t period;                        /* 0: none */
    int64_t time_nanos, duration_nanos;    /* 0: not written */
    size_t max_lines, max_depth, max_frame_bytes; /* caps (0: the defaults below); LIMIT naming
                                                   * the cap when passed */
    int64_t scale; /* 0 or 1: values are the counts; else each count times @scale (Pyroscope:
                    * cpu/wall counts times the period 1e9/sampleRate ns); overflow: MALFORMED */
};

#define PG_PYRO_FOLDED_MAX_LINES 1000000u  /* default cap on stacks (non-blank lines) */
#define PG_PYRO_FOLDED_MAX_DEPTH 4096u     /* default cap on frames in one stack */
#define PG_PYRO_FOLDED_MAX_FRAME 16384u    /* default cap on the bytes of one frame name */

/* Frames become one Function + Location each (deduplicated by name, ids in order of first
 * appearance, no Mapping); the leaf is the LAST frame of a line (Brendan Gregg's collapsed
 * format), so it is the first location_id of the Sample. Equal stacks are merged into one
 * Sample with the summed count (as Pyroscope's tree does; `lines` counts each occurrence);
 * a stack whose count is 0 writes no Sample. The stack is the text before the LAST space
 * (frames may hold spaces), frames split on ';'; trailing spaces and tabs are trimmed.
 * Errors: a folded line with no count, a count that is not a non-negative integer or does
 * not fit int64 (10^30: MALFORMED naming the line), an empty frame name, a line over the
 * caps. Blank lines and a trailing "\r" are ignored. */
enum pg_err pg_pyro_folded_to_pprof(struct pg_arena *a, const uint8_t *text, size_t len,
                                    enum pg_pyro_text_format fmt,
                                    const struct pg_pyro_folded_opts *o, uint8_t **out,
                                    size_t *out_len, struct pg_status *st);

#endif
