/* SPDX-License-Identifier: Apache-2.0
 * Reading OTLP/JSON (otlp_json.h), driven by the protobuf-c descriptors so
 * every message of the schema is covered by one reader: json-c parses the
 * text into its own (malloc'd) tree, which is turned into protobuf-c structs
 * in the arena and freed before returning. Field names: lowerCamelCase derived
 * from the proto names, or the proto names themselves. The writer is
 * otlp_json_encode.c. */
#include "otlp/otlp_json.h"
#include "core/json_strict.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/base64.h"
#include "otlp/otlp_json_internal.h"

/* Message nesting (the same bound as the protobuf wire walk of otlp_decode.c). json-c's own
 * depth counts objects and arrays: an AnyValue level is three of them. */
#define JSON_MAX_DEPTH      64
#define JSON_TOKENER_DEPTH  (3 * JSON_MAX_DEPTH + 8)

/* ---- decoding ---------------------------------------------------------------- */

struct jdec {
    struct pg_arena *a;
    struct pg_status *st;
    struct {
        const char *name;
        size_t idx;
    } path[JSON_MAX_DEPTH + 2];
    unsigned depth;
};

static const char *jd_path(const struct jdec *d, char *buf, size_t n)
{
    size_t off = 0;

    buf[0] = '\0';
    for (unsigned i = 0; i < d->depth && off + 1 < n; i++) {
        int k = d->path[i].idx == SIZE_MAX
                    ? snprintf(buf + off, n - off, "%s%s", i ? "." : "", d->path[i].name)
                    : snprintf(buf + off, n - off, "%s%s[%zu]", i ? "." : "", d->path[i].name,
                               d->path[i].idx);
        off += k > 0 ? (size_t)k : 0;
    }
    return d->depth ? buf : "(top)";
}

static const char *jtype_name(const struct json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null:
        return "null";
    case json_type_boolean:
        return "a boolean";
    case json_type_double:
    case json_type_int:
        return "a number";
    case json_type_object:
        return "an object";
    case json_type_array:
        return "an array";
    case json_type_string:
        return "a string";
    }
    return "?";
}

static enum pg_err jd_fail(const struct jdec *d, const char *what, const struct json_object *v)
{
    char p[200];
    return pg_status_set(d->st, PG_ERR_MALFORMED, "otlp/json: %s: %s%s%s",
                         jd_path(d, p, sizeof(p)), what, v != NULL ? ", got " : "",
                         v != NULL ? jtype_name(v) : "");
}

/* @key is the proto name or its lowerCamelCase form (trace_id / traceId). */
static bool name_matches(const char *key, const char *snake)
{
    const char *k = key;

    if (strcmp(key, snake) == 0) {
        return true;
    }
    for (const char *s = snake; *s != '\0'; s++) {
        char c = *s;
        if (c == '_' && s[1] != '\0') {
            c = (char)toupper((unsigned char)*++s);
        }
        if (*k++ != c) {
            return false;
        }
    }
    return *k == '\0';
}

/* A whole decimal integer in @s (optional '-'), as protobuf's JSON mapping allows for
 * 64-bit values in quotes. */
