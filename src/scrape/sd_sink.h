/* SPDX-License-Identifier: Apache-2.0
 * Where service discovery reports what it found: a small struct of function
 * pointers that the discovery's caller (the scraper) owns and hands to
 * file_sd and k8s_sd at start. Discovery never names the scraper, so calls
 * go one way: scrape.c -> file_sd.c / k8s_sd.c -> this sink. */
#ifndef PG_SCRAPE_SD_SINK_H
#define PG_SCRAPE_SD_SINK_H

#include <stddef.h>

#include "scrape/labels.h"

/* One discovered target before relabeling: address + labels of its group. */
struct pg_scrape_tg_target {
    const char *address;
    const struct pg_labels *labels; /* group and meta labels; borrowed */
};

struct pg_sd_sink {
    void *arg; /* borrowed: the sink owner's state */
    /* Replaces every target that came from @source (a discovery key such as
     * "file:/etc/t.json:0" or "pod:ns/name") of job @job with @tg (n may
     * be 0: the source is gone). @tg is borrowed for the call. */
    void (*sync)(void *arg, size_t job, const char *source, const struct pg_scrape_tg_target *tg,
                 size_t n);
};

#endif
