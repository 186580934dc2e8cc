/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the OTLP/JSON reader (otlp/otlp_json.c) and the
 * validator behind it: any document is refused with a message or read; a
 * request that validates encodes to protobuf bytes the protobuf decoder
 * accepts too (the two ways in agree), and its JSON form is a fixed point. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/otlp_decode.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct pg_otlp_limits limits = {
    .max_samples = 100000,
    .max_strings = 100000,
    .max_string_bytes = 1 << 16,
    .max_stack_depth = 1024,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_arena *a = pg_arena_create(256u << 20);
    struct pg_otlp_decode_opts o = {.limits = &limits};
    struct pg_otlp_decode_stats stats;
    struct pg_otlp_request *req, *back = NULL;
    struct pg_status st = {0};
    ProtobufCMessage *m = NULL, *m2 = NULL;
    uint8_t *wire;
    size_t wire_n, json_n, json2_n;
    char *json, *json2;
    enum pg_err err;

    err = pg_otlp_json_decode(a, &pg_otlp_request_descriptor, (const char *)data, size, &m, &st);
    if (err != PG_ERR_OK) {
        if (m != NULL || st.msg[0] == '\0') {
            abort();
        }
        pg_arena_destroy(a);
        return 0;
    }
    req = (struct pg_otlp_request *)m;
    if (pg_otlp_validate(a, req, &limits, &stats, &st) != PG_ERR_OK) {
        if (st.msg[0] == '\0') {
            abort();
        }
        pg_arena_destroy(a);
        return 0;
    }
    if (pg_otlp_request_encode(req, a, &wire, &wire_n, &st) != PG_ERR_OK) {
        abort();
    }
    if (pg_otlp_decode(a, wire, wire_n, &o, &back, &stats, &st) != PG_ERR_OK ||
        stats.utf8_repaired != 0) {
        abort(); /* JSON accepted must be protobuf accepted */
    }
    if (pg_otlp_json_encode(a, m, &json, &json_n, &st) != PG_ERR_OK ||
        pg_otlp_json_decode(a, &pg_otlp_request_descriptor, json, json_n, &m2, &st) !=
            PG_ERR_OK ||
        pg_otlp_json_encode(a, m2, &json2, &json2_n, &st) != PG_ERR_OK || json2_n != json_n ||
        memcmp(json, json2, json_n) != 0) {
        abort();
    }
    pg_arena_destroy(a);
    return 0;
}
