/* SPDX-License-Identifier: Apache-2.0
 * Interning builder for an OTLP ProfilesDictionary over the protobuf-c
 * structs: strings, functions, mappings, locations, stacks, attributes
 * (KeyValueAndUnit), links and attribute_indices lists are deduplicated by
 * value with O(1) hash lookups, indexes are handed out in first-use order,
 * and index 0 of every table is the zero value. Used by the pprof translator
 * and reusable for splitting / merging dictionaries (pg_dict_import_*). */
#ifndef PG_OTLP_DICT_H
#define PG_OTLP_DICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "otlp/otlp.h"

/* Return values of the interning calls besides a valid index (>= 0). */
#define PG_DICT_NOMEM (-1) /* arena exhausted: pg_arena_hit_cap(out) tells LIMIT from NOMEM */
#define PG_DICT_RANGE (-2) /* pg_dict_import_*: source index out of range */

struct pg_dict_builder;

/* One inline frame of a Location, already in this dictionary's indexes. */
struct pg_dict_line {
    int32_t function_index;
    int64_t line, column;
};

/* Everything emitted (strings, messages, final tables) is allocated in @out. The builder lives
 * in @scratch (may be the same arena; a separate one that dies after pg_dict_finish keeps the
 * request's arena tight); its hash tables and growing arrays are malloc'd and freed by a
 * cleanup hook when @scratch is destroyed, so the builder must not outlive @scratch.
 * Index 0 of every table is pre-seeded (link_table[0] = 16 + 8 zero bytes). NULL on OOM. */
struct pg_dict_builder *pg_dict_builder_new(struct pg_arena *out, struct pg_arena *scratch);

/* Strings are stored as valid UTF-8 without NUL bytes (protobuf-c strings are C strings):
 * an invalid sequence or a NUL becomes U+FFFD, and dedup is on the stored form. */
int32_t pg_dict_string(struct pg_dict_builder *b, const char *s, size_t len);
int32_t pg_dict_function(struct pg_dict_builder *b, int32_t name, int32_t system_name,
                         int32_t filename, int64_t start_line);
/* @attrs is copied. */
int32_t pg_dict_mapping(struct pg_dict_builder *b, uint64_t memory_start, uint64_t memory_limit,
                        uint64_t file_offset, int32_t filename, const int32_t *attrs,
                        size_t n_attrs);
int32_t pg_dict_location(struct pg_dict_builder *b, int32_t mapping_index, uint64_t address,
                         const struct pg_dict_line *lines, size_t n_lines, const int32_t *attrs,
                         size_t n_attrs);
/* Leaf first. An empty stack is index 0. */
int32_t pg_dict_stack(struct pg_dict_builder *b, const int32_t *location_indices, size_t n);
/* @value is deep-copied when new; NULL = no value (only the zero entry has that). */
int32_t pg_dict_attr(struct pg_dict_builder *b, int32_t key_strindex,
                     const struct pg_otlp_anyvalue *value, int32_t unit_strindex);
/* The same as pg_dict_attr with a STR AnyValue holding @s[0..len) made UTF-8-clean like
 * pg_dict_string (same entry either way), without a NUL-terminated copy of @s first. */
int32_t pg_dict_attr_str(struct pg_dict_builder *b, int32_t key_strindex, const char *s,
                         size_t len, int32_t unit_strindex);
int32_t pg_dict_link(struct pg_dict_builder *b, const uint8_t trace_id[16],
                     const uint8_t span_id[8]);
/* An immutable shared copy of an index list (e.g. Sample.attribute_indices): equal lists
 * get the same pointer. NULL for n == 0 or on OOM (check pg_arena_hit_cap / n). */
const int32_t *pg_dict_index_list(struct pg_dict_builder *b, const int32_t *idx, size_t n);

/* A NUL-terminated, UTF-8-clean copy of @s (same repair as pg_dict_string) in a scratch
 * buffer that stays valid until the next call; for building AnyValue strings. */
const char *pg_dict_tmp_cstr(struct pg_dict_builder *b, const char *s, size_t len);

