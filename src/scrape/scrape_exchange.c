/* SPDX-License-Identifier: Apache-2.0
 * One scrape of a target: the HTTP exchange (request, auth, redirects), the
 * response checks and the delivery of its profile to the pipeline. The
 * targets and their schedule are scrape.c's. Ownership: each scrape's profile
 * lives in its own arena, which the batch takes over. */
#include "scrape/scrape_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "core/arena.h"
#include "core/base64.h"
#include "core/clock.h"
#include "core/file_read.h"
#include "core/hostport.h"
#include "pipeline/batch.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/utf8.h"
#include "core/vec.h"
#include "http/tls_client.h"
#include "http/client.h"
#include "otlp/otlp_build.h"

/* ---- one scrape ---------------------------------------------------------- */

/* @src into @dst (capped, always terminated), every byte that starts no
 * valid UTF-8 sequence, and every control byte, as the four characters \xHH. */
static void escape_bytes(char *dst, size_t cap, const char *src)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *p = (const uint8_t *)src;
    size_t n = strlen(src), o = 0;

    for (size_t i = 0; i < n;) {
        size_t k = pg_utf8_seq(p + i, n - i);

        if (k == 0 || (k == 1 && (p[i] < 0x20 || p[i] == 0x7f))) {
            if (o + 4 >= cap) {
                break;
            }
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[p[i] >> 4];
            dst[o++] = hex[p[i] & 15];
            i++;
            continue;
        }
        if (o + k >= cap) {
            break;
        }
        memcpy(dst + o, p + i, k);
        o += k;
        i += k;
    }
    dst[o] = '\0';
}

