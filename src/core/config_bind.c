/* SPDX-License-Identifier: Apache-2.0
 * Value parsers (durations, sizes, numbers, booleans) and field-table
 * binding of a config node tree onto a struct, with precise diagnostics. The
 * tree itself is loaded by config.c. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/suggest.h"
#include "core/vec.h"

/* ---- value parsers --------------------------------------------------- */

bool pg_parse_duration(const char *s, int64_t *out_ns)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
    double total = 0;
    const char *p = s;
    bool neg = false;

    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        p++;
    }
    if (strcmp(p, "0") == 0) {
        *out_ns = 0;
        return true;
    }
    if (*p == '\0') {
        return false;
    }
    while (*p != '\0') {
        char *end;
        double v;
        size_t best = 0;
        double mul = 0;
        if (!(isdigit((unsigned char)*p) || *p == '.')) {
            return false;
        }
        errno = 0;
        v = strtod(p, &end);
        if (end == p || errno != 0) {
            return false;
        }
        p = end;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t ul = strlen(units[i].unit);
            if (strncmp(p, units[i].unit, ul) == 0 && ul > best) {
                best = ul;
                mul = units[i].ns;
            }
        }
        if (best == 0) {
            return false;
        }
        p += best;
        total += v * mul;
    }
    if (total > 9.2e18) {
        return false;
    }
    *out_ns = (int64_t)llround(neg ? -total : total);
    return true;
}

bool pg_parse_bytes(const char *s, uint64_t *out)
{
    static const struct {
        const char *unit;
        double mul;
    } units[] = {{"", 1},
                 {"B", 1},
                 {"KiB", 1024.0},
                 {"MiB", 1048576.0},
                 {"GiB", 1073741824.0},
                 {"Ki", 1024.0},
                 {"Mi", 1048576.0},
                 {"Gi", 1073741824.0},
                 {"KB", 1e3},
                 {"MB", 1e6},
                 {"GB", 1e9},
                 {"kB", 1e3},
                 {"K", 1e3},
                 {"M", 1e6},
                 {"G", 1e9}};
    char *end;
    double v;

    while (isspace((unsigned char)*s)) {
        s++;
    }
    if (!isdigit((unsigned char)*s)) {
        return false;
    }
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s) {
        return false;
    }
    while (isspace((unsigned char)*end)) {
        end++;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].unit) == 0) {
            double r = v * units[i].mul;
            if (r > 1.8e19) {
                return false;
            }
            *out = (uint64_t)llround(r);
            return true;
        }
    }
    return false;
}

bool pg_parse_bool(const char *s, bool *out)
{
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0) {
        *out = true;
        return true;
    }
    if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0) {
        *out = false;
        return true;
    }
    return false;
}

/* ---- binding ---------------------------------------------------------- */

static const char *kind_word(enum pg_cfg_kind k)
{
    switch (k) {
    case PG_CFG_MAP:
        return "a mapping";
    case PG_CFG_SEQ:
        return "a list";
    case PG_CFG_NULL:
        return "empty";
    default:
        return "a scalar";
    }
}

static char *join_path(struct pg_arena *a, const char *path, const char *key)
{
    if (path == NULL || path[0] == '\0') {
        return pg_arena_strdup(a, key);
    }
    return pg_arena_sprintf(a, "%s::%s", path, key);
}

static char *valid_keys(struct pg_arena *a, const struct pg_field *fields)
{
    size_t len = 1;
    char *s;

    for (const struct pg_field *f = fields; f->name != NULL; f++) {
        len += strlen(f->name) + 2;
    }
    s = pg_arena_alloc(a, len);
    if (s == NULL) {
        return (char *)"";
    }
    s[0] = '\0';
    for (const struct pg_field *f = fields; f->name != NULL; f++) {
        if (s[0] != '\0') {
            strcat(s, ", ");
        }
        strcat(s, f->name);
    }
    return s;
}

const char *pg_cfg_did_you_mean(struct pg_arena *a, const struct pg_suggest *sg)
{
    const char *best = pg_suggest_best(sg);
    char *s = best ? pg_arena_sprintf(a, " (did you mean \"%s\"?)", best) : NULL;

    return s ? s : "";
}

