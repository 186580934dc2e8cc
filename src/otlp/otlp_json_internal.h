/* SPDX-License-Identifier: Apache-2.0
 * What the OTLP/JSON reader (otlp_json.c) and writer (otlp_json_encode.c)
 * share: which bytes fields are hex, and the in-memory size of a repeated
 * field's elements in protobuf-c structs. */
#ifndef PG_OTLP_OTLP_JSON_INTERNAL_H
#define PG_OTLP_OTLP_JSON_INTERNAL_H

#include <stdbool.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

/* Byte fields written as hex (OTLP/JSON), all others base64. */
static inline bool pg_json_hex_field(const ProtobufCFieldDescriptor *fd)
{
    return strcmp(fd->name, "trace_id") == 0 || strcmp(fd->name, "span_id") == 0 ||
           strcmp(fd->name, "profile_id") == 0;
}

/* Bytes one element of a repeated field of type @t takes in its array. */
static inline size_t pg_json_elem_size(ProtobufCType t)
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

#endif
