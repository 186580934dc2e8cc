/* SPDX-License-Identifier: Apache-2.0
 * What the scrape files share (private to src/scrape): the scraper, its
 * targets and per-job state. scrape.c owns the targets and their schedule,
 * scrape_exchange.c runs one scrape (request, redirects, response, delivery). */
#ifndef PG_SCRAPE_INTERNAL_H
#define PG_SCRAPE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/metrics.h"
#include "scrape/htab.h"
#include "scrape/scrape.h"


#define LOG_NAME "receiver/pprof/scrape"
#define NS 1000000000LL
/* The batch arena may grow to this many times the body cap (as on the push path). */
#define ARENA_FACTOR 8
#define MAX_AUTH_FILE 8192
/* Buckets of the in-flight URL table (single flight per URL). */
#define INFLIGHT_BUCKETS 4096
/* Targets begun or freed per turn of the loop (about 10-30 us each). */
#define PACE_SLICE 256

/* One discovery source (a file group, a pod, a static group) of one job:
 * the unit pg_scraper_sync replaces, so a sync costs what that source holds. */
struct pg_scrape_source {
    struct pg_hnode h;                   /* in pg_scraper.sources, by job + name */
    size_t job_index;
    char *name;                          /* owned */
    struct pg_scrape_target *targets;    /* borrowed: chained by next_src */
    size_t n_targets, dropped;           /* dropped by relabeling at the last sync */
};

/* The self-metric series of one job/instance/profile label set; targets with
 * equal labels share them (a re-sourced target keeps its counters), and the
 * last one to go removes them. */
struct pg_scrape_mgroup {
    struct pg_hnode h;                   /* in pg_scraper.mgroups, by labels */
    size_t refs;
    char *labels;                        /* owned */
    struct pg_metric **series;           /* owned array; the series are the registry's */
    size_t n_series, cap_series;
};

struct pg_scrape_target {
    struct pg_hnode h;                   /* in pg_scraper.index, by identity */
    struct pg_scraper *s;                /* borrowed back-pointer */
    size_t job_index;
    const struct pg_scrape_job *job;     /* borrowed from the config */
    const struct pg_scrape_profile *prof;
    struct pg_scrape_source *src;        /* borrowed: the source that lists it */
    const char *source;                  /* borrowed: src->name */
    struct pg_labels labels;             /* owned: after relabeling, no "__" labels */
    struct pg_labels attrs;              /* owned: resource attributes */
    char *url, *host, *path_query;       /* owned */
    unsigned port;
    bool tls;
    uint64_t identity;
    uint64_t url_hash;
    struct pg_scrape_target *next_inflight; /* chain in pg_scraper.inflight while call != NULL */
    int64_t deadline_ns;                 /* next tick, monotonic */
    struct event *timer;                 /* owned */
    struct pg_http_call *call;           /* in flight, or NULL */
    int64_t started_ns;
    bool pending;                        /* a tick came during our own scrape: run next */
    char *hop_host, *hop_pq;             /* owned: where a redirect sent this scrape, or NULL */
    unsigned hop_port, hops;
    bool marked;                         /* sync: seen in the new group */
    int health;                          /* -1 unknown, 0 down, 1 up */
    char last_error[240];
    int64_t last_unix_ms;
    double last_duration;
    uint64_t skipped, scrapes;
    struct pg_metric *m_up, *m_dur, *m_bytes, *m_samples, *m_skipped, *m_scrapes;
    char mlabels[1024];                 /* metric label text of this target */
    struct pg_scrape_mgroup *mg;         /* borrowed (refcounted) once begun */
    struct pg_scrape_target *next, *prev; /* all targets */
    struct pg_scrape_target *next_src;   /* the source's targets */
};

/* Work a sync leaves for the loop, in order: begin a new target (metric
 * series, timer) or free a gone one. Paced in slices so a sync of thousands
 * of targets does not hold the loop. */
struct pg_scrape_op {
    struct pg_scrape_target *t;          /* borrowed (free: owned by the op) */
    bool free;
};

struct pg_scrape_job_state {
    SSL_CTX *ssl;                        /* owned; https jobs */
    size_t active, dropped;              /* kept current by pg_scraper_sync */
    struct pg_metric *m_active, *m_dropped;
};

struct pg_scraper {
    struct pg_host *host;                /* borrowed */
    struct pg_consumer *next;            /* borrowed */
    const struct pg_scrape_config *cfg;  /* borrowed */
    struct pg_translate_opts opts;
    const char *receiver_id;             /* borrowed */
    const char *default_service_name;    /* borrowed */
    size_t max_body;
    struct pg_scrape_target *targets;              /* owned list */
    struct pg_htab index;                /* targets by identity */
    struct pg_htab sources;              /* owned: struct pg_scrape_source */
    struct pg_htab mgroups;              /* owned: struct pg_scrape_mgroup */
    struct pg_scrape_op *ops;            /* owned: ops[ops_head..n_ops) pending */
    size_t n_ops, cap_ops, ops_head;
    struct event *pace;                  /* owned: runs the next slice of ops */
    struct pg_scrape_job_state *jobs;              /* owned, one per cfg job */
    struct pg_file_sd *file_sd;          /* owned */
    struct pg_k8s_sd *k8s_sd;            /* owned */
    size_t in_flight;
    /* borrowed: targets with a call, by URL hash */
    struct pg_scrape_target *inflight[INFLIGHT_BUCKETS];
    bool started, stopped;
    struct pg_metric *m_accepted, *m_refused;
    struct pg_scraper *next_global;
};

/* The in-flight URL table (scrape.c). */
void pg_scrape_inflight_add(struct pg_scrape_target *t);
void pg_scrape_inflight_del(struct pg_scrape_target *t);
/* "host" -> "host:80"/"host:443" by scheme; an address with a port is left alone. */
void pg_scrape_add_port(char *addr, size_t cap, const char *scheme);
/* A target's "host:port" / "[v6]:port" as a malloc'd host and a port. */
bool pg_scrape_split_target(const char *addr, char **host, unsigned *port);
/* Keeps @m (a series with @t's labels) for removal with @t's metric group. */
void pg_scrape_track_series(struct pg_scrape_target *t, struct pg_metric *m);
/* Starts one scrape of @t (scrape_exchange.c). */
void pg_scrape_start_target(struct pg_scrape_target *t);

#endif
