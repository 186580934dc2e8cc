/* SPDX-License-Identifier: Apache-2.0
 * Decodes push.v1.PushRequest, the body of a Connect unary Push, from its protobuf wire form
 * (zero copy for the raw profiles) and from proto3 JSON (base64 profiles decoded into the
 * arena) into one shape. Field numbers from api/push/v1/push.proto and types/v1/types.proto
 * of grafana/pyroscope: PushRequest.series = 1; RawProfileSeries.labels = 1, samples = 2,
 * annotations = 3 (skipped); LabelPair.name = 1, value = 2; RawSample.raw_profile = 1, ID = 2. */
#include "pyroscope/pyro_push.h"

#include <stdio.h>
#include <string.h>

#include "core/base64.h"
#include "core/pb_wire.h"
#include "core/utf8.h"
#include "core/vec.h"
#include "pyroscope/pyro_json.h"

struct dec {
    struct pg_arena *a;
    struct pg_status *st;
    PG_VEC(struct pg_pyro_series) series;
    size_t total_samples;
};

static enum pg_err nomem(struct dec *d)
{
    if (pg_arena_hit_cap(d->a)) {
        return pg_status_set(d->st, PG_ERR_LIMIT, "push: the request's memory cap was reached");
    }
    return pg_status_set(d->st, PG_ERR_NOMEM, "push: out of memory");
}

/* A new series at the end, zeroed; NULL when over the cap (status set) or out of memory. */
static struct pg_pyro_series *new_series(struct dec *d, enum pg_err *err)
{
    if (d->series.n == PG_PYRO_MAX_SERIES) {
        *err = pg_status_set(d->st, PG_ERR_LIMIT, "push: more than %d series",
                             PG_PYRO_MAX_SERIES);
        return NULL;
    }
    if (!PG_VEC_GROW(d->a, d->series.v, d->series.cap, d->series.n, 4, PG_PYRO_MAX_SERIES)) {
        *err = nomem(d);
        return NULL;
    }
    struct pg_pyro_series *s = &d->series.v[d->series.n++];
    memset(s, 0, sizeof(*s));
    return s;
}

/* ---- protobuf ---- */

/* A string field's bytes as a NUL-terminated arena copy; MALFORMED unless valid UTF-8
 * without NUL (proto3 strings must be UTF-8). */
static enum pg_err pb_string(struct dec *d, const struct pg_pb *v, const char *field, size_t si,
                             const char **out)
{
    size_t n = (size_t)(v->end - v->p);
    if (!pg_utf8_valid((const char *)v->p, n)) {
        return pg_status_set(d->st, PG_ERR_MALFORMED,
                             "push: series[%zu]: %s is not valid UTF-8", si, field);
    }
    *out = pg_arena_strndup(d->a, (const char *)v->p, n);
    return *out != NULL ? PG_ERR_OK : nomem(d);
}

static enum pg_err pb_label(struct dec *d, struct pg_pb r, size_t si, struct pg_pyro_label *l)
{
    uint32_t field = 0, wt = 0;
    uint64_t val = 0;
    struct pg_pb v = {NULL, NULL};
    enum pg_err err;

    l->name = l->value = "";
    while (r.p < r.end) {
        if (!pg_pb_field(&r, &field, &wt, &val, &v)) {
            return pg_status_set(d->st, PG_ERR_MALFORMED,
                                 "push: series[%zu]: a label is truncated or malformed", si);
        }
        if (field != 1 && field != 2) {
            continue;
        }
        if (wt != PG_PB_LEN) {
            return pg_status_set(d->st, PG_ERR_MALFORMED,
                                 "push: series[%zu]: label %s has wire type %u, want 2", si,
                                 field == 1 ? "name" : "value", wt);
        }
        err = pb_string(d, &v, field == 1 ? "a label name" : "a label value", si,
                        field == 1 ? &l->name : &l->value);
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    return PG_ERR_OK;
}

static enum pg_err pb_sample(struct dec *d, struct pg_pb r, size_t si, size_t k,
                             struct pg_pyro_raw_sample *s)
{
    uint32_t field = 0, wt = 0;
    uint64_t val = 0;
    struct pg_pb v = {NULL, NULL};

