/* SPDX-License-Identifier: Apache-2.0
 * pyroscope/pyro_push.c: push.v1.PushRequest from protobuf (built here field by field) and
 * from proto3 JSON, table-driven: series, labels, samples, unknown fields and annotations
 * skipped, both JSON field names, base64 dialects; wrong wire types, truncation, invalid
 * UTF-8, base64 that does not decode, the caps. */
#include "pg_test.h"

#include "core/pb_wire.h"
#include "pyroscope/pyro_push.h"

/* A tiny protobuf writer over a fixed buffer. */
struct pw {
    uint8_t b[4096];
    size_t n;
};

static void pw_varint(struct pw *w, uint32_t field, uint64_t v)
{
    uint8_t *p = w->b + w->n;
    p = pg_pb_put_varint(p, pg_pb_key(field, PG_PB_VARINT));
    p = pg_pb_put_varint(p, v);
    w->n = (size_t)(p - w->b);
}

static void pw_bytes(struct pw *w, uint32_t field, const void *s, size_t n)
{
    uint8_t *p = w->b + w->n;
    p = pg_pb_put_varint(p, pg_pb_key(field, PG_PB_LEN));
    p = pg_pb_put_varint(p, n);
    memcpy(p, s, n);
    w->n = (size_t)(p - w->b) + n;
}

static void pw_str(struct pw *w, uint32_t field, const char *s)
{
    pw_bytes(w, field, s, strlen(s));
}

static void pw_msg(struct pw *w, uint32_t field, const struct pw *m)
{
    pw_bytes(w, field, m->b, m->n);
}

static void label(struct pw *series, const char *name, const char *value)
{
    struct pw l = {.n = 0};
    pw_str(&l, 1, name);
    pw_str(&l, 2, value);
    pw_msg(series, 1, &l);
}

static void sample(struct pw *series, const void *raw, size_t n, const char *id)
{
    struct pw s = {.n = 0};
    pw_bytes(&s, 1, raw, n);
    if (id != NULL) {
        pw_str(&s, 2, id);
    }
    pw_msg(series, 2, &s);
}

/* The decoded request as "{k=v,...}[id:len:first bytes]...;" per series. */
static void render(const struct pg_pyro_push *p, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < p->n_series; i++) {
        const struct pg_pyro_series *s = &p->series[i];
        size_t o = strlen(out);
        snprintf(out + o, cap - o, "{");
        for (size_t j = 0; j < s->n_labels; j++) {
            o = strlen(out);
            snprintf(out + o, cap - o, "%s%s=%s", j ? "," : "", s->labels[j].name,
                     s->labels[j].value);
        }
        o = strlen(out);
        snprintf(out + o, cap - o, "}");
        for (size_t k = 0; k < s->n_samples; k++) {
            o = strlen(out);
            snprintf(out + o, cap - o, "[%s:%zu:%.*s]", s->samples[k].id, s->samples[k].len,
                     (int)s->samples[k].len, (const char *)s->samples[k].raw_profile);
        }
        o = strlen(out);
        snprintf(out + o, cap - o, ";");
    }
}

PG_TEST(test_proto_good)
{
    struct pw req = {.n = 0}, s1 = {.n = 0}, s2 = {.n = 0}, ann = {.n = 0};
    label(&s1, "__name__", "process_cpu");
    label(&s1, "service_name", "checkout");
    sample(&s1, "PPROF1", 6, "734FD599");
    pw_str(&ann, 1, "key");
    pw_msg(&s1, 3, &ann);            /* annotations: dropped */
    pw_varint(&s1, 9, 42);           /* an unknown field */
    sample(&s1, "P2", 2, NULL);
    sample(&s2, "", 0, "");
    pw_msg(&req, 1, &s1);
    pw_varint(&req, 7, 1);           /* unknown at the top */
    pw_msg(&req, 1, &s2);

    struct pg_arena *a = pg_arena_create(1 << 20);
    struct pg_pyro_push p;
    struct pg_status st = {0};
    char got[512];
    PG_REQUIRE(pg_pyro_push_decode_proto(a, req.b, req.n, &p, &st) == PG_ERR_OK);
    render(&p, got, sizeof(got));
    CHECK_STR(got, "{__name__=process_cpu,service_name=checkout}[734FD599:6:PPROF1][:2:P2];{}[:0:];");
    /* zero copy */
    CHECK(p.series[0].samples[0].raw_profile > req.b &&
          p.series[0].samples[0].raw_profile < req.b + req.n);
    /* An empty body is an empty request. */
    CHECK_INT(pg_pyro_push_decode_proto(a, req.b, 0, &p, &st), PG_ERR_OK);
    CHECK_INT(p.n_series, 0);
    pg_arena_destroy(a);
}

