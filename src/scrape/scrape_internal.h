/* SPDX-License-Identifier: Apache-2.0
 * What the scrape files share (private to src/scrape): the types of the
 * scraper, its sources, targets and per-job state, and each file's entry
 * points. Calls go one way: scrape.c (lifecycle, /targets) -> scrape_sync.c
 * (discovery's sink: diff, paced work) -> scrape_target.c (one target:
 * build, begin, tick, free) -> scrape_exchange.c (one scrape) ->
 * scrape_series.c (metric groups), scrape_url.c (URL and attributes). */
#ifndef PG_SCRAPE_INTERNAL_H
#define PG_SCRAPE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/metrics.h"
#include "core/work.h"
#include "scrape/htab.h"
#include "scrape/scrape.h"


#define LOG_NAME "receiver/pprof/scrape"
#define NS 1000000000LL
/* The batch arena may grow to this many times the body cap (as on the push path). */
#define ARENA_FACTOR 8
#define MAX_AUTH_FILE 8192
/* Buckets of the in-flight URL table (single flight per URL). */
#define INFLIGHT_BUCKETS 4096
/* Loop time one slice of sync work (targets built or freed) may take
 * before the loop's other events run. */
#define PACE_BUDGET_NS (5 * 1000000LL)

/* One discovery source (a file group, a pod, a static group) of one job:
 * the unit pg_scraper_sync replaces. It keeps the addresses it was last
 * given, so a sync costs hashing what it lists plus work for what changed. */
struct pg_scrape_source {
    struct pg_hnode h;                   /* in pg_scraper.sources, by job + name */
    size_t job_index;
    char *name;                          /* owned */
    struct pg_htab raws;                 /* owned: struct pg_scrape_raw, by address + labels */
    uint64_t epoch;                      /* syncs so far (pg_scrape_raw.seen) */
    size_t pending;                      /* queued ops on its addresses (keeps it alive) */
    size_t n_targets, dropped;           /* built / dropped by relabeling, over its addresses */
    size_t added, removed;               /* since the last log line */
};

/* A group's label set, shared by its addresses (refcounted). */
struct pg_scrape_glabels {
    size_t refs;
    struct pg_labels l;                  /* owned */
};

/* One discovered address of a source with its group labels: the unit a
 * sync diffs; the targets (one per enabled profile) are built from it. */
struct pg_scrape_raw {
    struct pg_hnode h;                   /* in source.raws (or a free op's chain) */
    struct pg_scrape_source *src;        /* borrowed */
    char *address;                       /* owned */
    struct pg_scrape_glabels *gl;        /* one reference owned */
    struct pg_scrape_target *targets;    /* owned: chained by next_src */
    size_t dropped;                      /* its profiles dropped by relabeling */
    uint64_t seen;                       /* the source's epoch when last listed */
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
    struct pg_work *work;                /* its body's translation in the lane, or NULL */
    bool dead;                           /* freed while its work runs: work_done frees it */
    int64_t started_ns;
    bool pending;                        /* a tick came during our own scrape: run next */
    char *hop_host, *hop_pq;             /* owned: where a redirect sent this scrape, or NULL */
    unsigned hop_port, hops;
    int health;                          /* -1 unknown, 0 down, 1 up */
    char last_error[240];
    int64_t last_unix_ms;
    double last_duration;
    uint64_t skipped, scrapes;
    struct pg_metric *m_up, *m_dur, *m_bytes, *m_samples, *m_skipped, *m_scrapes;
    char mlabels[1024];                 /* metric label text of this target */
    struct pg_scrape_mgroup *mg;         /* borrowed (refcounted) once begun */
    struct pg_scrape_target *next, *prev; /* all targets */
    struct pg_scrape_target *next_src;   /* its address's targets */
};

/* Work a sync leaves for the loop, in order: build an added address's
 * targets (relabel, begin) or free a removed one's. Paced in slices so a
 * sync of thousands of targets does not hold the loop. */
