/* SPDX-License-Identifier: Apache-2.0
 * Sorted label sets (see labels.h). */
#include "scrape/labels.h"
#include "core/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pg_labels_free(struct pg_labels *l)
{
    if (l == NULL) {
        return;
    }
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].name);
        free(l->v[i].value);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Index of @name, or of where it would go (*found false). */
static size_t find(const struct pg_labels *l, const char *name, bool *found)
{
    size_t lo = 0, hi = l->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->v[mid].name, name);

        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

const char *pg_labels_get(const struct pg_labels *l, const char *name)
{
    bool found;
    size_t i = find(l, name, &found);

    return found ? l->v[i].value : NULL;
}

void pg_labels_del(struct pg_labels *l, const char *name)
{
    bool found;
    size_t i = find(l, name, &found);

    if (!found) {
        return;
    }
    free(l->v[i].name);
    free(l->v[i].value);
    memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(l->v[0]));
    l->n--;
}

bool pg_labels_set(struct pg_labels *l, const char *name, const char *value)
{
    bool found;
    size_t i;
    char *v;

    if (value == NULL || value[0] == '\0') {
        pg_labels_del(l, name);
        return true;
    }
    i = find(l, name, &found);
    if ((v = strdup(value)) == NULL) {
        return false;
    }
    if (found) {
        free(l->v[i].value);
        l->v[i].value = v;
        return true;
    }
    if (!PG_VEC_GROW(NULL, l->v, l->cap, l->n, 8, 0)) {
        free(v);
        return false;
    }
    char *n = strdup(name);
    if (n == NULL) {
        free(v);
        return false;
    }
    memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof(l->v[0]));
    l->v[i].name = n;
    l->v[i].value = v;
    l->n++;
    return true;
}

bool pg_labels_copy(struct pg_labels *dst, const struct pg_labels *src)
{
    memset(dst, 0, sizeof(*dst));
    for (size_t i = 0; i < src->n; i++) {
        if (!pg_labels_set(dst, src->v[i].name, src->v[i].value)) {
            pg_labels_free(dst);
            return false;
        }
    }
    return true;
}

uint64_t pg_labels_hash(const struct pg_labels *l)
{
    uint64_t h = 1469598103934665603ULL;

    for (size_t i = 0; i < l->n; i++) {
        for (const char *p = l->v[i].name; *p; p++) {
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        }
        h = (h ^ 0xff) * 1099511628211ULL;
        for (const char *p = l->v[i].value; *p; p++) {
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        }
        h = (h ^ 0xfe) * 1099511628211ULL;
    }
    return h;
}

void pg_labels_format(const struct pg_labels *l, char *buf, size_t cap)
{
    size_t off = 0;

    if (cap == 0) {
        return;
    }
    buf[0] = '\0';
    off += (size_t)snprintf(buf, cap, "{");
    for (size_t i = 0; i < l->n && off < cap; i++) {
        off += (size_t)snprintf(buf + off, cap - off, "%s%s=\"%s\"", i ? ", " : "", l->v[i].name,
                                l->v[i].value);
    }
    if (off < cap) {
        snprintf(buf + off, cap - off, "}");
    }
}
