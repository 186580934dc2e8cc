/* SPDX-License-Identifier: Apache-2.0
 * Key/value splitters behind the OTTL converters ParseKeyValue (the
 * collector's exact semantics: quote-aware split, first delimiter, TrimSpace,
 * last duplicate wins, whole-call failure) and ParseResourceAttributes (the
 * OTEL_RESOURCE_ATTRIBUTES format the SDKs send: comma pairs, percent-decoded,
 * malformed pairs skipped and counted). Results live in the caller's arena. */
#ifndef PG_PROCESSOR_OTTL_KV_H
#define PG_PROCESSOR_OTTL_KV_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

struct pg_ottl_kv_pair {
    const char *key;   /* in the arena, NUL-terminated */
    const char *value; /* in the arena, NUL-terminated */
    uint32_t hash;     /* of key: makes the duplicate check cheap */
};

/* Pairs in first-seen key order; a repeated key overwrites the value in place. */
struct pg_ottl_kv_list {
    size_t n;
    size_t cap;
    struct pg_ottl_kv_pair *v; /* in the arena */
};

/* Upper bound on pairs one call produces: a cap so a hostile header cannot
 * turn into an unbounded attribute map. */
#define PG_OTTL_KV_MAX_PAIRS 1024

/* The collector's ParseKeyValue(@src, @delim, @pair_delim). @src must be a
 * NUL-terminated string; both delimiters non-empty and different (checked at
 * compile time by the caller). On error *@out is left empty and @st carries
 * the collector's message (PG_ERR_PROCESSING), or NOMEM/LIMIT. */
enum pg_err pg_ottl_parse_key_value(struct pg_arena *a, const char *src, const char *delim,
                                    const char *pair_delim, struct pg_ottl_kv_list *out,
                                    struct pg_status *st);

/* Parses @src in the OTEL_RESOURCE_ATTRIBUTES format into @out (appending and
 * overwriting keys already there). Pairs without '=', with an empty key, with a
 * bad %XX escape, a decoded NUL or invalid UTF-8 are skipped and counted in
 * *@skipped (may be NULL). Fails only on NOMEM/LIMIT. */
enum pg_err pg_ottl_parse_resource_attributes(struct pg_arena *a, const char *src,
                                              struct pg_ottl_kv_list *out, size_t *skipped,
                                              struct pg_status *st);

/* Sets @key to @value in @list (overwriting an equal key). Both borrowed: they
 * must live as long as the list. */
enum pg_err pg_ottl_kv_put(struct pg_arena *a, struct pg_ottl_kv_list *list, const char *key,
                           const char *value, struct pg_status *st);

/* The value for @key, or NULL. */
const char *pg_ottl_kv_get(const struct pg_ottl_kv_list *list, const char *key);

#endif
