/* SPDX-License-Identifier: Apache-2.0
 * The fast unpack of a well-formed OTLP request into protobuf-c's structs:
 * the same layout and values protobuf_c_message_unpack builds, in one arena,
 * at a fraction of its cost. It takes only the plain case and declines the
 * rest, for which the caller runs protobuf-c's path (otlp_decode.c), which
 * also explains what is wrong. Runs on any thread; no state. */
#ifndef PG_OTLP_OTLP_UNPACK_H
#define PG_OTLP_OTLP_UNPACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "otlp/otlp.h"

enum pg_otlp_unpack_result {
    PG_OTLP_UNPACK_OK = 0,
    /* Not the plain case: a wire type its field cannot have (a repeated
     * scalar not packed, too), a known field with a multi-byte tag, a
     * singular message twice (protobuf merges them), a packed field in two
     * runs, nesting past @max_depth, malformed bytes. (Unknown fields are
     * kept, as protobuf-c keeps them.) */
    PG_OTLP_UNPACK_DECLINED,
    PG_OTLP_UNPACK_NOMEM, /* the arena refused (its cap, or no memory) */
};

/* Unpacks @buf (@len bytes) as an ExportProfilesServiceRequest into @arena;
 * *@out lives there. NUL bytes inside strings become 0xFF (never UTF-8), so
 * the UTF-8 repair turns them into U+FFFD instead of protobuf-c cutting the
 * string. @info (filled on OK) says whether the strings need that repair.
 * On anything but OK, *@out is NULL and what was allocated stays in @arena. */
struct pg_otlp_unpack_info {
    size_t suspect_strings; /* not valid UTF-8, or held a NUL: the repair has work */
    size_t longest_string;  /* bytes of the longest string */
};
enum pg_otlp_unpack_result pg_otlp_unpack_request(struct pg_arena *arena, const uint8_t *buf,
                                                  size_t len, unsigned max_depth,
                                                  struct pg_otlp_request **out,
                                                  struct pg_otlp_unpack_info *info);

/* The same, keeping the samples of a profile that has @lazy_min or more of them (0: never)
 * in wire form when they are canonical (otlp_lazy.h); a non-canonical one declines. */
enum pg_otlp_unpack_result pg_otlp_unpack_request_lazy(struct pg_arena *arena,
                                                       const uint8_t *buf, size_t len,
                                                       unsigned max_depth, size_t lazy_min,
                                                       struct pg_otlp_request **out,
                                                       struct pg_otlp_unpack_info *info);

#endif
