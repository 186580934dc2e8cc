/* SPDX-License-Identifier: Apache-2.0
 * Receiver `pyroscope`: what Pyroscope SDKs and agents push (POST /ingest:
 * pprof in a multipart form or raw, folded, lines; the Push API
 * /push.v1.PusherService/Push, Connect unary, protobuf or JSON) into the
 * pipeline as OTLP Profiles. Everything but the route's decode is the pprof
 * receiver's: the same `server:` keys, listener, loops, admission, workers,
 * held queue and metrics (pprof.c, pprof_handler.c, pprof_workers.c,
 * pprof_jobs.c), and
 * the same listener when a pprof receiver names the same endpoint
 * (rx_share.c). This file is the component and the route's head checks and
 * answers; the decode is pyroscope_ingest.c, the mapping pyroscope_map.c
 * (docs/pyroscope.md). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <event2/http.h>

#include "http/http_parse.h"
#include "receiver/pyroscope_internal.h"

#define PROTO_CTYPE "application/proto"
#define JSON_CTYPE "application/json"

enum pyro_format pg_pyro_format(const char *format, const char *ctype)
{
    if (format != NULL && format[0] != '\0') {
        return strcmp(format, "pprof") == 0    ? PYRO_FORMAT_PPROF
               : strcmp(format, "folded") == 0 ? PYRO_FORMAT_FOLDED
               : strcmp(format, "lines") == 0  ? PYRO_FORMAT_LINES
                                               : PYRO_FORMAT_UNSUPPORTED;
    }
    if (ctype == NULL) {
        return PYRO_FORMAT_FOLDED;
    }
    if (strncasecmp(ctype, "multipart/form-data", 19) == 0) {
        return PYRO_FORMAT_PPROF;
    }
    if (strstr(ctype, "+lines") != NULL) {
        return PYRO_FORMAT_LINES;
    }
    if (strstr(ctype, "+trie") != NULL || strstr(ctype, "+tree") != NULL) {
        return PYRO_FORMAT_UNSUPPORTED;
    }
    return PYRO_FORMAT_FOLDED;
}

/* The raw (not decoded) value of @key in @q, copied to @out (cut to fit):
 * the first "key=" that starts a parameter. One strstr over the query
 * (SDK pushes have none: the whole query is passed once). */
static bool query_raw(const char *q, const char *key, char *out, size_t cap)
{
    char pat[32];
    size_t plen = strlen(key) + 1;
    const char *hit = q;

    if (plen >= sizeof(pat)) {
        return false;
    }
    memcpy(pat, key, plen - 1);
    pat[plen - 1] = '=';
    pat[plen] = '\0';
    while (hit != NULL && (hit = strstr(hit, pat)) != NULL) {
        if (hit == q || hit[-1] == '&') {
            size_t n = strcspn(hit + plen, "&");

            snprintf(out, cap, "%.*s", (int)n, hit + plen);
            return true;
        }
        hit++;
    }
    return false;
}

/* The media type of a Content-Type value is @type (parameters ignored). */
static bool media_is(const char *ctype, const char *type)
{
    size_t n = strlen(type);

    return ctype != NULL && strncasecmp(ctype, type, n) == 0 &&
           (ctype[n] == '\0' || ctype[n] == ';' || ctype[n] == ' ');
}

/* rx->check_head: what can be refused before the body is read. */
static enum pg_err pyro_check_head(struct rx *rx, enum rx_route route,
                                   const struct pg_httpd_req *req, struct pg_status *st)
{
    const char *ctype = pg_http_find_header(req->in, "Content-Type");

    (void)rx;
    if (route == RX_ROUTE_INGEST) {
        const char *q = strchr(req->target, '?');
        char format[40] = "";
        enum pyro_format f;

        (void)query_raw(q != NULL ? q + 1 : NULL, "format", format, sizeof(format));
        f = pg_pyro_format(format, ctype);
        if (f == PYRO_FORMAT_UNSUPPORTED) {
            return pg_status_set(st, PG_ERR_UNSUPPORTED,
                                 "format %s is not supported; supported: pprof (multipart form "
                                 "or raw), folded, lines",
                                 format[0] != '\0' ? format : ctype);
        }
        return PG_ERR_OK;
    }
    if (route == RX_ROUTE_PUSH) {
        const char *ver = pg_http_find_header(req->in, "Connect-Protocol-Version");

        if (!media_is(ctype, PROTO_CTYPE) && !media_is(ctype, JSON_CTYPE)) {
            return pg_status_set(st, PG_ERR_UNSUPPORTED,
                                 "Content-Type %s is not supported; the Push API takes " PROTO_CTYPE
                                 " or " JSON_CTYPE " (Connect unary)",
                                 ctype != NULL ? ctype : "(none)");
        }
        if (ver != NULL && strcmp(ver, "1") != 0) {
            return pg_status_set(st, PG_ERR_MALFORMED,
                                 "Connect-Protocol-Version %s is not supported; 1 is", ver);
        }
    }
    return PG_ERR_OK;
}

/* rx->job_done: /ingest answers 200 with no body (as Pyroscope does); the
 * Push API an empty PushResponse in the request's encoding; errors are the
 * handler's (Connect's JSON form on the Push route). */
static void pyro_job_done(struct rx_job *job, enum pg_err err, const struct pg_status *st)
{
    if (err != PG_ERR_OK) {
        pg_rx_fail(job->loop, job->rx, job->route, job->req, err, st);
    } else if (job->route == RX_ROUTE_PUSH) {
        pg_rx_reply_body(job->loop, job->rx, job->req, 200,
                         job->connect_json ? JSON_CTYPE : PROTO_CTYPE,
                         job->connect_json ? "{}" : "", job->connect_json ? 2 : 0);
    } else {
        pg_rx_reply_body(job->loop, job->rx, job->req, 200, NULL, NULL, 0);
    }
}

/* The tenant header is always kept (pprof_handler.c's tenant_metadata),
 * so a pipeline reading metadata behind this receiver is no mistake. */
static const char *pyro_metadata_use(void *state)
{
    const char *all = pg_rx_metadata_use(state);

    return all != NULL ? all : "X-Scope-OrgID (always)";
}

static enum pg_err pyro_create(const struct pg_component_ctx *ctx, void **state)
{
    enum pg_err err = pg_rx_create(ctx, pg_pyroscope_rx_fields, RX_FLAVOR_PYROSCOPE, state);
    struct rx *rx = *state;

    if (err != PG_ERR_OK) {
        return err;
    }
    rx->translate = pg_pyro_translate;
    rx->check_head = pyro_check_head;
    rx->job_done = pyro_job_done;
    return PG_ERR_OK;
}

const struct pg_component_ops pg_receiver_pyroscope = {
    .type = "pyroscope",
    .alias = NULL,
    .kind = PG_KIND_RECEIVER,
    .fields = pg_pyroscope_rx_fields,
    .doc = "Pyroscope SDK and agent pushes: POST /ingest (pprof, folded, lines) and the Push API "
           "(Connect); shares :4040 with a pprof receiver",
    .create = pyro_create,
    .start = pg_rx_start,
    .process = NULL,
    .consume = NULL,
    .shutdown = pg_rx_shutdown,
    .idle = pg_rx_idle,
    .destroy = pg_rx_destroy,
    .metadata_use = pyro_metadata_use,
};