    s->raw_profile = NULL;
    s->len = 0;
    s->id = "";
    while (r.p < r.end) {
        if (!pg_pb_field(&r, &field, &wt, &val, &v)) {
            return pg_status_set(d->st, PG_ERR_MALFORMED,
                                 "push: series[%zu].samples[%zu] is truncated or malformed", si,
                                 k);
        }
        if (field != 1 && field != 2) {
            continue;
        }
        if (wt != PG_PB_LEN) {
            return pg_status_set(d->st, PG_ERR_MALFORMED,
                                 "push: series[%zu].samples[%zu].%s has wire type %u, want 2", si,
                                 k, field == 1 ? "raw_profile" : "ID", wt);
        }
        if (field == 1) {
            s->raw_profile = v.p;
            s->len = (size_t)(v.end - v.p);
        } else {
            enum pg_err err = pb_string(d, &v, "a sample ID", si, &s->id);
            if (err != PG_ERR_OK) {
                return err;
            }
        }
    }
    return PG_ERR_OK;
}

/* Counts the LEN fields numbered @want in a message (for exact arrays). */
static bool pb_count(struct pg_pb r, uint32_t want, size_t *n)
{
    uint32_t field = 0, wt = 0;
    uint64_t val = 0;
    struct pg_pb v = {NULL, NULL};

    *n = 0;
    while (r.p < r.end) {
        if (!pg_pb_field(&r, &field, &wt, &val, &v)) {
            return false;
        }
        *n += field == want && wt == PG_PB_LEN;
    }
    return true;
}

static enum pg_err pb_series(struct dec *d, struct pg_pb r)
{
    size_t si = d->series.n, n_labels, n_samples;
    enum pg_err err = PG_ERR_OK;
    struct pg_pyro_series *s = new_series(d, &err);
    uint32_t field = 0, wt = 0;
    uint64_t val = 0;
    struct pg_pb v = {NULL, NULL};

    if (s == NULL) {
        return err;
    }
    if (!pb_count(r, 1, &n_labels) || !pb_count(r, 2, &n_samples)) {
        return pg_status_set(d->st, PG_ERR_MALFORMED, "push: series[%zu] is truncated or "
                             "malformed", si);
    }
    if (n_labels > PG_PYRO_MAX_LABELS) {
        return pg_status_set(d->st, PG_ERR_LIMIT, "push: series[%zu] has %zu labels, over the "
                             "cap of %d", si, n_labels, PG_PYRO_MAX_LABELS);
    }
    if (n_samples > PG_PYRO_MAX_SAMPLES - d->total_samples) {
        return pg_status_set(d->st, PG_ERR_LIMIT, "push: more than %d samples in one request",
                             PG_PYRO_MAX_SAMPLES);
    }
    d->total_samples += n_samples;
    s->labels = pg_arena_alloc(d->a, (n_labels ? n_labels : 1) * sizeof(*s->labels));
    s->samples = pg_arena_alloc(d->a, (n_samples ? n_samples : 1) * sizeof(*s->samples));
    if (s->labels == NULL || s->samples == NULL) {
        return nomem(d);
    }
    while (r.p < r.end && err == PG_ERR_OK) {
        if (!pg_pb_field(&r, &field, &wt, &val, &v)) { /* pb_count read it: cannot fail */
            return pg_status_set(d->st, PG_ERR_INTERNAL, "push: series[%zu] reread", si);
        }
        if (field == 1 || field == 2) {
            if (wt != PG_PB_LEN) {
                return pg_status_set(d->st, PG_ERR_MALFORMED,
                                     "push: series[%zu].%s has wire type %u, want 2", si,
                                     field == 1 ? "labels" : "samples", wt);
            }
            if (field == 1) {
                err = pb_label(d, v, si, &s->labels[s->n_labels++]);
            } else {
                err = pb_sample(d, v, si, s->n_samples, &s->samples[s->n_samples]);
                s->n_samples++;
            }
        }
    }
    return err;
}

enum pg_err pg_pyro_push_decode_proto(struct pg_arena *a, const uint8_t *buf, size_t len,
                                      struct pg_pyro_push *out, struct pg_status *st)
{
    struct dec d = {.a = a, .st = st};
    struct pg_pb r = {buf, buf + len};
    uint32_t field = 0, wt = 0;
    uint64_t val = 0;
    struct pg_pb v = {NULL, NULL};

