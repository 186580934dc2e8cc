/* SPDX-License-Identifier: Apache-2.0
 * The ProfilesDictionary builder: made with the zero entry of every table,
 * its counts and heap figures, and pg_dict_finish(), which copies the
 * pointer arrays to exact size into the output arena. The tables (one
 * open-addressing hash table per OTLP table, slots holding hash << 32 |
 * index + 1 so rehashing never touches the entries) are in dict_internal.h
 * and dict_tables.c; the interning calls in dict_strings.c and
 * dict_messages.c. */
#include <stdlib.h>
#include <string.h>

#include "otlp/dict.h"
#include "otlp/dict_internal.h"

/* ---- builder ------------------------------------------------------------ */

/* Index 0 of the empty table @t: @item, with the hash its interning call computes for it. */
static bool tab_seed(struct pg_dict_builder *b, struct tab *t, uint64_t h, void *item)
{
    uint32_t h32 = (uint32_t)(h >> 32) ^ (uint32_t)h;

    if (item == NULL || !tab_reserve(b, t)) {
        return false;
    }
    return tab_insert(b, t, h, &t->slots[h32 & t->mask], item, 0) == 0;
}

/* The zero entries, made directly: each is what its interning call makes for the zero value,
 * under the hash that call computes (constants the compiler folds), so a later call with the
 * zero value finds it (test_dict checks they all answer 0). */
static bool seed_zero_entries(struct pg_dict_builder *b)
{
    struct pg_arena *o = b->out;
    char *str = pg_arena_alloc(o, 1);
    struct pg_otlp_function *f = pg_arena_alloc(o, sizeof(*f));
    struct pg_otlp_mapping *m = pg_arena_alloc(o, sizeof(*m));
    struct pg_otlp_location *l = pg_arena_alloc(o, sizeof(*l));
    struct pg_otlp_stack *st = pg_arena_alloc(o, sizeof(*st));
    struct pg_otlp_kvu *at = pg_arena_alloc(o, sizeof(*at));
    struct pg_otlp_link *ln = pg_arena_alloc(o, sizeof(*ln) + 24);

    if (str == NULL || f == NULL || m == NULL || l == NULL || st == NULL || at == NULL ||
        ln == NULL) {
        return false;
    }
    str[0] = '\0';
    *f = function_init;
    *m = mapping_init;
    *l = location_init;
    *st = stack_init;
    *at = kvu_init;
    *ln = link_init;
    memset(ln + 1, 0, 24);
    ln->trace_id.data = (uint8_t *)(ln + 1);
    ln->trace_id.len = 16;
    ln->span_id.data = (uint8_t *)(ln + 1) + 16;
    ln->span_id.len = 8;
    /* the hashes of pg_dict_string, _function, _mapping, _location, _stack, _attr, _link */
    return tab_seed(b, &b->t[T_STR], fmix64(1), str) &&
           tab_seed(b, &b->t[T_FUNC], fmix64(hash_u64(hash_u64(hash_u64(hash_u64(7, 0), 0), 0), 0)),
                    f) &&
           tab_seed(b, &b->t[T_MAP],
                    fmix64(hash_u64(hash_u64(hash_u64(hash_u64(11, 0), 0), 0), 0)), m) &&
           tab_seed(b, &b->t[T_LOC], fmix64(hash_u64(hash_u64(hash_u64(13, 0), 0), 0)), l) &&
           tab_seed(b, &b->t[T_STACK], 17, st) &&
           tab_seed(b, &b->t[T_ATTR], fmix64(hash_u64(hash_u64(hash_u64(19, 0), 0), 0xffff)),
                    at) &&
           tab_seed(b, &b->t[T_LINK], link_hash(0, 0, 0), ln);
}

struct pg_dict_builder *pg_dict_builder_new(struct pg_arena *out, struct pg_arena *scratch)
{
    struct pg_dict_builder *b = pg_arena_zalloc(scratch, sizeof(*b));

    if (b == NULL) {
        return NULL;
    }
    b->out = out;
    b->scratch = scratch;
    b->heap_cap = pg_arena_cap(scratch);
    if (pg_arena_cleanup_add(scratch, pg_dict_free_tables, b) != 0) {
        return NULL;
    }
    pg_dict_spare_take(b);
    return seed_zero_entries(b) ? b : NULL;
}

size_t pg_dict_heap_peak(const struct pg_dict_builder *b)
{
    return b->heap_peak;
}

bool pg_dict_hit_cap(const struct pg_dict_builder *b)
{
    return b->heap_hit_cap;
}

void pg_dict_counts(const struct pg_dict_builder *b, struct pg_dict_counts *c)
{
    c->strings = b->t[T_STR].n;
    c->functions = b->t[T_FUNC].n;
    c->mappings = b->t[T_MAP].n;
    c->locations = b->t[T_LOC].n;
    c->stacks = b->t[T_STACK].n;
    c->attrs = b->t[T_ATTR].n;
    c->links = b->t[T_LINK].n;
}

static void *snapshot(struct pg_dict_builder *b, enum tab_id id, size_t *n)
{
    struct tab *t = &b->t[id];
    void **copy = pg_arena_memdup(b->out, t->items, t->n * sizeof(void *));

    *n = copy != NULL ? t->n : 0;
    return copy;
}

struct pg_otlp_dict *pg_dict_finish(struct pg_dict_builder *b)
{
    struct pg_otlp_dict *d = pg_arena_alloc(b->out, sizeof(*d));

    if (d == NULL) {
        return NULL;
    }
    opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
    d->mapping_table = snapshot(b, T_MAP, &d->n_mapping_table);
    d->location_table = snapshot(b, T_LOC, &d->n_location_table);
    d->function_table = snapshot(b, T_FUNC, &d->n_function_table);
    d->link_table = snapshot(b, T_LINK, &d->n_link_table);
    d->string_table = snapshot(b, T_STR, &d->n_string_table);
    d->attribute_table = snapshot(b, T_ATTR, &d->n_attribute_table);
    d->stack_table = snapshot(b, T_STACK, &d->n_stack_table);
    if (d->mapping_table == NULL || d->location_table == NULL || d->function_table == NULL ||
        d->link_table == NULL || d->string_table == NULL || d->attribute_table == NULL ||
        d->stack_table == NULL) {
        return NULL;
    }
    return d;
}
