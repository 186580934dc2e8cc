/* SPDX-License-Identifier: Apache-2.0
 * file_sd_configs: target groups from JSON or YAML files (Prometheus's
 * format: a list of {targets: [...], labels: {...}}). Globs are expanded and
 * every file stat'ed each second; a file whose inode, size or mtime changed
 * is re-read at once (on a reader thread), every file at refresh_interval
 * regardless. A file that
 * fails to parse keeps its previous targets (the failure is logged and
 * counted); a file that disappears removes its targets. */
#ifndef PG_SCRAPE_FILE_SD_H
#define PG_SCRAPE_FILE_SD_H

#include "core/err.h"
#include "scrape/labels.h"
#include "scrape/scrape_config.h"
#include "scrape/sd_sink.h"

struct event_base;
struct pg_file_sd;

/* Starts watching; groups go to @sink (copied). *@out stays NULL when no
 * job has file_sd_configs. */
enum pg_err pg_file_sd_start(const struct pg_sd_sink *sink, struct event_base *base,
                             const struct pg_scrape_config *cfg, struct pg_file_sd **out,
                             struct pg_status *st);
void pg_file_sd_free(struct pg_file_sd *f);

/* Parses a target-group file's text. Calls @emit once per group, in order;
 * @labels includes __meta_filepath. Returns the number of groups, or -1
 * with @why set (the caller keeps the previous groups). Exposed for tests
 * and the fuzzer. */
typedef void (*pg_file_sd_emit_fn)(void *arg, size_t index, const char *const *targets,
                                   size_t n_targets, const struct pg_labels *labels);
long pg_file_sd_parse(const char *path, const char *text, size_t len, pg_file_sd_emit_fn emit,
                      void *arg, char *why, size_t why_size);

#endif
