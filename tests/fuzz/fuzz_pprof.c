/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the pprof decoder + translator: any input must give
 * either a clean error with a message or a request whose dictionary passes
 * pg_dict_validate (index 0 zero values, references in range, unique keys,
 * no duplicates) and that protobuf-c can pack and unpack again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/dict.h"
#include "pprof/translate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_translate_opts o;
    struct pg_arena *a = pg_arena_create((size_t)256 << 20);
    struct pg_otlp_request *req = NULL;
    struct pg_status st;
    enum pg_err err;

    pg_translate_opts_default(&o);
    o.limits.max_inflated_bytes = (size_t)4 << 20; /* keep gzip bombs cheap */
    o.include_original_payload = size > 0 && (data[0] & 1);
    err = pg_pprof_translate(a, data, size, &o, &req, NULL, &st);
    if (err == PG_ERR_OK) {
        struct pg_arena *scratch = pg_arena_create(0);
        size_t n;
        uint8_t *buf;
        ProtobufCMessage *back;
        if (req == NULL || pg_dict_validate(scratch, req, true, &st) != PG_ERR_OK) {
            abort();
        }
        pg_arena_destroy(scratch);
        n = protobuf_c_message_get_packed_size(&req->base);
        buf = malloc(n ? n : 1);
        if (buf == NULL || protobuf_c_message_pack(&req->base, buf) != n) {
            abort();
        }
        back = protobuf_c_message_unpack(&pg_otlp_request_descriptor, NULL, n, buf);
        if (back == NULL) {
            abort();
        }
        protobuf_c_message_free_unpacked(back, NULL);
        free(buf);
    } else if (req != NULL || st.msg[0] == '\0' ||
               (err != PG_ERR_MALFORMED && err != PG_ERR_LIMIT && err != PG_ERR_NOMEM)) {
        abort();
    }
    pg_arena_destroy(a);
    return 0;
}
