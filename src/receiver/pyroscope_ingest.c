/* SPDX-License-Identifier: Apache-2.0
 * The pyroscope receiver's rx->translate (worker or loop thread): an
 * /ingest body (pprof in a multipart form or raw, folded or lines text) or
 * a Push API body (one pprof per raw sample) becomes OTLP through the
 * pprof translator, then gets Pyroscope's metadata (pyroscope_map.c).
 * Parsed metadata goes to the batch arena (job->arena); the body, its
 * parts and a folded upload's pprof stay in the scratch arena, which the
 * translator destroys as soon as they are dead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "pprof/translate.h"
#include "pyroscope/pyro_folded.h"
#include "pyroscope/pyro_multipart.h"
#include "pyroscope/pyro_push.h"
#include "pyroscope/pyro_time.h"
#include "pyroscope/pyro_type.h"
#include "receiver/pyroscope_internal.h"

/* Prefixes @st's message with @what (a field or part name). */
static enum pg_err status_prefix(struct pg_status *st, const char *what)
{
    char msg[PG_STATUS_MSG_MAX];

    snprintf(msg, sizeof(msg), "%s", pg_status_text(st));
    return pg_status_set(st, st->code, "%s: %s", what, msg);
}

static void stats_add(struct pg_translate_stats *t, const struct pg_translate_stats *s)
{
    t->samples += s->samples;
    t->sample_records += s->sample_records;
    t->profiles += s->profiles;
    t->links += s->links;
    t->inflated_bytes += s->inflated_bytes;
    t->raw_pprof_bytes += s->raw_pprof_bytes;
}

/* The query keys /ingest reads, parsed in one pass. */
enum { Q_NAME, Q_SPY, Q_AGG, Q_FROM, Q_UNTIL, Q_RATE, Q_FORMAT, Q_COUNT };
static const char *const query_keys[Q_COUNT] = {
    "name", "spyName", "aggregationType", "from", "until", "sampleRate", "format",
};

/* ---- the names this thread parsed last -----------------------------------
 * An SDK sends the same `name` on every push of a profile type (a Go
 * process: one for CPU, one for heap, ... every 10 s), and a sidecar serves
 * one application: the parse of the last few names is kept per thread and
 * copied into the request's arena when the decoded name is the same bytes
 * (a parse depends on those bytes alone; failures are not kept). Fixed
 * buffers, no heap and no lock; a longer name is parsed every time. */
#define NAME_CACHE_MAX 512 /* bytes of one decoded name (an SDK's: ~250) */
#define NAME_CACHE_WAYS 4  /* names per thread, replaced round robin */
struct name_entry {
    size_t len;                        /* 0: empty */
    char key[NAME_CACHE_MAX];          /* the decoded name as received */
    char cut[NAME_CACHE_MAX + 1];      /* the same bytes as the parse left them (NULs) */
    uint16_t app, suffix;              /* offsets into cut; suffix NAME_CACHE_MAX + 1: none */
    uint16_t n_labels;
    uint16_t label[PG_PYRO_MAX_LABELS][2]; /* name and value offsets */
};
static __thread struct name_entry name_cache[NAME_CACHE_WAYS];
static __thread unsigned name_cache_next;

/* @e's parse into @pn, its strings in one copy in @a. */
static enum pg_err name_from_cache(struct pg_arena *a, const struct name_entry *e,
                                   struct pg_pyro_name *pn, struct pg_status *st)
{
    char *buf = pg_arena_alloc(a, e->len + 1);
    struct pg_pyro_label *l = pg_arena_alloc(a, (e->n_labels > 0 ? e->n_labels : 1) * sizeof(*l));

    if (buf == NULL || l == NULL) {
        return pg_status_set(st, PG_ERR_NOMEM, "name: out of memory");
    }
    memcpy(buf, e->cut, e->len + 1);
    pn->app = buf + e->app;
    pn->type_suffix = e->suffix <= e->len ? buf + e->suffix : NULL;
    for (size_t i = 0; i < e->n_labels; i++) {
        l[i].name = buf + e->label[i][0];
        l[i].value = buf + e->label[i][1];
    }
    pn->labels = l;
    pn->n_labels = e->n_labels;
    return PG_ERR_OK;
}

/* True when @p points into @name's @len bytes or at its end (an empty string there). */
static bool name_within(const char *name, size_t len, const char *p)
{
    return p >= name && p <= name + len;
}

/* pg_pyro_name_parse_in(@a, @name, @len, ...) through this thread's cache. */
static enum pg_err name_parse_cached(struct pg_arena *a, char *name, size_t len,
                                     struct pg_pyro_name *pn, struct pg_status *st)
{
    struct name_entry *e = NULL;
    enum pg_err err;

