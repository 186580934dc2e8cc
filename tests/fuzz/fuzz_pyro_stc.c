/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for pyroscope/pyro_stc.c (the sample_type_config JSON part) and the
 * room's JSON entry. Oracle: no crash or leak (json-c's tree is freed on every path); what
 * parses has at most PG_PYRO_MAX_STC_ENTRIES entries, each typed, with a known aggregation
 * and flags only where they were given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pyroscope/pyro_stc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    struct pg_arena *a = pg_arena_create(16 << 20);
    struct pg_pyro_stc_entry *e;
    size_t n;
    struct pg_status st = {0};
    if (pg_pyro_stc_parse(a, copy, size, &e, &n, &st) == PG_ERR_OK) {
        check(n <= PG_PYRO_MAX_STC_ENTRIES);
        for (size_t i = 0; i < n; i++) {
            check(e[i].type != NULL);
            check(e[i].aggregation <= PG_PYRO_AGG_AVERAGE);
            check(e[i].has_cumulative || !e[i].cumulative);
            check(e[i].has_sampled || !e[i].sampled);
        }
    } else {
        check(st.code != PG_ERR_OK && st.msg[0] != '\0');
    }
    pg_arena_destroy(a);
    free(copy);
    return 0;
}
