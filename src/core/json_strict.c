/* SPDX-License-Identifier: Apache-2.0
 * pg_json_parse_strict (core/json_strict.h): json-c's tokener run once over a whole
 * document, with the checks json-c leaves to its caller. */
#include "core/json_strict.h"

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/json_cost.h"

/* @n bytes as "<n> MiB" when both figures of a message reach a MiB, else KiB: the figure
 * stays readable for a 16 MB OTLP body and a 4 KiB sample_type_config alike. */
static size_t in_units(size_t n, bool mib)
{
    return mib ? n >> 20 : n >> 10;
}

/* What *@tok says about a document it did not finish (@len bytes). */
static enum pg_err refused(struct json_tokener *tok, size_t len, const char *what, int depth,
                           struct pg_status *st)
{
    enum json_tokener_error je = json_tokener_get_error(tok);
    size_t at = json_tokener_get_parse_end(tok);

    if (je == json_tokener_success) {
        return pg_status_set(st, PG_ERR_MALFORMED, "%s: the document is null, not an object",
                             what);
    }
    if (je == json_tokener_continue) {
        return pg_status_set(st, PG_ERR_MALFORMED, "%s: the document ends early (%zu bytes)",
                             what, len);
    }
    if (je == json_tokener_error_depth) {
        return pg_status_set(st, PG_ERR_MALFORMED, "%s: nested deeper than %d objects/arrays",
                             what, depth);
    }
    return pg_status_set(st, PG_ERR_MALFORMED, "%s: %s at offset %zu", what,
                         json_tokener_error_desc(je), at);
}

enum pg_err pg_json_parse_strict(struct pg_arena *a, const char *json, size_t len,
                                 const char *what, int depth, unsigned flags,
                                 struct json_object **root, struct pg_status *st)
{
    struct json_tokener *tok;
    struct json_object *r;
    enum pg_err err = PG_ERR_OK;

    *root = NULL;
    if (len > INT32_MAX) {
        return pg_status_set(st, PG_ERR_LIMIT, "%s: a %zu-byte document is too large", what,
                             len);
    }
    if (pg_arena_cap(a) != 0) {
        size_t cost = pg_json_tree_cost(json, len), used = pg_arena_used(a);
        size_t room = pg_arena_cap(a) > used ? pg_arena_cap(a) - used : 0;
        bool mib = cost >> 20 != 0 && room >> 20 != 0;

        if (cost > room) {
            return pg_status_set(st, PG_ERR_LIMIT,
                                 "%s: parsing the %zu-byte document would take about %zu %s, "
                                 "over the %zu %s left of the request's memory cap",
                                 what, len, in_units(cost, mib), mib ? "MiB" : "KiB",
                                 in_units(room, mib), mib ? "MiB" : "KiB");
        }
    }
    tok = json_tokener_new_ex(depth);
    if (tok == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: no memory for the JSON parser", what);
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
                                    ((flags & PG_JSON_UTF8) != 0 ? JSON_TOKENER_VALIDATE_UTF8 : 0));
    r = json_tokener_parse_ex(tok, json, (int)len);
    if (r == NULL && json_tokener_get_error(tok) == json_tokener_continue) {
        /* A NUL byte tells json-c the input is complete: a top-level literal or number at
         * the very end is finished (every byte was read), anything else is cut short. */
        r = json_tokener_parse_ex(tok, "", 1);
        if (r == NULL && json_tokener_get_error(tok) != json_tokener_success) {
            err = pg_status_set(st, PG_ERR_MALFORMED, "%s: the document ends early (%zu bytes)",
                                what, len);
        } else if (r == NULL) {
            err = refused(tok, len, what, depth, st);
        }
    } else if (r == NULL) {
        err = refused(tok, len, what, depth, st);
    } else {
        /* White space after the document (a trailing newline) is fine, anything else not. */
        size_t end = json_tokener_get_parse_end(tok);

        while (end < len && (json[end] == ' ' || json[end] == '\n' || json[end] == '\r' ||
                             json[end] == '\t')) {
            end++;
        }
        if (end < len) {
            json_object_put(r);
            r = NULL;
            err = pg_status_set(st, PG_ERR_MALFORMED, "%s: bytes after the document at offset %zu",
                                what, end);
        }
    }
    json_tokener_free(tok);
    *root = r;
    return err;
}
