/* SPDX-License-Identifier: Apache-2.0
 * A pprof sample's labels into OTLP: trace_id / span_id pairs become a link
 * (memoised per pair of pprof strings), the other labels attributes (cached
 * per pprof key/value/unit, repeated keys grouped into one array attribute,
 * google/pprof's empty labels dropped), shared as interned index lists. */
#include "pprof/translate_internal.h"

#include <string.h>

#include "core/hex.h"
#include "core/vec.h"

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
enum pg_err pg_xlate_sample_labels(struct xlate *x, const struct pg_pprof_sample *s,
                                   int32_t *link, const int32_t **attrs, size_t *n_attrs)
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

