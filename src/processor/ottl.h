/* SPDX-License-Identifier: Apache-2.0
 * OTTL-lite: the subset of the collector's transformation language that the
 * profiles transform processor needs. Statements and conditions are compiled
 * once (at config load) into a tree with resolved paths, functions and PCRE2
 * regexes; evaluation mutates a batch and allocates only from its arena. */
#ifndef PG_PROCESSOR_OTTL_H
#define PG_PROCESSOR_OTTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "pipeline/batch.h"
#include "core/err.h"

/* The contexts profile_statements may run in, from coarse to fine. */
enum pg_ottl_ctx {
    PG_OTTL_CTX_INFER = -1, /* compile only: infer from path prefixes */
    PG_OTTL_CTX_RESOURCE = 0,
    PG_OTTL_CTX_SCOPE = 1,
    PG_OTTL_CTX_PROFILE = 2,
};

const char *pg_ottl_ctx_name(enum pg_ottl_ctx ctx);
/* "resource", "scope", "profile" -> ctx; false when unknown. */
bool pg_ottl_ctx_parse(const char *s, enum pg_ottl_ctx *out);

/* ---- runtime values ------------------------------------------------- */

enum pg_ottl_type {
    PG_OTTL_NIL = 0,
    PG_OTTL_BOOL,
    PG_OTTL_INT,
    PG_OTTL_DOUBLE,
    PG_OTTL_STR,
    PG_OTTL_BYTES,
    PG_OTTL_MAP,
    PG_OTTL_LIST,
};

struct pg_ottl_map;
struct pg_ottl_list;

/* A value during evaluation. STR always has a NUL at s.p[s.n]. Strings and
 * containers point into the batch arena, the batch itself, or (lit) into
 * compiled config memory, which must be copied before it is stored. */
struct pg_ottl_value {
    enum pg_ottl_type t;
    bool lit;
    union {
        bool b;
        int64_t i;
        double d;
        struct {
            const char *p;
            size_t n;
        } s; /* STR and BYTES */
        const struct pg_ottl_map *m;
        const struct pg_ottl_list *l;
    } u;
};

struct pg_ottl_pair {
    const char *key; /* NUL-terminated */
    struct pg_ottl_value v;
};

struct pg_ottl_map {
    size_t n;
    struct pg_ottl_pair *v;
};

struct pg_ottl_list {
    size_t n;
    struct pg_ottl_value *v;
};

const char *pg_ottl_type_name(enum pg_ottl_type t);

/* ---- compile -------------------------------------------------------- */

struct pg_ottl_stmt; /* compiled statement: lives in the compile arena */
struct pg_ottl_cond; /* compiled boolean expression */

/* A compile error: @col is the 0-based byte offset in the statement text. */
struct pg_ottl_error {
    int col;
    char msg[200];
};

/* Compiles @text. @ctx is the group's context or PG_OTTL_CTX_INFER (then
 * every path must carry a resource./scope./profile. prefix). Everything,
 * including PCRE2 code (freed by an arena cleanup), lives in @arena, which
 * must outlive every use. NULL on error with @err filled. */
struct pg_ottl_stmt *pg_ottl_compile(struct pg_arena *arena, const char *text,
                                     enum pg_ottl_ctx ctx, struct pg_ottl_error *err);
/* Same for a bare condition (the `conditions:` of a statement group). */
struct pg_ottl_cond *pg_ottl_compile_condition(struct pg_arena *arena, const char *text,
                                               enum pg_ottl_ctx ctx, struct pg_ottl_error *err);

/* The context a compiled statement/condition needs: the finest context of
 * its paths (RESOURCE when it has none), or the one given at compile time. */
enum pg_ottl_ctx pg_ottl_stmt_ctx(const struct pg_ottl_stmt *s);
enum pg_ottl_ctx pg_ottl_cond_ctx(const struct pg_ottl_cond *c);
const char *pg_ottl_stmt_text(const struct pg_ottl_stmt *s);
const char *pg_ottl_cond_text(const struct pg_ottl_cond *c);
/* True when a path reads request headers (metadata["k"],
 * otelcol.client.metadata["k"]): those are empty unless the receiver keeps
 * them (include_metadata). */
bool pg_ottl_stmt_reads_metadata(const struct pg_ottl_stmt *s);
bool pg_ottl_cond_reads_metadata(const struct pg_ottl_cond *c);

/* ---- evaluate ------------------------------------------------------- */

/* Where a statement runs. Set b, rp (and sp, p for finer contexts); the
 * rest is per-request scratch that pg_ottl_env_init() clears. */
struct pg_ottl_env {
    struct pg_batch *b;
    struct pg_arena *a; /* = b->arena: every allocation goes here */
    struct pg_otlp_resprof *rp;
    struct pg_otlp_scopeprof *sp;
    struct pg_otlp_profile *p;
    /* Capacity of dictionary tables we re-allocated this request (0 = still
     * the original exact-size arrays). */
    size_t string_cap;
    size_t attr_cap;
    size_t ra_skipped; /* malformed pairs ParseResourceAttributes skipped */
};

void pg_ottl_env_init(struct pg_ottl_env *env, struct pg_batch *b);

/* Runs one statement (its where clause first). Errors (type mismatch,
 * converter failure, regex limit) return PG_ERR_PROCESSING with the reason
 * in @st; NOMEM/LIMIT when the arena is exhausted. */
enum pg_err pg_ottl_exec(const struct pg_ottl_stmt *s, struct pg_ottl_env *env,
                         struct pg_status *st);
/* Evaluates a condition to *@out. */
enum pg_err pg_ottl_eval_cond(const struct pg_ottl_cond *c, struct pg_ottl_env *env, bool *out,
                              struct pg_status *st);

/* String @idx of the batch's dictionary string_table, or NULL when out of range. */
const char *pg_ottl_dict_string(const struct pg_batch *b, int32_t idx);

#endif
