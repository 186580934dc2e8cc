/* SPDX-License-Identifier: Apache-2.0
 * The OTLP Profiles versions an exporter writes (otlp/otlp_version.h) against
 * golden vectors: tests/fixtures/pprof/golden/appendix_a.v1_9.otlp.bin is
 * otlp-profiles.md Appendix A encoded by protoc 3.21 from the upstream
 * v1.9.0 protos (the text decoded with the v1.10.0 protos, encoded again
 * with v1.9.0); references.otlp.bin is Appendix A with three attribute
 * strings given by reference (a string_value_strindex, and inside a kvlist a
 * key_strindex and an array's string_value_strindex), encoded with v1.10.0,
 * references.v1_9.otlp.bin the same request with the strings written out,
 * encoded with v1.9.0, and references.resolved.otlp.bin that with v1.10.0.
 * Then back through the receiver's v1.9 converter, every pprof fixture, and
 * bytes that are not a request. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/otlp_decode.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_version.h"
#include "pg_test.h"
#include "pg_test_fixtures.h"

static bool same(const char *what, const uint8_t *got, size_t got_n, const uint8_t *want,
                 size_t want_n)
{
    if (got == NULL || got_n != want_n || memcmp(got, want, want_n) != 0) {
        size_t at = 0;
        while (got != NULL && at < got_n && at < want_n && got[at] == want[at]) {
            at++;
        }
        fprintf(stderr, "  %s: %zu bytes, want %zu; first difference at %zu\n", what, got_n,
                want_n, at);
        return false;
    }
    return true;
}

/* @wire in v1.9 through pg_otlp_decode with convert_v1_9, encoded again (current layout). */
static bool receive_v19(struct pg_arena *a, const uint8_t *wire, size_t n, uint8_t **out,
                        size_t *out_n, enum pg_otlp_wire_version *seen)
{
    struct pg_otlp_decode_opts o = {.limits = NULL, .convert_v1_9 = true};
    struct pg_otlp_decode_stats stats;
    struct pg_otlp_request *req = NULL;
    struct pg_status st;

    pg_status_clear(&st);
    if (pg_otlp_decode(a, wire, n, &o, &req, &stats, &st) != PG_ERR_OK ||
        pg_otlp_request_encode(req, a, out, out_n, &st) != PG_ERR_OK) {
        fprintf(stderr, "  receive: %s\n", st.msg);
        return false;
    }
    *seen = stats.version;
    return true;
}

PG_TEST(names)
{
    CHECK_STR(pg_otlp_proto_version_names[PG_OTLP_PROTO_V1_11], "v1.11");
    CHECK_STR(pg_otlp_proto_version_names[PG_OTLP_PROTO_V1_10], "v1.10");
    CHECK_STR(pg_otlp_proto_version_names[PG_OTLP_PROTO_V1_9], "v1.9");
    CHECK(pg_otlp_proto_version_names[3] == NULL);
}

/* v1.10 and v1.11 are the current bytes: nothing is made. */
PG_TEST(current_versions_send_as_is)
{
    size_t n;
    uint8_t *a = pg_test_golden_otlp(&n), *out = (uint8_t *)"x";
    size_t out_n = 1;
    struct pg_status st;

    PG_REQUIRE(a != NULL);
    for (int v = PG_OTLP_PROTO_V1_11; v <= PG_OTLP_PROTO_V1_10; v++) {
        CHECK_INT(pg_otlp_version_encode((enum pg_otlp_proto_version)v, a, n, &out, &out_n, NULL,
                                         &st),
                  PG_ERR_OK);
        CHECK(out == NULL && out_n == 0);
    }
    free(a);
}

/* Appendix A as v1.9: protoc's bytes exactly (v1.9's field order within each Sample). */
PG_TEST(golden_appendix_a_v19)
{
    size_t n, want_n, out_n = 0;
    uint8_t *a = pg_test_golden_otlp(&n), *out = NULL;
    uint8_t *want = pg_test_fixture("pprof/golden/appendix_a.v1_9.otlp.bin", &want_n);
    struct pg_otlp_version_stats vs = {0, 0};
    struct pg_status st;

    PG_REQUIRE(a != NULL && want != NULL);
    CHECK_INT(pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, a, n, &out, &out_n, &vs, &st),
              PG_ERR_OK);
    CHECK(same("appendix A as v1.9", out, out_n, want, want_n));
    CHECK_INT(vs.samples, 4);
    CHECK_INT(vs.references, 0);
    /* the receiver tells it is v1.9 */
    CHECK_INT(pg_otlp_wire_version_detect(want, want_n), PG_OTLP_WIRE_V1_9);
    free(out);
    free(a);
    free(want);
}

