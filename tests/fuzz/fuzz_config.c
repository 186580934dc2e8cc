/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer: YAML config -> node tree -> service graph (with the real
 * registry, create() only). Invariants: never crash or leak; a config that
 * fails always says why, with a position when it came from the file. */
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "pipeline/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct event_base *base;
    struct pg_config *cfg;
    struct pg_service *svc = NULL;

    if (base == NULL) {
        base = event_base_new();
        pg_log_set_level(PG_LOG_OFF);
    }
    cfg = pg_config_load_string("fuzz.yaml", (const char *)data, size);
    if (cfg == NULL) {
        return 0;
    }
    if (cfg->diag.n == 0 && cfg->root != NULL) {
        svc = pg_service_build(cfg, pg_components, pg_components_count, base, &cfg->diag);
        if (svc == NULL && cfg->diag.n == 0) {
            abort(); /* a refused config must carry a reason */
        }
    } else if (cfg->diag.n == 0) {
        abort();
    }
    for (size_t i = 0; i < cfg->diag.n; i++) {
        if (cfg->diag.msgs[i] == NULL || cfg->diag.msgs[i][0] == '\0') {
            abort();
        }
    }
    pg_service_free(svc);
    pg_config_free(cfg);
    return 0;
}
