/* SPDX-License-Identifier: Apache-2.0
 * Batch refcounting, metadata lookups and the copy-on-write deep copy. */
#include "pipeline/batch.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "otlp/otlp_encode.h"
#include "otlp/otlp_lazy.h"

const char *pg_metadata_get(const struct pg_metadata *md, const char *key, size_t idx)
{
    if (md == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < md->n; i++) {
        if (strcasecmp(md->entries[i].key, key) == 0) {
            if (idx == 0) {
                return md->entries[i].value;
            }
            idx--;
        }
    }
    return NULL;
}

size_t pg_metadata_count(const struct pg_metadata *md, const char *key)
{
    size_t n = 0;

    if (md == NULL) {
        return 0;
    }
    for (size_t i = 0; i < md->n; i++) {
        if (strcasecmp(md->entries[i].key, key) == 0) {
            n++;
        }
    }
    return n;
}

struct pg_batch *pg_batch_new(struct pg_arena *arena, struct pg_otlp_request *req)
{
    /* The batch lives in the arena it owns when there is room (no malloc
     * per request); a full arena falls back to the heap. */
    struct pg_batch *b = pg_arena_zalloc(arena, sizeof(*b));
    bool heap = b == NULL;

    if (heap) {
        b = calloc(1, sizeof(*b));
    }
    if (b == NULL) {
        pg_arena_destroy(arena);
        return NULL;
    }
    b->refcnt = 1;
    b->arena = arena;
    b->req = req;
    b->heap = heap;
    return b;
}

struct pg_batch *pg_batch_ref(struct pg_batch *b)
{
    __atomic_add_fetch(&b->refcnt, 1, __ATOMIC_RELAXED);
    return b;
}

void pg_batch_unref(struct pg_batch *b)
{
    if (b == NULL) {
        return;
    }
    if (__atomic_sub_fetch(&b->refcnt, 1, __ATOMIC_ACQ_REL) == 0) {
        bool heap = b->heap;

        pg_arena_destroy(b->arena); /* takes b with it unless it is on the heap */
        if (heap) {
            free(b);
        }
    }
}

enum pg_err pg_batch_encode(const struct pg_batch *b, struct pg_arena *arena, uint8_t **out,
                            size_t *len, struct pg_status *st)
{
    /* Same bytes as protobuf_c_message_pack, each message sized once. */
    return pg_otlp_request_encode(b->req, arena, out, len, st);
}

enum pg_err pg_batch_make_mutable(struct pg_batch **bp, struct pg_status *st)
{
    struct pg_batch *b = *bp;
    struct pg_arena *arena;
    struct pg_arena *tmp;
    ProtobufCAllocator alloc;
    struct pg_otlp_request *req;
    struct pg_batch *copy;
    uint8_t *buf;
    size_t len;
    enum pg_err err;

    if (__atomic_load_n(&b->refcnt, __ATOMIC_ACQUIRE) == 1) {
        return PG_ERR_OK;
    }
    /* Deep copy by encode + decode: simple and exactly as deep as the schema. */
    tmp = pg_arena_create(0);
    arena = pg_arena_create(pg_arena_cap(b->arena));
    if (tmp == NULL || arena == NULL) {
        pg_arena_destroy(tmp);
        pg_arena_destroy(arena);
        return pg_status_set(st, PG_ERR_NOMEM, "no memory to copy a shared batch");
    }
    err = pg_batch_encode(b, tmp, &buf, &len, st);
    if (err != PG_ERR_OK) {
        pg_arena_destroy(tmp);
        pg_arena_destroy(arena);
        return err;
    }
    pg_arena_protobuf_allocator(arena, &alloc);
    req = (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor, &alloc,
                                                               len, buf);
    pg_arena_destroy(tmp);
    if (req == NULL) {
        pg_arena_destroy(arena);
        return pg_status_set(st, PG_ERR_NOMEM, "no memory to copy a shared batch");
    }
    copy = pg_batch_new(arena, req);
    if (copy == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "no memory to copy a shared batch");
    }
    copy->metadata.n = b->metadata.n;
    copy->metadata.entries = pg_arena_calloc(arena, b->metadata.n ? b->metadata.n : 1,
                                             sizeof(struct pg_metadata_entry));
    if (copy->metadata.entries == NULL) {
        pg_batch_unref(copy);
        return pg_status_set(st, PG_ERR_NOMEM, "no memory to copy a shared batch");
    }
    for (size_t i = 0; i < b->metadata.n; i++) {
        copy->metadata.entries[i].key = pg_arena_strdup(arena, b->metadata.entries[i].key);
        copy->metadata.entries[i].value = pg_arena_strdup(arena, b->metadata.entries[i].value);
    }
    if (b->metadata.peer_addr != NULL) {
        copy->metadata.peer_addr = pg_arena_strdup(arena, b->metadata.peer_addr);
    }
    copy->received_unix_nano = b->received_unix_nano;
    copy->raw_bytes = b->raw_bytes;
    copy->receiver_id = b->receiver_id;
    copy->default_service_name = b->default_service_name;
    pg_batch_unref(b);
    *bp = copy;
    return PG_ERR_OK;
}

size_t pg_batch_profile_count(const struct pg_batch *b)
{
    size_t n = 0;

    for (size_t i = 0; i < b->req->n_resource_profiles; i++) {
        const struct pg_otlp_resprof *rp = b->req->resource_profiles[i];
        for (size_t j = 0; j < rp->n_scope_profiles; j++) {
            n += rp->scope_profiles[j]->n_profiles;
        }
    }
    return n;
}

size_t pg_batch_sample_count(const struct pg_batch *b)
{
    size_t n = 0;

    for (size_t i = 0; i < b->req->n_resource_profiles; i++) {
        const struct pg_otlp_resprof *rp = b->req->resource_profiles[i];
        for (size_t j = 0; j < rp->n_scope_profiles; j++) {
            const struct pg_otlp_scopeprof *sp = rp->scope_profiles[j];
            for (size_t k = 0; k < sp->n_profiles; k++) {
                n += pg_otlp_profile_sample_count(sp->profiles[k]); /* lazy ones too */
            }
        }
    }
    return n;
}
