/* SPDX-License-Identifier: Apache-2.0
 * pprofgate's annotations on the debug exporter's text: the lines and fields
 * that say what a profile holds, computed from the request alone. Input may
 * come from any receiver, so every dictionary index is range-checked. */
#include "exporter/debug_annotate.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "type/unit" of @vt into @out; "?" for a part that is unset or missing. */
const char *pg_debug_value_type_name(char *out, size_t size, const pg_otlp_dict *d,
                                     const pg_otlp_valuetype *vt)
{
    const char *t = vt ? pg_debug_dict_str(d, vt->type_strindex) : NULL;
    const char *u = vt ? pg_debug_dict_str(d, vt->unit_strindex) : NULL;

    snprintf(out, size, "%s/%s", t && t[0] ? t : "?", u && u[0] ? u : "?");
    return out;
}

static bool value_type_set(const pg_otlp_valuetype *vt)
{
    return vt != NULL && (vt->type_strindex != 0 || vt->unit_strindex != 0);
}

/* @v in @vt's unit: a Go duration for nanoseconds (`40ms`), else the
 * number as it is (bytes and counts stay exact). */
static const char *quantity(char *out, size_t size, const pg_otlp_dict *d,
                            const pg_otlp_valuetype *vt, long long v)
{
    const char *unit = vt ? pg_debug_dict_str(d, vt->unit_strindex) : NULL;

    if (unit != NULL && strcmp(unit, "nanoseconds") == 0) {
        pg_debug_go_duration(out, size, v);
    } else {
        snprintf(out, size, "%lld", v);
    }
    return out;
}

/* A sample's value: the sum of its values, or one per timestamp when it
 * has only timestamps (the OTLP rule). Saturates instead of wrapping. */
static long long sample_value(const pg_otlp_sample *s)
{
    long long sum = 0;

    if (s->n_values == 0) {
        return (long long)s->n_timestamps_unix_nano;
    }
    for (size_t v = 0; v < s->n_values; v++) {
        if (__builtin_add_overflow(sum, (long long)s->values[v], &sum)) {
            return s->values[v] < 0 ? LLONG_MIN : LLONG_MAX;
        }
    }
    return sum;
}

static long long profile_total(const pg_otlp_profile *p)
{
    long long sum = 0;

    for (size_t s = 0; s < p->n_samples; s++) {
        long long v = p->samples[s] ? sample_value(p->samples[s]) : 0;

        if (__builtin_add_overflow(sum, v, &sum)) {
            return v < 0 ? LLONG_MIN : LLONG_MAX;
        }
    }
    return sum;
}

static long long duration_ns(uint64_t d)
{
    return d > (uint64_t)LLONG_MAX ? LLONG_MAX : (long long)d;
}

/* normal: the profile line's fields after `samples=N`. */
void pg_debug_annot_profile_fields(struct pg_debug_buf *b, const pg_otlp_dict *d,
                                   const pg_otlp_profile *p)
{
    char name[256], q[64], t[64];

    pg_debug_buf_printf(b, " sample_type=%s",
                        pg_debug_value_type_name(name, sizeof(name), d, p->sample_type));
    pg_debug_buf_printf(b, " total=%s",
                        quantity(q, sizeof(q), d, p->sample_type, profile_total(p)));
    if (p->period != 0 || value_type_set(p->period_type)) {
        pg_debug_buf_printf(b, " period=%s period_type=%s",
                            quantity(q, sizeof(q), d, p->period_type, p->period),
                            pg_debug_value_type_name(name, sizeof(name), d, p->period_type));
    }
    pg_debug_rfc3339(t, sizeof(t), (unsigned long long)p->time_unix_nano);
    pg_debug_go_duration(q, sizeof(q), duration_ns(p->duration_nano));
    pg_debug_buf_printf(b, " start=%s duration=%s", t, q);
}

/* pprof.scope.sample_type_order: entry k is the index, in the pprof the
 * profiles came from, of profile k's sample type. Returns its inverse
 * (pprof index -> profile index; malloc'd, @n entries), or NULL when the
 * scope has no such attribute or it does not match the profiles (a
 * processor dropped some): then nothing is decoded. */
