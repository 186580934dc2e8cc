/* SPDX-License-Identifier: Apache-2.0
 * An intrusive chained hash table for the scraper's indexes (targets by
 * identity, discovery sources, metric groups, the pod sources a watch has
 * synced): O(1) add, find and delete, so thousands of targets and pod churn
 * cost work proportional to what changed. */
#ifndef PG_SCRAPE_HTAB_H
#define PG_SCRAPE_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Embedded in each entry; the table borrows entries, their owner frees them. */
struct pg_hnode {
    struct pg_hnode *next;
    uint64_t hash;
};

struct pg_htab {
    struct pg_hnode **b; /* owned: cap buckets (a power of two) */
    size_t cap, n;
};

/* FNV-1a of @s, continuing from @h (start with PG_HASH_SEED). */
#define PG_HASH_SEED 1469598103934665603ULL
uint64_t pg_hash_str(uint64_t h, const char *s);

/* Adds @e with @hash (duplicates allowed); false on OOM (not added). */
bool pg_htab_add(struct pg_htab *t, struct pg_hnode *e, uint64_t hash);
/* Removes @e, which must be in @t. */
void pg_htab_del(struct pg_htab *t, struct pg_hnode *e);
/* The chain that entries with @hash are in (compare hash and key yourself). */
struct pg_hnode *pg_htab_chain(const struct pg_htab *t, uint64_t hash);
/* Frees the buckets (not the entries). */
void pg_htab_free(struct pg_htab *t);

/* A set of strings (owned copies) on the table above. */
struct pg_strset {
    struct pg_htab t;
};
bool pg_strset_add(struct pg_strset *s, const char *str); /* true when present or added */
bool pg_strset_has(const struct pg_strset *s, const char *str);
void pg_strset_del(struct pg_strset *s, const char *str);
/* Calls @fn for each string (the set must not change meanwhile). */
void pg_strset_each(const struct pg_strset *s, void (*fn)(void *arg, const char *str), void *arg);
void pg_strset_free(struct pg_strset *s);

#endif