/* References have no place in v1.9: written as the strings they name, counted. */
PG_TEST(golden_references_v19)
{
    size_t n, want_n, out_n = 0;
    uint8_t *in = pg_test_fixture("pprof/golden/references.otlp.bin", &n), *out = NULL;
    uint8_t *want = pg_test_fixture("pprof/golden/references.v1_9.otlp.bin", &want_n);
    struct pg_otlp_version_stats vs = {0, 0};
    struct pg_status st;

    PG_REQUIRE(in != NULL && want != NULL);
    CHECK_INT(pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, in, n, &out, &out_n, &vs, &st),
              PG_ERR_OK);
    CHECK(same("references as v1.9", out, out_n, want, want_n));
    CHECK_INT(vs.references, 3);
    CHECK_INT(vs.samples, 4);
    free(out);
    free(in);
    free(want);
}

/* The decoded path for JSON: the same resolution on a request. */
PG_TEST(prepare_resolves_references)
{
    size_t n, want_n, out_n = 0;
    uint8_t *in = pg_test_fixture("pprof/golden/references.otlp.bin", &n), *out = NULL;
    uint8_t *want = pg_test_fixture("pprof/golden/references.resolved.otlp.bin", &want_n);
    struct pg_arena *a = pg_arena_create(0);
    ProtobufCAllocator alloc;
    struct pg_otlp_request *req;
    struct pg_otlp_version_stats vs = {0, 0};
    struct pg_status st;

    PG_REQUIRE(in != NULL && want != NULL && a != NULL);
    pg_arena_protobuf_allocator(a, &alloc);
    req = (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor, &alloc,
                                                               n, in);
    PG_REQUIRE(req != NULL);
    CHECK_INT(pg_otlp_version_prepare(PG_OTLP_PROTO_V1_11, a, req, &vs, &st), PG_ERR_OK);
    CHECK_INT(vs.references, 0); /* the current version keeps them */
    CHECK_INT(pg_otlp_version_prepare(PG_OTLP_PROTO_V1_9, a, req, &vs, &st), PG_ERR_OK);
    CHECK_INT(vs.references, 3);
    CHECK_INT(pg_otlp_request_encode(req, a, &out, &out_n, &st), PG_ERR_OK);
    CHECK(same("resolved", out, out_n, want, want_n));
    pg_arena_destroy(a);
    free(in);
    free(want);
}

/* What pprofgate writes as v1.9, the receiver's v1.9 converter reads back as the original
 * (the references as the strings they named). */
PG_TEST(round_trip_through_receiver)
{
    static const struct {
        const char *in, *back;
    } cases[] = {
        {"pprof/golden/appendix_a.otlp.bin", "pprof/golden/appendix_a.otlp.bin"},
        {"pprof/golden/references.otlp.bin", "pprof/golden/references.resolved.otlp.bin"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n, back_n, v19_n = 0, got_n = 0;
        uint8_t *in = pg_test_fixture(cases[i].in, &n), *v19 = NULL, *got = NULL;
        uint8_t *back = pg_test_fixture(cases[i].back, &back_n);
        struct pg_arena *a = pg_arena_create(0);
        enum pg_otlp_wire_version seen = PG_OTLP_WIRE_CURRENT;
        struct pg_status st;

        PG_REQUIRE(in != NULL && back != NULL && a != NULL);
        CHECK_INT(pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, in, n, &v19, &v19_n, NULL, &st),
                  PG_ERR_OK);
        CHECK(receive_v19(a, v19, v19_n, &got, &got_n, &seen));
        CHECK_INT(seen, PG_OTLP_WIRE_V1_9);
        CHECK(same(cases[i].in, got, got_n, back, back_n));
        /* without convert_v1_9 the receiver refuses it, naming the version */
        {
            struct pg_otlp_request *req = NULL;
            pg_status_clear(&st);
            CHECK_INT(pg_otlp_decode(a, v19, v19_n, NULL, &req, NULL, &st), PG_ERR_MALFORMED);
            CHECK(strstr(st.msg, "v1.9 layout") != NULL);
        }
        free(v19);
        free(in);
        free(back);
        pg_arena_destroy(a);
    }
}

