/* SPDX-License-Identifier: Apache-2.0
 * What the otlphttp exporter (otlphttp.c) shows beyond its component ops:
 * its reading of Retry-After, for unit tests. */
#ifndef PG_EXPORTER_OTLPHTTP_H
#define PG_EXPORTER_OTLPHTTP_H

#include <stdint.h>

/* Retry-After as the collector's otlphttp exporter reads it: delay-seconds
 * (an integer) first, then an HTTP-date (RFC 1123 form, read as UTC)
 * relative to @now_unix. The delay in ns, or -1 when @v is NULL, neither,
 * negative or in the past. */
int64_t pg_otlphttp_retry_after(const char *v, int64_t now_unix);

#endif