size_t pg_cfg_check_keys(struct pg_diag *d, struct pg_arena *a, const struct pg_cfg_node *map,
                         const char *path, const char *const *valid)
{
    size_t problems = 0;

    if (map == NULL || map->kind != PG_CFG_MAP) {
        return 0;
    }
    for (size_t i = 0; i < map->n; i++) {
        bool ok = false;
        char list[256] = "";
        struct pg_suggest sg;
        pg_suggest_init(&sg, map->keys[i]->value);
        for (size_t j = 0; valid[j]; j++) {
            if (strcmp(map->keys[i]->value, valid[j]) == 0) {
                ok = true;
            }
            if (j) {
                strncat(list, ", ", sizeof(list) - strlen(list) - 1);
            }
            strncat(list, valid[j], sizeof(list) - strlen(list) - 1);
            pg_suggest_offer(&sg, valid[j]);
        }
        if (!ok) {
            pg_diag_add(d, map->keys[i], path, "unknown key \"%s\"%s; valid keys: %s",
                        map->keys[i]->value, pg_cfg_did_you_mean(a, &sg), list);
            problems++;
        }
    }
    return problems;
}

/* Binds one value (@n may be a synthetic scalar holding the default). */
static size_t bind_value(struct pg_arena *a, struct pg_diag *d, const struct pg_field *f,
                         const struct pg_cfg_node *n, void *out, const char *path, bool is_default)
{
    char *field = (char *)out + f->offset;
    const char *v = n ? n->value : "";
    bool in_bounds = f->min < f->max;

    if (n != NULL && n->kind == PG_CFG_NULL && f->type != PG_FT_SECTION && f->type != PG_FT_NODE &&
        f->type != PG_FT_STRLIST && f->type != PG_FT_STRMAP && f->type != PG_FT_STR) {
        pg_diag_add(d, n, path, "a value is required");
        return 1;
    }
    switch (f->type) {
    case PG_FT_STR:
        if (n != NULL && n->kind != PG_CFG_SCALAR && n->kind != PG_CFG_NULL) {
            pg_diag_add(d, n, path, "expected a string, got %s", kind_word(n->kind));
            return 1;
        }
        *(char **)field = pg_arena_strdup(a, v);
        return 0;
    case PG_FT_BOOL:
        if (n->kind != PG_CFG_SCALAR || !pg_parse_bool(v, (bool *)field)) {
            pg_diag_add(d, n, path, "expected true or false, got \"%s\"", v);
            return 1;
        }
        return 0;
    case PG_FT_INT: {
        char *end;
        long long x;
        errno = 0;
        x = strtoll(v, &end, 10);
        if (n->kind != PG_CFG_SCALAR || errno != 0 || end == v || *end != '\0') {
            pg_diag_add(d, n, path, "expected an integer, got \"%s\"", v);
            return 1;
        }
        if (in_bounds && ((double)x < f->min || (double)x > f->max)) {
            pg_diag_add(d, n, path, "%lld is outside [%.0f, %.0f]", x, f->min, f->max);
            return 1;
        }
        *(int64_t *)field = x;
        return 0;
    }
    case PG_FT_DOUBLE: {
        char *end;
        double x;
        errno = 0;
        x = strtod(v, &end);
        if (n->kind != PG_CFG_SCALAR || errno != 0 || end == v || *end != '\0') {
            pg_diag_add(d, n, path, "expected a number, got \"%s\"", v);
            return 1;
        }
        if (in_bounds && (x < f->min || x > f->max)) {
            pg_diag_add(d, n, path, "%g is outside [%g, %g]", x, f->min, f->max);
            return 1;
        }
        *(double *)field = x;
        return 0;
    }
    case PG_FT_DURATION: {
        int64_t ns;
        if (n->kind != PG_CFG_SCALAR || !pg_parse_duration(v, &ns)) {
            pg_diag_add(d, n, path, "expected a duration such as 250ms, 5s or 1m, got \"%s\"", v);
            return 1;
        }
        if (ns < 0 || (in_bounds && ((double)ns < f->min || (double)ns > f->max))) {
            pg_diag_add(d, n, path, "duration \"%s\" is out of range", v);
            return 1;
        }
        *(int64_t *)field = ns;
        return 0;
    }
    case PG_FT_BYTES: {
        uint64_t b;
        if (n->kind != PG_CFG_SCALAR || !pg_parse_bytes(v, &b)) {
            pg_diag_add(d, n, path, "expected a size such as 4MiB, 512KiB or 1048576, got \"%s\"", v);
            return 1;
        }
        if (in_bounds && ((double)b < f->min || (double)b > f->max)) {
            pg_diag_add(d, n, path, "size %s is outside [%.0f, %.0f] bytes", v, f->min, f->max);
            return 1;
        }
        *(uint64_t *)field = b;
        return 0;
    }
    case PG_FT_ENUM:
        for (int i = 0; f->choices && f->choices[i] != NULL; i++) {
            if (strcmp(v, f->choices[i]) == 0) {
                *(int *)field = i;
                return 0;
            }
        }
        {
            char list[512] = "";
            struct pg_suggest sg;
            pg_suggest_init(&sg, v);
            for (int i = 0; f->choices && f->choices[i] != NULL; i++) {
                if (i) {
                    strncat(list, ", ", sizeof(list) - strlen(list) - 1);
                }
                strncat(list, f->choices[i], sizeof(list) - strlen(list) - 1);
                pg_suggest_offer(&sg, f->choices[i]);
            }
            pg_diag_add(d, n, path, "\"%s\" is not one of: %s%s", v, list,
                        pg_cfg_did_you_mean(a, &sg));
        }
        return 1;
    case PG_FT_STRLIST: {
        struct pg_strlist *l = (struct pg_strlist *)field;
        if (is_default) {
            /* Defaults for lists are comma-separated in the table. */
            l->n = 0;
            l->v = NULL;
            if (v[0] == '\0') {
                return 0;
            }
            size_t cnt = 1;
            for (const char *p = v; *p; p++) {
                cnt += *p == ',';
            }
            l->v = pg_arena_calloc(a, cnt, sizeof(char *));
            const char *p = v;
            while (l->v != NULL) {
                const char *c = strchr(p, ',');
                size_t len = c ? (size_t)(c - p) : strlen(p);
                l->v[l->n++] = pg_arena_strndup(a, p, len);
                if (c == NULL) {
                    break;
                }
                p = c + 1;
            }
            return 0;
        }
        if (n->kind == PG_CFG_NULL) {
            l->n = 0;
            l->v = NULL;
            return 0;
        }
        if (n->kind != PG_CFG_SEQ) {
            pg_diag_add(d, n, path, "expected a list, got %s", kind_word(n->kind));
            return 1;
        }
        l->v = pg_arena_calloc(a, n->n ? n->n : 1, sizeof(char *));
        l->n = 0;
        for (size_t i = 0; i < n->n && l->v; i++) {
            if (n->items[i]->kind != PG_CFG_SCALAR) {
                pg_diag_add(d, n->items[i], path, "list items must be strings, got %s",
                            kind_word(n->items[i]->kind));
                return 1;
            }
            l->v[l->n++] = pg_arena_strdup(a, n->items[i]->value);
        }
        return 0;
    }
    case PG_FT_STRMAP: {
        struct pg_strmap *m = (struct pg_strmap *)field;
        m->n = 0;
        m->keys = m->values = NULL;
        if (n == NULL || n->kind == PG_CFG_NULL || is_default) {
            return 0;
        }
        if (n->kind != PG_CFG_MAP) {
            pg_diag_add(d, n, path, "expected a mapping of strings, got %s", kind_word(n->kind));
            return 1;
        }
        m->keys = pg_arena_calloc(a, n->n ? n->n : 1, sizeof(char *));
        m->values = pg_arena_calloc(a, n->n ? n->n : 1, sizeof(char *));
        for (size_t i = 0; i < n->n && m->keys && m->values; i++) {
            if (n->items[i]->kind != PG_CFG_SCALAR && n->items[i]->kind != PG_CFG_NULL) {
                pg_diag_add(d, n->items[i], path, "value of \"%s\" must be a string", n->keys[i]->value);
                return 1;
            }
            m->keys[m->n] = pg_arena_strdup(a, n->keys[i]->value);
            m->values[m->n++] = pg_arena_strdup(a, n->items[i]->value);
        }
        return 0;
    }
    case PG_FT_SECTION:
        if (n != NULL && !is_default && n->kind != PG_CFG_MAP && n->kind != PG_CFG_NULL) {
            pg_diag_add(d, n, path, "expected a mapping, got %s", kind_word(n->kind));
            return 1;
        }
        return pg_cfg_bind(a, d, is_default ? NULL : n, f->sub, field, path);
    case PG_FT_NODE:
        *(const struct pg_cfg_node **)field = is_default ? NULL : n;
        return 0;
    }
    return 0;
}

