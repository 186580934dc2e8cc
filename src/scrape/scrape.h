/* SPDX-License-Identifier: Apache-2.0
 * The scraper behind the pprof receiver's `scrape:` and `remote:` sections:
 * turns target groups (static_configs, file_sd_configs) into one target per
 * (address, enabled profile), relabels them, scrapes each on its own
 * schedule (stable offset inside the interval, one request at a time per
 * URL), translates the pprof exactly as the push path does and hands the
 * batch to the receiver's consumer. Loop thread only. */
#ifndef PG_SCRAPE_SCRAPE_H
#define PG_SCRAPE_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pipeline/component.h"
#include "pprof/translate.h"
#include "scrape/labels.h"
#include "scrape/scrape_config.h"
#include "scrape/sd_sink.h"

struct pg_scraper;


/* @cfg, @opts and @receiver_id are borrowed and must outlive the scraper.
 * @max_body caps a response body (the push path's max_request_body_size). */
struct pg_scraper *pg_scraper_create(struct pg_host *host, struct pg_consumer *next,
                                     const struct pg_scrape_config *cfg,
                                     const struct pg_translate_opts *opts, const char *receiver_id,
                                     size_t max_body, const char *default_service_name);
/* Where scraped bodies are decoded and translated: a worker pool's
 * background lane (below push work; core/work.h), copied. Without one, or
 * while its pool has no workers, on the loop. Before pg_scraper_start. */
struct pg_work_lane;
void pg_scraper_set_lane(struct pg_scraper *s, const struct pg_work_lane *lane);
/* Builds the static targets, starts file discovery and the timers. */
enum pg_err pg_scraper_start(struct pg_scraper *s, struct pg_status *st);
/* Replaces every target that came from @source (a discovery key such as
 * "static/0" or "file:/etc/t.json:0") of job @job_index with the targets of
 * @tg. Targets whose identity did not change keep their schedule and state. */
void pg_scraper_sync(struct pg_scraper *s, size_t job_index, const char *source,
                     const struct pg_scrape_tg_target *tg, size_t n);
/* Stops timers and discovery; in-flight scrapes that hold a profile window
 * open (seconds=N) are cancelled, others may finish into the pipeline. */
void pg_scraper_stop(struct pg_scraper *s);
bool pg_scraper_idle(const struct pg_scraper *s);
void pg_scraper_destroy(struct pg_scraper *s);
/* The /targets page of every running scraper, in two steps so that 25 000
 * targets are not formatted on the loop they live on: a snapshot (a flat
 * copy of each target's fields, taken on the loop thread) and its JSON,
 * {"activeTargets":[...],"droppedTargets":N}, written on any thread. The
 * caller owns the snapshot (NULL: out of memory). */
struct pg_scrape_page;
struct pg_scrape_page *pg_scrape_page_snapshot(void);
void pg_scrape_page_json(const struct pg_scrape_page *p, FILE *out);
void pg_scrape_page_free(struct pg_scrape_page *p);

/* Label set -> resource attribute pairs, per docs/scrape.md: every label
 * not starting with "__", except job and instance, which fill service.name
 * and service.instance.id only when relabeling set none. Exposed for tests. */
bool pg_scrape_resource_labels(const struct pg_labels *final_labels, bool remote,
                               struct pg_labels *out);

/* Appends the URL query of a target to @pq (cap @cap) with Prometheus's
 * url.Values semantics: keys sorted, every configured value of @params sent
 * (the key repeated), a `__param_<key>` label replacing the key's first
 * value. True when it holds `seconds`. Exposed for tests. */
bool pg_scrape_query(char *pq, size_t cap, const struct pg_strmap *params,
                     const struct pg_labels *l);

#endif
