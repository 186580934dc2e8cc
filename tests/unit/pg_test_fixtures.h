/* SPDX-License-Identifier: Apache-2.0
 * The fixture corpus the OTLP unit tests share: a file read relative to a
 * directory named by the environment (ctest sets PG_FIXTURES and
 * PG_SOURCE_DIR; run by hand from the source tree, the fallback works), the
 * golden request of otlp-profiles.md Appendix A, and every pprof fixture
 * translated and encoded into an OTLP request for a test's own check. */
#ifndef PG_TEST_FIXTURES_H
#define PG_TEST_FIXTURES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/arena.h"
#include "otlp/otlp_encode.h"
#include "pg_test.h"
#include "pprof/translate.h"

/* $@env/@rel (or @fallback/@rel), malloc'd; NULL when it cannot be read. */
static inline uint8_t *pg_test_read_rel(const char *env, const char *fallback, const char *rel,
                                        size_t *len)
{
    char path[1024];
    const char *dir = getenv(env);

    snprintf(path, sizeof(path), "%s/%s", dir ? dir : fallback, rel);
    return pg_test_read_file(path, len);
}

/* A file of tests/fixtures. */
static inline uint8_t *pg_test_fixture(const char *rel, size_t *len)
{
    return pg_test_read_rel("PG_FIXTURES", "tests/fixtures", rel, len);
}

/* The 741 bytes of otlp-profiles.md Appendix A. */
static inline uint8_t *pg_test_golden_otlp(size_t *len)
{
    return pg_test_fixture("pprof/golden/appendix_a.otlp.bin", len);
}

/* Every pprof shape the translator meets: the golden profile, the edge cases, each Go
 * profile type, and four real SDK pushes (tests/fixtures/sdk). */
static const char *const pg_test_pprof_fixtures[] = {
    "pprof/golden/appendix_b.pprof", "pprof/edge/labels.pprof",
    "pprof/edge/links.pprof",        "pprof/edge/empty.pprof",
    "pprof/edge/links.pprof.gz.gz",  "pprof/edge/four_types.pprof",
    "pprof/go/goroutine.pb.gz",      "pprof/go/mutex.pb.gz",
    "pprof/go/heap.pb.gz",           "pprof/go/block.pb.gz",
    "pprof/go/cpu.pb.gz",            "sdk/push0.pprof.gz",
    "sdk/push1.pprof.gz",            "sdk/push2.pprof.gz",
    "sdk/push3.pprof.gz",
};
#define PG_TEST_N_PPROF_FIXTURES (sizeof(pg_test_pprof_fixtures) / sizeof(pg_test_pprof_fixtures[0]))

/* Called with fixture @i's OTLP request bytes (@name is its path); @wire lives until it returns. */
typedef void (*pg_test_wire_fn)(const char *name, size_t i, const uint8_t *wire, size_t n,
                                void *arg);

/* Translates (default options) and encodes every fixture and hands the bytes to @fn; a
 * fixture that cannot be read, translated or encoded fails the case. Returns how many
 * reached @fn (all of them when nothing failed). */
static inline size_t pg_test_each_fixture_request(pg_test_wire_fn fn, void *arg)
{
    size_t done = 0;

    for (size_t i = 0; i < PG_TEST_N_PPROF_FIXTURES; i++) {
        const char *name = pg_test_pprof_fixtures[i];
        size_t n, wire_n;
        uint8_t *pprof = pg_test_fixture(name, &n), *wire;
        struct pg_arena *a = pg_arena_create(0);
        struct pg_translate_opts o;
        struct pg_otlp_request *req;
        struct pg_status st;

        pg_translate_opts_default(&o);
        if (pprof == NULL || a == NULL) {
            fprintf(stderr, "  %s: cannot read the fixture\n", name);
            CHECK(0);
        } else if (pg_pprof_translate(a, pprof, n, &o, &req, NULL, &st) != PG_ERR_OK ||
                   pg_otlp_request_encode(req, a, &wire, &wire_n, &st) != PG_ERR_OK) {
            fprintf(stderr, "  %s: %s\n", name, st.msg);
            CHECK(0);
        } else {
            fn(name, i, wire, wire_n, arg);
            done++;
        }
        pg_arena_destroy(a);
        free(pprof);
    }
    return done;
}

#endif
