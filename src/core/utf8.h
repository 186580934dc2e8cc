/* SPDX-License-Identifier: Apache-2.0
 * The one UTF-8 rule for everything that reaches an OTLP `string` field or a
 * log line: proto3 strings must be valid UTF-8 (Go's protobuf, the
 * collector's, rejects a whole request otherwise), so each invalid byte
 * becomes U+FFFD. NUL counts as invalid too: protobuf-c strings are C
 * strings. Pure functions; the policy that counts and logs repairs before an
 * OTLP string field is otlp/otlp_utf8.h. */
#ifndef PG_CORE_UTF8_H
#define PG_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
