/* SPDX-License-Identifier: Apache-2.0
 * OTLP/JSON (otlp_json.h), driven by the protobuf-c descriptors so every
 * message of the schema is covered by one reader and one writer. Reading:
 * json-c parses the text into its own (malloc'd) tree, which is turned into
 * protobuf-c structs in the arena and freed before returning. Writing: a
 * growing buffer in the arena, no tree. Field names: lowerCamelCase derived
 * from the proto names (snake_case accepted too). */
#include "otlp/otlp_json.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/base64.h"

/* Message nesting (the same bound as the protobuf wire walk of otlp_decode.c). json-c's own
 * depth counts objects and arrays: an AnyValue level is three of them. */
#define JSON_MAX_DEPTH      64
#define JSON_TOKENER_DEPTH  (3 * JSON_MAX_DEPTH + 8)

/* Byte fields written as hex (OTLP/JSON), all others base64. */
static bool hex_field(const ProtobufCFieldDescriptor *fd)
{
    return strcmp(fd->name, "trace_id") == 0 || strcmp(fd->name, "span_id") == 0 ||
           strcmp(fd->name, "profile_id") == 0;
}

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
        return jd_fail(d, hex_field(fd) ? "expected a hex string" : "expected a base64 string",
                       v);
    }
    s = json_object_get_string(v);
    n = (size_t)json_object_get_string_len(v);
    out->len = 0;
    out->data = NULL;
    if (n == 0) {
        return PG_ERR_OK;
    }
    if (hex_field(fd)) {
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

static size_t elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    default:
        return 4; /* int32, uint32, fixed32, float, enum */
    }
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
        size_t n, es = elem_size(fd->type);
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

/* json-c's tree lives on the heap, outside the arena, and is much larger than the text: an
 * object costs about 900 bytes (its hash table), an array about 100, every further element
 * about 60 (measured with json-c 0.16: 16 MB of OTLP/JSON took 285 MB, 11 MB of integer
 * lists 423 MB). This bound, from one pass over the structural characters, is held against
 * the arena's cap before parsing, so a JSON request cannot use more memory than a protobuf
 * one is allowed to. */
static size_t json_tree_cost(const char *s, size_t n)
{
    size_t objects = 0, arrays = 0, commas = 0;
    bool in_str = false;

    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_str = false;
            }
            continue;
        }
        objects += c == '{';
        arrays += c == '[';
        commas += c == ',';
        in_str = c == '"';
    }
    return objects * 1024 + arrays * 128 + (commas + 1) * 64 + n;
}

enum pg_err pg_otlp_json_decode(struct pg_arena *arena, const ProtobufCMessageDescriptor *desc,
                                const char *json, size_t len, ProtobufCMessage **out,
                                struct pg_status *st)
{
    struct json_tokener *tok;
    struct json_object *root;
    struct jdec d;
    enum pg_err err;

    *out = NULL;
    if (len > INT32_MAX) {
        return pg_status_set(st, PG_ERR_LIMIT, "otlp/json: a %zu-byte document is too large",
                             len);
    }
    if (pg_arena_cap(arena) != 0) {
        size_t cost = json_tree_cost(json, len), used = pg_arena_used(arena);
        size_t room = pg_arena_cap(arena) > used ? pg_arena_cap(arena) - used : 0;
        if (cost > room) {
            return pg_status_set(st, PG_ERR_LIMIT,
                                 "otlp/json: parsing the %zu-byte document would take about "
                                 "%zu MiB, over the %zu MiB left of the request's memory cap",
                                 len, cost >> 20, room >> 20);
        }
    }
    tok = json_tokener_new_ex(JSON_TOKENER_DEPTH);
    if (tok == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "otlp/json: no memory for the parser");
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    root = json_tokener_parse_ex(tok, json, (int)len);
    if (root == NULL && json_tokener_get_error(tok) == json_tokener_continue) {
        /* A NUL byte tells json-c the input is complete: a top-level literal or number at
         * the very end is finished, anything else is cut short. */
        root = json_tokener_parse_ex(tok, "", 1);
        if (root == NULL && json_tokener_get_error(tok) != json_tokener_success) {
            json_tokener_free(tok);
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "otlp/json: the document ends early (%zu bytes)", len);
        }
    }
    if (root != NULL) {
        /* Whitespace after the document (a trailing newline) is fine, anything else not. */
        size_t end = json_tokener_get_parse_end(tok);
        while (end < len && (json[end] == ' ' || json[end] == '\n' || json[end] == '\r' ||
                             json[end] == '\t')) {
            end++;
        }
        if (end != len) {
            json_object_put(root);
            json_tokener_free(tok);
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "otlp/json: bytes after the document at offset %zu", end);
        }
    }
    if (root == NULL) {
        enum json_tokener_error je = json_tokener_get_error(tok);
        size_t at = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (je == json_tokener_success) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "otlp/json: the document is null, not an object");
        }
        if (je == json_tokener_continue) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "otlp/json: the document ends early (%zu bytes)", at);
        }
        if (je == json_tokener_error_depth) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "otlp/json: nested deeper than %d objects/arrays",
                                 JSON_TOKENER_DEPTH);
        }
        return pg_status_set(st, PG_ERR_MALFORMED, "otlp/json: %s at offset %zu",
                             json_tokener_error_desc(je), at);
    }
    json_tokener_free(tok);
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

