/* SPDX-License-Identifier: Apache-2.0
 * The one strict front end to json-c for every room that reads JSON (otlp/otlp_json.c,
 * pyroscope's sample_type_config and Push API): a whole document in one call, json-c's
 * strict mode, nesting capped, nothing but white space after the document, NUL-finished
 * so a bare number at the end counts, and json-c's heap use (core/json_cost.h) held
 * against the request arena's cap first. Every failure names the document and the offset. */
#ifndef PG_CORE_JSON_STRICT_H
#define PG_CORE_JSON_STRICT_H

#include <stddef.h>

#include "core/arena.h"
#include "core/err.h"

struct json_object; /* json-c's; callers that walk the tree include <json-c/json.h> */

/* Also have json-c check that strings are valid UTF-8 (otherwise the caller does). */
#define PG_JSON_UTF8 1u

/* Parses @json[0..len) into *@root (the caller's: json_object_put). @what starts every
 * message ("otlp/json", "push"); @depth caps nesting (objects and arrays); @flags is 0 or
 * PG_JSON_UTF8. LIMIT when the document is over 2 GiB or its tree would not fit what is
 * left of @a's cap (a cap of 0: no check); NOMEM; MALFORMED for a document that ends early,
 * is null, nests deeper than @depth, has bytes after it or anything json-c refuses (with
 * the offset). */
enum pg_err pg_json_parse_strict(struct pg_arena *a, const char *json, size_t len,
                                 const char *what, int depth, unsigned flags,
                                 struct json_object **root, struct pg_status *st);

#endif
