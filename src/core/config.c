/* SPDX-License-Identifier: Apache-2.0
 * YAML loading (libyaml events -> node tree with positions), ${env:...}
 * expansion and diagnostics; value parsers and field-table binding are
 * config_bind.c's. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/file_read.h"
#include "core/vec.h"

#define CFG_MAX_BYTES (4u * 1024u * 1024u) /* a config file larger than this is refused */
#define CFG_MAX_DEPTH 64

/* ---- diagnostics ----------------------------------------------------- */

void pg_diag_init(struct pg_diag *d)
{
    memset(d, 0, sizeof(*d));
    d->arena = pg_arena_create(0);
}

void pg_diag_free(struct pg_diag *d)
{
    pg_arena_destroy(d->arena);
    memset(d, 0, sizeof(*d));
}

static void diag_vadd(struct pg_diag *d, const struct pg_cfg_node *at, const char *path,
                      bool warning, const char *fmt, va_list ap)
{
    char msg[1024];
    char *line;
    const char *sep = (path && path[0]) ? ": " : "";
    const char *tag = warning ? "warning: " : "";

    if (d->arena == NULL) {
        return;
    }
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (at != NULL && at->file != NULL) {
        line = pg_arena_sprintf(d->arena, "%s:%d:%d: %s%s%s%s", at->file, at->line, at->col,
                                path ? path : "", sep, tag, msg);
    } else {
        line = pg_arena_sprintf(d->arena, "%s%s%s%s", path ? path : "", sep, tag, msg);
    }
    if (line == NULL || !PG_VEC_GROW(d->arena, d->all, d->all_cap, d->n_all, 16, 0)) {
        return;
    }
    if (!warning && !PG_VEC_GROW(d->arena, d->msgs, d->cap, d->n, 16, 0)) {
        return;
    }
    d->all[d->n_all++] = (struct pg_diag_entry){.text = line,
                                                .line = at != NULL && at->file ? at->line : 0,
                                                .col = at != NULL && at->file ? at->col : 0,
                                                .warning = warning};
    if (warning) {
        d->n_warn++;
    } else {
        d->msgs[d->n++] = line;
    }
}

void pg_diag_add(struct pg_diag *d, const struct pg_cfg_node *at, const char *path, const char *fmt,
                 ...)
{
    va_list ap;

    va_start(ap, fmt);
    diag_vadd(d, at, path, false, fmt, ap);
    va_end(ap);
}

void pg_diag_warn(struct pg_diag *d, const struct pg_cfg_node *at, const char *path,
                  const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    diag_vadd(d, at, path, true, fmt, ap);
    va_end(ap);
}

/* (line, col), then the order found: entries are compared by address,
 * which is that order since they sit in one array. */
static int diag_entry_cmp(const void *pa, const void *pb)
{
    const struct pg_diag_entry *a = *(const struct pg_diag_entry *const *)pa;
    const struct pg_diag_entry *b = *(const struct pg_diag_entry *const *)pb;

    if (a->line != b->line) {
        return a->line < b->line ? -1 : 1;
    }
    if (a->col != b->col) {
        return a->col < b->col ? -1 : 1;
    }
    return a < b ? -1 : (a > b);
}

void pg_diag_print(const struct pg_diag *d, void *file)
{
    FILE *out = file;
    const struct pg_diag_entry **order;

    if (d->n_all == 0) {
        return;
    }
    order = malloc(d->n_all * sizeof(*order)); /* freed below */
    if (order == NULL) {
        for (size_t i = 0; i < d->n_all; i++) {
            fprintf(out, "%s\n", d->all[i].text);
        }
        return;
    }
    for (size_t i = 0; i < d->n_all; i++) {
        order[i] = &d->all[i];
    }
    qsort(order, d->n_all, sizeof(*order), diag_entry_cmp);
    for (size_t i = 0; i < d->n_all; i++) {
        fprintf(out, "%s\n", order[i]->text);
    }
    free(order);
}

/* ---- env expansion --------------------------------------------------- */

struct sbuf {
    struct pg_arena *arena;
    char *p;
    size_t len, cap;
};

static int sbuf_put(struct sbuf *b, const char *s, size_t n)
{
    if (!PG_VEC_RESERVE(b->arena, b->p, b->cap, b->len + n + 1, 32, 0)) {
        return -1;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

static bool env_name_ok(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) {
        return false;
    }
    for (size_t i = 1; i < n; i++) {
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) {
            return false;
        }
    }
    return true;
}