    memset(out, 0, sizeof(*out));
    while (buf != NULL && r.p < r.end) {
        size_t at = (size_t)(r.p - buf);
        if (!pg_pb_field(&r, &field, &wt, &val, &v)) {
            return pg_status_set(st, PG_ERR_MALFORMED, "push: PushRequest is truncated or "
                                 "malformed at offset %zu", at);
        }
        if (field != 1) {
            continue;
        }
        if (wt != PG_PB_LEN) {
            return pg_status_set(st, PG_ERR_MALFORMED, "push: PushRequest.series has wire type "
                                 "%u, want 2", wt);
        }
        enum pg_err err = pb_series(&d, v);
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    out->series = d.series.v;
    out->n_series = d.series.n;
    return PG_ERR_OK;
}

/* ---- proto3 JSON ---- */

/* The member @json_name or @proto_name of @obj (protojson accepts either), or NULL. */
static struct json_object *member(struct json_object *obj, const char *json_name,
                                  const char *proto_name)
{
    struct json_object *v = NULL;
    if (json_object_object_get_ex(obj, json_name, &v) && v != NULL) {
        return v;
    }
    if (proto_name != NULL && json_object_object_get_ex(obj, proto_name, &v)) {
        return v;
    }
    return NULL;
}

/* A JSON array member (null or absent: empty), MALFORMED when it is something else. */
static enum pg_err json_array(struct dec *d, struct json_object *obj, const char *name,
                              const char *where, struct json_object **arr, size_t *n)
{
    *arr = member(obj, name, NULL);
    *n = 0;
    if (*arr == NULL) {
        return PG_ERR_OK;
    }
    if (!json_object_is_type(*arr, json_type_array)) {
        return pg_status_set(d->st, PG_ERR_MALFORMED, "push: %s\"%s\" must be an array", where,
                             name);
    }
    *n = json_object_array_length(*arr);
    return PG_ERR_OK;
}

/* A string member (null or absent: ""), as a NUL-free arena copy. */
static enum pg_err json_string(struct dec *d, struct json_object *obj, const char *name,
                               const char *proto_name, const char *where, const char **out)
{
    struct json_object *v = member(obj, name, proto_name);
    *out = "";
    if (v == NULL) {
        return PG_ERR_OK;
    }
    if (!json_object_is_type(v, json_type_string)) {
        return pg_status_set(d->st, PG_ERR_MALFORMED, "push: %s\"%s\" must be a string", where,
                             name);
    }
    size_t n = (size_t)json_object_get_string_len(v);
    if (!pg_utf8_valid(json_object_get_string(v), n)) {
        return pg_status_set(d->st, PG_ERR_MALFORMED,
                             "push: %s\"%s\" is not valid UTF-8 or holds a NUL", where, name);
    }
    *out = pg_arena_strndup(d->a, json_object_get_string(v), n);
    return *out != NULL ? PG_ERR_OK : nomem(d);
}

static enum pg_err json_sample(struct dec *d, struct json_object *o, size_t si, size_t k,
                               struct pg_pyro_raw_sample *s)
{
    char where[64];
    snprintf(where, sizeof(where), "series[%zu].samples[%zu].", si, k);
    if (!json_object_is_type(o, json_type_object)) {
        return pg_status_set(d->st, PG_ERR_MALFORMED, "push: %s must be an object", where);
    }
    enum pg_err err = json_string(d, o, "ID", NULL, where, &s->id);
    if (err != PG_ERR_OK) {
        return err;
    }
    struct json_object *v = member(o, "rawProfile", "raw_profile");
    s->raw_profile = NULL;
    s->len = 0;
    if (v == NULL) {
        return PG_ERR_OK;
    }
    if (!json_object_is_type(v, json_type_string)) {
        return pg_status_set(d->st, PG_ERR_MALFORMED, "push: %s\"rawProfile\" must be a base64 "
                             "string", where);
    }
    size_t n = (size_t)json_object_get_string_len(v), cap = pg_base64_decoded_max(n);
    uint8_t *buf = pg_arena_alloc(d->a, cap);
    if (buf == NULL) {
        return nomem(d);
    }
    long got = pg_base64_decode(json_object_get_string(v), n, PG_BASE64_LENIENT, buf, cap);
    if (got < 0) {
        return pg_status_set(d->st, PG_ERR_MALFORMED, "push: %s\"rawProfile\" is not base64 "
                             "(%zu characters)", where, n);
    }
    s->raw_profile = buf;
    s->len = (size_t)got;
    return PG_ERR_OK;
}

static enum pg_err json_series(struct dec *d, struct json_object *o)
{
    size_t si = d->series.n, n_labels, n_samples;
    char where[48];
    enum pg_err err = PG_ERR_OK;
    struct json_object *labels, *samples;

