/* SPDX-License-Identifier: Apache-2.0
 * Parses the Pyroscope `name` query value, "app.name{k=v,k2=v2}", into the application name
 * (profile-type suffix split off), the suffix and the labels, with Pyroscope's character
 * rules (its labelset parser) and stricter brace rules: a name it would half-read is refused. */
#include "pyroscope/pyro_name.h"

#include <string.h>

#include "core/utf8.h"
#include "pyroscope/pyro_type.h"

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool label_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.';
}

/* Pyroscope's service-name rule: a label-name character, or '-' or '/'. */
static bool app_char(char c)
{
    return label_char(c) || c == '-' || c == '/';
}

bool pg_pyro_label_name_valid(const char *s, size_t n)
{
    if (n == 0) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!label_char(s[i])) {
            return false;
        }
    }
    return true;
}

bool pg_pyro_name_is_type_suffix(const char *suffix)
{
    return suffix != NULL && pg_pyro_type_lookup(suffix, strlen(suffix)) != NULL;
}

/* Narrows [*b, *e) past leading and trailing white space (Pyroscope trims each piece). */
static void trim(const char *s, size_t *b, size_t *e)
{
    while (*b < *e && is_space(s[*b])) {
        (*b)++;
    }
    while (*e > *b && is_space(s[*e - 1])) {
        (*e)--;
    }
}

static enum pg_err parse_app(struct pg_arena *a, const char *s, size_t b, size_t e,
                             struct pg_pyro_name *out, struct pg_status *st)
{
    trim(s, &b, &e);
    if (b == e) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "name: the application name before '{' is empty");
    }
    for (size_t i = b; i < e; i++) {
        if (!app_char(s[i])) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "name: byte 0x%02x at offset %zu is not allowed in an "
                                 "application name (Pyroscope allows A-Z a-z 0-9 _ . - /)",
                                 (unsigned)(unsigned char)s[i], i);
        }
    }
    /* The suffix after the last '.', when Pyroscope knows it as a profile type. */
    size_t dot = e;
    while (dot > b && s[dot - 1] != '.') {
        dot--;
    }
    size_t app_end = e;
    if (dot > b && pg_pyro_type_lookup(s + dot, e - dot) != NULL) {
        if (dot - 1 == b) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "name: nothing before the profile-type suffix \".%.*s\"",
                                 (int)(e - dot), s + dot);
        }
        out->type_suffix = pg_arena_strndup(a, s + dot, e - dot);
        if (out->type_suffix == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "name: out of memory");
        }
        app_end = dot - 1;
    }
    out->app = pg_arena_strndup(a, s + b, app_end - b);
    return out->app != NULL ? PG_ERR_OK : pg_status_set(st, PG_ERR_NOMEM, "name: out of memory");
}

/* One "key=value" item of the label list, [b, e) of @s; a repeated key keeps its first place
 * and takes the last value. */
static enum pg_err add_label(struct pg_arena *a, const char *s, size_t b, size_t e,
                             struct pg_pyro_name *out, size_t cap, struct pg_status *st)
{
    const char *eq = memchr(s + b, '=', e - b);
    size_t kb = b, ke, vb, ve = e;

    if (eq == NULL) {
        trim(s, &kb, &ve);
        return pg_status_set(st, PG_ERR_MALFORMED, "name: label at offset %zu has no '=' (want k=v)",
                             kb);
    }
    ke = (size_t)(eq - s);
    vb = ke + 1;
    trim(s, &kb, &ke);
    trim(s, &vb, &ve);
    if (kb == ke) {
        return pg_status_set(st, PG_ERR_MALFORMED, "name: empty label name at offset %zu", kb);
    }
    for (size_t i = kb; i < ke; i++) {
        if (!label_char(s[i])) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "name: byte 0x%02x at offset %zu is not allowed in a label "
                                 "name (Pyroscope allows A-Z a-z 0-9 _ .)",
                                 (unsigned)(unsigned char)s[i], i);
        }
    }
    if (!pg_utf8_valid(s + vb, ve - vb)) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "name: the value of label \"%.*s\" (offset %zu) is not valid UTF-8",
                             (int)(ke - kb > 64 ? 64 : ke - kb), s + kb, vb);
    }
    char *value = pg_arena_strndup(a, s + vb, ve - vb);
    if (value == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "name: out of memory");
    }
    for (size_t i = 0; i < out->n_labels; i++) {
        const char *k = out->labels[i].name;
        if (strlen(k) == ke - kb && memcmp(k, s + kb, ke - kb) == 0) {
            out->labels[i].value = value;
            return PG_ERR_OK;
        }
    }
    if (out->n_labels == cap) {
        return pg_status_set(st, PG_ERR_LIMIT, "name: more than %d labels", PG_PYRO_MAX_LABELS);
    }
    char *key = pg_arena_strndup(a, s + kb, ke - kb);
    if (key == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "name: out of memory");
    }
    out->labels[out->n_labels].name = key;
    out->labels[out->n_labels].value = value;
    out->n_labels++;
    return PG_ERR_OK;
}