static void record_failure(struct pg_scrape_target *t, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void record_failure(struct pg_scrape_target *t, const char *reason, const char *fmt, ...)
{
    char l[1200];
    va_list ap;
    bool was_up = t->health != 0;
    struct pg_metric *m;

    snprintf(l, sizeof(l), "%s,reason=\"%s\"", t->mlabels, reason);
    m = pg_metric_counter("pprofgate_scrape_failures_total",
                          "Failed scrapes by reason (timeout, connect, tls, read, "
                          "bad_response, http_4xx, http_5xx, busy, empty, parse, too_large, "
                          "no_sample_type, pipeline).",
                          l);
    pg_metric_add(m, 1);
    pg_scrape_track_series(t, m); /* removed with the target's other series */
    va_start(ap, fmt);
    vsnprintf(l, sizeof(l), fmt, ap);
    va_end(ap);
    /* What a target sent (a Location, a body excerpt) reaches /targets and
     * the log: bytes that are not printable UTF-8 are written as \xHH. */
    escape_bytes(t->last_error, sizeof(t->last_error), l);
    t->health = 0;
    pg_metric_set(t->m_up, 0);
    /* Log transitions at warn, repeats at debug: a dead target does not
     * flood the log. */
    if (was_up) {
        pg_log_warn(LOG_NAME, "scrape %s (job %s) failed [%s]: %s", t->url, t->job->job_name,
                    reason, t->last_error);
    } else {
        pg_log_debug(LOG_NAME, "scrape %s failed [%s]: %s", t->url, reason, t->last_error);
    }
}

/* Keeps only the profiles whose sample type is listed in keep_sample_type. */
static size_t keep_types(const struct pg_scrape_profile *p, struct pg_otlp_request *req)
{
    size_t left = 0;
    const struct pg_otlp_dict *d = req->dictionary;

    for (size_t r = 0; r < req->n_resource_profiles; r++) {
        struct pg_otlp_resprof *rp = req->resource_profiles[r];

        for (size_t sc = 0; sc < rp->n_scope_profiles; sc++) {
            struct pg_otlp_scopeprof *sp = rp->scope_profiles[sc];
            size_t k = 0;

            for (size_t i = 0; i < sp->n_profiles; i++) {
                const struct pg_otlp_valuetype *vt = sp->profiles[i]->sample_type;
                const char *type = "", *unit = "";
                bool keep = p->n_keep == 0;

                if (vt != NULL && d != NULL && (size_t)vt->type_strindex < d->n_string_table &&
                    (size_t)vt->unit_strindex < d->n_string_table) {
                    type = d->string_table[vt->type_strindex];
                    unit = d->string_table[vt->unit_strindex];
                }
                for (size_t j = 0; j < p->n_keep && !keep; j++) {
                    keep = strcmp(p->keep[j].type, type) == 0 &&
                           (p->keep[j].unit == NULL || strcmp(p->keep[j].unit, unit) == 0);
                }
                if (keep) {
                    sp->profiles[k++] = sp->profiles[i];
                }
            }
            sp->n_profiles = k;
            left += k;
        }
    }
    return left;
}

static bool add_attrs(struct pg_arena *a, const struct pg_labels *attrs,
                      struct pg_otlp_request *req)
{
    for (size_t i = 0; i < req->n_resource_profiles; i++) {
        struct pg_otlp_resprof *rp = req->resource_profiles[i];
        struct pg_otlp_resource *r;
        struct pg_otlp_kv **kv;

        if (rp->resource == NULL) {
            rp->resource = pg_arena_zalloc(a, sizeof(*rp->resource));
            if (rp->resource == NULL) {
                return false;
            }
            opentelemetry__proto__resource__v1__resource__init(rp->resource);
        }
        r = rp->resource;
        kv = pg_arena_alloc(a, (r->n_attributes + attrs->n + 1) * sizeof(*kv));
        if (kv == NULL) {
            return false;
        }
        if (r->n_attributes > 0) {
            memcpy(kv, r->attributes, r->n_attributes * sizeof(*kv));
        }
        for (size_t j = 0; j < attrs->n; j++) {
            if ((kv[r->n_attributes + j] = pg_otlp_kv_str(a, attrs->v[j].name,
                                                          attrs->v[j].value)) == NULL) {
                return false;
            }
        }
        r->attributes = kv;
        r->n_attributes += attrs->n;
    }
    return true;
}

/* One scraped body's decode and translation, run in the receiver's
 * background lane (below every push) when it has workers, else inline.
 * Owns its body copy and arena until done; the target stays allocated
 * (pg_scrape_target_free defers to done) while its work exists. */
struct scrape_work {
    struct pg_work w;                    /* first: the lane's view */
    struct pg_scrape_target *t;          /* borrowed; t->work points back */
    uint8_t *body;                       /* owned copy (the response dies with its callback) */
    size_t len;
    struct pg_arena *a;                  /* owned until it becomes the batch's */
    struct pg_otlp_request *req;         /* in @a */
    enum pg_err err;
    struct pg_status st;
    const char *reason;                  /* failure reason, or NULL */
};

/* Worker thread (or inline): reads only @sw, the target's config, attrs
 * and profile (neither changes while the work exists) and the scraper's
 * read-only options. */
static void work_run(struct pg_work *w)
{
    struct scrape_work *sw = (struct scrape_work *)w;
    struct pg_scrape_target *t = sw->t;
    struct pg_translate_stats stats;

    memset(&stats, 0, sizeof(stats));
    sw->err = pg_pprof_translate(sw->a, sw->body, sw->len, &t->s->opts, &sw->req, &stats, &sw->st);
    free(sw->body);
    sw->body = NULL;
    if (sw->err != PG_ERR_OK) {
        sw->reason = sw->err == PG_ERR_LIMIT ? "too_large" : sw->err == PG_ERR_NOMEM ? "internal"
                                                                                      : "parse";
    } else if (t->prof->n_keep > 0 && keep_types(t->prof, sw->req) == 0) {
        sw->reason = "no_sample_type";
        pg_status_set(&sw->st, PG_ERR_MALFORMED,
                      "the profile has none of the sample types in keep_sample_type");
    } else if (!add_attrs(sw->a, &t->attrs, sw->req)) {
        sw->reason = "internal";
        pg_status_set(&sw->st, PG_ERR_NOMEM, "out of memory adding resource attributes");
    }
}

/* Loop: the batch into the pipeline, the target's health and metrics. */
static void work_done(struct pg_work *w)
{
    struct scrape_work *sw = (struct scrape_work *)w;
    struct pg_scrape_target *t = sw->t;
    struct pg_scraper *s = t->s;
    struct pg_status st = {0};
    bool dead = t->dead;
    size_t len = sw->len, records;
    struct pg_batch *b;
    enum pg_err err;

    t->work = NULL;
    s->works--;
    if (sw->reason != NULL) {
        pg_arena_destroy(sw->a);
        if (!dead) {
            record_failure(t, sw->reason, "%s", pg_status_text(&sw->st));
        }
        goto out;
    }
    b = pg_batch_new(sw->a, sw->req); /* takes the arena, also on failure */
    if (b == NULL) {
        if (!dead) {
            record_failure(t, "internal", "out of memory for a batch");
        }
        goto out;
    }
    b->received_unix_nano = (uint64_t)pg_real_ns();
    b->raw_bytes = len;
    b->receiver_id = s->receiver_id;
    b->default_service_name = s->default_service_name;
    records = pg_batch_sample_count(b);
    err = pg_consumer_consume(s->next, b, &st); /* takes our reference */
    if (err != PG_ERR_OK) {
        pg_metric_add(s->m_refused, records);
        if (!dead) {
            record_failure(t, "pipeline", "the pipeline refused the profile: %s",
                           pg_status_text(&st));
        }
        goto out;
    }
    pg_metric_add(s->m_accepted, records);
    if (dead) {
        goto out; /* its series went with it; the profile still went on */
    }
    pg_metric_add(t->m_samples, records);
    if (t->health != 1) {
        pg_log_info(LOG_NAME, "scraping %s (job %s, %s): up", t->url, t->job->job_name,
                    t->prof->name);
    }
    t->health = 1;
    t->last_error[0] = '\0';
    pg_metric_set(t->m_up, 1);
out:
    free(sw);
    if (dead) {
        pg_scrape_target_free(t); /* deferred while the work ran */
    } else if (t->pending && !s->stopped) {
        t->pending = false;
        pg_scrape_start_target(t);
    }
}

void pg_scrape_work_cancel(struct pg_scraper *s)
{
    struct pg_work *w = s->lane.cancel != NULL ? s->lane.cancel(s->lane.arg, s) : NULL;

    while (w != NULL) {
        struct scrape_work *sw = (struct scrape_work *)w;

        w = w->next;
        sw->t->work = NULL;
        s->works--;
        if (sw->t->dead) {
            pg_scrape_target_free(sw->t);
        }
        free(sw->body);
        pg_arena_destroy(sw->a);
        free(sw);
    }
}

static void deliver(struct pg_scrape_target *t, const uint8_t *body, size_t len)
{
    struct pg_scraper *s = t->s;
    struct scrape_work *sw = calloc(1, sizeof(*sw));

    if (sw == NULL || (sw->a = pg_arena_create(s->max_body * ARENA_FACTOR)) == NULL ||
        (sw->body = malloc(len)) == NULL) {
        if (sw != NULL) {
            pg_arena_destroy(sw->a);
        }
        free(sw);
        record_failure(t, "internal", "out of memory");
        return;
    }
    memcpy(sw->body, body, len);
    sw->len = len;
    sw->t = t;
    sw->w.run = work_run;
    sw->w.done = work_done;
    sw->w.owner = s;
    t->work = &sw->w;
    s->works++;
    if (s->lane.submit == NULL || !s->lane.submit(s->lane.arg, s->host->base, &sw->w)) {
        work_run(&sw->w);
        work_done(&sw->w);
    }
}

/* Body text for an error message: printable prefix only. */
static void snippet(char *dst, size_t cap, const uint8_t *b, size_t n)
{
    size_t i = 0;

    for (size_t k = 0; k < n && i + 1 < cap && k < 160; k++) {
        dst[i++] = (b[k] >= 0x20 && b[k] < 0x7f) ? (char)b[k] : ' ';
    }
    while (i > 0 && dst[i - 1] == ' ') {
        i--;
    }
    dst[i] = '\0';
}

static void start_request(struct pg_scrape_target *t, bool hop);

/* Copies @n bytes of a redirect's path and query, adding the leading "/"
 * an absolute URL may omit ("http://h:1?x=1"). */
static char *dup_path(const char *p, size_t n)
{
    char *out = malloc(n + 2);

    if (out != NULL) {
        snprintf(out, n + 2, "%s%.*s", p[0] == '/' ? "" : "/", (int)n, p);
    }
    return out;
}

/* Follows a 301/302/303/307/308 as Go's client does (up to 10, inside the
 * scrape timeout): a path, or an absolute URL of the same scheme (another
 * scheme would need another TLS setup). Credentials go only to the target's
 * own host and port, as Go drops them for another host. 1 when a new
 * request is under way, 2 when a failure was recorded, 0 when @r is not a
 * redirect to follow. */
static int follow_redirect(struct pg_scrape_target *t, const struct pg_http_response *r)
{
    const char *loc = r->location, *scheme = t->tls ? "https://" : "http://";
    char addr[300], *host = NULL;
    const char *path;
    unsigned port;
    size_t sl = strlen(scheme);

    if (!t->job->client.follow_redirects || loc == NULL || t->s->stopped ||
        (r->status != 301 && r->status != 302 && r->status != 303 && r->status != 307 &&
         r->status != 308)) {
        return 0;
    }
    if (t->hops >= 10) {
        record_failure(t, "http_other", "stopped after 10 redirects (the last: HTTP %d to %s)",
                       r->status, loc);
        return 2;
    }
    if (loc[0] == '/' && loc[1] != '/') {
        path = loc;
        host = strdup(t->hop_host ? t->hop_host : t->host);
        port = t->hop_host ? t->hop_port : t->port;
    } else if (strncasecmp(loc, scheme, sl) == 0) {
        const char *end = loc + sl + strcspn(loc + sl, "/?#");

        if ((size_t)(end - (loc + sl)) >= sizeof(addr) - 8 || end == loc + sl) {
            return 0;
        }
        snprintf(addr, sizeof(addr), "%.*s", (int)(end - (loc + sl)), loc + sl);
        pg_scrape_add_port(addr, sizeof(addr), t->tls ? "https" : "http");
        if (!pg_scrape_split_target(addr, &host, &port)) {
            free(host);
            return 0;
        }
        path = end; /* "" or "?q" get a leading "/" below */
    } else {
        return 0; /* another scheme or a relative path: counted as a 3xx */
    }
    if (host == NULL) {
        return 0;
    }
    free(t->hop_host);
    free(t->hop_pq);
    t->hop_host = host;
    t->hop_port = port;
    t->hop_pq = dup_path(path, strcspn(path, "#"));
    t->hops++;
    if (t->hop_pq == NULL) {
        return 0;
    }
    pg_log_debug(LOG_NAME, "%s: HTTP %d, following to %s", t->url, r->status, loc);
    start_request(t, true); /* records its own failure */
    return t->call != NULL ? 1 : 2;
}

static void on_response(void *arg, const struct pg_http_response *r)
{
    struct pg_scrape_target *t = arg;
    struct pg_scraper *s = t->s;
    char text[200];
    int hop;

    t->call = NULL;
    pg_scrape_inflight_del(t);
    hop = r->fail == PG_HTTP_OK ? follow_redirect(t, r) : 0;
    if (hop == 1) {
        return;
    }
    free(t->hop_host);
    free(t->hop_pq);
    t->hop_host = t->hop_pq = NULL;
    t->hops = 0;
    t->last_duration = (double)(pg_mono_ns() - t->started_ns) / 1e9;
    pg_metric_observe(t->m_dur, t->last_duration);
    pg_metric_add(t->m_bytes, r->len);
    if (hop == 2) {
        /* recorded by follow_redirect */
    } else if (r->fail != PG_HTTP_OK) {
        record_failure(t, pg_http_fail_name(r->fail), "%s", r->why);
    } else if (r->status >= 200 && r->status < 300) {
        if (r->len == 0) {
            record_failure(t, "empty", "HTTP %d with an empty body", r->status);
        } else {
            deliver(t, r->body, r->len);
        }
    } else {
        snippet(text, sizeof(text), r->body, r->len);
        if (r->status == 500 && strstr(text, "already in use") != NULL) {
            /* Go allows one CPU profile per process: someone else holds it. */
            record_failure(t, "busy", "target busy (HTTP 500%s): %s",
                           r->go_pprof ? ", X-Go-Pprof" : "", text);
        } else if (r->status == 400 && strstr(text, "WriteTimeout") != NULL) {
            record_failure(t, "http_4xx",
                           "HTTP 400: %s (lower seconds or raise the target's WriteTimeout)", text);
        } else if (r->status >= 300 && r->status < 400 && r->location != NULL) {
            record_failure(t, "http_other", "HTTP %d to %s: not followed (%s)", r->status,
                           r->location,
                           t->job->client.follow_redirects ? "another scheme or a relative path"
                                                           : "follow_redirects: false");
        } else {
            record_failure(t, r->status >= 500 ? "http_5xx" : r->status >= 400 ? "http_4xx"
                                                                                : "http_other",
                           "HTTP %d: %s", r->status, text);
        }
    }
    if (t->pending && t->work == NULL && !s->stopped) {
        t->pending = false; /* else work_done starts it */
        pg_scrape_start_target(t);
    }
}

void pg_scrape_inflight_add(struct pg_scrape_target *t)
{
    struct pg_scrape_target **b = &t->s->inflight[t->url_hash % INFLIGHT_BUCKETS];

    t->next_inflight = *b;
    *b = t;
    t->s->in_flight++;
}

void pg_scrape_inflight_del(struct pg_scrape_target *t)
{
    for (struct pg_scrape_target **pp = &t->s->inflight[t->url_hash % INFLIGHT_BUCKETS];
         *pp != NULL;
         pp = &(*pp)->next_inflight) {
        if (*pp == t) {
            *pp = t->next_inflight;
            t->s->in_flight--;
            return;
        }
    }
}

bool pg_scrape_url_in_flight(const struct pg_scrape_target *self)
{
    for (const struct pg_scrape_target *t = self->s->inflight[self->url_hash % INFLIGHT_BUCKETS];
         t != NULL;
         t = t->next_inflight) {
        if (t != self && t->url_hash == self->url_hash && strcmp(t->url, self->url) == 0) {
            return true;
        }
    }
    return false;
}

void pg_scrape_start_target(struct pg_scrape_target *t)
{
    start_request(t, false);
}

/* @hop: a redirect of the scrape under way (same start time and count). */
static void start_request(struct pg_scrape_target *t, bool hop)
{
    struct pg_scraper *s = t->s;
    const struct pg_scrape_client *c = &t->job->client;
    struct pg_http_header hdrs[34];
    size_t nh = 0;
    char auth[MAX_AUTH_FILE + 64], secret[MAX_AUTH_FILE], pair[2 * 512 + 2];
    struct pg_http_get_opts o;
    struct pg_status st = {0};

    memset(&o, 0, sizeof(o));
    auth[0] = '\0';
    if (c->credentials_file != NULL || c->credentials != NULL) {
        if (c->credentials_file != NULL &&
            !pg_file_read_small(c->credentials_file, secret, sizeof(secret), PG_TRIM_EOL,
                                NULL)) {
            record_failure(t, "auth", "cannot read credentials_file %s: %s", c->credentials_file,
                           strerror(errno));
            return;
        }
        snprintf(auth, sizeof(auth), "%s %s", c->auth_type ? c->auth_type : "Bearer",
                 c->credentials_file ? secret : c->credentials);
    } else if (c->bearer_token_file != NULL || c->bearer_token != NULL) {
        if (c->bearer_token_file != NULL &&
            !pg_file_read_small(c->bearer_token_file, secret, sizeof(secret), PG_TRIM_EOL,
                                NULL)) {
            record_failure(t, "auth", "cannot read bearer_token_file %s: %s",
                           c->bearer_token_file, strerror(errno));
            return;
        }
        snprintf(auth, sizeof(auth), "Bearer %s", c->bearer_token_file ? secret : c->bearer_token);
    } else if (c->basic_user != NULL) {
        char enc[sizeof(pair) * 2];

        if (c->basic_password_file != NULL &&
            !pg_file_read_small(c->basic_password_file, secret, 512, PG_TRIM_EOL, NULL)) {
            record_failure(t, "auth", "cannot read password_file %s: %s", c->basic_password_file,
                           strerror(errno));
            return;
        }
        snprintf(pair, sizeof(pair), "%.511s:%.511s", c->basic_user,
                 c->basic_password_file ? secret : c->basic_password ? c->basic_password : "");
        (void)pg_base64_encode((const uint8_t *)pair, strlen(pair), enc, sizeof(enc));
        snprintf(auth, sizeof(auth), "Basic %s", enc);
    }
    if (auth[0] != '\0' && (t->hop_host == NULL || (strcmp(t->hop_host, t->host) == 0 &&
                                                     t->hop_port == t->port))) {
        hdrs[nh++] = (struct pg_http_header){"Authorization", auth};
    }
    for (size_t i = 0; i < c->headers.n && nh < 34; i++) {
        hdrs[nh++] = (struct pg_http_header){c->headers.keys[i], c->headers.values[i]};
    }
    o.host = t->hop_host ? t->hop_host : t->host;
    o.port = t->hop_host ? t->hop_port : t->port;
    o.path_query = t->hop_host ? t->hop_pq : t->path_query;
    o.timeout_ns = t->job->timeout_ns;
    if (hop) {
        /* The scrape timeout covers the whole chain. */
        o.timeout_ns -= pg_mono_ns() - t->started_ns;
        if (o.timeout_ns <= 0) {
            record_failure(t, "timeout", "timed out following redirects");
            return;
        }
    }
    o.max_body = s->max_body;
    o.headers = hdrs;
    o.n_headers = nh;
    if (t->tls) {
        struct pg_scrape_job_state *js = &s->jobs[t->job_index];

        if (js->ssl == NULL) {
            struct pg_tls_client_config tc = {c->ca_file, c->cert_file, c->key_file,
                                              c->insecure_skip_verify};

            js->ssl = pg_tls_client_ctx_new(&tc, &st);
            if (js->ssl == NULL) {
                record_failure(t, "tls", "%s", pg_status_text(&st));
                return;
            }
        }
        o.ssl_ctx = js->ssl;
        o.server_name = c->server_name;
        o.verify = !c->insecure_skip_verify;
    }
    if (!hop) {
        t->started_ns = pg_mono_ns();
        t->last_unix_ms = pg_real_ns() / 1000000;
    }
    t->call = pg_http_get(s->host->base, &o, on_response, t, &st);
    if (t->call == NULL) {
        record_failure(t, "connect", "%s", pg_status_text(&st));
        return;
    }
    if (!hop) {
        t->scrapes++;
        pg_metric_add(t->m_scrapes, 1);
    }
    pg_scrape_inflight_add(t);
}
