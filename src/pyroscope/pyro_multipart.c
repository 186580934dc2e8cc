/* SPDX-License-Identifier: Apache-2.0
 * Splits a multipart/form-data body into its parts (zero copy). */
#include "pyroscope/pyro_multipart.h"

enum pg_err pg_pyro_multipart_boundary(const char *content_type, char *out, size_t out_size,
                                       struct pg_status *st)
{
    (void)content_type, (void)out, (void)out_size;
    return pg_status_set(st, PG_ERR_INTERNAL, "multipart parser not built yet");
}

enum pg_err pg_pyro_multipart_parse(struct pg_arena *a, const uint8_t *body, size_t len,
                                    const char *boundary, struct pg_pyro_part **parts,
                                    size_t *n_parts, struct pg_status *st)
{
    (void)a, (void)body, (void)len, (void)boundary, (void)parts, (void)n_parts;
    return pg_status_set(st, PG_ERR_INTERNAL, "multipart parser not built yet");
}

const struct pg_pyro_part *pg_pyro_multipart_find(const struct pg_pyro_part *parts, size_t n,
                                                  const char *name)
{
    (void)parts, (void)n, (void)name;
    return NULL;
}
