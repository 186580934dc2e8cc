/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for pg_inflate: gzip and zlib input, a cap derived from
 * the input; the output never exceeds the cap, errors always carry a
 * message, and the arena stays within a small multiple of the cap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "codec/inflate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_arena *a;
    struct pg_status st;
    uint8_t *out = NULL;
    size_t out_len = 0, cap;
    enum pg_inflate_format fmt;
    enum pg_err err;

    if (size < 2) {
        return 0;
    }
    /* first byte picks the format and the cap (0 .. 1 MiB) */
    fmt = (data[0] & 1) ? PG_INFLATE_ZLIB : PG_INFLATE_GZIP;
    cap = ((size_t)data[0] >> 1) * 8192;
    data++;
    size--;
    a = pg_arena_create(0);
    err = pg_inflate(a, data, size, fmt, cap, &out, &out_len, &st);
    if (err == PG_ERR_OK) {
        if (out_len > cap || (out_len > 0 && out == NULL)) {
            abort();
        }
    } else if (out != NULL || st.msg[0] == '\0') {
        abort();
    }
    if (pg_arena_footprint(a) > 4 * cap + ((size_t)1 << 20)) {
        abort();
    }
    pg_arena_destroy(a);
    return 0;
}
