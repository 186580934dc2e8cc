/* SPDX-License-Identifier: Apache-2.0
 * The scraper's intrusive chained hash table and a string set on it (see
 * htab.h). Tables double when they hold as many entries as buckets. */
#include "scrape/htab.h"

#include <stdlib.h>
#include <string.h>

uint64_t pg_hash_str(uint64_t h, const char *s)
{
    for (; s != NULL && *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    }
    return h;
}

/* FNV's low bits depend only on the low bits of each byte: many keys that
 * differ in a few digits share a bucket. A 64-bit finaliser spreads them. */
static size_t slot(uint64_t h, size_t cap)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return (size_t)(h & (cap - 1));
}

static bool grow(struct pg_htab *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct pg_hnode **b = calloc(cap, sizeof(*b));

    if (b == NULL) {
        return false;
    }
    for (size_t i = 0; i < t->cap; i++) {
        for (struct pg_hnode *e = t->b[i], *nx; e != NULL; e = nx) {
            nx = e->next;
            e->next = b[slot(e->hash, cap)];
            b[slot(e->hash, cap)] = e;
        }
    }
    free(t->b);
    t->b = b;
    t->cap = cap;
    return true;
}

bool pg_htab_add(struct pg_htab *t, struct pg_hnode *e, uint64_t hash)
{
    if (t->n >= t->cap && !grow(t) && t->cap == 0) {
        return false; /* a full table still takes entries: chains just get longer */
    }
    e->hash = hash;
    e->next = t->b[slot(hash, t->cap)];
    t->b[slot(hash, t->cap)] = e;
    t->n++;
    return true;
}

void pg_htab_del(struct pg_htab *t, struct pg_hnode *e)
{
    struct pg_hnode **pp = &t->b[slot(e->hash, t->cap)];

    while (*pp != NULL && *pp != e) {
        pp = &(*pp)->next;
    }
    if (*pp == e) {
        *pp = e->next;
        t->n--;
    }
}

struct pg_hnode *pg_htab_chain(const struct pg_htab *t, uint64_t hash)
{
    return t->cap ? t->b[slot(hash, t->cap)] : NULL;
}

void pg_htab_free(struct pg_htab *t)
{
    free(t->b);
    memset(t, 0, sizeof(*t));
}

/* ---- string set -------------------------------------------------------- */

struct str_node {
    struct pg_hnode h; /* first: a node pointer is the entry's */
    char s[];
};

static struct str_node *find(const struct pg_strset *s, const char *str, uint64_t h)
{
    for (struct pg_hnode *e = pg_htab_chain(&s->t, h); e != NULL; e = e->next) {
        if (e->hash == h && strcmp(((struct str_node *)e)->s, str) == 0) {
            return (struct str_node *)e;
        }
    }
    return NULL;
}

bool pg_strset_add(struct pg_strset *s, const char *str)
{
    uint64_t h = pg_hash_str(PG_HASH_SEED, str);
    size_t n = strlen(str);
    struct str_node *e;

    if (find(s, str, h) != NULL) {
        return true;
    }
    if ((e = malloc(sizeof(*e) + n + 1)) == NULL) {
        return false;
    }
    memcpy(e->s, str, n + 1);
    if (!pg_htab_add(&s->t, &e->h, h)) {
        free(e);
        return false;
    }
    return true;
}

bool pg_strset_has(const struct pg_strset *s, const char *str)
{
    return find(s, str, pg_hash_str(PG_HASH_SEED, str)) != NULL;
}

void pg_strset_del(struct pg_strset *s, const char *str)
{
    struct str_node *e = find(s, str, pg_hash_str(PG_HASH_SEED, str));

    if (e != NULL) {
        pg_htab_del(&s->t, &e->h);
        free(e);
    }
}

void pg_strset_each(const struct pg_strset *s, void (*fn)(void *arg, const char *str), void *arg)
{
    for (size_t i = 0; i < s->t.cap; i++) {
        for (struct pg_hnode *e = s->t.b[i]; e != NULL; e = e->next) {
            fn(arg, ((struct str_node *)e)->s);
        }
    }
}

void pg_strset_free(struct pg_strset *s)
{
    for (size_t i = 0; i < s->t.cap; i++) {
        for (struct pg_hnode *e = s->t.b[i], *nx; e != NULL; e = nx) {
            nx = e->next;
            free(e);
        }
    }
    pg_htab_free(&s->t);
}
