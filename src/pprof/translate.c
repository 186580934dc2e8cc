/* SPDX-License-Identifier: Apache-2.0
 * pprof -> OTLP Profiles, the entry and the request: gzip layers are peeled
 * (a large one into a core/bufpool block, else into the scratch arena), the
 * pprof is indexed by pprof_decode.c, then one pass over the samples
 * (translate_samples.c) decodes and translates each at once into the
 * pg_dict_builder, whose output lives in the request arena, keeping a small
 * record per sample. Then the scratch arena (inflated pprof, indexes, hash
 * tables) is released and only then are the Sample structs built, so the two
 * never occupy memory together. Indexes follow first use: mappings (pprof
 * order), profile 0's sample/period types, the samples, the profile
 * attributes, then the other profiles' sample types. */
#include "pprof/translate.h"
#include "pprof/translate_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "codec/inflate.h"
#include "core/bufpool.h"
#include "otlp/otlp_build.h"
#ifdef PG_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define KEY_TYPE_ORDER "pprof.scope.sample_type_order"
#define KEY_DEFAULT_TYPE "pprof.scope.default_sample_type"


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
    if (x->pool_buf != NULL) {
        now += x->pool_got - (size_t)(x->rel_to - x->rel_from);
    }
    if (now > x->peak) {
        x->peak = now;
    }
}

/* The pooled inflated pprof is not read again: back to the pool, in the pieces around
 * what the sample pass gave back already (under AddressSanitizer that part was only
 * poisoned: whole again). */
static void pool_drop(struct xlate *x)
{
    uint8_t *b = x->pool_buf;
    size_t head, tail_off, written;

    if (b == NULL) {
        return;
    }
#ifdef PG_ARENA_ASAN
    ASAN_UNPOISON_MEMORY_REGION(x->rel_from, (size_t)(x->rel_to - x->rel_from));
    x->rel_to = x->rel_from;
#endif
    if (x->rel_to == x->rel_from) {
        pg_bufpool_put(b, x->pool_got, x->pool_len);
    } else {
        head = (size_t)(x->rel_from - b);
        tail_off = (size_t)(x->rel_to - b);
        written = x->pool_len > tail_off ? x->pool_len - tail_off : 0;
        pg_bufpool_put(b, head, head);
        pg_bufpool_put(x->rel_to, x->pool_got - tail_off, written);
    }
    x->pool_buf = x->rel_from = x->rel_to = NULL;
    x->pool_got = x->pool_len = 0;
    x->rel_on = false;
}

/* The caller's body (in *x->input) is not read again: give its memory back now. */
static void drop_input(struct xlate *x)
{
    if (x->input != NULL && *x->input != NULL) {
        pg_arena_destroy(*x->input);
        *x->input = NULL;
    }
}

/* One Sample struct per sample and type, and the pointer arrays, from a record. */
#define SAMPLE_BYTES (sizeof(struct pg_otlp_sample) + sizeof(struct pg_otlp_sample *))

/* A large profile's records are a core/bufpool block of their own (x->keep's): grown by
 * pg_bufpool_grow to the Sample structs' size (the pool's kept pages moved in behind
 * them: no copy, no fault) and handed to the request arena, the structs are written over
 * the records, backwards: struct (0, i) at 96 i and the others further on never touch a
 * record j < i (16 j + 16 <= 96 i), and record i is read before its structs are written.
 * So the 16-byte records (1 MB for 60 000 samples) are not alive beside the structs
 * (12.5 MB) at the request's peak. NULL when they are not such a block or the pool cannot
 * grow it (the caller then allocates the structs apart); *@fail set when the request
 * arena's cap refused it (the caller reports it as for any allocation). */
