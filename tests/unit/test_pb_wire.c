/* SPDX-License-Identifier: Apache-2.0
 * core/pb_wire.h: the protobuf wire reader and writer, table-driven. */
#include "pg_test.h"

#include <stdbool.h>

#include "core/pb_wire.h"

PG_TEST(test_varint_round_trip)
{
    static const struct {
        uint64_t v;
        size_t len;
    } cases[] = {
        {0, 1},          {1, 1},           {127, 1},         {128, 2},
        {300, 2},        {16383, 2},       {16384, 3},       {UINT32_MAX, 5},
        {1ull << 56, 9}, {(1ull << 63) - 1, 9}, {1ull << 63, 10}, {UINT64_MAX, 10},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t buf[16];
        uint8_t *end = pg_pb_put_varint(buf, cases[i].v);
        struct pg_pb r = {buf, end};
        uint64_t got = 0;

        CHECK_INT(pg_pb_varint_len(cases[i].v), cases[i].len);
        CHECK_INT(end - buf, cases[i].len);
        CHECK(pg_pb_varint(&r, &got));
        CHECK(got == cases[i].v);
        CHECK(r.p == end);
        /* Cut one byte short: truncated. */
        r = (struct pg_pb){buf, end - 1};
        CHECK(!pg_pb_varint(&r, &got));
    }
}

PG_TEST(test_varint_rejects_overlong)
{
    static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x80, 0x80, 0x80, 0x01};
    static const uint8_t top_bits[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    struct pg_pb r = {eleven, eleven + sizeof(eleven)};
    uint64_t v;

    CHECK(!pg_pb_varint(&r, &v));
    r = (struct pg_pb){top_bits, top_bits + sizeof(top_bits)};
    CHECK(!pg_pb_varint(&r, &v)); /* the 10th byte may only carry bit 63 */
}

PG_TEST(test_field_reader)
{
    /* field 1 varint 150; field 2 "hi"; field 3 fixed64; field 4 fixed32;
     * field 5 varint 1. */
    uint8_t buf[64], *p = buf;
    p = pg_pb_put_varint(p, pg_pb_key(1, PG_PB_VARINT));
    p = pg_pb_put_varint(p, 150);
    p = pg_pb_put_varint(p, pg_pb_key(2, PG_PB_LEN));
    p = pg_pb_put_varint(p, 2);
    *p++ = 'h';
    *p++ = 'i';
    p = pg_pb_put_varint(p, pg_pb_key(3, PG_PB_I64));
    p = pg_pb_put_fixed64(p, 0x0102030405060708ull);
    p = pg_pb_put_varint(p, pg_pb_key(4, PG_PB_I32));
    for (int i = 0; i < 4; i++) {
        *p++ = 0xaa;
    }
    p = pg_pb_put_varint(p, pg_pb_key(5, PG_PB_VARINT));
    p = pg_pb_put_varint(p, 1);
    CHECK(buf[0] == 0x08 && buf[1] == 0x96 && buf[2] == 0x01); /* the spec's example */
    CHECK(buf[8] == 0x08 && buf[15] == 0x01);                  /* fixed64 is little-endian */

    struct pg_pb r = {buf, p};
    uint32_t field = 0, wt = 0;
    uint64_t v = 0;
    struct pg_pb sub = {NULL, NULL};
    static const uint32_t want_field[] = {1, 2, 3, 4, 5};
    static const uint32_t want_wt[] = {PG_PB_VARINT, PG_PB_LEN, PG_PB_I64, PG_PB_I32, PG_PB_VARINT};
    for (int i = 0; i < 5; i++) {
        CHECK(pg_pb_field(&r, &field, &wt, &v, &sub));
        CHECK_INT(field, want_field[i]);
        CHECK_INT(wt, want_wt[i]);
        if (i == 0) {
            CHECK_INT(v, 150);
        } else if (i == 1) {
            CHECK(sub.end - sub.p == 2 && memcmp(sub.p, "hi", 2) == 0);
        }
    }
    CHECK(r.p == r.end);
    CHECK_INT(v, 1);
}

PG_TEST(test_malformed_fields)
{
    static const struct {
        const char *what;
        uint8_t bytes[8];
        size_t n;
    } cases[] = {
        {"field number 0", {0x00, 0x01}, 2},
        {"length past the end", {0x12, 0x05, 'a'}, 3},
        {"fixed64 cut short", {0x19, 1, 2, 3}, 4},
        {"fixed32 cut short", {0x25, 1, 2}, 3},
        {"start group", {0x0b}, 1},
        {"end group", {0x0c}, 1},
        {"wire type 6", {0x0e, 0}, 2},
        {"tag cut short", {0x80}, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_pb r = {cases[i].bytes, cases[i].bytes + cases[i].n};
        uint32_t field, wt;
        uint64_t v;
        struct pg_pb sub;

        if (pg_pb_field(&r, &field, &wt, &v, &sub)) {
            fprintf(stderr, "  accepted: %s\n", cases[i].what);
            CHECK(false);
        }
    }
}

PG_TEST_MAIN(PG_CASE(test_varint_round_trip), PG_CASE(test_varint_rejects_overlong),
             PG_CASE(test_field_reader), PG_CASE(test_malformed_fields))
