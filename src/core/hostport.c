/* SPDX-License-Identifier: Apache-2.0 */
#include "core/hostport.h"

#include <string.h>

/* @has_default: whether a missing port takes @default_port or is an error. */
static bool split(const char *ep, bool has_default, unsigned default_port, char *host,
                  size_t host_size, unsigned *port)
{
    const char *h, *hend, *colon;
    size_t hlen;
    unsigned long p = 0;

    if (ep == NULL) {
        return false;
    }
    if (ep[0] == '[') {
        const char *rb = strchr(ep, ']');

        if (rb == NULL || (rb[1] != '\0' && rb[1] != ':')) {
            return false;
        }
        h = ep + 1;
        hend = rb;
        colon = rb[1] == ':' ? rb + 1 : NULL;
    } else {
        h = ep;
        colon = strrchr(ep, ':');
        hend = colon != NULL ? colon : ep + strlen(ep);
    }
    if (colon == NULL) {
        if (!has_default) {
            return false;
        }
        p = default_port;
    } else {
        const char *d = colon + 1;

        if (*d == '\0') {
            return false;
        }
        for (; *d != '\0'; d++) {
            if (*d < '0' || *d > '9') {
                return false;
            }
            p = p * 10 + (unsigned long)(*d - '0');
            if (p > 65535) {
                return false;
            }
        }
    }
    hlen = (size_t)(hend - h);
    if (hlen >= host_size) {
        return false;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (unsigned)p;
    return true;
}

bool pg_hostport_split(const char *ep, char *host, size_t host_size, unsigned *port)
{
    return split(ep, false, 0, host, host_size, port);
}

bool pg_hostport_split_default(const char *ep, unsigned default_port, char *host,
                               size_t host_size, unsigned *port)
{
    return split(ep, true, default_port, host, host_size, port);
}
