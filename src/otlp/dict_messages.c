/* SPDX-License-Identifier: Apache-2.0
 * Interning the dictionary's messages by value: functions, the shared index
 * lists (attribute_indices), mappings, locations, stacks, attributes (the
 * AnyValue hashed, compared and deep-copied by anyvalue.c) and links (the
 * per-sample hot path, written out with the key in registers). Entries are
 * allocated once in the output arena. */
#include <stdlib.h>
#include <string.h>

#include "otlp/dict.h"
#include "otlp/dict_internal.h"

/* ---- functions ---------------------------------------------------------- */

static bool func_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct pg_otlp_function *a = t->items[idx], *k = key;
    return a->name_strindex == k->name_strindex &&
           a->system_name_strindex == k->system_name_strindex &&
           a->filename_strindex == k->filename_strindex && a->start_line == k->start_line;
}


int32_t pg_dict_function(struct pg_dict_builder *b, int32_t name, int32_t system_name,
                         int32_t filename, int64_t start_line)
{
    struct tab *t = &b->t[T_FUNC];
    struct pg_otlp_function k = function_init, *f;
    uint64_t h = 7, *slot = NULL;
    int32_t idx;

    if (!tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    k.name_strindex = name;
    k.system_name_strindex = system_name;
    k.filename_strindex = filename;
    k.start_line = start_line;
    h = hash_u64(h, (uint32_t)name);
    h = hash_u64(h, (uint32_t)system_name);
    h = hash_u64(h, (uint32_t)filename);
    h = fmix64(hash_u64(h, (uint64_t)start_line));
    idx = tab_find(t, h, func_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    if ((f = pg_arena_alloc(b->out, sizeof(*f))) == NULL) {
        return PG_DICT_NOMEM;
    }
    *f = k;
    return tab_insert(b, t, h, slot, f, 0);
}

/* ---- index lists (shared attribute_indices arrays) ---------------------- */

struct list_key {
    const int32_t *v;
    size_t n;
};

static bool list_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct list_key *k = key;
    return t->lens[idx] == k->n && memcmp(t->items[idx], k->v, k->n * sizeof(int32_t)) == 0;
}

const int32_t *pg_dict_index_list(struct pg_dict_builder *b, const int32_t *v, size_t n)
{
    struct tab *t = &b->t[T_LIST];
    struct list_key k = {v, n};
    uint64_t h, *slot = NULL;
    int32_t idx;
    int32_t *copy;

    if (n == 0 || n > UINT32_MAX / sizeof(int32_t) || !tab_reserve(b, t)) {
        return NULL;
    }
    h = pg_dict_hash_bytes(v, n * sizeof(int32_t), 3);
    idx = tab_find(t, h, list_eq, &k, &slot);
    if (idx >= 0) {
        return t->items[idx];
    }
    copy = pg_arena_memdup(b->out, v, n * sizeof(int32_t));
    if (copy == NULL || tab_insert(b, t, h, slot, copy, (uint32_t)n) < 0) {
        return NULL;
    }
    return copy;
}

/* Copy of an index list for a new entry (shared via the list table). */
static bool copy_list(struct pg_dict_builder *b, const int32_t *v, size_t n, size_t *n_out,
                      int32_t **out)
{
    *n_out = n;
    *out = NULL;
    if (n == 0) {
        return true;
    }
    *out = (int32_t *)pg_dict_index_list(b, v, n);
    return *out != NULL;
}

/* ---- mappings ----------------------------------------------------------- */

static bool map_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct pg_otlp_mapping *a = t->items[idx], *k = key;
    return a->memory_start == k->memory_start && a->memory_limit == k->memory_limit &&
           a->file_offset == k->file_offset && a->filename_strindex == k->filename_strindex &&
           a->n_attribute_indices == k->n_attribute_indices &&
           (k->n_attribute_indices == 0 ||
            memcmp(a->attribute_indices, k->attribute_indices,
                   k->n_attribute_indices * sizeof(int32_t)) == 0);
}

