/* SPDX-License-Identifier: Apache-2.0
 * The pyroscope room's one way into json-c: a whole document parsed strictly (UTF-8
 * checked, nesting capped, nothing but white space after it, a rough memory estimate held
 * against the request's arena), and small typed getters that name the offending key. */
#ifndef PG_PYROSCOPE_PYRO_JSON_H
#define PG_PYROSCOPE_PYRO_JSON_H

#include <stddef.h>

#include <json-c/json.h>

#include "core/arena.h"
#include "core/err.h"

#define PG_PYRO_JSON_DEPTH 16 /* the formats read here nest 5 levels at most */

/* Parses @json[0..len) into *@root (owned by the caller: json_object_put). @what names the
 * document in messages ("sample_type_config", "push"). MALFORMED with the offset, LIMIT when
 * the tree would not fit what is left of @a's cap. */
enum pg_err pg_pyro_json_parse(struct pg_arena *a, const char *json, size_t len,
                               const char *what, struct json_object **root,
                               struct pg_status *st);

#endif