static struct pg_otlp_sample *samples_over_records(struct xlate *x, const struct srec *srecs,
                                                   size_t bytes, bool *fail)
{
    size_t got = 0, grown = 0, hdr;
    uint8_t *blk, *big;
    void *data;

    *fail = false;
    if (x->keep == NULL || (blk = pg_arena_take_block(x->keep, srecs, &got)) == NULL) {
        return NULL;
    }
    hdr = (size_t)((const uint8_t *)srecs - blk);
    if (bytes > SIZE_MAX - hdr || (big = pg_bufpool_grow(blk, got, hdr + bytes, &grown)) == NULL) {
        /* the records stay readable where they are; the block is ours to give back */
        x->rec_blk = blk;
        x->rec_got = got;
        x->rec_data = blk + hdr;
        return NULL;
    }
    if ((data = pg_arena_adopt_block(x->out, big, grown, bytes)) == NULL) {
        x->rec_blk = big;
        x->rec_got = grown;
        x->rec_data = big + hdr;
        *fail = true;
        return NULL;
    }
    return data;
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
    const size_t bytes = ns * nt * SAMPLE_BYTES; /* bounded by max_samples x types */
    bool fail = false;

    note_peak(x);
    x->scratch_bytes = pg_arena_footprint(x->scratch) + pg_dict_heap_peak(x->b) + x->sc.peak;
    pg_arena_destroy(x->scratch); /* the builder and its tables go with it */
    pool_drop(x);
    x->scratch = NULL;
    x->b = NULL;
    drop_input(x); /* a plain body was the pprof itself: dead now too */
    if (ns * sizeof(*srecs) > PG_BUFPOOL_MIN) {
        /* The request is complete but for the structs: the unused end of its last chunk
         * serves their block instead of staying resident beside it. */
        (void)pg_arena_release_tail(x->out);
    }
    recs = ns * sizeof(*srecs) > PG_BUFPOOL_MIN ? samples_over_records(x, srecs, bytes, &fail)
                                                : NULL;
    if (recs != NULL) {
        srecs = (const struct srec *)recs; /* the grown block may have moved */
        ptrs = (struct pg_otlp_sample **)(recs + ns * nt);
        for (size_t k = 0; k < nt; k++) {
            prof[k].samples = ptrs + k * ns;
            prof[k].n_samples = ns;
        }
        for (size_t i = ns; i-- > 0;) {
            const struct srec r = srecs[i]; /* before struct (0, i) overwrites it */
            size_t na;
            int32_t *attrs = (int32_t *)srec_attrs(r.attrs, &na);

            for (size_t k = 0; k < nt; k++) {
                struct pg_otlp_sample *o = recs + k * ns + i;

                o->base = tmpl.base;
                o->n_timestamps_unix_nano = 0;
                o->timestamps_unix_nano = NULL;
                o->stack_index = r.stack;
                o->attribute_indices = attrs;
                o->n_attribute_indices = na;
                o->link_index = r.link;
                o->values = values + i * nt + order[k];
                o->n_values = 1;
                ptrs[k * ns + i] = o;
            }
        }
        note_peak(x);
        return PG_ERR_OK;
    }
    /* One block for structs and pointers: a lone pointer array of up to a chunk would open
     * a fresh 4 MiB arena chunk this late. */
    recs = fail ? NULL : pg_arena_alloc(x->out, bytes);
    if (recs == NULL) {
        return pg_xlate_nomem(x, "samples");
    }
    if (x->rec_blk != NULL) {
        srecs = (const struct srec *)x->rec_data; /* a grown block may have moved */
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
            o->attribute_indices = (int32_t *)srec_attrs(srecs[i].attrs, &o->n_attribute_indices);
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
    /* by key strindex, grown to the largest key seen (a few keys, often early strings) */
    x->seen_n = 64;
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
        return pg_xlate_nomem(x, "the dictionary");
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
    if ((err = pg_xlate_samples_init(x, &it)) != PG_ERR_OK) {
        return err;
    }
    x->attrbuf = pg_arena_alloc(x->scratch, (it.cap_labels + 1) * sizeof(int32_t));
    x->label_next = pg_arena_alloc(x->scratch, (it.cap_labels + 1) * sizeof(uint32_t));
    x->groups = pg_arena_alloc(x->scratch, (it.cap_labels + 1) * sizeof(*x->groups));
    if (x->attrbuf == NULL || x->label_next == NULL || x->groups == NULL) {
        return pg_xlate_nomem(x, "the sample decoder");
    }

    if ((err = pg_xlate_add_mappings(x)) != PG_ERR_OK) {
        return err;
    }

    /* pprof's default type is its last; OTLP viewers show profiles[0]: swap first and last. */
    if (nt > 0) {
        order = pg_arena_alloc(x->keep, nt * sizeof(*order)); /* used after scratch */
        profiles = pg_arena_alloc(x->out, nt * sizeof(*profiles));
        prof = pg_arena_alloc(x->out, nt * sizeof(*prof));
        values = pg_arena_alloc(x->out, (ns ? ns : 1) * nt * sizeof(int64_t));
        if (order == NULL || profiles == NULL || prof == NULL || values == NULL) {
            return pg_xlate_nomem(x, "profiles");
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
        if ((prof[0].sample_type = pg_xlate_value_type(x, &p->sample_types[order[0]])) == NULL) {
            return pg_xlate_nomem(x, "profiles");
        }
    }
    if ((period_type = pg_xlate_value_type(x, &p->period_type)) == NULL) {
        return pg_xlate_nomem(x, "profiles");
    }
    if (nt > 0 && ns > 0) {
        srecs = pg_arena_alloc(x->keep, ns * sizeof(*srecs));
        if (srecs == NULL) {
            return pg_xlate_nomem(x, "samples");
        }
    }

    if (srecs != NULL && (err = pg_xlate_samples(x, &it, values, srecs)) != PG_ERR_OK) {
        return err;
    }

    if (nt > 0) {
        if ((err = pg_xlate_profile_attrs(x, &pattrs, &n_pattrs)) != PG_ERR_OK) {
            return err;
        }
        ids = pg_arena_alloc(x->out, 16 * nt);
        if (ids == NULL) {
            return pg_xlate_nomem(x, "profiles");
        }
        /* Random ids: a failing getrandom leaves the id unset (allowed: "optional"). */
        if (!random_bytes(ids, 16 * nt)) {
            ids = NULL;
        }
    }
    for (size_t k = 0; k < nt; k++) {
        struct pg_otlp_profile *pr = &prof[k];
        if (k > 0 && (pr->sample_type = pg_xlate_value_type(x, &p->sample_types[order[k]])) == NULL) {
            return pg_xlate_nomem(x, "profiles");
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
            return pg_xlate_nomem(x, "the original payload");
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
            return pg_xlate_nomem(x, "the request");
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
            return pg_xlate_nomem(x, "the request");
        }
        if (nt > 0) {
            const struct pg_pprof_str *def =
                &p->strings[p->default_sample_type != 0 ? p->default_sample_type
                                                        : p->sample_types[nt - 1].type];
            const char *defc = pg_dict_tmp_cstr(x->b, pg_pprof_str_p(p, def), def->len);
            sattrs[0] = scope_order_attr(x, order, nt);
            sattrs[1] = defc != NULL ? pg_otlp_kv_str(x->out, KEY_DEFAULT_TYPE, defc) : NULL;
            if (sattrs[0] == NULL || sattrs[1] == NULL) {
                return pg_xlate_nomem(x, "scope attributes");
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
            return pg_xlate_nomem(x, "the dictionary");
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
        size_t inner_len, got = 0, room;
        if (layers >= opts->limits.max_gzip_layers) {
            err = pg_status_set(st, PG_ERR_LIMIT,
                                "pprof: more than %zu nested gzip layers (limit "
                                "max_gzip_layers)",
                                opts->limits.max_gzip_layers);
            goto done;
        }
        /* A large layer (known by its ISIZE) goes into a pool block the sample pass can
         * give back in parts; anything else into the scratch arena. */
        /* within what the scratch arena could still hand out: over it, pg_inflate says so */
        room = pg_arena_cap(x.scratch) == 0 ? SIZE_MAX
                                            : pg_arena_cap(x.scratch) - pg_arena_used(x.scratch);
        if (!pg_inflate_gzip_pooled(data, dlen,
                                    room < opts->limits.max_inflated_bytes
                                        ? room
                                        : opts->limits.max_inflated_bytes,
                                    &inner, &inner_len, &got)) {
            err = pg_inflate(x.scratch, data, dlen, PG_INFLATE_GZIP,
                             opts->limits.max_inflated_bytes, &inner, &inner_len, st);
            if (err != PG_ERR_OK) {
                goto done;
            }
        }
        pool_drop(&x); /* an outer layer's block: inflated, dead */
        if (got != 0) {
            x.pool_buf = inner;
            x.pool_got = got;
            x.pool_len = inner_len;
        }
        data = inner;
        dlen = inner_len;
        inflated += inner_len;
        layers++;
        note_peak(&x);
        drop_input(&x); /* the outer layer is inflated: only x.scratch is read from now */
    }
    if (x.pool_buf == NULL && dlen >= PG_BUFPOOL_MIN) {
        /* A large pprof that is a block of its own in an arena (the caller's decoded body,
         * or a layer zlib inflated) becomes this call's pool block the same way. */
        struct pg_arena *holder = layers > 0 ? x.scratch : x.input != NULL ? *x.input : NULL;
        size_t got = 0;
        uint8_t *base = holder != NULL ? pg_arena_take_block(holder, data, &got) : NULL;

        if (base != NULL) {
            x.pool_buf = base;
            x.pool_got = got;
            x.pool_len = (size_t)(data - base) + dlen;
        }
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
        stats->released_bytes = x.released;
    }
    pg_arena_destroy(x.scratch);
    pool_drop(&x);
    if (x.rec_blk != NULL) {
        pg_bufpool_put(x.rec_blk, x.rec_got, x.rec_got); /* records taken but not adopted */
    }
    pg_arena_destroy(x.keep);
    drop_input(&x);
    return err;
}