/* The label list between '{' at @open and '}' at @close (exclusive). */
static enum pg_err parse_labels(struct pg_arena *a, const char *s, size_t open, size_t close,
                                struct pg_pyro_name *out, struct pg_status *st)
{
    size_t items = 1;

    for (size_t i = open + 1; i < close; i++) {
        items += s[i] == ',';
    }
    size_t cap = items < PG_PYRO_MAX_LABELS ? items : PG_PYRO_MAX_LABELS;
    out->labels = pg_arena_alloc(a, cap * sizeof(*out->labels));
    if (out->labels == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "name: out of memory");
    }
    size_t b = open + 1;
    for (size_t i = open + 1; i <= close; i++) {
        if (i < close && s[i] != ',') {
            continue;
        }
        size_t kb = b, ke = i;
        trim(s, &kb, &ke);
        /* "{}" and a trailing comma are fine (Pyroscope reads them); an empty item between
         * two commas is a label without a name. */
        if (kb == ke && (i == close)) {
            b = i + 1;
            continue;
        }
        if (kb == ke) {
            return pg_status_set(st, PG_ERR_MALFORMED, "name: empty label at offset %zu", b);
        }
        enum pg_err err = add_label(a, s, b, i, out, cap, st);
        if (err != PG_ERR_OK) {
            return err;
        }
        b = i + 1;
    }
    return PG_ERR_OK;
}

enum pg_err pg_pyro_name_parse(struct pg_arena *a, const char *s, size_t len,
                               struct pg_pyro_name *out, struct pg_status *st)
{
    memset(out, 0, sizeof(*out));
    if (len > PG_PYRO_MAX_NAME_LEN) {
        return pg_status_set(st, PG_ERR_LIMIT, "name: %zu bytes, over the cap of %u", len,
                             PG_PYRO_MAX_NAME_LEN);
    }
    if (s == NULL || len == 0) {
        return pg_status_set(st, PG_ERR_MALFORMED, "name: missing (want app.name{k=v,...})");
    }
    size_t open = len, close = len;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '{') {
            if (open != len) {
                return pg_status_set(st, PG_ERR_MALFORMED,
                                     "name: nested '{' at offset %zu (braces must be one "
                                     "{k=v,...} list)", i);
            }
            open = i;
        } else if (s[i] == '}') {
            if (open == len) {
                return pg_status_set(st, PG_ERR_MALFORMED,
                                     "name: unbalanced braces: '}' at offset %zu has no '{'", i);
            }
            close = i;
            break;
        } else if (s[i] == '\0') {
            return pg_status_set(st, PG_ERR_MALFORMED, "name: NUL byte at offset %zu", i);
        }
    }
    if (open != len && close == len) {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "name: unbalanced braces: '{' at offset %zu is never closed", open);
    }
    if (close != len) {
        for (size_t i = close + 1; i < len; i++) {
            if (!is_space(s[i])) {
                return pg_status_set(st, PG_ERR_MALFORMED,
                                     "name: text after the closing '}' at offset %zu", i);
            }
        }
    }
    enum pg_err err = parse_app(a, s, 0, open, out, st);
    if (err != PG_ERR_OK || open == len) {
        return err;
    }
    return parse_labels(a, s, open, close, out, st);
}
