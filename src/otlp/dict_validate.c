/* SPDX-License-Identifier: Apache-2.0
 * Validation of a whole OTLP request against its dictionary: index 0 of every
 * table is the zero value, every index in range, no repeated attribute keys
 * in one list, ids of the right length, the caps of struct pg_otlp_limits,
 * optionally no duplicate entries. The first violation is reported with its
 * field path and values ("resource_profiles[0]...samples[7].stack_index 12
 * is past stack_table (10 entries)"). Strings are not looked at here (the
 * UTF-8 repair is otlp_decode.c's). */
#include "otlp/dict.h"
#include "otlp/otlp_decode.h"
#include "otlp/otlp_lazy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the check is: up to six (name, index) steps, formatted only when a
 * check fails so the per-sample cost is a few stores. */
#define PATH_MAX_STEPS 6
#define NO_INDEX SIZE_MAX

struct vctx {
    const struct pg_otlp_dict *d;
    const struct pg_otlp_limits *lim;
    struct pg_arena *scratch;
    struct pg_status *st;
    size_t anyvalue_depth; /* cap on array/kvlist nesting */
    struct {
        const char *name;
        size_t idx;
    } path[PATH_MAX_STEPS];
    unsigned depth;
    int32_t *keybuf; /* scratch for sorting key lists */
    size_t keybuf_n;
    /* Links, counting those kept in wire form (otlp_lazy.h), and the first of them. */
    size_t n_links;
    const struct pg_otlp_link *link0;
    struct pg_otlp_link link0_buf;
};

static void path_set(struct vctx *v, unsigned at, const char *name, size_t idx)
{
    v->path[at].name = name;
    v->path[at].idx = idx;
    v->depth = at + 1;
}

/* "a[1].b[2]." + @field into @buf. */
static const char *path_fmt(const struct vctx *v, const char *field, char *buf, size_t n)
{
    size_t off = 0;

    buf[0] = '\0';
    for (unsigned i = 0; i < v->depth && off < n; i++) {
        int w = v->path[i].idx == NO_INDEX
                    ? snprintf(buf + off, n - off, "%s.", v->path[i].name)
                    : snprintf(buf + off, n - off, "%s[%zu].", v->path[i].name, v->path[i].idx);
        off += w > 0 ? (size_t)w : 0;
    }
    if (field[0] == '\0' && off > 0 && off < n && buf[off - 1] == '.') {
        buf[off - 1] = '\0'; /* the message itself, not one of its fields */
    } else if (off < n) {
        snprintf(buf + off, n - off, "%s", field);
    }
    return buf;
}

static enum pg_err bad_index(const struct vctx *v, const char *field, int64_t val,
                             const char *table, size_t n)
{
    char p[192];
    if (val < 0) {
        return pg_status_set(v->st, PG_ERR_MALFORMED, "%s %lld is negative",
                             path_fmt(v, field, p, sizeof(p)), (long long)val);
    }
    return pg_status_set(v->st, PG_ERR_MALFORMED, "%s %lld is past %s (%zu entries)",
                         path_fmt(v, field, p, sizeof(p)), (long long)val, table, n);
}

static enum pg_err over_cap(const struct vctx *v, const char *field, size_t n, const char *what,
                            size_t cap, const char *key)
{
    char p[192];
    return pg_status_set(v->st, PG_ERR_LIMIT, "%s has %zu %s, over the limit %s=%zu",
                         path_fmt(v, field, p, sizeof(p)), n, what, key, cap);
}

#define CHECK_IDX(v, val, n, field, table)                                                         \
    do {                                                                                           \
        if ((val) < 0 || (size_t)(val) >= (n)) {                                                   \
            return bad_index((v), (field), (int64_t)(val), (table), (n));                          \
        }                                                                                          \
    } while (0)

#define CHECK_CAP(v, n, cap, field, what, key)                                                     \
    do {                                                                                           \
        if ((cap) != 0 && (n) > (cap)) {                                                           \
            return over_cap((v), (field), (n), (what), (cap), (key));                              \
        }                                                                                          \
    } while (0)

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        enum pg_err e_ = (expr);                                                                   \
        if (e_ != PG_ERR_OK) {                                                                     \
            return e_;                                                                             \
        }                                                                                          \
    } while (0)

