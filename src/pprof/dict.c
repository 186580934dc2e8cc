/* SPDX-License-Identifier: Apache-2.0
 * ProfilesDictionary interning: one open-addressing hash table per OTLP table
 * (slots hold hash << 32 | index + 1, so rehashing never touches the
 * entries), entries allocated once in the output arena. The slot and pointer
 * arrays live in malloc'd memory (freed on growth, and all at once when the
 * scratch arena dies): in the arena every doubling would leave its old copy
 * behind, about as much again as the final tables. pg_dict_finish() copies the
 * pointer arrays to exact size into the output arena. */
#include "pprof/dict.h"

#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

#define K1 0x9e3779b97f4a7c15ull
#define K2 0xc2b2ae3d27d4eb4full

enum tab_id { T_STR, T_FUNC, T_MAP, T_LOC, T_STACK, T_ATTR, T_LINK, T_LIST, T__COUNT };

struct tab {
    void **items;   /* malloc'd; the entries themselves live in the out arena */
    uint32_t *lens; /* malloc'd, T_STR: byte length; T_LIST: element count; else NULL */
    size_t n, cap;
    uint64_t *slots; /* malloc'd; 0 = empty */
    size_t mask;     /* slots - 1 (power of two) */
};

struct pg_dict_builder {
    struct pg_arena *out, *scratch;
    struct tab t[T__COUNT];
    size_t heap, heap_peak, heap_cap; /* malloc'd table bytes; cap = the scratch arena's */
    bool heap_hit_cap;
    char *tmp;       /* scratch buffer for UTF-8 repair */
    size_t tmp_cap;
};

/* ---- hashing ------------------------------------------------------------ */

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

uint64_t pg_dict_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const uint8_t *s = p;
    uint64_t h = seed ^ (n * K1);

    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = rotl64(h ^ (w * K1), 29) * K2;
        s += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = rotl64(h ^ (w * K1), 29) * K2;
    }
    return fmix64(h);
}

static inline uint64_t hash_u64(uint64_t h, uint64_t v)
{
    return rotl64(h ^ (v * K1), 31) * K2;
}

/* ---- tables ------------------------------------------------------------- */

/* realloc / calloc / free with the byte count kept, bounded by the scratch arena's cap. */
static bool heap_charge(struct pg_dict_builder *b, size_t old_size, size_t new_size)
{
    size_t next = b->heap - old_size + new_size;

    if (b->heap_cap != 0 && next > b->heap_cap) {
        b->heap_hit_cap = true;
        /* Mark the scratch arena as capped too, so callers that only know the arena (and
         * a builder that failed to start) still report LIMIT, not NOMEM. */
        (void)pg_arena_alloc(b->scratch, b->heap_cap + 1);
        return false;
    }
    return true;
}

static void heap_account(struct pg_dict_builder *b, size_t old_size, size_t new_size)
{
    b->heap = b->heap - old_size + new_size;
    if (b->heap > b->heap_peak) {
        b->heap_peak = b->heap;
    }
}

static void *heap_realloc(struct pg_dict_builder *b, void *old, size_t old_size, size_t new_size)
{
    void *p;

    if (!heap_charge(b, old_size, new_size) || (p = realloc(old, new_size)) == NULL) {
        return NULL;
    }
    heap_account(b, old_size, new_size);
    return p;
}

static void free_tables(void *arg)
{
    struct pg_dict_builder *b = arg;

    for (int i = 0; i < T__COUNT; i++) {
        free(b->t[i].items);
        free(b->t[i].lens);
        free(b->t[i].slots);
        memset(&b->t[i], 0, sizeof(b->t[i]));
    }
    b->heap = 0;
}

static bool tab_push(struct pg_dict_builder *b, struct tab *t, void *item, uint32_t len)
{
    bool with_lens = t == &b->t[T_STR] || t == &b->t[T_LIST];

    if (t->n == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 32;
        void **ni = heap_realloc(b, t->items, t->cap * sizeof(void *), ncap * sizeof(void *));
        if (ni == NULL) {
            return false;
        }
        t->items = ni;
        if (with_lens) {
            uint32_t *nl =
                heap_realloc(b, t->lens, t->cap * sizeof(uint32_t), ncap * sizeof(uint32_t));
            if (nl == NULL) {
                return false; /* items already grown: cap stays, the next push retries */
            }
            t->lens = nl;
        }
        t->cap = ncap;
    }
    t->items[t->n] = item;
    if (with_lens) {
        t->lens[t->n] = len;
    }
    t->n++;
    return true;
}

static bool tab_grow(struct pg_dict_builder *b, struct tab *t)
{
    size_t nslots = t->slots ? (t->mask + 1) * 2 : 64; /* small first: doubles */
    size_t old_bytes = t->slots ? (t->mask + 1) * sizeof(uint64_t) : 0;
    uint64_t *ns;

    if (!heap_charge(b, 0, nslots * sizeof(uint64_t)) ||
        (ns = calloc(nslots, sizeof(uint64_t))) == NULL) {
        return false;
    }
    heap_account(b, 0, nslots * sizeof(uint64_t));
    if (t->slots != NULL) {
        for (size_t i = 0; i <= t->mask; i++) {
            uint64_t s = t->slots[i];
            if (s != 0) {
                size_t pos = (size_t)(s >> 32) & (nslots - 1);
                while (ns[pos] != 0) {
                    pos = (pos + 1) & (nslots - 1);
                }
                ns[pos] = s;
            }
        }
        free(t->slots);
        heap_account(b, old_bytes, 0);
    }
    t->slots = ns;
    t->mask = nslots - 1;
    return true;
}

