/* SPDX-License-Identifier: Apache-2.0
 * pprof -> OTLP Profiles. Gzip layers are peeled into a scratch arena, the
 * pprof is indexed by pprof_decode.c, and one streaming pass over the samples
 * interns stacks (cached by their raw packed location bytes), attributes and
 * links into a pg_dict_builder whose output lives in the request arena; each
 * sample is kept as a small record. Then the scratch arena (inflated pprof,
 * indexes, hash tables) is released and only then are the Sample structs
 * built, so the two never occupy memory together. Indexes follow first use:
 * mappings (pprof order), profile 0's sample/period types, the samples, the
 * profile attributes, then the other profiles' sample types. */
#include "pprof/translate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/hex.h"
#include "core/vec.h"
#include "otlp/dict.h"
#include "codec/inflate.h"
#include "otlp/otlp_build.h"
#include "pprof/pprof_decode.h"

#define KEY_BUILD_ID "process.executable.build_id.gnu"
#define KEY_IS_FOLDED "pprof.location.is_folded"
#define KEY_DROP_FRAMES "pprof.profile.drop_frames"
#define KEY_KEEP_FRAMES "pprof.profile.keep_frames"
#define KEY_COMMENT "pprof.profile.comment"
#define KEY_DOC_URL "pprof.profile.doc_url"
#define KEY_TYPE_ORDER "pprof.scope.sample_type_order"
#define KEY_DEFAULT_TYPE "pprof.scope.default_sample_type"

/* Fixed attribute keys interned on top of the pprof strings (bound for the key arrays). */
#define FIXED_KEYS 16

void pg_translate_opts_default(struct pg_translate_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->trace_id_label = "trace_id";
    o->span_id_label = "span_id";
    o->include_original_payload = false;
    o->scope_name = "pprofgate";
    o->scope_version = PG_VERSION;
    o->limits.max_inflated_bytes = (size_t)20 << 20;
    o->limits.max_gzip_layers = 4;
    o->limits.max_samples = (size_t)2 << 20;
    o->limits.max_locations = (size_t)1 << 20;
    o->limits.max_functions = (size_t)1 << 20;
    o->limits.max_mappings = (size_t)64 << 10;
    o->limits.max_strings = (size_t)4 << 20;
    o->limits.max_string_bytes = (size_t)64 << 20;
    o->limits.max_stack_depth = 4096;
    o->limits.max_labels_per_sample = 256;
    o->limits.max_sample_types = 64;
}

enum key_kind { KK_UNKNOWN = 0, KK_OTHER, KK_TRACE, KK_SPAN };

/* Cache in front of pg_dict_attr for single-valued labels, keyed on pprof
 * indexes so a repeated label costs one integer hash probe. */
struct acache_ent {
    int64_t key, val, unit;
    int32_t is_num, attr;
    const int32_t *one; /* the interned list of just attr, once asked for (NULL before) */
};

struct acache {
    struct acache_ent *ents;
    size_t n, cap;
    uint32_t *slots; /* entry + 1, 0 = empty */
    size_t mask;
};

/* Raw packed location_id bytes -> stack index: most samples repeat a stack, and equal
 * bytes are equal ids, so a hit skips decoding the ids, resolving each location and
 * hashing the stack. malloc'd (no doubling leftovers), freed with the scratch arena. */
struct scache_ent {
    const uint8_t *p; /* into the inflated pprof */
    uint32_t len, h;
    int32_t stack;
};

struct scache {
    struct scache_ent *ents;
    size_t n, cap;
    uint32_t *slots; /* entry + 1, 0 = empty */
    size_t mask;
    size_t bytes, peak; /* for the peak-memory figure (heap arrays only) */
    bool in_arena;      /* the first, small arrays are scratch's; later ones the heap's */
    const uint8_t *last; /* the previous sample's bytes and stack: consecutive samples */
    size_t last_len;     /* often share their stack */
    int32_t last_stack;
};

/* Direct-mapped memo of the last link per (trace_id string, span_id string) pair: samples of
 * one span repeat the pair, and a hit skips two hex decodes and the link hash. Bounded size (in
 * scratch), so a profile where every pair is new costs one probe per sample and no memory. */
#define LCACHE_BITS 9
struct lcache_ent {
    uint32_t tr, sp; /* pprof string indexes; tr 0 = empty (links need a non-empty string) */
    int32_t link;    /* link index, or -1: the pair is not a valid link (labels stay) */
};

/* The last classified sample's label keys (all with non-empty string values) and what
 * sample_labels found in them; n 0 = none. */
#define LAYOUT_MAX 4
struct layout {
    size_t n;
    int64_t key[LAYOUT_MAX];
    size_t ntr, nsp, tr, sp, other;
};

struct label_group {
    int32_t key;   /* OTLP strindex */
    uint32_t first, last, count;
};

/* What a sample becomes, kept compactly until the scratch arena is gone (the
 * Sample structs, 96 bytes per sample and type, are only allocated then). */
struct srec {
    const int32_t *attrs; /* shared index list in the out arena */
    uint32_t n_attrs;
    int32_t stack, link;
};

struct xlate {
    struct pg_arena *out, *scratch; /* scratch is destroyed (NULL) before the samples exist */
    struct pg_arena *keep;          /* struct srec array: outlives scratch, dies with the call */
    struct pg_arena **input;        /* the caller's body arena, destroyed once the body is dead */
    size_t peak;                    /* max bytes held by out + scratch + keep at once */
    const struct pg_translate_opts *opts;
    struct pg_status *st;
    struct pg_pprof p;
    struct pg_dict_builder *b;
    int32_t *str_otlp; /* pprof string -> OTLP strindex, -1 = not yet */
    uint8_t *keykind;  /* pprof string -> enum key_kind */
    int32_t *map_otlp, *loc_otlp, *fn_otlp;
    struct acache ac;
    struct layout lay;
    struct lcache_ent *lc; /* 1 << lc_bits entries, scratch */
    unsigned lc_bits;
    struct scache sc;
    uint32_t *seen_stamp, *seen_group; /* by OTLP key strindex */
    size_t seen_n;
    uint32_t stamp;
    uint32_t *label_next;
    struct label_group *groups;
    int32_t *stackbuf, *attrbuf;
    const int32_t **one_list; /* attribute index -> its interned one-entry list (scratch) */
    size_t one_cap;
    struct pg_dict_line *linebuf;
    size_t linebuf_cap;
    int32_t attr_folded;
    size_t trace_len, span_len;
    size_t scratch_bytes; /* scratch footprint when it was released */
};

static enum pg_err nomem(struct xlate *x, const char *what)
{
    bool cap = pg_arena_hit_cap(x->out) || (x->scratch != NULL && pg_arena_hit_cap(x->scratch)) ||
               (x->keep != NULL && pg_arena_hit_cap(x->keep)) ||
               (x->b != NULL && pg_dict_hit_cap(x->b));
    return pg_status_set(x->st, cap ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                         "pprof translation: %s while building %s",
                         cap ? "request memory limit reached" : "out of memory", what);
}

