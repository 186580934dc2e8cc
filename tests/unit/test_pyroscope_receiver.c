/* SPDX-License-Identifier: Apache-2.0
 * The pyroscope receiver's pure parts: Connect error bodies
 * (receiverhelper/connect.c), the query (URL decoding, the format; the time
 * rule is pyroscope/pyro_time.c's, tested there), the metadata onto a translated request
 * (pyroscope_map.c: service.name, labels, scope, session, spy, times,
 * sample_type_config, the suffix's type selection) and the merge of a Push
 * request's translated samples into one valid request (pyroscope_merge.c). */
#include "pg_test.h"

#include <stdlib.h>
#include <string.h>

#include "otlp/dict.h"
#include "pprof/translate.h"
#include "receiver/pyroscope_internal.h"
#include "receiverhelper/connect.h"

PG_TEST(test_connect_codes)
{
    static const struct {
        int http;
        const char *code;
        int status;
    } cases[] = {
        {400, "invalid_argument", 400}, {401, "unauthenticated", 401},
        {403, "permission_denied", 403}, {404, "unimplemented", 501},
        {408, "deadline_exceeded", 504}, {413, "resource_exhausted", 429},
        {415, "invalid_argument", 400}, {429, "resource_exhausted", 429},
        {431, "resource_exhausted", 429}, {500, "internal", 500},
        {503, "unavailable", 503},      {504, "unavailable", 503},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int st = 0;

        CHECK_STR(pg_rxh_connect_code(cases[i].http, &st), cases[i].code);
        CHECK_INT(st, cases[i].status);
    }
}

PG_TEST(test_connect_error_json)
{
    char out[64];
    int st;
    size_t n = pg_rxh_connect_error_json(400, "bad \"x\"\n", out, sizeof(out), &st);

    CHECK_STR(out, "{\"code\":\"invalid_argument\",\"message\":\"bad \\\"x\\\"\\u000a\"}");
    CHECK_INT((int)n, (int)strlen(out));
    CHECK_INT(st, 400);
    /* Cut to fit, still a closed object. */
    n = pg_rxh_connect_error_json(503, "a very long message that does not fit in the buffer",
                                  out, 48, &st);
    CHECK(n == strlen(out) && n < 48 && out[n - 1] == '}' && out[n - 2] == '"');
}

