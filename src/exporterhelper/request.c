/* SPDX-License-Identifier: Apache-2.0
 * From a queued item to the bodies a consumer sends: its batches (or its
 * spooled records, read back here) are encoded once, merged and split under
 * max_request_bytes, and each part handed to the exporter's make_body. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "exporterhelper/internal.h"
#include "exporterhelper/split.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_lazy.h"

/* Decodes one spooled record into @arena; NULL when it does not decode. */
static const struct pg_otlp_request *decode_record(struct pg_arena *arena, const uint8_t *data,
                                                   size_t len)
{
    ProtobufCAllocator alloc;

    pg_arena_protobuf_allocator(arena, &alloc);
    return (const struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor,
                                                                      &alloc, len, data);
}

static bool fits(const struct pg_exph *h, size_t len)
{
    return h->max_request_bytes == 0 || len <= h->max_request_bytes;
}

/* The body of one part: the exporter's (compressed, ...) or a copy. */
static enum pg_err make_body(struct pg_exph *h, const uint8_t *enc, size_t n,
                             struct pg_exph_part *part, struct pg_status *st)
{
    uint8_t *raw;

    if (h->ops->make_body != NULL) {
        enum pg_err err = h->ops->make_body(h->exporter, enc, n, &part->body, &part->len, st);

        if (err != PG_ERR_OK || part->body != NULL) {
            return err;
        }
    }
    raw = malloc(n ? n : 1);
    if (raw == NULL) {
        return PG_ERR_NOMEM;
    }
    if (n > 0) {
        memcpy(raw, enc, n);
    }
    part->body = raw;
    part->len = n;
    return PG_ERR_OK;
}

/* Encodes (and compresses) the item into parts; returns false when nothing
 * is left to send (everything dropped and counted). A spooled item is read
 * back from disk here, one consumer at a time: a record that fits
 * max_request_bytes goes out as stored (never encoded twice); only merges
 * and splits decode. */
/* An eager deep copy of the lazy request @req in @arena (encoded verbatim, unpacked by
 * protobuf-c), for splitting or merging: @req is shared with other exporters, so it is not
 * materialized in place. */
static enum pg_err eager_copy(struct pg_arena *arena, const struct pg_otlp_request *req,
                              struct pg_otlp_request **out, struct pg_status *st)
{
    struct pg_arena *tmp = pg_arena_create(0);
    ProtobufCAllocator alloc;
    uint8_t *buf;
    size_t len;
    enum pg_err err;

    *out = NULL;
    if (tmp == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "no memory to copy a lazy request");
    }
    err = pg_otlp_request_encode(req, tmp, &buf, &len, st);
    if (err == PG_ERR_OK) {
        pg_arena_protobuf_allocator(arena, &alloc);
        *out = (struct pg_otlp_request *)protobuf_c_message_unpack(&pg_otlp_request_descriptor,
                                                                   &alloc, len, buf);
        if (*out == NULL) {
            err = pg_status_set(st, pg_arena_hit_cap(arena) ? PG_ERR_LIMIT : PG_ERR_NOMEM,
                                "no memory to copy a %zu-byte lazy request", len);
        }
    }
    pg_arena_destroy(tmp);
    return err;
}