static size_t *sample_type_order_inverse(const pg_otlp_scopeprof *sp, size_t *n)
{
    const pg_otlp_anyvalue *v = NULL;
    const pg_otlp_array *arr;
    size_t *inv;

    for (size_t i = 0; sp->scope != NULL && i < sp->scope->n_attributes; i++) {
        const pg_otlp_kv *kv = sp->scope->attributes[i];

        if (kv != NULL && kv->key != NULL &&
            strcmp(kv->key, "pprof.scope.sample_type_order") == 0) {
            v = kv->value;
        }
    }
    if (v == NULL || v->value_case != PG_OTLP_ANYVALUE_ARRAY || v->array_value == NULL) {
        return NULL;
    }
    arr = v->array_value;
    if (arr->n_values == 0 || arr->n_values != sp->n_profiles ||
        (inv = malloc(arr->n_values * sizeof(*inv))) == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < arr->n_values; i++) {
        inv[i] = SIZE_MAX;
    }
    for (size_t k = 0; k < arr->n_values; k++) {
        const pg_otlp_anyvalue *e = arr->values[k];

        if (e == NULL || e->value_case != PG_OTLP_ANYVALUE_INT || e->int_value < 0 ||
            (uint64_t)e->int_value >= arr->n_values || inv[e->int_value] != SIZE_MAX ||
            sp->profiles[k] == NULL) {
            free(inv);
            return NULL;
        }
        inv[e->int_value] = k;
    }
    *n = arr->n_values;
    return inv;
}

/* normal: ` pprof_sample_types=samples/count,cpu/nanoseconds` (pprof's order). */
void pg_debug_annot_scope_fields(struct pg_debug_buf *b, const pg_otlp_dict *d,
                                 const pg_otlp_scopeprof *sp)
{
    size_t n = 0;
    size_t *inv = sample_type_order_inverse(sp, &n);
    char name[256];

    if (inv == NULL) {
        return;
    }
    pg_debug_put(b, " pprof_sample_types=");
    for (size_t i = 0; i < n; i++) {
        const pg_otlp_valuetype *vt = sp->profiles[inv[i]]->sample_type;

        pg_debug_buf_printf(b, "%s%s", i ? "," : "",
                            pg_debug_value_type_name(name, sizeof(name), d, vt));
    }
    free(inv);
}

/* detailed: `pprof sample types: [0] samples/count = Profile #1, ...`. */
void pg_debug_annot_scope_lines(struct pg_debug_buf *b, const pg_otlp_dict *d,
                                const pg_otlp_scopeprof *sp)
{
    size_t n = 0;
    size_t *inv = sample_type_order_inverse(sp, &n);
    char name[256];

    if (inv == NULL) {
        return;
    }
    pg_debug_put(b, "pprof sample types:");
    for (size_t i = 0; i < n; i++) {
        const pg_otlp_valuetype *vt = sp->profiles[inv[i]]->sample_type;

        pg_debug_buf_printf(b, "%s [%zu] %s = Profile #%zu", i ? "," : "", i,
                            pg_debug_value_type_name(name, sizeof(name), d, vt), inv[i]);
    }
    pg_debug_put(b, "\n");
    free(inv);
}

/* A frame as the stack lines and the top frames print it. */
enum frame_kind { FRAME_NO_STACK, FRAME_MISSING_STACK, FRAME_MISSING_LOCATION, FRAME_ADDRESS,
                  FRAME_LINE };

struct frame_key {
    enum frame_kind kind;
    long long a, b; /* MISSING_*: the index; ADDRESS: mapping, address; LINE: function, line */
};

static void put_frame(struct pg_debug_buf *b, const pg_otlp_dict *d, const struct frame_key *k)
{
    switch (k->kind) {
    case FRAME_NO_STACK: pg_debug_put(b, "(no stack)"); break;
    case FRAME_MISSING_STACK:
        pg_debug_buf_printf(b, "[Missing Dictionary StackTable Item #%lld]", k->a);
        break;
    case FRAME_MISSING_LOCATION:
        pg_debug_buf_printf(b, "[Missing Dictionary LocationTable Item #%lld]", k->a);
        break;
    case FRAME_ADDRESS: {
        const char *file = NULL;

        if (k->a > 0 && (size_t)k->a < d->n_mapping_table && d->mapping_table[k->a] != NULL) {
            file = pg_debug_dict_str(d, d->mapping_table[k->a]->filename_strindex);
        }
        pg_debug_buf_printf(b, "0x%llx%s%s", (unsigned long long)k->b, file && file[0] ? " " : "",
                            file && file[0] ? file : "");
        break;
    }
    case FRAME_LINE: {
        const char *name = NULL, *file = NULL;

        if (k->a >= 0 && (size_t)k->a < d->n_function_table && d->function_table[k->a] != NULL) {
            name = pg_debug_dict_str(d, d->function_table[k->a]->name_strindex);
            file = pg_debug_dict_str(d, d->function_table[k->a]->filename_strindex);
        }
        pg_debug_buf_printf(b, "%s %s:%lld", name && name[0] ? name : "??",
                            file && file[0] ? file : "??", k->b);
        break;
    }
    }
}

