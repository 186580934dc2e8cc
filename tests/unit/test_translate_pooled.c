/* SPDX-License-Identifier: Apache-2.0
 * The large-profile path of the translator: a gzip'd pprof over the pool's
 * minimum is inflated into a core/bufpool block and its sample bytes are given
 * back to the pool during the sample pass. The request must be the same, byte
 * for byte, as the one from the plain body (arena path, nothing given back),
 * for sample runs that repeat stacks and labels across the points where bytes
 * are given back (the stack cache and the iterator's label cache must not read
 * them; under ASan the given-back bytes are poisoned). Also: the compact
 * per-sample record's attribute list word (lengths under 15 in the pointer's
 * low bits, longer ones out of line) and the dictionary's pooled tables. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/bufpool.h"
#include "otlp/dict.h"
#include "pg_test.h"
#include "pg_test_zlib.h"
#include "pprof/translate.h"
#include "pprof_writer.h"

#define N_FUNCS 400
#define N_STACKS 300
#define N_PAIRS 120

static char g_names[N_FUNCS][48];
static char g_trace[N_PAIRS][33], g_span[N_PAIRS][17];

/* A profile of @n_samples samples: stacks and label sets come in runs of @run equal
 * samples (run 1: every sample differs from the last), so the caches see hits that
 * reach back across the pass's release points. */
static uint8_t *make_profile_extra(size_t n_samples, size_t run, size_t extra, size_t *len)
{
    struct ppb b;
    int64_t k_trace, k_span, k_route, route[4], s_trace[N_PAIRS], s_span[N_PAIRS];
    uint64_t stacks[N_STACKS][24];
    size_t depth[N_STACKS];
    uint32_t seed = 12345;
    struct pw all = {0};

    ppb_init(&b);
    ppb_value_type(&b, 1, "samples", "count");
    ppb_value_type(&b, 1, "cpu", "nanoseconds");
    ppb_mapping(&b, 1, 0x400000, 0x800000, "/bin/app", "abcdef", 15);
    for (size_t f = 1; f <= N_FUNCS; f++) {
        uint64_t pair[2] = {f, 10 + f};
        snprintf(g_names[f - 1], sizeof(g_names[0]), "pkg.(*T%zu).method%zu", f % 17, f);
        ppb_function(&b, f, g_names[f - 1], "pkg/file.go", (int64_t)f);
        ppb_location(&b, f, 1, 0x400000 + 16 * f, pair, 1, (int)(f % 11 == 0));
    }
    for (size_t i = 0; i < N_PAIRS; i++) {
        snprintf(g_trace[i], sizeof(g_trace[0]), "%08x%08x%08x%08zx", 0xabcdu, 7u, 9u, i + 1);
        snprintf(g_span[i], sizeof(g_span[0]), "%08x%08zx", 0x5151u, i + 1);
        s_trace[i] = ppb_s(&b, g_trace[i]);
        s_span[i] = ppb_s(&b, g_span[i]);
    }
    k_trace = ppb_s(&b, "trace_id");
    k_span = ppb_s(&b, "span_id");
    k_route = ppb_s(&b, "http.route");
    route[0] = ppb_s(&b, "/a");
    route[1] = ppb_s(&b, "/b");
    route[2] = ppb_s(&b, "/c");
    route[3] = ppb_s(&b, "/d");
    for (size_t s = 0; s < N_STACKS; s++) {
        depth[s] = 6 + s % 18;
        for (size_t d = 0; d < depth[s]; d++) {
            seed = seed * 1103515245u + 12345u;
            stacks[s][d] = 1 + (seed >> 8) % N_FUNCS;
        }
    }
    for (size_t i = 0; i < n_samples; i++) {
        size_t g = i / run, st = (g * 7) % N_STACKS, pr = (g * 13) % N_PAIRS;
        struct pw s = {0}, l = {0};
        uint64_t vals[2] = {1 + g % 5, (1 + g % 5) * 10000000u};

        pw_packed(&s, 1, stacks[st], depth[st]);
        pw_packed(&s, 2, vals, 2);
        pw_u(&l, 1, (uint64_t)k_trace);
        pw_u(&l, 2, (uint64_t)s_trace[pr]);
        pw_msg(&s, 3, &l);
        pw_u(&l, 1, (uint64_t)k_span);
        pw_u(&l, 2, (uint64_t)s_span[pr]);
        pw_msg(&s, 3, &l);
        if (g % 3 != 0) {
            pw_u(&l, 1, (uint64_t)k_route);
            pw_u(&l, 2, (uint64_t)route[g % 4]);
            pw_msg(&s, 3, &l);
        }
        pw_msg(&b.out, 2, &s);
        pw_free(&l);
    }
    pw_u(&b.out, 9, 1700000000000000000ull);
    pw_u(&b.out, 12, 10000000);
    pw_raw(&all, b.out.b, b.out.n);
    for (size_t i = 0; i < b.nstr; i++) {
        pw_str(&all, 6, b.strs[i]);
    }
    if (extra > 0) { /* a string nothing refers to: bytes in the pprof only */
        char *big = malloc(extra);
        memset(big, 'x', extra);
        pw_bytes(&all, 6, big, extra);
        free(big);
    }
    pw_free(&b.out);
    *len = all.n;
    return all.b;
}

