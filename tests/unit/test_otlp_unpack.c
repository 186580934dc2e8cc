/* SPDX-License-Identifier: Apache-2.0
 * The fast unpack (otlp/otlp_unpack.h) against protobuf-c's: on every
 * fixture translated and encoded, on the golden request, on hand-written
 * wire cases and on byte mutations of them, whenever the fast unpack takes
 * the bytes, protobuf-c takes them too and both re-pack (protobuf-c's packer)
 * to the same bytes (unknown fields kept alike); the cases it must decline
 * (wrong wire type, a singular message twice, an unpacked repeated scalar,
 * nesting past the bound, truncation) are declined; a NUL inside a string
 * becomes 0xFF. Consecutive samples with equal packed runs share one array,
 * a profile's attribute_indices (which OTTL edits in place) never shares
 * one, and no carved array can be grown in place over its neighbours. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_unpack.h"
#include "pg_test.h"
#include "pg_test_fixtures.h"
#include "pprof/translate.h"

static uint8_t *pack(struct pg_arena *a, const ProtobufCMessage *m, size_t *n)
{
    uint8_t *out;

    *n = protobuf_c_message_get_packed_size(m);
    out = pg_arena_alloc(a, *n + 1);
    if (out == NULL) {
        abort();
    }
    protobuf_c_message_pack(m, out);
    return out;
}

/* True when a string anywhere in @m holds 0xFF: a NUL on the wire, which
 * protobuf-c cuts the string at and the fast unpack keeps (as 0xFF). */
static bool has_ff(const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;

    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        size_t n = 1;
        void *const *arr = (void *const *)(const void *)(base + fd->offset);

        if (fd->type != PROTOBUF_C_TYPE_STRING && fd->type != PROTOBUF_C_TYPE_MESSAGE) {
            continue;
        }
        if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(const void *)(base + fd->quantifier_offset) != fd->id) {
            continue;
        }
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            n = *(const size_t *)(const void *)(base + fd->quantifier_offset);
            arr = *(void *const *const *)(const void *)(base + fd->offset);
        }
        for (size_t j = 0; j < n; j++) {
            if (arr[j] == NULL) {
                continue;
            }
            if (fd->type == PROTOBUF_C_TYPE_STRING ? strchr(arr[j], 0xff) != NULL
                                                   : has_ff(arr[j])) {
                return true;
            }
        }
    }
    return false;
}

/* Unpacks @b both ways: returns the fast result; when it is OK, protobuf-c
 * must agree byte for byte after re-packing. */
static enum pg_otlp_unpack_result compare(const char *name, const uint8_t *b, size_t n)
{
    struct pg_arena *a = pg_arena_create(0);
    ProtobufCAllocator alloc;
    struct pg_otlp_request *freq = NULL;
    struct pg_otlp_unpack_info info;
    enum pg_otlp_unpack_result res = pg_otlp_unpack_request(a, b, n, 64, &freq, &info);
    ProtobufCMessage *fast = freq ? &freq->base : NULL, *slow;

    pg_arena_protobuf_allocator(a, &alloc);
    slow = protobuf_c_message_unpack(&pg_otlp_request_descriptor, &alloc, n, b);
    if (res == PG_OTLP_UNPACK_OK) {
        size_t fn, sn;
        const uint8_t *fb, *sb;

        CHECK(fast != NULL);
        CHECK(slow != NULL);
        if (fast != NULL && slow != NULL && !has_ff(fast)) {
            fb = pack(a, fast, &fn);
            sb = pack(a, slow, &sn);
            if (fn != sn || memcmp(fb, sb, fn) != 0) {
                fprintf(stderr, "  %s: fast and protobuf-c unpacks differ\n", name);
                CHECK(0);
            }
        }
    } else {
        CHECK(fast == NULL);
    }
    pg_arena_destroy(a);
    return res;
}

/* Every byte of @b changed a few ways: the fast path never accepts what
 * protobuf-c would read differently. */
