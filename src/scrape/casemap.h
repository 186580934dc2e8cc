/* SPDX-License-Identifier: Apache-2.0
 * Unicode simple case mapping of UTF-8 text for the lowercase/uppercase
 * relabel actions (Prometheus uses Go's strings.ToLower/ToUpper, which map
 * every letter, not only ASCII). Covered: ASCII, Latin-1 Supplement, Latin
 * Extended-A, Greek, Cyrillic (with its supplement), Armenian and fullwidth
 * Latin; other code points and invalid UTF-8 bytes are copied unchanged. */
#ifndef PG_SCRAPE_CASEMAP_H
#define PG_SCRAPE_CASEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint32_t pg_case_lower(uint32_t c);
uint32_t pg_case_upper(uint32_t c);
/* Maps @src into @dst (NUL-terminated, truncated at a character boundary to
 * fit @cap). No mapping here makes text longer. Returns the length. */
size_t pg_utf8_case(char *dst, size_t cap, const char *src, bool upper);

#endif