/* protobuf-c keeps a field numbered 0 (or past 2^29-1) as an unknown field, writes it back,
 * and then refuses the bytes it wrote; Go refuses them too. The wire walk of otlp_decode.c
 * skips the small leaf messages (samples, stacks, locations, ...), so they are looked at
 * here, where every one of them is visited anyway. */
static enum pg_err check_unknown(const struct vctx *v, const ProtobufCMessage *m,
                                 const char *field)
{
    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        uint32_t tag = m->unknown_fields[i].tag;
        if (tag == 0 || tag > 0x1fffffffu) {
            char p[192];
            return pg_status_set(v->st, PG_ERR_MALFORMED, "%s has a field numbered %u",
                                 path_fmt(v, field, p, sizeof(p)), tag);
        }
    }
    return PG_ERR_OK;
}

#define CHECK_UNKNOWN(v, m, field)                                                                 \
    do {                                                                                           \
        if ((m)->base.n_unknown_fields != 0) {                                                     \
            TRY(check_unknown((v), &(m)->base, (field)));                                          \
        }                                                                                          \
    } while (0)

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* attribute_indices of one sample/profile/location/mapping: each in range, keys unique.
 * Short lists compare pairwise; longer ones sort a copy of their keys (no quadratic cost
 * for a hostile list of 100 000 indices). */
static enum pg_err check_attr_list(struct vctx *v, const int32_t *idx, size_t n,
                                   const char *field)
{
    const struct pg_otlp_dict *d = v->d;

    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0 || (size_t)idx[i] >= d->n_attribute_table) {
            char f[64];
            snprintf(f, sizeof(f), "%s[%zu]", field, i);
            return bad_index(v, f, idx[i], "attribute_table", d->n_attribute_table);
        }
    }
    if (n <= 8) {
        for (size_t i = 1; i < n; i++) {
            int32_t ki = d->attribute_table[idx[i]]->key_strindex;
            for (size_t j = 0; j < i; j++) {
                if (d->attribute_table[idx[j]]->key_strindex == ki) {
                    char p[192];
                    return pg_status_set(v->st, PG_ERR_MALFORMED,
                                         "%s repeats key \"%.64s\" (attributes %d and %d)",
                                         path_fmt(v, field, p, sizeof(p)),
                                         (size_t)ki < d->n_string_table ? d->string_table[ki] : "?",
                                         idx[j], idx[i]);
                }
            }
        }
        return PG_ERR_OK;
    }
    if (n > v->keybuf_n) {
        size_t cap = n < 64 ? 64 : n;
        v->keybuf = pg_arena_calloc(v->scratch, cap, sizeof(int32_t));
        if (v->keybuf == NULL) {
            v->keybuf_n = 0;
            return pg_status_set(v->st, PG_ERR_NOMEM, "otlp: no memory to check attribute keys");
        }
        v->keybuf_n = cap;
    }
    for (size_t i = 0; i < n; i++) {
        v->keybuf[i] = d->attribute_table[idx[i]]->key_strindex;
    }
    qsort(v->keybuf, n, sizeof(int32_t), cmp_i32);
    for (size_t i = 1; i < n; i++) {
        if (v->keybuf[i] == v->keybuf[i - 1]) {
            char p[192];
            int32_t k = v->keybuf[i];
            return pg_status_set(v->st, PG_ERR_MALFORMED, "%s repeats key \"%.64s\"",
                                 path_fmt(v, field, p, sizeof(p)),
                                 (size_t)k < d->n_string_table ? d->string_table[k] : "?");
        }
    }
    return PG_ERR_OK;
}

/* Where in an attribute list a value sits, named only when a check fails: @list[@idx].value
 * (@idx NO_INDEX: @list is the whole name, as for a dictionary attribute's "value"). Values
 * nested in kvlists and arrays are reported at their outermost attribute. */
