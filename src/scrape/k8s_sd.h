/* SPDX-License-Identifier: Apache-2.0
 * kubernetes_sd_configs, role pod: list then watch the API server's pods
 * (per namespace, with the configured label and field selectors), relist
 * on 410 Gone (HTTP or an in-stream ERROR event) and after failures with
 * backoff (1 s doubling to 30 s). Targets and __meta_kubernetes_pod_* labels
 * follow Prometheus: one target per container port (init containers too),
 * one port-less target for a container without ports, none without a pod
 * IP. In-cluster by default (KUBERNETES_SERVICE_HOST/PORT, the service
 * account's token - re-read for every request, so rotation is picked up -
 * and CA); or api_server with tls_config and authorization. JSON via
 * json-c, with a depth limit and a cap on one watch line. */
#ifndef PG_SCRAPE_K8S_SD_H
#define PG_SCRAPE_K8S_SD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "scrape/scrape_config.h"
#include "scrape/sd_sink.h"

struct event_base;
struct json_object;
struct pg_k8s_sd;

/* Where in-cluster credentials live; PPROFGATE_K8S_SERVICEACCOUNT_DIR
 * overrides it (tests, unusual mounts). */
#define PG_K8S_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
/* One watch line (one event) at most; a longer one restarts the watch. */
#define PG_K8S_MAX_LINE ((size_t)16 << 20)
#define PG_K8S_JSON_DEPTH 64

/* Starts every kubernetes_sd_configs of every job; *@out stays NULL when
 * there are none. Pods' targets go to @sink (copied). Fails when in-cluster settings are missing. */
enum pg_err pg_k8s_sd_start(const struct pg_sd_sink *sink, struct event_base *base,
                            const struct pg_scrape_config *cfg, struct pg_k8s_sd **out,
                            struct pg_status *st);
void pg_k8s_sd_free(struct pg_k8s_sd *k);

/* A pod object -> its targets, each with its full label set (borrowed
 * during the call). @n is 0 for a pod without an IP. */
typedef void (*pg_k8s_targets_fn)(void *arg, const struct pg_scrape_tg_target *tg, size_t n);
void pg_k8s_pod_targets(struct json_object *pod, pg_k8s_targets_fn fn, void *arg);

/* Splits a watch stream into lines and parses each as an event. */
struct pg_k8s_stream {
    char *buf; /* owned */
    size_t len, cap;
};
/* Called per event; @object borrowed. Return false to stop reading. */
typedef bool (*pg_k8s_event_fn)(void *arg, const char *type, struct json_object *object);
enum pg_k8s_feed { PG_K8S_FEED_OK = 0, PG_K8S_FEED_STOP, PG_K8S_FEED_BAD, PG_K8S_FEED_TOO_LONG };
enum pg_k8s_feed pg_k8s_stream_feed(struct pg_k8s_stream *s, const uint8_t *p, size_t n,
                                    pg_k8s_event_fn fn, void *arg, char *why, size_t why_size);
void pg_k8s_stream_free(struct pg_k8s_stream *s);
/* Parses @len bytes of JSON with the depth limit; NULL (and @why) on error. */
struct json_object *pg_k8s_json_parse(const char *p, size_t len, char *why, size_t why_size);
/* Member @k of object @o (borrowed), of any type / a string / an array; NULL
 * when @o is not an object or the member is missing or of another type. */
struct json_object *pg_k8s_jget(struct json_object *o, const char *k);
const char *pg_k8s_jstr(struct json_object *o, const char *k);
struct json_object *pg_k8s_jarr(struct json_object *o, const char *k);

#endif
