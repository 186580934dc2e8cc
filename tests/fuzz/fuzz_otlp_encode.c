/* SPDX-License-Identifier: Apache-2.0
 * Differential libFuzzer target for the hand-written OTLP encoder
 * (otlp/otlp_encode.c): whatever request protobuf-c can unpack from the
 * input (every field, oneof, packed repeat and unknown field it keeps) must
 * be encoded by pg_otlp_request_encode into exactly the bytes
 * protobuf_c_message_pack writes, as otlp/otlp_encode.h promises. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/otlp_encode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(&pg_otlp_request_descriptor, NULL, size, data);
    struct pg_arena *a;
    struct pg_status st;
    uint8_t *ref, *ours = NULL;
    size_t n, len = 0;

    if (m == NULL) {
        return 0;
    }
    n = protobuf_c_message_get_packed_size(m);
    ref = malloc(n ? n : 1);
    if (ref == NULL || protobuf_c_message_pack(m, ref) != n) {
        abort();
    }
    a = pg_arena_create(0);
    if (pg_otlp_request_encode((const struct pg_otlp_request *)m, a, &ours, &len, &st) !=
            PG_ERR_OK ||
        len != n || (n > 0 && memcmp(ours, ref, n) != 0)) {
        abort(); /* a byte that differs from protobuf-c's packing */
    }
    pg_arena_destroy(a);
    free(ref);
    protobuf_c_message_free_unpacked(m, NULL);
    return 0;
}