struct where {
    const char *list;
    size_t idx;
};

static const char *where_fmt(struct where w, const char *suffix, char *buf, size_t n)
{
    if (w.idx == NO_INDEX) {
        snprintf(buf, n, "%s%s", w.list, suffix);
    } else {
        snprintf(buf, n, "%s[%zu].value%s", w.list, w.idx, suffix);
    }
    return buf;
}

static enum pg_err check_kv_list(struct vctx *v, struct pg_otlp_kv **kvs, size_t n,
                                 const char *field, const struct where *outer, size_t depth);

/* An AnyValue: string_value_strindex in range, nested arrays/kvlists within the depth cap. */
static enum pg_err check_anyvalue(struct vctx *v, const struct pg_otlp_anyvalue *av,
                                  struct where w, size_t depth)
{
    char f[128], p[192];

    if (av == NULL) {
        return PG_ERR_OK;
    }
    switch (av->value_case) {
    case PG_OTLP_ANYVALUE_STRINDEX:
        if (av->string_value_strindex < 0 ||
            (size_t)av->string_value_strindex >= v->d->n_string_table) {
            return bad_index(v, where_fmt(w, ".string_value_strindex", f, sizeof(f)),
                             av->string_value_strindex, "string_table", v->d->n_string_table);
        }
        return PG_ERR_OK;
    case PG_OTLP_ANYVALUE_ARRAY:
    case PG_OTLP_ANYVALUE_KVLIST:
        if (depth + 1 > v->anyvalue_depth) {
            return pg_status_set(v->st, PG_ERR_LIMIT,
                                 "%s nests arrays/kvlists deeper than max_anyvalue_depth=%zu",
                                 path_fmt(v, where_fmt(w, "", f, sizeof(f)), p, sizeof(p)),
                                 v->anyvalue_depth);
        }
        if (av->value_case == PG_OTLP_ANYVALUE_KVLIST) {
            return av->kvlist_value == NULL
                       ? PG_ERR_OK
                       : check_kv_list(v, av->kvlist_value->values, av->kvlist_value->n_values,
                                       NULL, &w, depth + 1);
        }
        if (av->array_value != NULL) {
            for (size_t i = 0; i < av->array_value->n_values; i++) {
                TRY(check_anyvalue(v, av->array_value->values[i], w, depth + 1));
            }
        }
        return PG_ERR_OK;
    default:
        return PG_ERR_OK;
    }
}

/* The key of a KeyValue as text (key or string_table[key_strindex]); NULL when the index
 * is out of range. */
