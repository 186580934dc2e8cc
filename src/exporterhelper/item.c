/* SPDX-License-Identifier: Apache-2.0
 * A queue item: the batches merged into one send, the spool record ids it
 * carries, and its release (acked off the spool unless kept, units given
 * back to the queue). Under the exporter's lock. */
#include <stdlib.h>

#include "core/log.h"
#include "core/vec.h"
#include "exporterhelper/internal.h"

void pg_exph_item_free(struct pg_exph *h, struct pg_exph_item *it)
{
    if (it == NULL) {
        return;
    }
    h->q_used -= it->units;
    /* Delivered or dropped for good => off the spool. */
    for (size_t i = 0; h->spool != NULL && !it->keep_spooled && i < it->n_spool_ids; i++) {
        struct pg_status st;

        if (pg_spool_ack(h->spool, it->spool_ids[i], &st) != PG_ERR_OK) {
            pg_log_warn(h->log, "%s", pg_status_text(&st));
        }
    }
    free(it->spool_ids);
    free(it->raw);
    for (size_t i = 0; i < it->n_batches; i++) {
        pg_batch_unref(it->batches[i]);
    }
    free(it->batches);
    free(it);
}

bool pg_exph_item_add(struct pg_exph_item *it, struct pg_batch *b, size_t samples)
{
    if (!PG_VEC_GROW(NULL, it->batches, it->cap_batches, it->n_batches, 4, 0)) {
        return false;
    }
    it->batches[it->n_batches++] = pg_batch_ref(b);
    it->samples += samples;
    return true;
}

/* Records @id as carried by @it (acked when @it is freed). */
bool pg_exph_item_add_spool_id(struct pg_exph_item *it, uint64_t id)
{
    if (!PG_VEC_GROW(NULL, it->spool_ids, it->cap_spool_ids, it->n_spool_ids, 4, 0)) {
        return false;
    }
    it->spool_ids[it->n_spool_ids++] = id;
    return true;
}