static void mutate_all(const char *name, const uint8_t *b, size_t n)
{
    static const uint8_t xors[] = {0x01, 0x02, 0x08, 0x80, 0xff};
    uint8_t *m = malloc(n ? n : 1);
    size_t ok = 0;

    PG_REQUIRE(m != NULL);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof(xors); k++) {
            memcpy(m, b, n);
            m[i] ^= xors[k];
            ok += compare(name, m, n) == PG_OTLP_UNPACK_OK;
        }
    }
    CHECK(n == 0 || ok > 0);
    free(m);
}

/* Every fixture's request; the first (the golden profile) also byte by byte mutated. */
static void compare_fixture(const char *name, size_t i, const uint8_t *wire, size_t n, void *arg)
{
    (void)arg;
    CHECK_INT(compare(name, wire, n), PG_OTLP_UNPACK_OK);
    if (i == 0) {
        mutate_all(name, wire, n);
    }
}

PG_TEST(test_fixtures_same_as_protobuf_c)
{
    size_t done = pg_test_each_fixture_request(compare_fixture, NULL);

    CHECK_INT(done, PG_TEST_N_PPROF_FIXTURES);
}

PG_TEST(test_golden_and_mutations)
{
    size_t n;
    uint8_t *b = pg_test_golden_otlp(&n);

    PG_REQUIRE(b != NULL);
    CHECK_INT(compare("appendix_a", b, n), PG_OTLP_UNPACK_OK);
    mutate_all("appendix_a", b, n);
    for (size_t cut = 0; cut < n; cut++) {
        compare("appendix_a cut", b, cut);
    }
    free(b);
}

/* Hand-written requests: resource_profiles(1) { resource(1) { attributes(1) { key(1) ... } } }. */
PG_TEST(test_wire_cases)
{
    static const struct {
        const char *name;
        uint8_t bytes[48];
        size_t n;
        enum pg_otlp_unpack_result want;
    } cases[] = {
        {"empty", {0}, 0, PG_OTLP_UNPACK_OK},
        {"one key", {0x0a, 0x07, 0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 'k'}, 9, PG_OTLP_UNPACK_OK},
        {"unknown field", {0x0a, 0x02, 0x78, 0x01}, 4, PG_OTLP_UNPACK_OK},
        /* unknown fields of every wire type, one with a two-byte tag (field 100) */
        {"unknown fields", {0x0a, 0x13, 0x78, 0x01, 0x79, 1, 2, 3, 4, 5, 6, 7, 8, 0x7a, 0x01, 'x',
                            0xa0, 0x06, 0x05, 0x0a, 0x00},
         21, PG_OTLP_UNPACK_OK},
        {"known field, long tag", {0x0a, 0x03, 0x8a, 0x00, 0x00}, 5, PG_OTLP_UNPACK_DECLINED},
        {"wrong wire type", {0x0a, 0x02, 0x0a, 0x00, 0x08, 0x01}, 6, PG_OTLP_UNPACK_DECLINED},
        {"resource twice (merge)", {0x0a, 0x04, 0x0a, 0x00, 0x0a, 0x00}, 6,
         PG_OTLP_UNPACK_DECLINED},
        {"truncated", {0x0a, 0x05, 0x0a, 0x00}, 4, PG_OTLP_UNPACK_DECLINED},
        {"group", {0x0b}, 1, PG_OTLP_UNPACK_DECLINED},
        /* dictionary(2) { location_table(2) { lines(3) x2 } }: a repeated message twice */
        {"two lines", {0x12, 0x06, 0x12, 0x04, 0x1a, 0x00, 0x1a, 0x00}, 8, PG_OTLP_UNPACK_OK},
        /* dictionary(2) { stack_table(7) { location_indices(1) packed [1,2] } } */
        {"packed", {0x12, 0x06, 0x3a, 0x04, 0x0a, 0x02, 0x01, 0x02}, 8, PG_OTLP_UNPACK_OK},
        /* ... the same indices unpacked: valid protobuf, declined (proto3 packs) */
        {"unpacked", {0x12, 0x06, 0x3a, 0x04, 0x08, 0x01, 0x08, 0x02}, 8,
         PG_OTLP_UNPACK_DECLINED},
        {"packed cut", {0x12, 0x05, 0x3a, 0x03, 0x0a, 0x01, 0x81}, 7, PG_OTLP_UNPACK_DECLINED},
        /* dictionary(2) { string_table(5) "", "a\0b" } */
        {"strings", {0x12, 0x07, 0x2a, 0x00, 0x2a, 0x03, 'a', 0, 'b'}, 9, PG_OTLP_UNPACK_OK},
        /* protobuf-c reads at most 5 bytes of a tag or a length prefix */
        {"tag of 6 bytes", {0x80, 0x97, 0x80, 0x97, 0x80, 0x00, 0x00}, 7, PG_OTLP_UNPACK_DECLINED},
        {"length of 6 bytes", {0x12, 0x08, 0x2a, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00, 'a'}, 10,
         PG_OTLP_UNPACK_DECLINED},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum pg_otlp_unpack_result got = i == 13 ? PG_OTLP_UNPACK_OK
                                                 : compare(cases[i].name, cases[i].bytes,
                                                           cases[i].n);
        if (i == 13) {
            /* a NUL differs from protobuf-c on purpose (it cuts the string there) */
            struct pg_arena *a = pg_arena_create(0);
            struct pg_otlp_request *r;
            struct pg_otlp_unpack_info info;
            got = pg_otlp_unpack_request(a, cases[i].bytes, cases[i].n, 64, &r, &info);
            if (got == PG_OTLP_UNPACK_OK) {
                CHECK_INT(r->dictionary->n_string_table, 2);
                CHECK_STR(r->dictionary->string_table[0], "");
                CHECK_STR(r->dictionary->string_table[1], "a\xff" "b");
                CHECK_INT(info.suspect_strings, 1);
                CHECK_INT(info.longest_string, 3);
            }
            pg_arena_destroy(a);
        }
        if (got != cases[i].want) {
            fprintf(stderr, "  %s: %d, want %d\n", cases[i].name, (int)got, (int)cases[i].want);
        }
        CHECK_INT(got, cases[i].want);
    }
}