static const char *kv_key(const struct vctx *v, const struct pg_otlp_kv *kv)
{
    if (kv->key_strindex == 0) {
        return kv->key != NULL ? kv->key : "";
    }
    if (kv->key_strindex < 0 || (size_t)kv->key_strindex >= v->d->n_string_table) {
        return NULL;
    }
    return v->d->string_table[kv->key_strindex];
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Resource/scope attributes (@field, e.g. "attributes") and kvlist values (reported at
 * @outer): key xor key_strindex, indices in range, keys unique (sorted copy past 8
 * entries), values checked. */
static enum pg_err check_kv_list(struct vctx *v, struct pg_otlp_kv **kvs, size_t n,
                                 const char *field, const struct where *outer, size_t depth)
{
    const char **keys = NULL;
    char f[128], p[192];

    for (size_t i = 0; i < n; i++) {
        const struct pg_otlp_kv *kv = kvs[i];
        struct where w = outer != NULL ? *outer : (struct where){field, i};
        if (kv->key_strindex != 0) {
            if (kv->key != NULL && kv->key[0] != '\0') {
                if (outer == NULL) {
                    snprintf(f, sizeof(f), "%s[%zu]", field, i);
                } else {
                    where_fmt(*outer, " (a nested KeyValue)", f, sizeof(f));
                }
                return pg_status_set(v->st, PG_ERR_MALFORMED,
                                     "%s sets both key \"%.64s\" and key_strindex %d",
                                     path_fmt(v, f, p, sizeof(p)), kv->key, kv->key_strindex);
            }
            if (kv_key(v, kv) == NULL) {
                if (outer == NULL) {
                    snprintf(f, sizeof(f), "%s[%zu].key_strindex", field, i);
                } else {
                    where_fmt(*outer, " (nested) key_strindex", f, sizeof(f));
                }
                return bad_index(v, f, kv->key_strindex, "string_table", v->d->n_string_table);
            }
        }
        TRY(check_anyvalue(v, kv->value, w, depth));
    }
    if (outer != NULL) {
        where_fmt(*outer, ".kvlist_value", f, sizeof(f));
        field = f;
    }
    if (n <= 8) {
        for (size_t i = 1; i < n; i++) {
            for (size_t j = 0; j < i; j++) {
                if (strcmp(kv_key(v, kvs[i]), kv_key(v, kvs[j])) == 0) {
                    return pg_status_set(v->st, PG_ERR_MALFORMED,
                                         "%s repeats key \"%.64s\" (entries %zu and %zu)",
                                         path_fmt(v, field, p, sizeof(p)), kv_key(v, kvs[i]), j,
                                         i);
                }
            }
        }
        return PG_ERR_OK;
    }
    keys = pg_arena_calloc(v->scratch, n, sizeof(*keys));
    if (keys == NULL) {
        return pg_status_set(v->st, PG_ERR_NOMEM, "otlp: no memory to check attribute keys");
    }
    for (size_t i = 0; i < n; i++) {
        keys[i] = kv_key(v, kvs[i]);
    }
    qsort(keys, n, sizeof(*keys), cmp_str);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(keys[i], keys[i - 1]) == 0) {
            return pg_status_set(v->st, PG_ERR_MALFORMED, "%s repeats key \"%.64s\"",
                                 path_fmt(v, field, p, sizeof(p)), keys[i]);
        }
    }
    return PG_ERR_OK;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0) {
            return false;
        }
    }
    return true;
}

/* Index 0 of every table present and the zero value. */
static enum pg_err check_zero_entries(struct vctx *v)
{
    const struct pg_otlp_dict *d = v->d;
    const char *missing = d->n_string_table == 0     ? "string_table"
                          : d->n_mapping_table == 0   ? "mapping_table"
                          : d->n_location_table == 0  ? "location_table"
                          : d->n_function_table == 0  ? "function_table"
                          : v->n_links == 0           ? "link_table"
                          : d->n_attribute_table == 0 ? "attribute_table"
                          : d->n_stack_table == 0     ? "stack_table"
                                                      : NULL;
    const char *nonzero = NULL;

    if (missing != NULL) {
        return pg_status_set(v->st, PG_ERR_MALFORMED,
                             "dictionary.%s is empty: index 0 must hold the zero value", missing);
    }
    {
        const struct pg_otlp_mapping *m = d->mapping_table[0];
        const struct pg_otlp_location *l = d->location_table[0];
        const struct pg_otlp_function *f = d->function_table[0];
        const struct pg_otlp_link *k = v->link0;
        const struct pg_otlp_kvu *a = d->attribute_table[0];
        if (d->string_table[0][0] != '\0') {
            return pg_status_set(v->st, PG_ERR_MALFORMED,
                                 "dictionary.string_table[0] is \"%.64s\", not the empty string",
                                 d->string_table[0]);
        }
        if (m->memory_start || m->memory_limit || m->file_offset || m->filename_strindex ||
            m->n_attribute_indices) {
            nonzero = "mapping_table";
        } else if (l->mapping_index || l->address || l->n_lines || l->n_attribute_indices) {
            nonzero = "location_table";
        } else if (f->name_strindex || f->system_name_strindex || f->filename_strindex ||
                   f->start_line) {
            nonzero = "function_table";
        } else if (a->key_strindex || a->unit_strindex ||
                   (a->value != NULL && a->value->value_case != PG_OTLP_ANYVALUE_NONE)) {
            nonzero = "attribute_table";
        } else if (d->stack_table[0]->n_location_indices) {
            nonzero = "stack_table";
        } else if ((k->trace_id.len != 0 &&
                    (k->trace_id.len != 16 || !all_zero(k->trace_id.data, 16))) ||
                   (k->span_id.len != 0 && (k->span_id.len != 8 || !all_zero(k->span_id.data, 8)))) {
            nonzero = "link_table";
        }
    }
    if (nonzero != NULL) {
        return pg_status_set(v->st, PG_ERR_MALFORMED, "dictionary.%s[0] is not the zero value",
                             nonzero);
    }
    return PG_ERR_OK;
}

