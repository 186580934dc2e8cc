/* SPDX-License-Identifier: Apache-2.0 */
#include "core/base64.h"

#include <stdbool.h>

static const char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 6-bit value of @c, or -1; the URL-safe '-' and '_' only when @url_safe. */
static int sextet(char c, bool url_safe)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '+' || (url_safe && c == '-')) {
        return 62;
    }
    if (c == '/' || (url_safe && c == '_')) {
        return 63;
    }
    return -1;
}

long pg_base64_decode(const char *in, size_t n, enum pg_base64_mode mode, uint8_t *out,
                      size_t cap)
{
    bool lenient = mode == PG_BASE64_LENIENT;
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t o = 0;

    if (lenient) {
        while (n > 0 && in[n - 1] == '=') {
            n--;
        }
    } else {
        size_t pad = 0;

        if (n % 4 != 0) {
            return -1;
        }
        /* At most two '=', and only in the last group. */
        while (pad < 2 && n > 0 && in[n - 1] == '=') {
            n--;
            pad++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int v = sextet(in[i], lenient);

        if (v < 0) {
            return -1;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap) {
                return -1;
            }
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    /* A lone character in the last group carries no whole byte. */
    if (bits >= 6) {
        return -1;
    }
    return (long)o;
}

long pg_base64_encode(const uint8_t *in, size_t n, char *out, size_t cap)
{
    size_t o = 0;

    if (cap < pg_base64_encoded_len(n) + 1) {
        return -1;
    }
    for (size_t i = 0; i < n; i += 3) {
        size_t rem = n - i;
        uint32_t v = (uint32_t)in[i] << 16;

        if (rem > 1) {
            v |= (uint32_t)in[i + 1] << 8;
        }
        if (rem > 2) {
            v |= in[i + 2];
        }
        out[o++] = k_alphabet[(v >> 18) & 63];
        out[o++] = k_alphabet[(v >> 12) & 63];
        out[o++] = rem > 1 ? k_alphabet[(v >> 6) & 63] : '=';
        out[o++] = rem > 2 ? k_alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return (long)o;
}
