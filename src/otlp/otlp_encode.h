/* SPDX-License-Identifier: Apache-2.0
 * A specialised protobuf encoder for ExportProfilesServiceRequest. It writes
 * exactly the bytes protobuf_c_message_pack() writes for the same structs
 * (field order, proto3 zero skipping, oneof rules, packed repeats, unknown
 * fields kept), but computes every nested message's size once: one sizing
 * pass fills a size cache in pre-order, one writing pass consumes it. The
 * samples and the dictionary of a small request (up to 256 KiB of them) are
 * written once, during the sizing pass, into a scratch block that the writing
 * pass copies. */
#ifndef PG_OTLP_OTLP_ENCODE_H
#define PG_OTLP_OTLP_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"
#include "otlp/otlp.h"

/* Serialises @req into @arena; *@out (owned by @arena) holds *@len bytes. The size cache and
 * the scratch are malloc'd; a small request's are kept for the thread's next call (freed at
 * thread exit), others freed before returning. LIMIT (arena cap or a message over 4 GiB),
 * NOMEM. */
PG_MUST_CHECK
enum pg_err pg_otlp_request_encode(const struct pg_otlp_request *req, struct pg_arena *arena,
                                   uint8_t **out, size_t *len, struct pg_status *st);

#endif
