/* SPDX-License-Identifier: Apache-2.0
 * Split/merge invariants of the OTLP exporter's request repacking: parts stay
 * under the cap, every part's dictionary is complete and pruned (index 0 zero
 * values, no dangling index, no orphan), the samples are exactly the input's
 * (same frames, attributes and values, same total), merging dedupes by value,
 * and a sample too large on its own is dropped and counted. */
#include <stdlib.h>
#include <string.h>

#include "otlp/otlp_encode.h"
#include "exporterhelper/split.h"
#include "pg_test.h"
#include "test_otlp_util.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* All sample keys of @reqs, sorted; caller frees each and the array. */
static char **collect_keys(const struct pg_otlp_request *const *reqs, size_t n, size_t *count)
{
    size_t total = 0;
    size_t k = 0;
    char **keys;

    for (size_t i = 0; i < n; i++) {
        total += pg_otlp_request_samples(reqs[i]);
    }
    keys = calloc(total + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        const struct pg_otlp_request *q = reqs[i];

        for (size_t r = 0; r < q->n_resource_profiles; r++) {
            for (size_t s = 0; s < q->resource_profiles[r]->n_scope_profiles; s++) {
                const struct pg_otlp_scopeprof *sp = q->resource_profiles[r]->scope_profiles[s];

                for (size_t p = 0; p < sp->n_profiles; p++) {
                    for (size_t x = 0; x < sp->profiles[p]->n_samples; x++) {
                        char buf[2048];

                        tb_sample_key(q->dictionary, sp->profiles[p]->samples[x], buf, sizeof(buf));
                        keys[k++] = strdup(buf);
                    }
                }
            }
        }
    }
    qsort(keys, k, sizeof(char *), cmp_str);
    *count = k;
    return keys;
}

static void free_keys(char **keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(keys[i]);
    }
    free(keys);
}

static void check_same_samples(const struct pg_otlp_request *const *in, size_t n_in,
                               const struct pg_split_result *res)
{
    const struct pg_otlp_request **outs = calloc(res->n_parts + 1, sizeof(*outs));
    size_t na;
    size_t nb;
    char **a;
    char **b;

    for (size_t i = 0; i < res->n_parts; i++) {
        outs[i] = res->parts[i].req;
    }
    a = collect_keys(in, n_in, &na);
    b = collect_keys(outs, res->n_parts, &nb);
    CHECK_INT(nb, na);
    for (size_t i = 0; i < na && i < nb; i++) {
        if (strcmp(a[i], b[i]) != 0) {
            fprintf(stderr, "  sample differs: %s vs %s\n", a[i], b[i]);
            CHECK(0);
            break;
        }
    }
    free_keys(a, na);
    free_keys(b, nb);
    free(outs);
}

PG_TEST(split_under_cap_keeps_everything)
{
    static const size_t caps[] = {16 << 10, 64 << 10, 200 << 10};

    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
        struct pg_arena *in = pg_arena_create(0);
        struct pg_arena *out = pg_arena_create(0);
        const struct pg_otlp_request *req = tb_request(in, 2, 3000, 400, "svc", 7);
        struct pg_split_result res;
        struct pg_status st;
        size_t total = 0;
        size_t whole = protobuf_c_message_get_packed_size(&req->base);

        pg_status_clear(&st);
        CHECK_INT(pg_otlp_split(&req, 1, caps[c], out, &res, &st), PG_ERR_OK);
        CHECK(res.n_parts >= whole / caps[c]);
        CHECK_INT(res.dropped_samples, 0);
        for (size_t i = 0; i < res.n_parts; i++) {
            size_t n = protobuf_c_message_get_packed_size(&res.parts[i].req->base);

            CHECK(n <= caps[c]);
            CHECK_INT(n, res.parts[i].bytes);
            CHECK_INT(tb_check_dict(res.parts[i].req), 0);
            CHECK_INT(pg_otlp_request_samples(res.parts[i].req), res.parts[i].samples);
            /* The resource travels with every part. */
            CHECK_STR(res.parts[i].req->resource_profiles[0]->resource->attributes[0]->key,
                      "service.name");
            total += res.parts[i].samples;
        }
        CHECK_INT(total, 6000);
        check_same_samples(&req, 1, &res);
        pg_arena_destroy(in);
        pg_arena_destroy(out);
    }
}

PG_TEST(merge_dedupes_by_value)
{
    struct pg_arena *in = pg_arena_create(0);
    struct pg_arena *out = pg_arena_create(0);
    const struct pg_otlp_request *reqs[3];
    struct pg_split_result res;
    struct pg_status st;

    reqs[0] = tb_request(in, 1, 50, 20, "a", 1);
    reqs[1] = tb_request(in, 1, 50, 20, "a", 1); /* identical content */
    reqs[2] = tb_request(in, 1, 30, 10, "b", 2);
    pg_status_clear(&st);
    CHECK_INT(pg_otlp_split(reqs, 3, 0, out, &res, &st), PG_ERR_OK);
    CHECK_INT(res.n_parts, 1);
    CHECK_INT(res.parts[0].samples, 130);
    CHECK_INT(tb_check_dict(res.parts[0].req), 0);
    /* Three pushes keep three resources, one dictionary. */
    CHECK_INT(res.parts[0].req->n_resource_profiles, 3);
    /* Re-interned, not concatenated: the duplicate request adds nothing. */
    CHECK_INT(res.parts[0].req->dictionary->n_function_table,
              1 + 20 + 10);
    CHECK(res.parts[0].req->dictionary->n_string_table <
          reqs[0]->dictionary->n_string_table + reqs[1]->dictionary->n_string_table +
              reqs[2]->dictionary->n_string_table - 5);
    check_same_samples(reqs, 3, &res);
    pg_arena_destroy(in);
    pg_arena_destroy(out);
}

