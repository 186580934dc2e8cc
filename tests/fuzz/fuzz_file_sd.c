/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for file_sd target-group files (JSON or YAML): parse must
 * either fail with a reason or report groups whose label sets are sorted
 * and carry __meta_filepath. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scrape/file_sd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(void *arg, size_t index, const char *const *targets, size_t n,
                  const struct pg_labels *labels)
{
    (void)arg;
    (void)index;
    for (size_t i = 0; i < n; i++) {
        if (targets[i] == NULL) {
            abort();
        }
    }
    if (pg_labels_get(labels, "__meta_filepath") == NULL) {
        abort();
    }
    for (size_t i = 1; i < labels->n; i++) {
        if (strcmp(labels->v[i - 1].name, labels->v[i].name) >= 0) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[300] = "";
    long n = pg_file_sd_parse("fuzz.json", (const char *)data, size, check, NULL, why,
                              sizeof(why));

    if (n < 0 && why[0] == '\0') {
        abort();
    }
    return 0;
}
