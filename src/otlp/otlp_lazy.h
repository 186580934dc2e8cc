/* SPDX-License-Identifier: Apache-2.0
 * Lazy samples: a profile whose samples stay in wire form. A protobuf-c
 * Sample takes 88 bytes and a pointer against ~14 on the wire, so a large
 * OTLP request unpacked whole is ~5x its size; the decoder can instead keep
 * a profile's samples as their Profile field-2 records, copied compactly
 * into the batch arena, when they are canonical (the bytes the encoder would
 * write for them). Such a profile has n_samples 0 and a marker among its
 * unknown fields (wire type 7, which no parse yields) pointing at a
 * struct pg_otlp_lazy; the encoder writes the records verbatim where the
 * samples go, validation walks them one at a time, and a consumer that
 * needs Sample structs materializes them once (the pipeline decides at
 * build time whether any does: pg_component_ops.lazy_samples). Runs on any
 * thread; a lazy profile is read-only until materialized. */
#ifndef PG_OTLP_OTLP_LAZY_H
#define PG_OTLP_OTLP_LAZY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "otlp/otlp.h"

/* The unknown field's wire type that marks a lazy profile. */
#define PG_OTLP_LAZY_MARK ((ProtobufCWireType)7)

/* A profile's samples as their wire records (tag 0x12, length, body each), in the arena that
 * holds the profile. */
struct pg_otlp_lazy {
    size_t n;      /* samples */
    size_t len;    /* bytes of @wire */
    uint8_t *wire; /* in the profile's arena */
};

/* The records @m keeps in wire form (a Profile's samples, a ProfilesDictionary's links), or
 * NULL. */
static inline const struct pg_otlp_lazy *pg_otlp_lazy_find(const ProtobufCMessage *m)
{
    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        if (m->unknown_fields[i].wire_type == PG_OTLP_LAZY_MARK) {
            return (const struct pg_otlp_lazy *)(const void *)m->unknown_fields[i].data;
        }
    }
    return NULL;
}

/* The profile's lazy samples, or NULL when they are Sample structs (as always on the small
 * path: no unknown field, one test). */
static inline const struct pg_otlp_lazy *pg_otlp_lazy_of(const struct pg_otlp_profile *p)
{
    return p->base.n_unknown_fields != 0 ? pg_otlp_lazy_find(&p->base) : NULL;
}

/* The dictionary's links kept in wire form (Link records, field 4 each), or NULL. The
 * dictionary's link_table then holds none: they all are records. */
static inline const struct pg_otlp_lazy *pg_otlp_lazy_links(const struct pg_otlp_dict *d)
{
    return d->base.n_unknown_fields != 0 ? pg_otlp_lazy_find(&d->base) : NULL;
}

/* Links of @d, lazy or not. */
static inline size_t pg_otlp_dict_link_count(const struct pg_otlp_dict *d)
{
    const struct pg_otlp_lazy *lz = pg_otlp_lazy_links(d);

    return d->n_link_table + (lz != NULL ? lz->n : 0);
}

/* Samples of @p, lazy or not. */
static inline size_t pg_otlp_profile_sample_count(const struct pg_otlp_profile *p)
{
    const struct pg_otlp_lazy *lz;

    if (p->base.n_unknown_fields == 0 || (lz = pg_otlp_lazy_of(p)) == NULL) {
        return p->n_samples;
    }
    return p->n_samples + lz->n;
}

/* True when some profile of @req keeps its samples, or its dictionary its links, in wire
 * form. */
bool pg_otlp_request_is_lazy(const struct pg_otlp_request *req);

/* True when the Sample body @p (@len bytes) is exactly what the encoder writes for the Sample
 * it unpacks to: fields 1..5 in order, each once, with their wire types; scalars non-zero,
 * packed runs non-empty, varints minimal, int32 values sign-extended; nothing else. Only such
 * samples are kept in wire form, so writing them verbatim is the eager encoding, byte for
 * byte. */
bool pg_otlp_lazy_canonical(const uint8_t *p, size_t len);
/* The same for a Link body: trace_id then span_id, each at most once and non-empty. */
bool pg_otlp_lazy_link_canonical(const uint8_t *p, size_t len);

/* Walks lazy samples one at a time, each unpacked into a caller's Sample whose arrays live in
 * the walker's scratch (malloc'd; valid until the next call). */
struct pg_otlp_lazy_iter {
    const uint8_t *p, *end;
    size_t i;
    int32_t *ai;
    int64_t *val;
    uint64_t *ts;
    size_t ai_cap, val_cap, ts_cap; /* elements */
};
void pg_otlp_lazy_iter_init(struct pg_otlp_lazy_iter *it, const struct pg_otlp_lazy *lz);
/* 1: *@out holds the next sample; 0: the end; -1: malformed records or no memory (@st says). */
int pg_otlp_lazy_next(struct pg_otlp_lazy_iter *it, struct pg_otlp_sample *out,
                      struct pg_status *st);
void pg_otlp_lazy_iter_done(struct pg_otlp_lazy_iter *it);
/* The same walk over Link records: *@out's ids point into the records (no scratch). */
int pg_otlp_lazy_next_link(struct pg_otlp_lazy_iter *it, struct pg_otlp_link *out,
                           struct pg_status *st);

/* Turns every lazy profile of @req into Sample structs, and lazy links into Link structs, in @arena (the request's own), as the
 * eager unpack would have built them. Not on a shared batch while others read it: the
 * pipeline calls it once, before fan-out. NOMEM / LIMIT from the arena, MALFORMED. */
PG_MUST_CHECK
enum pg_err pg_otlp_lazy_materialize(struct pg_arena *arena, struct pg_otlp_request *req,
                                     struct pg_status *st);

#endif
