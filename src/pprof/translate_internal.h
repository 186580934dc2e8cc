/* SPDX-License-Identifier: Apache-2.0
 * What the translator's files share (private to src/pprof/translate*.c): the
 * translation state and its caches (types), and the string index map inline.
 * Calls go one way: translate.c (entry, gzip layers, the request) ->
 * translate_samples.c (the sample pass: stacks, labels to links and
 * attributes) -> translate_dict.c (dictionary entries from pprof entities,
 * error wording); translate.c also calls translate_dict.c. */
#ifndef PG_PPROF_TRANSLATE_INTERNAL_H
#define PG_PPROF_TRANSLATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "otlp/dict.h"
#include "pprof/pprof_decode.h"
#include "pprof/translate.h"

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
    uintptr_t attrs; /* the attribute list and its length in one word: see srec_attrs */
    int32_t stack, link;
};

/* Interned lists live in the arena, 16-byte aligned: a length under SREC_LONG rides in the
 * pointer's low bits; a longer list's word points (tagged SREC_LONG) at a struct
 * srec_long in x->keep. Sixteen bytes per sample instead of 24: a large profile's
 * records are alive at the peak. */
#define SREC_LONG 15u
struct srec_long {
    const int32_t *p;
    size_t n;
};

static inline const int32_t *srec_attrs(uintptr_t w, size_t *n)
{
    if ((w & SREC_LONG) == SREC_LONG) {
        const struct srec_long *l = (const struct srec_long *)(w & ~(uintptr_t)SREC_LONG);
        *n = l->n;
        return l->p;
    }
    *n = w & SREC_LONG;
    return (const int32_t *)(w & ~(uintptr_t)SREC_LONG);
}

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
    /* The inflated pprof when it came in a core/bufpool block (a large gzip'd body), owned
     * by translate.c; else NULL (it lives in an arena). During the sample pass
     * translate_samples.c gives its consumed sample bytes [rel_from, rel_to) back to the
     * pool early (rel_on), so the rest of the request reuses those pages. */
    uint8_t *pool_buf, *rel_from, *rel_to;
    size_t pool_got, pool_len;
    size_t released; /* bytes given back so far (for the stats) */
    /* The records' pool block when make_samples took it out of keep but could not turn it
     * into the Sample structs (then they are written apart; given back at the end). */
    uint8_t *rec_blk, *rec_data; /* rec_data: the records in it */
    size_t rec_got;
    bool rel_on;
};

/* OTLP strindex of pprof string @idx, interned on first use; < 0 on OOM. */
static inline int32_t pg_xlate_pstr(struct xlate *x, int64_t idx)
{
    int32_t v = x->str_otlp[idx];

    if (v < 0) {
        v = pg_dict_string(x->b, pg_pprof_str_p(&x->p, &x->p.strings[idx]), x->p.strings[idx].len);
        if (v >= 0) {
            x->str_otlp[idx] = v;
        }
    }
    return v;
}

/* *@w becomes the srec word for list @p of @n entries; false when out of memory. */
static inline bool srec_pack(struct xlate *x, const int32_t *p, size_t n, uintptr_t *w)
{
    struct srec_long *l;

    if (n < SREC_LONG && ((uintptr_t)p & SREC_LONG) == 0) {
        *w = (uintptr_t)p | n;
        return true;
    }
    if ((l = pg_arena_alloc(x->keep, sizeof(*l))) == NULL) {
        return false;
    }
    l->p = p;
    l->n = n;
    *w = (uintptr_t)l | SREC_LONG;
    return true;
}

/* ---- translate_samples.c ---- */
/* Sets up the sample pass's caches (after the decoder's iterator @it is initialised). */
enum pg_err pg_xlate_samples_init(struct xlate *x, const struct pg_pprof_sample_iter *it);
/* The sample pass: every sample decoded (values into @values, n_sample_types per row) and
 * turned into its record in @srecs (its stack, link and attribute list interned). */
enum pg_err pg_xlate_samples(struct xlate *x, struct pg_pprof_sample_iter *it, int64_t *values,
                             struct srec *srecs);

/* ---- translate_dict.c ---- */
/* The status for a failed allocation while building @what: LIMIT when a cap was hit. */
enum pg_err pg_xlate_nomem(struct xlate *x, const char *what);
/* Every mapping into the dictionary, in pprof order (x->map_otlp). */
enum pg_err pg_xlate_add_mappings(struct xlate *x);
/* Location @pos (of p.locations) in the dictionary, its functions first; < 0 on OOM. */
int32_t pg_xlate_location(struct xlate *x, uint32_t pos);
/* A ValueType in the out arena from a pprof one; NULL on OOM. */
struct pg_otlp_valuetype *pg_xlate_value_type(struct xlate *x, const struct pg_pprof_vt *vt);
/* The profile attributes (drop/keep frames, comments, doc_url) as one interned list. */
enum pg_err pg_xlate_profile_attrs(struct xlate *x, const int32_t **out, size_t *n_out);

#endif
