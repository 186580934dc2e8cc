/* SPDX-License-Identifier: Apache-2.0
 * OTLP/JSON (the protobuf JSON mapping as OTLP specifies it) for the
 * request and response messages, driven by the protobuf-c descriptors:
 * lowerCamelCase field names (the original snake_case names are accepted
 * too), trace_id / span_id / profile_id as hex, other bytes as base64,
 * 64-bit integers as strings when written and as strings or numbers when
 * read, enums as numbers, unknown fields ignored. Used by the otlp
 * receiver's HTTP side and the otlphttp exporter's `encoding: json`. */
#ifndef PG_OTLP_OTLP_JSON_H
#define PG_OTLP_OTLP_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "core/arena.h"
#include "core/err.h"

/* Parses @json (@len bytes, not NUL-terminated) as a message of @desc into
 * @arena (*@out lives there). Nesting deeper than 64, a wrong JSON type, a
 * bad hex/base64/number: MALFORMED naming the field path. Run
 * pg_otlp_validate on a request afterwards. json-c's parse tree (heap, freed
 * before returning) is bounded before parsing against what is left of
 * @arena's cap (LIMIT when over), so give @arena a cap. */
PG_MUST_CHECK
enum pg_err pg_otlp_json_decode(struct pg_arena *arena, const ProtobufCMessageDescriptor *desc,
                                const char *json, size_t len, ProtobufCMessage **out,
                                struct pg_status *st);

/* Writes @msg as compact JSON into @arena (*@out NUL-terminated, *@len
 * without the NUL). Default values are left out, as protobuf's JSON
 * printer does. */
PG_MUST_CHECK
enum pg_err pg_otlp_json_encode(struct pg_arena *arena, const ProtobufCMessage *msg, char **out,
                                size_t *len, struct pg_status *st);

#endif
