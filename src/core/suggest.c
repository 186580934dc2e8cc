/* SPDX-License-Identifier: Apache-2.0
 * Closest-candidate search for "did you mean" hints in config messages. */
#include "core/suggest.h"

#include <string.h>

#define SUGGEST_MAX_LEN 64
#define SUGGEST_FAR 99

size_t pg_suggest_distance(const char *a, const char *b)
{
    size_t an = strlen(a), bn = strlen(b);
    /* Three rows: the one before last is needed for a swap. */
    size_t d[3][SUGGEST_MAX_LEN + 1];

    if (an >= SUGGEST_MAX_LEN || bn >= SUGGEST_MAX_LEN) {
        return SUGGEST_FAR;
    }
    for (size_t j = 0; j <= bn; j++) {
        d[0][j] = j;
    }
    for (size_t i = 1; i <= an; i++) {
        size_t *cur = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];
        cur[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = prev[j - 1] + cost;
            if (prev[j] + 1 < best) {
                best = prev[j] + 1;
            }
            if (cur[j - 1] + 1 < best) {
                best = cur[j - 1] + 1;
            }
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < best) {
                best = prev2[j - 2] + 1;
            }
            cur[j] = best;
        }
    }
    return d[an % 3][bn];
}

void pg_suggest_init(struct pg_suggest *s, const char *word)
{
    s->word = word;
    s->best = NULL;
    s->best_dist = SUGGEST_FAR;
}

void pg_suggest_offer(struct pg_suggest *s, const char *candidate)
{
    size_t dist;

    if (candidate == NULL || s->word == NULL || strcmp(candidate, s->word) == 0) {
        return;
    }
    dist = pg_suggest_distance(s->word, candidate);
    if (dist < s->best_dist) {
        s->best_dist = dist;
        s->best = candidate;
    }
}

const char *pg_suggest_best(const struct pg_suggest *s)
{
    size_t allow = s->word ? strlen(s->word) / 3 : 0;

    if (allow < 1) {
        allow = 1;
    }
    if (allow > 3) {
        allow = 3;
    }
    return s->best != NULL && s->best_dist <= allow ? s->best : NULL;
}