static uint8_t *make_profile(size_t n_samples, size_t run, size_t *len)
{
    return make_profile_extra(n_samples, run, 0, len);
}

/* The request's bytes with the random profile ids cleared (they differ per call). */
static uint8_t *packed_without_ids(struct pg_otlp_request *req, size_t *len)
{
    struct pg_otlp_scopeprof *sp = req->resource_profiles[0]->scope_profiles[0];
    uint8_t *buf;

    for (size_t k = 0; k < sp->n_profiles; k++) {
        sp->profiles[k]->profile_id.len = 0;
    }
    *len = protobuf_c_message_get_packed_size(&req->base);
    buf = malloc(*len ? *len : 1);
    protobuf_c_message_pack(&req->base, buf);
    return buf;
}

PG_TEST(pooled_equals_plain)
{
    static const struct {
        const char *name;
        size_t samples, run;
        bool payload;
        bool released; /* sample bytes expected back in the pool during the pass */
    } cases[] = {
        {"every sample new", 60000, 1, false, true},
        {"runs of 7 equal samples", 60000, 7, false, true},
        {"runs of 5000 (label and stack caches reach back)", 60000, 5000, false, true},
        {"original payload kept: nothing given back", 60000, 3, true, false},
        {"small run (under 2 MiB): nothing given back", 3000, 1, false, false},
    };
    static const char *const owned_name = "plain body in an arena of its own (owned)";

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t plen, glen, l1, l2;
        uint8_t *plain = make_profile(cases[i].samples, cases[i].run, &plen);
        uint8_t *gz = pg_test_squeeze(plain, plen, PG_TEST_GZIP_BITS, &glen);
        struct pg_arena *a1 = pg_arena_create(0), *a2 = pg_arena_create(0);
        struct pg_otlp_request *r1 = NULL, *r2 = NULL;
        struct pg_translate_stats s1, s2;
        struct pg_translate_opts o;
        struct pg_status st;
        uint8_t *b1, *b2;

        pg_translate_opts_default(&o);
        o.include_original_payload = cases[i].payload;
        CHECK_INT(pg_pprof_translate(a1, plain, plen, &o, &r1, &s1, &st), PG_ERR_OK);
        CHECK_INT(pg_pprof_translate(a2, gz, glen, &o, &r2, &s2, &st), PG_ERR_OK);
        if (r1 == NULL || r2 == NULL) {
            fprintf(stderr, "  case %s: %s\n", cases[i].name, st.msg);
        } else {
            b1 = packed_without_ids(r1, &l1);
            b2 = packed_without_ids(r2, &l2);
            if (l1 != l2 || memcmp(b1, b2, l1) != 0 ||
                (s2.released_bytes > 0) != cases[i].released || s1.released_bytes != 0) {
                fprintf(stderr, "  case %s: %zu / %zu bytes, released %zu / %zu\n",
                        cases[i].name, l1, l2, s1.released_bytes, s2.released_bytes);
            }
            CHECK(l1 == l2 && memcmp(b1, b2, l1) == 0);
            CHECK(s1.released_bytes == 0);
            CHECK((s2.released_bytes > 0) == cases[i].released);
            if (cases[i].released) {
                /* most of the run: all but the last step and the margins */
                CHECK(s2.released_bytes + ((size_t)2 << 20) > plen / 2);
            }
            CHECK_INT((int)s2.samples, (int)cases[i].samples);
            free(b1);
            free(b2);
        }
        /* The same plain body handed over in its own arena (as the receiver does after
         * Content-Encoding): its block is taken from the arena and given back in parts. */
        if (i == 0 && r1 != NULL) {
            struct pg_arena *a3 = pg_arena_create(0), *body = pg_arena_create(0);
            uint8_t *copy = pg_arena_memdup(body, plain, plen);
            struct pg_otlp_request *r3 = NULL;
            struct pg_translate_stats s3;
            size_t l3;

            CHECK_INT(pg_pprof_translate_owned(a3, &body, copy, plen, &o, &r3, &s3, &st),
                      PG_ERR_OK);
            CHECK(body == NULL);
            if (r3 != NULL) {
                uint8_t *b3 = packed_without_ids(r3, &l3);
                b1 = packed_without_ids(r1, &l1);
                if (l1 != l3 || memcmp(b1, b3, l1) != 0 || s3.released_bytes == 0) {
                    fprintf(stderr, "  case %s: %zu / %zu bytes, released %zu\n", owned_name,
                            l1, l3, s3.released_bytes);
                }
                CHECK(l1 == l3 && memcmp(b1, b3, l1) == 0);
                CHECK(s3.released_bytes > 0);
                free(b1);
                free(b3);
            }
            pg_arena_destroy(body);
            pg_arena_destroy(a3);
        }
        pg_arena_destroy(a1);
        pg_arena_destroy(a2);
        free(plain);
        free(gz);
    }
}