PG_TEST(test_proto_bad)
{
    struct pw good = {.n = 0}, s = {.n = 0};
    label(&s, "k", "v");
    sample(&s, "PP", 2, "id");
    pw_msg(&good, 1, &s);

    struct {
        const char *what;
        struct pw body;
        enum pg_err code;
        const char *msg;
    } cases[8];
    size_t n = 0;
    /* truncated in the middle */
    cases[n].what = "truncated";
    cases[n].body = good;
    cases[n].body.n -= 3;
    cases[n].code = PG_ERR_MALFORMED;
    cases[n++].msg = "truncated or malformed";
    /* series as a varint */
    cases[n].what = "series wire type";
    cases[n].body.n = 0;
    pw_varint(&cases[n].body, 1, 5);
    cases[n].code = PG_ERR_MALFORMED;
    cases[n++].msg = "PushRequest.series has wire type 0, want 2";
    /* labels as a varint */
    {
        struct pw bad = {.n = 0};
        pw_varint(&bad, 1, 5);
        cases[n].what = "labels wire type";
        cases[n].body.n = 0;
        pw_msg(&cases[n].body, 1, &bad);
        cases[n].code = PG_ERR_MALFORMED;
        cases[n++].msg = "series[0].labels has wire type 0";
    }
    /* raw_profile as a varint */
    {
        struct pw smp = {.n = 0}, ser = {.n = 0};
        pw_varint(&smp, 1, 5);
        pw_msg(&ser, 2, &smp);
        cases[n].what = "raw_profile wire type";
        cases[n].body.n = 0;
        pw_msg(&cases[n].body, 1, &ser);
        cases[n].code = PG_ERR_MALFORMED;
        cases[n++].msg = "series[0].samples[0].raw_profile has wire type 0";
    }
    /* invalid UTF-8 in a label value */
    {
        struct pw ser = {.n = 0};
        label(&ser, "k", "\xc3(");
        cases[n].what = "utf-8";
        cases[n].body.n = 0;
        pw_msg(&cases[n].body, 1, &ser);
        cases[n].code = PG_ERR_MALFORMED;
        cases[n++].msg = "series[0]: a label value is not valid UTF-8";
    }
    /* a group (wire type 3) is not skipped */
    cases[n].what = "group";
    cases[n].body.n = 0;
    cases[n].body.b[cases[n].body.n++] = (uint8_t)pg_pb_key(5, PG_PB_SGROUP);
    cases[n].code = PG_ERR_MALFORMED;
    cases[n++].msg = "malformed at offset";
    /* a length past the end */
    cases[n].what = "length past end";
    cases[n].body.n = 0;
    cases[n].body.b[cases[n].body.n++] = (uint8_t)pg_pb_key(1, PG_PB_LEN);
    cases[n].body.b[cases[n].body.n++] = 100;
    cases[n].code = PG_ERR_MALFORMED;
    cases[n++].msg = "truncated or malformed at offset 0";
    for (size_t i = 0; i < n; i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_pyro_push p;
        struct pg_status st = {0};
        enum pg_err err = pg_pyro_push_decode_proto(a, cases[i].body.b, cases[i].body.n, &p, &st);
        if (err != cases[i].code || strstr(st.msg, cases[i].msg) == NULL) {
            fprintf(stderr, "  %s: %d \"%s\"\n", cases[i].what, err, st.msg);
        }
        CHECK_INT(err, cases[i].code);
        CHECK(strstr(st.msg, cases[i].msg) != NULL);
        pg_arena_destroy(a);
    }
}