static bool parse_i64_str(const char *s, size_t n, int64_t *out)
{
    char buf[32], *end;
    long long v;

    if (n == 0 || n >= sizeof(buf)) {
        return false;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (!(isdigit((unsigned char)buf[0]) || (buf[0] == '-' && isdigit((unsigned char)buf[1])))) {
        return false;
    }
    errno = 0;
    v = strtoll(buf, &end, 10);
    if (errno != 0 || *end != '\0') {
        return false;
    }
    *out = v;
    return true;
}

static bool parse_u64_str(const char *s, size_t n, uint64_t *out)
{
    char buf[32], *end;
    unsigned long long v;

    if (n == 0 || n >= sizeof(buf) || !isdigit((unsigned char)s[0])) {
        return false;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    v = strtoull(buf, &end, 10);
    if (errno != 0 || *end != '\0') {
        return false;
    }
    *out = v;
    return true;
}

/* A JSON number or decimal string as a signed (@is_signed) integer within [lo, hi]. The
 * value is returned as int64 (signed) or in *@u (unsigned). */
static enum pg_err jd_int(const struct jdec *d, struct json_object *v, bool is_signed,
                          int64_t lo, uint64_t hi, int64_t *s_out, uint64_t *u_out)
{
    int64_t s = 0;
    uint64_t u = 0;
    bool neg = false;

    switch (json_object_get_type(v)) {
    case json_type_int:
        s = json_object_get_int64(v);
        if (s == INT64_MAX) {
            u = json_object_get_uint64(v); /* json-c keeps values past INT64_MAX unsigned */
        } else if (s < 0) {
            neg = true;
        } else {
            u = (uint64_t)s;
        }
        break;
    case json_type_double: {
        double x = json_object_get_double(v);
        if (!(x == floor(x)) || x < -9.2233720368547758e18 || x >= 1.8446744073709552e19) {
            return jd_fail(d, "expected an integer", v);
        }
        if (x < 0) {
            neg = true;
            s = (int64_t)x;
        } else {
            u = (uint64_t)x;
            s = x < 9.2233720368547758e18 ? (int64_t)x : INT64_MAX;
        }
        break;
    }
    case json_type_string: {
        const char *str = json_object_get_string(v);
        size_t n = (size_t)json_object_get_string_len(v);
        if (n > 0 && str[0] == '-') {
            if (!parse_i64_str(str, n, &s)) {
                return jd_fail(d, "expected a decimal integer in the string", NULL);
            }
            neg = s < 0;
            u = neg ? 0 : (uint64_t)s;
        } else {
            if (!parse_u64_str(str, n, &u)) {
                return jd_fail(d, "expected a decimal integer in the string", NULL);
            }
            s = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
        }
        break;
    }
    default:
        return jd_fail(d, "expected an integer", v);
    }
    if (neg ? (!is_signed || s < lo) : u > hi) {
        char p[200];
        return pg_status_set(d->st, PG_ERR_MALFORMED, "otlp/json: %s: %s%" PRIu64 " is out of range",
                             jd_path(d, p, sizeof(p)), neg ? "-" : "",
                             neg ? (uint64_t)0 - (uint64_t)s : u);
    }
    *s_out = neg ? s : (int64_t)u;
    if (u_out != NULL) {
        *u_out = u;
    }
    return PG_ERR_OK;
}

static enum pg_err jd_double(const struct jdec *d, struct json_object *v, double *out)
{
    switch (json_object_get_type(v)) {
    case json_type_int:
    case json_type_double:
        *out = json_object_get_double(v);
        return PG_ERR_OK;
    case json_type_string: {
        const char *s = json_object_get_string(v);
        char *end;
        if (strcmp(s, "NaN") == 0) {
            *out = NAN;
        } else if (strcmp(s, "Infinity") == 0) {
            *out = INFINITY;
        } else if (strcmp(s, "-Infinity") == 0) {
            *out = -INFINITY;
        } else {
            errno = 0;
            *out = strtod(s, &end);
            if (s[0] == '\0' || *end != '\0' || errno == ERANGE || isspace((unsigned char)s[0])) {
                return jd_fail(d, "expected a number in the string", NULL);
            }
        }
        return PG_ERR_OK;
    }
    default:
        return jd_fail(d, "expected a number", v);
    }
}

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static enum pg_err jd_bytes(const struct jdec *d, const ProtobufCFieldDescriptor *fd,
                            struct json_object *v, ProtobufCBinaryData *out)
{
    const char *s;
    size_t n;

    if (!json_object_is_type(v, json_type_string)) {
        return jd_fail(d, pg_json_hex_field(fd) ? "expected a hex string" : "expected a base64 string",
                       v);
    }
    s = json_object_get_string(v);
    n = (size_t)json_object_get_string_len(v);
    out->len = 0;
    out->data = NULL;
    if (n == 0) {
        return PG_ERR_OK;
    }
    if (pg_json_hex_field(fd)) {
        if (n % 2 != 0) {
            return jd_fail(d, "hex id of odd length", NULL);
        }
        out->data = pg_arena_alloc(d->a, n / 2);
        if (out->data == NULL) {
            return pg_status_set(d->st, PG_ERR_NOMEM, "otlp/json: no memory");
        }
        for (size_t i = 0; i < n / 2; i++) {
            int hi = hexval((unsigned char)s[2 * i]), lo = hexval((unsigned char)s[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                return jd_fail(d, "not a hex string", NULL);
            }
            out->data[i] = (uint8_t)(hi << 4 | lo);
        }
        out->len = n / 2;
        return PG_ERR_OK;
    }
    {
        size_t cap = pg_base64_decoded_max(n);
        long k;
        out->data = pg_arena_alloc(d->a, cap);
        if (out->data == NULL) {
            return pg_status_set(d->st, PG_ERR_NOMEM, "otlp/json: no memory");
        }
        /* Standard or URL-safe alphabet, padding optional: what protobuf's JSON parsers
         * accept. */
        k = pg_base64_decode(s, n, PG_BASE64_LENIENT, out->data, cap);
        if (k < 0) {
            return jd_fail(d, "not a base64 string", NULL);
        }
        out->len = (size_t)k;
    }
    return PG_ERR_OK;
}

/* A string into the arena. A NUL inside (from \u0000) becomes 0xFF, never UTF-8, so
 * pg_otlp_validate repairs and counts it like the protobuf path does. */
static enum pg_err jd_string(const struct jdec *d, struct json_object *v, char **out)
{
    const char *s;
    size_t n;
    char *c;

    if (!json_object_is_type(v, json_type_string)) {
        return jd_fail(d, "expected a string", v);
    }
    s = json_object_get_string(v);
    n = (size_t)json_object_get_string_len(v);
    c = pg_arena_alloc(d->a, n + 1);
    if (c == NULL) {
        return pg_status_set(d->st, PG_ERR_NOMEM, "otlp/json: no memory");
    }
    memcpy(c, s, n);
    c[n] = '\0';
    for (char *z = memchr(c, 0, n); z != NULL; z = memchr(z + 1, 0, (size_t)(c + n - z - 1))) {
        *z = (char)0xff;
    }
    *out = c;
    return PG_ERR_OK;
}

static enum pg_err jd_message(struct jdec *d, const ProtobufCMessageDescriptor *desc,
                              struct json_object *obj, ProtobufCMessage **out);

/* One value of field @fd into @dst (an element of a repeated field or the member). */
static enum pg_err jd_value(struct jdec *d, const ProtobufCFieldDescriptor *fd,
                            struct json_object *v, void *dst)
{
    int64_t s;
    uint64_t u;
    enum pg_err err = PG_ERR_OK;

    switch (fd->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if ((err = jd_int(d, v, true, INT32_MIN, INT32_MAX, &s, NULL)) == PG_ERR_OK) {
            *(int32_t *)dst = (int32_t)s;
        }
        return err;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if ((err = jd_int(d, v, false, 0, UINT32_MAX, &s, &u)) == PG_ERR_OK) {
            *(uint32_t *)dst = (uint32_t)u;
        }
        return err;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if ((err = jd_int(d, v, true, INT64_MIN, INT64_MAX, &s, NULL)) == PG_ERR_OK) {
            *(int64_t *)dst = s;
        }
        return err;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if ((err = jd_int(d, v, false, 0, UINT64_MAX, &s, &u)) == PG_ERR_OK) {
            *(uint64_t *)dst = u;
        }
        return err;
    case PROTOBUF_C_TYPE_FLOAT: {
        double x;
        if ((err = jd_double(d, v, &x)) == PG_ERR_OK) {
            *(float *)dst = (float)x;
        }
        return err;
    }
    case PROTOBUF_C_TYPE_DOUBLE:
        return jd_double(d, v, (double *)dst);
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_object_is_type(v, json_type_boolean)) {
            return jd_fail(d, "expected true or false", v);
        }
        *(protobuf_c_boolean *)dst = json_object_get_boolean(v) ? 1 : 0;
        return PG_ERR_OK;
    case PROTOBUF_C_TYPE_ENUM:
        if (json_object_is_type(v, json_type_string)) {
            const ProtobufCEnumValue *ev =
                protobuf_c_enum_descriptor_get_value_by_name(fd->descriptor,
                                                             json_object_get_string(v));
            if (ev == NULL) {
                return jd_fail(d, "unknown enum name", NULL);
            }
            *(int *)dst = ev->value;
            return PG_ERR_OK;
        }
        if ((err = jd_int(d, v, true, INT32_MIN, INT32_MAX, &s, NULL)) == PG_ERR_OK) {
            *(int *)dst = (int)s;
        }
        return err;
    case PROTOBUF_C_TYPE_STRING:
        return jd_string(d, v, (char **)dst);
    case PROTOBUF_C_TYPE_BYTES:
        return jd_bytes(d, fd, v, (ProtobufCBinaryData *)dst);
    case PROTOBUF_C_TYPE_MESSAGE:
        return jd_message(d, fd->descriptor, v, (ProtobufCMessage **)dst);
    }
    return jd_fail(d, "field of an unknown type", NULL);
}

static enum pg_err jd_field(struct jdec *d, ProtobufCMessage *m,
                            const ProtobufCFieldDescriptor *fd, struct json_object *v)
{
    char *base = (char *)m;
    void *member = base + fd->offset;

    if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
        size_t n, es = pg_json_elem_size(fd->type);
        char *arr;
        if (!json_object_is_type(v, json_type_array)) {
            return jd_fail(d, "expected an array", v);
        }
        n = json_object_array_length(v);
        arr = n != 0 ? pg_arena_calloc(d->a, n, es) : NULL;
        if (n != 0 && arr == NULL) {
            return pg_status_set(d->st, pg_arena_hit_cap(d->a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                                 "otlp/json: no memory for %zu %s", n, fd->name);
        }
        for (size_t i = 0; i < n; i++) {
            struct json_object *e = json_object_array_get_idx(v, i);
            enum pg_err err;
            d->path[d->depth - 1].idx = i;
            if (e == NULL) {
                if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
                    return jd_fail(d, "null in a list of messages", NULL);
                }
                continue; /* zero value */
            }
            err = jd_value(d, fd, e, arr + i * es);
            if (err != PG_ERR_OK) {
                return err;
            }
        }
        d->path[d->depth - 1].idx = SIZE_MAX;
        *(size_t *)(void *)(base + fd->quantifier_offset) = n;
        *(void **)member = arr;
        return PG_ERR_OK;
    }
    if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        uint32_t *qcase = (uint32_t *)(void *)(base + fd->quantifier_offset);
        if (*qcase != 0 && *qcase != fd->id) {
            return jd_fail(d, "a second member of the same oneof", NULL);
        }
        *qcase = fd->id;
    }
    return jd_value(d, fd, v, member);
}