static enum pg_err check_table_caps(struct vctx *v)
{
    const struct pg_otlp_dict *d = v->d;
    const struct pg_otlp_limits *L = v->lim;

    if (L == NULL) {
        return PG_ERR_OK;
    }
    path_set(v, 0, "dictionary", NO_INDEX);
    CHECK_CAP(v, d->n_string_table, L->max_strings, "string_table", "entries", "max_strings");
    CHECK_CAP(v, d->n_location_table, L->max_locations, "location_table", "entries",
              "max_locations");
    CHECK_CAP(v, d->n_function_table, L->max_functions, "function_table", "entries",
              "max_functions");
    CHECK_CAP(v, d->n_mapping_table, L->max_mappings, "mapping_table", "entries", "max_mappings");
    CHECK_CAP(v, d->n_stack_table, L->max_stacks, "stack_table", "entries", "max_stacks");
    CHECK_CAP(v, d->n_attribute_table, L->max_attributes, "attribute_table", "entries",
              "max_attributes");
    CHECK_CAP(v, v->n_links, L->max_links, "link_table", "entries", "max_links");
    return PG_ERR_OK;
}

static inline __attribute__((always_inline)) enum pg_err check_link(struct vctx *v,
                                                                   const struct pg_otlp_link *k)
{
    char p[192];

    CHECK_UNKNOWN(v, k, "");
    /* Go peers refuse the whole message for any other length. */
    if (k->trace_id.len != 0 && k->trace_id.len != 16) {
        return pg_status_set(v->st, PG_ERR_MALFORMED, "%s is %zu bytes, not 16",
                             path_fmt(v, "trace_id", p, sizeof(p)), k->trace_id.len);
    }
    if (k->span_id.len != 0 && k->span_id.len != 8) {
        return pg_status_set(v->st, PG_ERR_MALFORMED, "%s is %zu bytes, not 8",
                             path_fmt(v, "span_id", p, sizeof(p)), k->span_id.len);
    }
    return PG_ERR_OK;
}

/* Links kept in wire form: each read in turn (ids pointing into the records) and put
 * through check_link, after the struct ones as on the wire. */
static enum pg_err check_lazy_links(struct vctx *v)
{
    const struct pg_otlp_lazy *lz = pg_otlp_lazy_links(v->d);
    struct pg_otlp_lazy_iter it;
    struct pg_otlp_link k;
    enum pg_err err = PG_ERR_OK;
    int rc;

    if (lz == NULL) {
        return PG_ERR_OK;
    }
    pg_otlp_lazy_iter_init(&it, lz);
    while ((rc = pg_otlp_lazy_next_link(&it, &k, v->st)) == 1) {
        path_set(v, 1, "link_table", v->d->n_link_table + it.i - 1);
        if ((err = check_link(v, &k)) != PG_ERR_OK) {
            break;
        }
    }
    pg_otlp_lazy_iter_done(&it);
    return rc < 0 ? v->st->code : err;
}

static enum pg_err check_dictionary(struct vctx *v)
{
    const struct pg_otlp_dict *d = v->d;
    size_t max_depth = v->lim != NULL ? v->lim->max_stack_depth : 0;

