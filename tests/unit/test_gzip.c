/* SPDX-License-Identifier: Apache-2.0
 * codec/gzip: libdeflate gzip output checked by two decoders (pprofgate's
 * gunzip and zlib's inflate) at every level a config can reach, and the
 * per-thread compressors: reused across calls, freed at thread exit and by
 * pg_gzip_thread_release (the ASan build's LeakSanitizer checks the rest). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "codec/gzip.h"
#include "pg_test.h"

#define BODY_LEN 60000

/* Half text-like and repetitive, half noise: both kinds of deflate block. */
static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = i < n / 2 ? (uint8_t)("pprofgate/otlp "[(i / 7) % 15]) : (uint8_t)(seed >> 16);
    }
}

/* zlib's own gunzip, independent of src/codec. */
static bool zlib_gunzip_equals(const uint8_t *z, size_t zn, const uint8_t *want, size_t n)
{
    uint8_t *out = malloc(n + 16);
    z_stream zs;
    bool ok;

    memset(&zs, 0, sizeof(zs));
    if (out == NULL || inflateInit2(&zs, 15 + 16) != Z_OK) {
        free(out);
        return false;
    }
    zs.next_in = (Bytef *)(uintptr_t)z;
    zs.avail_in = (uInt)zn;
    zs.next_out = out;
    zs.avail_out = (uInt)(n + 16);
    ok = inflate(&zs, Z_FINISH) == Z_STREAM_END && zs.total_out == n && zs.avail_in == 0 &&
         memcmp(out, want, n) == 0;
    inflateEnd(&zs);
    free(out);
    return ok;
}

PG_TEST(roundtrip_every_level)
{
    static const int levels[] = {PG_GZIP_LEVEL_DEFAULT, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const size_t lens[] = {0, 1, 100, BODY_LEN};
    uint8_t *in = malloc(BODY_LEN);
    size_t z1 = 0, z9 = 0, zdef = 0, z6 = 0;

    PG_REQUIRE(in != NULL);
    fill(in, BODY_LEN, 7);
    for (size_t li = 0; li < sizeof(levels) / sizeof(levels[0]); li++) {
        for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
            struct pg_status st;
            uint8_t *z = NULL, *back = NULL;
            size_t zn = 0, bn = 0;

            pg_status_clear(&st);
            CHECK_INT(pg_gzip_compress(NULL, in, lens[k], levels[li], &z, &zn, &st), PG_ERR_OK);
            PG_REQUIRE(z != NULL);
            CHECK(zn >= 18 && z[0] == 0x1f && z[1] == 0x8b && z[2] == 8);
            CHECK(zlib_gunzip_equals(z, zn, in, lens[k]));
            CHECK_INT(pg_gzip_decompress(z, zn, lens[k], &back, &bn, &st), PG_ERR_OK);
            CHECK_INT(bn, lens[k]);
            CHECK(bn == 0 || memcmp(back, in, bn) == 0);
            if (lens[k] == BODY_LEN) {
                z1 = levels[li] == 1 ? zn : z1;
                z6 = levels[li] == 6 ? zn : z6;
                z9 = levels[li] == 9 ? zn : z9;
                zdef = levels[li] == PG_GZIP_LEVEL_DEFAULT ? zn : zdef;
                /* 0 stores: output a little over the input; the others shrink it. */
                CHECK(levels[li] == 0 ? zn > BODY_LEN : zn < BODY_LEN * 3 / 4);
            }
            free(back);
            free(z);
        }
    }
    CHECK(z9 <= z1);
    CHECK_INT(zdef, z6);

    /* The arena form (the heap sampler's) gives a stream both decoders take. */
    struct pg_arena *a = pg_arena_create(0);
    struct pg_status st;
    uint8_t *za = NULL;
    size_t zan = 0;

    PG_REQUIRE(a != NULL);
    pg_status_clear(&st);
    CHECK_INT(pg_gzip_compress(a, in, BODY_LEN, PG_GZIP_LEVEL_DEFAULT, &za, &zan, &st), PG_ERR_OK);
    CHECK(za != NULL && zlib_gunzip_equals(za, zan, in, BODY_LEN));
    pg_arena_destroy(a);
    free(in);
}

