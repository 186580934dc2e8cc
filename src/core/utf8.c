/* SPDX-License-Identifier: Apache-2.0
 * UTF-8 validation and repair, pure: no logging, no counting (see utf8.h). */
#include "core/utf8.h"

#include <string.h>


size_t pg_utf8_seq(const uint8_t *p, size_t n)
{
    uint8_t c;

    if (n == 0) {
        return 0;
    }
    c = p[0];
    if (c >= 0x01 && c < 0x80) {
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
    }
    if (c >= 0xe0 && c <= 0xef) {
        if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80) {
            return 0;
        }
        if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f)) {
            return 0; /* overlong, or a UTF-16 surrogate */
        }
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80) {
            return 0;
        }
        if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f)) {
            return 0; /* overlong, or past U+10FFFF */
        }
        return 4;
    }
    return 0; /* NUL, continuation byte, C0/C1 (always overlong), F5..FF */
}

bool pg_utf8_valid(const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0;

    /* ASCII without NUL, eight bytes per step: most strings are all of it */
    for (; n - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (((w | ((w - 0x0101010101010101ull) & ~w)) & 0x8080808080808080ull) != 0) {
            break; /* a byte >= 0x80 or a zero byte: the loop below decides */
        }
    }
    while (i < n) {
        size_t k;
        if (p[i] >= 0x01 && p[i] < 0x80) {
            i++; /* the common case, kept cheap */
            continue;
        }
        k = pg_utf8_seq(p + i, n - i);
        if (k == 0) {
            return false;
        }
        i += k;
    }
    return true;
}

size_t pg_utf8_repair(char *dst, const char *s, size_t n, size_t *bad)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0, o = 0;

    while (i < n) {
        size_t k = pg_utf8_seq(p + i, n - i);
        if (k == 0) {
            memcpy(dst + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
            (*bad)++;
        } else {
            memcpy(dst + o, p + i, k);
            o += k;
            i += k;
        }
    }
    return o;
}
