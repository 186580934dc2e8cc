/* SPDX-License-Identifier: Apache-2.0
 * Decimal digits without printf, for hot paths (log lines, HTTP answer
 * heads, host:port) where a vsnprintf per number shows in the profile. */
#ifndef PG_CORE_DECIMAL_H
#define PG_CORE_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* Longest output of pg_fmt_u64: UINT64_MAX has 20 digits. */
#define PG_DECIMAL_U64_MAX 20

/* Writes the digits of @v into @buf (room for PG_DECIMAL_U64_MAX, no NUL
 * written) and returns their count. */
static inline size_t pg_fmt_u64(char *buf, uint64_t v)
{
    char t[PG_DECIMAL_U64_MAX];
    size_t n = 0;

    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) {
        buf[i] = t[n - 1 - i];
    }
    return n;
}

#endif