size_t pg_cfg_bind(struct pg_arena *a, struct pg_diag *d, const struct pg_cfg_node *map,
                   const struct pg_field *fields, void *out, const char *path)
{
    size_t problems = 0;

    /* Defaults first, so every field has a value even when the map is bad. */
    for (const struct pg_field *f = fields; f->name != NULL; f++) {
        struct pg_cfg_node def = {.kind = PG_CFG_SCALAR, .value = f->def ? f->def : ""};
        if (f->def == NULL) {
            if (f->type == PG_FT_STR) {
                *(char **)((char *)out + f->offset) = NULL;
                continue;
            }
            if (f->type == PG_FT_BOOL) {
                def.value = "false";
            } else if (f->type == PG_FT_ENUM && f->choices) {
                def.value = f->choices[0];
            } else if (f->type != PG_FT_SECTION && f->type != PG_FT_NODE && f->type != PG_FT_STRLIST &&
                       f->type != PG_FT_STRMAP) {
                def.value = "0";
            }
        }
        if (f->type == PG_FT_SECTION && f->present_offset != PG_NO_PRESENT) {
            *(bool *)((char *)out + f->present_offset) = false;
        }
        problems += bind_value(a, d, f, &def, out, join_path(a, path, f->name), true);
    }
    if (map == NULL || map->kind == PG_CFG_NULL) {
        return problems;
    }
    if (map->kind != PG_CFG_MAP) {
        pg_diag_add(d, map, path, "expected a mapping, got %s", kind_word(map->kind));
        return problems + 1;
    }
    for (size_t i = 0; i < map->n; i++) {
        const struct pg_cfg_node *key = map->keys[i];
        const struct pg_field *f;
        for (f = fields; f->name != NULL; f++) {
            if (strcmp(f->name, key->value) == 0) {
                break;
            }
        }
        if (f->name == NULL) {
            struct pg_suggest sg;
            pg_suggest_init(&sg, key->value);
            for (f = fields; f->name != NULL; f++) {
                pg_suggest_offer(&sg, f->name);
            }
            pg_diag_add(d, key, path, "unknown key \"%s\"%s; valid keys: %s", key->value,
                        pg_cfg_did_you_mean(a, &sg), valid_keys(a, fields));
            problems++;
            continue;
        }
        map->keys[i]->used = true;
        if (f->type == PG_FT_SECTION && f->present_offset != PG_NO_PRESENT) {
            *(bool *)((char *)out + f->present_offset) = true;
        }
        problems += bind_value(a, d, f, map->items[i], out, join_path(a, path, f->name), false);
    }
    return problems;
}

