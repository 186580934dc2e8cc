/* SPDX-License-Identifier: Apache-2.0
 * Collector-shaped YAML config: libyaml events become a node tree that keeps
 * file:line:column; ${env:VAR}, ${VAR}, ${env:VAR:-default} and $$ are expanded
 * in scalars; components bind their section through a field table that knows
 * types, defaults, bounds and valid keys. Every problem becomes one line in a
 * struct pg_diag ("file:line:col: path: message") so `validate` lists them all. */
#ifndef PG_CORE_CONFIG_H
#define PG_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

enum pg_cfg_kind { PG_CFG_NULL = 0, PG_CFG_SCALAR, PG_CFG_MAP, PG_CFG_SEQ };

struct pg_cfg_node {
    enum pg_cfg_kind kind;
    const char *file; /* borrowed from the config */
    int line;         /* 1-based */
    int col;          /* 1-based */
    const char *value; /* SCALAR: text after env expansion; "" for NULL */
    bool quoted;       /* SCALAR written with quotes (so "true" stays a string) */
    size_t n;          /* MAP: pairs; SEQ: items */
    struct pg_cfg_node **keys;   /* MAP: key scalars (for their position) */
    struct pg_cfg_node **items;  /* MAP: values; SEQ: items */
    bool used;                   /* set by binders, for unused-key reports */
};

/* One message with its position, for printing in file order. */
struct pg_diag_entry {
    const char *text; /* in the diag arena */
    int line, col;    /* 0 when the message has no position */
    bool warning;
};

/* Problems found while loading or binding, and warnings (a config that
 * loads but probably does not do what was meant). Messages live in the diag
 * arena; @n and @msgs count and hold the errors only (what makes a config
 * invalid), @all holds errors and warnings in the order they were found. */
struct pg_diag {
    struct pg_arena *arena; /* owned */
    size_t n;
    char **msgs;
    size_t cap;
    size_t n_warn;
    struct pg_diag_entry *all;
    size_t n_all, all_cap;
};