typedef bool (*eq_fn)(const struct tab *t, size_t idx, const void *key);

/* Looks @key up; on a miss *@slot is where the new entry's slot goes. */
static int32_t tab_find(struct tab *t, uint64_t h, eq_fn eq, const void *key, uint64_t **slot)
{
    uint32_t h32 = (uint32_t)(h >> 32) ^ (uint32_t)h;
    size_t pos = h32 & t->mask;

    for (;;) {
        uint64_t s = t->slots[pos];
        if (s == 0) {
            *slot = &t->slots[pos];
            return -1;
        }
        if ((uint32_t)(s >> 32) == h32 && eq(t, (size_t)(uint32_t)s - 1, key)) {
            return (int32_t)((uint32_t)s - 1);
        }
        pos = (pos + 1) & t->mask;
    }
}

/* Makes sure one more entry fits under a 50% load factor. */
static bool tab_reserve(struct pg_dict_builder *b, struct tab *t)
{
    if (t->slots == NULL || (t->n + 1) * 2 > t->mask + 1) {
        return tab_grow(b, t);
    }
    return true;
}

static int32_t tab_insert(struct pg_dict_builder *b, struct tab *t, uint64_t h, uint64_t *slot,
                          void *item, uint32_t len)
{
    uint32_t h32 = (uint32_t)(h >> 32) ^ (uint32_t)h;
    int32_t idx = (int32_t)t->n;

    if (t->n >= INT32_MAX - 1 || !tab_push(b, t, item, len)) {
        return PG_DICT_NOMEM;
    }
    *slot = (uint64_t)h32 << 32 | ((uint64_t)idx + 1);
    return idx;
}

/* ---- strings ------------------------------------------------------------ */

struct str_key {
    const char *s;
    size_t len;
};

static bool str_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct str_key *k = key;
    return t->lens[idx] == k->len && memcmp(t->items[idx], k->s, k->len) == 0;
}

/* Returns @s itself when it is clean, else a repaired copy in b->tmp (the
 * core/utf8 rule: each invalid byte becomes U+FFFD, counted and logged). */
static const char *utf8_clean(struct pg_dict_builder *b, const char *s, size_t *len)
{
    size_t n = *len, bad = 0;

    if (pg_utf8_valid(s, n)) {
        return s;
    }
    if (n > (SIZE_MAX - 1) / 3) {
        return NULL;
    }
    if (b->tmp_cap < n * 3 + 1) {
        b->tmp = pg_arena_alloc(b->scratch, n * 3 + 1);
        if (b->tmp == NULL) {
            b->tmp_cap = 0;
            return NULL;
        }
        b->tmp_cap = n * 3 + 1;
    }
    *len = pg_utf8_repair(b->tmp, s, n, &bad);
    pg_utf8_note(bad, "pprof string");
    return b->tmp;
}