int32_t pg_dict_mapping(struct pg_dict_builder *b, uint64_t memory_start, uint64_t memory_limit,
                        uint64_t file_offset, int32_t filename, const int32_t *attrs,
                        size_t n_attrs)
{
    struct tab *t = &b->t[T_MAP];
    struct pg_otlp_mapping k = mapping_init, *m;
    uint64_t h = 11, *slot = NULL;
    int32_t idx;

    if (!tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    k.memory_start = memory_start;
    k.memory_limit = memory_limit;
    k.file_offset = file_offset;
    k.filename_strindex = filename;
    k.n_attribute_indices = n_attrs;
    k.attribute_indices = (int32_t *)attrs;
    h = hash_u64(h, memory_start);
    h = hash_u64(h, memory_limit);
    h = hash_u64(h, file_offset);
    h = hash_u64(h, (uint32_t)filename);
    h ^= n_attrs ? pg_dict_hash_bytes(attrs, n_attrs * sizeof(int32_t), 5) : 0;
    h = fmix64(h);
    idx = tab_find(t, h, map_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    if ((m = pg_arena_alloc(b->out, sizeof(*m))) != NULL) {
        *m = k;
    }
    if (m == NULL || !copy_list(b, attrs, n_attrs, &m->n_attribute_indices,
                                &m->attribute_indices)) {
        return PG_DICT_NOMEM;
    }
    return tab_insert(b, t, h, slot, m, 0);
}

/* ---- locations ---------------------------------------------------------- */

struct loc_key {
    int32_t mapping;
    uint64_t address;
    const struct pg_dict_line *lines;
    size_t n_lines;
    const int32_t *attrs;
    size_t n_attrs;
};

static bool loc_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct pg_otlp_location *a = t->items[idx];
    const struct loc_key *k = key;

    if (a->mapping_index != k->mapping || a->address != k->address ||
        a->n_lines != k->n_lines || a->n_attribute_indices != k->n_attrs) {
        return false;
    }
    for (size_t i = 0; i < k->n_lines; i++) {
        const struct pg_otlp_line *l = a->lines[i];
        if (l->function_index != k->lines[i].function_index || l->line != k->lines[i].line ||
            l->column != k->lines[i].column) {
            return false;
        }
    }
    return k->n_attrs == 0 ||
           memcmp(a->attribute_indices, k->attrs, k->n_attrs * sizeof(int32_t)) == 0;
}

int32_t pg_dict_location(struct pg_dict_builder *b, int32_t mapping_index, uint64_t address,
                         const struct pg_dict_line *lines, size_t n_lines, const int32_t *attrs,
                         size_t n_attrs)
{
    struct tab *t = &b->t[T_LOC];
    struct loc_key k = {mapping_index, address, lines, n_lines, attrs, n_attrs};
    struct pg_otlp_location *l;
    struct pg_otlp_line *lv;
    uint64_t h = 13, *slot = NULL;
    int32_t idx;

    if (!tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    h = hash_u64(h, (uint32_t)mapping_index);
    h = hash_u64(h, address);
    for (size_t i = 0; i < n_lines; i++) {
        h = hash_u64(h, (uint32_t)lines[i].function_index);
        h = hash_u64(h, (uint64_t)lines[i].line);
        h = hash_u64(h, (uint64_t)lines[i].column);
    }
    h = hash_u64(h, n_lines);
    h ^= n_attrs ? pg_dict_hash_bytes(attrs, n_attrs * sizeof(int32_t), 5) : 0;
    h = fmix64(h);
    idx = tab_find(t, h, loc_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    /* One block: the Location, its Lines, then the pointer array (all 8-byte multiples). */
    if (n_lines > (SIZE_MAX - sizeof(*l)) / (sizeof(*lv) + sizeof(*l->lines)) ||
        (l = pg_arena_alloc(b->out, sizeof(*l) + n_lines * (sizeof(*lv) + sizeof(*l->lines)))) ==
            NULL) {
        return PG_DICT_NOMEM;
    }
    *l = location_init;
    l->mapping_index = mapping_index;
    l->address = address;
    if (n_lines > 0) {
        lv = (struct pg_otlp_line *)(l + 1);
        l->lines = (struct pg_otlp_line **)(lv + n_lines);
        for (size_t i = 0; i < n_lines; i++) {
            lv[i] = line_init;
            lv[i].function_index = lines[i].function_index;
            lv[i].line = lines[i].line;
            lv[i].column = lines[i].column;
            l->lines[i] = &lv[i];
        }
        l->n_lines = n_lines;
    }
    if (!copy_list(b, attrs, n_attrs, &l->n_attribute_indices, &l->attribute_indices)) {
        return PG_DICT_NOMEM;
    }
    return tab_insert(b, t, h, slot, l, 0);
}

/* ---- stacks ------------------------------------------------------------- */

static bool stack_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct pg_otlp_stack *a = t->items[idx];
    const struct list_key *k = key;
    return a->n_location_indices == k->n &&
           (k->n == 0 || memcmp(a->location_indices, k->v, k->n * sizeof(int32_t)) == 0);
}

int32_t pg_dict_stack(struct pg_dict_builder *b, const int32_t *locs, size_t n)
{
    struct tab *t = &b->t[T_STACK];
    struct list_key k = {locs, n};
    struct pg_otlp_stack *s;
    uint64_t h, *slot = NULL;
    int32_t idx;

    if (n > UINT32_MAX / sizeof(int32_t) || !tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    h = n ? pg_dict_hash_bytes(locs, n * sizeof(int32_t), 17) : 17;
    idx = tab_find(t, h, stack_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    s = pg_arena_alloc(b->out, sizeof(*s));
    if (s == NULL) {
        return PG_DICT_NOMEM;
    }
    *s = stack_init;
    if (n > 0) {
        s->location_indices = pg_arena_memdup(b->out, locs, n * sizeof(int32_t));
        if (s->location_indices == NULL) {
            return PG_DICT_NOMEM;
        }
        s->n_location_indices = n;
    }
    return tab_insert(b, t, h, slot, s, 0);
}

/* ---- attributes --------------------------------------------------------- */

static bool attr_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct pg_otlp_kvu *a = t->items[idx], *k = key;
    return a->key_strindex == k->key_strindex && a->unit_strindex == k->unit_strindex &&
           pg_dict_anyvalue_equal(a->value, k->value);
}

int32_t pg_dict_attr(struct pg_dict_builder *b, int32_t key_strindex,
                     const struct pg_otlp_anyvalue *value, int32_t unit_strindex)
{
    struct tab *t = &b->t[T_ATTR];
    struct pg_otlp_kvu k = kvu_init, *e;
    uint64_t h = 19, *slot = NULL;
    int32_t idx;

    if (!tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    k.key_strindex = key_strindex;
    k.unit_strindex = unit_strindex;
    k.value = (struct pg_otlp_anyvalue *)value;
    h = hash_u64(h, (uint32_t)key_strindex);
    h = hash_u64(h, (uint32_t)unit_strindex);
    h = fmix64(pg_dict_any_hash(value, h));
    idx = tab_find(t, h, attr_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    if ((e = pg_arena_alloc(b->out, sizeof(*e))) == NULL) {
        return PG_DICT_NOMEM;
    }
    *e = k;
    if (value != NULL && (e->value = pg_dict_any_copy(b->out, value, 0)) == NULL) {
        return PG_DICT_NOMEM;
    }
    return tab_insert(b, t, h, slot, e, 0);
}

/* ---- links -------------------------------------------------------------- */

/* Every sample with a new trace/span pair (nearly every sample of a traced SDK push) interns
 * one, so the lookup is written out here with the key in registers (no key buffer, no
 * generic eq callback) and the ids are stored right after the Link (every T_LINK entry is
 * made here: 16 + 8 bytes). */

/* A link's key: the ids as three words and their folded hash. */
struct link_key {
    uint64_t w0, w1, w2;
    uint32_t h32;
};

__attribute__((always_inline)) static inline struct link_key link_key(const uint8_t trace_id[16],
                                                                      const uint8_t span_id[8])
{
    struct link_key k;
    uint64_t h;

    memcpy(&k.w0, trace_id, 8);
    memcpy(&k.w1, trace_id + 8, 8);
    memcpy(&k.w2, span_id, 8);
    h = link_hash(k.w0, k.w1, k.w2);
    k.h32 = (uint32_t)(h >> 32) ^ (uint32_t)h;
    return k;
}

/* @k's index in @t when present (*@pos its slot), else -1 with *@pos the empty slot
 * where it goes. Inlined into both callers. */
__attribute__((always_inline)) static inline int32_t link_find(const struct tab *t,
                                                               struct link_key k, size_t *pos)
{
    const uint64_t *slots = t->slots;
    size_t p;

    for (p = k.h32 & t->mask;; p = (p + 1) & t->mask) {
        uint64_t s = slots[p];
        if (s == 0) {
            break;
        }
        if ((uint32_t)(s >> 32) == k.h32) {
            const uint64_t *ids = (const uint64_t *)((const struct pg_otlp_link *)
                                                         t->items[(uint32_t)s - 1] + 1);
            if (ids[0] == k.w0 && ids[1] == k.w1 && ids[2] == k.w2) {
                *pos = p;
                return (int32_t)((uint32_t)s - 1);
            }
        }
    }
    *pos = p;
    return -1;
}

/* Fills the new Link @l (24 bytes of room after it, in the out arena) with @k and files
 * it in slot @pos of @t; its index. */
__attribute__((always_inline)) static inline int32_t link_add(struct tab *t,
                                                              struct pg_otlp_link *l,
                                                              struct link_key k, size_t pos)
{
    uint64_t *ids = (uint64_t *)(l + 1);

    *l = link_init;
    ids[0] = k.w0;
    ids[1] = k.w1;
    ids[2] = k.w2;
    l->trace_id.data = (uint8_t *)ids;
    l->trace_id.len = 16;
    l->span_id.data = (uint8_t *)ids + 16;
    l->span_id.len = 8;
    t->items[t->n] = l;
    t->slots[pos] = (uint64_t)k.h32 << 32 | ((uint64_t)t->n + 1);
    return (int32_t)t->n++;
}

__attribute__((noinline)) static int32_t link_general(struct pg_dict_builder *b,
                                                      const uint8_t trace_id[16],
                                                      const uint8_t span_id[8])
{
    struct tab *t = &b->t[T_LINK];
    struct link_key k = link_key(trace_id, span_id);
    size_t pos;
    int32_t found;
    struct pg_otlp_link *l;

    if (!tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    if ((found = link_find(t, k, &pos)) >= 0) {
        return found;
    }
    if (t->n >= INT32_MAX - 1 || (t->n == t->cap && !pg_dict_tab_push_grow(b, t))) {
        return PG_DICT_NOMEM;
    }
    /* sizeof a Link (pointers and sizes) is a multiple of 8: the id words after it align */
    l = pg_arena_alloc(b->out, sizeof(*l) + 24);
    if (l == NULL) {
        return PG_DICT_NOMEM;
    }
    return link_add(t, l, k, pos);
}

/* The usual call makes no call of its own: with room in the slot table, the item array
 * and the arena's bump window, the lookup and the insert are done here; otherwise
 * link_general does the same with growth and errors. */
int32_t pg_dict_link(struct pg_dict_builder *b, const uint8_t trace_id[16],
                     const uint8_t span_id[8])
{
    struct tab *t = &b->t[T_LINK];
    struct link_key k;
    size_t pos;
    int32_t found;

    if (t->slots == NULL || (t->n + 1) * 2 > t->mask + 1 || t->n == t->cap ||
        t->n >= INT32_MAX - 1 || !pg_arena_fits(b->out, sizeof(struct pg_otlp_link) + 24)) {
        return link_general(b, trace_id, span_id);
    }
    k = link_key(trace_id, span_id);
    if ((found = link_find(t, k, &pos)) >= 0) {
        return found;
    }
    return link_add(t, pg_arena_alloc_fit(b->out, sizeof(struct pg_otlp_link) + 24), k, pos);
}
