/* SPDX-License-Identifier: Apache-2.0
 * The compiled OTTL-lite tree shared by the parser (ottl_parse.c) and the
 * evaluator (ottl_eval.c, ottl_funcs.c). Not a public API. */
#ifndef PG_PROCESSOR_OTTL_INTERNAL_H
#define PG_PROCESSOR_OTTL_INTERNAL_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "processor/ottl.h"

/* Every readable/settable thing a path can name. */
enum ottl_path_id {
    P_RES_ATTRS,
    P_RES_DROPPED,
    P_SCOPE_NAME,
    P_SCOPE_VERSION,
    P_SCOPE_ATTRS,
    P_SCOPE_DROPPED,
    P_PROF_ATTRS,
    P_PROF_SAMPLE_TYPE_TYPE,
    P_PROF_SAMPLE_TYPE_UNIT,
    P_PROF_PERIOD_TYPE_TYPE,
    P_PROF_PERIOD_TYPE_UNIT,
    P_PROF_PERIOD,
    P_PROF_DURATION,
    P_PROF_TIME,
    P_PROF_DROPPED,
    P_PROF_ORIG_FORMAT,
    P_PROF_ID,
    P_PROF_SAMPLE_COUNT, /* read-only: number of samples */
    P_METADATA,          /* metadata["k"]: first value or nil */
    P_OTELCOL_METADATA,  /* otelcol.client.metadata["k"]: list of values */
    P_OTELCOL_ADDR,      /* otelcol.client.addr */
};

/* Static result kinds used for compile-time type checks. */
enum ottl_kind { K_ANY = 0, K_NIL, K_BOOL, K_INT, K_DOUBLE, K_STR, K_BYTES, K_MAP, K_LIST };

struct ottl_key {
    bool is_int;
    int64_t i;
    const char *s; /* NUL-terminated, in the compile arena */
    int col;
};

struct ottl_regex {
    pcre2_code *code;
    uint32_t pairs;             /* ovector pairs a match needs (captures + 1) */
    pcre2_match_context *mctx;  /* carries the match and depth limits; read-only once built */
    const char *pattern;
};

enum ottl_expr_kind {
    E_LIT,
    E_PATH,
    E_CALL,
    E_LIST,
    E_MAP,
    E_CMP,
    E_AND,
    E_OR,
    E_NOT,
};

enum ottl_cmp { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE };

struct ottl_func;

struct ottl_expr {
    enum ottl_expr_kind kind;
    enum ottl_kind rkind; /* static result kind */
    int col;
    /* Index keys applied to the result (path or converter). */
    struct ottl_key *keys;
    size_t nkeys;
    union {
        struct pg_ottl_value lit;
        struct {
            enum ottl_path_id id;
            const char *meta_key; /* P_METADATA / P_OTELCOL_METADATA */
        } path;
        struct {
            const struct ottl_func *fn;
            struct ottl_expr **args; /* fn->nparams entries; NULL = omitted */
            struct ottl_regex *re;   /* for functions with a regex parameter */
        } call;
        struct {
            struct ottl_expr **items;
            size_t n;
        } list;
        struct {
            const char **keys;
            struct ottl_expr **vals;
            size_t n;
        } map;
        struct {
            enum ottl_cmp op;
            struct ottl_expr *l;
            struct ottl_expr *r;
        } bin; /* CMP, AND, OR; NOT uses l */
    } u;
};

typedef enum pg_err (*ottl_impl_fn)(const struct ottl_expr *call, struct pg_ottl_env *env,
                                     struct pg_ottl_value *out, struct pg_status *st);

/* What a function parameter accepts, checked at compile time. */
enum ottl_param {
    PA_ANY,       /* any value expression */
    PA_TARGET,    /* a settable path */
    PA_MAPTARGET, /* an attribute-map path without keys */
    PA_REGEX,     /* a string literal, compiled as PCRE2 */
    PA_STRLIT,    /* a string literal */
    PA_INTLIT,    /* an integer literal */
    PA_LIST,      /* a list (literal or expression) */
};

#define OTTL_MAX_PARAMS 4

struct ottl_func {
    const char *name;
    bool editor;
    size_t min_args;
    size_t nparams;
    const char *pnames[OTTL_MAX_PARAMS];
    enum ottl_param ptypes[OTTL_MAX_PARAMS];
    enum ottl_kind result;
    ottl_impl_fn impl;
    /* Extra compile-time checks (literal values); returns a message or NULL
     * and sets *col. */
    const char *(*check)(const struct ottl_expr *call, int *col);
};

struct pg_ottl_stmt {
    const char *text;
    enum pg_ottl_ctx ctx;
    struct ottl_expr *call;  /* E_CALL of an editor */
    struct ottl_expr *where; /* or NULL */
    bool metadata;           /* reads metadata[...] or otelcol.client.metadata[...] */
};