/* ---- encoding ------------------------------------------------------------------ */

struct jbuf {
    struct pg_arena *a;
    char *p;
    size_t len, cap;
    bool oom;
};

static bool jb_room(struct jbuf *b, size_t n)
{
    char *np;
    size_t cap;

    if (b->oom) {
        return false;
    }
    if (b->len + n + 1 <= b->cap) {
        return true;
    }
    cap = b->cap < 256 ? 256 : b->cap;
    while (cap < b->len + n + 1) {
        cap *= 2;
    }
    np = pg_arena_realloc(b->a, b->p, b->cap, cap);
    if (np == NULL) {
        b->oom = true;
        return false;
    }
    b->p = np;
    b->cap = cap;
    return true;
}

static void jb_put(struct jbuf *b, const char *s, size_t n)
{
    if (jb_room(b, n)) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    }
}

static void jb_puts(struct jbuf *b, const char *s)
{
    jb_put(b, s, strlen(s));
}

static void jb_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jb_printf(struct jbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!jb_room(b, 40)) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < b->cap - b->len) {
        b->len += (size_t)n;
    } else {
        b->oom = true;
    }
}

static void jb_string(struct jbuf *b, const char *s, size_t n)
{
    static const char hexd[] = "0123456789abcdef";
    size_t run = 0;

    jb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        jb_put(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"':
            jb_put(b, "\\\"", 2);
            break;
        case '\\':
            jb_put(b, "\\\\", 2);
            break;
        case '\n':
            jb_put(b, "\\n", 2);
            break;
        case '\r':
            jb_put(b, "\\r", 2);
            break;
        case '\t':
            jb_put(b, "\\t", 2);
            break;
        default: {
            char e[6] = {'\\', 'u', '0', '0', hexd[c >> 4], hexd[c & 15]};
            jb_put(b, e, 6);
        }
        }
    }
    jb_put(b, s + run, n - run);
    jb_put(b, "\"", 1);
}

/* The lowerCamelCase JSON name of a proto field, quoted, with the colon. */
static void jb_name(struct jbuf *b, const char *snake)
{
    jb_put(b, "\"", 1);
    for (const char *s = snake; *s != '\0'; s++) {
        char c = *s;
        if (c == '_' && s[1] != '\0') {
            c = (char)toupper((unsigned char)*++s);
        }
        jb_put(b, &c, 1);
    }
    jb_put(b, "\":", 2);
}

