/* SPDX-License-Identifier: Apache-2.0
 * The table of Content-Encoding codings and the lookups over it. A new
 * coding is one row here (its bit is its row) and its decoder in a file of
 * its own. */
#include "codec/codec.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct pg_codec codecs[] = {
    {"identity", "", NULL},
    {"gzip", "x-gzip", pg_inflate_gzip},
    /* HTTP's "deflate" is a zlib stream (RFC 9110 8.4.1.2), as the collector
     * reads it; "zlib" is the collector's own name for the same thing. */
    {"deflate", NULL, pg_inflate_zlib},
    {"zlib", NULL, pg_inflate_zlib},
    /* confighttp's default compression_algorithms list zstd, and the
     * collector's otlphttp exporter sends it when configured to. */
    {"zstd", NULL, pg_zstd_decode},
};

#define N_CODECS (sizeof(codecs) / sizeof(codecs[0]))
_Static_assert(N_CODECS < 32, "a set of codings is an unsigned bit mask");

static bool name_is(const char *row, const char *name, size_t n)
{
    return row != NULL && strlen(row) == n && strncasecmp(row, name, n) == 0;
}

const struct pg_codec *pg_codec_find(const char *name, size_t n)
{
    for (size_t i = 0; i < N_CODECS; i++) {
        if (name_is(codecs[i].name, name, n) || name_is(codecs[i].alias, name, n)) {
            return &codecs[i];
        }
    }
    return NULL;
}

unsigned pg_codec_bit(const struct pg_codec *c)
{
    return 1u << (unsigned)(c - codecs);
}

unsigned pg_codec_all(void)
{
    return (1u << N_CODECS) - 1u;
}

/* Appends ", @s" (or "@s" first) at @buf + *@o; false once @buf is full. */
static bool put(char *buf, size_t size, size_t *o, const char *s)
{
    int w = snprintf(buf + *o, size - *o, "%s%s", *o ? ", " : "", s);

    if (w < 0 || (size_t)w >= size - *o) {
        return false;
    }
    *o += (size_t)w;
    return true;
}

void pg_codec_list(unsigned set, bool aliases, char *buf, size_t size)
{
    size_t o = 0;

    if (size == 0) {
        return;
    }
    buf[0] = '\0';
    for (size_t i = 0; i < N_CODECS; i++) {
        const char *alias = codecs[i].alias;

        if ((set & pg_codec_bit(&codecs[i])) == 0) {
            continue;
        }
        if (!put(buf, size, &o, codecs[i].name) ||
            (aliases && alias != NULL && !put(buf, size, &o, alias[0] ? alias : "\"\""))) {
            return;
        }
    }
}
