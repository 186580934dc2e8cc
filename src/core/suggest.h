/* SPDX-License-Identifier: Apache-2.0
 * "Did you mean" for config keys, component types and enum values: the
 * candidate closest to a misspelt word by edit distance (a swap of two
 * neighbouring letters counts as one edit), when it is close enough. */
#ifndef PG_CORE_SUGGEST_H
#define PG_CORE_SUGGEST_H

#include <stddef.h>

/* One search: init with the misspelt word, offer each candidate, ask. */
struct pg_suggest {
    const char *word; /* borrowed */
    const char *best; /* borrowed from the candidates offered */
    size_t best_dist;
};

void pg_suggest_init(struct pg_suggest *s, const char *word);
/* Offers @candidate (NULL is ignored); the first of equally close ones wins. */
void pg_suggest_offer(struct pg_suggest *s, const char *candidate);
/* The closest candidate within the allowance (a third of the word's length,
 * at least 1, at most 3 edits), or NULL. */
const char *pg_suggest_best(const struct pg_suggest *s);
/* Restricted edit distance (insert, delete, substitute, swap neighbours),
 * capped at 99 for words of 64 bytes or more. */
size_t pg_suggest_distance(const char *a, const char *b);

#endif
