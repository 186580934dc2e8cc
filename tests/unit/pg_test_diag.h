/* SPDX-License-Identifier: Apache-2.0
 * Shared by the unit tests that check config diagnostics. */
#ifndef PG_TEST_DIAG_H
#define PG_TEST_DIAG_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"

/* True when some diagnostic line contains @needle; otherwise prints them all
 * so a failing CHECK shows what was reported instead. */
static inline bool pg_test_diag_has(const struct pg_diag *d, const char *needle)
{
    for (size_t i = 0; i < d->n; i++) {
        if (strstr(d->msgs[i], needle) != NULL) {
            return true;
        }
    }
    fprintf(stderr, "  no diagnostic contains \"%s\"; have:\n", needle);
    for (size_t i = 0; i < d->n; i++) {
        fprintf(stderr, "    %s\n", d->msgs[i]);
    }
    return false;
}

#endif