PG_TEST(test_proto_caps)
{
    size_t cap = 1 << 20;
    uint8_t *buf = malloc(cap);
    struct pg_arena *a = pg_arena_create(64 << 20);
    struct pg_pyro_push p;
    struct pg_status st = {0};
    struct pw ser = {.n = 0};
    size_t n = 0;

    /* PG_PYRO_MAX_SERIES empty series pass, one more is LIMIT. */
    for (int i = 0; i <= PG_PYRO_MAX_SERIES; i++) {
        buf[n++] = (uint8_t)pg_pb_key(1, PG_PB_LEN);
        buf[n++] = 0;
        if (i == PG_PYRO_MAX_SERIES - 1) {
            CHECK_INT(pg_pyro_push_decode_proto(a, buf, n, &p, &st), PG_ERR_OK);
            CHECK_INT(p.n_series, PG_PYRO_MAX_SERIES);
        }
    }
    CHECK_INT(pg_pyro_push_decode_proto(a, buf, n, &p, &st), PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "more than 4096 series") != NULL);
    /* 129 labels in one series. */
    for (int i = 0; i <= PG_PYRO_MAX_LABELS; i++) {
        label(&ser, "k", "v");
    }
    n = 0;
    buf[n++] = (uint8_t)pg_pb_key(1, PG_PB_LEN);
    n = (size_t)(pg_pb_put_varint(buf + n, ser.n) - buf);
    memcpy(buf + n, ser.b, ser.n);
    n += ser.n;
    CHECK_INT(pg_pyro_push_decode_proto(a, buf, n, &p, &st), PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "129 labels, over the cap of 128") != NULL);
    /* 4096 samples over two series pass, 4097 are LIMIT. */
    for (int extra = 0; extra < 2; extra++) {
        n = 0;
        for (int k2 = 0; k2 < 2; k2++) {
            size_t count = k2 == 0 ? 4000 : (size_t)(96 + extra), body = count * 2;
            buf[n++] = (uint8_t)pg_pb_key(1, PG_PB_LEN);
            n = (size_t)(pg_pb_put_varint(buf + n, body) - buf);
            for (size_t k = 0; k < count; k++) {
                buf[n++] = (uint8_t)pg_pb_key(2, PG_PB_LEN);
                buf[n++] = 0;
            }
        }
        if (extra == 0) {
            CHECK_INT(pg_pyro_push_decode_proto(a, buf, n, &p, &st), PG_ERR_OK);
            CHECK_INT(p.series[0].n_samples + p.series[1].n_samples, PG_PYRO_MAX_SAMPLES);
        } else {
            CHECK_INT(pg_pyro_push_decode_proto(a, buf, n, &p, &st), PG_ERR_LIMIT);
            CHECK(strstr(st.msg, "more than 4096 samples") != NULL);
        }
    }
    free(buf);
    pg_arena_destroy(a);
}

PG_TEST(test_json_good)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"series\":[{\"labels\":[{\"name\":\"__name__\",\"value\":\"memory\"},"
         "{\"name\":\"service_name\",\"value\":\"svc\"}],"
         "\"samples\":[{\"rawProfile\":\"UFBST0Yx\",\"ID\":\"734FD599\"}]}]}",
         "{__name__=memory,service_name=svc}[734FD599:6:PPROF1];"},
        /* proto field name, URL-safe alphabet without padding, unknown keys, nulls */
        {"{\"series\":[{\"labels\":null,\"annotations\":[{\"key\":\"a\"}],"
         "\"samples\":[{\"raw_profile\":\"-_-_\"},{\"rawProfile\":\"aGk\",\"ID\":null}]}],"
         "\"future\":1}",
         "{}[:3:\xfb\xff\xbf][:2:hi];"},
        {"{}", ""},
        {"{\"series\":[]}", ""},
        {"{\"series\":[{}]}", "{};"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_pyro_push p;
        struct pg_status st = {0};
        char got[512];
        enum pg_err err = pg_pyro_push_decode_json(a, cases[i].json, strlen(cases[i].json), &p,
                                                   &st);
        if (err != PG_ERR_OK) {
            fprintf(stderr, "  %s: %s\n", cases[i].json, st.msg);
        }
        CHECK_INT(err, PG_ERR_OK);
        if (err == PG_ERR_OK) {
            render(&p, got, sizeof(got));
            CHECK_STR(got, cases[i].want);
        }
        pg_arena_destroy(a);
    }
}