static inline int32_t pstr(struct xlate *x, int64_t idx)
{
    int32_t v = x->str_otlp[idx];

    if (v < 0) {
        v = pg_dict_string(x->b, x->p.strings[idx].p, x->p.strings[idx].len);
        if (v >= 0) {
            x->str_otlp[idx] = v;
        }
    }
    return v;
}

static int32_t cstr(struct xlate *x, const char *s)
{
    return pg_dict_string(x->b, s, strlen(s));
}

static int32_t attr_str(struct xlate *x, const char *key, int64_t pprof_val)
{
    int32_t k = cstr(x, key);

    if (k < 0) {
        return k;
    }
    return pg_dict_attr_str(x->b, k, x->p.strings[pprof_val].p, x->p.strings[pprof_val].len, 0);
}

static int32_t attr_true(struct xlate *x, const char *key)
{
    struct pg_otlp_anyvalue v = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
    int32_t k = cstr(x, key);

    if (k < 0) {
        return k;
    }
    v.value_case = PG_OTLP_ANYVALUE_BOOL;
    v.bool_value = 1;
    return pg_dict_attr(x->b, k, &v, 0);
}

/* ---- dictionary entries from pprof entities ------------------------------ */

static enum pg_err add_mappings(struct xlate *x)
{
    static const char *const flag_keys[4] = {
        "pprof.mapping.has_functions", "pprof.mapping.has_filenames",
        "pprof.mapping.has_line_numbers", "pprof.mapping.has_inline_frames"};

    for (size_t i = 0; i < x->p.n_mappings; i++) {
        const struct pg_pprof_mapping *m = &x->p.mappings[i];
        int32_t attrs[5], fn;
        size_t na = 0;

        if ((fn = pstr(x, m->filename)) < 0) {
            return nomem(x, "mappings");
        }
        if (x->p.strings[m->build_id].len > 0) {
            if ((attrs[na++] = attr_str(x, KEY_BUILD_ID, m->build_id)) < 0) {
                return nomem(x, "mappings");
            }
        }
        for (unsigned f = 0; f < 4; f++) {
            if ((m->flags & (1u << f)) && (attrs[na++] = attr_true(x, flag_keys[f])) < 0) {
                return nomem(x, "mappings");
            }
        }
        x->map_otlp[i] = pg_dict_mapping(x->b, m->memory_start, m->memory_limit, m->file_offset,
                                         fn, attrs, na);
        if (x->map_otlp[i] < 0) {
            return nomem(x, "mappings");
        }
    }
    return PG_ERR_OK;
}

static int32_t function_index(struct xlate *x, uint32_t pos)
{
    const struct pg_pprof_function *f = &x->p.functions[pos];
    int32_t name, sys, file;

    if (x->fn_otlp[pos] >= 0) {
        return x->fn_otlp[pos];
    }
    if ((name = pstr(x, f->name)) < 0 || (sys = pstr(x, f->system_name)) < 0 ||
        (file = pstr(x, f->filename)) < 0) {
        return PG_DICT_NOMEM;
    }
    x->fn_otlp[pos] = pg_dict_function(x->b, name, sys, file, f->start_line);
    return x->fn_otlp[pos];
}

static int32_t location_index(struct xlate *x, uint32_t pos)
{
    const struct pg_pprof_location *l = &x->p.locations[pos];
    int32_t mi = 0, attrs[1];
    size_t na = 0;

    if (l->mapping_pos != PG_PPROF_NONE) {
        mi = x->map_otlp[l->mapping_pos];
    }
    if (l->n_lines > x->linebuf_cap) {
        x->linebuf = pg_arena_alloc(x->scratch, l->n_lines * sizeof(*x->linebuf));
        if (x->linebuf == NULL) {
            x->linebuf_cap = 0;
            return PG_DICT_NOMEM;
        }
        x->linebuf_cap = l->n_lines;
    }
    /* pprof order is kept: callee first, caller last (upstream sorts; see reference §2.7). */
    for (uint32_t i = 0; i < l->n_lines; i++) {
        int32_t fi = function_index(x, l->lines[i].function_pos);
        if (fi < 0) {
            return fi;
        }
        x->linebuf[i].function_index = fi;
        x->linebuf[i].line = l->lines[i].line;
        x->linebuf[i].column = l->lines[i].column;
    }
    if (l->is_folded) {
        if (x->attr_folded < 0 && (x->attr_folded = attr_true(x, KEY_IS_FOLDED)) < 0) {
            return PG_DICT_NOMEM;
        }
        attrs[na++] = x->attr_folded;
    }
    x->loc_otlp[pos] = pg_dict_location(x->b, mi, l->address, x->linebuf, l->n_lines, attrs, na);
    return x->loc_otlp[pos];
}

static void scache_free(void *arg)
{
    struct scache *c = arg;

    if (!c->in_arena) {
        free(c->ents);
        free(c->slots);
    }
    memset(c, 0, sizeof(*c));
}

/* The first arrays (256 slots: an SDK push's stacks fit) come from the scratch arena, so a
 * small push makes no heap allocation for them; a larger profile's grown arrays are malloc'd,
 * so each growth frees the previous ones instead of leaving them in the arena. */
#define SCACHE_FIRST_SLOTS 256u

static bool scache_grow(struct xlate *x)
{
    struct scache *c = &x->sc;
    size_t nslots = c->slots ? (c->mask + 1) * 2 : SCACHE_FIRST_SLOTS, ncap = nslots / 2;
    size_t old_bytes = c->slots && !c->in_arena
                           ? (c->mask + 1) * sizeof(uint32_t) + c->cap * sizeof(*c->ents)
                           : 0;
    size_t new_bytes = nslots * sizeof(uint32_t) + ncap * sizeof(*c->ents);
    size_t cap = pg_arena_cap(x->scratch);
    uint32_t *ns;
    struct scache_ent *ne;

    if (cap != 0 && new_bytes > cap) {
        return false;
    }
    if (c->slots == NULL) {
        ns = pg_arena_calloc(x->scratch, nslots, sizeof(uint32_t));
        ne = pg_arena_alloc(x->scratch, ncap * sizeof(*ne));
        if (ns == NULL || ne == NULL) {
            return false;
        }
        c->slots = ns;
        c->mask = nslots - 1;
        c->ents = ne;
        c->cap = ncap;
        c->in_arena = true; /* counted in the arena's footprint, not in bytes/peak */
        return true;
    }
    if ((ns = calloc(nslots, sizeof(uint32_t))) == NULL) {
        return false;
    }
    ne = c->in_arena ? malloc(ncap * sizeof(*ne)) : realloc(c->ents, ncap * sizeof(*ne));
    if (ne == NULL) {
        free(ns);
        return false;
    }
    if (c->in_arena) {
        memcpy(ne, c->ents, c->n * sizeof(*ne));
    }
    for (size_t i = 0; i < c->n; i++) {
        size_t pos = ne[i].h & (nslots - 1);
        while (ns[pos] != 0) {
            pos = (pos + 1) & (nslots - 1);
        }
        ns[pos] = (uint32_t)i + 1;
    }
    if (!c->in_arena) {
        free(c->slots);
    }
    c->in_arena = false;
    c->slots = ns;
    c->mask = nslots - 1;
    c->ents = ne;
    c->cap = ncap;
    /* old and new slot arrays coexist for a moment */
    c->bytes = new_bytes;
    if (old_bytes + new_bytes > c->peak) {
        c->peak = old_bytes + new_bytes;
    }
    return true;
}

