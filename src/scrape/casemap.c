/* SPDX-License-Identifier: Apache-2.0
 * Simple (one code point to one) case mapping from the UnicodeData ranges of
 * the scripts label values are written in; pcre2 has case tables but no
 * public API for them, and glibc's towlower depends on the process locale. */
#include "scrape/casemap.h"

/* Pairs where the upper case is even and the lower case the next odd. */
static bool even_pair(uint32_t c)
{
    return (c >= 0x100 && c <= 0x12f) || (c >= 0x132 && c <= 0x137) ||
           (c >= 0x14a && c <= 0x177) || (c >= 0x460 && c <= 0x481) ||
           (c >= 0x48a && c <= 0x4bf) || (c >= 0x4d0 && c <= 0x52f);
}

/* Pairs where the upper case is odd and the lower case the next even. */
static bool odd_pair(uint32_t c)
{
    return (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e) ||
           (c >= 0x4c1 && c <= 0x4ce);
}

uint32_t pg_case_lower(uint32_t c)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7) ||
        (c >= 0x391 && c <= 0x3ab && c != 0x3a2) || (c >= 0x410 && c <= 0x42f) ||
        (c >= 0xff21 && c <= 0xff3a)) {
        return c + 0x20;
    }
    if ((even_pair(c) && c % 2 == 0) || (odd_pair(c) && c % 2 == 1)) {
        return c + 1;
    }
    if (c >= 0x400 && c <= 0x40f) {
        return c + 0x50;
    }
    if (c >= 0x531 && c <= 0x556) {
        return c + 0x30;
    }
    if (c >= 0x388 && c <= 0x38a) {
        return c + 0x25;
    }
    switch (c) {
    case 0x130: return 'i'; /* İ */
    case 0x178: return 0xff; /* Ÿ */
    case 0x386: return 0x3ac;
    case 0x38c: return 0x3cc;
    case 0x38e: return 0x3cd;
    case 0x38f: return 0x3ce;
    case 0x4c0: return 0x4cf;
    default: return c;
    }
}

uint32_t pg_case_upper(uint32_t c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 0xe0 && c <= 0xfe && c != 0xf7) ||
        (c >= 0x3b1 && c <= 0x3cb && c != 0x3c2) || (c >= 0x430 && c <= 0x44f) ||
        (c >= 0xff41 && c <= 0xff5a)) {
        return c - 0x20;
    }
    if ((even_pair(c) && c % 2 == 1) || (odd_pair(c) && c % 2 == 0 && c > 0x139)) {
        return c - 1;
    }
    if (c >= 0x450 && c <= 0x45f) {
        return c - 0x50;
    }
    if (c >= 0x561 && c <= 0x586) {
        return c - 0x30;
    }
    if (c >= 0x3ad && c <= 0x3af) {
        return c - 0x25;
    }
    switch (c) {
    case 0xb5: return 0x39c;  /* micro sign -> Greek capital mu */
    case 0xff: return 0x178;  /* ÿ */
    case 0x131: return 'I';   /* dotless i */
    case 0x17f: return 'S';   /* long s */
    case 0x3c2: return 0x3a3; /* final sigma */
    case 0x3ac: return 0x386;
    case 0x3cc: return 0x38c;
    case 0x3cd: return 0x38e;
    case 0x3ce: return 0x38f;
    case 0x4cf: return 0x4c0;
    default: return c;
    }
}

/* Decodes one well-formed UTF-8 sequence at @s; 0 when it is not one. */
static size_t decode(const unsigned char *s, uint32_t *c)
{
    if (s[0] < 0x80) {
        *c = s[0];
        return 1;
    }
    if (s[0] >= 0xc2 && s[0] <= 0xdf && (s[1] & 0xc0) == 0x80) {
        *c = (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
        return 2;
    }
    if (s[0] >= 0xe0 && s[0] <= 0xef && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
        *c = (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
        return *c >= 0x800 && (*c < 0xd800 || *c > 0xdfff) ? 3 : 0;
    }
    return 0; /* 4-byte sequences have no mapping here: copied as bytes */
}

static size_t encode(uint32_t c, char *out)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    out[0] = (char)(0xe0 | c >> 12);
    out[1] = (char)(0x80 | (c >> 6 & 0x3f));
    out[2] = (char)(0x80 | (c & 0x3f));
    return 3;
}

size_t pg_utf8_case(char *dst, size_t cap, const char *src, bool upper)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t n = 0;

    if (cap == 0) {
        return 0;
    }
    while (*s) {
        char enc[3];
        uint32_t c;
        size_t in = decode(s, &c), out;

        if (in == 0) {
            enc[0] = (char)*s;
            in = out = 1;
        } else {
            out = encode(upper ? pg_case_upper(c) : pg_case_lower(c), enc);
        }
        if (n + out >= cap) {
            break;
        }
        for (size_t i = 0; i < out; i++) {
            dst[n++] = enc[i];
        }
        s += in;
    }
    dst[n] = '\0';
    return n;
}
