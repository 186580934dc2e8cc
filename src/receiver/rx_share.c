/* SPDX-License-Identifier: Apache-2.0
 * One listener for several push receivers: a pyroscope and a pprof
 * receiver naming the same endpoint (Pyroscope SDKs and /v1/pprof both
 * default to :4040) share the first one's sockets, loops, server and
 * workers; each route feeds its own receiver's pipelines. This file keeps
 * the process-wide registry of listening receivers, the route lookup and
 * the deferred destroy of a joiner (the owner's workers may still hold its
 * jobs). Registry calls: main thread; pg_rx_route: any loop. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "http/listener.h"
#include "receiver/pprof_internal.h"

#define MAX_OWNERS 32

static pthread_mutex_t share_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rx *owners[MAX_OWNERS]; /* under share_mu */
static size_t n_owners;

/* Same endpoint: same transport and address; port 0 (any free port) never
 * names the same listener twice. */
static bool same_endpoint(const struct rx *a, const struct rx *b)
{
    const struct rx_server_cfg *x = &a->cfg.server, *y = &b->cfg.server;

    if (x->transport != y->transport || strcmp(a->listen_host, b->listen_host) != 0) {
        return false;
    }
    return x->transport == PG_TRANSPORT_UNIX || (a->listen_port == b->listen_port &&
                                                  a->listen_port != 0);
}

/* Keys of one listener (the socket, TLS, deadlines, caps, loops and
 * workers): a joiner must say what its owner says. Route keys (auth,
 * include_metadata, compression_algorithms, response_headers,
 * max_request_body_size up to the owner's, default_service_name, limits)
 * stay each receiver's. The name of the first differing key, or NULL. */
static const char *listener_key_differs(const struct rx_server_cfg *o,
                                        const struct rx_server_cfg *j)
{
#define DIFF(f)                                                                                    \
    if (o->f != j->f) {                                                                            \
        return #f;                                                                                 \
    }
    DIFF(has_tls)
    DIFF(read_header_timeout)
    DIFF(read_timeout)
    DIFF(write_timeout)
    DIFF(idle_timeout)
    DIFF(min_body_rate)
    DIFF(keep_alives_enabled)
    DIFF(max_request_headers)
    DIFF(max_connections)
    DIFF(max_connections_per_peer)
    DIFF(max_requests_per_connection)
    DIFF(workers)
    DIFF(loops)
#undef DIFF
    if (o->has_tls && ((o->tls.cert_file == NULL) != (j->tls.cert_file == NULL) ||
                       (o->tls.cert_file != NULL && strcmp(o->tls.cert_file, j->tls.cert_file) != 0))) {
        return "tls::cert_file";
    }
    if (j->max_request_body_size > o->max_request_body_size) {
        return "max_request_body_size (at most the listener owner's)";
    }
    return NULL;
}

enum pg_err pg_rx_share_join(struct rx *rx, struct rx **owner_out, struct pg_status *st)
{
    enum pg_err err = PG_ERR_OK;