PG_TEST(test_query)
{
    struct pg_arena *a = pg_arena_create(1 << 16);
    static const struct {
        const char *q, *key, *want;
    } cases[] = {
        {"name=app.cpu%7Benv%3Dprod%7D&from=1", "name", "app.cpu{env=prod}"},
        {"names=x&name=y", "name", "y"},
        {"a=1&name=&b=2", "name", ""},
        {"name", "name", ""},
        {"spyName=gospy+x&x=%zz", "spyName", "gospy x"},
        {"x=%zz%4", "x", "%zz%4"},
        {"from=1", "until", NULL},
        /* values of 16 bytes and more: escapes and '+' met 16 bytes a step, at a block's
         * first and last byte, and a '%' too close to the end to be an escape */
        {"name=pyro.checkout%7B__session_id__%3D77e425ea48b3919f%2Cenv%3Dprod%7D", "name",
         "pyro.checkout{__session_id__=77e425ea48b3919f,env=prod}"},
        {"k=%41bcdefghijklmn%4Fpqrstuvwxyz0123456789%4", "k",
         "AbcdefghijklmnOpqrstuvwxyz0123456789%4"},
        {"k=0123456789abcdef+0123456789abcde+%2", "k", "0123456789abcdef 0123456789abcde %2"},
        {"k=0123456789abcdef0123456789abcdef&name=x", "k", "0123456789abcdef0123456789abcdef"},
        {"from=1700000000000000000&until=1700000001000000000", "until", "1700000001000000000"},
        {"name=a&namex=b&nam=c", "name", "a"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = pg_pyro_query_get(a, cases[i].q, cases[i].key);

        if (cases[i].want == NULL) {
            CHECK(got == NULL);
        } else {
            CHECK(got != NULL && strcmp(got, cases[i].want) == 0);
        }
    }
    pg_arena_destroy(a);
}

PG_TEST(test_format)
{
    CHECK_INT(pg_pyro_format("pprof", NULL), PYRO_FORMAT_PPROF);
    CHECK_INT(pg_pyro_format("folded", "multipart/form-data; boundary=x"), PYRO_FORMAT_FOLDED);
    CHECK_INT(pg_pyro_format("lines", NULL), PYRO_FORMAT_LINES);
    CHECK_INT(pg_pyro_format("jfr", NULL), PYRO_FORMAT_UNSUPPORTED);
    CHECK_INT(pg_pyro_format("trie", NULL), PYRO_FORMAT_UNSUPPORTED);
    CHECK_INT(pg_pyro_format(NULL, "multipart/form-data; boundary=x"), PYRO_FORMAT_PPROF);
    CHECK_INT(pg_pyro_format("", "binary/octet-stream+lines"), PYRO_FORMAT_LINES);
    CHECK_INT(pg_pyro_format(NULL, "binary/octet-stream+trie"), PYRO_FORMAT_UNSUPPORTED);
    CHECK_INT(pg_pyro_format(NULL, "binary/octet-stream"), PYRO_FORMAT_FOLDED);
    CHECK_INT(pg_pyro_format(NULL, NULL), PYRO_FORMAT_FOLDED);
}

/* The Go heap fixture (4 sample types) translated into @a. */
static struct pg_otlp_request *heap_request(struct pg_arena *a)
{
    char path[1024];
    size_t len;
    unsigned char *buf;
    struct pg_translate_opts o;
    struct pg_otlp_request *req = NULL;
    struct pg_status st;
    const char *dir = getenv("PG_FIXTURES");

    snprintf(path, sizeof(path), "%s/pprof/go/heap.pb.gz", dir ? dir : "tests/fixtures");
    buf = pg_test_read_file(path, &len);
    if (buf == NULL) {
        return NULL;
    }
    pg_translate_opts_default(&o);
    if (pg_pprof_translate(a, buf, len, &o, &req, NULL, &st) != PG_ERR_OK) {
        req = NULL;
    }
    free(buf);
    return req;
}

static const char *res_attr(const struct pg_otlp_request *r, const char *k)
{
    const struct pg_otlp_resource *res = r->resource_profiles[0]->resource;

    for (size_t i = 0; res != NULL && i < res->n_attributes; i++) {
        if (strcmp(res->attributes[i]->key, k) == 0) {
            return res->attributes[i]->value->string_value;
        }
    }
    return NULL;
}

static const char *str(const struct pg_otlp_request *r, int32_t i)
{
    return r->dictionary->string_table[i];
}

PG_TEST(test_apply)
{
    struct pg_arena *a = pg_arena_create(64 << 20);
    struct pg_otlp_request *req = heap_request(a);
    struct pg_pyro_label labels[] = {
        {"env", "prod"}, {"__session_id__", "s1"}, {"otel.scope.name", "sdk"},
        {"otel.scope.version", "v9"}, {"env", "prod2"}, {"__name__", "memory"},
    };
    struct pg_pyro_stc_entry stc[] = {
        {.type = "inuse_space", .aggregation = PG_PYRO_AGG_AVERAGE, .display_name = "mem"},
    };
    struct pyro_meta m = {.app = "shop", .labels = labels, .n_labels = 6, .spy = "gospy",
                          .from_ns = 1700000000LL * 1000000000, .until_ns = 1700000010LL * 1000000000,
                          .stc = stc, .n_stc = 1};
    struct pg_status st;
    const struct pg_otlp_scopeprof *sp;
    size_t n_agg = 0;

    PG_REQUIRE(req != NULL);
    CHECK_INT(pg_pyro_apply(a, req, &m, &st), PG_ERR_OK);
    CHECK_STR(res_attr(req, "service.name"), "shop");
    CHECK_STR(res_attr(req, "env"), "prod2"); /* the last one wins */
    CHECK_STR(res_attr(req, "service.instance.id"), "s1");
    CHECK_STR(res_attr(req, "pyroscope.spy.name"), "gospy");
    CHECK(res_attr(req, "__name__") == NULL && res_attr(req, "otel.scope.name") == NULL);
    sp = req->resource_profiles[0]->scope_profiles[0];
    CHECK_STR(sp->scope->name, "sdk");
    CHECK_STR(sp->scope->version, "v9");
    CHECK_INT((int)sp->n_profiles, 4);
    for (size_t i = 0; i < sp->n_profiles; i++) {
        const struct pg_otlp_profile *p = sp->profiles[i];

        CHECK(p->duration_nano == 10000000000ull); /* the heap pprof has none */
        for (size_t k = 0; k < p->n_attribute_indices; k++) {
            const struct pg_otlp_kvu *kv = req->dictionary->attribute_table[p->attribute_indices[k]];

            if (strcmp(str(req, kv->key_strindex), "pyroscope.aggregation") == 0) {
                CHECK_STR(str(req, p->sample_type->type_strindex), "inuse_space");
                CHECK_STR(kv->value->string_value, "average");
                n_agg++;
            }
        }
    }
    CHECK_INT((int)n_agg, 1);
    {
        struct pg_arena *s = pg_arena_create(16 << 20);

        CHECK_INT(pg_dict_validate(s, req, true, &st), PG_ERR_OK);
        pg_arena_destroy(s);
    }
    /* A suffix naming one of the types keeps that one. */
    req = heap_request(a);
    PG_REQUIRE(req != NULL);
    m.select_type = "alloc_space";
    m.stc = NULL;
    m.n_stc = 0;
    CHECK_INT(pg_pyro_apply(a, req, &m, &st), PG_ERR_OK);
    sp = req->resource_profiles[0]->scope_profiles[0];
    CHECK_INT((int)sp->n_profiles, 1);
    CHECK_STR(str(req, sp->profiles[0]->sample_type->type_strindex), "alloc_space");
    pg_arena_destroy(a);
}

PG_TEST(test_merge)
{
    struct pg_arena *a = pg_arena_create(64 << 20), *s = pg_arena_create(64 << 20);
    struct pg_otlp_request *reqs[3], *out = NULL;
    struct pg_pyro_label la[] = {{"service_name", "a"}}, lb[] = {{"service_name", "b"}};
    struct pyro_meta ma = {.labels = la, .n_labels = 1}, mb = {.labels = lb, .n_labels = 1};
    struct pg_status st;
    size_t samples_in = 0, samples_out = 0;

    for (size_t i = 0; i < 3; i++) {
        reqs[i] = heap_request(a);
        PG_REQUIRE(reqs[i] != NULL);
        CHECK_INT(pg_pyro_apply(a, reqs[i], i < 2 ? &ma : &mb, &st), PG_ERR_OK);
        for (size_t p = 0; p < reqs[i]->resource_profiles[0]->scope_profiles[0]->n_profiles; p++) {
            samples_in += reqs[i]->resource_profiles[0]->scope_profiles[0]->profiles[p]->n_samples;
        }
    }
    CHECK_INT(pg_pyro_merge(a, s, reqs, 3, &out, &st), PG_ERR_OK);
    PG_REQUIRE(out != NULL);
    CHECK_INT((int)out->n_resource_profiles, 3);
    CHECK_STR(res_attr(out, "service.name"), "a");
    for (size_t r = 0; r < out->n_resource_profiles; r++) {
        const struct pg_otlp_scopeprof *sp = out->resource_profiles[r]->scope_profiles[0];

        for (size_t p = 0; p < sp->n_profiles; p++) {
            samples_out += sp->profiles[p]->n_samples;
        }
    }
    CHECK_INT((int)samples_out, (int)samples_in);
    /* One dictionary, nothing twice: the three copies of the heap share it (only what
     * is referenced is imported, so it may be smaller than one copy's). */
    CHECK(out->dictionary->n_string_table <= reqs[0]->dictionary->n_string_table);
    CHECK(out->dictionary->n_stack_table == reqs[0]->dictionary->n_stack_table);
    CHECK_INT(pg_dict_validate(s, out, true, &st), PG_ERR_OK);
    CHECK_INT(pg_pyro_merge(a, s, reqs, 1, &out, &st), PG_ERR_OK);
    CHECK(out == reqs[0]);
    pg_arena_destroy(s);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_connect_codes), PG_CASE(test_connect_error_json), PG_CASE(test_query),
             PG_CASE(test_format), PG_CASE(test_apply),
             PG_CASE(test_merge))