void pg_diag_init(struct pg_diag *d);
void pg_diag_free(struct pg_diag *d);
/* Adds "file:line:col: <path>: <message>"; @at may be NULL (no position). */
void pg_diag_add(struct pg_diag *d, const struct pg_cfg_node *at, const char *path,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Adds "file:line:col: <path>: warning: <message>": not counted in @n. */
void pg_diag_warn(struct pg_diag *d, const struct pg_cfg_node *at, const char *path,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Prints every error and warning, one per line, ordered by line and column
 * (those without a position first). @file is a FILE*. */
void pg_diag_print(const struct pg_diag *d, void *file);

struct pg_config {
    struct pg_arena *arena;      /* owned: nodes and bound strings */
    const char *path;
    struct pg_cfg_node *root;    /* a MAP, or NULL when the file failed to load */
    struct pg_diag diag;
};

/* Loads and env-expands @path. Returns NULL only on OOM; otherwise check
 * cfg->diag.n for problems (syntax errors leave root NULL). */
struct pg_config *pg_config_load(const char *path);
/* Same from a buffer; @name is used in messages. */
struct pg_config *pg_config_load_string(const char *name, const char *text, size_t len);
void pg_config_free(struct pg_config *cfg);

/* Expands ${env:VAR}, ${VAR}, ${env:VAR:-default} and $$ in @s into @arena.
 * Returns NULL and sets *@err (static text) for a malformed reference. */
char *pg_config_expand_env(struct pg_arena *arena, const char *s, const char **err);

/* Map lookup by key (marks the key used); NULL when absent. */
struct pg_cfg_node *pg_cfg_get(const struct pg_cfg_node *map, const char *key);
/* Parses "250ms", "5s", "1m30s", "2h", or a bare number of seconds, to ns. */
bool pg_parse_duration(const char *s, int64_t *out_ns);
/* Parses "4MiB", "20MB", "512KiB", "1024", "1GiB" to bytes. */
bool pg_parse_bytes(const char *s, uint64_t *out);
bool pg_parse_bool(const char *s, bool *out);

/* ---- field tables -------------------------------------------------- */

enum pg_field_type {
    PG_FT_STR,      /* char *                     */
    PG_FT_BOOL,     /* bool                       */
    PG_FT_INT,      /* int64_t                    */
    PG_FT_DOUBLE,   /* double                     */
    PG_FT_DURATION, /* int64_t nanoseconds        */
    PG_FT_BYTES,    /* uint64_t bytes             */
    PG_FT_ENUM,     /* int: index into choices    */
    PG_FT_STRLIST,  /* struct pg_strlist          */
    PG_FT_STRMAP,   /* struct pg_strmap           */
    PG_FT_SECTION,  /* nested struct, fields in sub; presence in present_offset */
    PG_FT_NODE,     /* const struct pg_cfg_node *: the component parses it */
};

struct pg_strlist {
    size_t n;
    char **v;
};

struct pg_strmap {
    size_t n;
    char **keys;
    char **values;
};

#define PG_NO_PRESENT ((size_t)-1)

/* How the mappings a PG_FT_NODE field documents in @sub nest (for
 * `pprofgate components` only: the component parses the node itself). */
enum pg_field_shape {
    PG_SHAPE_NONE = 0, /* no table: shown as "any" */
    PG_SHAPE_MAP,      /* one mapping with the keys of @sub */
    PG_SHAPE_LIST,     /* a list of such mappings */
    PG_SHAPE_NAMED,    /* a mapping of names (the doc says which) to such mappings */
};

struct pg_field {
    const char *name;
    enum pg_field_type type;
    size_t offset;               /* into the bound struct */
    const char *def;             /* default in config syntax; NULL = zero/empty */
    double min, max;             /* numeric bounds when min < max */
    const struct pg_field *sub;  /* SECTION: its fields */
    const char *const *choices;  /* ENUM: NULL-terminated */
    size_t present_offset;       /* SECTION: bool set when the key is present, or PG_NO_PRESENT;
                                  * NODE: the enum pg_field_shape of @sub (PG_FIELD_NODE_DOC) */
    const char *doc;             /* one line, for `pprofgate components` */
};

#define PG_FIELD_END { NULL, 0, 0, NULL, 0, 0, NULL, NULL, 0, NULL }

/* The rows of a field table, one macro per shape; @st is the struct the
 * table binds into, @member a member of it (nested members allowed), @def
 * the default in config syntax (NULL = zero/empty), @doc one line. */
#define PG_FIELD_ROW_(st, name_, type_, member, def_, lo, hi, sub_, choices_, present, doc_)      \
    {.name = (name_), .type = (type_), .offset = offsetof(st, member), .def = (def_), .min = (lo), \
     .max = (hi), .sub = (sub_), .choices = (choices_), .present_offset = (present), .doc = (doc_)}
/* A scalar, list or map field without bounds, or a PG_FT_NODE. */
#define PG_FIELD(st, name, type, member, def, doc)                                                 \
    PG_FIELD_ROW_(st, name, type, member, def, 0, 0, NULL, NULL, PG_NO_PRESENT, doc)
/* A numeric field (INT, DOUBLE, DURATION, BYTES) checked against [@lo, @hi]. */
#define PG_FIELD_RANGE(st, name, type, member, def, lo, hi, doc)                                   \
    PG_FIELD_ROW_(st, name, type, member, def, lo, hi, NULL, NULL, PG_NO_PRESENT, doc)
/* An int member holding the index of the value in @choices (NULL-terminated). */
#define PG_FIELD_ENUM(st, name, member, def, choices, doc)                                         \
    PG_FIELD_ROW_(st, name, PG_FT_ENUM, member, def, 0, 0, NULL, choices, PG_NO_PRESENT, doc)
/* A nested struct bound by the table @sub. */
#define PG_FIELD_SECTION(st, name, member, sub, doc)                                               \
    PG_FIELD_ROW_(st, name, PG_FT_SECTION, member, NULL, 0, 0, sub, NULL, PG_NO_PRESENT, doc)
/* Like PG_FIELD_SECTION; the bool member @present is set when the key is there. */
#define PG_FIELD_SECTION_PRESENT(st, name, member, sub, present, doc)                              \
    PG_FIELD_ROW_(st, name, PG_FT_SECTION, member, NULL, 0, 0, sub, NULL, offsetof(st, present),  \
                  doc)

/* A PG_FT_NODE the component parses itself, its keys documented by the
 * table @sub in @shape (binding never reads @sub for it). */
#define PG_FIELD_NODE_DOC(st, name_, member, sub_, shape_, doc_)                                   \
    {.name = (name_), .type = PG_FT_NODE, .offset = offsetof(st, member), .sub = (sub_),           \
     .present_offset = (size_t)(shape_), .doc = (doc_)}

/* Fills @out from the defaults of @fields, then from @map (may be NULL).
 * Unknown keys, wrong types and out-of-range values go to @diag with the
 * valid choices; @path prefixes messages ("receivers::pprof::server").
 * Strings are allocated in @arena. Returns the number of problems added. */
size_t pg_cfg_bind(struct pg_arena *arena, struct pg_diag *diag, const struct pg_cfg_node *map,
                   const struct pg_field *fields, void *out, const char *path);
struct pg_suggest;
/* " (did you mean \"x\"?)" for the search's closest candidate, or "" (in @a). */
const char *pg_cfg_did_you_mean(struct pg_arena *a, const struct pg_suggest *sg);
/* Reports every key of @map not in the NULL-terminated @valid under @path,
 * with the closest valid key as a hint. Returns the number reported. */
size_t pg_cfg_check_keys(struct pg_diag *d, struct pg_arena *a, const struct pg_cfg_node *map,
                         const char *path, const char *const *valid);
/* Prints a field table as an indented key list with defaults and docs. */
void pg_cfg_print_fields(const struct pg_field *fields, int indent, void *file /* FILE* */);

#endif
