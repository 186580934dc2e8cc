/* SPDX-License-Identifier: Apache-2.0
 * A target's label set (Prometheus model: unique names, string values), kept
 * sorted by name so hashing and printing are stable. Everything is malloc'd
 * and owned by the set; targets are few and change rarely, so no arena. */
#ifndef PG_SCRAPE_LABELS_H
#define PG_SCRAPE_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pg_label {
    char *name;  /* owned */
    char *value; /* owned */
};

struct pg_labels {
    size_t n, cap;
    struct pg_label *v; /* owned, sorted by name */
};

void pg_labels_free(struct pg_labels *l);
/* NULL when absent. */
const char *pg_labels_get(const struct pg_labels *l, const char *name);
/* Sets @name to @value (copied); an empty value deletes, as Prometheus does.
 * False on OOM. */
bool pg_labels_set(struct pg_labels *l, const char *name, const char *value);
void pg_labels_del(struct pg_labels *l, const char *name);
/* Deep copy into an empty @dst. False on OOM (dst then empty). */
bool pg_labels_copy(struct pg_labels *dst, const struct pg_labels *src);
/* FNV-1a over names and values: stable across runs (scrape offsets). */
uint64_t pg_labels_hash(const struct pg_labels *l);
/* `{a="1", b="2"}` into @buf (truncated), for logs. */
void pg_labels_format(const struct pg_labels *l, char *buf, size_t cap);

#endif
