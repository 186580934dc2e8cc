/* SPDX-License-Identifier: Apache-2.0
 * Writing OTLP/JSON (otlp_json.h), driven by the protobuf-c descriptors: a
 * growing buffer in the arena, no tree; lowerCamelCase names, defaults left
 * out, set oneof members always written, 64-bit integers as strings, ids as
 * hex, other bytes as base64. */
#include "otlp/otlp_json.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/base64.h"
#include "otlp/otlp_json_internal.h"

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
        if (pg_json_hex_field(fd)) {
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
            size_t es = pg_json_elem_size(fd->type);
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
