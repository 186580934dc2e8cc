/* SPDX-License-Identifier: Apache-2.0
 * Strings entering the OTLP model from outside (pprof string tables, request
 * headers, OTTL results) are checked with core/utf8.h and repaired here; the
 * replacements are counted (pprofgate_invalid_utf8_replaced) and logged at a
 * limited rate. Any thread. */
#ifndef PG_OTLP_OTLP_UTF8_H
#define PG_OTLP_OTLP_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

/* @s itself when valid, else a NUL-terminated repaired copy in @a (*@len
 * updated), counted and logged via pg_utf8_note(@where). NULL only when @a
 * is out of memory. */
const char *pg_utf8_clean(struct pg_arena *a, const char *s, size_t *len, const char *where);

/* Counts @bad replacements made in @where ("pprof string table", "request
 * header", ...) and logs one warning line at most every few seconds. */
void pg_utf8_note(size_t bad, const char *where);

/* Replacements so far in this process (the metric's value). */
uint64_t pg_utf8_replaced_total(void);

#endif