struct pg_ottl_cond {
    const char *text;
    enum pg_ottl_ctx ctx;
    struct ottl_expr *expr;
    bool metadata;
};

/* The function table (ottl_funcs.c), NULL-name terminated. */
extern const struct ottl_func pg_ottl_funcs[];

/* Evaluation helpers shared by ottl_eval.c and ottl_funcs.c. */
enum pg_err pg_ottl_eval_expr(const struct ottl_expr *e, struct pg_ottl_env *env,
                              struct pg_ottl_value *out, struct pg_status *st);
/* Reads a path's value (keys applied). */
enum pg_err pg_ottl_path_get(const struct ottl_expr *path, struct pg_ottl_env *env,
                             struct pg_ottl_value *out, struct pg_status *st);
/* Sets a path; NIL values are ignored by the caller (set semantics). */
enum pg_err pg_ottl_path_set(const struct ottl_expr *path, struct pg_ottl_env *env,
                             const struct pg_ottl_value *v, struct pg_status *st);

/* Attribute-map view over resource/scope KeyValue arrays and a profile's
 * dictionary indices, so map editors work the same on all three. */
struct ottl_attrs {
    bool dict;                    /* profile attributes */
    struct pg_otlp_kv ***kv;      /* !dict: the array (may be replaced) */
    size_t *nkv;
    int32_t **idx;                /* dict: profile->attribute_indices */
    size_t *nidx;
};

enum pg_err pg_ottl_attrs_for(const struct ottl_expr *path, struct pg_ottl_env *env,
                              struct ottl_attrs *out, struct pg_status *st);
size_t pg_ottl_attrs_count(const struct ottl_attrs *at);
const char *pg_ottl_attrs_key(const struct ottl_attrs *at, struct pg_ottl_env *env, size_t i);
enum pg_err pg_ottl_attrs_value(const struct ottl_attrs *at, struct pg_ottl_env *env, size_t i,
                                struct pg_ottl_value *out, struct pg_status *st);
/* Index of @key, or -1. */
long pg_ottl_attrs_find(const struct ottl_attrs *at, struct pg_ottl_env *env, const char *key);
enum pg_err pg_ottl_attrs_set(const struct ottl_attrs *at, struct pg_ottl_env *env,
                              const char *key, bool key_lit, const struct pg_ottl_value *v,
                              struct pg_status *st);
/* Keeps the entries whose keep[i] is true (order preserved). */
void pg_ottl_attrs_filter(const struct ottl_attrs *at, const bool *keep);
/* Replaces all entries with @m. */
enum pg_err pg_ottl_attrs_replace(const struct ottl_attrs *at, struct pg_ottl_env *env,
                                  const struct pg_ottl_map *m, bool lit, struct pg_status *st);

/* ---- ottl_regex.c ---- */

/* The calling thread's match data, with room for @re's captures (grown on
 * demand, reused by every later match on the thread): compiled patterns are
 * shared by every receiver loop, match data is not. NULL when out of memory. */
pcre2_match_data *pg_ottl_regex_md(const struct ottl_regex *re);

/* Sets @re->pairs and warms this thread's match data (after compile). */
void pg_ottl_regex_ready(struct ottl_regex *re);

/* Regex search with the compiled limits: 1 match, 0 none, <0 error (st set). */
int pg_ottl_regex_search(const struct ottl_regex *re, const char *s, size_t n,
                         struct pg_status *st);

/* ---- ottl_value.c: value helpers ---- */
void pg_ottl_set_str(struct pg_ottl_value *v, const char *p, size_t n);
enum pg_err pg_ottl_oom(struct pg_ottl_env *env, struct pg_status *st);
/* Formats a scalar as text (bool/int/double/str) into the arena; false for
 * other types. */
bool pg_ottl_to_text(struct pg_ottl_env *env, const struct pg_ottl_value *v, const char **p,
                     size_t *n, bool *nomem);

/* Shared by the evaluator's files (ottl_value.c, ottl_path.c, ottl_eval.c). */
const char *pg_ottl_dup_if_lit(struct pg_ottl_env *env, const char *s, size_t n, bool lit);
struct pg_otlp_resource *pg_ottl_ensure_resource(struct pg_ottl_env *env);
struct pg_otlp_scope *pg_ottl_ensure_scope(struct pg_ottl_env *env);
enum pg_err pg_ottl_intern_string(struct pg_ottl_env *env, const char *s, size_t n, bool lit,
                                  int32_t *out, struct pg_status *st);
enum pg_err pg_ottl_no_ctx(struct pg_status *st, const char *what);
enum pg_err pg_ottl_type_err(struct pg_status *st, const char *what, const char *want,
                             const struct pg_ottl_value *got);
/* ottl_path.c: applies index keys (["k"], [0]) to @v. */
enum pg_err pg_ottl_apply_keys(struct pg_ottl_env *env, const struct ottl_key *keys, size_t n,
                               struct pg_ottl_value *v, struct pg_status *st);

#endif
