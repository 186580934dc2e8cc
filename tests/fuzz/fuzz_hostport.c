/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for core/hostport.c, which reads config endpoints and the
 * host of a scrape redirect's Location header. Oracle: whatever splits has a
 * port <= 65535 and a host that fits; written back as "[host]:port" it splits
 * to the same parts; with a default port, a split without one agrees with
 * pg_hostport_split wherever both succeed on the same text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hostport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char ep[512], host[64], host2[64], again[128];
    unsigned port = 0, port2 = 0;

    if (size >= sizeof(ep)) {
        return 0;
    }
    memcpy(ep, data, size);
    ep[size] = '\0';
    if (pg_hostport_split(ep, host, sizeof(host), &port)) {
        check(port <= 65535 && strlen(host) < sizeof(host));
        snprintf(again, sizeof(again), "[%s]:%u", host, port);
        if (strchr(host, ']') == NULL) {
            check(pg_hostport_split(again, host2, sizeof(host2), &port2));
            check(strcmp(host, host2) == 0 && port == port2);
        }
        check(pg_hostport_split_default(ep, 7, host2, sizeof(host2), &port2));
        check(strcmp(host, host2) == 0 && port == port2);
    }
    if (pg_hostport_split_default(ep, 80, host, sizeof(host), &port)) {
        check(port <= 65535 && strlen(host) < sizeof(host));
    }
    return 0;
}