    if (len == 0 || len > NAME_CACHE_MAX) {
        return pg_pyro_name_parse_in(a, name, len, pn, st);
    }
    for (size_t w = 0; w < NAME_CACHE_WAYS; w++) {
        if (name_cache[w].len == len && memcmp(name_cache[w].key, name, len) == 0) {
            return name_from_cache(a, &name_cache[w], pn, st);
        }
    }
    e = &name_cache[name_cache_next++ % NAME_CACHE_WAYS];
    e->len = 0; /* empty until filled */
    memcpy(e->key, name, len); /* before the parse cuts it */
    err = pg_pyro_name_parse_in(a, name, len, pn, st);
    if (err != PG_ERR_OK) {
        return err;
    }
    /* Every string of @pn points into @name (pg_pyro_name_parse_in's promise); a parse
     * that broke it would be served with offsets into other bytes, so it is not kept. */
    if (!name_within(name, len, pn->app) ||
        (pn->type_suffix != NULL && !name_within(name, len, pn->type_suffix)) ||
        pn->n_labels > PG_PYRO_MAX_LABELS) {
        return PG_ERR_OK;
    }
    for (size_t i = 0; i < pn->n_labels; i++) {
        if (!name_within(name, len, pn->labels[i].name) ||
            !name_within(name, len, pn->labels[i].value)) {
            return PG_ERR_OK;
        }
    }
    memcpy(e->cut, name, len + 1);
    e->app = (uint16_t)(pn->app - name);
    e->suffix = pn->type_suffix != NULL ? (uint16_t)(pn->type_suffix - name) : NAME_CACHE_MAX + 1;
    e->n_labels = (uint16_t)pn->n_labels;
    for (size_t i = 0; i < pn->n_labels; i++) {
        e->label[i][0] = (uint16_t)(pn->labels[i].name - name);
        e->label[i][1] = (uint16_t)(pn->labels[i].value - name);
    }
    e->len = len;
    return PG_ERR_OK;
}

/* The query's metadata (name, spy, times, aggregation) into @m. */
static enum pg_err ingest_meta(struct rx_job *job, char *const *qv, struct pyro_meta *m,
                               const char **suffix, struct pg_status *st)
{
    struct pg_arena *a = job->arena;
    char *name = qv[Q_NAME]; /* in the batch arena: cut in place */
    int64_t now = pg_real_ns();
    struct pg_pyro_name pn;
    enum pg_err err;

    if (name == NULL || name[0] == '\0') {
        return pg_status_set(st, PG_ERR_MALFORMED,
                             "query parameter \"name\" is missing: the application name and "
                             "labels, e.g. name=checkout{env=prod}");
    }
    err = name_parse_cached(a, name, strlen(name), &pn, st);
    if (err != PG_ERR_OK) {
        return err; /* the message starts "name: " */
    }
    m->app = pn.app;
    m->labels = pn.labels;
    m->n_labels = pn.n_labels;
    m->labels_distinct = true; /* pg_pyro_name_parse merges a repeated key */
    m->select_type = pn.type_suffix;
    *suffix = pn.type_suffix;
    m->spy = qv[Q_SPY];
    m->aggregation = qv[Q_AGG];
    if (pg_pyro_time_parse(qv[Q_FROM] ? qv[Q_FROM] : "", qv[Q_FROM] ? strlen(qv[Q_FROM]) : 0, now,
                           &m->from_ns, st) != PG_ERR_OK ||
        pg_pyro_time_parse(qv[Q_UNTIL] ? qv[Q_UNTIL] : "", qv[Q_UNTIL] ? strlen(qv[Q_UNTIL]) : 0,
                           now, &m->until_ns, st) != PG_ERR_OK) {
        return status_prefix(st, "query parameter from/until");
    }
    return PG_ERR_OK;
}

/* format=pprof: the `profile` part of a multipart form (with an optional
 * sample_type_config), or the whole body. */
static enum pg_err ingest_pprof(struct rx *rx, struct rx_job *job, struct pg_arena **scratch,
                                const uint8_t *body, size_t len, struct pyro_meta *m,
                                struct pg_otlp_request **out)
{
    const uint8_t *prof = body;
    size_t plen = len;

