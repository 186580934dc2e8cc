/* SPDX-License-Identifier: Apache-2.0
 * Prometheus relabeling on PCRE2 (see relabel.h). Semantics follow
 * prometheus/model/relabel: the joined source value is matched against the
 * anchored regex; replace/labelmap expand Go-style templates; an empty
 * replace result deletes the target label; hashmod takes the low 8 bytes of
 * the MD5, big-endian. */
#include "scrape/relabel.h"
#include "scrape/casemap.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <stdarg.h>

/* Cap on one expanded value or joined source value; longer ones are cut. */
#define VALUE_MAX 4096
/* Backtracking cap per match: a hostile regex fails to match instead of
 * burning the loop (RE2 has no backtracking; this is the nearest bound). */
#define MATCH_LIMIT 100000
#define DEPTH_LIMIT 10000


/* Config paths for messages; vsnprintf, since a cut path is harmless. */
void pg_scrape_pathf(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

static const char *const action_names[] = {
    "replace", "keep",     "drop",      "keepequal", "dropequal", "hashmod",
    "labelmap", "labeldrop", "labelkeep", "lowercase", "uppercase", NULL,
};

const struct pg_field pg_relabel_fields[] = {
    PG_FIELD(struct pg_relabel_rule, "source_labels", PG_FT_STRLIST, source_labels, NULL,
             "labels whose values are joined"),
    PG_FIELD(struct pg_relabel_rule, "separator", PG_FT_STR, separator, ";",
             "joins source label values"),
    PG_FIELD(struct pg_relabel_rule, "target_label", PG_FT_STR, target_label, NULL,
             "label written by replace/hashmod/..."),
    PG_FIELD(struct pg_relabel_rule, "regex", PG_FT_STR, regex, "(.*)",
             "RE2 syntax, fully anchored"),
    PG_FIELD(struct pg_relabel_rule, "modulus", PG_FT_INT, modulus, "0", "hashmod: the modulus"),
    PG_FIELD(struct pg_relabel_rule, "replacement", PG_FT_STR, replacement, "$1",
             "template: $1, ${1}, $name"),
    PG_FIELD(struct pg_relabel_rule, "action", PG_FT_STR, action_name, NULL,
             "replace (default), keep, drop, keepequal, dropequal, hashmod, labelmap, labeldrop, "
             "labelkeep, lowercase, uppercase"),
    PG_FIELD_END,
};

/* ---- RE2 syntax subset ------------------------------------------------ */

/* True when @p ("{...") is a repeat {n}, {n,} or {n,m} with a count over
 * 1000, which RE2 (and so Prometheus) refuses. A "{" that forms no repeat is
 * a literal in RE2 and is left alone. */
static bool repeat_over_limit(const char *p)
{
    unsigned long v[2] = {0, 0};
    int nv = 0;

    for (p++; nv < 2; p++) {
        const char *start = p;

        while (isdigit((unsigned char)*p)) {
            v[nv] = v[nv] < 100000 ? v[nv] * 10 + (unsigned long)(*p - '0') : v[nv];
            p++;
        }
        if (p == start && !(nv == 1 && *p == '}')) {
            return false; /* "{,5}" or "{x": not a repeat */
        }
        nv++;
        if (*p == '}') {
            return v[0] > 1000 || v[1] > 1000;
        }
        if (*p != ',' || nv == 2) {
            return false;
        }
    }
    return false;
}

const char *pg_relabel_re2_check(const char *re)
{
    bool in_class = false;

    for (const char *p = re; *p; p++) {
        if (*p == '\\') {
            char c = p[1];

            if (c == '\0') {
                return "trailing backslash";
            }
            if (!in_class && ((c >= '1' && c <= '9') || c == 'g' || c == 'k')) {
                return "backreferences are not supported (RE2 syntax)";
            }
            if (c == 'K' || c == 'G' || c == 'R' || c == 'X' || c == 'N' || c == 'h' || c == 'H' ||
                c == 'v' || c == 'V' || c == 'Z' || c == 'c' || c == 'o') {
                return "escape not supported by RE2";
            }
            if ((c == 'p' || c == 'P' || c == 'x') && p[2] == '{') {
                /* \p{Greek}, \x{263a}: the braces belong to the escape,
                 * not a repeat (nor a possessive "}+" after it). */
                const char *close = strchr(p + 3, '}');

                if (close == NULL) {
                    return "missing closing } in an escape";
                }
                p = close;
                continue;
            }
            p++;
            continue;
        }
        if (in_class) {
            if (*p == ']') {
                in_class = false;
            }
            continue;
        }
        if (*p == '[') {
            in_class = true;
            if (p[1] == '^') {
                p++;
            }
            if (p[1] == ']') {
                p++; /* a leading ] is literal */
            }
            continue;
        }
        if (*p == '(' && p[1] == '?') {
            const char *q = p + 2;

            if (*q == '=' || *q == '!') {
                return "lookahead is not supported (RE2 syntax)";
            }
            if (*q == '<' && (q[1] == '=' || q[1] == '!')) {
                return "lookbehind is not supported (RE2 syntax)";
            }
            if (*q == '>' || *q == '|' || *q == 'R' || *q == '&' || *q == '(' || *q == '#' ||
                *q == '+' || (*q == '-' && isdigit((unsigned char)q[1])) ||
                isdigit((unsigned char)*q) || (*q == 'P' && (q[1] == '=' || q[1] == '>'))) {
                return "group syntax not supported by RE2";
            }
        }
        if (*p == '(' && p[1] == '*') {
            return "verbs are not supported (RE2 syntax)";
        }
        if (*p == '{' && repeat_over_limit(p)) {
            return "repeat count over 1000 (RE2's limit)";
        }
        if ((*p == '*' || *p == '+' || *p == '?' || *p == '}') && p[1] == '+') {
            return "possessive quantifiers are not supported (RE2 syntax)";
        }
    }
    if (in_class) {
        return "missing closing ]";
    }
    return NULL;
}

pcre2_code *pg_relabel_compile(const char *re, char *why, size_t why_size)
{
    const char *bad = pg_relabel_re2_check(re);
    size_t n = strlen(re) + 16;
    char *anchored;
    pcre2_code *code;
    int ec;
    PCRE2_SIZE off;

    if (bad != NULL) {
        snprintf(why, why_size, "regex \"%s\": %s", re, bad);
        return NULL;
    }
    if ((anchored = malloc(n)) == NULL) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    snprintf(anchored, n, "^(?s:%s)$", re);
    code = pcre2_compile((PCRE2_SPTR)anchored, PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C, &ec, &off,
                         NULL);
    free(anchored);
    if (code == NULL) {
        PCRE2_UCHAR msg[160];

        pcre2_get_error_message(ec, msg, sizeof(msg));
        snprintf(why, why_size, "regex \"%s\": %s", re, (const char *)msg);
    }
    return code;
}

/* ---- parsing ------------------------------------------------------------ */

static int parse_action(const char *s)
{
    for (int i = 0; action_names[i] != NULL; i++) {
        if (strcasecmp(s, action_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* Prometheus 3 validates label names as UTF-8: any non-empty valid string. */
static bool label_name_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    if (*p == '\0') {
        return false;
    }
    while (*p) {
        int n = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;

        if (n == 0) {
            return false;
        }
        for (int i = 1; i < n; i++) {
            if ((p[i] & 0xc0) != 0x80) {
                return false;
            }
        }
        p += n;
    }
    return true;
}

size_t pg_relabel_parse(struct pg_arena *arena, struct pg_diag *diag, const struct pg_cfg_node *node,
                        const char *path, struct pg_relabel_rule **out, size_t *n_out)
{
    size_t problems = 0;
    struct pg_relabel_rule *rules;

    *out = NULL;
    *n_out = 0;
    if (node == NULL || node->kind == PG_CFG_NULL) {
        return 0;
    }
    if (node->kind != PG_CFG_SEQ) {
        pg_diag_add(diag, node, path, "relabel_configs must be a list");
        return 1;
    }
    rules = calloc(node->n ? node->n : 1, sizeof(*rules));
    if (rules == NULL) {
        pg_diag_add(diag, node, path, "out of memory");
        return 1;
    }
    for (size_t i = 0; i < node->n; i++) {
        const struct pg_cfg_node *item = node->items[i];
        struct pg_relabel_rule *r = &rules[i];
        const struct pg_cfg_node *an = NULL;
        char p[300], why[300];
        size_t before = problems;
        bool dflt_re, dflt_repl, dflt_sep;

        pg_scrape_pathf(p, sizeof(p), "%s[%zu]", path, i);
        if (item->kind != PG_CFG_MAP) {
            pg_diag_add(diag, item, p, "expected a mapping");
            problems++;
            continue;
        }
        problems += pg_cfg_bind(arena, diag, item, pg_relabel_fields, r, p);
        an = pg_cfg_get(item, "action");
        if (r->regex == NULL) {
            r->regex = "";
        }
        dflt_re = strcmp(r->regex, "(.*)") == 0;
        dflt_repl = r->replacement == NULL || strcmp(r->replacement, "$1") == 0;
        dflt_sep = r->separator == NULL || strcmp(r->separator, ";") == 0;
        if (r->separator == NULL) {
            r->separator = "";
        }
        if (r->replacement == NULL) {
            r->replacement = "";
        }
        r->action = PG_RELABEL_REPLACE;
        if (r->action_name != NULL && r->action_name[0] != '\0') {
            r->action = parse_action(r->action_name);
            if (r->action < 0) {
                pg_diag_add(diag, an, p, "unknown relabel action \"%s\"", r->action_name);
                problems++;
                r->action = PG_RELABEL_REPLACE;
            }
        }
        switch (r->action) {
        case PG_RELABEL_REPLACE:
        case PG_RELABEL_HASHMOD:
        case PG_RELABEL_LOWERCASE:
        case PG_RELABEL_UPPERCASE:
        case PG_RELABEL_KEEPEQUAL:
        case PG_RELABEL_DROPEQUAL:
            if (r->target_label == NULL || r->target_label[0] == '\0') {
                pg_diag_add(diag, item, p, "relabel action %s requires target_label",
                            action_names[r->action]);
                problems++;
            }
            break;
        default:
            break;
        }
        if (r->action == PG_RELABEL_REPLACE && r->target_label != NULL &&
            strchr(r->target_label, '$') == NULL && r->target_label[0] != '\0' &&
            !label_name_ok(r->target_label)) {
            pg_diag_add(diag, item, p, "\"%s\" is an invalid target_label", r->target_label);
            problems++;
        }
        if ((r->action == PG_RELABEL_LOWERCASE || r->action == PG_RELABEL_UPPERCASE) &&
            ((r->target_label != NULL && strchr(r->target_label, '$') != NULL) || !dflt_repl)) {
            pg_diag_add(diag, item, p, "%s takes a plain target_label and no replacement",
                        action_names[r->action]);
            problems++;
        }
        if (r->action == PG_RELABEL_HASHMOD && r->modulus <= 0) {
            pg_diag_add(diag, item, p, "hashmod requires a modulus > 0");
            problems++;
        }
        if ((r->action == PG_RELABEL_LABELDROP || r->action == PG_RELABEL_LABELKEEP) &&
            (r->source_labels.n > 0 || (r->target_label && r->target_label[0]) || r->modulus ||
             !dflt_sep || !dflt_repl)) {
            pg_diag_add(diag, item, p, "%s takes only regex", action_names[r->action]);
            problems++;
        }
        if ((r->action == PG_RELABEL_KEEPEQUAL || r->action == PG_RELABEL_DROPEQUAL) &&
            (!dflt_re || r->modulus || !dflt_sep || !dflt_repl)) {
            pg_diag_add(diag, item, p, "%s takes only source_labels and target_label",
                        action_names[r->action]);
            problems++;
        }
        if (problems == before) {
            r->re = pg_relabel_compile(r->regex, why, sizeof(why));
            r->mctx = pcre2_match_context_create(NULL);
            if (r->re == NULL || r->mctx == NULL) {
                pg_diag_add(diag, pg_cfg_get(item, "regex"), p, "%s",
                            r->re == NULL ? why : "out of memory");
                problems++;
            } else {
                pcre2_set_match_limit(r->mctx, MATCH_LIMIT);
                pcre2_set_depth_limit(r->mctx, DEPTH_LIMIT);
            }
        }
    }
    *out = rules;
    *n_out = node->n;
    if (problems > 0) {
        pg_relabel_rules_free(rules, node->n);
        *out = NULL;
        *n_out = 0;
    }
    return problems;
}

void pg_relabel_rules_free(struct pg_relabel_rule *rules, size_t n)
{
    for (size_t i = 0; rules != NULL && i < n; i++) {
        pcre2_code_free(rules[i].re);
        pcre2_match_context_free(rules[i].mctx);
    }
    free(rules);
}

/* ---- applying ----------------------------------------------------------- */

static void append(char *out, size_t cap, size_t *off, const char *s, size_t n)
{
    if (*off >= cap) {
        return;
    }
    if (n > cap - 1 - *off) {
        n = cap - 1 - *off;
    }
    memcpy(out + *off, s, n);
    *off += n;
    out[*off] = '\0';
}

void pg_relabel_expand(const pcre2_code *re, pcre2_match_data *md, const char *subject,
                       const char *tmpl, char *out, size_t cap)
{
    size_t off = 0;
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    uint32_t groups = pcre2_get_ovector_count(md);

    out[0] = '\0';
    for (const char *p = tmpl; *p;) {
        const char *name, *end;
        char nbuf[64];
        long idx = -1;
        size_t nl;

        if (*p != '$') {
            const char *d = strchr(p, '$');
            size_t n = d ? (size_t)(d - p) : strlen(p);

            append(out, cap, &off, p, n);
            p += n;
            continue;
        }
        if (p[1] == '$') {
            append(out, cap, &off, "$", 1);
            p += 2;
            continue;
        }
        if (p[1] == '{') {
            name = p + 2;
            end = name;
            while (isalnum((unsigned char)*end) || *end == '_') {
                end++;
            }
            if (*end != '}' || end == name) {
                append(out, cap, &off, "$", 1); /* Go: not a reference, keep the $ */
                p++;
                continue;
            }
            p = end + 1;
        } else {
            name = p + 1;
            end = name;
            while (isalnum((unsigned char)*end) || *end == '_') {
                end++;
            }
            if (end == name) {
                append(out, cap, &off, "$", 1);
                p++;
                continue;
            }
            p = end;
        }
        nl = (size_t)(end - name);
        if (nl >= sizeof(nbuf)) {
            continue; /* no group has such a name: expands to nothing */
        }
        memcpy(nbuf, name, nl);
        nbuf[nl] = '\0';
        {
            bool digits = true;

            for (size_t i = 0; i < nl; i++) {
                digits = digits && isdigit((unsigned char)nbuf[i]);
            }
            if (digits) {
                idx = nl < 6 ? strtol(nbuf, NULL, 10) : -1;
                /* (?s:...) does not capture: the numbering is the user's. */
            } else {
                int g = pcre2_substring_number_from_name(re, (PCRE2_SPTR)nbuf);

                idx = g > 0 ? g : -1;
            }
        }
        if (idx >= 0 && (uint32_t)idx < groups && ov[2 * idx] != PCRE2_UNSET) {
            append(out, cap, &off, subject + ov[2 * idx], ov[2 * idx + 1] - ov[2 * idx]);
        }
    }
}

/* Matches the whole of @s; the match data holds the groups on success. */
static bool match(const struct pg_relabel_rule *r, pcre2_match_data *md, const char *s)
{
    return pcre2_match(r->re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, r->mctx) >= 0;
}

static void join_sources(const struct pg_relabel_rule *r, const struct pg_labels *l, char *out,
                         size_t cap)
{
    size_t off = 0;

    out[0] = '\0';
    for (size_t i = 0; i < r->source_labels.n; i++) {
        const char *v = pg_labels_get(l, r->source_labels.v[i]);

        if (i > 0) {
            append(out, cap, &off, r->separator, strlen(r->separator));
        }
        if (v != NULL) {
            append(out, cap, &off, v, strlen(v));
        }
    }
}

static uint64_t hashmod(const char *s, uint64_t mod)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dl = 0;
    uint64_t v = 0;

    if (EVP_Digest(s, strlen(s), d, &dl, EVP_md5(), NULL) != 1 || dl != 16) {
        return 0;
    }
    for (int i = 8; i < 16; i++) {
        v = (v << 8) | d[i];
    }
    return v % mod;
}

/* One rule; false = drop the target. */
static bool apply_one(const struct pg_relabel_rule *r, pcre2_match_data *md, struct pg_labels *l,
                      char *val, char *buf, char *buf2)
{
    join_sources(r, l, val, VALUE_MAX);
    switch (r->action) {
    case PG_RELABEL_KEEP:
        return match(r, md, val);
    case PG_RELABEL_DROP:
        return !match(r, md, val);
    case PG_RELABEL_KEEPEQUAL:
    case PG_RELABEL_DROPEQUAL: {
        const char *t = pg_labels_get(l, r->target_label);
        bool eq = strcmp(t ? t : "", val) == 0;

        return r->action == PG_RELABEL_KEEPEQUAL ? eq : !eq;
    }
    case PG_RELABEL_REPLACE:
        if (!match(r, md, val)) {
            return true;
        }
        pg_relabel_expand(r->re, md, val, r->target_label, buf, VALUE_MAX);
        if (!label_name_ok(buf)) {
            return true;
        }
        pg_relabel_expand(r->re, md, val, r->replacement, buf2, VALUE_MAX);
        return pg_labels_set(l, buf, buf2); /* empty deletes */
    case PG_RELABEL_LOWERCASE:
    case PG_RELABEL_UPPERCASE:
        pg_utf8_case(buf, VALUE_MAX, val, r->action == PG_RELABEL_UPPERCASE);
        return pg_labels_set(l, r->target_label, buf);
    case PG_RELABEL_HASHMOD:
        snprintf(buf, VALUE_MAX, "%llu",
                 (unsigned long long)hashmod(val, (uint64_t)r->modulus));
        return pg_labels_set(l, r->target_label, buf);
    case PG_RELABEL_LABELMAP: {
        struct pg_labels add = {0};
        bool ok = true;

        for (size_t i = 0; i < l->n && ok; i++) {
            if (match(r, md, l->v[i].name)) {
                pg_relabel_expand(r->re, md, l->v[i].name, r->replacement, buf, VALUE_MAX);
                ok = pg_labels_set(&add, buf, l->v[i].value);
            }
        }
        for (size_t i = 0; i < add.n && ok; i++) {
            ok = pg_labels_set(l, add.v[i].name, add.v[i].value);
        }
        pg_labels_free(&add);
        return ok;
    }
    case PG_RELABEL_LABELDROP:
    case PG_RELABEL_LABELKEEP:
        for (size_t i = 0; i < l->n;) {
            bool m = match(r, md, l->v[i].name);

            if (m == (r->action == PG_RELABEL_LABELDROP)) {
                snprintf(buf, VALUE_MAX, "%s", l->v[i].name);
                pg_labels_del(l, buf);
            } else {
                i++;
            }
        }
        return true;
    }
    return true;
}

bool pg_relabel_apply(const struct pg_relabel_rule *rules, size_t n, struct pg_labels *l)
{
    char *mem = malloc(3 * VALUE_MAX);
    bool keep = mem != NULL;

    for (size_t i = 0; i < n && keep; i++) {
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(rules[i].re, NULL);

        keep = md != NULL && apply_one(&rules[i], md, l, mem, mem + VALUE_MAX, mem + 2 * VALUE_MAX);
        pcre2_match_data_free(md);
    }
    free(mem);
    return keep;
}
