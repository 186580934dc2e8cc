/* SPDX-License-Identifier: Apache-2.0
 * The `from` and `until` query values of a Pyroscope /ingest push, read as Pyroscope's
 * attime.Parse reads them: all digits is a Unix time whose unit the digit count tells
 * (13 ms, 16 us, 19 ns, else seconds; 8 digits that form a date are YYYYMMDD), otherwise
 * "now" with an optional offset ("now-1h", "-30s"). Pure, no clock: the caller passes now. */
#ifndef PG_PYROSCOPE_PYRO_TIME_H
#define PG_PYROSCOPE_PYRO_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* *@out_ns = the time @s[0..len) names, in Unix nanoseconds; empty means @now_ns (Pyroscope
 * uses the arrival time). MALFORMED naming the value when it is neither form, or does not
 * fit int64 nanoseconds. Stricter than Pyroscope, which reads an unknown offset unit as 0
 * and any text before the offset as "now". */
enum pg_err pg_pyro_time_parse(const char *s, size_t len, int64_t now_ns, int64_t *out_ns,
                               struct pg_status *st);

#endif
