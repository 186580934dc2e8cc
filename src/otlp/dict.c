/* SPDX-License-Identifier: Apache-2.0
 * ProfilesDictionary interning: one open-addressing hash table per OTLP table
 * (slots hold hash << 32 | index + 1, so rehashing never touches the
 * entries), entries allocated once in the output arena. The slot and pointer
 * arrays live in malloc'd memory (freed on growth, and all at once when the
 * scratch arena dies, small ones kept for the thread's next builder): in the
 * arena every doubling would leave its old copy behind, about as much again as
 * the final tables. pg_dict_finish() copies the
 * pointer arrays to exact size into the output arena. */
#include "otlp/dict.h"
#include "otlp/dict_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "core/vec.h"
#include "otlp/otlp_utf8.h"

/* ---- hashing ------------------------------------------------------------ */

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
        /* The 1-7 tail bytes from at most two fixed-size loads: a variable-length memcpy
         * would be a libc call per hash. */
        uint64_t w;
        if (n >= 4) {
            uint32_t lo, hi;
            memcpy(&lo, s, 4);
            memcpy(&hi, s + n - 4, 4);
            w = (uint64_t)hi << 32 | lo;
        } else {
            w = (uint64_t)s[0] | (uint64_t)s[n / 2] << 8 | (uint64_t)s[n - 1] << 16;
        }
        h = rotl64(h ^ (w * K1), 29) * K2;
    }
    return fmix64(h);
}

/* ---- tables ------------------------------------------------------------- */