char *pg_config_expand_env(struct pg_arena *arena, const char *s, const char **err)
{
    struct sbuf b = {arena, NULL, 0, 0};

    *err = NULL;
    if (sbuf_put(&b, "", 0) != 0) {
        *err = "out of memory";
        return NULL;
    }
    while (*s != '\0') {
        const char *dollar = strchr(s, '$');
        if (dollar == NULL) {
            if (sbuf_put(&b, s, strlen(s)) != 0) {
                goto oom;
            }
            break;
        }
        if (sbuf_put(&b, s, (size_t)(dollar - s)) != 0) {
            goto oom;
        }
        if (dollar[1] == '$') { /* $$ is a literal $ */
            if (sbuf_put(&b, "$", 1) != 0) {
                goto oom;
            }
            s = dollar + 2;
            continue;
        }
        if (dollar[1] != '{') { /* a lone $ stays as written */
            if (sbuf_put(&b, "$", 1) != 0) {
                goto oom;
            }
            s = dollar + 1;
            continue;
        }
        const char *close = strchr(dollar + 2, '}');
        if (close == NULL) {
            *err = "unterminated ${...} reference (write $$ for a literal $)";
            return NULL;
        }
        const char *name = dollar + 2;
        size_t nlen = (size_t)(close - name);
        const char *def = NULL;
        size_t dlen = 0;
        if (nlen > 4 && strncmp(name, "env:", 4) == 0) {
            name += 4;
            nlen -= 4;
        }
        const char *colon = memchr(name, ':', nlen);
        if (colon != NULL) {
            if (colon + 1 < close && colon[1] == '-') {
                def = colon + 2;
                dlen = (size_t)(close - def);
                nlen = (size_t)(colon - name);
            } else {
                *err = "unsupported ${scheme:...} reference (only env: is known)";
                return NULL;
            }
        }
        if (!env_name_ok(name, nlen)) {
            *err = "invalid environment variable name in ${...}";
            return NULL;
        }
        char var[256];
        if (nlen >= sizeof(var)) {
            *err = "environment variable name too long";
            return NULL;
        }
        memcpy(var, name, nlen);
        var[nlen] = '\0';
        const char *val = getenv(var);
        if ((val == NULL || val[0] == '\0') && def != NULL) {
            if (sbuf_put(&b, def, dlen) != 0) {
                goto oom;
            }
        } else if (val != NULL) {
            if (sbuf_put(&b, val, strlen(val)) != 0) {
                goto oom;
            }
        }
        s = close + 1;
    }
    return b.p;
oom:
    *err = "out of memory";
    return NULL;
}

/* ---- YAML -> node tree ---------------------------------------------- */

struct loader {
    struct pg_config *cfg;
    yaml_parser_t parser;
    int depth;
    char path[512]; /* "a::b" of the mapping being read, for messages */
    size_t path_len;
};

static struct pg_cfg_node *node_new(struct loader *l, enum pg_cfg_kind kind, const yaml_mark_t *m)
{
    struct pg_cfg_node *n = pg_arena_zalloc(l->cfg->arena, sizeof(*n));

    if (n != NULL) {
        n->kind = kind;
        n->file = l->cfg->path;
        n->line = (int)m->line + 1;
        n->col = (int)m->column + 1;
        n->value = "";
    }
    return n;
}

static int node_push(struct pg_arena *a, struct pg_cfg_node *parent, struct pg_cfg_node *key,
                     struct pg_cfg_node *item)
{
    size_t n = parent->n;

    /* Capacity is the next power of two >= 4: grow when n hits it. */
    if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
        size_t old = n ? n : 0;
        size_t ncap = n ? n * 2 : 4;
        struct pg_cfg_node **ni = pg_arena_realloc(a, parent->items, old * sizeof(void *),
                                                   ncap * sizeof(void *));
        if (ni == NULL) {
            return -1;
        }
        parent->items = ni;
        if (parent->kind == PG_CFG_MAP) {
            struct pg_cfg_node **nk = pg_arena_realloc(a, parent->keys, old * sizeof(void *),
                                                       ncap * sizeof(void *));
            if (nk == NULL) {
                return -1;
            }
            parent->keys = nk;
        }
    }
    parent->items[n] = item;
    if (parent->kind == PG_CFG_MAP) {
        parent->keys[n] = key;
    }
    parent->n = n + 1;
    return 0;
}

static struct pg_cfg_node *parse_node(struct loader *l, yaml_event_t *ev, bool is_key);