bool pg_exph_prepare(struct pg_exph_consumer *c)
{
    struct pg_exph *h = c->h;
    struct pg_exph_item *it = c->item;
    struct pg_arena *arena = pg_arena_create(0);
    struct pg_status st;
    const struct pg_otlp_request **srcs = NULL;
    size_t n_src = 0;
    struct pg_split_result res;
    enum pg_err err = PG_ERR_NOMEM;
    bool single = false;
    uint8_t *single_wire = NULL;
    size_t single_len = 0;
    uint8_t **loaded = NULL; /* malloc'd records read back (spooled items) */
    size_t n_loaded = 0;

    pg_status_clear(&st);
    memset(&res, 0, sizeof(res));
    if (arena == NULL) {
        goto fail;
    }
    if (it->n_batches > 0) {
        srcs = pg_arena_calloc(arena, it->n_batches, sizeof(*srcs));
        if (srcs == NULL) {
            goto fail;
        }
        for (size_t i = 0; i < it->n_batches; i++) {
            srcs[n_src++] = it->batches[i]->req;
        }
        if (it->n_batches == 1) {
            /* Encoded once: the size decides, and a request that fits is sent as is. */
            err = pg_otlp_request_encode(srcs[0], arena, &single_wire, &single_len, &st);
            if (err != PG_ERR_OK) {
                goto fail;
            }
            single = fits(h, single_len);
        }
    } else if (it->n_spool_ids > 0) {
        size_t *lens = calloc(it->n_spool_ids, sizeof(*lens));
        bool counted = !it->count_samples;

        loaded = calloc(it->n_spool_ids, sizeof(*loaded));
        srcs = pg_arena_calloc(arena, it->n_spool_ids, sizeof(*srcs));
        if (lens == NULL || loaded == NULL || srcs == NULL) {
            free(lens);
            goto fail;
        }
        for (size_t i = 0; i < it->n_spool_ids; i++) {
            uint8_t *data = NULL;
            size_t len = 0;

            if (it->raw != NULL && i == 0) {
                data = it->raw; /* replayed: already read (and checksummed) */
                len = it->raw_len;
                it->raw = NULL;
            } else if (pg_spool_read(h->spool, it->spool_ids[i], &data, &len, &st) !=
                       PG_ERR_OK) {
                pg_log_error(h->log, "%s", pg_status_text(&st));
                pg_status_clear(&st);
                continue;
            }
            loaded[n_loaded] = data;
            lens[n_loaded++] = len;
        }
        if (!counted && n_loaded == 1 && fits(h, lens[0]) &&
            pg_otlp_wire_samples(loaded[0], lens[0], &it->samples)) {
            counted = true; /* read off the wire bytes: no decode needed */
        }
        if (n_loaded == 1 && fits(h, lens[0]) && counted) {
            single = true;
            single_wire = loaded[0];
            single_len = lens[0];
        } else {
            if (it->count_samples) {
                it->samples = 0;
            }
            for (size_t i = 0; i < n_loaded; i++) {
                const struct pg_otlp_request *req = decode_record(arena, loaded[i], lens[i]);

                if (req == NULL) {
                    pg_log_error(h->log, "a spooled request (%zu bytes) does not decode; dropped",
                                 lens[i]);
                    continue;
                }
                if (it->count_samples) {
                    it->samples += pg_otlp_request_samples(req);
                }
                srcs[n_src++] = req;
            }
            if (n_loaded == 1 && n_src == 1 && fits(h, lens[0])) {
                /* Decoded only to count its samples: the stored bytes still go out. */
                single = true;
                single_wire = loaded[0];
                single_len = lens[0];
            }
        }
        free(lens);
        if (n_src == 0 && !single) {
            free(loaded);
            pg_arena_destroy(arena);
            return false;
        }
    }
    if (single) {
        res.parts = pg_arena_calloc(arena, 1, sizeof(*res.parts));
        if (res.parts == NULL) {
            goto fail;
        }
        res.n_parts = 1;
        res.parts[0].req = NULL; /* the wire bytes are given */
        res.parts[0].samples = it->samples;
        res.parts[0].bytes = single_len;
        res.parts[0].wire = single_wire;
    } else {
        /* Splitting and merging read Sample structs: a lazy source (shared with other
         * exporters, so not materialized in place) is copied eagerly into this arena. */
        for (size_t i = 0; i < n_src; i++) {
            if (pg_otlp_request_is_lazy(srcs[i])) {
                struct pg_otlp_request *eager = NULL;
                err = eager_copy(arena, srcs[i], &eager, &st);
                if (err != PG_ERR_OK) {
                    goto fail;
                }
                srcs[i] = eager;
            }
        }
        err = pg_otlp_split(srcs, n_src, (size_t)h->max_request_bytes, arena, &res, &st);
        if (err != PG_ERR_OK) {
            goto fail;
        }
        if (res.dropped_samples > 0 || res.dropped_profiles > 0) {
            pg_log_warn(h->log,
                        "dropped %zu samples (%zu whole profiles) larger than max_request_bytes "
                        "%" PRIu64 " on their own",
                        res.dropped_samples, res.dropped_profiles, h->max_request_bytes);
            pg_exph_count_drop(h, "too_large", res.dropped_samples);
        }
        if (res.n_parts > 1) {
            pg_log_debug(h->log, "split a request of %zu samples into %zu parts", it->samples,
                         res.n_parts);
        }
    }
    c->parts = calloc(res.n_parts ? res.n_parts : 1, sizeof(*c->parts));
    if (c->parts == NULL) {
        goto fail;
    }
    c->n_parts = res.n_parts;
    for (size_t i = 0; i < res.n_parts; i++) {
        /* Every part comes encoded (split or the single path above); the
         * encoding lives in @arena, the body is the consumer's. */
        const uint8_t *enc = res.parts[i].wire;
        size_t n = res.parts[i].bytes;

        if (enc == NULL) {
            uint8_t *tmp = NULL;

            err = pg_otlp_request_encode(res.parts[i].req, arena, &tmp, &n, &st);
            if (err != PG_ERR_OK) {
                goto fail;
            }
            enc = tmp;
        }
        c->parts[i].samples = res.parts[i].samples;
        err = make_body(h, enc, n, &c->parts[i], &st);
        if (err != PG_ERR_OK) {
            goto fail;
        }
    }
    /* What preparing took at its peak: the records read back, the decoded
     * and split model, the bodies (the replay's budget learns from it). */
    c->prep_bytes = pg_arena_footprint(arena);
    for (size_t i = 0; i < c->n_parts; i++) {
        c->prep_bytes += c->parts[i].len;
    }
    pg_arena_destroy(arena);
    for (size_t i = 0; i < n_loaded; i++) {
        free(loaded[i]);
    }
    free(loaded);
    return c->n_parts > 0;

fail:
    pg_log_error(h->log, "cannot encode an export of %zu samples: %s", it->samples,
                 st.code ? pg_status_text(&st) : "out of memory");
    pg_exph_count_drop(h, "encode", it->samples);
    pg_arena_destroy(arena);
    for (size_t i = 0; i < n_loaded; i++) {
        free(loaded[i]);
    }
    free(loaded);
    for (size_t i = 0; i < c->n_parts; i++) {
        free(c->parts[i].body);
        c->parts[i].body = NULL;
    }
    c->n_parts = 0;
    return false;
}
