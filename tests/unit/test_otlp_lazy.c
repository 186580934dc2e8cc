/* SPDX-License-Identifier: Apache-2.0
 * Lazy samples and links (otlp/otlp_lazy.h) against the eager decode: which
 * Sample and Link bodies count as canonical; on every fixture and the golden
 * request, the lazy decode re-encodes to the eager bytes, materializes to the
 * structs the eager unpack builds (and so does unpacking its encoding), and counts
 * the same samples; on every one-byte mutation of the golden request both
 * decodes give the same code and message, or the same bytes; a
 * non-canonical sample falls back to the eager path. (Each violation class of
 * the validation, lazy and eager alike: test_otlp_decode's test_mutations.) */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "otlp/otlp_decode.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_lazy.h"
#include "pg_test.h"
#include "pg_test_fixtures.h"
#include "pipeline/batch.h"
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

static bool same(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static size_t req_samples(const struct pg_otlp_request *r)
{
    size_t n = 0;

    for (size_t i = 0; i < r->n_resource_profiles; i++) {
        for (size_t j = 0; j < r->resource_profiles[i]->n_scope_profiles; j++) {
            const struct pg_otlp_scopeprof *sp = r->resource_profiles[i]->scope_profiles[j];
            for (size_t k = 0; k < sp->n_profiles; k++) {
                n += pg_otlp_profile_sample_count(sp->profiles[k]);
            }
        }
    }
    return n;
}

PG_TEST(test_canonical_cases)
{
    static const struct {
        const char *name;
        uint8_t b[24];
        size_t n;
        bool sample, ok;
    } cases[] = {
        {"empty sample", {0}, 0, true, true},
        {"stack, attrs, link, values, ts",
         {0x08, 0x01, 0x12, 0x02, 0x01, 0x02, 0x18, 0x01, 0x22, 0x01, 0x05, 0x2a, 0x08, 1, 2, 3,
          4, 5, 6, 7, 8},
         21, true, true},
        {"negative stack index, sign-extended",
         {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 11, true, true},
        {"negative stack index, 32 bits", {0x08, 0xff, 0xff, 0xff, 0xff, 0x0f}, 6, true, false},
        {"zero stack index written", {0x08, 0x00}, 2, true, false},
        {"overlong varint", {0x08, 0x81, 0x00}, 3, true, false},
        {"empty packed run", {0x22, 0x00}, 2, true, false},
        {"overlong packed length", {0x22, 0x81, 0x00, 0x01}, 4, true, false},
        {"overlong value", {0x22, 0x02, 0x81, 0x00}, 4, true, false},
        {"out of order", {0x22, 0x01, 0x05, 0x08, 0x01}, 5, true, false},
        {"twice", {0x08, 0x01, 0x08, 0x02}, 4, true, false},
        {"unpacked values", {0x20, 0x05}, 2, true, false},
        {"unknown field", {0x30, 0x01}, 2, true, false},
        {"timestamps not whole", {0x2a, 0x03, 1, 2, 3}, 5, true, false},
        {"cut short", {0x22, 0x05, 0x01}, 3, true, false},
        {"zero link", {0}, 0, false, true},
        {"link", {0x0a, 0x02, 0xaa, 0xbb, 0x12, 0x01, 0xcc}, 7, false, true},
        {"link, span first", {0x12, 0x01, 0xcc, 0x0a, 0x01, 0xaa}, 6, false, false},
        {"link, empty trace id", {0x0a, 0x00}, 2, false, false},
        {"link, unknown field", {0x1a, 0x01, 0x00}, 3, false, false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool got = cases[i].sample ? pg_otlp_lazy_canonical(cases[i].b, cases[i].n)
                                   : pg_otlp_lazy_link_canonical(cases[i].b, cases[i].n);
        if (got != cases[i].ok) {
            fprintf(stderr, "  %s: canonical=%d, want %d\n", cases[i].name, got, cases[i].ok);
            CHECK(0);
        }
    }
}

/* @b decoded eagerly and lazily (every profile's samples and the links as records). */
static void compare_lazy(const char *name, const uint8_t *b, size_t n)
{
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_decode_opts eo = {0}, lo = {.lazy_min_samples = 1};
    struct pg_otlp_decode_stats es, ls;
    struct pg_otlp_request *eager = NULL, *lazy = NULL, *copy = NULL;
    struct pg_status st = {0};
    uint8_t *ew, *lw, *ep, *mp, *cp;
    size_t ewn, lwn, epn, mpn, cpn;

    PG_REQUIRE(a != NULL);
    PG_REQUIRE(pg_otlp_decode(a, b, n, &eo, &eager, &es, &st) == PG_ERR_OK);
    PG_REQUIRE(pg_otlp_decode(a, b, n, &lo, &lazy, &ls, &st) == PG_ERR_OK);
    CHECK(pg_otlp_request_is_lazy(lazy));
    CHECK(!pg_otlp_request_is_lazy(eager));
    CHECK_INT(ls.samples, es.samples);
    CHECK_INT(ls.profiles, es.profiles);
    CHECK_INT(req_samples(lazy), es.samples);
    /* Encoded verbatim: the eager encoding, byte for byte. */
    PG_REQUIRE(pg_otlp_request_encode(eager, a, &ew, &ewn, &st) == PG_ERR_OK);
    PG_REQUIRE(pg_otlp_request_encode(lazy, a, &lw, &lwn, &st) == PG_ERR_OK);
    if (!same(ew, ewn, lw, lwn)) {
        fprintf(stderr, "  %s: lazy encoding differs (%zu vs %zu bytes)\n", name, lwn, ewn);
        CHECK(0);
    }
    /* The eager copy a splitting exporter takes (encode, protobuf-c unpack), then the lazy
     * request materialized in place: the eager unpack's structs (protobuf-c's packer knows
     * nothing of lazy records). */
    copy = (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor, NULL,
                                                               lwn, lw);
    PG_REQUIRE(copy != NULL);
    PG_REQUIRE(pg_otlp_lazy_materialize(a, lazy, &st) == PG_ERR_OK);
    CHECK(!pg_otlp_request_is_lazy(lazy));
    ep = pack(a, &eager->base, &epn);
    mp = pack(a, &lazy->base, &mpn);
    cp = pack(a, &copy->base, &cpn);
    if (!same(ep, epn, mp, mpn) || !same(ep, epn, cp, cpn)) {
        fprintf(stderr, "  %s: materialized / copied structs differ from the eager ones\n", name);
        CHECK(0);
    }
    CHECK_INT(req_samples(lazy), es.samples);
    protobuf_c_message_free_unpacked(&copy->base, NULL);
    pg_arena_destroy(a);
}

static void lazy_fixture(const char *name, size_t i, const uint8_t *wire, size_t n, void *arg)
{
    (void)i;
    (void)arg;
    compare_lazy(name, wire, n);
}

PG_TEST(test_fixtures_and_golden)
{
    size_t n;
    uint8_t *b = pg_test_golden_otlp(&n);

    CHECK_INT(pg_test_each_fixture_request(lazy_fixture, NULL), PG_TEST_N_PPROF_FIXTURES);
    PG_REQUIRE(b != NULL);
    compare_lazy("appendix_a", b, n);
    free(b);
}

/* Every one-byte change of the golden request (three ways): the lazy decode answers as the
 * eager one does, code and message, or with the same bytes forwarded. */
PG_TEST(test_mutation_differential)
{
    static const struct pg_otlp_limits lim = {.max_attrs_per_sample = 4, .max_sample_values = 4,
                                              .max_samples = 100, .max_links = 100};
    size_t n, lazy_ok = 0;
    uint8_t *b = pg_test_golden_otlp(&n);

    PG_REQUIRE(b != NULL);
    for (size_t pos = 0; pos < n; pos++) {
        for (int how = 0; how < 3; how++) {
            uint8_t *m = malloc(n), saved;
            struct pg_arena *a = pg_arena_create(0);
            struct pg_otlp_decode_opts eo = {.limits = &lim}, lo = {.limits = &lim,
                                                                    .lazy_min_samples = 1};
            struct pg_otlp_request *er = NULL, *lr = NULL;
            struct pg_status est = {0}, lst = {0};
            enum pg_err ee, le;

            PG_REQUIRE(m != NULL && a != NULL);
            memcpy(m, b, n);
            saved = m[pos];
            m[pos] = how == 0 ? (uint8_t)(saved ^ 1) : how == 1 ? 0 : (uint8_t)(saved + 0x80);
            ee = pg_otlp_decode(a, m, n, &eo, &er, NULL, &est);
            le = pg_otlp_decode(a, m, n, &lo, &lr, NULL, &lst);
            if (ee != le || strcmp(est.msg, lst.msg) != 0) {
                fprintf(stderr, "  byte %zu (%d): eager %s \"%s\", lazy %s \"%s\"\n", pos, how,
                        pg_err_name(ee), est.msg, pg_err_name(le), lst.msg);
                CHECK(0);
            } else if (ee == PG_ERR_OK) {
                uint8_t *ew, *lw;
                size_t ewn, lwn;
                PG_REQUIRE(pg_otlp_request_encode(er, a, &ew, &ewn, &est) == PG_ERR_OK);
                PG_REQUIRE(pg_otlp_request_encode(lr, a, &lw, &lwn, &lst) == PG_ERR_OK);
                if (!same(ew, ewn, lw, lwn)) {
                    fprintf(stderr, "  byte %zu (%d): encodings differ\n", pos, how);
                    CHECK(0);
                }
                lazy_ok += pg_otlp_request_is_lazy(lr);
            }
            pg_arena_destroy(a);
            free(m);
        }
    }
    CHECK(lazy_ok > 0); /* some mutations keep the request valid and lazy */
    free(b);
}

/* A sample with a field the encoder writes elsewhere (an unknown one, written last) is not
 * canonical: the request is decoded eagerly, and forwarded as it would have been. */
PG_TEST(test_non_canonical_falls_back)
{
    size_t n, wn, ewn, lwn;
    uint8_t *b = pg_test_golden_otlp(&n), *w, *ew, *lw;
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_decode_opts eo = {0}, lo = {.lazy_min_samples = 1};
    struct pg_otlp_request *req = NULL, *er = NULL, *lr = NULL;
    struct pg_status st = {0};
    ProtobufCMessageUnknownField *uf;
    struct pg_otlp_sample *s;

    PG_REQUIRE(b != NULL && a != NULL);
    PG_REQUIRE(pg_otlp_decode(a, b, n, &eo, &req, NULL, &st) == PG_ERR_OK);
    s = req->resource_profiles[0]->scope_profiles[0]->profiles[0]->samples[0];
    uf = pg_arena_zalloc(a, sizeof(*uf));
    uf->tag = 9;
    uf->wire_type = PROTOBUF_C_WIRE_TYPE_VARINT;
    uf->len = 1;
    uf->data = pg_arena_memdup(a, "\x01", 1);
    s->base.n_unknown_fields = 1;
    s->base.unknown_fields = uf;
    PG_REQUIRE(pg_otlp_request_encode(req, a, &w, &wn, &st) == PG_ERR_OK);
    PG_REQUIRE(pg_otlp_decode(a, w, wn, &eo, &er, NULL, &st) == PG_ERR_OK);
    PG_REQUIRE(pg_otlp_decode(a, w, wn, &lo, &lr, NULL, &st) == PG_ERR_OK);
    CHECK(pg_otlp_lazy_of(lr->resource_profiles[0]->scope_profiles[0]->profiles[0]) == NULL);
    PG_REQUIRE(pg_otlp_request_encode(er, a, &ew, &ewn, &st) == PG_ERR_OK);
    PG_REQUIRE(pg_otlp_request_encode(lr, a, &lw, &lwn, &st) == PG_ERR_OK);
    CHECK(same(ew, ewn, lw, lwn));
    CHECK(same(w, wn, lw, lwn));
    pg_arena_destroy(a);
    free(b);
}

/* What the pipeline counts (metrics, queue sizes) counts records too. */
PG_TEST(test_batch_sample_count)
{
    size_t n;
    uint8_t *b = pg_test_golden_otlp(&n);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_decode_opts lo = {.lazy_min_samples = 1};
    struct pg_otlp_decode_stats ls;
    struct pg_otlp_request *lr = NULL;
    struct pg_status st = {0};
    struct pg_batch *batch;

    PG_REQUIRE(b != NULL && a != NULL);
    PG_REQUIRE(pg_otlp_decode(a, b, n, &lo, &lr, &ls, &st) == PG_ERR_OK);
    PG_REQUIRE(pg_otlp_request_is_lazy(lr));
    batch = pg_batch_new(a, lr);
    PG_REQUIRE(batch != NULL);
    CHECK(ls.samples > 0);
    CHECK_INT(pg_batch_sample_count(batch), ls.samples);
    pg_batch_unref(batch);
    free(b);
}

PG_TEST_MAIN(PG_CASE(test_canonical_cases), PG_CASE(test_fixtures_and_golden),
             PG_CASE(test_mutation_differential), PG_CASE(test_non_canonical_falls_back),
             PG_CASE(test_batch_sample_count))