    if (job->ctype != NULL && strncasecmp(job->ctype, "multipart/", 10) == 0) {
        char boundary[PG_PYRO_MAX_BOUNDARY + 8];
        struct pg_pyro_part *parts;
        size_t n_parts;
        const struct pg_pyro_part *p;
        enum pg_err err;

        err = pg_pyro_multipart_boundary(job->ctype, boundary, sizeof(boundary), &job->st);
        if (err == PG_ERR_OK) {
            err = pg_pyro_multipart_parse(*scratch, body, len, boundary, &parts, &n_parts,
                                          &job->st);
        }
        if (err != PG_ERR_OK) {
            return status_prefix(&job->st, "multipart body");
        }
        /* The three names looked for, in one pass (the first of each counts). */
        const struct pg_pyro_part *prev = NULL, *stc = NULL, *profile = NULL;
        for (size_t i = 0; i < n_parts; i++) {
            const char *nm = parts[i].name;
            const struct pg_pyro_part **slot = strcmp(nm, "profile") == 0     ? &profile
                                               : strcmp(nm, "prev_profile") == 0 ? &prev
                                               : strcmp(nm, "sample_type_config") == 0 ? &stc
                                                                                       : NULL;
            if (slot != NULL && *slot == NULL) {
                *slot = &parts[i];
            }
        }
        p = prev;
        if (p != NULL && p->len > 0) {
            /* Pyroscope 1.x refuses it the same way (og/convert/pprof). */
            return pg_status_set(&job->st, PG_ERR_MALFORMED,
                                 "a prev_profile part (cumulative profiles of old clients) is not "
                                 "supported, as in Pyroscope 1.x: update the client (current SDKs "
                                 "send deltas)");
        }
        p = stc;
        if (p != NULL) {
            struct pg_pyro_stc_entry *e;

            err = pg_pyro_stc_parse(job->arena, p->data, p->len, &e, &m->n_stc, &job->st);
            if (err != PG_ERR_OK) {
                return status_prefix(&job->st, "part sample_type_config");
            }
            m->stc = e;
        }
        p = profile;
        if (p == NULL) {
            return pg_status_set(&job->st, PG_ERR_MALFORMED,
                                 "multipart body has no \"profile\" part (%zu part%s)", n_parts,
                                 n_parts == 1 ? "" : "s");
        }
        prof = p->data;
        plen = p->len;
    }
    return pg_pprof_translate_owned(job->arena, scratch, prof, plen, &rx->topts, out, &job->stats,
                                    &job->st);
}

/* format=folded / lines: the text as a pprof of the type the name suffix
 * names (cpu when none), as Pyroscope's ingest adapter writes it. */
static enum pg_err ingest_text(struct rx *rx, struct rx_job *job, struct pg_arena **scratch,
                               const uint8_t *body, size_t len, enum pg_pyro_text_format fmt,
                               const char *suffix, const char *rate_s,
                               const struct pyro_meta *m, struct pg_otlp_request **out)
{
    const struct pg_pyro_type *t = pg_pyro_type_lookup(suffix ? suffix : "cpu",
                                                       strlen(suffix ? suffix : "cpu"));
    long long rate = rate_s != NULL ? atoll(rate_s) : 0;
    struct pg_pyro_folded_opts o = {0};
    uint8_t *pp;
    size_t pplen;
    enum pg_err err;

    if (t == NULL) {
        t = pg_pyro_type_lookup("cpu", 3);
    }
    o.sample_type = t->sample_type;
    o.sample_unit = t->sample_unit;
    if (t->sampled && rate > 0 && rate <= 1000000000) {
        /* Each count is one period of 1/sampleRate s. */
        o.sample_type = strcmp(t->metric, "wall") == 0 ? "wall" : "cpu";
        o.sample_unit = "nanoseconds";
        o.period_type = "cpu";
        o.period_unit = "nanoseconds";
        o.period = 1000000000 / rate;
        o.scale = o.period;
    }
    o.time_nanos = m->from_ns;
    o.duration_nanos = m->until_ns > m->from_ns ? m->until_ns - m->from_ns : 0;
    o.max_lines = rx->topts.limits.max_samples;
    o.max_depth = rx->topts.limits.max_stack_depth;
    err = pg_pyro_folded_to_pprof(*scratch, body, len, fmt, &o, &pp, &pplen, &job->st);
    if (err != PG_ERR_OK) {
        return status_prefix(&job->st, fmt == PG_PYRO_LINES ? "format=lines" : "format=folded");
    }
    return pg_pprof_translate_owned(job->arena, scratch, pp, pplen, &rx->topts, out, &job->stats,
                                    &job->st);
}