    path_set(v, 0, "dictionary", NO_INDEX);
    for (size_t i = 0; i < d->n_mapping_table; i++) {
        const struct pg_otlp_mapping *m = d->mapping_table[i];
        path_set(v, 1, "mapping_table", i);
        CHECK_UNKNOWN(v, m, "");
        CHECK_IDX(v, m->filename_strindex, d->n_string_table, "filename_strindex",
                  "string_table");
        TRY(check_attr_list(v, m->attribute_indices, m->n_attribute_indices,
                            "attribute_indices"));
    }
    for (size_t i = 0; i < d->n_function_table; i++) {
        const struct pg_otlp_function *f = d->function_table[i];
        path_set(v, 1, "function_table", i);
        CHECK_UNKNOWN(v, f, "");
        CHECK_IDX(v, f->name_strindex, d->n_string_table, "name_strindex", "string_table");
        CHECK_IDX(v, f->system_name_strindex, d->n_string_table, "system_name_strindex",
                  "string_table");
        CHECK_IDX(v, f->filename_strindex, d->n_string_table, "filename_strindex",
                  "string_table");
    }
    for (size_t i = 0; i < d->n_location_table; i++) {
        const struct pg_otlp_location *l = d->location_table[i];
        path_set(v, 1, "location_table", i);
        CHECK_UNKNOWN(v, l, "");
        CHECK_IDX(v, l->mapping_index, d->n_mapping_table, "mapping_index", "mapping_table");
        for (size_t j = 0; j < l->n_lines; j++) {
            path_set(v, 2, "lines", j);
            CHECK_UNKNOWN(v, l->lines[j], "");
            CHECK_IDX(v, l->lines[j]->function_index, d->n_function_table, "function_index",
                      "function_table");
        }
        path_set(v, 1, "location_table", i);
        TRY(check_attr_list(v, l->attribute_indices, l->n_attribute_indices,
                            "attribute_indices"));
    }
    for (size_t i = 0; i < d->n_stack_table; i++) {
        const struct pg_otlp_stack *s = d->stack_table[i];
        path_set(v, 1, "stack_table", i);
        CHECK_UNKNOWN(v, s, "");
        CHECK_CAP(v, s->n_location_indices, max_depth, "location_indices", "locations",
                  "max_stack_depth");
        for (size_t j = 0; j < s->n_location_indices; j++) {
            if (s->location_indices[j] < 0 ||
                (size_t)s->location_indices[j] >= d->n_location_table) {
                char f[48];
                snprintf(f, sizeof(f), "location_indices[%zu]", j);
                return bad_index(v, f, s->location_indices[j], "location_table",
                                 d->n_location_table);
            }
        }
    }
    for (size_t i = 0; i < d->n_attribute_table; i++) {
        const struct pg_otlp_kvu *a = d->attribute_table[i];
        path_set(v, 1, "attribute_table", i);
        CHECK_IDX(v, a->key_strindex, d->n_string_table, "key_strindex", "string_table");
        CHECK_IDX(v, a->unit_strindex, d->n_string_table, "unit_strindex", "string_table");
        TRY(check_anyvalue(v, a->value, (struct where){"value", NO_INDEX}, 0));
    }
    for (size_t i = 0; i < d->n_link_table; i++) {
        path_set(v, 1, "link_table", i);
        TRY(check_link(v, d->link_table[i]));
    }
    return check_lazy_links(v);
}

static enum pg_err check_valuetype(struct vctx *v, const struct pg_otlp_valuetype *vt,
                                   const char *field)
{
    char f[48];
    size_t n = v->d->n_string_table;

    if (vt == NULL) {
        return PG_ERR_OK;
    }
    CHECK_UNKNOWN(v, vt, field);
    if (vt->type_strindex < 0 || (size_t)vt->type_strindex >= n) {
        snprintf(f, sizeof(f), "%s.type_strindex", field);
        return bad_index(v, f, vt->type_strindex, "string_table", n);
    }
    if (vt->unit_strindex < 0 || (size_t)vt->unit_strindex >= n) {
        snprintf(f, sizeof(f), "%s.unit_strindex", field);
        return bad_index(v, f, vt->unit_strindex, "string_table", n);
    }
    return PG_ERR_OK;
}

