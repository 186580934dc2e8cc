/* SPDX-License-Identifier: Apache-2.0
 * core/hostport.c: the one host:port parser, with and without a default port. */
#include "pg_test.h"

#include <stdbool.h>

#include "core/hostport.h"

struct hp_case {
    const char *ep;
    unsigned def; /* 0: pg_hostport_split, else pg_hostport_split_default */
    bool ok;
    const char *host;
    unsigned port;
};

static const struct hp_case cases[] = {
    {"localhost:1777", 0, true, "localhost", 1777},
    {"127.0.0.1:0", 0, true, "127.0.0.1", 0},
    {"[::1]:8888", 0, true, "::1", 8888},
    {"[fe80::1%eth0]:80", 0, true, "fe80::1%eth0", 80},
    {":13133", 0, true, "", 13133},
    {"[]:1", 0, true, "", 1},
    {"::1:80", 0, true, "::1", 80}, /* unbracketed v6 splits at the last colon */
    {"0.0.0.0:65535", 0, true, "0.0.0.0", 65535},
    {"localhost:65536", 0, false, NULL, 0},
    {"localhost:99999999999999999999", 0, false, NULL, 0},
    {"localhost:-1", 0, false, NULL, 0},
    {"localhost:+1", 0, false, NULL, 0},
    {"localhost: 1", 0, false, NULL, 0},
    {"localhost:", 0, false, NULL, 0},
    {"localhost:12x", 0, false, NULL, 0},
    {"localhost", 0, false, NULL, 0},
    {"[::1]", 0, false, NULL, 0},
    {"[::1:80", 0, false, NULL, 0},
    {"[::1]x:80", 0, false, NULL, 0},
    {"", 0, false, NULL, 0},
    {NULL, 0, false, NULL, 0},
    {"kube.local", 443, true, "kube.local", 443},
    {"kube.local:6443", 443, true, "kube.local", 6443},
    {"[::1]", 80, true, "::1", 80},
    {"[::1]:8080", 80, true, "::1", 8080},
    {"[::1", 80, false, NULL, 0},
    {"kube.local:", 80, false, NULL, 0},
    {"kube.local:x", 80, false, NULL, 0},
};

PG_TEST(test_split_table)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct hp_case *c = &cases[i];
        char host[64] = "unset";
        unsigned port = 99999;
        bool ok = c->def ? pg_hostport_split_default(c->ep, c->def, host, sizeof(host), &port)
                         : pg_hostport_split(c->ep, host, sizeof(host), &port);

        if (ok != c->ok) {
            fprintf(stderr, "  case %zu \"%s\": ok=%d\n", i, c->ep ? c->ep : "(null)", ok);
        }
        CHECK_INT(ok, c->ok);
        if (ok && c->ok) {
            CHECK_STR(host, c->host);
            CHECK_INT(port, c->port);
        }
    }
}

PG_TEST(test_host_must_fit)
{
    char small[4];
    unsigned port;

    CHECK(pg_hostport_split("abc:1", small, sizeof(small), &port));
    CHECK_STR(small, "abc");
    CHECK(!pg_hostport_split("abcd:1", small, sizeof(small), &port));
    CHECK(!pg_hostport_split_default("[abcd]", 80, small, sizeof(small), &port));
}

PG_TEST_MAIN(PG_CASE(test_split_table), PG_CASE(test_host_must_fit))
