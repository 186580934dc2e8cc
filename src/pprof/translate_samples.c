/* SPDX-License-Identifier: Apache-2.0
 * The sample pass: each pprof sample is decoded by the iterator and at once
 * translated into a compact record; no decoded sample is kept. Its stack is
 * interned through a cache keyed on the raw packed location bytes; its labels
 * become a link (trace_id / span_id pairs, memoised per pair of pprof
 * strings) and attributes (cached per pprof key/value/unit, repeated keys
 * grouped into one array attribute, google/pprof's empty labels dropped),
 * shared as interned index lists. One file so the per-sample path inlines. When the inflated pprof is a pool block,
 * the sample bytes already translated are given back to core/bufpool as the
 * pass goes, so the links, attributes and tables it makes reuse those pages
 * instead of adding to the request's peak. */
#include "pprof/translate_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bufpool.h"
#include "core/hex.h"
#include "core/vec.h"
#include "otlp/dict_hash.h"
#ifdef PG_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* The run's bytes are given back in steps of this much (a few pool slots per push). */
#define RELEASE_STEP ((size_t)512 << 10)
/* Kept behind the cursor: the sample just translated (at most 2 + 127 bytes in the run). */
#define RELEASE_MARGIN ((size_t)512)

/* ---- labels -------------------------------------------------------------- */
static enum key_kind key_kind(struct xlate *x, int64_t key)
{
    uint8_t k = x->keykind[key];

