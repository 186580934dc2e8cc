/* SPDX-License-Identifier: Apache-2.0
 * One hex digit's value, for the percent-decoders (OTTL, grpc-message) and
 * the credential file parser. */
#ifndef PG_CORE_HEX_H
#define PG_CORE_HEX_H

/* 0..15 for [0-9a-fA-F], -1 otherwise. */
static inline int pg_hex_digit(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

#endif