PG_TEST(oversized_sample_dropped)
{
    struct pg_arena *in = pg_arena_create(0);
    struct pg_arena *out = pg_arena_create(0);
    struct pg_otlp_request *req = tb_request(in, 1, 40, 10, "big", 3);
    struct pg_otlp_sample *huge = req->resource_profiles[0]->scope_profiles[0]->profiles[0]->samples[5];
    struct pg_split_result res;
    struct pg_status st;
    size_t total = 0;

    /* 20000 timestamps = 160 KB: cannot fit a 32 KiB cap on its own. */
    huge->n_timestamps_unix_nano = 20000;
    huge->timestamps_unix_nano = pg_arena_calloc(in, 20000, sizeof(uint64_t));
    huge->n_values = 20000;
    huge->values = pg_arena_calloc(in, 20000, sizeof(int64_t));
    pg_status_clear(&st);
    CHECK_INT(pg_otlp_split((const struct pg_otlp_request *const *)&req, 1, 32 << 10, out, &res,
                            &st),
              PG_ERR_OK);
    CHECK_INT(res.dropped_samples, 1);
    for (size_t i = 0; i < res.n_parts; i++) {
        CHECK(protobuf_c_message_get_packed_size(&res.parts[i].req->base) <= (32 << 10));
        CHECK_INT(tb_check_dict(res.parts[i].req), 0);
        total += res.parts[i].samples;
    }
    CHECK_INT(total, 39);
    pg_arena_destroy(in);
    pg_arena_destroy(out);
}

PG_TEST(resource_strindex_made_plain)
{
    struct pg_arena *in = pg_arena_create(0);
    struct pg_arena *out = pg_arena_create(0);
    struct pg_otlp_request *req = tb_request(in, 1, 5, 3, "x", 4);
    struct pg_otlp_kv *kv = req->resource_profiles[0]->resource->attributes[0];
    struct pg_split_result res;
    struct pg_status st;
    const struct pg_otlp_kv *got;

    /* Point the key at the dictionary's "cpu" (index 1) instead of a plain key. */
    kv->key = "";
    kv->key_strindex = 1;
    pg_status_clear(&st);
    CHECK_INT(pg_otlp_split((const struct pg_otlp_request *const *)&req, 1, 0, out, &res, &st),
              PG_ERR_OK);
    got = res.parts[0].req->resource_profiles[0]->resource->attributes[0];
    CHECK_STR(got->key, "cpu");
    CHECK_INT(got->key_strindex, 0);
    pg_arena_destroy(in);
    pg_arena_destroy(out);
}

PG_TEST(empty_profile_kept)
{
    struct pg_arena *in = pg_arena_create(0);
    struct pg_arena *out = pg_arena_create(0);
    const struct pg_otlp_request *req = tb_request(in, 3, 0, 3, "e", 5);
    struct pg_split_result res;
    struct pg_status st;

    pg_status_clear(&st);
    CHECK_INT(pg_otlp_split(&req, 1, 0, out, &res, &st), PG_ERR_OK);
    CHECK_INT(res.n_parts, 1);
    CHECK_INT(res.parts[0].req->resource_profiles[0]->scope_profiles[0]->n_profiles, 3);
    CHECK_INT(tb_check_dict(res.parts[0].req), 0);
    pg_arena_destroy(in);
    pg_arena_destroy(out);
}

/* The wire count of samples equals the decoded count, for several shapes;
 * a cut or malformed encoding is refused, never miscounted. */
PG_TEST(wire_sample_count)
{
    static const size_t shapes[][2] = {{1, 1}, {1, 200}, {3, 50}, {2, 0}};

    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        struct pg_arena *a = pg_arena_create(0);
        struct pg_otlp_request *req = tb_request(a, shapes[i][0], shapes[i][1], 20, "svc", 7);
        uint8_t *buf = NULL;
        size_t len = 0, n = 12345;
        struct pg_status st;

        CHECK_INT(pg_otlp_request_encode(req, a, &buf, &len, &st), PG_ERR_OK);
        CHECK(pg_otlp_wire_samples(buf, len, &n));
        CHECK_INT(n, pg_otlp_request_samples(req));
        CHECK_INT(n, shapes[i][0] * shapes[i][1]);
        if (len > 3) {
            CHECK(!pg_otlp_wire_samples(buf, len - 3, &n)); /* cut inside a field */
        }
        pg_arena_destroy(a);
    }
    {
        static const uint8_t bad_wt[] = {0x0b, 0x00}; /* wire type 3 */
        size_t n;
        CHECK(!pg_otlp_wire_samples(bad_wt, sizeof(bad_wt), &n));
    }
}

PG_TEST_MAIN(PG_CASE(split_under_cap_keeps_everything), PG_CASE(merge_dedupes_by_value),
             PG_CASE(oversized_sample_dropped), PG_CASE(resource_strindex_made_plain),
             PG_CASE(empty_profile_kept), PG_CASE(wire_sample_count))
