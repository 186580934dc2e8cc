/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the Kubernetes watch stream and pod JSON: the input
 * is fed to the line splitter in two reads (split at the first byte's
 * value), every event's object goes through pod -> targets, whose labels
 * must be sorted and whose addresses non-empty. Also the list parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "scrape/k8s_sd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(void *arg, const struct pg_scrape_tg_target *tg, size_t n)
{
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        if (tg[i].address == NULL || tg[i].address[0] == '\0') {
            abort();
        }
        for (size_t k = 1; k < tg[i].labels->n; k++) {
            if (strcmp(tg[i].labels->v[k - 1].name, tg[i].labels->v[k].name) >= 0) {
                abort();
            }
        }
    }
}

static bool on_event(void *arg, const char *type, struct json_object *obj)
{
    (void)arg;
    if (type == NULL) {
        abort();
    }
    pg_k8s_pod_targets(obj, check, NULL);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_k8s_stream st = {0};
    char why[300];
    size_t cut = size ? data[0] % (size + 1) : 0;
    struct json_object *o;

    if (pg_k8s_stream_feed(&st, data, cut, on_event, NULL, why, sizeof(why)) == PG_K8S_FEED_OK) {
        pg_k8s_stream_feed(&st, data + cut, size - cut, on_event, NULL, why, sizeof(why));
    }
    pg_k8s_stream_free(&st);
    o = pg_k8s_json_parse((const char *)data, size, why, sizeof(why));
    if (o != NULL) {
        pg_k8s_pod_targets(o, check, NULL);
        json_object_put(o);
    }
    return 0;
}
