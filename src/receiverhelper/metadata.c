/* SPDX-License-Identifier: Apache-2.0
 * gRPC metadata -> batch metadata (metadata.h). */
#include "receiverhelper/metadata.h"

#include <string.h>

#include "otlp/otlp_utf8.h"

/* A lower-cased, NUL-terminated copy of @s (@len bytes) in @arena, valid
 * UTF-8. */
static const char *md_copy(struct pg_arena *arena, const char *s, size_t len, bool lower,
                           const char *where)
{
    char *p = pg_arena_alloc(arena, len + 1);
    bool ascii = true;

    if (p == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];

        ascii &= (unsigned char)c < 0x80 && c != '\0';
        p[i] = lower && c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
    }
    p[len] = '\0';
    return ascii ? p : pg_utf8_clean(arena, p, &len, where);
}

enum pg_err pg_rxh_metadata_from_pairs(struct pg_arena *arena, const struct pg_rxh_md_pair *pairs,
                                       size_t n, struct pg_metadata *md, struct pg_status *st)
{
    size_t kept = 0;

    md->n = 0;
    md->entries = NULL;
    if (n == 0) {
        return PG_ERR_OK;
    }
    md->entries = pg_arena_calloc(arena, n, sizeof(*md->entries));
    if (md->entries == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "no memory for request metadata");
    }
    for (size_t i = 0; i < n; i++) {
        const char *k = pairs[i].name, *v = pairs[i].value ? pairs[i].value : "";

        if (k == NULL || k[0] == ':') {
            continue;
        }
        md->entries[kept].key = md_copy(arena, k, strlen(k), true, "request metadata");
        md->entries[kept].value = md_copy(arena, v, strlen(v), false, "request metadata");
        if (md->entries[kept].key == NULL || md->entries[kept].value == NULL) {
            return pg_status_set(st, PG_ERR_NOMEM, "no memory for request metadata");
        }
        kept++;
    }
    md->n = kept;
    return PG_ERR_OK;
}
