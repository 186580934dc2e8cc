/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for pyroscope/pyro_multipart.c. The first byte picks the boundary's
 * length (1..70), the next bytes are the boundary, the rest the body; the whole input also
 * goes through the Content-Type boundary parser. Oracle: no crash or leak; what parses has
 * at most PG_PYRO_MAX_PARTS parts, each named, its data inside the body, in order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pyroscope/pyro_multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char ct[512], b[PG_PYRO_MAX_BOUNDARY + 1];
    struct pg_status st = {0};

    if (size < sizeof(ct)) {
        memcpy(ct, data, size);
        ct[size] = '\0';
        if (pg_pyro_multipart_boundary(ct, b, sizeof(b), &st) == PG_ERR_OK) {
            check(b[0] != '\0' && strlen(b) <= PG_PYRO_MAX_BOUNDARY);
        }
    }
    if (size < 1) {
        return 0;
    }
    size_t blen = (size_t)(data[0] % PG_PYRO_MAX_BOUNDARY) + 1;
    if (size < 1 + blen) {
        return 0;
    }
    memcpy(b, data + 1, blen);
    b[blen] = '\0';
    if (strlen(b) != blen) {
        return 0; /* a NUL inside: callers pass C strings */
    }
    const uint8_t *body = data + 1 + blen;
    size_t len = size - 1 - blen;
    /* A copy of exactly the body's size, so ASan sees any read past its end. */
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, body, len);
    struct pg_arena *a = pg_arena_create(16 << 20);
    struct pg_pyro_part *parts;
    size_t n;
    if (pg_pyro_multipart_parse(a, copy, len, b, &parts, &n, &st) == PG_ERR_OK) {
        check(n <= PG_PYRO_MAX_PARTS);
        const uint8_t *prev = copy;
        for (size_t i = 0; i < n; i++) {
            check(parts[i].name != NULL && parts[i].name[0] != '\0');
            check(parts[i].data >= prev && parts[i].data + parts[i].len <= copy + len);
            prev = parts[i].data + parts[i].len;
            check(pg_pyro_multipart_find(parts, n, parts[i].name) <= &parts[i]);
        }
    } else {
        check(st.code != PG_ERR_OK && st.msg[0] != '\0');
    }
    pg_arena_destroy(a);
    free(copy);
    return 0;
}
