/* SPDX-License-Identifier: Apache-2.0
 * Prometheus relabel_configs: the eleven actions with Prometheus's defaults
 * (action replace, separator ";", regex "(.*)", replacement "$1"), regexes
 * fully anchored as ^(?s:re)$ and limited to what RE2 accepts (no
 * backreferences, lookaround, atomic groups or possessive quantifiers), so a
 * rule that works in Prometheus, Parca or Alloy means the same here. */
#ifndef PG_SCRAPE_RELABEL_H
#define PG_SCRAPE_RELABEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "core/config.h"
#include "core/err.h"
#include "scrape/labels.h"

enum pg_relabel_action {
    PG_RELABEL_REPLACE = 0,
    PG_RELABEL_KEEP,
    PG_RELABEL_DROP,
    PG_RELABEL_KEEPEQUAL,
    PG_RELABEL_DROPEQUAL,
    PG_RELABEL_HASHMOD,
    PG_RELABEL_LABELMAP,
    PG_RELABEL_LABELDROP,
    PG_RELABEL_LABELKEEP,
    PG_RELABEL_LOWERCASE,
    PG_RELABEL_UPPERCASE,
};

/* One rule as written (strings borrowed from the config arena) plus its
 * compiled regex (owned: pg_relabel_rule_free). */
struct pg_relabel_rule {
    int action;                    /* enum pg_relabel_action */
    char *action_name;             /* as written; NULL = replace */
    struct pg_strlist source_labels;
    char *separator;
    char *target_label;
    char *regex;
    int64_t modulus;
    char *replacement;
    pcre2_code *re;                /* owned */
    pcre2_match_context *mctx;     /* owned: the match limits */
};

/* The field table for one relabel_configs item (Prometheus keys). */
extern const struct pg_field pg_relabel_fields[];

/* Checks a regex against RE2's syntax subset; NULL when fine, else why. */
const char *pg_relabel_re2_check(const char *re);
/* Compiles ^(?s:@re)$ (UTF-8, $ at the very end only, as RE2). */
pcre2_code *pg_relabel_compile(const char *re, char *why, size_t why_size);
/* Binds and validates a relabel_configs sequence at @node into a malloc'd
 * array (pg_relabel_rules_free). Problems go to @diag; returns their count. */
size_t pg_relabel_parse(struct pg_arena *arena, struct pg_diag *diag, const struct pg_cfg_node *node,
                        const char *path, struct pg_relabel_rule **out, size_t *n_out);
void pg_relabel_rules_free(struct pg_relabel_rule *rules, size_t n);
/* Applies @rules in order. False when a rule dropped the set (@l is then
 * undefined and should be freed). OOM counts as dropped. */
bool pg_relabel_apply(const struct pg_relabel_rule *rules, size_t n, struct pg_labels *l);
/* Go's Regexp.Expand: $1, ${1}, $name, ${name}, $$; unknown groups expand to
 * "". Writes to @out (NUL-terminated, truncated at @cap). */
void pg_relabel_expand(const pcre2_code *re, pcre2_match_data *md, const char *subject,
                       const char *tmpl, char *out, size_t cap);

/* snprintf for config paths in messages (a cut path is harmless); shared by
 * the relabel and scrape config parsers. */
void pg_scrape_pathf(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