PG_TEST(test_json_bad)
{
    static const struct {
        const char *json;
        enum pg_err code;
        const char *msg;
    } cases[] = {
        {"{\"series\":[{\"samples\":[{\"rawProfile\":\"UFBST0Yx\"},{\"rawProfile\":\"not base64!\"}]}]}",
         PG_ERR_MALFORMED, "series[0].samples[1].\"rawProfile\" is not base64"},
        {"{\"series\":[{},{\"samples\":[{\"rawProfile\":\"a\"}]}]}", PG_ERR_MALFORMED,
         "series[1].samples[0].\"rawProfile\" is not base64"},
        {"{\"series\":[{\"samples\":[{\"rawProfile\":5}]}]}", PG_ERR_MALFORMED,
         "must be a base64 string"},
        {"{\"series\":{}}", PG_ERR_MALFORMED, "\"series\" must be an array"},
        {"{\"series\":[5]}", PG_ERR_MALFORMED, "series[0] must be an object"},
        {"{\"series\":[{\"labels\":[{\"name\":1}]}]}", PG_ERR_MALFORMED,
         "series[0].labels[0].\"name\" must be a string"},
        {"{\"series\":[{\"labels\":[\"k\"]}]}", PG_ERR_MALFORMED,
         "series[0].labels[0]. must be an object"},
        {"{\"series\":[{\"labels\":[{\"name\":\"a\\u0000b\"}]}]}", PG_ERR_MALFORMED,
         "not valid UTF-8 or holds a NUL"},
        {"{\"series\":[{\"samples\":[{\"ID\":[]}]}]}", PG_ERR_MALFORMED, "\"ID\" must be a string"},
        {"[]", PG_ERR_MALFORMED, "must be a JSON object"},
        {"{\"series\":[", PG_ERR_MALFORMED, "ends early"},
        {"\x01", PG_ERR_MALFORMED, "offset 0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pg_arena *a = pg_arena_create(1 << 20);
        struct pg_pyro_push p;
        struct pg_status st = {0};
        enum pg_err err = pg_pyro_push_decode_json(a, cases[i].json, strlen(cases[i].json), &p,
                                                   &st);
        if (err != cases[i].code || strstr(st.msg, cases[i].msg) == NULL) {
            fprintf(stderr, "  %s: %d \"%s\"\n", cases[i].json, err, st.msg);
        }
        CHECK_INT(err, cases[i].code);
        CHECK(strstr(st.msg, cases[i].msg) != NULL);
        pg_arena_destroy(a);
    }
}

PG_TEST(test_json_caps)
{
    size_t cap = 4 << 20, len;
    char *s = malloc(cap);
    struct pg_arena *a = pg_arena_create(256 << 20);
    struct pg_pyro_push p;
    struct pg_status st = {0};

    len = (size_t)snprintf(s, cap, "{\"series\":[");
    for (int i = 0; i <= PG_PYRO_MAX_SERIES; i++) {
        len += (size_t)snprintf(s + len, cap - len, "%s{}", i ? "," : "");
    }
    len += (size_t)snprintf(s + len, cap - len, "]}");
    CHECK_INT(pg_pyro_push_decode_json(a, s, len, &p, &st), PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "more than 4096 series") != NULL);
    len = (size_t)snprintf(s, cap, "{\"series\":[{\"samples\":[");
    for (int i = 0; i <= PG_PYRO_MAX_SAMPLES; i++) {
        len += (size_t)snprintf(s + len, cap - len, "%s{}", i ? "," : "");
    }
    len += (size_t)snprintf(s + len, cap - len, "]}]}");
    CHECK_INT(pg_pyro_push_decode_json(a, s, len, &p, &st), PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "more than 4096 samples") != NULL);
    len = (size_t)snprintf(s, cap, "{\"series\":[{\"labels\":[");
    for (int i = 0; i <= PG_PYRO_MAX_LABELS; i++) {
        len += (size_t)snprintf(s + len, cap - len, "%s{\"name\":\"k\"}", i ? "," : "");
    }
    len += (size_t)snprintf(s + len, cap - len, "]}]}");
    CHECK_INT(pg_pyro_push_decode_json(a, s, len, &p, &st), PG_ERR_LIMIT);
    CHECK(strstr(st.msg, "129 labels") != NULL);
    free(s);
    pg_arena_destroy(a);
}

PG_TEST_MAIN(PG_CASE(test_proto_good), PG_CASE(test_proto_bad), PG_CASE(test_proto_caps),
             PG_CASE(test_json_good), PG_CASE(test_json_bad), PG_CASE(test_json_caps))