static bool next_event(struct loader *l, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&l->parser, ev)) {
        yaml_mark_t m = l->parser.problem_mark;
        struct pg_cfg_node at = {.file = l->cfg->path, .line = (int)m.line + 1, .col = (int)m.column + 1};
        pg_diag_add(&l->cfg->diag, &at, NULL, "YAML syntax error: %s%s%s",
                    l->parser.problem ? l->parser.problem : "unknown",
                    l->parser.context ? " " : "", l->parser.context ? l->parser.context : "");
        return false;
    }
    return true;
}

/* Consumes events for one node whose first event is @ev (already parsed). */
static struct pg_cfg_node *parse_node(struct loader *l, yaml_event_t *ev, bool is_key)
{
    struct pg_cfg_node *n = NULL;
    yaml_event_t sub;

    if (++l->depth > CFG_MAX_DEPTH) {
        struct pg_cfg_node at = {.file = l->cfg->path, .line = (int)ev->start_mark.line + 1, .col = (int)ev->start_mark.column + 1};
        pg_diag_add(&l->cfg->diag, &at, NULL, "config nested deeper than %d levels", CFG_MAX_DEPTH);
        yaml_event_delete(ev);
        l->depth--;
        return NULL;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        const char *raw = (const char *)ev->data.scalar.value;
        bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n = node_new(l, PG_CFG_SCALAR, &ev->start_mark);
        if (n == NULL) {
            break;
        }
        n->quoted = !plain;
        if (plain && (strcmp(raw, "~") == 0 || strcmp(raw, "null") == 0 || strcmp(raw, "Null") == 0 ||
                      strcmp(raw, "NULL") == 0 || raw[0] == '\0')) {
            n->kind = PG_CFG_NULL;
            n->value = "";
        } else if (is_key) {
            n->value = pg_arena_strdup(l->cfg->arena, raw);
        } else {
            const char *err = NULL;
            n->value = pg_config_expand_env(l->cfg->arena, raw, &err);
            if (n->value == NULL) {
                pg_diag_add(&l->cfg->diag, n, NULL, "%s", err);
                n->value = "";
            }
        }
        break;
    }
    case YAML_SEQUENCE_START_EVENT:
        n = node_new(l, PG_CFG_SEQ, &ev->start_mark);
        for (;;) {
            if (!next_event(l, &sub)) {
                n = NULL;
                break;
            }
            if (sub.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&sub);
                break;
            }
            struct pg_cfg_node *item = parse_node(l, &sub, false);
            if (item == NULL || n == NULL || node_push(l->cfg->arena, n, NULL, item) != 0) {
                n = NULL;
                break;
            }
        }
        break;
    case YAML_MAPPING_START_EVENT:
        n = node_new(l, PG_CFG_MAP, &ev->start_mark);
        for (;;) {
            if (!next_event(l, &sub)) {
                n = NULL;
                break;
            }
            if (sub.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&sub);
                break;
            }
            struct pg_cfg_node *key = parse_node(l, &sub, true);
            if (key == NULL) {
                n = NULL;
                break;
            }
            if (!next_event(l, &sub)) {
                n = NULL;
                break;
            }
            size_t saved_len = l->path_len;
            if (key->kind == PG_CFG_SCALAR) { /* a path too long for the buffer stays short */
                int w = snprintf(l->path + l->path_len, sizeof(l->path) - l->path_len, "%s%s",
                                 l->path_len ? "::" : "", key->value);
                if (w > 0 && (size_t)w < sizeof(l->path) - l->path_len) {
                    l->path_len += (size_t)w;
                } else {
                    l->path[l->path_len] = '\0';
                }
            }
            struct pg_cfg_node *val = parse_node(l, &sub, false);
            l->path_len = saved_len;
            l->path[saved_len] = '\0';
            if (val == NULL || n == NULL) {
                n = NULL;
                break;
            }
            if (key->kind != PG_CFG_SCALAR) {
                pg_diag_add(&l->cfg->diag, key, NULL, "mapping keys must be plain strings");
                continue;
            }
            bool dup = false;
            for (size_t i = 0; i < n->n; i++) {
                if (strcmp(n->keys[i]->value, key->value) == 0) {
                    char *kp = pg_arena_sprintf(l->cfg->arena, "%s%s%s", l->path,
                                                l->path_len ? "::" : "", key->value);
                    pg_diag_add(&l->cfg->diag, key, kp,
                                "duplicate key \"%s\" (first at line %d)", key->value,
                                n->keys[i]->line);
                    dup = true;
                }
            }
            if (!dup && node_push(l->cfg->arena, n, key, val) != 0) {
                n = NULL;
                break;
            }
        }
        break;
    case YAML_ALIAS_EVENT: {
        struct pg_cfg_node at = {.file = l->cfg->path, .line = (int)ev->start_mark.line + 1, .col = (int)ev->start_mark.column + 1};
        pg_diag_add(&l->cfg->diag, &at, NULL, "YAML aliases (*%s) are not supported",
                    (const char *)ev->data.alias.anchor);
        n = node_new(l, PG_CFG_NULL, &ev->start_mark);
        break;
    }
    default: {
        struct pg_cfg_node at = {.file = l->cfg->path, .line = (int)ev->start_mark.line + 1, .col = (int)ev->start_mark.column + 1};
        pg_diag_add(&l->cfg->diag, &at, NULL, "unexpected YAML event");
        break;
    }
    }
    yaml_event_delete(ev);
    l->depth--;
    return n;
}

