/* SPDX-License-Identifier: Apache-2.0
 * The one UTF-8 rule for everything that reaches an OTLP `string` field or a
 * log line: proto3 strings must be valid UTF-8 (Go's protobuf, the
 * collector's, rejects a whole request otherwise), so every string entering
 * the model from outside (pprof string tables, request headers, OTTL
 * results) is checked here and each invalid byte becomes U+FFFD. NUL counts
 * as invalid too: protobuf-c strings are C strings. Replacements are counted
 * (pprofgate_invalid_utf8_replaced) and logged at a limited rate. */
#ifndef PG_CORE_UTF8_H
#define PG_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

/* Length (1..4) of the valid UTF-8 sequence at @p with @n bytes available;
 * 0 when the byte starts no valid sequence: a stray continuation byte, an
 * overlong form, a surrogate (U+D800..DFFF), a code point past U+10FFFF, a
 * sequence cut short, or NUL. */
size_t pg_utf8_seq(const uint8_t *p, size_t n);

/* True when @s[0..n) is valid UTF-8 without NUL bytes. */
bool pg_utf8_valid(const char *s, size_t n);

/* Writes @s[0..n) into @dst (room for 3 * n bytes) with every byte that
 * starts no valid sequence replaced by U+FFFD (EF BF BD); returns the
 * output length and adds the number of replacements to *@bad. */
size_t pg_utf8_repair(char *dst, const char *s, size_t n, size_t *bad);

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
