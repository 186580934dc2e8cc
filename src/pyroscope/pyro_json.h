/* SPDX-License-Identifier: Apache-2.0
 * The pyroscope room's JSON documents (sample_type_config, the Push API's JSON form) go
 * through core's one strict parse (core/json_strict.h) with the room's nesting cap and
 * json-c's UTF-8 check; the callers walk the tree with json-c's getters. */
#ifndef PG_PYROSCOPE_PYRO_JSON_H
#define PG_PYROSCOPE_PYRO_JSON_H

#include <stddef.h>

#include <json-c/json.h>

#include "core/json_strict.h"

#define PG_PYRO_JSON_DEPTH 16 /* the formats read here nest 5 levels at most */

/* Parses @json[0..len) into *@root (owned by the caller: json_object_put). @what names the
 * document in messages ("sample_type_config", "push"). MALFORMED with the offset, LIMIT when
 * the tree would not fit what is left of @a's cap. */
static inline enum pg_err pg_pyro_json_parse(struct pg_arena *a, const char *json, size_t len,
                                             const char *what, struct json_object **root,
                                             struct pg_status *st)
{
    return pg_json_parse_strict(a, json, len, what, PG_PYRO_JSON_DEPTH, PG_JSON_UTF8, root, st);
}

#endif
