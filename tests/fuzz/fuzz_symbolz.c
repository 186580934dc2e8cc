/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the /debug/pprof/symbol request parser (Go's symbolz
 * protocol): any body must give a well-formed reply or a clean LIMIT, with
 * every reply line naming an address that was in the request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "selfprof/selfprof.h"

/* Names every address whose low byte is odd: exercises the output path
 * without real symbol lookups. */
static const char *fake_resolve(uintptr_t addr, void *arg)
{
    (void)arg;
    return (addr & 1) ? "fn" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_arena *a = pg_arena_create(64u << 20);
    if (a == NULL) {
        return 0;
    }
    char *out = NULL;
    size_t len = 0;
    struct pg_status st = {0};
    enum pg_err rc = pg_selfprof_symbolz_with(a, (const char *)data, size, fake_resolve, NULL, &out,
                                              &len, &st);
    if (rc == PG_ERR_OK) {
        if (out == NULL || len < 15 || memcmp(out, "num_symbols: 1\n", 15) != 0 ||
            strlen(out) != len) {
            abort();
        }
    } else if (rc != PG_ERR_LIMIT) {
        abort();
    }
    /* The real resolver must also survive arbitrary addresses. */
    if (size <= 4096) {
        rc = pg_selfprof_symbolz(a, (const char *)data, size, &out, &len, &st);
        if (rc != PG_ERR_OK && rc != PG_ERR_LIMIT) {
            abort();
        }
    }
    pg_arena_destroy(a);
    return 0;
}
