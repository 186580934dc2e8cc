/* SPDX-License-Identifier: Apache-2.0
 * Parses a whole JSON document with json-c for the pyroscope room's parsers: strict mode,
 * UTF-8 validated, depth capped, trailing bytes refused, memory estimated up front. */
#include "pyroscope/pyro_json.h"
#include "core/json_cost.h"

#include <stdbool.h>
#include <stdint.h>

enum pg_err pg_pyro_json_parse(struct pg_arena *a, const char *json, size_t len,
                               const char *what, struct json_object **root,
                               struct pg_status *st)
{
    *root = NULL;
    if (len > INT32_MAX) {
        return pg_status_set(st, PG_ERR_LIMIT, "%s: a %zu-byte JSON document is too large",
                             what, len);
    }
    if (pg_arena_cap(a) != 0) {
        size_t cost = pg_json_tree_cost(json, len), used = pg_arena_used(a);
        size_t room = pg_arena_cap(a) > used ? pg_arena_cap(a) - used : 0;
        if (cost > room) {
            return pg_status_set(st, PG_ERR_LIMIT,
                                 "%s: parsing the %zu-byte JSON would take about %zu KiB, over "
                                 "the %zu KiB left of the request's memory cap",
                                 what, len, cost >> 10, room >> 10);
        }
    }
    struct json_tokener *tok = json_tokener_new_ex(PG_PYRO_JSON_DEPTH);
    if (tok == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "%s: no memory for the JSON parser", what);
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    struct json_object *r = json_tokener_parse_ex(tok, json, (int)len);
    enum json_tokener_error je = json_tokener_get_error(tok);
    if (r == NULL && je == json_tokener_continue) {
        /* A NUL tells json-c the input is complete (a bare number at the end finishes). */
        r = json_tokener_parse_ex(tok, "", 1);
        if (r == NULL && json_tokener_get_error(tok) != json_tokener_success) {
            json_tokener_free(tok);
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "%s: the JSON document ends early (%zu bytes)", what, len);
        }
        json_tokener_free(tok);
        if (r == NULL) {
            return pg_status_set(st, PG_ERR_MALFORMED, "%s: the JSON document is null", what);
        }
        *root = r;
        return PG_ERR_OK; /* the whole input was read */
    }
    size_t at = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (r == NULL) {
        if (je == json_tokener_success) {
            return pg_status_set(st, PG_ERR_MALFORMED, "%s: the JSON document is null", what);
        }
        if (je == json_tokener_continue) {
            return pg_status_set(st, PG_ERR_MALFORMED, "%s: the JSON document ends early (%zu "
                                 "bytes)", what, len);
        }
        if (je == json_tokener_error_depth) {
            return pg_status_set(st, PG_ERR_MALFORMED, "%s: JSON nested deeper than %d levels",
                                 what, PG_PYRO_JSON_DEPTH);
        }
        return pg_status_set(st, PG_ERR_MALFORMED, "%s: JSON %s at offset %zu", what,
                             json_tokener_error_desc(je), at);
    }
    while (at < len && (json[at] == ' ' || json[at] == '\n' || json[at] == '\r' ||
                        json[at] == '\t')) {
        at++;
    }
    if (at < len) {
        json_object_put(r);
        return pg_status_set(st, PG_ERR_MALFORMED, "%s: bytes after the JSON document at offset "
                             "%zu", what, at);
    }
    *root = r;
    return PG_ERR_OK;
}