static void jb_double(struct jbuf *b, double x, int digits)
{
    if (isnan(x)) {
        jb_puts(b, "\"NaN\"");
    } else if (isinf(x)) {
        jb_puts(b, x > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    } else if (x == 0 && signbit(x)) {
        jb_puts(b, "-0.0"); /* "-0" would read back as the integer 0 */
    } else {
        jb_printf(b, "%.*g", digits, x);
    }
}

static void je_message(struct jbuf *b, const ProtobufCMessage *m);

static void je_value(struct jbuf *b, const ProtobufCFieldDescriptor *fd, const void *p)
{
    static const char hexd[] = "0123456789abcdef";

    switch (fd->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        jb_printf(b, "%" PRId32, *(const int32_t *)p);
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        jb_printf(b, "%" PRIu32, *(const uint32_t *)p);
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        jb_printf(b, "\"%" PRId64 "\"", *(const int64_t *)p);
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        jb_printf(b, "\"%" PRIu64 "\"", *(const uint64_t *)p);
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        jb_double(b, *(const float *)p, 9);
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        jb_double(b, *(const double *)p, 17);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        jb_puts(b, *(const protobuf_c_boolean *)p ? "true" : "false");
        break;
    case PROTOBUF_C_TYPE_ENUM:
        jb_printf(b, "%d", *(const int *)p);
        break;
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        jb_string(b, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *bd = p;
        if (hex_field(fd)) {
            if (!jb_room(b, 2 * bd->len + 2)) {
                return;
            }
            b->p[b->len++] = '"';
            for (size_t i = 0; i < bd->len; i++) {
                b->p[b->len++] = hexd[bd->data[i] >> 4];
                b->p[b->len++] = hexd[bd->data[i] & 15];
            }
            b->p[b->len++] = '"';
        } else {
            size_t n = pg_base64_encoded_len(bd->len);
            long k;
            if (!jb_room(b, n + 3)) {
                return;
            }
            b->p[b->len++] = '"';
            k = pg_base64_encode(bd->data, bd->len, b->p + b->len, b->cap - b->len);
            if (k < 0) {
                b->oom = true;
                return;
            }
            b->len += (size_t)k;
            b->p[b->len++] = '"';
        }
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
        if (sub == NULL) {
            jb_puts(b, "{}");
        } else {
            je_message(b, sub);
        }
        break;
    }
    }
}

/* Whether a singular, non-oneof member holds its default (then it is left out). */
static bool is_default(const ProtobufCFieldDescriptor *fd, const void *p)
{
    switch (fd->type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return *(const uint64_t *)p == 0;
    case PROTOBUF_C_TYPE_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, p, 8);
        return bits == 0; /* -0.0 is written, as protobuf's printer does */
    }
    case PROTOBUF_C_TYPE_FLOAT: {
        uint32_t bits;
        memcpy(&bits, p, 4);
        return bits == 0;
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        return s == NULL || s[0] == '\0';
    }
    case PROTOBUF_C_TYPE_BYTES:
        return ((const ProtobufCBinaryData *)p)->len == 0;
    case PROTOBUF_C_TYPE_MESSAGE:
        return *(ProtobufCMessage *const *)p == NULL;
    case PROTOBUF_C_TYPE_BOOL:
        return *(const protobuf_c_boolean *)p == 0;
    default:
        return *(const uint32_t *)p == 0;
    }
}

static void je_message(struct jbuf *b, const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *desc = m->descriptor;
    const char *base = (const char *)m;
    bool first = true;

    jb_put(b, "{", 1);
    for (unsigned i = 0; i < desc->n_fields && !b->oom; i++) {
        const ProtobufCFieldDescriptor *fd = &desc->fields[i];
        const void *member = base + fd->offset;

        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(const void *)(base + fd->quantifier_offset);
            size_t es = elem_size(fd->type);
            const char *arr = *(char *const *)member;
            if (n == 0) {
                continue;
            }
            if (!first) {
                jb_put(b, ",", 1);
            }
            first = false;
            jb_name(b, fd->name);
            jb_put(b, "[", 1);
            for (size_t j = 0; j < n; j++) {
                if (j != 0) {
                    jb_put(b, ",", 1);
                }
                je_value(b, fd, arr + j * es);
            }
            jb_put(b, "]", 1);
            continue;
        }
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            /* A set oneof member is written even when it holds its default. */
            if (*(const uint32_t *)(const void *)(base + fd->quantifier_offset) != fd->id) {
                continue;
            }
        } else if (is_default(fd, member)) {
            continue;
        }
        if (!first) {
            jb_put(b, ",", 1);
        }
        first = false;
        jb_name(b, fd->name);
        je_value(b, fd, member);
    }
    jb_put(b, "}", 1);
}

enum pg_err pg_otlp_json_encode(struct pg_arena *arena, const ProtobufCMessage *msg, char **out,
                                size_t *len, struct pg_status *st)
{
    struct jbuf b = {arena, NULL, 0, 0, false};

    *out = NULL;
    *len = 0;
    je_message(&b, msg);
    if (b.oom || !jb_room(&b, 0)) {
        return pg_status_set(st, pg_arena_hit_cap(arena) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                             "otlp/json: no memory to write the JSON document");
    }
    b.p[b.len] = '\0';
    *out = b.p;
    *len = b.len;
    return PG_ERR_OK;
}