/* The request's memory cap still bounds a pooled layer: a 1 MiB pprof (mostly a string
 * nothing uses) under a 768 KiB cap is refused as over the limit, as in the arena path,
 * though its request would fit. */
PG_TEST(pooled_layer_within_the_cap)
{
    static const struct {
        size_t cap;
        enum pg_err want;
    } cases[] = {{(size_t)768 << 10, PG_ERR_LIMIT}, {0, PG_ERR_OK}};
    size_t plen, glen;
    uint8_t *plain = make_profile_extra(200, 1, (size_t)1 << 20, &plen);
    uint8_t *gz = pg_test_squeeze(plain, plen, PG_TEST_GZIP_BITS, &glen);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(cases[i].cap);
        struct pg_otlp_request *r = NULL;
        struct pg_status st;
        enum pg_err e = pg_pprof_translate(a, gz, glen, NULL, &r, NULL, &st);
        if (e != cases[i].want) {
            fprintf(stderr, "  cap %zu: %d (%s)\n", cases[i].cap, e, st.msg);
        }
        CHECK_INT(e, cases[i].want);
        pg_arena_destroy(a);
    }
    free(plain);
    free(gz);
}

/* Every sample's attribute list comes out whole whatever its length: lists of up to 14
 * ride in the record's pointer bits, longer ones out of line. */
PG_TEST(attribute_list_lengths)
{
    static const size_t lens[] = {0, 1, 2, 14, 15, 16, 31, 40};
    static char keys[40][8], vals[40][8];
    struct ppb b;
    uint64_t pair[2] = {1, 10}, loc[1] = {1};
    int64_t v[1] = {1};
    struct pg_arena *a = pg_arena_create(0);
    struct pg_otlp_request *r = NULL;
    struct pg_status st;
    struct pw all = {0};

    ppb_init(&b);
    ppb_value_type(&b, 1, "samples", "count");
    ppb_function(&b, 1, "main", "main.go", 1);
    ppb_location(&b, 1, 0, 0x1000, pair, 1, 0);
    for (size_t k = 0; k < 40; k++) {
        snprintf(keys[k], sizeof(keys[k]), "k%zu", k);
        snprintf(vals[k], sizeof(vals[k]), "v%zu", k);
    }
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        struct ppb_label labs[40];
        for (size_t k = 0; k < lens[i]; k++) {
            labs[k] = (struct ppb_label){keys[k], vals[(k + i) % 40], 0, NULL};
        }
        /* twice: the second takes the first's record (equal label bytes) */
        ppb_sample(&b, loc, 1, v, 1, labs, lens[i], 1);
        ppb_sample(&b, loc, 1, v, 1, labs, lens[i], 1);
    }
    pw_raw(&all, b.out.b, b.out.n);
    for (size_t i = 0; i < b.nstr; i++) {
        pw_str(&all, 6, b.strs[i]);
    }
    CHECK_INT(pg_pprof_translate(a, all.b, all.n, NULL, &r, NULL, &st), PG_ERR_OK);
    if (r != NULL) {
        const struct pg_otlp_profile *pr = r->resource_profiles[0]->scope_profiles[0]->profiles[0];
        const struct pg_otlp_dict *d = r->dictionary;
        CHECK_INT((int)pr->n_samples, (int)(2 * sizeof(lens) / sizeof(lens[0])));
        for (size_t i = 0; i < pr->n_samples && i / 2 < sizeof(lens) / sizeof(lens[0]); i++) {
            const struct pg_otlp_sample *sm = pr->samples[i];
            size_t want = lens[i / 2];
            if (sm->n_attribute_indices != want) {
                fprintf(stderr, "  sample %zu: %zu attributes, want %zu\n", i,
                        sm->n_attribute_indices, want);
            }
            CHECK_INT((int)sm->n_attribute_indices, (int)want);
            for (size_t k = 0; k < sm->n_attribute_indices && k < want; k++) {
                const struct pg_otlp_kvu *kv = d->attribute_table[sm->attribute_indices[k]];
                CHECK_STR(d->string_table[kv->key_strindex], keys[k]);
                CHECK_STR(kv->value->string_value, vals[(k + i / 2) % 40]);
            }
        }
    }
    pw_free(&b.out);
    pw_free(&all);
    pg_arena_destroy(a);
}

