/* SPDX-License-Identifier: Apache-2.0
 * The storage registry between file_storage extensions and the exporters
 * that spool through them (the collector's host extension lookup). */
#ifndef PG_STORAGE_STORAGE_H
#define PG_STORAGE_STORAGE_H

#include <stdbool.h>

#include "core/err.h"
#include "storage/spool.h"

/* A `file_storage` extension registers its options under its id at create();
 * an exporter checks the id at create (pg_storage_known) and, at start (after
 * extensions started), opens its own spool in a sub-directory named after the
 * exporter id, as the collector gives each component its own client. */
bool pg_storage_register(const char *id, const struct pg_spool_options *opt);
void pg_storage_unregister(const char *id);
bool pg_storage_known(const char *id);
/* Opens "<directory>/<owner with '/' made '_'>" with the extension's options;
 * PG_ERR_CONFIG when @storage_id is not registered. The caller owns *@out:
 * pg_storage_close(). */
PG_MUST_CHECK
enum pg_err pg_storage_open(const char *storage_id, const char *owner, struct pg_spool **out,
                            struct pg_status *st);
/* Syncs every spool opened through pg_storage_open whose fsync interval has
 * passed (the file_storage extension calls it from a timer). */
void pg_storage_sync_all(void);
/* Every registered id, comma separated, for messages (static buffer). */
const char *pg_storage_ids(void);

/* Closes a spool that pg_storage_open opened: forgets it (no more syncs from
 * pg_storage_sync_all), then pg_spool_close(). NULL is a no-op. */
void pg_storage_close(struct pg_spool *s);

#endif