static struct frame_key line_frame(const pg_otlp_line *ln)
{
    return (struct frame_key){FRAME_LINE, ln->function_index, (long long)ln->line};
}

/* Location @li, or NULL with @k set to its one frame (missing, or an
 * address without lines); a location with lines has one frame per line,
 * leaf first (inline frames in pprof's order, callee first). */
static const pg_otlp_location *location_or_frame(const pg_otlp_dict *d, int32_t li,
                                                 struct frame_key *k)
{
    const pg_otlp_location *l;

    if (li < 0 || (size_t)li >= d->n_location_table || d->location_table[li] == NULL) {
        *k = (struct frame_key){FRAME_MISSING_LOCATION, li, 0};
        return NULL;
    }
    l = d->location_table[li];
    if (l->n_lines == 0) {
        *k = (struct frame_key){FRAME_ADDRESS, l->mapping_index, (long long)l->address};
        return NULL;
    }
    return l;
}

/* The frame a sample's self value belongs to: its stack's first (leaf)
 * frame. */
static struct frame_key leaf_frame(const pg_otlp_dict *d, const pg_otlp_sample *s)
{
    struct frame_key k = {FRAME_NO_STACK, 0, 0};
    const pg_otlp_stack *st;

    if (s->stack_index == 0) {
        return k;
    }
    if (d == NULL || s->stack_index < 0 || (size_t)s->stack_index >= d->n_stack_table ||
        d->stack_table[s->stack_index] == NULL) {
        return (struct frame_key){FRAME_MISSING_STACK, s->stack_index, 0};
    }
    st = d->stack_table[s->stack_index];
    for (size_t i = 0; i < st->n_location_indices; i++) {
        const pg_otlp_location *l = location_or_frame(d, st->location_indices[i], &k);

        if (l == NULL) {
            return k;
        }
        for (size_t j = 0; j < l->n_lines; j++) {
            if (l->lines[j] != NULL) {
                return line_frame(l->lines[j]);
            }
        }
    }
    return (struct frame_key){FRAME_NO_STACK, 0, 0};
}

#define TOP_FRAMES 5
/* The frame table stops growing here (32 MiB of slots, 512 Ki distinct
 * leaf lines at half load); new leaf frames past it are left out and the
 * header says so. */
#define MAX_FRAME_SLOTS (1u << 20)

struct pg_debug_frame_slot {
    struct frame_key k;
    long long value;
    bool used;
};

static size_t frame_hash(const struct frame_key *k)
{
    uint64_t h = (uint64_t)k->kind * 0x9e3779b97f4a7c15ULL;

    h = (h ^ (uint64_t)k->a) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (uint64_t)k->b) * 0x94d049bb133111ebULL;
    return (size_t)(h ^ (h >> 31));
}

static bool frame_eq(const struct frame_key *x, const struct frame_key *y)
{
    return x->kind == y->kind && x->a == y->a && x->b == y->b;
}

static struct pg_debug_frame_slot *frame_find(struct pg_debug_frame_slot *v, size_t cap,
                                              const struct frame_key *k)
{
    size_t i = frame_hash(k) & (cap - 1);

    while (v[i].used && !frame_eq(&v[i].k, k)) {
        i = (i + 1) & (cap - 1);
    }
    return &v[i];
}

static bool frame_grow(struct pg_debug_frames *t)
{
    size_t cap = t->cap ? t->cap * 2 : 256;
    struct pg_debug_frame_slot *v;

    if (cap > MAX_FRAME_SLOTS || (v = calloc(cap, sizeof(*v))) == NULL) {
        return false;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (t->v[i].used) {
            *frame_find(v, cap, &t->v[i].k) = t->v[i];
        }
    }
    free(t->v);
    t->v = v;
    t->cap = cap;
    return true;
}