/* The dictionary's large tables (here the link table: 100 000 links, 2 MiB of slots) come
 * from core/bufpool and go back to it when the builder's scratch arena dies, so the next
 * large request finds their pages resident; small tables stay malloc'd. */
PG_TEST(dict_tables_back_to_the_pool)
{
    static const struct {
        const char *name;
        size_t links;
        bool pooled;
    } cases[] = {
        {"100 000 links", 100000, true},
        {"500 links", 500, false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *out = pg_arena_create(0), *scratch = pg_arena_create(0);
        struct pg_dict_builder *b = pg_dict_builder_new(out, scratch);
        struct pg_bufpool_stats before, after;
        bool ok = b != NULL;

        pg_bufpool_release();
        pg_bufpool_stats(&before);
        for (size_t k = 0; ok && k < cases[i].links; k++) {
            uint8_t trace[16] = {1}, span[8] = {2};
            memcpy(trace + 8, &k, sizeof(k));
            memcpy(span, &k, sizeof(k));
            ok = pg_dict_link(b, trace, span) == (int32_t)k + 1;
        }
        CHECK(ok);
        pg_arena_destroy(scratch); /* the builder's tables go */
        pg_bufpool_stats(&after);
        if ((after.held >= ((size_t)2 << 20)) != cases[i].pooled) {
            fprintf(stderr, "  case %s: pool holds %zu bytes\n", cases[i].name, after.held);
        }
        CHECK((after.held >= ((size_t)2 << 20)) == cases[i].pooled);
        CHECK(after.held >= before.held);
        pg_arena_destroy(out);
        pg_bufpool_release();
    }
}

/* A large profile's Sample structs are written over its per-sample records (their pool
 * block grown in place and handed to the request arena), backwards: every struct of both
 * profiles still says what its pprof sample said, and the records are not alive beside
 * the structs (the translator's peak is the request's footprint, not that plus 16 bytes
 * per sample). */
PG_TEST(samples_over_records)
{
    static const struct {
        const char *name;
        size_t samples;
        bool over; /* records big enough for a pool block of their own */
    } cases[] = {
        {"60 000 samples: records in a pool block", 60000, true},
        {"17 000 samples: just over 256 KiB of records", 17000, true},
        {"3 000 samples: records in a chunk, structs apart", 3000, false},
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t plen, bad = 0;
        uint8_t *plain = make_profile(cases[c].samples, 1, &plen);
        struct pg_arena *a = pg_arena_create(0);
        struct pg_otlp_request *r = NULL;
        struct pg_translate_stats s;
        struct pg_status st;

        CHECK_INT(pg_pprof_translate(a, plain, plen, NULL, &r, &s, &st), PG_ERR_OK);
        if (r != NULL) {
            struct pg_otlp_scopeprof *sp = r->resource_profiles[0]->scope_profiles[0];
            const size_t n = cases[c].samples, recbytes = n * 16;

            CHECK_INT((int)sp->n_profiles, 2);
            for (size_t i = 0; sp->n_profiles == 2 && i < n; i++) {
                const struct pg_otlp_sample *cpu = sp->profiles[0]->samples[i];
                const struct pg_otlp_sample *cnt = sp->profiles[1]->samples[i];
                int64_t v = 1 + (int64_t)(i % 5);

                /* profile 0 is pprof's default (last) type, cpu; then samples */
                bad += cpu == cnt || cpu->n_values != 1 || cnt->n_values != 1 ||
                       cpu->values[0] != v * 10000000 || cnt->values[0] != v ||
                       cpu->stack_index != cnt->stack_index || cpu->stack_index <= 0 ||
                       cpu->link_index != cnt->link_index || cpu->link_index <= 0 ||
                       cpu->n_attribute_indices != (i % 3 != 0 ? 1u : 0u) ||
                       cnt->n_attribute_indices != cpu->n_attribute_indices ||
                       cnt->attribute_indices != cpu->attribute_indices ||
                       cpu->n_timestamps_unix_nano != 0;
            }
            if (bad != 0 || (s.peak_bytes < pg_arena_footprint(a) + recbytes / 2) != cases[c].over) {
                fprintf(stderr, "  case %s: %zu samples wrong; peak %zu, request %zu\n",
                        cases[c].name, bad, s.peak_bytes, pg_arena_footprint(a));
            }
            CHECK(bad == 0);
            CHECK((s.peak_bytes < pg_arena_footprint(a) + recbytes / 2) == cases[c].over);
        }
        pg_arena_destroy(a);
        free(plain);
    }
}

PG_TEST_MAIN(PG_CASE(samples_over_records), PG_CASE(pooled_equals_plain), PG_CASE(attribute_list_lengths), PG_CASE(pooled_layer_within_the_cap), PG_CASE(dict_tables_back_to_the_pool))
