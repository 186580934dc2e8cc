/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the OTLP request decoder and validator
 * (otlp/otlp_decode.c, dict_validate.c): any input is refused with a message
 * or accepted; what is accepted is clean (validating it again repairs
 * nothing), encodes to bytes that decode again to the same bytes, and its
 * OTLP/JSON form is a fixed point (JSON -> request -> JSON gives the same
 * text) that validates too. v1.9 conversion is on, so re-tagged Samples are
 * reached. What is accepted, written as v1.9 by an exporter's protocol_version
 * (otlp/otlp_version.c), is a request again of the same length unless references
 * were written out, and the receiver's v1.9 converter reads it back to the same
 * request (references resolved) whenever the layout can be told. The same bytes decoded with samples and links kept as wire records
 * (otlp/otlp_lazy.h) give the same answer: the same refusal message, or the
 * same bytes encoded, and the same request once materialized. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/otlp_decode.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_json.h"
#include "otlp/otlp_lazy.h"
#include "otlp/otlp_version.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct pg_otlp_limits limits = {
    .max_samples = 100000,
    .max_profiles = 1000,
    .max_locations = 100000,
    .max_strings = 100000,
    .max_string_bytes = 1 << 16,
    .max_stack_depth = 1024,
    .max_attrs_per_sample = 64,
    .max_sample_values = 64,
};

/* The lazy decode of @data against the eager one (@err, @st, @req). */
static void check_lazy(struct pg_arena *a, const uint8_t *data, size_t size, enum pg_err err,
                       const struct pg_status *st, const struct pg_otlp_request *req)
{
    struct pg_otlp_decode_opts o = {.limits = &limits, .convert_v1_9 = true,
                                    .lazy_min_samples = 1};
    struct pg_otlp_request *lz = NULL;
    struct pg_status lst = {0};
    uint8_t *w1, *w2, *p1, *p2;
    size_t n1, n2;

    if (pg_otlp_decode(a, data, size, &o, &lz, NULL, &lst) != err ||
        strcmp(lst.msg, st->msg) != 0) {
        abort(); /* the lazy path refuses what the eager one does, in the same words */
    }
    if (err != PG_ERR_OK) {
        return;
    }
    if (pg_otlp_request_encode(req, a, &w1, &n1, &lst) != PG_ERR_OK ||
        pg_otlp_request_encode(lz, a, &w2, &n2, &lst) != PG_ERR_OK || n1 != n2 ||
        memcmp(w1, w2, n1) != 0) {
        abort(); /* records written verbatim are the eager encoding */
    }
    if (pg_otlp_lazy_materialize(a, lz, &lst) != PG_ERR_OK || pg_otlp_request_is_lazy(lz)) {
        abort();
    }
    n1 = protobuf_c_message_get_packed_size(&req->base);
    n2 = protobuf_c_message_get_packed_size(&lz->base);
    p1 = pg_arena_alloc(a, n1 + 1);
    p2 = pg_arena_alloc(a, n2 + 1);
    if (p1 == NULL || p2 == NULL || n1 != n2 || protobuf_c_message_pack(&req->base, p1) != n1 ||
        protobuf_c_message_pack(&lz->base, p2) != n2 || memcmp(p1, p2, n1) != 0) {
        abort(); /* materialized: the eager structs */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_arena *a = pg_arena_create(256u << 20);
    struct pg_otlp_decode_opts o = {.limits = &limits, .convert_v1_9 = true};
    struct pg_otlp_decode_stats stats;
    struct pg_otlp_request *req = NULL, *again = NULL, *fromjson = NULL;
    struct pg_status st = {0};
    uint8_t *wire, *wire2, *v19 = NULL, *res_wire, *back_wire;
    size_t wire_n, wire2_n, json_n, json2_n, v19_n = 0, res_n, back_n;
    struct pg_otlp_version_stats vs = {0, 0};
    struct pg_otlp_request *back = NULL;
    char *json, *json2;
    ProtobufCMessage *m = NULL;
    enum pg_err err;

    err = pg_otlp_decode(a, data, size, &o, &req, &stats, &st);
    check_lazy(a, data, size, err, &st, req);
    if (err != PG_ERR_OK) {
        if (req != NULL || st.msg[0] == '\0') {
            abort(); /* a refusal always says why and hands nothing out */
        }
        pg_arena_destroy(a);
        return 0;
    }
    if (pg_otlp_validate(a, req, &limits, &stats, &st) != PG_ERR_OK || stats.utf8_repaired != 0) {
        abort(); /* accepted means clean */
    }
    if (pg_otlp_request_encode(req, a, &wire, &wire_n, &st) != PG_ERR_OK) {
        abort();
    }
    o.convert_v1_9 = false;
    if (pg_otlp_decode(a, wire, wire_n, &o, &again, &stats, &st) != PG_ERR_OK ||
        stats.version != PG_OTLP_WIRE_CURRENT) {
        abort(); /* what we forward, we accept */
    }
    if (pg_otlp_request_encode(again, a, &wire2, &wire2_n, &st) != PG_ERR_OK ||
        wire2_n != wire_n || memcmp(wire, wire2, wire_n) != 0) {
        abort();
    }
    if (pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, wire, wire_n, &v19, &v19_n, &vs, &st) !=
            PG_ERR_OK ||
        v19 == NULL || (vs.references == 0 && v19_n != wire_n)) {
        abort(); /* every request we forward has a v1.9 form */
    }
    if (pg_otlp_version_prepare(PG_OTLP_PROTO_V1_9, a, again, NULL, &st) != PG_ERR_OK ||
        pg_otlp_request_encode(again, a, &res_wire, &res_n, &st) != PG_ERR_OK) {
        abort();
    }
    if (pg_otlp_wire_version_detect(v19, v19_n) == PG_OTLP_WIRE_V1_9) {
        o.convert_v1_9 = true;
        if (pg_otlp_decode(a, v19, v19_n, &o, &back, &stats, &st) != PG_ERR_OK ||
            pg_otlp_request_encode(back, a, &back_wire, &back_n, &st) != PG_ERR_OK ||
            back_n != res_n || memcmp(back_wire, res_wire, res_n) != 0) {
            abort(); /* v1.9 out, v1.9 in: the same request */
        }
    }
    free(v19);
    if (pg_otlp_json_encode(a, &req->base, &json, &json_n, &st) != PG_ERR_OK) {
        abort();
    }
    if (pg_otlp_json_decode(a, &pg_otlp_request_descriptor, json, json_n, &m, &st) != PG_ERR_OK) {
        abort(); /* our own JSON reads back */
    }
    fromjson = (struct pg_otlp_request *)m;
    if (pg_otlp_validate(a, fromjson, &limits, &stats, &st) != PG_ERR_OK ||
        stats.utf8_repaired != 0) {
        abort();
    }
    if (pg_otlp_json_encode(a, m, &json2, &json2_n, &st) != PG_ERR_OK || json2_n != json_n ||
        memcmp(json, json2, json_n) != 0) {
        abort();
    }
    pg_arena_destroy(a);
    return 0;
}