static const char *type_word(enum pg_field_type t)
{
    static const char *const names[] = {"string", "bool",   "int",  "number",  "duration", "bytes",
                                        "enum",   "list",   "map",  "section", "any"};
    return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

void pg_cfg_print_fields(const struct pg_field *fields, int indent, void *file)
{
    static const char *const shape_word[] = {"any", "mapping", "list of mappings",
                                             "mapping of names to mappings"};
    FILE *out = file;

    for (const struct pg_field *f = fields; f && f->name != NULL; f++) {
        size_t shape = f->type == PG_FT_NODE ? f->present_offset : PG_SHAPE_NONE;
        bool documented = f->sub != NULL && shape > PG_SHAPE_NONE &&
                          shape < sizeof(shape_word) / sizeof(shape_word[0]);
        fprintf(out, "%*s%s: (%s", indent, "", f->name,
                documented ? shape_word[shape] : type_word(f->type));
        if (f->def != NULL && f->def[0] != '\0') {
            fprintf(out, ", default %s", f->def);
        }
        if (f->type == PG_FT_ENUM && f->choices) {
            fprintf(out, ", one of");
            for (int i = 0; f->choices[i]; i++) {
                fprintf(out, " %s", f->choices[i]);
            }
        }
        fprintf(out, ")%s%s\n", f->doc ? " " : "", f->doc ? f->doc : "");
        if (f->type == PG_FT_SECTION || documented) {
            pg_cfg_print_fields(f->sub, indent + 2, out);
        }
    }
}