int32_t pg_dict_string(struct pg_dict_builder *b, const char *s, size_t len)
{
    struct tab *t = &b->t[T_STR];
    struct str_key k;
    uint64_t h, *slot = NULL;
    int32_t idx;
    char *copy;

    if (len > UINT32_MAX) {
        return PG_DICT_NOMEM;
    }
    s = utf8_clean(b, s, &len);
    if (s == NULL || !tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    k.s = s;
    k.len = len;
    h = pg_dict_hash_bytes(s, len, 1);
    idx = tab_find(t, h, str_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    copy = pg_arena_strndup(b->out, s, len);
    if (copy == NULL) {
        return PG_DICT_NOMEM;
    }
    return tab_insert(b, t, h, slot, copy, (uint32_t)len);
}

const char *pg_dict_tmp_cstr(struct pg_dict_builder *b, const char *s, size_t len)
{
    char *buf;

    s = utf8_clean(b, s, &len);
    if (s == NULL || len == SIZE_MAX) {
        return NULL;
    }
    if (s == b->tmp) {
        /* Already in tmp (repaired): tmp has room for len + 1 by construction. */
        b->tmp[len] = '\0';
        return b->tmp;
    }
    if (b->tmp_cap < len + 1) {
        size_t cap = len + 1 < 256 ? 256 : len + 1;
        b->tmp = pg_arena_alloc(b->scratch, cap);
        if (b->tmp == NULL) {
            b->tmp_cap = 0;
            return NULL;
        }
        b->tmp_cap = cap;
    }
    buf = b->tmp;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return buf;
}

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
    struct pg_otlp_function k, *f;
    uint64_t h = 7, *slot = NULL;
    int32_t idx;

    if (!tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    opentelemetry__proto__profiles__v1development__function__init(&k);
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
    f = pg_arena_memdup(b->out, &k, sizeof(k));
    if (f == NULL) {
        return PG_DICT_NOMEM;
    }
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
    struct pg_otlp_mapping k, *m;
    uint64_t h = 11, *slot = NULL;
    int32_t idx;

    if (!tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    opentelemetry__proto__profiles__v1development__mapping__init(&k);
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
    m = pg_arena_memdup(b->out, &k, sizeof(k));
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
    l = pg_arena_alloc(b->out, sizeof(*l));
    if (l == NULL) {
        return PG_DICT_NOMEM;
    }
    opentelemetry__proto__profiles__v1development__location__init(l);
    l->mapping_index = mapping_index;
    l->address = address;
    if (n_lines > 0) {
        l->lines = pg_arena_alloc(b->out, n_lines * sizeof(*l->lines));
        lv = pg_arena_alloc(b->out, n_lines * sizeof(*lv));
        if (l->lines == NULL || lv == NULL) {
            return PG_DICT_NOMEM;
        }
        for (size_t i = 0; i < n_lines; i++) {
            opentelemetry__proto__profiles__v1development__line__init(&lv[i]);
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
    opentelemetry__proto__profiles__v1development__stack__init(s);
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

static uint64_t any_hash(const struct pg_otlp_anyvalue *v, uint64_t h);

static uint64_t kv_hash(const struct pg_otlp_kv *kv, uint64_t h)
{
    const char *key = kv->key != NULL ? kv->key : "";
    h = hash_u64(h, pg_dict_hash_bytes(key, strlen(key), 23));
    h = hash_u64(h, (uint32_t)kv->key_strindex);
    return any_hash(kv->value, h);
}

static uint64_t any_hash(const struct pg_otlp_anyvalue *v, uint64_t h)
{
    if (v == NULL) {
        return hash_u64(h, 0xffff);
    }
    h = hash_u64(h, (uint64_t)v->value_case);
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR: {
        const char *s = v->string_value != NULL ? v->string_value : "";
        return hash_u64(h, pg_dict_hash_bytes(s, strlen(s), 29));
    }
    case PG_OTLP_ANYVALUE_BOOL:
        return hash_u64(h, v->bool_value != 0);
    case PG_OTLP_ANYVALUE_INT:
        return hash_u64(h, (uint64_t)v->int_value);
    case PG_OTLP_ANYVALUE_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &v->double_value, 8);
        return hash_u64(h, bits);
    }
    case PG_OTLP_ANYVALUE_BYTES:
        return hash_u64(h, v->bytes_value.len
                               ? pg_dict_hash_bytes(v->bytes_value.data, v->bytes_value.len, 31)
                               : 31);
    case PG_OTLP_ANYVALUE_STRINDEX:
        return hash_u64(h, (uint32_t)v->string_value_strindex);
    case PG_OTLP_ANYVALUE_ARRAY:
        if (v->array_value != NULL) {
            for (size_t i = 0; i < v->array_value->n_values; i++) {
                h = any_hash(v->array_value->values[i], h);
            }
            h = hash_u64(h, v->array_value->n_values);
        }
        return h;
    case PG_OTLP_ANYVALUE_KVLIST:
        if (v->kvlist_value != NULL) {
            for (size_t i = 0; i < v->kvlist_value->n_values; i++) {
                h = kv_hash(v->kvlist_value->values[i], h);
            }
            h = hash_u64(h, v->kvlist_value->n_values);
        }
        return h;
    default:
        return h;
    }
}

static bool str_equal0(const char *a, const char *b)
{
    return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

static bool kv_equal(const struct pg_otlp_kv *a, const struct pg_otlp_kv *b)
{
    return str_equal0(a->key, b->key) && a->key_strindex == b->key_strindex &&
           pg_dict_anyvalue_equal(a->value, b->value);
}

bool pg_dict_anyvalue_equal(const struct pg_otlp_anyvalue *a, const struct pg_otlp_anyvalue *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    if (a->value_case != b->value_case) {
        return false;
    }
    switch (a->value_case) {
    case PG_OTLP_ANYVALUE_STR:
        return str_equal0(a->string_value, b->string_value);
    case PG_OTLP_ANYVALUE_BOOL:
        return (a->bool_value != 0) == (b->bool_value != 0);
    case PG_OTLP_ANYVALUE_INT:
        return a->int_value == b->int_value;
    case PG_OTLP_ANYVALUE_DOUBLE:
        return memcmp(&a->double_value, &b->double_value, sizeof(double)) == 0;
    case PG_OTLP_ANYVALUE_BYTES:
        return a->bytes_value.len == b->bytes_value.len &&
               (a->bytes_value.len == 0 ||
                memcmp(a->bytes_value.data, b->bytes_value.data, a->bytes_value.len) == 0);
    case PG_OTLP_ANYVALUE_STRINDEX:
        return a->string_value_strindex == b->string_value_strindex;
    case PG_OTLP_ANYVALUE_ARRAY: {
        size_t na = a->array_value ? a->array_value->n_values : 0;
        size_t nb = b->array_value ? b->array_value->n_values : 0;
        if (na != nb) {
            return false;
        }
        for (size_t i = 0; i < na; i++) {
            if (!pg_dict_anyvalue_equal(a->array_value->values[i], b->array_value->values[i])) {
                return false;
            }
        }
        return true;
    }
    case PG_OTLP_ANYVALUE_KVLIST: {
        size_t na = a->kvlist_value ? a->kvlist_value->n_values : 0;
        size_t nb = b->kvlist_value ? b->kvlist_value->n_values : 0;
        if (na != nb) {
            return false;
        }
        for (size_t i = 0; i < na; i++) {
            if (!kv_equal(a->kvlist_value->values[i], b->kvlist_value->values[i])) {
                return false;
            }
        }
        return true;
    }
    default:
        return true;
    }
}

static struct pg_otlp_anyvalue *any_copy(struct pg_arena *a, const struct pg_otlp_anyvalue *v,
                                         unsigned depth);

static struct pg_otlp_kv *kv_copy(struct pg_arena *a, const struct pg_otlp_kv *kv, unsigned depth)
{
    struct pg_otlp_kv *c = pg_arena_alloc(a, sizeof(*c));

    if (c == NULL) {
        return NULL;
    }
    opentelemetry__proto__common__v1__key_value__init(c);
    c->key_strindex = kv->key_strindex;
    if (kv->key != NULL && kv->key[0] != '\0') {
        if ((c->key = pg_arena_strdup(a, kv->key)) == NULL) {
            return NULL;
        }
    }
    if (kv->value != NULL && (c->value = any_copy(a, kv->value, depth + 1)) == NULL) {
        return NULL;
    }
    return c;
}

/* Deep copy; nesting is bounded because protobuf-c's own unpacker bounds it
 * and our translator builds at most one level. */
static struct pg_otlp_anyvalue *any_copy(struct pg_arena *a, const struct pg_otlp_anyvalue *v,
                                         unsigned depth)
{
    struct pg_otlp_anyvalue *c = pg_arena_alloc(a, sizeof(*c));

    if (c == NULL || depth > 64) {
        return NULL;
    }
    *c = *v;
    c->base.n_unknown_fields = 0;
    c->base.unknown_fields = NULL;
    switch (v->value_case) {
    case PG_OTLP_ANYVALUE_STR:
        c->string_value = pg_arena_strdup(a, v->string_value != NULL ? v->string_value : "");
        return c->string_value != NULL ? c : NULL;
    case PG_OTLP_ANYVALUE_BYTES:
        if (v->bytes_value.len > 0) {
            c->bytes_value.data = pg_arena_memdup(a, v->bytes_value.data, v->bytes_value.len);
            return c->bytes_value.data != NULL ? c : NULL;
        }
        c->bytes_value.data = NULL;
        return c;
    case PG_OTLP_ANYVALUE_ARRAY: {
        const struct pg_otlp_array *src = v->array_value;
        struct pg_otlp_array *arr = pg_arena_alloc(a, sizeof(*arr));
        if (arr == NULL) {
            return NULL;
        }
        opentelemetry__proto__common__v1__array_value__init(arr);
        if (src != NULL && src->n_values > 0) {
            arr->values = pg_arena_calloc(a, src->n_values, sizeof(*arr->values));
            if (arr->values == NULL) {
                return NULL;
            }
            for (size_t i = 0; i < src->n_values; i++) {
                if ((arr->values[i] = any_copy(a, src->values[i], depth + 1)) == NULL) {
                    return NULL;
                }
            }
            arr->n_values = src->n_values;
        }
        c->array_value = arr;
        return c;
    }
    case PG_OTLP_ANYVALUE_KVLIST: {
        const struct pg_otlp_kvlist *src = v->kvlist_value;
        struct pg_otlp_kvlist *kl = pg_arena_alloc(a, sizeof(*kl));
        if (kl == NULL) {
            return NULL;
        }
        opentelemetry__proto__common__v1__key_value_list__init(kl);
        if (src != NULL && src->n_values > 0) {
            kl->values = pg_arena_calloc(a, src->n_values, sizeof(*kl->values));
            if (kl->values == NULL) {
                return NULL;
            }
            for (size_t i = 0; i < src->n_values; i++) {
                if ((kl->values[i] = kv_copy(a, src->values[i], depth + 1)) == NULL) {
                    return NULL;
                }
            }
            kl->n_values = src->n_values;
        }
        c->kvlist_value = kl;
        return c;
    }
    default:
        return c;
    }
}

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
    struct pg_otlp_kvu k, *e;
    uint64_t h = 19, *slot = NULL;
    int32_t idx;

    if (!tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&k);
    k.key_strindex = key_strindex;
    k.unit_strindex = unit_strindex;
    k.value = (struct pg_otlp_anyvalue *)value;
    h = hash_u64(h, (uint32_t)key_strindex);
    h = hash_u64(h, (uint32_t)unit_strindex);
    h = fmix64(any_hash(value, h));
    idx = tab_find(t, h, attr_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    e = pg_arena_memdup(b->out, &k, sizeof(k));
    if (e == NULL) {
        return PG_DICT_NOMEM;
    }
    if (value != NULL && (e->value = any_copy(b->out, value, 0)) == NULL) {
        return PG_DICT_NOMEM;
    }
    return tab_insert(b, t, h, slot, e, 0);
}

/* ---- links -------------------------------------------------------------- */

static bool link_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct pg_otlp_link *a = t->items[idx];
    const uint8_t *k = key;
    return a->trace_id.len == 16 && a->span_id.len == 8 && memcmp(a->trace_id.data, k, 16) == 0 &&
           memcmp(a->span_id.data, k + 16, 8) == 0;
}

int32_t pg_dict_link(struct pg_dict_builder *b, const uint8_t trace_id[16],
                     const uint8_t span_id[8])
{
    struct tab *t = &b->t[T_LINK];
    uint8_t k[24];
    uint64_t h, *slot = NULL;
    int32_t idx;
    struct pg_otlp_link *l;
    uint8_t *ids;

    if (!tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    memcpy(k, trace_id, 16);
    memcpy(k + 16, span_id, 8);
    h = pg_dict_hash_bytes(k, 24, 37);
    idx = tab_find(t, h, link_eq, k, &slot);
    if (idx >= 0) {
        return idx;
    }
    l = pg_arena_alloc(b->out, sizeof(*l) + 24);
    if (l == NULL) {
        return PG_DICT_NOMEM;
    }
    opentelemetry__proto__profiles__v1development__link__init(l);
    ids = (uint8_t *)(l + 1);
    memcpy(ids, k, 24);
    l->trace_id.data = ids;
    l->trace_id.len = 16;
    l->span_id.data = ids + 16;
    l->span_id.len = 8;
    return tab_insert(b, t, h, slot, l, 0);
}

/* ---- builder ------------------------------------------------------------ */

struct pg_dict_builder *pg_dict_builder_new(struct pg_arena *out, struct pg_arena *scratch)
{
    struct pg_dict_builder *b = pg_arena_zalloc(scratch, sizeof(*b));
    static const uint8_t zero[24];

    if (b == NULL) {
        return NULL;
    }
    b->out = out;
    b->scratch = scratch;
    b->heap_cap = pg_arena_cap(scratch);
    if (pg_arena_cleanup_add(scratch, free_tables, b) != 0) {
        return NULL;
    }
    /* The zero entries: each intern call below lands on index 0. */
    if (pg_dict_string(b, "", 0) != 0 || pg_dict_function(b, 0, 0, 0, 0) != 0 ||
        pg_dict_mapping(b, 0, 0, 0, 0, NULL, 0) != 0 ||
        pg_dict_location(b, 0, 0, NULL, 0, NULL, 0) != 0 || pg_dict_stack(b, NULL, 0) != 0 ||
        pg_dict_attr(b, 0, NULL, 0) != 0 || pg_dict_link(b, zero, zero + 16) != 0) {
        return NULL;
    }
    return b;
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

/* ---- import (merge) ----------------------------------------------------- */

struct pg_dict_remap {
    const struct pg_otlp_dict *src;
    int32_t *map[7]; /* per table: source index -> builder index + 1 (0 = not yet) */
};

enum { R_STR, R_FUNC, R_MAP, R_LOC, R_STACK, R_ATTR, R_LINK };

struct pg_dict_remap *pg_dict_remap_new(struct pg_arena *scratch, const struct pg_otlp_dict *src)
{
    struct pg_dict_remap *rm = pg_arena_zalloc(scratch, sizeof(*rm));
    size_t n[7];

    if (rm == NULL) {
        return NULL;
    }
    rm->src = src;
    n[R_STR] = src->n_string_table;
    n[R_FUNC] = src->n_function_table;
    n[R_MAP] = src->n_mapping_table;
    n[R_LOC] = src->n_location_table;
    n[R_STACK] = src->n_stack_table;
    n[R_ATTR] = src->n_attribute_table;
    n[R_LINK] = src->n_link_table;
    for (int i = 0; i < 7; i++) {
        rm->map[i] = pg_arena_calloc(scratch, n[i] ? n[i] : 1, sizeof(int32_t));
        if (rm->map[i] == NULL) {
            return NULL;
        }
    }
    return rm;
}

#define REMAP_BEGIN(tbl, count)                                                                    \
    if (idx < 0 || (size_t)idx >= (count)) {                                                     \
        return PG_DICT_RANGE;                                                                      \
    }                                                                                              \
    if (rm->map[tbl][idx] != 0) {                                                                  \
        return rm->map[tbl][idx] - 1;                                                              \
    }

static int32_t remap_end(struct pg_dict_remap *rm, int tbl, int32_t idx, int32_t r)
{
    if (r >= 0) {
        rm->map[tbl][idx] = r + 1;
    }
    return r;
}

int32_t pg_dict_import_string(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const char *s;

    REMAP_BEGIN(R_STR, rm->src->n_string_table);
    s = rm->src->string_table[idx] != NULL ? rm->src->string_table[idx] : "";
    return remap_end(rm, R_STR, idx, pg_dict_string(b, s, strlen(s)));
}

int32_t pg_dict_import_function(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_function *f;
    int32_t n, s, fn;

    REMAP_BEGIN(R_FUNC, rm->src->n_function_table);
    f = rm->src->function_table[idx];
    if ((n = pg_dict_import_string(b, rm, f->name_strindex)) < 0) {
        return n;
    }
    if ((s = pg_dict_import_string(b, rm, f->system_name_strindex)) < 0) {
        return s;
    }
    if ((fn = pg_dict_import_string(b, rm, f->filename_strindex)) < 0) {
        return fn;
    }
    return remap_end(rm, R_FUNC, idx, pg_dict_function(b, n, s, fn, f->start_line));
}

int pg_dict_import_attr_list(struct pg_dict_builder *b, struct pg_dict_remap *rm,
                             const int32_t *idx, size_t n, int32_t **out)
{
    int32_t stackbuf[32], *tmp = stackbuf;

    *out = NULL;
    if (n == 0) {
        return 0;
    }
    if (n > 32) {
        tmp = pg_arena_calloc(b->scratch, n, sizeof(int32_t));
        if (tmp == NULL) {
            return PG_DICT_NOMEM;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int32_t r = pg_dict_import_attr(b, rm, idx[i]);
        if (r < 0) {
            return r;
        }
        tmp[i] = r;
    }
    *out = (int32_t *)pg_dict_index_list(b, tmp, n);
    return *out != NULL ? 0 : PG_DICT_NOMEM;
}

int32_t pg_dict_import_mapping(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_mapping *m;
    int32_t fn, *attrs;
    int r;

    REMAP_BEGIN(R_MAP, rm->src->n_mapping_table);
    m = rm->src->mapping_table[idx];
    if ((fn = pg_dict_import_string(b, rm, m->filename_strindex)) < 0) {
        return fn;
    }
    r = pg_dict_import_attr_list(b, rm, m->attribute_indices, m->n_attribute_indices, &attrs);
    if (r < 0) {
        return r;
    }
    return remap_end(rm, R_MAP, idx,
                     pg_dict_mapping(b, m->memory_start, m->memory_limit, m->file_offset, fn,
                                     attrs, m->n_attribute_indices));
}

int32_t pg_dict_import_location(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_location *l;
    struct pg_dict_line *lines = NULL;
    int32_t mi, *attrs;
    int r;

    REMAP_BEGIN(R_LOC, rm->src->n_location_table);
    l = rm->src->location_table[idx];
    if ((mi = pg_dict_import_mapping(b, rm, l->mapping_index)) < 0) {
        return mi;
    }
    if (l->n_lines > 0) {
        lines = pg_arena_calloc(b->scratch, l->n_lines, sizeof(*lines));
        if (lines == NULL) {
            return PG_DICT_NOMEM;
        }
    }
    for (size_t i = 0; i < l->n_lines; i++) {
        int32_t f = pg_dict_import_function(b, rm, l->lines[i]->function_index);
        if (f < 0) {
            return f;
        }
        lines[i].function_index = f;
        lines[i].line = l->lines[i]->line;
        lines[i].column = l->lines[i]->column;
    }
    r = pg_dict_import_attr_list(b, rm, l->attribute_indices, l->n_attribute_indices, &attrs);
    if (r < 0) {
        return r;
    }
    return remap_end(rm, R_LOC, idx,
                     pg_dict_location(b, mi, l->address, lines, l->n_lines, attrs,
                                      l->n_attribute_indices));
}

int32_t pg_dict_import_stack(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_stack *s;
    int32_t stackbuf[64], *tmp = stackbuf;

    REMAP_BEGIN(R_STACK, rm->src->n_stack_table);
    s = rm->src->stack_table[idx];
    if (s->n_location_indices > 64) {
        tmp = pg_arena_calloc(b->scratch, s->n_location_indices, sizeof(int32_t));
        if (tmp == NULL) {
            return PG_DICT_NOMEM;
        }
    }
    for (size_t i = 0; i < s->n_location_indices; i++) {
        int32_t r = pg_dict_import_location(b, rm, s->location_indices[i]);
        if (r < 0) {
            return r;
        }
        tmp[i] = r;
    }
    return remap_end(rm, R_STACK, idx, pg_dict_stack(b, tmp, s->n_location_indices));
}

/* Copies an AnyValue, re-pointing string_value_strindex / key_strindex into the builder. */
static int import_any(struct pg_dict_builder *b, struct pg_dict_remap *rm,
                      const struct pg_otlp_anyvalue *v, struct pg_otlp_anyvalue **out,
                      unsigned depth);

static int import_kv(struct pg_dict_builder *b, struct pg_dict_remap *rm,
                     const struct pg_otlp_kv *kv, struct pg_otlp_kv **out, unsigned depth)
{
    struct pg_otlp_kv *c = pg_arena_alloc(b->scratch, sizeof(*c));
    int r;

    if (c == NULL) {
        return PG_DICT_NOMEM;
    }
    *c = *kv;
    if (kv->key_strindex != 0) {
        int32_t k = pg_dict_import_string(b, rm, kv->key_strindex);
        if (k < 0) {
            return k;
        }
        c->key_strindex = k;
    }
    if (kv->value != NULL && (r = import_any(b, rm, kv->value, &c->value, depth + 1)) < 0) {
        return r;
    }
    *out = c;
    return 0;
}

static int import_any(struct pg_dict_builder *b, struct pg_dict_remap *rm,
                      const struct pg_otlp_anyvalue *v, struct pg_otlp_anyvalue **out,
                      unsigned depth)
{
    struct pg_otlp_anyvalue *c;
    int r;

    if (depth > 64) {
        return PG_DICT_RANGE;
    }
    if (v->value_case != PG_OTLP_ANYVALUE_STRINDEX && v->value_case != PG_OTLP_ANYVALUE_ARRAY &&
        v->value_case != PG_OTLP_ANYVALUE_KVLIST) {
        *out = (struct pg_otlp_anyvalue *)v; /* copied by pg_dict_attr when new */
        return 0;
    }
    c = pg_arena_alloc(b->scratch, sizeof(*c));
    if (c == NULL) {
        return PG_DICT_NOMEM;
    }
    *c = *v;
    if (v->value_case == PG_OTLP_ANYVALUE_STRINDEX) {
        int32_t s = pg_dict_import_string(b, rm, v->string_value_strindex);
        if (s < 0) {
            return s;
        }
        c->string_value_strindex = s;
    } else if (v->value_case == PG_OTLP_ANYVALUE_ARRAY && v->array_value != NULL) {
        struct pg_otlp_array *arr = pg_arena_alloc(b->scratch, sizeof(*arr));
        if (arr == NULL) {
            return PG_DICT_NOMEM;
        }
        *arr = *v->array_value;
        arr->values = pg_arena_calloc(b->scratch, arr->n_values ? arr->n_values : 1,
                                      sizeof(*arr->values));
        if (arr->values == NULL) {
            return PG_DICT_NOMEM;
        }
        for (size_t i = 0; i < arr->n_values; i++) {
            if ((r = import_any(b, rm, v->array_value->values[i], &arr->values[i], depth + 1)) <
                0) {
                return r;
            }
        }
        c->array_value = arr;
    } else if (v->value_case == PG_OTLP_ANYVALUE_KVLIST && v->kvlist_value != NULL) {
        struct pg_otlp_kvlist *kl = pg_arena_alloc(b->scratch, sizeof(*kl));
        if (kl == NULL) {
            return PG_DICT_NOMEM;
        }
        *kl = *v->kvlist_value;
        kl->values = pg_arena_calloc(b->scratch, kl->n_values ? kl->n_values : 1,
                                     sizeof(*kl->values));
        if (kl->values == NULL) {
            return PG_DICT_NOMEM;
        }
        for (size_t i = 0; i < kl->n_values; i++) {
            if ((r = import_kv(b, rm, v->kvlist_value->values[i], &kl->values[i], depth + 1)) <
                0) {
                return r;
            }
        }
        c->kvlist_value = kl;
    }
    *out = c;
    return 0;
}

int32_t pg_dict_import_attr(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_kvu *a;
    struct pg_otlp_anyvalue *v = NULL;
    int32_t k, u;
    int r;

    REMAP_BEGIN(R_ATTR, rm->src->n_attribute_table);
    a = rm->src->attribute_table[idx];
    if ((k = pg_dict_import_string(b, rm, a->key_strindex)) < 0) {
        return k;
    }
    if ((u = pg_dict_import_string(b, rm, a->unit_strindex)) < 0) {
        return u;
    }
    if (a->value != NULL && (r = import_any(b, rm, a->value, &v, 0)) < 0) {
        return r;
    }
    return remap_end(rm, R_ATTR, idx, pg_dict_attr(b, k, v, u));
}

int32_t pg_dict_import_link(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_link *l;
    uint8_t t[16] = {0}, s[8] = {0};

    REMAP_BEGIN(R_LINK, rm->src->n_link_table);
    l = rm->src->link_table[idx];
    if (l->trace_id.len == 16) {
        memcpy(t, l->trace_id.data, 16);
    }
    if (l->span_id.len == 8) {
        memcpy(s, l->span_id.data, 8);
    }
    return remap_end(rm, R_LINK, idx, pg_dict_link(b, t, s));
}

/* ---- validation ---------------------------------------------------------- */

#define CHECK_IDX(val, n, what)                                                                    \
    do {                                                                                           \
        if ((val) < 0 || (size_t)(val) >= (n)) {                                                   \
            return pg_status_set(st, PG_ERR_MALFORMED, "otlp: %s %lld out of range (table has " \
                                 "%zu entries)", what, (long long)(val), (size_t)(n));            \
        }                                                                                          \
    } while (0)

static enum pg_err check_attr_list(const struct pg_otlp_dict *d, const int32_t *idx, size_t n,
                                   const char *what, struct pg_status *st)
{
    for (size_t i = 0; i < n; i++) {
        CHECK_IDX(idx[i], d->n_attribute_table, what);
        for (size_t j = 0; j < i; j++) {
            const struct pg_otlp_kvu *a = d->attribute_table[idx[i]];
            const struct pg_otlp_kvu *b = d->attribute_table[idx[j]];
            if (a->key_strindex == b->key_strindex) {
                return pg_status_set(st, PG_ERR_MALFORMED, "otlp: %s repeat key index %d", what,
                                     a->key_strindex);
            }
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_dict_validate(struct pg_arena *scratch, const struct pg_otlp_request *req,
                             bool no_duplicates, struct pg_status *st)
{
    const struct pg_otlp_dict *d = req->dictionary;
    enum pg_err err;

    if (d == NULL) {
        return pg_status_set(st, PG_ERR_MALFORMED, "otlp: request without dictionary");
    }
    if (d->n_string_table == 0 || d->string_table[0][0] != '\0' || d->n_mapping_table == 0 ||
        d->n_location_table == 0 || d->n_function_table == 0 || d->n_link_table == 0 ||
        d->n_attribute_table == 0 || d->n_stack_table == 0) {
        return pg_status_set(st, PG_ERR_MALFORMED, "otlp: a dictionary table lacks index 0");
    }
    {
        const struct pg_otlp_mapping *m = d->mapping_table[0];
        const struct pg_otlp_location *l = d->location_table[0];
        const struct pg_otlp_function *f = d->function_table[0];
        const struct pg_otlp_link *k = d->link_table[0];
        const struct pg_otlp_kvu *a = d->attribute_table[0];
        static const uint8_t zero[16];
        if (m->memory_start || m->memory_limit || m->file_offset || m->filename_strindex ||
            m->n_attribute_indices || l->mapping_index || l->address || l->n_lines ||
            l->n_attribute_indices || f->name_strindex || f->system_name_strindex ||
            f->filename_strindex || f->start_line || a->key_strindex || a->unit_strindex ||
            (a->value != NULL && a->value->value_case != PG_OTLP_ANYVALUE_NONE) ||
            d->stack_table[0]->n_location_indices ||
            (k->trace_id.len != 0 && (k->trace_id.len != 16 ||
                                      memcmp(k->trace_id.data, zero, 16) != 0)) ||
            (k->span_id.len != 0 && (k->span_id.len != 8 ||
                                     memcmp(k->span_id.data, zero, 8) != 0))) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "otlp: index 0 of a dictionary table is not the zero value");
        }
    }
    for (size_t i = 0; i < d->n_mapping_table; i++) {
        const struct pg_otlp_mapping *m = d->mapping_table[i];
        CHECK_IDX(m->filename_strindex, d->n_string_table, "mapping filename_strindex");
        if ((err = check_attr_list(d, m->attribute_indices, m->n_attribute_indices,
                                   "mapping attribute_indices", st)) != PG_ERR_OK) {
            return err;
        }
    }
    for (size_t i = 0; i < d->n_function_table; i++) {
        const struct pg_otlp_function *f = d->function_table[i];
        CHECK_IDX(f->name_strindex, d->n_string_table, "function name_strindex");
        CHECK_IDX(f->system_name_strindex, d->n_string_table, "function system_name_strindex");
        CHECK_IDX(f->filename_strindex, d->n_string_table, "function filename_strindex");
    }
    for (size_t i = 0; i < d->n_location_table; i++) {
        const struct pg_otlp_location *l = d->location_table[i];
        CHECK_IDX(l->mapping_index, d->n_mapping_table, "location mapping_index");
        for (size_t j = 0; j < l->n_lines; j++) {
            CHECK_IDX(l->lines[j]->function_index, d->n_function_table, "line function_index");
        }
        if ((err = check_attr_list(d, l->attribute_indices, l->n_attribute_indices,
                                   "location attribute_indices", st)) != PG_ERR_OK) {
            return err;
        }
    }
    for (size_t i = 0; i < d->n_stack_table; i++) {
        const struct pg_otlp_stack *s = d->stack_table[i];
        for (size_t j = 0; j < s->n_location_indices; j++) {
            CHECK_IDX(s->location_indices[j], d->n_location_table, "stack location_indices");
        }
    }
    for (size_t i = 0; i < d->n_attribute_table; i++) {
        const struct pg_otlp_kvu *a = d->attribute_table[i];
        CHECK_IDX(a->key_strindex, d->n_string_table, "attribute key_strindex");
        CHECK_IDX(a->unit_strindex, d->n_string_table, "attribute unit_strindex");
    }
    for (size_t r = 0; r < req->n_resource_profiles; r++) {
        const struct pg_otlp_resprof *rp = req->resource_profiles[r];
        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            const struct pg_otlp_scopeprof *sp = rp->scope_profiles[s];
            for (size_t k = 0; k < sp->n_profiles; k++) {
                const struct pg_otlp_profile *p = sp->profiles[k];
                if (p->sample_type != NULL) {
                    CHECK_IDX(p->sample_type->type_strindex, d->n_string_table, "sample_type");
                    CHECK_IDX(p->sample_type->unit_strindex, d->n_string_table, "sample_type");
                }
                if (p->period_type != NULL) {
                    CHECK_IDX(p->period_type->type_strindex, d->n_string_table, "period_type");
                    CHECK_IDX(p->period_type->unit_strindex, d->n_string_table, "period_type");
                }
                if ((err = check_attr_list(d, p->attribute_indices, p->n_attribute_indices,
                                           "profile attribute_indices", st)) != PG_ERR_OK) {
                    return err;
                }
                for (size_t i = 0; i < p->n_samples; i++) {
                    const struct pg_otlp_sample *sm = p->samples[i];
                    CHECK_IDX(sm->stack_index, d->n_stack_table, "sample stack_index");
                    CHECK_IDX(sm->link_index, d->n_link_table, "sample link_index");
                    if ((err = check_attr_list(d, sm->attribute_indices,
                                               sm->n_attribute_indices,
                                               "sample attribute_indices", st)) != PG_ERR_OK) {
                        return err;
                    }
                }
            }
        }
    }
    if (no_duplicates) {
        /* Re-intern every entry into a fresh builder, dependencies first: an entry that lands
         * on an earlier index duplicates it. */
        struct pg_dict_builder *b = pg_dict_builder_new(scratch, scratch);
        struct pg_dict_remap *rm = pg_dict_remap_new(scratch, d);
        struct {
            const char *name;
            size_t n;
            int32_t (*imp)(struct pg_dict_builder *, struct pg_dict_remap *, int32_t);
        } tabs[] = {
            {"string", d->n_string_table, pg_dict_import_string},
            {"function", d->n_function_table, pg_dict_import_function},
            {"attribute", d->n_attribute_table, pg_dict_import_attr},
            {"link", d->n_link_table, pg_dict_import_link},
            {"mapping", d->n_mapping_table, pg_dict_import_mapping},
            {"location", d->n_location_table, pg_dict_import_location},
            {"stack", d->n_stack_table, pg_dict_import_stack},
        };
        if (b == NULL || rm == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "otlp: no memory to check duplicates");
        }
        for (size_t t = 0; t < sizeof(tabs) / sizeof(tabs[0]); t++) {
            for (size_t i = 0; i < tabs[t].n; i++) {
                int32_t r = tabs[t].imp(b, rm, (int32_t)i);
                if (r < 0) {
                    return pg_status_set(st, PG_ERR_NOMEM, "otlp: no memory to check duplicates");
                }
                if ((size_t)r != i) {
                    return pg_status_set(st, PG_ERR_MALFORMED,
                                         "otlp: %s_table[%zu] duplicates entry %d", tabs[t].name,
                                         i, r);
                }
            }
        }
    }
    return PG_ERR_OK;
}
