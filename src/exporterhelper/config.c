/* SPDX-License-Identifier: Apache-2.0
 * The collector's standard exporter keys (retry_on_failure, sending_queue)
 * with its defaults, and the checks a field table cannot express. */
#include <stddef.h>

#include "core/storage.h"
#include "exporterhelper/exporterhelper.h"

static const char *const sizer_choices[] = {"requests", "items", "bytes", NULL};

const struct pg_field pg_exph_retry_fields[] = {
    PG_FIELD(struct pg_retry_config, "enabled", PG_FT_BOOL, enabled, "true", NULL),
    PG_FIELD(struct pg_retry_config, "initial_interval", PG_FT_DURATION, initial_interval_ns, "5s",
             NULL),
    PG_FIELD(struct pg_retry_config, "max_interval", PG_FT_DURATION, max_interval_ns, "30s", NULL),
    PG_FIELD(struct pg_retry_config, "max_elapsed_time", PG_FT_DURATION, max_elapsed_ns, "300s",
             "give up after this long; 0 = never"),
    PG_FIELD_RANGE(struct pg_retry_config, "multiplier", PG_FT_DOUBLE, multiplier, "1.5", 1, 100,
                   NULL),
    PG_FIELD_RANGE(struct pg_retry_config, "randomization_factor", PG_FT_DOUBLE,
                   randomization_factor, "0.5", 0, 1,
                   "jitter: each wait is drawn from interval*(1 +- factor)"),
    PG_FIELD_END,
};

static const struct pg_field batch_fields[] = {
    PG_FIELD(struct pg_exph_batch_config, "flush_timeout", PG_FT_DURATION, flush_timeout, "200ms",
             "send a partial batch after this long"),
    PG_FIELD_RANGE(struct pg_exph_batch_config, "min_size", PG_FT_INT, min_size, "8192", 0, 1e12,
                   "samples that trigger a send"),
    PG_FIELD_RANGE(struct pg_exph_batch_config, "max_size", PG_FT_INT, max_size, "0", 0, 1e12,
                   "samples per merged request at most; 0 = no limit"),
    PG_FIELD_END,
};

const struct pg_field pg_exph_queue_fields[] = {
    PG_FIELD(struct pg_exph_queue_config, "enabled", PG_FT_BOOL, enabled, "true",
             "false: no waiting room, only num_consumers requests in flight"),
    PG_FIELD_RANGE(struct pg_exph_queue_config, "queue_size", PG_FT_INT, queue_size, "1000", 1,
                   1e15,
                   "capacity in `sizer` units; when full the receiver answers 503 + Retry-After"),
    PG_FIELD_ENUM(struct pg_exph_queue_config, "sizer", sizer, "requests", sizer_choices,
                  "unit of queue_size: requests, items (profile samples) or bytes (memory the "
                  "queued and in-flight requests hold; with storage, their encoded size on disk)"),
    PG_FIELD_RANGE(struct pg_exph_queue_config, "num_consumers", PG_FT_INT, num_consumers, "10", 1,
                   1000, "concurrent exports"),
    PG_FIELD(struct pg_exph_queue_config, "block_on_overflow", PG_FT_BOOL, block_on_overflow,
             "false",
             "true: a full queue holds the pushing request (no answer yet) until there is room, "
             "up to the receiver's write_timeout, instead of answering 503 at once"),
    PG_FIELD_SECTION_PRESENT(struct pg_exph_queue_config, "batch", batch, batch_fields, has_batch,
                             "merge pushes into one export with one rebuilt dictionary"),
    PG_FIELD(struct pg_exph_queue_config, "storage", PG_FT_STR, storage, NULL,
             "id of a file_storage extension: accepted requests are spooled to disk until "
             "delivered; only requests being sent are held in memory"),
    PG_FIELD(struct pg_exph_queue_config, "replay_memory", PG_FT_BYTES, replay_memory, "0",
             "with storage: memory the replay of a previous run's backlog may hold (records read "
             "back, their encoded and compressed copies in flight), shrinking while live pushes "
             "hold memory; 0 = half of memory_limiter's soft limit (64MiB without one)"),
    PG_FIELD_END,
};

const char *pg_exph_sizer_name(int sizer)
{
    return sizer >= 0 && sizer <= PG_EXPH_SIZER_BYTES ? sizer_choices[sizer] : "?";
}

size_t pg_exph_config_check(const struct pg_exph_config *c, struct pg_diag *diag,
                            const struct pg_cfg_node *at, const char *path)
{
    size_t problems = 0;

    if (c->queue.has_batch && c->queue.batch.max_size > 0 &&
        c->queue.batch.max_size < c->queue.batch.min_size) {
        pg_diag_add(diag, at, path, "sending_queue::batch::max_size must be 0 or >= min_size");
        problems++;
    }
    if (c->queue.storage != NULL && !pg_storage_known(c->queue.storage)) {
        /* Extensions are created first, so a defined one is known. */
        pg_diag_add(diag, at, path,
                    "sending_queue::storage: \"%s\" is not a file_storage extension listed in "
                    "service::extensions; defined: %s",
                    c->queue.storage, pg_storage_ids());
        problems++;
    }
    return problems;
}