static enum pg_err translate_ingest(struct rx *rx, struct rx_job *job, struct pg_arena **scratch,
                                    const uint8_t *body, size_t len, struct pg_otlp_request **out)
{
    struct pyro_meta m = {0};
    const char *suffix = NULL;
    char *qv[Q_COUNT];
    enum pyro_format fmt;
    enum pg_err err;

    pg_pyro_query_parse(job->arena, job->query, query_keys, Q_COUNT, qv);
    err = ingest_meta(job, qv, &m, &suffix, &job->st);
    if (err != PG_ERR_OK) {
        return err;
    }
    fmt = pg_pyro_format(qv[Q_FORMAT], job->ctype);
    switch (fmt) {
    case PYRO_FORMAT_PPROF:
        err = ingest_pprof(rx, job, scratch, body, len, &m, out);
        break;
    case PYRO_FORMAT_FOLDED:
    case PYRO_FORMAT_LINES:
        m.select_type = NULL; /* the text is of that type already */
        err = ingest_text(rx, job, scratch, body, len,
                          fmt == PYRO_FORMAT_LINES ? PG_PYRO_LINES : PG_PYRO_FOLDED, suffix,
                          qv[Q_RATE], &m, out);
        break;
    default: /* on_head refused it */
        err = pg_status_set(&job->st, PG_ERR_UNSUPPORTED, "unsupported format");
    }
    if (err != PG_ERR_OK) {
        return err;
    }
    return pg_pyro_apply(job->arena, *out, &m, &job->st);
}

/* The Push API: every raw sample of every series is one pprof; the series'
 * labels are its metadata; all of them become one request. */
static enum pg_err translate_push(struct rx *rx, struct rx_job *job, struct pg_arena **scratch,
                                  const uint8_t *body, size_t len, struct pg_otlp_request **out)
{
    struct pg_arena *a = job->arena;
    struct pg_pyro_push push;
    struct pg_otlp_request **reqs;
    size_t n = 0, total = 0;
    enum pg_err err;

    err = job->connect_json
              ? pg_pyro_push_decode_json(*scratch, (const char *)body, len, &push, &job->st)
              : pg_pyro_push_decode_proto(*scratch, body, len, &push, &job->st);
    if (err != PG_ERR_OK) {
        return err; /* the message names the field */
    }
    for (size_t i = 0; i < push.n_series; i++) {
        total += push.series[i].n_samples;
    }
    reqs = pg_arena_alloc(*scratch, (total + 1) * sizeof(*reqs));
    if (reqs == NULL) {
        return pg_status_set(&job->st, PG_ERR_NOMEM, "no memory for %zu raw samples", total);
    }
    for (size_t i = 0; i < push.n_series; i++) {
        const struct pg_pyro_series *se = &push.series[i];
        struct pg_pyro_label *labels = pg_arena_alloc(a, (se->n_labels + 1) * sizeof(*labels));
        struct pyro_meta m = {0};

        if (labels == NULL) {
            return pg_status_set(&job->st, PG_ERR_NOMEM, "no memory for labels");
        }
        for (size_t l = 0; l < se->n_labels; l++) { /* the scratch arena dies before the batch */
            labels[l].name = pg_arena_strdup(a, se->labels[l].name);
            labels[l].value = pg_arena_strdup(a, se->labels[l].value);
            if (labels[l].name == NULL || labels[l].value == NULL) {
                return pg_status_set(&job->st, PG_ERR_NOMEM, "no memory for labels");
            }
        }
        m.labels = labels;
        m.n_labels = se->n_labels;
        for (size_t l = 0; l < se->n_labels; l++) {
            if (strcmp(labels[l].name, "pyroscope_spy") == 0) {
                m.spy = labels[l].value;
            }
        }
        for (size_t s = 0; s < se->n_samples; s++) {
            struct pg_translate_stats ts = {0};
            char where[64];

            err = pg_pprof_translate(a, se->samples[s].raw_profile, se->samples[s].len,
                                     &rx->topts, &reqs[n], &ts, &job->st);
            if (err == PG_ERR_OK) {
                err = pg_pyro_apply(a, reqs[n], &m, &job->st);
            }
            if (err != PG_ERR_OK) {
                snprintf(where, sizeof(where), "series[%zu].samples[%zu]", i, s);
                return status_prefix(&job->st, where);
            }
            stats_add(&job->stats, &ts);
            n++;
        }
    }
    if (n == 0) {
        return pg_status_set(&job->st, PG_ERR_MALFORMED, "PushRequest holds no raw sample");
    }
    err = pg_pyro_merge(a, *scratch, reqs, n, out, &job->st);
    pg_arena_destroy(*scratch);
    *scratch = NULL;
    return err;
}

enum pg_err pg_pyro_translate(struct rx *rx, struct rx_job *job, struct pg_arena **body_arena,
                              const uint8_t *body, size_t len, struct pg_otlp_request **out)
{
    if (job->route == RX_ROUTE_PUSH) {
        return translate_push(rx, job, body_arena, body, len, out);
    }
    return translate_ingest(rx, job, body_arena, body, len, out);
}
