/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the fast unpack (otlp/otlp_unpack.c) against
 * protobuf-c's: whatever the fast unpack takes, protobuf-c takes too and both
 * re-pack to the same bytes (unless a string held a NUL, which the fast
 * unpack keeps as 0xFF and protobuf-c cuts); its string report is right. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/utf8.h"
#include "otlp/otlp_unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *pack(struct pg_arena *a, const ProtobufCMessage *m, size_t *n)
{
    uint8_t *out;

    *n = protobuf_c_message_get_packed_size(m);
    if ((out = pg_arena_alloc(a, *n + 1)) == NULL) {
        abort();
    }
    protobuf_c_message_pack(m, out);
    return out;
}

/* Strings of @m: any holding 0xFF (a NUL on the wire), and any not UTF-8. */
static void strings_of(const ProtobufCMessage *m, size_t *ff, size_t *bad)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;

    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        size_t n = 1;
        void *const *arr = (void *const *)(const void *)(base + fd->offset);

        if (fd->type != PROTOBUF_C_TYPE_STRING && fd->type != PROTOBUF_C_TYPE_MESSAGE) {
            continue;
        }
        if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(const void *)(base + fd->quantifier_offset) != fd->id) {
            continue;
        }
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            n = *(const size_t *)(const void *)(base + fd->quantifier_offset);
            arr = *(void *const *const *)(const void *)(base + fd->offset);
        }
        for (size_t j = 0; j < n; j++) {
            if (arr[j] == NULL) {
                continue;
            }
            if (fd->type == PROTOBUF_C_TYPE_STRING) {
                const char *s = arr[j];
                *ff += strchr(s, 0xff) != NULL;
                *bad += !pg_utf8_valid(s, strlen(s));
            } else {
                strings_of(arr[j], ff, bad);
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_arena *a = pg_arena_create(64u << 20);
    struct pg_otlp_request *fast = NULL;
    struct pg_otlp_unpack_info info;
    ProtobufCAllocator alloc;
    ProtobufCMessage *slow;
    enum pg_otlp_unpack_result res = pg_otlp_unpack_request(a, data, size, 64, &fast, &info);

    if (res != PG_OTLP_UNPACK_OK) {
        if (fast != NULL) {
            abort();
        }
        pg_arena_destroy(a);
        return 0;
    }
    pg_arena_protobuf_allocator(a, &alloc);
    slow = protobuf_c_message_unpack(&pg_otlp_request_descriptor, &alloc, size, data);
    if (slow == NULL) {
        abort(); /* the fast unpack took what protobuf-c refuses */
    }
    {
        size_t ff = 0, bad = 0, fn, sn;
        const uint8_t *fb, *sb;

        strings_of(&fast->base, &ff, &bad);
        if (bad != 0 && info.suspect_strings == 0) {
            abort(); /* the report must say when the repair has work (it may say so for a
                      * string a later field replaced: only a walk too many) */
        }
        if (ff == 0) {
            fb = pack(a, &fast->base, &fn);
            sb = pack(a, slow, &sn);
            if (fn != sn || memcmp(fb, sb, fn) != 0) {
                abort();
            }
        }
    }
    pg_arena_destroy(a);
    return 0;
}
