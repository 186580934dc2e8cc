/* SPDX-License-Identifier: Apache-2.0
 * What the files of the pyroscope receiver share: the metadata one request
 * carries besides its profile (query, labels, sample_type_config) and the
 * calls between them: pyroscope.c (the component, head checks, answers)
 * -> pyroscope_ingest.c (rx->translate: bodies to pprof to OTLP) ->
 * pyroscope_map.c (the metadata onto OTLP), pyroscope_merge.c (several
 * translated requests into one). The push machinery is the pprof
 * receiver's (pprof_internal.h). */
#ifndef PG_RECEIVER_PYROSCOPE_INTERNAL_H
#define PG_RECEIVER_PYROSCOPE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "pyroscope/pyro_name.h"
#include "pyroscope/pyro_stc.h"
#include "receiver/pprof_internal.h"

/* One profile's Pyroscope metadata, in the batch arena. */
struct pyro_meta {
    const char *app;                     /* `name` before '{', suffix removed; or NULL */
    const struct pg_pyro_label *labels;  /* `name`'s labels, or the Push series' */
    size_t n_labels;
    bool labels_distinct;                /* no key twice (a parsed name): no check needed */
    const char *select_type;             /* sample type the name suffix selects, or NULL */
    const char *spy;                     /* spyName, or NULL */
    const char *aggregation;             /* aggregationType, or NULL */
    int64_t from_ns, until_ns;           /* 0: not given */
    const struct pg_pyro_stc_entry *stc; /* sample_type_config entries */
    size_t n_stc;
};

/* What an /ingest body holds: the `format` query parameter, else what
 * the Content-Type says (multipart/form-data: pprof; ...+lines: lines;
 * ...+trie/+tree: those; anything else: folded, Pyroscope's default). */
enum pyro_format {
    PYRO_FORMAT_PPROF = 0,
    PYRO_FORMAT_FOLDED,
    PYRO_FORMAT_LINES,
    PYRO_FORMAT_UNSUPPORTED,
};
enum pyro_format pg_pyro_format(const char *format, const char *ctype);

/* The URL-decoded value of @key in the query string @q (after '?'), in
 * @a; NULL when absent (or on OOM). A repeated key: the last value. */
const char *pg_pyro_query_get(struct pg_arena *a, const char *q, const char *key);
/* The same for @n keys (at most 16) at once, one pass over @q, which is
 * the caller's copy and is cut in place: @out[i] for @keys[i], pointing
 * into @q when the value needs no decoding, else decoded into @a. */
void pg_pyro_query_parse(struct pg_arena *a, char *q, const char *const *keys, size_t n,
                         char **out);
/* Puts @m onto every resource, scope and profile of @req (in @a). */
enum pg_err pg_pyro_apply(struct pg_arena *a, struct pg_otlp_request *req,
                          const struct pyro_meta *m, struct pg_status *st);
/* @n translated requests (each with its own dictionary) as one request
 * with one dictionary, in @a (@scratch for the builder). */
enum pg_err pg_pyro_merge(struct pg_arena *a, struct pg_arena *scratch,
                          struct pg_otlp_request *const *reqs, size_t n,
                          struct pg_otlp_request **out, struct pg_status *st);
/* rx->translate of the pyroscope flavor. */
enum pg_err pg_pyro_translate(struct rx *rx, struct rx_job *job, struct pg_arena **body_arena,
                              const uint8_t *body, size_t len, struct pg_otlp_request **out);

#endif