PG_TEST(test_depth_and_cap)
{
        uint8_t deep[400];
    size_t n = 0;
    struct pg_arena *a;
    struct pg_otlp_request *m;
    struct pg_otlp_unpack_info info;
    /* a chain of AnyValue.array_value(5) { values(1) {...} } inside one attribute value */
    const size_t levels = 80;
    uint8_t inner[400];
    size_t in = 0;

    for (size_t k = 0; k < levels; k++) { /* built from the inside out */
        uint8_t tmp[400];
        size_t t = 0;
        tmp[t++] = 0x0a; /* ArrayValue.values */
        tmp[t++] = (uint8_t)in;
        memcpy(tmp + t, inner, in);
        t += in;
        in = 0;
        inner[in++] = 0x2a; /* AnyValue.array_value */
        inner[in++] = (uint8_t)t;
        memcpy(inner + in, tmp, t);
        in += t;
        if (in > 100) { /* 2 levels a round: within the bound of 64 */
            break;
        }
    }
    /* KeyValue { value(2) { inner } } in Resource.attributes(1) in ResourceProfiles.resource(1) */
    deep[n++] = 0x0a;
    deep[n++] = (uint8_t)(in + 6);
    deep[n++] = 0x0a;
    deep[n++] = (uint8_t)(in + 4);
    deep[n++] = 0x0a;
    deep[n++] = (uint8_t)(in + 2);
    deep[n++] = 0x12;
    deep[n++] = (uint8_t)in;
    memcpy(deep + n, inner, in);
    n += in;
    PG_REQUIRE(in + 6 < 128);
    CHECK_INT(compare("nested", deep, n), PG_OTLP_UNPACK_OK);
    a = pg_arena_create(0);
    CHECK_INT(pg_otlp_unpack_request(a, deep, n, 8, &m, &info),
              PG_OTLP_UNPACK_DECLINED);
    pg_arena_destroy(a);
    a = pg_arena_create(64); /* the arena's cap */
    CHECK_INT(pg_otlp_unpack_request(a, deep, n, 64, &m, &info),
              PG_OTLP_UNPACK_NOMEM);
    pg_arena_destroy(a);
}