    if (k == KK_UNKNOWN) {
        const struct pg_pprof_str *s = &x->p.strings[key];
        k = KK_OTHER;
        if (s->len == x->trace_len && memcmp(pg_pprof_str_p(&x->p, s), x->opts->trace_id_label, s->len) == 0) {
            k = KK_TRACE;
        } else if (s->len == x->span_len && memcmp(pg_pprof_str_p(&x->p, s), x->opts->span_id_label, s->len) == 0) {
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

    if (key < 0 && (key = pg_xlate_pstr(x, l->key)) < 0) {
        return key;
    }
    if (is_num) {
        v.value_case = PG_OTLP_ANYVALUE_INT;
        v.int_value = l->num;
        if (unit != 0 && (u = pg_xlate_pstr(x, unit)) < 0) {
            return u;
        }
        a = pg_dict_attr(x->b, key, &v, u);
    } else {
        a = pg_dict_attr_str(x->b, key, pg_pprof_str_p(&x->p, &x->p.strings[val]), x->p.strings[val].len, 0);
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
            const char *s = pg_dict_tmp_cstr(x->b, pg_pprof_str_p(&x->p, &x->p.strings[l->str]),
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
                unit_mixed |= u1->len != u2->len || memcmp(pg_pprof_str_p(&x->p, u1), pg_pprof_str_p(&x->p, u2), u1->len) != 0;
            }
        }
        ptrs[n] = &vals[n];
    }
    if (unit > 0 && !unit_mixed && (u = pg_xlate_pstr(x, unit)) < 0) {
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

/* Makes the key-indexed group arrays reach key @key (stamps kept, new ones 0). */
__attribute__((noinline)) static bool seen_grow(struct xlate *x, size_t key)
{
    size_t n = x->seen_n;
    uint32_t *st, *gr;

    while (n <= key) {
        n *= 2;
    }
    st = pg_arena_calloc(x->scratch, n, sizeof(uint32_t));
    gr = pg_arena_alloc(x->scratch, n * sizeof(uint32_t));
    if (st == NULL || gr == NULL) {
        return false;
    }
    memcpy(st, x->seen_stamp, x->seen_n * sizeof(uint32_t));
    memcpy(gr, x->seen_group, x->seen_n * sizeof(uint32_t));
    x->seen_stamp = st;
    x->seen_group = gr;
    x->seen_n = n;
    return true;
}

/* Turns a sample's labels into a link index and an attribute list. */
static enum pg_err sample_labels(struct xlate *x, const struct pg_pprof_sample *s, int32_t *link,
                                 const int32_t **attrs, size_t *n_attrs)
{
    const struct pg_pprof_label *lab = s->labels;
    size_t ntr = 0, nsp = 0, tr = 0, sp = 0, ng = 0, nkept = 0, other = 0;
    bool have_link = false;

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

            if (pg_hex_link_ids(pg_pprof_str_p(&x->p, ts_s), ts_s->len, pg_pprof_str_p(&x->p, ss_s), ss_s->len, ids) &&
                (l = pg_dict_link(x->b, ids, ids + 16)) < 0) {
                return pg_xlate_nomem(x, "links");
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
            return pg_xlate_nomem(x, "attributes");
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
        if ((key = pg_xlate_pstr(x, lab[j].key)) < 0) {
            return pg_xlate_nomem(x, "attributes");
        }
        if ((size_t)key >= x->seen_n && !seen_grow(x, (size_t)key)) {
            return pg_xlate_nomem(x, "attributes");
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
            return pg_xlate_nomem(x, "attributes");
        }
        x->attrbuf[g] = a;
    }
    if (ng == 1) {
        *attrs = one_attr_list(x, x->attrbuf[0]);
    } else if (ng > 1) {
        *attrs = pg_dict_index_list(x->b, x->attrbuf, ng);
    }
    if (ng > 0 && *attrs == NULL) {
        return pg_xlate_nomem(x, "attributes");
    }
    *n_attrs = ng;
    return PG_ERR_OK;
}


/* ---- stacks -------------------------------------------------------------- */

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
            return pg_xlate_nomem(x, "stacks");
        }
        h = stack_bytes_hash(raw, raw_len);
        for (pos = h & c->mask; c->slots[pos] != 0; pos = (pos + 1) & c->mask) {
            const struct scache_ent *e = &c->ents[c->slots[pos] - 1];
            if (e->h == h && e->len == raw_len && bytes_eq(e->p, raw, raw_len)) {
                c->last = e->p; /* the entry's bytes: they stay when the run's go */
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
        if (li < 0 && (li = pg_xlate_location(x, lp)) < 0) {
            return pg_xlate_nomem(x, "locations");
        }
        x->stackbuf[j] = li;
    }
    if ((*out = pg_dict_stack(x->b, x->stackbuf, s->n_locations)) < 0) {
        return pg_xlate_nomem(x, "stacks");
    }
    if (cache) {
        if (x->rel_on && (raw = pg_arena_memdup(x->scratch, raw, raw_len ? raw_len : 1)) == NULL) {
            return pg_xlate_nomem(x, "stacks"); /* the run's bytes will be given back */
        }
        c->ents[c->n] = (struct scache_ent){raw, (uint32_t)raw_len, h, *out};
        c->slots[pos] = (uint32_t)++c->n;
        c->last = raw;
        c->last_len = raw_len;
        c->last_stack = *out;
    }
    return PG_ERR_OK;
}


static uintptr_t page_size(void)
{
    long n = sysconf(_SC_PAGESIZE); /* glibc: from the auxiliary vector, no system call */

    return n > 0 ? (uintptr_t)n : 4096u;
}

enum pg_err pg_xlate_samples_init(struct xlate *x, const struct pg_pprof_sample_iter *it)
{
    if (pg_arena_cleanup_add(x->scratch, scache_free, &x->sc) != 0) {
        return pg_xlate_nomem(x, "the stack cache");
    }
    x->stackbuf = pg_arena_alloc(x->scratch, (it->cap_locations + 1) * sizeof(int32_t));
    if (x->stackbuf == NULL) {
        return pg_xlate_nomem(x, "the sample decoder");
    }
    /* Only a pool block's run, and only when nothing reads the pprof bytes after the pass
     * (the original payload is a copy of them). */
    x->rel_on = x->pool_buf != NULL && !x->opts->include_original_payload &&
                x->p.sample_run_end - x->p.sample_run >= (ptrdiff_t)(2 * RELEASE_STEP);
    if (x->rel_on) {
        uintptr_t page = page_size(), from = ((uintptr_t)x->p.sample_run + page - 1) & ~(page - 1);
        x->rel_from = x->rel_to = (uint8_t *)from;
    }
    return PG_ERR_OK;
}

/* Gives the run's bytes from x->rel_to up to (page-aligned) @upto back to the pool. Under
 * AddressSanitizer they are poisoned instead and go back whole at the end, so a read of a
 * given-back byte is reported. */
static void release_run(struct xlate *x, struct pg_pprof_sample_iter *it, const uint8_t *upto)
{
    uint8_t *to = (uint8_t *)((uintptr_t)upto & ~(page_size() - 1));

    if (to <= x->rel_to) {
        return;
    }
    if (it->prev_labels != NULL && it->prev_labels < to) {
        it->prev_labels = NULL; /* a cache of the last labels' bytes: decoded again */
    }
#ifdef PG_ARENA_ASAN
    ASAN_POISON_MEMORY_REGION(x->rel_to, (size_t)(to - x->rel_to));
#else
    pg_bufpool_put(x->rel_to, (size_t)(to - x->rel_to), (size_t)(to - x->rel_to));
#endif
    x->released += (size_t)(to - x->rel_to);
    x->rel_to = to;
}

enum pg_err pg_xlate_samples(struct xlate *x, struct pg_pprof_sample_iter *it, int64_t *values,
                             struct srec *srecs)
{
    const struct pg_pprof *p = &x->p;
    const size_t nt = p->n_sample_types, ns = p->n_samples;
    const struct pg_pprof_sample *s = &it->s;
    /* the cursor past which the next step is given back (never, without rel_on) */
    const uint8_t *next_release =
        x->rel_on ? x->rel_to + RELEASE_STEP + RELEASE_MARGIN : p->buf + p->len + 1;
    enum pg_err err;

    for (size_t i = 0; i < ns; i++) {
        const int32_t *attrs;
        size_t n_attrs;
        uintptr_t word;
        int32_t stack = 0, link = 0;
        bool done;

        if ((err = pg_pprof_next_sample(p, it, values + i * nt, &done, x->st)) != PG_ERR_OK) {
            return err;
        }
        if (done) {
            return pg_status_set(x->st, PG_ERR_INTERNAL, "pprof: sample count changed");
        }
        if ((err = sample_stack(x, it, i, &stack)) != PG_ERR_OK) {
            return err;
        }
        if (s->labels_same && i > 0) {
            /* the previous sample's labels: its link and attributes */
            link = srecs[i - 1].link;
            word = srecs[i - 1].attrs;
        } else if ((err = sample_labels(x, s, &link, &attrs, &n_attrs)) !=
                   PG_ERR_OK) {
            return err;
        } else if (!srec_pack(x, attrs, n_attrs, &word)) {
            return pg_xlate_nomem(x, "samples");
        }
        srecs[i] = (struct srec){word, stack, link};
        if (it->r.p >= next_release) {
            const uint8_t *upto = it->r.p < p->sample_run_end ? it->r.p : p->sample_run_end;
            release_run(x, it, upto - RELEASE_MARGIN);
            next_release = it->r.p < p->sample_run_end ? x->rel_to + RELEASE_STEP + RELEASE_MARGIN
                                                       : p->buf + p->len + 1;
        }
    }
    return PG_ERR_OK;
}
