/* SPDX-License-Identifier: Apache-2.0
 * String-table references in attributes (KeyValue.key_strindex and
 * AnyValue.string_value_strindex, new in OTLP v1.10 and Profiles-only)
 * rewritten as plain key / string_value. The receiver resolves those of
 * resource and scope attributes (as the Collector's ProtoUnmarshaler does);
 * an exporter writing the v1.9 layout, which has no such fields, resolves the
 * dictionary's attribute values too. Runs on any thread; the request and the
 * strings it gains live in the caller's arena. */
#ifndef PG_OTLP_OTLP_REFS_H
#define PG_OTLP_OTLP_REFS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/arena.h"
#include "core/err.h"
#include "otlp/otlp.h"

/* Resolves the references of resource and scope attributes, and with
 * @with_dictionary those inside attribute_table values too (nested arrays and
 * kvlists included), in place. *@resolved (may be NULL) gains one per
 * reference rewritten. NOMEM/LIMIT from @a; MALFORMED when an index is past
 * string_table (a validated request has none). */
PG_MUST_CHECK
enum pg_err pg_otlp_refs_resolve(struct pg_arena *a, struct pg_otlp_request *req,
                                 bool with_dictionary, size_t *resolved, struct pg_status *st);

#endif