PG_TEST(levels_outside_the_scale_refused)
{
    static const int bad[] = {-2, -3, 10, 12, 1000};
    uint8_t in[32] = {0};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct pg_status st;
        uint8_t *z = (uint8_t *)in;
        size_t zn = 5;

        pg_status_clear(&st);
        CHECK_INT(pg_gzip_compress(NULL, in, sizeof(in), bad[i], &z, &zn, &st), PG_ERR_INTERNAL);
        CHECK(z == NULL && zn == 0);
        CHECK(strstr(pg_status_text(&st), "level") != NULL);
    }
}

#define THREADS 4
#define CALLS 50

static pthread_barrier_t done_calls;
static pthread_barrier_t may_exit;

/* Many calls at two levels; waits so the main thread can count what is alive. */
static void *worker(void *arg)
{
    uint8_t *in = malloc(4096);
    size_t fails = 0;

    if (in != NULL) {
        fill(in, 4096, (uint32_t)(uintptr_t)arg);
        for (int i = 0; i < CALLS; i++) {
            struct pg_status st;
            uint8_t *z = NULL;
            size_t zn = 0;

            pg_status_clear(&st);
            if (pg_gzip_compress(NULL, in, 4096, i % 2 ? 1 : 6, &z, &zn, &st) != PG_ERR_OK ||
                !zlib_gunzip_equals(z, zn, in, 4096)) {
                fails++;
            }
            free(z);
        }
    } else {
        fails = 1;
    }
    free(in);
    pthread_barrier_wait(&done_calls);
    pthread_barrier_wait(&may_exit);
    return (void *)fails;
}

PG_TEST(compressor_per_thread_reused_and_freed)
{
    pthread_t t[THREADS];
    uint8_t in[1000];
    size_t base;

    pg_gzip_thread_release();
    base = pg_gzip_compressors_live();
    fill(in, sizeof(in), 3);
    for (int i = 0; i < 200; i++) {
        struct pg_status st;
        uint8_t *z = NULL;
        size_t zn = 0;

        pg_status_clear(&st);
        CHECK_INT(pg_gzip_compress(NULL, in, sizeof(in), 6, &z, &zn, &st), PG_ERR_OK);
        free(z);
    }
    CHECK_INT(pg_gzip_compressors_live(), base + 1); /* 200 calls, one compressor */

    PG_REQUIRE(pthread_barrier_init(&done_calls, NULL, THREADS + 1) == 0);
    PG_REQUIRE(pthread_barrier_init(&may_exit, NULL, THREADS + 1) == 0);
    for (uintptr_t i = 0; i < THREADS; i++) {
        PG_REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(i + 1)) == 0);
    }
    pthread_barrier_wait(&done_calls);
    /* Each thread made one per level it used, whatever its number of calls. */
    CHECK_INT(pg_gzip_compressors_live(), base + 1 + 2 * THREADS);
    pthread_barrier_wait(&may_exit);
    for (int i = 0; i < THREADS; i++) {
        void *fails = NULL;

        pthread_join(t[i], &fails);
        CHECK_INT((uintptr_t)fails, 0);
    }
    CHECK_INT(pg_gzip_compressors_live(), base + 1); /* thread exit freed theirs */
    pg_gzip_thread_release();
    CHECK_INT(pg_gzip_compressors_live(), base);
    pg_gzip_thread_release(); /* twice is harmless */
    pthread_barrier_destroy(&done_calls);
    pthread_barrier_destroy(&may_exit);
}

PG_TEST_MAIN(PG_CASE(roundtrip_every_level), PG_CASE(levels_outside_the_scale_refused),
             PG_CASE(compressor_per_thread_reused_and_freed))
