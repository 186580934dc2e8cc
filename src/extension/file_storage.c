/* SPDX-License-Identifier: Apache-2.0
 * Extension `file_storage`: the collector's storage extension, backing
 * `sending_queue.storage` with the checksummed spool of storage/spool.h. It
 * registers its options under its id at create, so exporters can check the
 * reference during `validate`; each exporter opens its own spool under
 * <directory>/<exporter id> at start. A timer flushes spools in `interval`
 * fsync mode so an idle gateway does not keep unsynced records. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "pipeline/component.h"
#include "core/log.h"
#include "storage/spool.h"
#include "storage/storage.h"

struct fs_cfg {
    char *directory;
    int fsync;              /* index into fsync_choices */
    int64_t fsync_interval; /* ns */
    uint64_t max_size;
    uint64_t segment_size;
    int64_t timeout;        /* accepted for collector compatibility; unused */
};

struct fs_state {
    struct fs_cfg cfg;
    const char *id;         /* borrowed from ctx (lives until destroy) */
    const char *log_name;   /* borrowed */
    struct event_base *base;
    struct event *timer;    /* owned */
    bool registered;
};

static const char *const fsync_choices[] = {"always", "interval", NULL};

static const struct pg_field fs_fields[] = {
    PG_FIELD(struct fs_cfg, "directory", PG_FT_STR, directory, "/var/lib/pprofgate/file_storage",
             "where spools live (one sub-directory per exporter); a volume"),
    PG_FIELD_ENUM(struct fs_cfg, "fsync", fsync, "always", fsync_choices,
                  "always: every accepted request is on disk before the 204; interval: every "
                  "fsync_interval"),
    PG_FIELD(struct fs_cfg, "fsync_interval", PG_FT_DURATION, fsync_interval, "1s",
             "with fsync: interval"),
    PG_FIELD(struct fs_cfg, "max_size", PG_FT_BYTES, max_size, "1GiB",
             "cap per spool; when full the receiver answers 503 Retry-After"),
    PG_FIELD(struct fs_cfg, "segment_size", PG_FT_BYTES, segment_size, "8MiB",
             "segment file size; a segment is deleted once all of it is delivered"),
    PG_FIELD(struct fs_cfg, "timeout", PG_FT_DURATION, timeout, "1s",
             "accepted for collector compatibility"),
    PG_FIELD_END,
};

static void fs_options(const struct fs_state *fs, struct pg_spool_options *o)
{
    memset(o, 0, sizeof(*o));
    o->dir = fs->cfg.directory;
    o->max_bytes = fs->cfg.max_size;
    o->segment_bytes = fs->cfg.segment_size;
    o->fsync = fs->cfg.fsync == 0 ? PG_SPOOL_FSYNC_ALWAYS : PG_SPOOL_FSYNC_INTERVAL;
    o->fsync_interval_ns = fs->cfg.fsync_interval;
    o->log_name = fs->log_name;
}

static enum pg_err fs_create(const struct pg_component_ctx *ctx, void **state)
{
    struct fs_state *fs = calloc(1, sizeof(*fs));
    size_t before = ctx->diag->n;
    struct pg_spool_options o;

    *state = NULL;
    if (fs == NULL) {
        return PG_ERR_NOMEM;
    }
    fs->id = ctx->id;
    fs->log_name = ctx->log_name;
    fs->base = ctx->host != NULL ? ctx->host->base : NULL;
    pg_cfg_bind(ctx->config_arena, ctx->diag, ctx->config, fs_fields, &fs->cfg, ctx->path);
    if (ctx->diag->n == before) {
        if (fs->cfg.directory == NULL || fs->cfg.directory[0] == '\0') {
            pg_diag_add(ctx->diag, ctx->config, ctx->path, "directory must not be empty");
        } else if (fs->cfg.directory[0] != '/') {
            pg_diag_add(ctx->diag, ctx->config, ctx->path,
                        "directory \"%s\" must be an absolute path", fs->cfg.directory);
        }
        if (fs->cfg.max_size < 1024 * 1024) {
            pg_diag_add(ctx->diag, ctx->config, ctx->path,
                        "max_size must be at least 1MiB (got %llu bytes)",
                        (unsigned long long)fs->cfg.max_size);
        }
        if (fs->cfg.fsync == 1 && fs->cfg.fsync_interval <= 0) {
            pg_diag_add(ctx->diag, ctx->config, ctx->path,
                        "fsync_interval must be greater than zero with fsync: interval");
        }
    }
    if (ctx->diag->n > before) {
        free(fs);
        return PG_ERR_CONFIG;
    }
    fs_options(fs, &o);
    if (!pg_storage_register(fs->id, &o)) {
        free(fs);
        return PG_ERR_NOMEM;
    }
    fs->registered = true;
    *state = fs;
    return PG_ERR_OK;
}

static void fs_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    pg_storage_sync_all();
}

static enum pg_err fs_start(void *state, struct pg_status *st)
{
    struct fs_state *fs = state;
    struct stat sb;

    /* Fail at start, with the reason, rather than on the first request. */
    if (mkdir(fs->cfg.directory, 0750) != 0 && errno != EEXIST) {
        return pg_status_set(st, PG_ERR_IO, "%s: cannot create directory %s: %s", fs->log_name,
                             fs->cfg.directory, strerror(errno));
    }
    if (stat(fs->cfg.directory, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        return pg_status_set(st, PG_ERR_IO, "%s: %s is not a directory", fs->log_name,
                             fs->cfg.directory);
    }
    if (access(fs->cfg.directory, W_OK | X_OK) != 0) {
        return pg_status_set(st, PG_ERR_IO,
                             "%s: directory %s is not writable by this user (%s); mount a "
                             "writable volume there",
                             fs->log_name, fs->cfg.directory, strerror(errno));
    }
    if (fs->cfg.fsync == 1 && fs->base != NULL) {
        struct timeval tv = {(time_t)(fs->cfg.fsync_interval / 1000000000),
                             (suseconds_t)(fs->cfg.fsync_interval % 1000000000 / 1000)};
        fs->timer = event_new(fs->base, -1, EV_PERSIST, fs_tick, fs);
        if (fs->timer == NULL || event_add(fs->timer, &tv) != 0) {
            return pg_status_set(st, PG_ERR_NOMEM, "%s: cannot arm the fsync timer",
                                 fs->log_name);
        }
    }
    pg_log_info(fs->log_name, "storage in %s (fsync %s, max_size %llu MiB)", fs->cfg.directory,
                fsync_choices[fs->cfg.fsync], (unsigned long long)(fs->cfg.max_size >> 20));
    return PG_ERR_OK;
}

static void fs_shutdown(void *state)
{
    struct fs_state *fs = state;
    if (fs->timer != NULL) {
        event_del(fs->timer);
    }
    pg_storage_sync_all();
}

static void fs_destroy(void *state)
{
    struct fs_state *fs = state;
    if (fs->timer != NULL) {
        event_free(fs->timer);
    }
    if (fs->registered) {
        pg_storage_unregister(fs->id);
    }
    free(fs);
}

const struct pg_component_ops pg_extension_file_storage = {
    .type = "file_storage",
    .kind = PG_KIND_EXTENSION,
    .fields = fs_fields,
    .doc = "on-disk persistent queue for exporters' sending_queue.storage",
    .create = fs_create,
    .start = fs_start,
    .shutdown = fs_shutdown,
    .destroy = fs_destroy,
};