static enum pg_err jd_message(struct jdec *d, const ProtobufCMessageDescriptor *desc,
                              struct json_object *obj, ProtobufCMessage **out)
{
    ProtobufCMessage *m;

    if (!json_object_is_type(obj, json_type_object)) {
        return jd_fail(d, "expected an object", obj);
    }
    if (d->depth >= JSON_MAX_DEPTH) {
        return jd_fail(d, "messages nested deeper than 64", NULL);
    }
    m = pg_arena_alloc(d->a, desc->sizeof_message);
    if (m == NULL) {
        return pg_status_set(d->st, pg_arena_hit_cap(d->a) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "otlp/json: no memory for a %s", desc->short_name);
    }
    desc->message_init(m);
    json_object_object_foreach(obj, key, val)
    {
        const ProtobufCFieldDescriptor *fd = NULL;
        enum pg_err err;
        for (unsigned i = 0; i < desc->n_fields; i++) {
            if (name_matches(key, desc->fields[i].name)) {
                fd = &desc->fields[i];
                break;
            }
        }
        if (fd == NULL || val == NULL) {
            continue; /* unknown fields are ignored; null is the default value */
        }
        d->path[d->depth].name = key;
        d->path[d->depth].idx = SIZE_MAX;
        d->depth++;
        err = jd_field(d, m, fd, val);
        d->depth--;
        if (err != PG_ERR_OK) {
            return err;
        }
    }
    *out = m;
    return PG_ERR_OK;
}

enum pg_err pg_otlp_json_decode(struct pg_arena *arena, const ProtobufCMessageDescriptor *desc,
                                const char *json, size_t len, ProtobufCMessage **out,
                                struct pg_status *st)
{
    struct json_object *root;
    struct jdec d;
    enum pg_err err;

    *out = NULL;
    err = pg_json_parse_strict(arena, json, len, "otlp/json", JSON_TOKENER_DEPTH, 0, &root, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    memset(&d, 0, sizeof(d));
    d.a = arena;
    d.st = st;
    err = jd_message(&d, desc, root, out);
    json_object_put(root);
    if (err != PG_ERR_OK) {
        *out = NULL;
    }
    return err;
}