    snprintf(where, sizeof(where), "series[%zu].", si);
    if (!json_object_is_type(o, json_type_object)) {
        return pg_status_set(d->st, PG_ERR_MALFORMED, "push: series[%zu] must be an object", si);
    }
    struct pg_pyro_series *s = new_series(d, &err);
    if (s == NULL) {
        return err;
    }
    if ((err = json_array(d, o, "labels", where, &labels, &n_labels)) != PG_ERR_OK ||
        (err = json_array(d, o, "samples", where, &samples, &n_samples)) != PG_ERR_OK) {
        return err;
    }
    if (n_labels > PG_PYRO_MAX_LABELS) {
        return pg_status_set(d->st, PG_ERR_LIMIT, "push: series[%zu] has %zu labels, over the "
                             "cap of %d", si, n_labels, PG_PYRO_MAX_LABELS);
    }
    if (n_samples > PG_PYRO_MAX_SAMPLES - d->total_samples) {
        return pg_status_set(d->st, PG_ERR_LIMIT, "push: more than %d samples in one request",
                             PG_PYRO_MAX_SAMPLES);
    }
    d->total_samples += n_samples;
    s->labels = pg_arena_alloc(d->a, (n_labels ? n_labels : 1) * sizeof(*s->labels));
    s->samples = pg_arena_alloc(d->a, (n_samples ? n_samples : 1) * sizeof(*s->samples));
    if (s->labels == NULL || s->samples == NULL) {
        return nomem(d);
    }
    for (size_t i = 0; i < n_labels; i++) {
        struct json_object *l = json_object_array_get_idx(labels, i);
        char lw[64];
        snprintf(lw, sizeof(lw), "series[%zu].labels[%zu].", si, i);
        if (!json_object_is_type(l, json_type_object)) {
            return pg_status_set(d->st, PG_ERR_MALFORMED, "push: %s must be an object", lw);
        }
        struct pg_pyro_label *out = &s->labels[s->n_labels++];
        if ((err = json_string(d, l, "name", NULL, lw, &out->name)) != PG_ERR_OK ||
            (err = json_string(d, l, "value", NULL, lw, &out->value)) != PG_ERR_OK) {
            return err;
        }
    }
    for (size_t k = 0; k < n_samples; k++) {
        err = json_sample(d, json_object_array_get_idx(samples, k), si, k,
                          &s->samples[s->n_samples++]);
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    return PG_ERR_OK;
}

enum pg_err pg_pyro_push_decode_json(struct pg_arena *a, const char *buf, size_t len,
                                     struct pg_pyro_push *out, struct pg_status *st)
{
    struct dec d = {.a = a, .st = st};
    struct json_object *root, *series;
    size_t n;

    memset(out, 0, sizeof(*out));
    enum pg_err err = pg_pyro_json_parse(a, buf, len, "push", &root, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    if (!json_object_is_type(root, json_type_object)) {
        err = pg_status_set(st, PG_ERR_MALFORMED, "push: the body must be a JSON object "
                            "(PushRequest)");
    } else if ((err = json_array(&d, root, "series", "", &series, &n)) == PG_ERR_OK) {
        if (n > PG_PYRO_MAX_SERIES) {
            err = pg_status_set(st, PG_ERR_LIMIT, "push: more than %d series",
                                PG_PYRO_MAX_SERIES);
        }
        for (size_t i = 0; i < n && err == PG_ERR_OK; i++) {
            err = json_series(&d, json_object_array_get_idx(series, i));
        }
    }
    json_object_put(root);
    if (err != PG_ERR_OK) {
        return err;
    }
    out->series = d.series.v;
    out->n_series = d.series.n;
    return PG_ERR_OK;
}
