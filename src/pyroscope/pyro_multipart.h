/* SPDX-License-Identifier: Apache-2.0
 * multipart/form-data (RFC 7578, RFC 2046 section 5.1) as the Pyroscope `/ingest` endpoint
 * receives it: the boundary from the Content-Type, then the parts of a whole body, zero
 * copy. Pure parser of the pyroscope room: no I/O, every size capped, failures MALFORMED
 * (400), LIMIT (413) or UNSUPPORTED (415) naming the byte offset. */
#ifndef PG_PYROSCOPE_PYRO_MULTIPART_H
#define PG_PYROSCOPE_PYRO_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/err.h"

#define PG_PYRO_MAX_PARTS 32
#define PG_PYRO_MAX_BOUNDARY 70          /* RFC 2046: 1..70 characters */
#define PG_PYRO_MAX_PART_HEADERS 8192u   /* bytes of one part's header block */

struct pg_pyro_part {
    const char *name;         /* Content-Disposition name (NUL-terminated, arena) */
    const char *filename;     /* or NULL */
    const char *content_type; /* or NULL */
    const uint8_t *data;      /* points INTO the body passed to parse (zero copy) */
    size_t len;
};

/* The boundary parameter of a Content-Type header value (quoted or not), copied to @out
 * (@out_size >= 71 holds any valid one). UNSUPPORTED when the type is not
 * multipart/form-data, MALFORMED when the boundary is missing, empty or longer than 70
 * characters. */
enum pg_err pg_pyro_multipart_boundary(const char *content_type, char *out, size_t out_size,
                                       struct pg_status *st);

/* Parses the whole body; the body must outlive the parts. Errors: no opening delimiter, a
 * part without a Content-Disposition name, a header block over 8 KiB, more than
 * PG_PYRO_MAX_PARTS parts (LIMIT), the closing delimiter missing (MALFORMED "boundary never
 * closed"). */
enum pg_err pg_pyro_multipart_parse(struct pg_arena *a, const uint8_t *body, size_t len,
                                    const char *boundary, struct pg_pyro_part **parts,
                                    size_t *n_parts, struct pg_status *st);

/* The first part named @name, or NULL. */
const struct pg_pyro_part *pg_pyro_multipart_find(const struct pg_pyro_part *parts, size_t n,
                                                  const char *name);

#endif
