/* SPDX-License-Identifier: Apache-2.0
 * Test helper: gunzips and decodes a heap profile written by the sampler with
 * protobuf-c's generated perftools decoder (an independent reader of our
 * hand-written encoder), and sums sample values per leaf function name. */
#ifndef PG_SELFPROF_DECODE_H
#define PG_SELFPROF_DECODE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "perftools/profile.pb-c.h"

typedef Perftools__Profiles__Profile pg_tprof;

/* Returns the decoded profile (free with pg_tprof_free) or NULL. */
static inline pg_tprof *pg_tprof_decode(const uint8_t *gz, size_t len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 15 + 16) != Z_OK) {
        return NULL;
    }
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    z.next_in = (Bytef *)gz;
    z.avail_in = (uInt)len;
    int rc = Z_OK;
    while (buf != NULL && rc == Z_OK) {
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        z.next_out = buf + n;
        z.avail_out = (uInt)(cap - n);
        rc = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
    }
    inflateEnd(&z);
    if (buf == NULL || rc != Z_STREAM_END) {
        free(buf);
        return NULL;
    }
    pg_tprof *p = perftools__profiles__profile__unpack(NULL, n, buf);
    free(buf);
    return p;
}

static inline void pg_tprof_free(pg_tprof *p)
{
    perftools__profiles__profile__free_unpacked(p, NULL);
}

static inline const char *pg_tprof_str(const pg_tprof *p, int64_t i)
{
    return (i >= 0 && (size_t)i < p->n_string_table) ? p->string_table[i] : NULL;
}

/* The function name of location @id (first line), or NULL. */
static inline const char *pg_tprof_loc_name(const pg_tprof *p, uint64_t id)
{
    for (size_t i = 0; i < p->n_location; i++) {
        if (p->location[i]->id == id) {
            if (p->location[i]->n_line == 0) {
                return NULL;
            }
            uint64_t fid = p->location[i]->line[0]->function_id;
            for (size_t k = 0; k < p->n_function; k++) {
                if (p->function[k]->id == fid) {
                    return pg_tprof_str(p, p->function[k]->name);
                }
            }
            return NULL;
        }
    }
    return NULL;
}

/* Sums the four values of every sample whose leaf frame is @fn. */
static inline void pg_tprof_sum_leaf(const pg_tprof *p, const char *fn, int64_t out[4])
{
    memset(out, 0, 4 * sizeof(out[0]));
    for (size_t i = 0; i < p->n_sample; i++) {
        const Perftools__Profiles__Sample *s = p->sample[i];
        if (s->n_location_id == 0 || s->n_value != 4) {
            continue;
        }
        const char *name = pg_tprof_loc_name(p, s->location_id[0]);
        if (name != NULL && strcmp(name, fn) == 0) {
            for (int k = 0; k < 4; k++) {
                out[k] += s->value[k];
            }
        }
    }
}

/* True if any location is named @fn. */
static inline int pg_tprof_has_function(const pg_tprof *p, const char *fn)
{
    for (size_t i = 0; i < p->n_function; i++) {
        const char *name = pg_tprof_str(p, p->function[i]->name);
        if (name != NULL && strcmp(name, fn) == 0) {
            return 1;
        }
    }
    return 0;
}

#endif