struct pg_config *pg_config_load_string(const char *name, const char *text, size_t len)
{
    struct pg_config *cfg = calloc(1, sizeof(*cfg));
    struct loader l;
    yaml_event_t ev;
    bool ok = true;

    if (cfg == NULL) {
        return NULL;
    }
    cfg->arena = pg_arena_create(0);
    pg_diag_init(&cfg->diag);
    if (cfg->arena == NULL || cfg->diag.arena == NULL) {
        pg_config_free(cfg);
        return NULL;
    }
    cfg->path = pg_arena_strdup(cfg->arena, name);
    memset(&l, 0, sizeof(l));
    l.cfg = cfg;
    if (!yaml_parser_initialize(&l.parser)) {
        pg_config_free(cfg);
        return NULL;
    }
    yaml_parser_set_input_string(&l.parser, (const unsigned char *)text, len);
    /* STREAM_START, DOCUMENT_START, node, DOCUMENT_END, STREAM_END */
    while (ok) {
        if (!next_event(&l, &ev)) {
            ok = false;
            break;
        }
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_START_EVENT ||
            ev.type == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (cfg->root != NULL) {
            struct pg_cfg_node at = {.file = cfg->path, .line = (int)ev.start_mark.line + 1, .col = (int)ev.start_mark.column + 1};
            pg_diag_add(&cfg->diag, &at, NULL, "only one YAML document is allowed");
            yaml_event_delete(&ev);
            ok = false;
            break;
        }
        cfg->root = parse_node(&l, &ev, false);
        if (cfg->root == NULL) {
            ok = false;
        }
    }
    yaml_parser_delete(&l.parser);
    if (ok && cfg->root == NULL) {
        pg_diag_add(&cfg->diag, NULL, cfg->path, "the config is empty");
    } else if (ok && cfg->root->kind != PG_CFG_MAP) {
        pg_diag_add(&cfg->diag, cfg->root, NULL, "the config must be a mapping (receivers:, exporters:, service: ...)");
        cfg->root = NULL;
    }
    if (!ok) {
        cfg->root = NULL;
    }
    return cfg;
}

struct pg_config *pg_config_load(const char *path)
{
    struct pg_config *cfg;
    size_t n;
    char *buf = pg_file_read_all(path, CFG_MAX_BYTES, &n, NULL);
    int e = errno;

    if (buf == NULL) {
        if (e == ENOMEM) {
            return NULL;
        }
        /* An empty tree that carries the reason, so the caller reports it
         * like any other config problem. */
        cfg = pg_config_load_string(path, "{}", 2);
        if (cfg != NULL) {
            cfg->root = NULL;
            if (e == EFBIG) {
                pg_diag_add(&cfg->diag, NULL, path, "config file larger than %u bytes",
                            CFG_MAX_BYTES);
            } else {
                pg_diag_add(&cfg->diag, NULL, path, "cannot open config: %s", strerror(e));
            }
        }
        return cfg;
    }
    cfg = pg_config_load_string(path, buf, n);
    free(buf);
    return cfg;
}

void pg_config_free(struct pg_config *cfg)
{
    if (cfg == NULL) {
        return;
    }
    pg_diag_free(&cfg->diag);
    pg_arena_destroy(cfg->arena);
    free(cfg);
}

struct pg_cfg_node *pg_cfg_get(const struct pg_cfg_node *map, const char *key)
{
    if (map == NULL || map->kind != PG_CFG_MAP) {
        return NULL;
    }
    for (size_t i = 0; i < map->n; i++) {
        if (strcmp(map->keys[i]->value, key) == 0) {
            map->keys[i]->used = true;
            return map->items[i];
        }
    }
    return NULL;
}
