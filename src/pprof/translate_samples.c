/* SPDX-License-Identifier: Apache-2.0
 * The sample pass: each pprof sample is decoded by the iterator and at once
 * translated (its stack interned through a cache keyed on the raw packed
 * location bytes, its labels through translate_labels.c) into a compact
 * record; no decoded sample is kept. When the inflated pprof is a pool block,
 * the sample bytes already translated are given back to core/bufpool as the
 * pass goes, so the links, attributes and tables it makes reuse those pages
 * instead of adding to the request's peak. */
#include "pprof/translate_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bufpool.h"
#ifdef PG_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* The run's bytes are given back in steps of this much (a few pool slots per push). */
#define RELEASE_STEP ((size_t)512 << 10)
/* Kept behind the cursor: the sample just translated (at most 2 + 127 bytes in the run). */
#define RELEASE_MARGIN ((size_t)512)

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
        } else if ((err = pg_xlate_sample_labels(x, s, &link, &attrs, &n_attrs)) !=
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
