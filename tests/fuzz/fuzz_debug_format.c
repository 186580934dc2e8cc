/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the debug exporter's text (exporter/debug_format.c,
 * debug_annotate.c): whatever request protobuf-c can unpack, with any index
 * pointing anywhere, is formatted at normal and detailed, with and without
 * pprofgate's annotations, without a crash, a leak or undefined behaviour,
 * and the buffer cap holds. An OTLP receiver will hand it such requests. */
#include <stdint.h>
#include <stdlib.h>

#include "exporter/debug_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(&pg_otlp_request_descriptor, NULL, size, data);
    struct pg_debug_buf b = {.max = 1u << 20};

    if (m == NULL) {
        return 0;
    }
    for (int v = PG_DEBUG_NORMAL; v <= PG_DEBUG_DETAILED; v++) {
        for (int annotate = 0; annotate <= 1; annotate++) {
            pg_debug_buf_reset(&b);
            pg_debug_format_text(&b, (const struct pg_otlp_request *)m,
                                 (enum pg_debug_verbosity)v, annotate != 0);
            if (b.len > b.max) {
                abort();
            }
        }
    }
    pg_debug_buf_free(&b);
    protobuf_c_message_free_unpacked(m, NULL);
    return 0;
}