struct pg_scrape_op {
    struct pg_scrape_raw *raw;           /* build: the source's; free: owned by the op */
    bool free;
};

struct pg_scrape_job_state {
    SSL_CTX *ssl;                        /* owned; https jobs */
    size_t active, dropped;              /* kept current by pg_scraper_sync */
    struct pg_metric *m_active, *m_dropped, *m_builds;
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
    size_t works;                        /* translations submitted, not yet done */
    struct pg_work_lane lane;            /* the receiver's background lane (or none) */
    /* borrowed: targets with a call, by URL hash */
    struct pg_scrape_target *inflight[INFLIGHT_BUCKETS];
    bool started, stopped;
    struct pg_metric *m_accepted, *m_refused;
    struct pg_scraper *next_global;
};

/* scrape.c: the running scrapers (chained by next_global), loop thread only. */
struct pg_scraper *pg_scrape_first_running(void);

/* scrape_sync.c: runs every queued op now (start-up's static targets). */
void pg_scrape_sync_drain(struct pg_scraper *s);
/* scrape_sync.c: frees pending work, sources and their addresses' targets. */
void pg_scrape_sync_free(struct pg_scraper *s);

/* scrape_target.c */
/* One target of address @tg and profile @p: labels in the Parca order,
 * relabeling, address checks, instance and URL. NULL when dropped (counted
 * in *@dropped) or out of memory. */
struct pg_scrape_target *pg_scrape_target_build(struct pg_scraper *s, size_t ji,
                                               struct pg_scrape_source *src,
                                               const struct pg_scrape_tg_target *tg,
                                               const struct pg_scrape_profile *p, size_t *dropped);
/* Its metric series and timer; a no-op when begun already. */
void pg_scrape_target_begin(struct pg_scrape_target *t);
/* Cancels its call and frees it (the caller unlinked it from every index). */
void pg_scrape_target_free(struct pg_scrape_target *t);

/* scrape_exchange.c */
/* Starts one scrape of @t. */
void pg_scrape_start_target(struct pg_scrape_target *t);
/* Takes back the scraper's translations from the lane (destroy). */
void pg_scrape_work_cancel(struct pg_scraper *s);
/* The in-flight URL table: single flight per URL across jobs. */
void pg_scrape_inflight_add(struct pg_scrape_target *t);
void pg_scrape_inflight_del(struct pg_scrape_target *t);
bool pg_scrape_url_in_flight(const struct pg_scrape_target *t);

/* scrape_series.c */
/* The metric group of label text @labels, a reference taken; NULL on OOM. */
struct pg_scrape_mgroup *pg_scrape_mgroup_ref(struct pg_scraper *s, const char *labels);
/* Drops one reference; the last removes the group's series (@remove) and frees it. */
void pg_scrape_mgroup_unref(struct pg_scraper *s, struct pg_scrape_mgroup *g, bool remove);
/* Keeps @m (a series with @t's labels) for removal with @t's metric group. */
void pg_scrape_track_series(struct pg_scrape_target *t, struct pg_metric *m);
/* Sets job @ji's target gauges (active, dropped). */
void pg_scrape_job_gauges(struct pg_scraper *s, size_t ji);

/* scrape_url.c */
/* A metric label value: quotes, backslashes and newlines become '_'. */
void pg_scrape_metric_value(char *dst, size_t cap, const char *src);
/* "host" -> "host:80"/"host:443" by scheme; an address with a port is left alone. */
void pg_scrape_add_port(char *addr, size_t cap, const char *scheme);
/* A target's "host:port" / "[v6]:port" as a malloc'd host and a port. */
bool pg_scrape_split_target(const char *addr, char **host, unsigned *port);
/* Appends k=v (percent-encoded) to the query in @q. */
void pg_scrape_append_query(char *q, size_t cap, const char *k, const char *v);

#endif