struct fx {
    size_t round_tripped, ambiguous;
};

static bool any_sample_attrs(const uint8_t *wire, size_t n)
{
    struct pg_arena *a = pg_arena_create(0);
    ProtobufCAllocator alloc;
    const struct pg_otlp_request *req;
    bool any = false;

    pg_arena_protobuf_allocator(a, &alloc);
    req = (const struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor,
                                                                     &alloc, n, wire);
    for (size_t r = 0; req != NULL && r < req->n_resource_profiles; r++) {
        const struct pg_otlp_resprof *rp = req->resource_profiles[r];
        for (size_t s = 0; s < rp->n_scope_profiles; s++) {
            const struct pg_otlp_scopeprof *sp = rp->scope_profiles[s];
            for (size_t p = 0; p < sp->n_profiles; p++) {
                for (size_t k = 0; k < sp->profiles[p]->n_samples; k++) {
                    any = any || sp->profiles[p]->samples[k]->n_attribute_indices > 0;
                }
            }
        }
    }
    pg_arena_destroy(a);
    return any;
}

/* Every pprof fixture: the same length, and back through the receiver to the same bytes.
 * A request no Sample of which has attributes has no wire-type evidence of v1.9
 * (docs/otlp-validation.md), so the receiver cannot tell; those are only counted. */
static void one_fixture(const char *name, size_t i, const uint8_t *wire, size_t n, void *arg)
{
    struct fx *fx = arg;
    uint8_t *v19 = NULL, *got = NULL;
    size_t v19_n = 0, got_n = 0;
    struct pg_arena *a = pg_arena_create(0);
    enum pg_otlp_wire_version seen = PG_OTLP_WIRE_CURRENT;
    struct pg_status st;

    (void)i;
    CHECK_INT(pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, wire, n, &v19, &v19_n, NULL, &st),
              PG_ERR_OK);
    CHECK_INT(v19_n, n);
    if (!any_sample_attrs(wire, n)) {
        fx->ambiguous++;
    } else if (receive_v19(a, v19, v19_n, &got, &got_n, &seen)) {
        CHECK_INT(seen, PG_OTLP_WIRE_V1_9);
        CHECK(same(name, got, got_n, wire, n));
        fx->round_tripped++;
    } else {
        CHECK(0);
    }
    free(v19);
    pg_arena_destroy(a);
}

PG_TEST(every_fixture)
{
    struct fx fx = {0, 0};

    CHECK_INT(pg_test_each_fixture_request(one_fixture, &fx), PG_TEST_N_PPROF_FIXTURES);
    fprintf(stderr, "  %zu round-tripped, %zu without sample attributes\n", fx.round_tripped,
            fx.ambiguous);
    CHECK(fx.round_tripped >= PG_TEST_N_PPROF_FIXTURES / 2);
}

/* Not a request: refused with a message, nothing made. */
PG_TEST(malformed_refused)
{
    size_t n;
    uint8_t *a = pg_test_golden_otlp(&n), *out = NULL;
    size_t out_n = 0;
    struct pg_status st;
    static const uint8_t garbage[] = {0x0a, 0x05, 0x12, 0x03, 0x12, 0x09, 0x08};

    PG_REQUIRE(a != NULL);
    for (size_t cut = 1; cut < n; cut += 37) {
        /* a cut inside a top-level field (none ends at 1 + 37k): its length runs past the end */
        pg_status_clear(&st);
        CHECK_INT(pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, a, cut, &out, &out_n, NULL, &st),
                  PG_ERR_MALFORMED);
        CHECK(out == NULL);
        CHECK(strstr(st.msg, "not well-formed") != NULL);
    }
    CHECK_INT(pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, garbage, sizeof(garbage), &out, &out_n,
                                     NULL, &st),
              PG_ERR_MALFORMED);
    CHECK_INT(pg_otlp_version_encode(PG_OTLP_PROTO_V1_9, NULL, 0, &out, &out_n, NULL, &st),
              PG_ERR_OK); /* an empty request is a request */
    CHECK_INT(out_n, 0);
    free(out);
    free(a);
}

PG_TEST_MAIN(PG_CASE(names), PG_CASE(current_versions_send_as_is), PG_CASE(golden_appendix_a_v19),
             PG_CASE(golden_references_v19), PG_CASE(prepare_resolves_references),
             PG_CASE(round_trip_through_receiver), PG_CASE(every_fixture),
             PG_CASE(malformed_refused))