static void frame_add(struct pg_debug_frames *t, const struct frame_key *k, long long value)
{
    struct pg_debug_frame_slot *s;
    bool full = (t->n + 1) * 2 > t->cap && !frame_grow(t);

    if (t->cap == 0) {
        t->incomplete = true;
        return;
    }
    s = frame_find(t->v, t->cap, k);
    if (!s->used) {
        if (full) { /* stay at half load, so probes stay short */
            t->incomplete = true;
            return;
        }
        s->used = true;
        s->k = *k;
        s->value = 0;
        t->n++;
    }
    if (__builtin_add_overflow(s->value, value, &s->value)) {
        s->value = value < 0 ? LLONG_MIN : LLONG_MAX;
    }
}

/* Larger value first; equal values in key order, so the text is stable. */
static bool frame_before(const struct pg_debug_frame_slot *x,
                         const struct pg_debug_frame_slot *y)
{
    if (x->value != y->value) {
        return x->value > y->value;
    }
    if (x->k.kind != y->k.kind) {
        return x->k.kind < y->k.kind;
    }
    return x->k.a != y->k.a ? x->k.a < y->k.a : x->k.b < y->k.b;
}

/* Display columns of UTF-8 @s (µ is two bytes, one column). */
static size_t columns(const char *s)
{
    size_t n = 0;

    for (; *s != '\0'; s++) {
        n += ((unsigned char)*s & 0xC0) != 0x80;
    }
    return n;
}

/* detailed: the profile's top TOP_FRAMES leaf frames by self value. */
static void put_top_frames(struct pg_debug_buf *b, const pg_otlp_dict *d, const pg_otlp_profile *p,
                           long long total, struct pg_debug_frames *t)
{
    struct pg_debug_frame_slot top[TOP_FRAMES];
    char vals[TOP_FRAMES][64];
    size_t n_top = 0, width = 0;

    if (p->n_samples == 0) {
        return;
    }
    if (t->v != NULL) {
        memset(t->v, 0, t->cap * sizeof(*t->v));
    }
    t->n = 0;
    t->incomplete = false;
    for (size_t s = 0; s < p->n_samples; s++) {
        if (p->samples[s] != NULL) {
            struct frame_key k = leaf_frame(d, p->samples[s]);

            frame_add(t, &k, sample_value(p->samples[s]));
        }
    }
    for (size_t i = 0; i < t->cap; i++) {
        size_t j;

        if (!t->v[i].used) {
            continue;
        }
        for (j = n_top; j > 0 && frame_before(&t->v[i], &top[j - 1]); j--) {
            if (j < TOP_FRAMES) {
                top[j] = top[j - 1];
            }
        }
        if (j < TOP_FRAMES) {
            top[j] = t->v[i];
            n_top += n_top < TOP_FRAMES;
        }
    }
    pg_debug_buf_printf(b, "    %-15s: top %zu of %zu leaf frames by self value%s\n", "Top frames",
                        n_top, t->n, t->incomplete ? " (table full: some frames left out)" : "");
    for (size_t i = 0; i < n_top; i++) {
        quantity(vals[i], sizeof(vals[i]), d, p->sample_type, top[i].value);
        width = columns(vals[i]) > width ? columns(vals[i]) : width;
    }
    for (size_t i = 0; i < n_top; i++) {
        pg_debug_buf_printf(b, "        %*s%s", (int)(width - columns(vals[i])), "", vals[i]);
        if (total != 0) {
            pg_debug_buf_printf(b, " %5.1f%%  ", 100.0 * (double)top[i].value / (double)total);
        } else {
            pg_debug_put(b, "      -  ");
        }
        put_frame(b, d, &top[i].k);
        pg_debug_put(b, "\n");
    }
}

/* detailed: what the profile holds, after the collector's header lines. */
void pg_debug_annot_profile_lines(struct pg_debug_buf *b, const pg_otlp_dict *d,
                                  const pg_otlp_profile *p, struct pg_debug_frames *t)
{
    char name[256], q[64];
    long long total = profile_total(p);

    pg_debug_buf_printf(b, "    %-15s: %s\n", "Sample type",
                        pg_debug_value_type_name(name, sizeof(name), d, p->sample_type));
    if (p->period != 0 || value_type_set(p->period_type)) {
        pg_debug_buf_printf(b, "    %-15s: %s (%s)\n", "Period",
                            quantity(q, sizeof(q), d, p->period_type, p->period),
                            pg_debug_value_type_name(name, sizeof(name), d, p->period_type));
    } else {
        pg_debug_buf_printf(b, "    %-15s: none\n", "Period");
    }
    pg_debug_go_duration(q, sizeof(q), duration_ns(p->duration_nano));
    pg_debug_buf_printf(b, "    %-15s: %s\n", "Duration", q);
    pg_debug_buf_printf(b, "    %-15s: %s in %zu samples\n", "Total",
                        quantity(q, sizeof(q), d, p->sample_type, total), p->n_samples);
    if (d != NULL) {
        put_top_frames(b, d, p, total, t);
    }
}

