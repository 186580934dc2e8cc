/* SPDX-License-Identifier: Apache-2.0
 * pprof entities into the OTLP dictionary: mappings (with their build id and
 * flag attributes), functions, locations (lines in pprof order), value types
 * and the profile attributes; and the wording of an allocation failure. The
 * lowest of the translator's files: it calls only otlp/dict. */
#include "pprof/translate_internal.h"

#include <string.h>

#define KEY_BUILD_ID "process.executable.build_id.gnu"
#define KEY_IS_FOLDED "pprof.location.is_folded"
#define KEY_DROP_FRAMES "pprof.profile.drop_frames"
#define KEY_KEEP_FRAMES "pprof.profile.keep_frames"
#define KEY_COMMENT "pprof.profile.comment"
#define KEY_DOC_URL "pprof.profile.doc_url"

enum pg_err pg_xlate_nomem(struct xlate *x, const char *what)
{
    bool cap = pg_arena_hit_cap(x->out) || (x->scratch != NULL && pg_arena_hit_cap(x->scratch)) ||
               (x->keep != NULL && pg_arena_hit_cap(x->keep)) ||
               (x->b != NULL && pg_dict_hit_cap(x->b));
    return pg_status_set(x->st, cap ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                         "pprof translation: %s while building %s",
                         cap ? "request memory limit reached" : "out of memory", what);
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
    return pg_dict_attr_str(x->b, k, pg_pprof_str_p(&x->p, &x->p.strings[pprof_val]), x->p.strings[pprof_val].len, 0);
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

enum pg_err pg_xlate_add_mappings(struct xlate *x)
{
    static const char *const flag_keys[4] = {
        "pprof.mapping.has_functions", "pprof.mapping.has_filenames",
        "pprof.mapping.has_line_numbers", "pprof.mapping.has_inline_frames"};

    for (size_t i = 0; i < x->p.n_mappings; i++) {
        const struct pg_pprof_mapping *m = &x->p.mappings[i];
        int32_t attrs[5], fn;
        size_t na = 0;

        if ((fn = pg_xlate_pstr(x, m->filename)) < 0) {
            return pg_xlate_nomem(x, "mappings");
        }
        if (x->p.strings[m->build_id].len > 0) {
            if ((attrs[na++] = attr_str(x, KEY_BUILD_ID, m->build_id)) < 0) {
                return pg_xlate_nomem(x, "mappings");
            }
        }
        for (unsigned f = 0; f < 4; f++) {
            if ((m->flags & (1u << f)) && (attrs[na++] = attr_true(x, flag_keys[f])) < 0) {
                return pg_xlate_nomem(x, "mappings");
            }
        }
        x->map_otlp[i] = pg_dict_mapping(x->b, m->memory_start, m->memory_limit, m->file_offset,
                                         fn, attrs, na);
        if (x->map_otlp[i] < 0) {
            return pg_xlate_nomem(x, "mappings");
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
    if ((name = pg_xlate_pstr(x, f->name)) < 0 || (sys = pg_xlate_pstr(x, f->system_name)) < 0 ||
        (file = pg_xlate_pstr(x, f->filename)) < 0) {
        return PG_DICT_NOMEM;
    }
    x->fn_otlp[pos] = pg_dict_function(x->b, name, sys, file, f->start_line);
    return x->fn_otlp[pos];
}

int32_t pg_xlate_location(struct xlate *x, uint32_t pos)
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

struct pg_otlp_valuetype *pg_xlate_value_type(struct xlate *x, const struct pg_pprof_vt *vt)
{
    struct pg_otlp_valuetype *v = pg_arena_alloc(x->out, sizeof(*v));

    if (v == NULL) {
        return NULL;
    }
    opentelemetry__proto__profiles__v1development__value_type__init(v);
    if ((v->type_strindex = pg_xlate_pstr(x, vt->type)) < 0 || (v->unit_strindex = pg_xlate_pstr(x, vt->unit)) < 0) {
        return NULL;
    }
    return v;
}

enum pg_err pg_xlate_profile_attrs(struct xlate *x, const int32_t **out, size_t *n_out)
{
    int32_t attrs[4];
    size_t n = 0;

    /* Emitted even when empty, like the collector (visible as `key=` in debug output). */
    if ((attrs[n++] = attr_str(x, KEY_DROP_FRAMES, x->p.drop_frames)) < 0 ||
        (attrs[n++] = attr_str(x, KEY_KEEP_FRAMES, x->p.keep_frames)) < 0) {
        return pg_xlate_nomem(x, "profile attributes");
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
            return pg_xlate_nomem(x, "profile attributes");
        }
        for (size_t i = 0; i < x->p.n_comments; i++) {
            const struct pg_pprof_str *s = &x->p.strings[x->p.comments[i]];
            const char *c = pg_dict_tmp_cstr(x->b, pg_pprof_str_p(&x->p, s), s->len);
            opentelemetry__proto__common__v1__any_value__init(&vals[i]);
            vals[i].value_case = PG_OTLP_ANYVALUE_STR;
            vals[i].string_value = c != NULL ? pg_arena_strdup(x->scratch, c) : NULL;
            if (vals[i].string_value == NULL) {
                return pg_xlate_nomem(x, "profile attributes");
            }
            ptrs[i] = &vals[i];
        }
        arr.n_values = x->p.n_comments;
        arr.values = ptrs;
        v.value_case = PG_OTLP_ANYVALUE_ARRAY;
        v.array_value = &arr;
        if ((attrs[n++] = pg_dict_attr(x->b, k, &v, 0)) < 0) {
            return pg_xlate_nomem(x, "profile attributes");
        }
    }
    if ((attrs[n++] = attr_str(x, KEY_DOC_URL, x->p.doc_url)) < 0) {
        return pg_xlate_nomem(x, "profile attributes");
    }
    *out = pg_dict_index_list(x->b, attrs, n);
    *n_out = n;
    return *out != NULL ? PG_ERR_OK : pg_xlate_nomem(x, "profile attributes");
}
