/* SPDX-License-Identifier: Apache-2.0
 * include_metadata for the receivers: a call's gRPC metadata into the
 * batch's struct pg_metadata, as the Collector's configgrpc builds
 * client.Info (every non-pseudo header, keys lower-case, one entry per
 * value, `-bin` values as sent). HTTP headers go through
 * http/http_request.h's pg_http_metadata_from_headers. */
#ifndef PG_RECEIVERHELPER_METADATA_H
#define PG_RECEIVERHELPER_METADATA_H

#include <stddef.h>

#include "core/arena.h"
#include "core/err.h"
#include "pipeline/batch.h"

/* One metadata pair as a transport hands it over (borrowed strings). */
struct pg_rxh_md_pair {
    const char *name;
    const char *value;
};

/* Copies @n pairs into @md in @arena: keys lower-cased, strings made valid
 * UTF-8 (core/utf8), pseudo-headers (":path", ...) left out. @md->peer_addr
 * is left alone. Errors: NOMEM / LIMIT from the arena. */
PG_MUST_CHECK
enum pg_err pg_rxh_metadata_from_pairs(struct pg_arena *arena, const struct pg_rxh_md_pair *pairs,
                                       size_t n, struct pg_metadata *md, struct pg_status *st);

#endif