/* Number of entries so far in each table (index 0 included). */
struct pg_dict_counts {
    size_t strings, functions, mappings, locations, stacks, attrs, links;
};
void pg_dict_counts(const struct pg_dict_builder *b, struct pg_dict_counts *out);

/* The hash slots and pointer arrays are malloc'd (freed when @scratch is destroyed), within
 * @scratch's cap: the most bytes they held at once, and whether a table could not grow
 * because of the cap (then report LIMIT, like pg_arena_hit_cap). */
size_t pg_dict_heap_peak(const struct pg_dict_builder *b);
bool pg_dict_hit_cap(const struct pg_dict_builder *b);

/* Snapshot of the tables as a ProfilesDictionary in @out (exact-size arrays). The builder
 * stays usable; entries are shared between snapshots. NULL on OOM. */
struct pg_otlp_dict *pg_dict_finish(struct pg_dict_builder *b);

/* ---- merging: re-intern entries of another dictionary -------------------------------
 * A remap caches source index -> builder index per table, so importing a whole request
 * costs one hash lookup per distinct source entry. Everything is copied by value
 * (recursively: a location imports its mapping, functions, strings, attributes). */
struct pg_dict_remap;
struct pg_dict_remap *pg_dict_remap_new(struct pg_arena *scratch, const struct pg_otlp_dict *src);
int32_t pg_dict_import_string(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx);
int32_t pg_dict_import_function(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx);
int32_t pg_dict_import_mapping(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx);
int32_t pg_dict_import_location(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx);
int32_t pg_dict_import_stack(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx);
int32_t pg_dict_import_attr(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx);
int32_t pg_dict_import_link(struct pg_dict_builder *b, struct pg_dict_remap *rm, int32_t idx);
/* Re-interns a list of source attribute indexes; the result (in the builder's out arena) is
 * written to *@out (NULL when n == 0). Returns 0, PG_DICT_NOMEM or PG_DICT_RANGE. */
int pg_dict_import_attr_list(struct pg_dict_builder *b, struct pg_dict_remap *rm,
                             const int32_t *idx, size_t n, int32_t **out);

/* Checks a request's dictionary and references: index 0 of every table is the zero value,
 * every *_index / *_strindex of profiles, samples, stacks, locations, mappings, functions and
 * attributes is in range, and attribute key lists of one sample/profile/location/mapping are
 * unique. With @no_duplicates also checks that no string, function, mapping, location, stack,
 * attribute or link appears twice (O(n) with hashing; uses @scratch). MALFORMED + reason. */
enum pg_err pg_dict_validate(struct pg_arena *scratch, const struct pg_otlp_request *req,
                             bool no_duplicates, struct pg_status *st);
/* The same checks plus the caps of @limits (NULL = none; otlp/otlp_decode.h), for requests
 * from the wire (pg_otlp_validate). The message names the field path and the values, e.g.
 * "resource_profiles[0].scope_profiles[0].profiles[1].samples[7].stack_index 12 is past
 * stack_table (10 entries)"; a cap gives LIMIT. Also refused: a Link trace_id/span_id or a
 * profile_id of another length than 16/8/16 (or empty), a KeyValue with both key and
 * key_strindex, repeated keys in resource/scope/kvlist attributes, AnyValues nested deeper
 * than max_anyvalue_depth, values and timestamps of different lengths, and
 * original_payload_format without original_payload (or the reverse). */
struct pg_otlp_limits;
enum pg_err pg_dict_validate_limits(struct pg_arena *scratch, const struct pg_otlp_request *req,
                                    bool no_duplicates, const struct pg_otlp_limits *limits,
                                    struct pg_status *st);

/* Value equality of AnyValues (anyvalue.c), shared with the tests/fuzzers; the byte hash
 * pg_dict_hash_bytes is in otlp/dict_hash.h. */
bool pg_dict_anyvalue_equal(const struct pg_otlp_anyvalue *a, const struct pg_otlp_anyvalue *b);

#endif