/* Stacks of up to 16 one-byte ids (most SDK stacks) hash and compare with at most two
 * overlapping loads, inline; longer ones go through the dictionary's hash. */
static inline uint32_t stack_bytes_hash(const uint8_t *p, size_t n)
{
    uint64_t a, b;

    if (n > 16) {
        return (uint32_t)pg_dict_hash_bytes(p, n, 41);
    }
    if (n >= 8) {
        memcpy(&a, p, 8);
        memcpy(&b, p + n - 8, 8);
    } else if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        a = lo;
        b = hi;
    } else {
        a = n > 0 ? (uint64_t)p[0] | (uint64_t)p[n / 2] << 8 | (uint64_t)p[n - 1] << 16 : 0;
        b = 0;
    }
    a = (a ^ (uint64_t)n) * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full;
    return (uint32_t)(a ^ a >> 32);
}

static inline bool bytes_eq(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint64_t a0, a1, b0, b1;

    if (n < 8) {
        unsigned d = 0;
        for (size_t i = 0; i < n; i++) {
            d |= (unsigned)(a[i] ^ b[i]);
        }
        return d == 0;
    }
    if (n > 16) {
        return memcmp(a, b, n) == 0;
    }
    memcpy(&a0, a, 8);
    memcpy(&b0, b, 8);
    memcpy(&a1, a + n - 8, 8);
    memcpy(&b1, b + n - 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/* Stack index for the sample's locations, from the cache when the packed bytes were seen. */
static enum pg_err sample_stack(struct xlate *x, struct pg_pprof_sample_iter *it, size_t si,
                                int32_t *out)
{
    const struct pg_pprof_sample *s = &it->s;
    struct scache *c = &x->sc;
    const uint8_t *raw = s->loc_packed;
    size_t raw_len = s->loc_packed_len, pos = 0;
    uint32_t h = 0;
    bool cache = raw != NULL && raw_len <= UINT32_MAX;
    enum pg_err err;

    if (cache) {
        if (c->last != NULL && c->last_len == raw_len && bytes_eq(c->last, raw, raw_len)) {
            *out = c->last_stack;
            return PG_ERR_OK;
        }
        if (c->n == c->cap && !scache_grow(x)) {
            return nomem(x, "stacks");
        }
        h = stack_bytes_hash(raw, raw_len);
        for (pos = h & c->mask; c->slots[pos] != 0; pos = (pos + 1) & c->mask) {
            const struct scache_ent *e = &c->ents[c->slots[pos] - 1];
            if (e->h == h && e->len == raw_len && bytes_eq(e->p, raw, raw_len)) {
                c->last = raw;
                c->last_len = raw_len;
                *out = c->last_stack = e->stack;
                return PG_ERR_OK;
            }
        }
    }
    if ((err = pg_pprof_sample_locations(&x->p, it, x->st)) != PG_ERR_OK) {
        return err;
    }
    for (size_t j = 0; j < s->n_locations; j++) {
        uint32_t lp = pg_pprof_location_pos(&x->p, s->location_ids[j]);
        int32_t li;
        if (lp == PG_PPROF_NONE) {
            return pg_status_set(x->st, PG_ERR_MALFORMED,
                                 "pprof: sample #%zu references missing location id %llu", si,
                                 (unsigned long long)s->location_ids[j]);
        }
        li = x->loc_otlp[lp];
        if (li < 0 && (li = location_index(x, lp)) < 0) {
            return nomem(x, "locations");
        }
        x->stackbuf[j] = li;
    }
    if ((*out = pg_dict_stack(x->b, x->stackbuf, s->n_locations)) < 0) {
        return nomem(x, "stacks");
    }
    if (cache) {
        c->ents[c->n] = (struct scache_ent){raw, (uint32_t)raw_len, h, *out};
        c->slots[pos] = (uint32_t)++c->n;
        c->last = raw;
        c->last_len = raw_len;
        c->last_stack = *out;
    }
    return PG_ERR_OK;
}

/* ---- labels -------------------------------------------------------------- */

static enum key_kind key_kind(struct xlate *x, int64_t key)
{
    uint8_t k = x->keykind[key];

    if (k == KK_UNKNOWN) {
        const struct pg_pprof_str *s = &x->p.strings[key];
        k = KK_OTHER;
        if (s->len == x->trace_len && memcmp(s->p, x->opts->trace_id_label, s->len) == 0) {
            k = KK_TRACE;
        } else if (s->len == x->span_len && memcmp(s->p, x->opts->span_id_label, s->len) == 0) {
            k = KK_SPAN;
        }
        x->keykind[key] = k;
    }
    return (enum key_kind)k;
}

static inline uint64_t acache_hash(int64_t key, int64_t val, int64_t unit, int32_t is_num)
{
    /* string indexes are small: two multiply-xor rounds mix them enough */
    uint64_t h = ((uint64_t)key << 32 ^ (uint64_t)val) * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)unit << 1 | (uint32_t)is_num) * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

static bool acache_grow(struct xlate *x)
{
    struct acache *c = &x->ac;
    size_t nslots = c->slots ? (c->mask + 1) * 2 : 64; /* small first: doubles */
    uint32_t *ns = pg_arena_calloc(x->scratch, nslots, sizeof(uint32_t));
    struct acache_ent *ne;

    if (ns == NULL || nslots / 2 > UINT32_MAX) {
        return false;
    }
    ne = pg_arena_realloc(x->scratch, c->ents, c->cap * sizeof(*ne), nslots / 2 * sizeof(*ne));
    if (ne == NULL) {
        return false;
    }
    for (size_t i = 0; i < c->n; i++) {
        size_t pos = acache_hash(ne[i].key, ne[i].val, ne[i].unit, ne[i].is_num) & (nslots - 1);
        while (ns[pos] != 0) {
            pos = (pos + 1) & (nslots - 1);
        }
        ns[pos] = (uint32_t)i + 1;
    }
    c->slots = ns;
    c->mask = nslots - 1;
    c->ents = ne;
    c->cap = nslots / 2;
    return true;
}

/* label_attr's miss: interns the attribute and records it in slot @pos. Out of line so
 * the hit path stays small enough to inline. @key < 0: the label's key is interned here. */
__attribute__((noinline)) static int32_t label_attr_new(struct xlate *x,
                                                        const struct pg_pprof_label *l,
                                                        int32_t key, size_t pos)
{
    struct acache *c = &x->ac;
    int32_t is_num = l->str == 0;
    int64_t val = is_num ? l->num : l->str;
    int64_t unit = is_num ? l->num_unit : 0;
    struct pg_otlp_anyvalue v = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
    int32_t u = 0, a;

    if (key < 0 && (key = pstr(x, l->key)) < 0) {
        return key;
    }
    if (is_num) {
        v.value_case = PG_OTLP_ANYVALUE_INT;
        v.int_value = l->num;
        if (unit != 0 && (u = pstr(x, unit)) < 0) {
            return u;
        }
        a = pg_dict_attr(x->b, key, &v, u);
    } else {
        a = pg_dict_attr_str(x->b, key, x->p.strings[val].p, x->p.strings[val].len, 0);
    }
    if (a < 0) {
        return a;
    }
    c->ents[c->n] = (struct acache_ent){l->key, val, unit, is_num, a, NULL};
    c->slots[pos] = (uint32_t)++c->n;
    return a;
}

/* The acache entry of a single-valued label, added (its attribute interned) on a miss;
 * NULL when out of memory. @key is the label's OTLP key strindex, or -1 when not interned
 * yet (done on a miss only: a hit needs the pprof indexes alone). */
__attribute__((always_inline)) static inline struct acache_ent *
label_ent(struct xlate *x, const struct pg_pprof_label *l, int32_t key)
{
    struct acache *c = &x->ac;
    int32_t is_num = l->str == 0;
    int64_t val = is_num ? l->num : l->str;
    int64_t unit = is_num ? l->num_unit : 0; /* string labels carry no unit */
    uint64_t h = acache_hash(l->key, val, unit, is_num);
    size_t pos;

    if (c->n == c->cap && !acache_grow(x)) {
        return NULL;
    }
    for (pos = h & c->mask; c->slots[pos] != 0; pos = (pos + 1) & c->mask) {
        struct acache_ent *e = &c->ents[c->slots[pos] - 1];
        if (e->key == l->key && e->val == val && e->unit == unit && e->is_num == is_num) {
            return e;
        }
    }
    return label_attr_new(x, l, key, pos) < 0 ? NULL : &c->ents[c->n - 1];
}

/* Attribute for one single-valued label (@key as for label_ent). */
static inline int32_t label_attr(struct xlate *x, const struct pg_pprof_label *l, int32_t key)
{
    struct acache_ent *e = label_ent(x, l, key);

    return e != NULL ? e->attr : PG_DICT_NOMEM;
}

/* One array attribute for a key that appears several times in a sample (pprof allows it;
 * the collector rejects the whole profile). Values keep label order; the unit is kept when
 * every numeric value has the same one. */
static int32_t multi_attr(struct xlate *x, const struct pg_pprof_label *labels,
                          const struct label_group *g)
{
    struct pg_otlp_anyvalue v = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
    struct pg_otlp_array arr = OPENTELEMETRY__PROTO__COMMON__V1__ARRAY_VALUE__INIT;
    struct pg_otlp_anyvalue *vals = pg_arena_alloc(x->scratch, g->count * sizeof(*vals));
    struct pg_otlp_anyvalue **ptrs = pg_arena_alloc(x->scratch, g->count * sizeof(*ptrs));
    int64_t unit = -1;
    bool unit_mixed = false;
    int32_t u = 0;
    uint32_t j = g->first;

    if (vals == NULL || ptrs == NULL) {
        return PG_DICT_NOMEM;
    }
    for (uint32_t n = 0; n < g->count; n++, j = x->label_next[j]) {
        const struct pg_pprof_label *l = &labels[j];
        opentelemetry__proto__common__v1__any_value__init(&vals[n]);
        if (l->str != 0) {
            const char *s = pg_dict_tmp_cstr(x->b, x->p.strings[l->str].p,
                                             x->p.strings[l->str].len);
            vals[n].value_case = PG_OTLP_ANYVALUE_STR;
            vals[n].string_value = s != NULL ? pg_arena_strdup(x->scratch, s) : NULL;
            if (vals[n].string_value == NULL) {
                return PG_DICT_NOMEM;
            }
        } else {
            vals[n].value_case = PG_OTLP_ANYVALUE_INT;
            vals[n].int_value = l->num;
            if (unit < 0) {
                unit = l->num_unit;
            } else if (unit != l->num_unit) {
                /* compare contents (duplicate pprof strings) without interning: a unit that
                 * ends up unused must not leave an orphan string behind */
                const struct pg_pprof_str *u1 = &x->p.strings[unit];
                const struct pg_pprof_str *u2 = &x->p.strings[l->num_unit];
                unit_mixed |= u1->len != u2->len || memcmp(u1->p, u2->p, u1->len) != 0;
            }
        }
        ptrs[n] = &vals[n];
    }
    if (unit > 0 && !unit_mixed && (u = pstr(x, unit)) < 0) {
        return u;
    }
    arr.n_values = g->count;
    arr.values = ptrs;
    v.value_case = PG_OTLP_ANYVALUE_ARRAY;
    v.array_value = &arr;
    return pg_dict_attr(x->b, g->key, &v, unit_mixed ? 0 : u);
}

/* The interned list holding just attribute @a. Most samples carry one
 * attribute besides their link (a route, a thread name), so a direct-indexed
 * memo stands in front of hashing the list every time. NULL on OOM. */
static inline const int32_t *one_attr_list(struct xlate *x, int32_t a)
{
    if ((size_t)a >= x->one_cap) {
        size_t old = x->one_cap;

        if (!PG_VEC_RESERVE(x->scratch, x->one_list, x->one_cap, (size_t)a + 1, 64, 0)) {
            return NULL;
        }
        memset(x->one_list + old, 0, (x->one_cap - old) * sizeof(*x->one_list));
    }
    if (x->one_list[a] == NULL) {
        x->one_list[a] = pg_dict_index_list(x->b, &a, 1);
    }
    return x->one_list[a];
}

/* Turns a sample's labels into a link index and an attribute list. */
static enum pg_err sample_labels(struct xlate *x, const struct pg_pprof_sample *s, size_t si,
                                 int32_t *link, const int32_t **attrs, size_t *n_attrs)
{
    const struct pg_pprof_label *lab = s->labels;
    size_t ntr = 0, nsp = 0, tr = 0, sp = 0, ng = 0, nkept = 0, other = 0;
    bool have_link = false;

    (void)si;
    *link = 0;
    *attrs = NULL;
    *n_attrs = 0;
    if (s->n_labels == 0) {
        return PG_ERR_OK;
    }
    /* SDKs write the same label keys in the same order on every sample (trace_id, span_id,
     * a route): when they are the last classified sample's and every value is a non-empty
     * string, that classification holds. */
    if (s->n_labels == x->lay.n) {
        bool same = true;
        for (size_t j = 0; j < s->n_labels; j++) {
            same &= lab[j].key == x->lay.key[j] && lab[j].str != 0;
        }
        if (same) {
            ntr = x->lay.ntr;
            nsp = x->lay.nsp;
            tr = x->lay.tr;
            sp = x->lay.sp;
            other = x->lay.other;
            nkept = s->n_labels;
            goto classified;
        }
    }
    for (size_t j = 0; j < s->n_labels; j++) {
        enum key_kind k;
        if (lab[j].str == 0 && lab[j].num == 0 && lab[j].num_unit == 0) {
            continue; /* google/pprof drops such labels when decoding */
        }
        nkept++;
        k = key_kind(x, lab[j].key);
        if (k == KK_TRACE) {
            ntr++;
            tr = j;
        } else if (k == KK_SPAN) {
            nsp++;
            sp = j;
        } else {
            other = j;
        }
    }
    x->lay.n = 0;
    if (s->n_labels <= LAYOUT_MAX && nkept == s->n_labels) {
        bool strs = true;
        for (size_t j = 0; j < s->n_labels; j++) {
            x->lay.key[j] = lab[j].key;
            strs &= lab[j].str != 0;
        }
        if (strs) {
            x->lay.ntr = ntr;
            x->lay.nsp = nsp;
            x->lay.tr = tr;
            x->lay.sp = sp;
            x->lay.other = other;
            x->lay.n = s->n_labels;
        }
    }
classified:
    if (ntr == 1 && nsp == 1 && lab[tr].str != 0 && lab[sp].str != 0) {
        /* An index beyond 32 bits (only with limits raised far past the defaults)
         * bypasses the memo through a throw-away entry. */
        uint32_t ts = (uint32_t)lab[tr].str, ss = (uint32_t)lab[sp].str;
        bool fits = (uint64_t)lab[tr].str <= UINT32_MAX && (uint64_t)lab[sp].str <= UINT32_MAX;
        struct lcache_ent tmp = {0, 0, -1};
        struct lcache_ent *e =
            fits ? &x->lc[(ts * 0x9e3779b1u ^ ss * 0x85ebca77u) >> (32 - x->lc_bits)] : &tmp;

        if (!fits || e->tr != ts || e->sp != ss) {
            uint8_t ids[24];
            int32_t l = -1;

            const struct pg_pprof_str *ts_s = &x->p.strings[lab[tr].str];
            const struct pg_pprof_str *ss_s = &x->p.strings[lab[sp].str];

            if (pg_hex_link_ids(ts_s->p, ts_s->len, ss_s->p, ss_s->len, ids) &&
                (l = pg_dict_link(x->b, ids, ids + 16)) < 0) {
                return nomem(x, "links");
            }
            *e = (struct lcache_ent){ts, ss, l};
        }
        if (e->link >= 0) {
            *link = e->link;
            have_link = true;
        }
    }
    if (nkept == (have_link ? 2u : 0u)) {
        return PG_ERR_OK; /* no attributes */
    }
    if (nkept == (have_link ? 3u : 1u)) {
        /* One attribute label (a route, a thread name; with a link, the usual SDK sample):
         * nothing to group. Without a link the one kept label may be a trace or span
         * label that did not make a link: find it. */
        struct acache_ent *e;
        const struct pg_pprof_label *o;
        if (!have_link) {
            for (other = 0; lab[other].str == 0 && lab[other].num == 0 &&
                            lab[other].num_unit == 0;
                 other++) {
            }
        }
        o = &lab[other];
        if ((e = label_ent(x, o, -1)) == NULL ||
            (e->one == NULL && (e->one = one_attr_list(x, e->attr)) == NULL)) {
            return nomem(x, "attributes");
        }
        *attrs = e->one;
        *n_attrs = 1;
        return PG_ERR_OK;
    }
    if (++x->stamp == 0) {
        memset(x->seen_stamp, 0, x->seen_n * sizeof(uint32_t));
        x->stamp = 1;
    }
    for (size_t j = 0; j < s->n_labels; j++) {
        int32_t key;
        if ((lab[j].str == 0 && lab[j].num == 0 && lab[j].num_unit == 0) ||
            (have_link && (j == tr || j == sp))) {
            continue;
        }
        if ((key = pstr(x, lab[j].key)) < 0) {
            return nomem(x, "attributes");
        }
        if ((size_t)key >= x->seen_n) {
            return pg_status_set(x->st, PG_ERR_INTERNAL, "pprof translation: key index %d "
                                 "beyond the expected string count", key);
        }
        if (x->seen_stamp[key] == x->stamp) {
            struct label_group *g = &x->groups[x->seen_group[key]];
            x->label_next[g->last] = (uint32_t)j;
            g->last = (uint32_t)j;
            g->count++;
        } else {
            x->seen_stamp[key] = x->stamp;
            x->seen_group[key] = (uint32_t)ng;
            x->groups[ng++] = (struct label_group){key, (uint32_t)j, (uint32_t)j, 1};
        }
    }
    for (size_t g = 0; g < ng; g++) {
        const struct label_group *lg = &x->groups[g];
        int32_t a = lg->count == 1 ? label_attr(x, &lab[lg->first], lg->key)
                                   : multi_attr(x, lab, lg);
        if (a < 0) {
            return nomem(x, "attributes");
        }
        x->attrbuf[g] = a;
    }
    if (ng == 1) {
        *attrs = one_attr_list(x, x->attrbuf[0]);
    } else if (ng > 1) {
        *attrs = pg_dict_index_list(x->b, x->attrbuf, ng);
    }
    if (ng > 0 && *attrs == NULL) {
        return nomem(x, "attributes");
    }
    *n_attrs = ng;
    return PG_ERR_OK;
}

/* ---- building the request ------------------------------------------------ */

static struct pg_otlp_valuetype *value_type(struct xlate *x, const struct pg_pprof_vt *vt)
{
    struct pg_otlp_valuetype *v = pg_arena_alloc(x->out, sizeof(*v));

    if (v == NULL) {
        return NULL;
    }
    opentelemetry__proto__profiles__v1development__value_type__init(v);
    if ((v->type_strindex = pstr(x, vt->type)) < 0 || (v->unit_strindex = pstr(x, vt->unit)) < 0) {
        return NULL;
    }
    return v;
}

static enum pg_err profile_attrs(struct xlate *x, const int32_t **out, size_t *n_out)
{
    int32_t attrs[4];
    size_t n = 0;

    /* Emitted even when empty, like the collector (visible as `key=` in debug output). */
    if ((attrs[n++] = attr_str(x, KEY_DROP_FRAMES, x->p.drop_frames)) < 0 ||
        (attrs[n++] = attr_str(x, KEY_KEEP_FRAMES, x->p.keep_frames)) < 0) {
        return nomem(x, "profile attributes");
    }
    if (x->p.n_comments > 0) {
        struct pg_otlp_anyvalue v = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
        struct pg_otlp_array arr = OPENTELEMETRY__PROTO__COMMON__V1__ARRAY_VALUE__INIT;
        struct pg_otlp_anyvalue *vals =
            pg_arena_calloc(x->scratch, x->p.n_comments, sizeof(*vals));
        struct pg_otlp_anyvalue **ptrs =
            pg_arena_calloc(x->scratch, x->p.n_comments, sizeof(*ptrs));
        int32_t k = cstr(x, KEY_COMMENT);
        if (vals == NULL || ptrs == NULL || k < 0) {
            return nomem(x, "profile attributes");
        }
        for (size_t i = 0; i < x->p.n_comments; i++) {
            const struct pg_pprof_str *s = &x->p.strings[x->p.comments[i]];
            const char *c = pg_dict_tmp_cstr(x->b, s->p, s->len);
            opentelemetry__proto__common__v1__any_value__init(&vals[i]);
            vals[i].value_case = PG_OTLP_ANYVALUE_STR;
            vals[i].string_value = c != NULL ? pg_arena_strdup(x->scratch, c) : NULL;
            if (vals[i].string_value == NULL) {
                return nomem(x, "profile attributes");
            }
            ptrs[i] = &vals[i];
        }
        arr.n_values = x->p.n_comments;
        arr.values = ptrs;
        v.value_case = PG_OTLP_ANYVALUE_ARRAY;
        v.array_value = &arr;
        if ((attrs[n++] = pg_dict_attr(x->b, k, &v, 0)) < 0) {
            return nomem(x, "profile attributes");
        }
    }
    if ((attrs[n++] = attr_str(x, KEY_DOC_URL, x->p.doc_url)) < 0) {
        return nomem(x, "profile attributes");
    }
    *out = pg_dict_index_list(x->b, attrs, n);
    *n_out = n;
    return *out != NULL ? PG_ERR_OK : nomem(x, "profile attributes");
}

static struct pg_otlp_kv *scope_order_attr(struct xlate *x, const uint32_t *order, size_t n)
{
    struct pg_otlp_kv *kv = pg_otlp_kv_str(x->out, KEY_TYPE_ORDER, "");
    struct pg_otlp_array *arr = pg_arena_alloc(x->out, sizeof(*arr));
    struct pg_otlp_anyvalue *vals = pg_arena_alloc(x->out, n * sizeof(*vals));
    struct pg_otlp_anyvalue **ptrs = pg_arena_alloc(x->out, n * sizeof(*ptrs));

    if (kv == NULL || arr == NULL || vals == NULL || ptrs == NULL) {
        return NULL;
    }
    opentelemetry__proto__common__v1__array_value__init(arr);
    for (size_t i = 0; i < n; i++) {
        opentelemetry__proto__common__v1__any_value__init(&vals[i]);
        vals[i].value_case = PG_OTLP_ANYVALUE_INT;
        vals[i].int_value = order[i];
        ptrs[i] = &vals[i];
    }
    arr->n_values = n;
    arr->values = ptrs;
    kv->value->value_case = PG_OTLP_ANYVALUE_ARRAY;
    kv->value->array_value = arr;
    return kv;
}

/* Arena footprints only grow, so sampling at the end of each phase finds the maximum; the
 * dictionary's malloc'd tables count with their own peak (an upper bound). */
static void note_peak(struct xlate *x)
{
    size_t now = pg_arena_footprint(x->out) + (x->keep ? pg_arena_footprint(x->keep) : 0);

    if (x->scratch != NULL) {
        now += pg_arena_footprint(x->scratch) + (x->b != NULL ? pg_dict_heap_peak(x->b) : 0) +
               x->sc.peak;
    }
    if (x->input != NULL && *x->input != NULL) {
        now += pg_arena_footprint(*x->input);
    }

    if (now > x->peak) {
        x->peak = now;
    }
}

/* The caller's body (in *x->input) is not read again: give its memory back now. */
static void drop_input(struct xlate *x)
{
    if (x->input != NULL && *x->input != NULL) {
        pg_arena_destroy(*x->input);
        *x->input = NULL;
    }
}

/* Last step: everything that needed the pprof (strings, hash tables) is done and the
 * dictionary is final, so the scratch arena (inflated pprof included) goes first, then the
 * Sample structs are written from the compact records: one contiguous block for all
 * profiles, which share each sample's stack, link and attribute list. Out of line: inlined
 * in build() its loop ran short of registers and reloaded its bounds and template. */
__attribute__((noinline)) static enum pg_err
make_samples(struct xlate *x, struct pg_otlp_profile *prof, size_t nt, size_t ns,
             const struct srec *srecs, int64_t *values, const uint32_t *order)
{
    static const struct pg_otlp_sample tmpl =
        OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SAMPLE__INIT;
    struct pg_otlp_sample *recs, **ptrs;

    note_peak(x);
    x->scratch_bytes = pg_arena_footprint(x->scratch) + pg_dict_heap_peak(x->b) + x->sc.peak;
    pg_arena_destroy(x->scratch); /* the builder and its tables go with it */
    x->scratch = NULL;
    x->b = NULL;
    drop_input(x); /* a plain body was the pprof itself: dead now too */
    /* One block for structs and pointers: a lone pointer array of up to a chunk would open
     * a fresh 4 MiB arena chunk this late. Sizes are bounded by max_samples x types. */
    recs = pg_arena_alloc(x->out, ns * nt * (sizeof(*recs) + sizeof(*ptrs)));
    if (recs == NULL) {
        return nomem(x, "samples");
    }
    ptrs = (struct pg_otlp_sample **)(recs + ns * nt);
    for (size_t k = 0; k < nt; k++) {
        struct pg_otlp_sample *o = recs + k * ns;
        const int64_t *v = values + order[k];
        prof[k].samples = ptrs + k * ns;
        prof[k].n_samples = ns;
        for (size_t i = 0; i < ns; i++, o++, v += nt) {
            /* Field by field: a whole-struct copy of the template costs a
             * rep stos per sample. Every member is written. */
            o->base = tmpl.base;
            o->n_timestamps_unix_nano = 0;
            o->timestamps_unix_nano = NULL;
            o->stack_index = srecs[i].stack;
            o->attribute_indices = (int32_t *)srecs[i].attrs;
            o->n_attribute_indices = srecs[i].n_attrs;
            o->link_index = srecs[i].link;
            o->values = (int64_t *)v;
            o->n_values = 1;
            prof[k].samples[i] = o;
        }
    }
    note_peak(x);
    return PG_ERR_OK;
}

/* Random bytes from a per-thread pool refilled 4 KiB at a time: one
 * getrandom call per 256 single-profile requests instead of one per request. A larger
 * request than the pool goes to the kernel directly. */
static bool random_bytes(uint8_t *out, size_t n)
{
    static __thread uint8_t pool[4096];
    static __thread size_t left;

    if (n > sizeof(pool)) {
        return getrandom(out, n, 0) == (ssize_t)n;
    }
    if (left < n) {
        if (getrandom(pool, sizeof(pool), 0) != (ssize_t)sizeof(pool)) {
            return false;
        }
        left = sizeof(pool);
    }
    memcpy(out, pool + sizeof(pool) - left, n);
    memset(pool + sizeof(pool) - left, 0, n); /* each byte handed out once */
    left -= n;
    return true;
}

static enum pg_err build(struct xlate *x, const uint8_t *pprof_bytes, size_t pprof_len,
                         struct pg_otlp_request **out, struct pg_translate_stats *stats)
{
    struct pg_pprof *p = &x->p;
    const size_t nt = p->n_sample_types, ns = p->n_samples;
    struct pg_otlp_profile **profiles = NULL, *prof = NULL;
    struct pg_otlp_valuetype *period_type;
    struct srec *srecs = NULL;
    struct pg_pprof_sample_iter it;
    const int32_t *pattrs = NULL;
    size_t n_pattrs = 0;
    uint32_t *order = NULL;
    int64_t *values = NULL;
    uint8_t *ids = NULL;
    enum pg_err err;

    x->b = pg_dict_builder_new(x->out, x->scratch);
    x->str_otlp = pg_arena_alloc(x->scratch, p->n_strings * sizeof(int32_t));
    x->keykind = pg_arena_calloc(x->scratch, p->n_strings, 1);
    x->seen_n = p->n_strings + FIXED_KEYS;
    x->seen_stamp = pg_arena_calloc(x->scratch, x->seen_n, sizeof(uint32_t));
    /* As many entries as there can be pairs (at most one per sample, and two strings per
     * pair), up to the maximum: zeroing the full memo was most of its cost for a small
     * profile, whose few pairs fit a small one. */
    {
        size_t pairs = p->n_strings / 2 < ns ? p->n_strings / 2 : ns;
        for (x->lc_bits = 4; x->lc_bits < LCACHE_BITS && ((size_t)1 << x->lc_bits) < pairs;
             x->lc_bits++) {
        }
    }
    x->lc = pg_arena_calloc(x->scratch, (size_t)1 << x->lc_bits, sizeof(*x->lc));
    x->seen_group = pg_arena_alloc(x->scratch, x->seen_n * sizeof(uint32_t));
    x->map_otlp = pg_arena_alloc(x->scratch, (p->n_mappings + 1) * sizeof(int32_t));
    x->loc_otlp = pg_arena_alloc(x->scratch, (p->n_locations + 1) * sizeof(int32_t));
    x->fn_otlp = pg_arena_alloc(x->scratch, (p->n_functions + 1) * sizeof(int32_t));
    if (x->b == NULL || x->str_otlp == NULL || x->keykind == NULL || x->seen_stamp == NULL ||
        x->seen_group == NULL || x->map_otlp == NULL || x->loc_otlp == NULL || x->lc == NULL ||
        x->fn_otlp == NULL) {
        return nomem(x, "the dictionary");
    }
    memset(x->str_otlp, 0xff, p->n_strings * sizeof(int32_t));
    memset(x->loc_otlp, 0xff, p->n_locations * sizeof(int32_t));
    memset(x->fn_otlp, 0xff, p->n_functions * sizeof(int32_t));
    x->attr_folded = -1;
    x->trace_len = strlen(x->opts->trace_id_label);
    x->span_len = strlen(x->opts->span_id_label);

    if ((err = pg_pprof_sample_iter_init(x->scratch, p, &it, x->st)) != PG_ERR_OK) {
        return err;
    }
    it.lazy_locations = true;
    if (pg_arena_cleanup_add(x->scratch, scache_free, &x->sc) != 0) {
        return nomem(x, "the stack cache");
    }
    x->stackbuf = pg_arena_alloc(x->scratch, (it.cap_locations + 1) * sizeof(int32_t));
    x->attrbuf = pg_arena_alloc(x->scratch, (it.cap_labels + 1) * sizeof(int32_t));
    x->label_next = pg_arena_alloc(x->scratch, (it.cap_labels + 1) * sizeof(uint32_t));
    x->groups = pg_arena_alloc(x->scratch, (it.cap_labels + 1) * sizeof(*x->groups));
    if (x->stackbuf == NULL || x->attrbuf == NULL || x->label_next == NULL || x->groups == NULL) {
        return nomem(x, "the sample decoder");
    }

    if ((err = add_mappings(x)) != PG_ERR_OK) {
        return err;
    }

    /* pprof's default type is its last; OTLP viewers show profiles[0]: swap first and last. */
    if (nt > 0) {
        order = pg_arena_alloc(x->keep, nt * sizeof(*order)); /* used after scratch */
        profiles = pg_arena_alloc(x->out, nt * sizeof(*profiles));
        prof = pg_arena_alloc(x->out, nt * sizeof(*prof));
        values = pg_arena_alloc(x->out, (ns ? ns : 1) * nt * sizeof(int64_t));
        if (order == NULL || profiles == NULL || prof == NULL || values == NULL) {
            return nomem(x, "profiles");
        }
        for (size_t k = 0; k < nt; k++) {
            order[k] = (uint32_t)k;
        }
        order[0] = (uint32_t)(nt - 1);
        order[nt - 1] = 0;
        for (size_t k = 0; k < nt; k++) {
            opentelemetry__proto__profiles__v1development__profile__init(&prof[k]);
            profiles[k] = &prof[k];
        }
        if ((prof[0].sample_type = value_type(x, &p->sample_types[order[0]])) == NULL) {
            return nomem(x, "profiles");
        }
    }
    if ((period_type = value_type(x, &p->period_type)) == NULL) {
        return nomem(x, "profiles");
    }
    if (nt > 0 && ns > 0) {
        srecs = pg_arena_alloc(x->keep, ns * sizeof(*srecs));
        if (srecs == NULL) {
            return nomem(x, "samples");
        }
    }

    for (size_t i = 0; i < ns; i++) {
        int64_t *row = values + i * nt;
        const struct pg_pprof_sample *s = &it.s;
        const int32_t *attrs;
        size_t n_attrs;
        int32_t stack = 0, link = 0;
        bool done;

        if ((err = pg_pprof_next_sample(p, &it, row, &done, x->st)) != PG_ERR_OK) {
            return err;
        }
        if (done) {
            return pg_status_set(x->st, PG_ERR_INTERNAL, "pprof: sample count changed");
        }
        if ((err = sample_stack(x, &it, i, &stack)) != PG_ERR_OK) {
            return err;
        }
        if (s->labels_same && srecs != NULL && i > 0) {
            /* the previous sample's labels: its link and attributes */
            link = srecs[i - 1].link;
            attrs = srecs[i - 1].attrs;
            n_attrs = srecs[i - 1].n_attrs;
        } else if ((err = sample_labels(x, s, i, &link, &attrs, &n_attrs)) != PG_ERR_OK) {
            return err;
        }
        if (srecs != NULL) {
            srecs[i] = (struct srec){attrs, (uint32_t)n_attrs, stack, link};
        }
    }

    if (nt > 0) {
        if ((err = profile_attrs(x, &pattrs, &n_pattrs)) != PG_ERR_OK) {
            return err;
        }
        ids = pg_arena_alloc(x->out, 16 * nt);
        if (ids == NULL) {
            return nomem(x, "profiles");
        }
        /* Random ids: a failing getrandom leaves the id unset (allowed: "optional"). */
        if (!random_bytes(ids, 16 * nt)) {
            ids = NULL;
        }
    }
    for (size_t k = 0; k < nt; k++) {
        struct pg_otlp_profile *pr = &prof[k];
        if (k > 0 && (pr->sample_type = value_type(x, &p->sample_types[order[k]])) == NULL) {
            return nomem(x, "profiles");
        }
        pr->time_unix_nano = (uint64_t)p->time_nanos;
        pr->duration_nano = (uint64_t)p->duration_nanos;
        pr->period_type = period_type;
        pr->period = p->period;
        pr->attribute_indices = (int32_t *)pattrs;
        pr->n_attribute_indices = n_pattrs;
        if (ids != NULL) {
            ids[16 * k] |= 1; /* never the invalid all-zero id */
            pr->profile_id.data = ids + 16 * k;
            pr->profile_id.len = 16;
        }
    }
    if (nt > 0 && x->opts->include_original_payload) {
        /* Once, on profiles[0]: the uncompressed pprof (not N copies). */
        uint8_t *copy = pg_arena_memdup(x->out, pprof_bytes, pprof_len ? pprof_len : 1);
        char *fmt = pg_arena_strdup(x->out, "pprof");
        if (copy == NULL || fmt == NULL) {
            return nomem(x, "the original payload");
        }
        prof[0].original_payload_format = fmt;
        prof[0].original_payload.data = copy;
        prof[0].original_payload.len = pprof_len;
    }

    {
        struct pg_otlp_request *req = pg_arena_alloc(x->out, sizeof(*req));
        struct pg_otlp_resprof *rp = pg_arena_alloc(x->out, sizeof(*rp));
        struct pg_otlp_resprof **rps = pg_arena_alloc(x->out, sizeof(*rps));
        struct pg_otlp_resource *res = pg_arena_alloc(x->out, sizeof(*res));
        struct pg_otlp_scopeprof *sp = pg_arena_alloc(x->out, sizeof(*sp));
        struct pg_otlp_scopeprof **sps = pg_arena_alloc(x->out, sizeof(*sps));
        struct pg_otlp_scope *scope = pg_arena_alloc(x->out, sizeof(*scope));
        struct pg_otlp_kv **sattrs = pg_arena_alloc(x->out, 2 * sizeof(*sattrs));
        char *schema = pg_arena_strdup(x->out, PG_SEMCONV_SCHEMA_URL);

        if (req == NULL || rp == NULL || rps == NULL || res == NULL || sp == NULL ||
            sps == NULL || scope == NULL || sattrs == NULL || schema == NULL) {
            return nomem(x, "the request");
        }
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(req);
        opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
        opentelemetry__proto__resource__v1__resource__init(res);
        opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
        opentelemetry__proto__common__v1__instrumentation_scope__init(scope);
        scope->name = pg_arena_strdup(x->out, x->opts->scope_name ? x->opts->scope_name : "");
        scope->version =
            pg_arena_strdup(x->out, x->opts->scope_version ? x->opts->scope_version : "");
        if (scope->name == NULL || scope->version == NULL) {
            return nomem(x, "the request");
        }
        if (nt > 0) {
            const struct pg_pprof_str *def =
                &p->strings[p->default_sample_type != 0 ? p->default_sample_type
                                                        : p->sample_types[nt - 1].type];
            const char *defc = pg_dict_tmp_cstr(x->b, def->p, def->len);
            sattrs[0] = scope_order_attr(x, order, nt);
            sattrs[1] = defc != NULL ? pg_otlp_kv_str(x->out, KEY_DEFAULT_TYPE, defc) : NULL;
            if (sattrs[0] == NULL || sattrs[1] == NULL) {
                return nomem(x, "scope attributes");
            }
            scope->attributes = sattrs;
            scope->n_attributes = 2;
        }
        sp->scope = scope;
        sp->profiles = profiles;
        sp->n_profiles = nt;
        sp->schema_url = schema;
        sps[0] = sp;
        rp->resource = res;
        rp->scope_profiles = sps;
        rp->n_scope_profiles = 1;
        rp->schema_url = schema;
        rps[0] = rp;
        req->resource_profiles = rps;
        req->n_resource_profiles = 1;
        if ((req->dictionary = pg_dict_finish(x->b)) == NULL) {
            return nomem(x, "the dictionary");
        }
        *out = req;
        if (stats != NULL) {
            stats->samples = ns;
            stats->sample_records = ns * nt;
            stats->profiles = nt;
            stats->links = req->dictionary->n_link_table - 1;
        }
    }
    if (srecs != NULL) {
        return make_samples(x, prof, nt, ns, srecs, values, order);
    }
    return PG_ERR_OK;
}

enum pg_err pg_pprof_translate(struct pg_arena *arena, const uint8_t *body, size_t len,
                               const struct pg_translate_opts *opts,
                               struct pg_otlp_request **out, struct pg_translate_stats *stats,
                               struct pg_status *st)
{
    return pg_pprof_translate_owned(arena, NULL, body, len, opts, out, stats, st);
}

enum pg_err pg_pprof_translate_owned(struct pg_arena *arena, struct pg_arena **body_arena,
                                     const uint8_t *body, size_t len,
                                     const struct pg_translate_opts *opts,
                                     struct pg_otlp_request **out,
                                     struct pg_translate_stats *stats, struct pg_status *st)
{
    struct pg_translate_opts defaults;
    struct xlate x;
    const uint8_t *data = body;
    size_t dlen = len, layers = 0, inflated = 0;
    enum pg_err err;

    *out = NULL;
    if (stats != NULL) {
        memset(stats, 0, sizeof(*stats));
    }
    if (opts == NULL) {
        pg_translate_opts_default(&defaults);
        opts = &defaults;
    }
    memset(&x, 0, sizeof(x));
    x.out = arena;
    x.input = body_arena;
    x.opts = opts;
    x.st = st;
    /* Temporaries die with this call; the request arena keeps only the result. */
    x.scratch = pg_arena_create(pg_arena_cap(arena));
    x.keep = pg_arena_create(pg_arena_cap(arena));
    if (x.scratch == NULL || x.keep == NULL) {
        pg_arena_destroy(x.scratch);
        pg_arena_destroy(x.keep);
        return pg_status_set(st, PG_ERR_NOMEM, "pprof translation: out of memory");
    }
    if (opts->trace_id_label == NULL || opts->span_id_label == NULL) {
        err = pg_status_set(st, PG_ERR_CONFIG, "pprof translation: trace/span label keys unset");
        goto done;
    }
    while (pg_is_gzip(data, dlen)) {
        uint8_t *inner;
        size_t inner_len;
        if (layers >= opts->limits.max_gzip_layers) {
            err = pg_status_set(st, PG_ERR_LIMIT,
                                "pprof: more than %zu nested gzip layers (limit "
                                "max_gzip_layers)",
                                opts->limits.max_gzip_layers);
            goto done;
        }
        err = pg_inflate(x.scratch, data, dlen, PG_INFLATE_GZIP, opts->limits.max_inflated_bytes,
                         &inner, &inner_len, st);
        if (err != PG_ERR_OK) {
            goto done;
        }
        data = inner;
        dlen = inner_len;
        inflated += inner_len;
        layers++;
        note_peak(&x);
        drop_input(&x); /* the outer layer is inflated: only x.scratch is read from now */
    }
    err = pg_pprof_decode(x.scratch, data, dlen, &opts->limits, &x.p, st);
    if (err == PG_ERR_OK) {
        err = build(&x, data, dlen, out, stats);
    }
    if (err != PG_ERR_OK) {
        *out = NULL;
    }
done:
    if (stats != NULL) {
        stats->inflated_bytes = inflated;
        stats->raw_pprof_bytes = dlen;
        note_peak(&x);
        stats->scratch_bytes = x.scratch == NULL ? x.scratch_bytes
                               : pg_arena_footprint(x.scratch) + x.sc.peak +
                                     (x.b != NULL ? pg_dict_heap_peak(x.b) : 0);
        stats->peak_bytes = x.peak;
    }
    pg_arena_destroy(x.scratch);
    pg_arena_destroy(x.keep);
    drop_input(&x);
    return err;
}