/* Inlined in both callers: a call per sample cost the SDK-sized request ~2 % (callgrind). */
static inline __attribute__((always_inline)) enum pg_err check_sample(struct vctx *v,
                                                                     const struct pg_otlp_sample *sm)
{
    const struct pg_otlp_dict *d = v->d;
    const struct pg_otlp_limits *L = v->lim;
    char p[192];

    CHECK_UNKNOWN(v, sm, "");
    CHECK_IDX(v, sm->stack_index, d->n_stack_table, "stack_index", "stack_table");
    CHECK_IDX(v, sm->link_index, v->n_links, "link_index", "link_table");
    if (L != NULL) {
        CHECK_CAP(v, sm->n_attribute_indices, L->max_attrs_per_sample, "attribute_indices",
                  "entries", "max_attrs_per_sample");
        CHECK_CAP(v, sm->n_values, L->max_sample_values, "values", "entries",
                  "max_sample_values");
        CHECK_CAP(v, sm->n_timestamps_unix_nano, L->max_sample_values, "timestamps_unix_nano",
                  "entries", "max_sample_values");
    }
    if (sm->n_values != 0 && sm->n_timestamps_unix_nano != 0 &&
        sm->n_values != sm->n_timestamps_unix_nano) {
        return pg_status_set(v->st, PG_ERR_MALFORMED,
                             "%s: %zu values but %zu timestamps_unix_nano (must be equal when "
                             "both are set)",
                             path_fmt(v, "", p, sizeof(p)), sm->n_values,
                             sm->n_timestamps_unix_nano);
    }
    return check_attr_list(v, sm->attribute_indices, sm->n_attribute_indices,
                           "attribute_indices");
}

/* Samples kept in wire form (otlp_lazy.h): each unpacked in turn into a scratch Sample and
 * put through the same check, so the rules and messages are the eager path's. They follow
 * the profile's struct samples, as on the wire. */
static enum pg_err check_lazy_samples(struct vctx *v, const struct pg_otlp_profile *pr)
{
    const struct pg_otlp_lazy *lz = pg_otlp_lazy_of(pr);
    struct pg_otlp_lazy_iter it;
    struct pg_otlp_sample s;
    enum pg_err err = PG_ERR_OK;
    int rc;

    if (lz == NULL) {
        return PG_ERR_OK;
    }
    pg_otlp_lazy_iter_init(&it, lz);
    while ((rc = pg_otlp_lazy_next(&it, &s, v->st)) == 1) {
        path_set(v, 3, "samples", pr->n_samples + it.i - 1);
        if ((err = check_sample(v, &s)) != PG_ERR_OK) {
            break;
        }
    }
    pg_otlp_lazy_iter_done(&it);
    return rc < 0 ? v->st->code : err;
}

static enum pg_err check_profile(struct vctx *v, const struct pg_otlp_profile *pr)
{
    char p[192];

    TRY(check_valuetype(v, pr->sample_type, "sample_type"));
    TRY(check_valuetype(v, pr->period_type, "period_type"));
    if (pr->profile_id.len != 0 && pr->profile_id.len != 16) {
        return pg_status_set(v->st, PG_ERR_MALFORMED, "%s is %zu bytes, not 16",
                             path_fmt(v, "profile_id", p, sizeof(p)), pr->profile_id.len);
    }
    if ((pr->original_payload_format != NULL && pr->original_payload_format[0] != '\0') !=
        (pr->original_payload.len != 0)) {
        return pg_status_set(v->st, PG_ERR_MALFORMED,
                             "%s: original_payload_format and original_payload must be set "
                             "together",
                             path_fmt(v, "", p, sizeof(p)));
    }
    TRY(check_attr_list(v, pr->attribute_indices, pr->n_attribute_indices, "attribute_indices"));
    for (size_t i = 0; i < pr->n_samples; i++) {
        path_set(v, 3, "samples", i);
        TRY(check_sample(v, pr->samples[i]));
    }
    return pr->base.n_unknown_fields != 0 ? check_lazy_samples(v, pr) : PG_ERR_OK;
}

static enum pg_err check_profiles(struct vctx *v, const struct pg_otlp_request *req)
{
    const struct pg_otlp_limits *L = v->lim;
    size_t n_profiles = 0, n_samples = 0;

