/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer: YAML config -> node tree -> service graph (with the real
 * registry, create() only). Invariants: never crash or leak; a config that
 * fails always says why, with a position when it came from the file. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "pipeline/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct event_base *base;
    static FILE *devnull; /* kept for the process */
    struct pg_config *cfg;
    struct pg_service *svc = NULL;

    if (base == NULL) {
        base = event_base_new();
        devnull = fopen("/dev/null", "w");
        pg_log_set_level(PG_LOG_OFF);
    }
    cfg = pg_config_load_string("fuzz.yaml", (const char *)data, size);
    if (cfg == NULL) {
        return 0;
    }
    /* As main.c: the graph is built even after loading problems (a
     * duplicate key), so one run lists them all. */
    if (cfg->root != NULL) {
        size_t before = cfg->diag.n;
        svc = pg_service_build(cfg, pg_components, pg_components_count, base, &cfg->diag);
        if (svc == NULL && cfg->diag.n == before) {
            abort(); /* a refused config must carry a reason */
        }
    } else if (cfg->diag.n == 0) {
        abort();
    }
    for (size_t i = 0; i < cfg->diag.n_all; i++) {
        if (cfg->diag.all[i].text == NULL || cfg->diag.all[i].text[0] == '\0') {
            abort();
        }
    }
    if (devnull != NULL) {
        pg_diag_print(&cfg->diag, devnull); /* the ordering pass, on every input */
    }
    pg_service_free(svc);
    pg_config_free(cfg);
    return 0;
}
