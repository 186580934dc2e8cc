/* SPDX-License-Identifier: Apache-2.0
 * Small constructors for OTLP protobuf-c messages allocated in an arena:
 * KeyValue / AnyValue helpers used by the translator and by processors that
 * add resource or scope attributes (always plain key + string_value). */
#ifndef PG_OTLP_OTLP_BUILD_H
#define PG_OTLP_OTLP_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "otlp/otlp.h"

/* A KeyValue with plain @key and string_value @value (both copied into @arena).
 * NULL on arena exhaustion. */
struct pg_otlp_kv *pg_otlp_kv_str(struct pg_arena *arena, const char *key, const char *value);

/* AnyValue constructors (strings copied into @arena). NULL on arena exhaustion. */
struct pg_otlp_anyvalue *pg_otlp_any_str(struct pg_arena *arena, const char *s, size_t len);
struct pg_otlp_anyvalue *pg_otlp_any_int(struct pg_arena *arena, int64_t v);
struct pg_otlp_anyvalue *pg_otlp_any_bool(struct pg_arena *arena, bool v);

/* Appends @kv to the attribute list *@attrs of *@n entries: a new array in
 * @arena (the old one is left as is), *@n incremented. False on exhaustion. */
bool pg_otlp_kv_append(struct pg_arena *arena, struct pg_otlp_kv ***attrs, size_t *n,
                       struct pg_otlp_kv *kv);

#endif
