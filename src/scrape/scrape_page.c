/* SPDX-License-Identifier: Apache-2.0
 * The /targets page. 25 000 targets are ~10 MB of JSON and tens of ms of
 * formatting (escaping every byte), too long for the loop the targets and
 * pushes live on; so the loop takes a snapshot, a flat copy of each
 * target's fields (memcpy only), and the JSON is written from it on any
 * thread. Ownership: a snapshot owns one buffer; nothing in it points into
 * the scraper, so it outlives target churn and reloads. */
#include "scrape/scrape.h"
#include "scrape/scrape_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

/* One target in the buffer: this header (memcpy'd: the buffer is not
 * aligned), then NUL-terminated strings: job, profile, url, source,
 * last_error, then n_labels name/value pairs. */
struct rec {
    int64_t last_unix_ms;
    double last_duration;
    uint64_t scrapes, skipped;
    uint32_t n_labels;
    int8_t health;
    uint8_t in_flight;
};

struct pg_scrape_page {
    char *buf; /* owned: the records */
    size_t len, cap;
    size_t n;  /* records */
    size_t dropped;
};

static bool put(struct pg_scrape_page *p, const void *data, size_t n)
{
    if (p->len + n > p->cap) {
        size_t cap = p->cap ? p->cap : 64 * 1024;
        char *b;

        while (cap < p->len + n) {
            cap *= 2;
        }
        if ((b = realloc(p->buf, cap)) == NULL) {
            return false;
        }
        p->buf = b;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, data, n);
    p->len += n;
    return true;
}

static bool put_str(struct pg_scrape_page *p, const char *s)
{
    return put(p, s != NULL ? s : "", s != NULL ? strlen(s) + 1 : 1);
}

static bool put_target(struct pg_scrape_page *p, const struct pg_scrape_target *t)
{
    struct rec r = {
        .last_unix_ms = t->last_unix_ms,
        .last_duration = t->last_duration,
        .scrapes = t->scrapes,
        .skipped = t->skipped,
        .n_labels = (uint32_t)t->labels.n,
        .health = (int8_t)t->health,
        .in_flight = t->call != NULL,
    };
    bool ok = put(p, &r, sizeof(r)) && put_str(p, t->job->job_name) &&
              put_str(p, t->prof->name) && put_str(p, t->url) && put_str(p, t->source) &&
              put_str(p, t->last_error);

    for (size_t i = 0; ok && i < t->labels.n; i++) {
        ok = put_str(p, t->labels.v[i].name) && put_str(p, t->labels.v[i].value);
    }
    return ok;
}

struct pg_scrape_page *pg_scrape_page_snapshot(void)
{
    struct pg_scrape_page *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        return NULL;
    }
    for (const struct pg_scraper *s = pg_scrape_first_running(); s != NULL; s = s->next_global) {
        for (const struct pg_scrape_target *t = s->targets; t != NULL; t = t->next) {
            if (!put_target(p, t)) {
                pg_scrape_page_free(p);
                return NULL;
            }
            p->n++;
        }
        for (size_t i = 0; i < s->cfg->n_jobs; i++) {
            p->dropped += s->jobs[i].dropped;
        }
    }
    return p;
}

void pg_scrape_page_free(struct pg_scrape_page *p)
{
    if (p != NULL) {
        free(p->buf);
        free(p);
    }
}

/* Writes @s as a JSON string; returns the byte after its NUL. */
static const char *json_str(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);

    fputc('"', out);
    /* JSON must be UTF-8: a byte that starts no valid sequence is U+FFFD. */
    for (size_t i = 0; i < n;) {
        size_t k = pg_utf8_seq(p + i, n - i);

        if (k == 0) {
            fputs("\\ufffd", out);
            i++;
        } else if (p[i] == '"' || p[i] == '\\') {
            fprintf(out, "\\%c", p[i++]);
        } else if (p[i] < 0x20 || p[i] == 0x7f) {
            fprintf(out, "\\u%04x", p[i++]);
        } else {
            fwrite(p + i, 1, k, out);
            i += k;
        }
    }
    fputc('"', out);
    return s + n + 1;
}

void pg_scrape_page_json(const struct pg_scrape_page *p, FILE *out)
{
    const char *at = p->buf;

    fputs("{\"activeTargets\":[", out);
    for (size_t k = 0; k < p->n; k++) {
        struct rec r;
        const char *err;

        memcpy(&r, at, sizeof(r));
        at += sizeof(r);
        fputs(k == 0 ? "\n    {\"job\":" : ",\n    {\"job\":", out);
        at = json_str(out, at);
        fputs(",\"profile\":", out);
        at = json_str(out, at);
        fputs(",\"scrapeUrl\":", out);
        at = json_str(out, at);
        fputs(",\"source\":", out);
        at = json_str(out, at);
        err = at; /* written after health, as the page always had it */
        at += strlen(at) + 1;
        fputs(",\"labels\":{", out);
        for (uint32_t i = 0; i < r.n_labels; i++) {
            if (i) {
                fputc(',', out);
            }
            at = json_str(out, at);
            fputc(':', out);
            at = json_str(out, at);
        }
        fputs("},\"health\":", out);
        json_str(out, r.health == 1 ? "up" : r.health == 0 ? "down" : "unknown");
        fputs(",\"lastError\":", out);
        json_str(out, err);
        fprintf(out, ",\"lastScrapeUnixMs\":%lld,\"lastScrapeDurationSeconds\":%.6f,"
                     "\"scrapes\":%llu,\"skippedTicks\":%llu,\"inFlight\":%s}",
                (long long)r.last_unix_ms, r.last_duration, (unsigned long long)r.scrapes,
                (unsigned long long)r.skipped, r.in_flight ? "true" : "false");
    }
    fprintf(out, "\n  ],\"droppedTargets\":%zu}\n", p->dropped);
}