    for (size_t r = 0; r < req->n_resource_profiles; r++) {
        const struct pg_otlp_resprof *rp = req->resource_profiles[r];
        path_set(v, 0, "resource_profiles", r);
        if (rp->resource != NULL) {
            path_set(v, 1, "resource", NO_INDEX);
            TRY(check_kv_list(v, rp->resource->attributes, rp->resource->n_attributes,
                              "attributes", NULL, 0));
        }
        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            const struct pg_otlp_scopeprof *sp = rp->scope_profiles[s];
            path_set(v, 1, "scope_profiles", s);
            if (sp->scope != NULL) {
                path_set(v, 2, "scope", NO_INDEX);
                TRY(check_kv_list(v, sp->scope->attributes, sp->scope->n_attributes,
                                  "attributes", NULL, 0));
            }
            for (size_t k = 0; k < sp->n_profiles; k++) {
                const struct pg_otlp_profile *pr = sp->profiles[k];
                path_set(v, 2, "profiles", k);
                n_profiles++;
                n_samples += pg_otlp_profile_sample_count(pr);
                if (L != NULL && L->max_profiles != 0 && n_profiles > L->max_profiles) {
                    return pg_status_set(v->st, PG_ERR_LIMIT,
                                         "the request has more than max_profiles=%zu profiles",
                                         L->max_profiles);
                }
                if (L != NULL && L->max_samples != 0 && n_samples > L->max_samples) {
                    return pg_status_set(v->st, PG_ERR_LIMIT,
                                         "the request has more than max_samples=%zu samples "
                                         "(%zu up to resource_profiles[%zu].scope_profiles[%zu]."
                                         "profiles[%zu])",
                                         L->max_samples, n_samples, r, s, k);
                }
                TRY(check_profile(v, pr));
            }
        }
    }
    return PG_ERR_OK;
}

/* Re-interns every entry into a fresh builder, dependencies first: an entry that lands on an
 * earlier index duplicates it. */
static enum pg_err check_no_duplicates(struct pg_arena *scratch, const struct pg_otlp_dict *d,
                                       struct pg_status *st)
{
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
                                     "dictionary.%s_table[%zu] duplicates entry %d",
                                     tabs[t].name, i, r);
            }
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_dict_validate_limits(struct pg_arena *scratch, const struct pg_otlp_request *req,
                                    bool no_duplicates, const struct pg_otlp_limits *limits,
                                    struct pg_status *st)
{
    struct vctx v;

    memset(&v, 0, sizeof(v));
    v.d = req->dictionary;
    v.lim = limits;
    v.scratch = scratch;
    v.st = st;
    v.anyvalue_depth = limits != NULL && limits->max_anyvalue_depth != 0
                           ? limits->max_anyvalue_depth
                           : 16;
    if (v.d == NULL) {
        return pg_status_set(st, PG_ERR_MALFORMED, "the request has no dictionary");
    }
    v.n_links = pg_otlp_dict_link_count(v.d);
    if (v.d->n_link_table > 0) {
        v.link0 = v.d->link_table[0];
    } else if (v.n_links > 0) { /* all in wire form: the first read for the zero check */
        struct pg_otlp_lazy_iter it;
        pg_otlp_lazy_iter_init(&it, pg_otlp_lazy_links(v.d));
        if (pg_otlp_lazy_next_link(&it, &v.link0_buf, st) != 1) {
            return st->code != PG_ERR_OK ? st->code
                                         : pg_status_set(st, PG_ERR_MALFORMED, "no link record");
        }
        v.link0 = &v.link0_buf;
    }
    TRY(check_table_caps(&v));
    TRY(check_zero_entries(&v));
    TRY(check_dictionary(&v));
    TRY(check_profiles(&v, req));
    return no_duplicates ? check_no_duplicates(scratch, v.d, st) : PG_ERR_OK;
}

enum pg_err pg_dict_validate(struct pg_arena *scratch, const struct pg_otlp_request *req,
                             bool no_duplicates, struct pg_status *st)
{
    return pg_dict_validate_limits(scratch, req, no_duplicates, NULL, st);
}