    *owner_out = NULL;
    pthread_mutex_lock(&share_mu);
    for (size_t i = 0; i < n_owners; i++) {
        struct rx *o = owners[i];
        const char *key;

        if (!same_endpoint(o, rx)) {
            continue;
        }
        if (o->flavor == rx->flavor) {
            err = pg_status_set(st, PG_ERR_CONFIG,
                                "%s: endpoint %s is already served by receiver %s of the same "
                                "type (one receiver per endpoint and route)",
                                rx->log_name, rx->cfg.server.endpoint, o->id);
        } else if ((key = listener_key_differs(&o->cfg.server, &rx->cfg.server)) != NULL) {
            err = pg_status_set(st, PG_ERR_CONFIG,
                                "%s: shares endpoint %s with receiver %s, whose listener it uses, "
                                "but server::%s differs; the listener's keys must match",
                                rx->log_name, rx->cfg.server.endpoint, o->id, key);
        } else if (__atomic_load_n(&o->n_joined, __ATOMIC_RELAXED) >= RX_MAX_JOINED) {
            err = pg_status_set(st, PG_ERR_CONFIG, "%s: too many receivers on endpoint %s",
                                rx->log_name, rx->cfg.server.endpoint);
        } else if (o->n_loops > 1 && (rx->next == NULL || rx->next->any_thread == NULL ||
                                      !rx->next->any_thread(rx->next, NULL, 0))) {
            err = pg_status_set(st, PG_ERR_CONFIG,
                                "%s: shares endpoint %s with receiver %s, which runs %zu event "
                                "loops, but this receiver's pipeline is entered from the main "
                                "loop only; set server::loops: 1 on both",
                                rx->log_name, rx->cfg.server.endpoint, o->id, o->n_loops);
        } else {
            size_t n = o->n_joined;

            o->joined[n] = rx;
            rx->owner = o;
            rx->join_slot = n + 1;
            __atomic_store_n(&o->n_joined, n + 1, __ATOMIC_RELEASE);
            *owner_out = o;
        }
        pthread_mutex_unlock(&share_mu);
        return err;
    }
    if (n_owners < MAX_OWNERS) {
        owners[n_owners++] = rx;
    }
    pthread_mutex_unlock(&share_mu);
    return PG_ERR_OK;
}

struct rx *pg_rx_route(struct rx *owner, const char *path, enum rx_route *route)
{
    size_t n = __atomic_load_n(&owner->n_joined, __ATOMIC_ACQUIRE);

    for (size_t i = 0; i <= n; i++) {
        struct rx *rx = i == 0 ? owner : owner->joined[i - 1];

        if (rx->flavor == RX_FLAVOR_PPROF) {
            if (strcmp(path, PPROF_PATH) == 0) {
                *route = RX_ROUTE_PPROF;
                return rx;
            }
        } else if (strcmp(path, PYRO_INGEST_PATH) == 0) {
            *route = RX_ROUTE_INGEST;
            return rx;
        } else if (strcmp(path, PYRO_PUSH_PATH) == 0) {
            *route = RX_ROUTE_PUSH;
            return rx;
        }
    }
    return NULL;
}

size_t pg_rx_routes_text(struct rx *owner, char *buf, size_t size)
{
    size_t n = __atomic_load_n(&owner->n_joined, __ATOMIC_ACQUIRE), o = 0;

    buf[0] = '\0';
    for (size_t i = 0; i <= n && o < size; i++) {
        struct rx *rx = i == 0 ? owner : owner->joined[i - 1];
        int w = rx->flavor == RX_FLAVOR_PPROF
                    ? snprintf(buf + o, size - o, "%sPOST " PPROF_PATH " (%s)", o ? ", " : "",
                               rx->id)
                    : snprintf(buf + o, size - o,
                               "%sPOST " PYRO_INGEST_PATH ", POST " PYRO_PUSH_PATH " (%s)",
                               o ? ", " : "", rx->id);
        if (w < 0) {
            break;
        }
        o += (size_t)w;
    }
    return o < size ? o : size - 1;
}

bool pg_rx_share_defer_destroy(struct rx *rx)
{
    bool defer;

    pthread_mutex_lock(&share_mu);
    defer = rx->owner != NULL;
    rx->dead = defer;
    pthread_mutex_unlock(&share_mu);
    return defer;
}

void pg_rx_share_release(struct rx *owner)
{
    struct rx *dead[RX_MAX_JOINED];
    size_t n_dead = 0;

    pthread_mutex_lock(&share_mu);
    for (size_t i = 0; i < n_owners; i++) {
        if (owners[i] == owner) {
            owners[i] = owners[--n_owners];
            break;
        }
    }
    for (size_t i = 0; i < owner->n_joined; i++) {
        struct rx *j = owner->joined[i];

        j->owner = NULL; /* its destroy is its own from here on */
        if (j->dead) {
            dead[n_dead++] = j;
        }
    }
    owner->n_joined = 0;
    pthread_mutex_unlock(&share_mu);
    for (size_t i = 0; i < n_dead; i++) {
        pg_rx_destroy(dead[i]);
    }
}
