/* SPDX-License-Identifier: Apache-2.0
 * The one estimate of json-c's heap use for a JSON text, shared by every room that parses
 * JSON with json-c (core/json_strict.c, for otlp/ and pyroscope/). json-c's tree lives on the
 * heap, outside the request arena, and is much larger than the text: an object costs about
 * 900 bytes (its hash table), an array about 100, every further element about 60 (measured
 * with json-c 0.16: 16 MB of OTLP/JSON took 285 MB, 11 MB of integer lists 423 MB). The
 * bound comes from one pass over the structural characters and is held against the arena's
 * cap before parsing, so a body of many tiny objects is refused before it is built. */
#ifndef PG_CORE_JSON_COST_H
#define PG_CORE_JSON_COST_H

#include <stdbool.h>
#include <stddef.h>

static inline size_t pg_json_tree_cost(const char *s, size_t n)
{
    size_t objects = 0, arrays = 0, commas = 0;
    bool in_str = false;

    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_str = false;
            }
            continue;
        }
        objects += c == '{';
        arrays += c == '[';
        commas += c == ',';
        in_str = c == '"';
    }
    return objects * 1024 + arrays * 128 + (commas + 1) * 64 + n;
}

#endif