static inline bool tab_push(struct pg_dict_builder *b, struct tab *t, void *item, uint32_t len)
{
    if (t->n == t->cap && !pg_dict_tab_push_grow(b, t)) {
        return false;
    }
    t->items[t->n] = item;
    if (t->lens != NULL) { /* T_STR and T_LIST: allocated with their first items */
        t->lens[t->n] = len;
    }
    t->n++;
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
static inline bool tab_reserve(struct pg_dict_builder *b, struct tab *t)
{
    if (t->slots == NULL || (t->n + 1) * 2 > t->mask + 1) {
        return pg_dict_tab_grow(b, t);
    }
    return true;
}

static inline int32_t tab_insert(struct pg_dict_builder *b, struct tab *t, uint64_t h,
                                 uint64_t *slot, void *item, uint32_t len)
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

/* A repaired copy of @s in b->tmp (the core/utf8 rule: each invalid byte becomes U+FFFD,
 * counted and logged); out of line: pprof strings are almost always valid. */
__attribute__((noinline)) static const char *utf8_repair(struct pg_dict_builder *b, const char *s,
                                                         size_t *len)
{
    size_t n = *len, bad = 0;

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

/* Returns @s itself when it is clean, else a repaired copy in b->tmp. */
static inline const char *utf8_clean(struct pg_dict_builder *b, const char *s, size_t *len)
{
    return pg_utf8_valid(s, *len) ? s : utf8_repair(b, s, len);
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* pg_dict_hash_bytes(@s, @n, @seed) and, in the same pass, whether every byte is ASCII other
 * than NUL (then @s is stored as is without a separate UTF-8 scan): a string is read once
 * instead of twice. Per word, a byte >= 0x80 sets its top bit in w and a zero byte sets it in
 * (w - ONES) & ~w (exact as a yes/no when no byte is >= 0x80). */
static inline uint64_t str_hash_ascii(const char *s, size_t n, uint64_t seed, bool *ascii)
{
    const uint8_t *p = (const uint8_t *)s;
    uint64_t h = seed ^ (n * K1), flags = 0;

    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        flags |= w | ((w - ONES) & ~w);
        h = rotl64(h ^ (w * K1), 29) * K2;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w, c;
        if (n >= 4) {
            uint32_t lo, hi;
            memcpy(&lo, p, 4);
            memcpy(&hi, p + n - 4, 4);
            w = (uint64_t)hi << 32 | lo;
            c = w;
        } else {
            w = (uint64_t)p[0] | (uint64_t)p[n / 2] << 8 | (uint64_t)p[n - 1] << 16;
            c = w | 0x0101010101000000ull; /* the five unused bytes are not NULs */
        }
        flags |= c | ((c - ONES) & ~c);
        h = rotl64(h ^ (w * K1), 29) * K2;
    }
    *ascii = (flags & HIGHS) == 0;
    return fmix64(h);
}

/* *@s (@len bytes) hashed with @seed, replaced by a repaired copy (in b->tmp) when it is not
 * valid UTF-8: the form strings and string attributes are stored in. False on OOM. */
__attribute__((always_inline)) static inline bool hash_clean(struct pg_dict_builder *b,
                                                             const char **s, size_t *len,
                                                             uint64_t seed, uint64_t *h)
{
    bool ascii;

    *h = str_hash_ascii(*s, *len, seed, &ascii);
    if (!ascii && !pg_utf8_valid(*s, *len)) {
        if ((*s = utf8_repair(b, *s, len)) == NULL) {
            return false;
        }
        *h = pg_dict_hash_bytes(*s, *len, seed);
    }
    return true;
}

/* A NUL-terminated copy of @s in the out arena (pg_arena_strndup written out: one call
 * less per new string); NULL on OOM. */
__attribute__((always_inline)) static inline char *out_cstr(struct pg_dict_builder *b,
                                                            const char *s, size_t len)
{
    char *copy = pg_arena_alloc(b->out, len + 1);

    if (copy != NULL) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

int32_t pg_dict_string(struct pg_dict_builder *b, const char *s, size_t len)
{
    struct tab *t = &b->t[T_STR];
    struct str_key k;
    uint64_t h, *slot = NULL;
    int32_t idx;
    char *copy;

    if (len > UINT32_MAX || !hash_clean(b, &s, &len, 1, &h) || !tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    k.s = s;
    k.len = len;
    idx = tab_find(t, h, str_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    if ((copy = out_cstr(b, s, len)) == NULL) {
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

/* Zero values of the messages made here, copied by assignment: the generated *__init()
 * functions are out-of-line calls doing the same copy. */
static const struct pg_otlp_function function_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__FUNCTION__INIT;
static const struct pg_otlp_mapping mapping_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__MAPPING__INIT;
static const struct pg_otlp_location location_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LOCATION__INIT;
static const struct pg_otlp_line line_init = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINE__INIT;
static const struct pg_otlp_stack stack_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__STACK__INIT;
static const struct pg_otlp_kvu kvu_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__KEY_VALUE_AND_UNIT__INIT;

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

/* pg_dict_attr with a string value given by pointer and length: the same entry (same hash,
 * same equality: pg_dict_any_hash and pg_dict_anyvalue_equal of a STR value), without the
 * NUL-terminated temporary copy, the two strlen and the separate UTF-8 pass. */
struct attr_str_key {
    int32_t key, unit;
    const char *s;
    size_t len;
};

static bool attr_str_eq(const struct tab *t, size_t idx, const void *key)
{
    const struct pg_otlp_kvu *a = t->items[idx];
    const struct attr_str_key *k = key;
    const char *v;

    if (a->key_strindex != k->key || a->unit_strindex != k->unit || a->value == NULL ||
        a->value->value_case != PG_OTLP_ANYVALUE_STR) {
        return false;
    }
    v = a->value->string_value != NULL ? a->value->string_value : "";
    return memcmp(v, k->s, k->len) == 0 && v[k->len] == '\0'; /* k->s has no NUL */
}

static const struct pg_otlp_anyvalue anyvalue_init = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;

int32_t pg_dict_attr_str(struct pg_dict_builder *b, int32_t key_strindex, const char *s,
                         size_t len, int32_t unit_strindex)
{
    struct tab *t = &b->t[T_ATTR];
    struct attr_str_key k;
    struct pg_otlp_kvu *e;
    struct pg_otlp_anyvalue *v;
    uint64_t h = 19, hs, *slot = NULL;
    int32_t idx;
    char *copy;

    if (!hash_clean(b, &s, &len, 29, &hs) || len == SIZE_MAX || !tab_reserve(b, t)) {
        return PG_DICT_NOMEM;
    }
    h = hash_u64(h, (uint32_t)key_strindex);
    h = hash_u64(h, (uint32_t)unit_strindex);
    h = hash_u64(h, (uint64_t)PG_OTLP_ANYVALUE_STR); /* as pg_dict_any_hash */
    h = fmix64(hash_u64(h, hs));
    k = (struct attr_str_key){key_strindex, unit_strindex, s, len};
    idx = tab_find(t, h, attr_str_eq, &k, &slot);
    if (idx >= 0) {
        return idx;
    }
    e = pg_arena_alloc(b->out, sizeof(*e));
    v = pg_arena_alloc(b->out, sizeof(*v));
    copy = out_cstr(b, s, len);
    if (e == NULL || v == NULL || copy == NULL) {
        return PG_DICT_NOMEM;
    }
    *v = anyvalue_init;
    v->value_case = PG_OTLP_ANYVALUE_STR;
    v->string_value = copy;
    *e = kvu_init;
    e->key_strindex = key_strindex;
    e->unit_strindex = unit_strindex;
    e->value = v;
    return tab_insert(b, t, h, slot, e, 0);
}

/* ---- links -------------------------------------------------------------- */

static const struct pg_otlp_link link_init =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT;

/* The 24-byte trace + span id key as three words: every sample with a new trace/span pair
 * (nearly every sample of a traced SDK push) interns one, so the lookup is written out here
 * with the key in registers (no key buffer, no generic eq callback) and the ids are stored
 * right after the Link (every T_LINK entry is made here: 16 + 8 bytes). */
static inline uint64_t link_hash(uint64_t w0, uint64_t w1, uint64_t w2)
{
    /* No fmix64: the ids are random or at worst structured, and a final multiply carries
     * every bit of w2 into the high half, which tab's h32 folds into the slot bits. */
    return (rotl64(w0 * K1 ^ w1, 31) * K2 ^ w2) * K1;
}

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
