/* SPDX-License-Identifier: Apache-2.0
 * Import (merge) of entries from one ProfilesDictionary into a builder, with a
 * per-table remap so every source entry is interned once. */
#include "otlp/dict.h"
#include "otlp/dict_internal.h"

#include <string.h>

/* ---- import (merge) ----------------------------------------------------- */

struct pg_dict_remap {
    const struct pg_otlp_dict *src;
    int32_t *map[7]; /* per table: source index -> builder index + 1 (0 = not yet) */
};

enum { R_STR, R_FUNC, R_MAP, R_LOC, R_STACK, R_ATTR, R_LINK };

struct pg_dict_remap *pg_dict_remap_new(struct pg_arena *scratch, const struct pg_otlp_dict *src)
{
    struct pg_dict_remap *rm = pg_arena_zalloc(scratch, sizeof(*rm));
    size_t n[7];

    if (rm == NULL) {
        return NULL;
    }
    rm->src = src;
    n[R_STR] = src->n_string_table;
    n[R_FUNC] = src->n_function_table;
    n[R_MAP] = src->n_mapping_table;
    n[R_LOC] = src->n_location_table;
    n[R_STACK] = src->n_stack_table;
    n[R_ATTR] = src->n_attribute_table;
    n[R_LINK] = src->n_link_table;
    for (int i = 0; i < 7; i++) {
        rm->map[i] = pg_arena_calloc(scratch, n[i] ? n[i] : 1, sizeof(int32_t));
        if (rm->map[i] == NULL) {
            return NULL;
        }
    }
    return rm;
}

#define REMAP_BEGIN(tbl, count)                                                                    \
    if (idx < 0 || (size_t)idx >= (count)) {                                                     \
        return PG_DICT_RANGE;                                                                      \
    }                                                                                              \
    if (rm->map[tbl][idx] != 0) {                                                                  \
        return rm->map[tbl][idx] - 1;                                                              \
    }

static int32_t remap_end(struct pg_dict_remap *rm, int tbl, int32_t idx, int32_t r)
{
    if (r >= 0) {
        rm->map[tbl][idx] = r + 1;
    }
    return r;
}

int32_t pg_dict_import_string(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const char *s;

    REMAP_BEGIN(R_STR, rm->src->n_string_table);
    s = rm->src->string_table[idx] != NULL ? rm->src->string_table[idx] : "";
    return remap_end(rm, R_STR, idx, pg_dict_string(b, s, strlen(s)));
}

int32_t pg_dict_import_function(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_function *f;
    int32_t n, s, fn;

    REMAP_BEGIN(R_FUNC, rm->src->n_function_table);
    f = rm->src->function_table[idx];
    if ((n = pg_dict_import_string(b, rm, f->name_strindex)) < 0) {
        return n;
    }
    if ((s = pg_dict_import_string(b, rm, f->system_name_strindex)) < 0) {
        return s;
    }
    if ((fn = pg_dict_import_string(b, rm, f->filename_strindex)) < 0) {
        return fn;
    }
    return remap_end(rm, R_FUNC, idx, pg_dict_function(b, n, s, fn, f->start_line));
}