/* pprofgate: one line per frame, leaf first; inline frames in line order. */
static void put_stack(struct pg_debug_buf *b, const pg_otlp_dict *d, int32_t si)
{
    const pg_otlp_stack *s;

    if (si == 0) {
        return;
    }
    if (d == NULL || si < 0 || (size_t)si >= d->n_stack_table || d->stack_table[si] == NULL) {
        pg_debug_buf_printf(b, "        Stack: [Missing Dictionary StackTable Item #%d]\n", si);
        return;
    }
    s = d->stack_table[si];
    pg_debug_buf_printf(b, "        Stack #%d:\n", si);
    for (size_t i = 0; i < s->n_location_indices; i++) {
        struct frame_key k;
        const pg_otlp_location *l = location_or_frame(d, s->location_indices[i], &k);

        for (size_t j = 0; l != NULL && j < l->n_lines; j++) {
            if (l->lines[j] != NULL) {
                k = line_frame(l->lines[j]);
                pg_debug_put(b, "            ");
                put_frame(b, d, &k);
                pg_debug_put(b, "\n");
            }
        }
        if (l == NULL) {
            pg_debug_put(b, "            ");
            put_frame(b, d, &k);
            pg_debug_put(b, "\n");
        }
    }
}


void pg_debug_annot_sample(struct pg_debug_buf *b, const pg_otlp_dict *d, const pg_otlp_sample *s)
{
    if (s->link_index != 0) {
        if (d == NULL || s->link_index < 0 || (size_t)s->link_index >= d->n_link_table ||
            d->link_table[s->link_index] == NULL) {
            pg_debug_buf_printf(b, "        Link: [Missing Dictionary LinkTable Item #%d]\n",
                                s->link_index);
        } else {
            const pg_otlp_link *l = d->link_table[s->link_index];

            pg_debug_buf_printf(b, "        Link #%d: trace_id=", s->link_index);
            pg_debug_put_hex(b, l->trace_id.data, l->trace_id.len);
            pg_debug_put(b, " span_id=");
            pg_debug_put_hex(b, l->span_id.data, l->span_id.len);
            pg_debug_put(b, "\n");
        }
    }
    put_stack(b, d, s->stack_index);
}

void pg_debug_annot_tables(struct pg_debug_buf *b, const pg_otlp_dict *d)
{
    if (d->n_attribute_table > 0) {
        pg_debug_put(b, "Attribute table:\n");
        for (size_t i = 0; i < d->n_attribute_table; i++) {
            const pg_otlp_kvu *a = d->attribute_table[i];

            if (a == NULL) {
                continue;
            }
            pg_debug_buf_printf(b, "    Attribute #%zu\n         -> Key: Int(%d)\n"
                                   "         -> Value: Str(",
                                i, a->key_strindex);
            pg_debug_put_as_string(b, a->value, d);
            pg_debug_buf_printf(b, ")\n         -> unit: Int(%d)\n", a->unit_strindex);
        }
    }
    if (d->n_link_table > 0) {
        pg_debug_put(b, "Link table:\n");
        for (size_t i = 0; i < d->n_link_table; i++) {
            const pg_otlp_link *l = d->link_table[i];

            if (l == NULL) {
                continue;
            }
            pg_debug_buf_printf(b, "    Link #%zu\n         -> Trace ID: Str(", i);
            pg_debug_put_hex(b, l->trace_id.data, l->trace_id.len);
            pg_debug_put(b, ")\n         -> Span ID: Str(");
            pg_debug_put_hex(b, l->span_id.data, l->span_id.len);
            pg_debug_put(b, ")\n");
        }
    }
}

void pg_debug_frames_free(struct pg_debug_frames *t)
{
    free(t->v);
    t->v = NULL;
    t->cap = t->n = 0;
}
