/* SPDX-License-Identifier: Apache-2.0
 * The pyroscope parsers on real pushes of the pyroscope-go v1.5.0 SDK (tests/fixtures/
 * pyroscope, captured on the wire): the Content-Type's boundary, the multipart parts, the
 * sample_type_config part, the `name` query value, and the profile part through the pprof
 * translator with the types the SDK sends. */
#include "pg_test.h"

#include "core/hex.h"
#include "otlp/otlp.h"
#include "pprof/translate.h"
#include "pyroscope/pyro_multipart.h"
#include "pyroscope/pyro_name.h"
#include "pyroscope/pyro_stc.h"

static uint8_t *fixture(const char *name, size_t *len)
{
    char path[1024];
    const char *dir = getenv("PG_FIXTURES");
    snprintf(path, sizeof(path), "%s/pyroscope/%s", dir ? dir : "tests/fixtures", name);
    return pg_test_read_file(path, len);
}

/* The value of query key @key in the request line of @meta, percent-decoded into @out. */
static size_t query_value(const char *meta, const char *key, char *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "%s=", key);
    const char *p = meta;
    while ((p = strstr(p, pat)) != NULL && p[-1] != '?' && p[-1] != '&') {
        p++;
    }
    size_t n = 0;
    for (p = p ? p + strlen(pat) : ""; *p && *p != '&' && *p != ' ' && *p != '\n' && n + 1 < cap;
         p++) {
        if (*p == '%' && pg_hex_digit(p[1]) >= 0 && pg_hex_digit(p[2]) >= 0) {
            out[n++] = (char)(pg_hex_digit(p[1]) * 16 + pg_hex_digit(p[2]));
            p += 2;
        } else {
            out[n++] = *p == '+' ? ' ' : *p;
        }
    }
    out[n] = '\0';
    return n;
}

struct capture {
    const char *file;
    const char *types[4]; /* the OTLP profiles' sample types */
    size_t n_types, n_parts;
    const char *scope;
};

static void check_capture(const struct capture *c)
{
    char path[64], ct[256], name[1024], boundary[PG_PYRO_MAX_BOUNDARY + 1];
    size_t mlen, blen;
    snprintf(path, sizeof(path), "%s.meta", c->file);
    char *meta = (char *)fixture(path, &mlen);
    snprintf(path, sizeof(path), "%s.body", c->file);
    uint8_t *body = fixture(path, &blen);
    struct pg_arena *a = pg_arena_create(0);
    struct pg_status st = {0};

    PG_REQUIRE(meta != NULL && body != NULL);
    const char *cth = strstr(meta, "Content-Type: ");
    PG_REQUIRE(cth != NULL);
    snprintf(ct, sizeof(ct), "%.*s", (int)strcspn(cth + 14, "\n"), cth + 14);
    CHECK_INT(pg_pyro_multipart_boundary(ct, boundary, sizeof(boundary), &st), PG_ERR_OK);
    CHECK_INT(strlen(boundary), 60); /* Go's multipart writer: 30 random bytes in hex */

    struct pg_pyro_part *parts;
    size_t n;
    PG_REQUIRE(pg_pyro_multipart_parse(a, body, blen, boundary, &parts, &n, &st) == PG_ERR_OK);
    CHECK_INT(n, c->n_parts);
    const struct pg_pyro_part *prof = pg_pyro_multipart_find(parts, n, "profile");
    PG_REQUIRE(prof != NULL);
    CHECK_STR(prof->filename, "profile.pprof");
    CHECK_STR(prof->content_type, "application/octet-stream");
    CHECK(prof->len > 100 && prof->data[0] == 0x1f && prof->data[1] == 0x8b);

    struct pg_translate_opts to;
    struct pg_otlp_request *req;
    pg_translate_opts_default(&to);
    enum pg_err err = pg_pprof_translate(a, prof->data, prof->len, &to, &req, NULL, &st);
    if (err != PG_ERR_OK) {
        fprintf(stderr, "  %s: %s\n", c->file, st.msg);
    }
    PG_REQUIRE(err == PG_ERR_OK);
    const struct pg_otlp_scopeprof *sp = req->resource_profiles[0]->scope_profiles[0];
    CHECK_INT(sp->n_profiles, c->n_types);
    for (size_t k = 0; k < c->n_types; k++) { /* each type once, in any order */
        size_t seen = 0;
        for (size_t i = 0; i < sp->n_profiles; i++) {
            const char *t =
                req->dictionary->string_table[sp->profiles[i]->sample_type->type_strindex];
            seen += strcmp(t, c->types[k]) == 0;
            CHECK(sp->profiles[i]->n_samples > 0);
        }
        if (seen != 1) {
            fprintf(stderr, "  %s: sample type %s seen %zu times\n", c->file, c->types[k], seen);
        }
        CHECK_INT(seen, 1);
    }

    const struct pg_pyro_part *stc = pg_pyro_multipart_find(parts, n, "sample_type_config");
    if (c->n_parts == 2) {
        struct pg_pyro_stc_entry *e;
        size_t ne;
        PG_REQUIRE(stc != NULL);
        CHECK_STR(stc->filename, "sample_type_config.json");
        PG_REQUIRE(pg_pyro_stc_parse(a, stc->data, stc->len, &e, &ne, &st) == PG_ERR_OK);
        CHECK_INT(ne, 4);
        for (size_t i = 0; i < ne; i++) {
            bool inuse = strncmp(e[i].type, "inuse_", 6) == 0;
            CHECK_STR(e[i].units, strstr(e[i].type, "_space") ? "bytes" : "objects");
            CHECK_INT(e[i].aggregation, inuse ? PG_PYRO_AGG_AVERAGE : PG_PYRO_AGG_UNSET);
        }
    } else {
        CHECK(stc == NULL);
    }

    struct pg_pyro_name nm;
    size_t nlen = query_value(meta, "name", name, sizeof(name));
    PG_REQUIRE(pg_pyro_name_parse(a, name, nlen, &nm, &st) == PG_ERR_OK);
    CHECK_STR(nm.app, "pyro.checkout");
    CHECK(nm.type_suffix == NULL);
    const char *want[] = {"__session_id__", "env", "otel.scope.name", "otel.scope.version",
                          "process.runtime.name", "process.runtime.version", "region"};
    CHECK_INT(nm.n_labels, 7);
    for (size_t i = 0; i < nm.n_labels && i < 7; i++) {
        CHECK_STR(nm.labels[i].name, want[i]);
    }
    CHECK_STR(nm.labels[1].value, "prod");
    CHECK_STR(nm.labels[2].value, c->scope);
    CHECK_INT(strlen(nm.labels[0].value), 16);

    /* from/until in nanoseconds (19 digits) from this SDK version */
    char v[64];
    CHECK_INT(query_value(meta, "from", v, sizeof(v)), 19);
    CHECK_INT(query_value(meta, "until", v, sizeof(v)), 19);
    pg_arena_destroy(a);
    free(meta);
    free(body);
}

PG_TEST(test_go_sdk_cpu)
{
    static const struct capture c = {"go-cpu", {"samples", "cpu"}, 2, 1,
                                     "com.grafana.pyroscope/go"};
    check_capture(&c);
}

PG_TEST(test_go_sdk_heap)
{
    static const struct capture c = {"go-heap",
                                     {"alloc_objects", "alloc_space", "inuse_objects",
                                      "inuse_space"},
                                     4, 2, "com.grafana.pyroscope/godeltaprof"};
    check_capture(&c);
}

PG_TEST_MAIN(PG_CASE(test_go_sdk_cpu), PG_CASE(test_go_sdk_heap))