int pg_dict_import_attr_list(struct pg_dict_builder *b, struct pg_dict_remap *rm,
                             const int32_t *idx, size_t n, int32_t **out)
{
    int32_t stackbuf[32], *tmp = stackbuf;

    *out = NULL;
    if (n == 0) {
        return 0;
    }
    if (n > 32) {
        tmp = pg_arena_calloc(b->scratch, n, sizeof(int32_t));
        if (tmp == NULL) {
            return PG_DICT_NOMEM;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int32_t r = pg_dict_import_attr(b, rm, idx[i]);
        if (r < 0) {
            return r;
        }
        tmp[i] = r;
    }
    *out = (int32_t *)pg_dict_index_list(b, tmp, n);
    return *out != NULL ? 0 : PG_DICT_NOMEM;
}

int32_t pg_dict_import_mapping(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_mapping *m;
    int32_t fn, *attrs;
    int r;

    REMAP_BEGIN(R_MAP, rm->src->n_mapping_table);
    m = rm->src->mapping_table[idx];
    if ((fn = pg_dict_import_string(b, rm, m->filename_strindex)) < 0) {
        return fn;
    }
    r = pg_dict_import_attr_list(b, rm, m->attribute_indices, m->n_attribute_indices, &attrs);
    if (r < 0) {
        return r;
    }
    return remap_end(rm, R_MAP, idx,
                     pg_dict_mapping(b, m->memory_start, m->memory_limit, m->file_offset, fn,
                                     attrs, m->n_attribute_indices));
}

int32_t pg_dict_import_location(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_location *l;
    struct pg_dict_line *lines = NULL;
    int32_t mi, *attrs;
    int r;

    REMAP_BEGIN(R_LOC, rm->src->n_location_table);
    l = rm->src->location_table[idx];
    if ((mi = pg_dict_import_mapping(b, rm, l->mapping_index)) < 0) {
        return mi;
    }
    if (l->n_lines > 0) {
        lines = pg_arena_calloc(b->scratch, l->n_lines, sizeof(*lines));
        if (lines == NULL) {
            return PG_DICT_NOMEM;
        }
    }
    for (size_t i = 0; i < l->n_lines; i++) {
        int32_t f = pg_dict_import_function(b, rm, l->lines[i]->function_index);
        if (f < 0) {
            return f;
        }
        lines[i].function_index = f;
        lines[i].line = l->lines[i]->line;
        lines[i].column = l->lines[i]->column;
    }
    r = pg_dict_import_attr_list(b, rm, l->attribute_indices, l->n_attribute_indices, &attrs);
    if (r < 0) {
        return r;
    }
    return remap_end(rm, R_LOC, idx,
                     pg_dict_location(b, mi, l->address, lines, l->n_lines, attrs,
                                      l->n_attribute_indices));
}

int32_t pg_dict_import_stack(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_stack *s;
    int32_t stackbuf[64], *tmp = stackbuf;

    REMAP_BEGIN(R_STACK, rm->src->n_stack_table);
    s = rm->src->stack_table[idx];
    if (s->n_location_indices > 64) {
        tmp = pg_arena_calloc(b->scratch, s->n_location_indices, sizeof(int32_t));
        if (tmp == NULL) {
            return PG_DICT_NOMEM;
        }
    }
    for (size_t i = 0; i < s->n_location_indices; i++) {
        int32_t r = pg_dict_import_location(b, rm, s->location_indices[i]);
        if (r < 0) {
            return r;
        }
        tmp[i] = r;
    }
    return remap_end(rm, R_STACK, idx, pg_dict_stack(b, tmp, s->n_location_indices));
}

/* Copies an AnyValue, re-pointing string_value_strindex / key_strindex into the builder. */
static int import_any(struct pg_dict_builder *b, struct pg_dict_remap *rm,
                      const struct pg_otlp_anyvalue *v, struct pg_otlp_anyvalue **out,
                      unsigned depth);

static int import_kv(struct pg_dict_builder *b, struct pg_dict_remap *rm,
                     const struct pg_otlp_kv *kv, struct pg_otlp_kv **out, unsigned depth)
{
    struct pg_otlp_kv *c = pg_arena_alloc(b->scratch, sizeof(*c));
    int r;

    if (c == NULL) {
        return PG_DICT_NOMEM;
    }
    *c = *kv;
    if (kv->key_strindex != 0) {
        int32_t k = pg_dict_import_string(b, rm, kv->key_strindex);
        if (k < 0) {
            return k;
        }
        c->key_strindex = k;
    }
    if (kv->value != NULL && (r = import_any(b, rm, kv->value, &c->value, depth + 1)) < 0) {
        return r;
    }
    *out = c;
    return 0;
}

static int import_any(struct pg_dict_builder *b, struct pg_dict_remap *rm,
                      const struct pg_otlp_anyvalue *v, struct pg_otlp_anyvalue **out,
                      unsigned depth)
{
    struct pg_otlp_anyvalue *c;
    int r;

    if (depth > 64) {
        return PG_DICT_RANGE;
    }
    if (v->value_case != PG_OTLP_ANYVALUE_STRINDEX && v->value_case != PG_OTLP_ANYVALUE_ARRAY &&
        v->value_case != PG_OTLP_ANYVALUE_KVLIST) {
        *out = (struct pg_otlp_anyvalue *)v; /* copied by pg_dict_attr when new */
        return 0;
    }
    c = pg_arena_alloc(b->scratch, sizeof(*c));
    if (c == NULL) {
        return PG_DICT_NOMEM;
    }
    *c = *v;
    if (v->value_case == PG_OTLP_ANYVALUE_STRINDEX) {
        int32_t s = pg_dict_import_string(b, rm, v->string_value_strindex);
        if (s < 0) {
            return s;
        }
        c->string_value_strindex = s;
    } else if (v->value_case == PG_OTLP_ANYVALUE_ARRAY && v->array_value != NULL) {
        struct pg_otlp_array *arr = pg_arena_alloc(b->scratch, sizeof(*arr));
        if (arr == NULL) {
            return PG_DICT_NOMEM;
        }
        *arr = *v->array_value;
        arr->values = pg_arena_calloc(b->scratch, arr->n_values ? arr->n_values : 1,
                                      sizeof(*arr->values));
        if (arr->values == NULL) {
            return PG_DICT_NOMEM;
        }
        for (size_t i = 0; i < arr->n_values; i++) {
            if ((r = import_any(b, rm, v->array_value->values[i], &arr->values[i], depth + 1)) <
                0) {
                return r;
            }
        }
        c->array_value = arr;
    } else if (v->value_case == PG_OTLP_ANYVALUE_KVLIST && v->kvlist_value != NULL) {
        struct pg_otlp_kvlist *kl = pg_arena_alloc(b->scratch, sizeof(*kl));
        if (kl == NULL) {
            return PG_DICT_NOMEM;
        }
        *kl = *v->kvlist_value;
        kl->values = pg_arena_calloc(b->scratch, kl->n_values ? kl->n_values : 1,
                                     sizeof(*kl->values));
        if (kl->values == NULL) {
            return PG_DICT_NOMEM;
        }
        for (size_t i = 0; i < kl->n_values; i++) {
            if ((r = import_kv(b, rm, v->kvlist_value->values[i], &kl->values[i], depth + 1)) <
                0) {
                return r;
            }
        }
        c->kvlist_value = kl;
    }
    *out = c;
    return 0;
}

int32_t pg_dict_import_attr(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_kvu *a;
    struct pg_otlp_anyvalue *v = NULL;
    int32_t k, u;
    int r;

    REMAP_BEGIN(R_ATTR, rm->src->n_attribute_table);
    a = rm->src->attribute_table[idx];
    if ((k = pg_dict_import_string(b, rm, a->key_strindex)) < 0) {
        return k;
    }
    if ((u = pg_dict_import_string(b, rm, a->unit_strindex)) < 0) {
        return u;
    }
    if (a->value != NULL && (r = import_any(b, rm, a->value, &v, 0)) < 0) {
        return r;
    }
    return remap_end(rm, R_ATTR, idx, pg_dict_attr(b, k, v, u));
}

int32_t pg_dict_import_link(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx)
{
    const struct pg_otlp_link *l;
    uint8_t t[16] = {0}, s[8] = {0};

    REMAP_BEGIN(R_LINK, rm->src->n_link_table);
    l = rm->src->link_table[idx];
    if (l->trace_id.len == 16) {
        memcpy(t, l->trace_id.data, 16);
    }
    if (l->span_id.len == 8) {
        memcpy(s, l->span_id.data, 8);
    }
    return remap_end(rm, R_LINK, idx, pg_dict_link(b, t, s));
}