/* Profile A: samples s0, s1 with attribute_indices [1, 2] and values 5, 7, and
 * attribute_indices [1, 2] of its own (right after s1 on the wire); profile B the same
 * attribute_indices. */
PG_TEST(test_shared_sample_arrays)
{
    int32_t attrs[] = {1, 2};
    int64_t v0[] = {5}, v1[] = {7};
    Opentelemetry__Proto__Profiles__V1development__Sample s[2] = {
        OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SAMPLE__INIT,
        OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SAMPLE__INIT};
    Opentelemetry__Proto__Profiles__V1development__Sample *sp[2] = {&s[0], &s[1]};
    pg_otlp_profile p[2] = {OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILE__INIT,
                            OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILE__INIT};
    pg_otlp_profile *pp[2] = {&p[0], &p[1]};
    pg_otlp_scopeprof sc = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SCOPE_PROFILES__INIT;
    pg_otlp_scopeprof *scp = &sc;
    pg_otlp_resprof rp = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__RESOURCE_PROFILES__INIT;
    pg_otlp_resprof *rpp = &rp;
    pg_otlp_request req =
        OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_unpack_info info;
    struct pg_otlp_request *out = NULL;
    pg_otlp_profile *a0, *b0;
    uint8_t *wire;
    size_t n;

    PG_REQUIRE(a != NULL);
    for (int i = 0; i < 2; i++) {
        s[i].n_attribute_indices = 2;
        s[i].attribute_indices = attrs;
        s[i].n_values = 1;
        s[i].values = i == 0 ? v0 : v1;
        p[i].n_attribute_indices = 2;
        p[i].attribute_indices = attrs;
    }
    p[0].n_samples = 2;
    p[0].samples = sp;
    sc.n_profiles = 2;
    sc.profiles = pp;
    rp.n_scope_profiles = 1;
    rp.scope_profiles = &scp;
    req.n_resource_profiles = 1;
    req.resource_profiles = &rpp;
    wire = pack(a, &req.base, &n);
    CHECK_INT(compare("shared arrays", wire, n), PG_OTLP_UNPACK_OK);
    CHECK_INT(pg_otlp_unpack_request(a, wire, n, 64, &out, &info), PG_OTLP_UNPACK_OK);
    PG_REQUIRE(out != NULL);
    a0 = out->resource_profiles[0]->scope_profiles[0]->profiles[0];
    b0 = out->resource_profiles[0]->scope_profiles[0]->profiles[1];
    PG_REQUIRE(a0->n_samples == 2 && a0->n_attribute_indices == 2 && b0->n_attribute_indices == 2);
    CHECK(a0->samples[0]->attribute_indices == a0->samples[1]->attribute_indices);
    CHECK(a0->samples[0]->values != a0->samples[1]->values);
    CHECK_INT((int)a0->samples[1]->values[0], 7);
    CHECK(a0->attribute_indices != a0->samples[1]->attribute_indices);
    CHECK(b0->attribute_indices != a0->attribute_indices);
    CHECK_INT((int)((uintptr_t)a0->samples[1]->values % 8), 0);
    /* The last carved array is not the arena's last allocation: growing it copies. */
    {
        int32_t *last = b0->attribute_indices;
        int32_t *grown = pg_arena_realloc(a, last, 2 * sizeof(*last), 64 * sizeof(*last));

        CHECK(grown != NULL && grown != last);
    }
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_fixtures_same_as_protobuf_c), PG_CASE(test_golden_and_mutations),
             PG_CASE(test_wire_cases), PG_CASE(test_depth_and_cap),
             PG_CASE(test_shared_sample_arrays))
