/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the /ingest query values: pyroscope/pyro_name.c (`name`) and
 * pyro_time.c (`from`, `until`). Oracle: a name that parses has a non-empty app, at most
 * PG_PYRO_MAX_LABELS labels with valid, distinct names and UTF-8 values, and written back as
 * "app.suffix{k=v,...}" parses to the same, and parsed in place it gives the same answer
 * (pyro_name.c's pg_pyro_name_parse_in); a time that parses from digits alone is not
 * negative; every failure carries a message. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "pyroscope/pyro_name.h"
#include "pyroscope/pyro_time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pg_arena *a = pg_arena_create(16 << 20);
    struct pg_pyro_name n, m;
    struct pg_status st = {0};

    /* The in-place parse (the receiver's) answers as the copying one does. */
    char *in_place = malloc(size + 1);
    struct pg_pyro_name p;
    struct pg_status pst = {0};
    check(in_place != NULL);
    memcpy(in_place, data, size);
    in_place[size] = '\0';
    enum pg_err perr = pg_pyro_name_parse_in(a, in_place, size, &p, &pst);
    enum pg_err err = pg_pyro_name_parse(a, (const char *)data, size, &n, &st);
    check(perr == err && strcmp(pst.msg, st.msg) == 0);
    for (size_t i = 0; err == PG_ERR_OK && i < n.n_labels; i++) {
        check(strcmp(n.labels[i].name, p.labels[i].name) == 0);
        check(strcmp(n.labels[i].value, p.labels[i].value) == 0);
    }
    check(err != PG_ERR_OK || (strcmp(n.app, p.app) == 0 && n.n_labels == p.n_labels));
    free(in_place);
    if (err == PG_ERR_OK) {
        check(n.app != NULL && n.app[0] != '\0');
        check(n.n_labels <= PG_PYRO_MAX_LABELS);
        size_t cap = size * 2 + 64, len = 0;
        char *again = malloc(cap);
        len += (size_t)snprintf(again + len, cap - len, "%s%s%s{", n.app,
                                n.type_suffix ? "." : "", n.type_suffix ? n.type_suffix : "");
        for (size_t i = 0; i < n.n_labels; i++) {
            check(pg_pyro_label_name_valid(n.labels[i].name, strlen(n.labels[i].name)));
            check(pg_utf8_valid(n.labels[i].value, strlen(n.labels[i].value)));
            for (size_t j = 0; j < i; j++) {
                check(strcmp(n.labels[i].name, n.labels[j].name) != 0);
            }
            len += (size_t)snprintf(again + len, cap - len, "%s%s=%s", i ? "," : "",
                                    n.labels[i].name, n.labels[i].value);
        }
        len += (size_t)snprintf(again + len, cap - len, "}");
        check(len < cap);
        check(pg_pyro_name_parse(a, again, len, &m, &st) == PG_ERR_OK);
        check(strcmp(n.app, m.app) == 0);
        check((n.type_suffix == NULL) == (m.type_suffix == NULL));
        check(n.type_suffix == NULL || strcmp(n.type_suffix, m.type_suffix) == 0);
        check(n.n_labels == m.n_labels);
        for (size_t i = 0; i < n.n_labels; i++) {
            check(strcmp(n.labels[i].name, m.labels[i].name) == 0);
            check(strcmp(n.labels[i].value, m.labels[i].value) == 0);
        }
        free(again);
    } else {
        check(st.code != PG_ERR_OK && st.msg[0] != '\0');
    }
    pg_arena_destroy(a);

    int64_t t = 0;
    struct pg_status tst = {0};
    if (pg_pyro_time_parse((const char *)data, size, 1796217364000000000LL, &t, &tst) ==
        PG_ERR_OK) {
        bool digits = size > 0;
        for (size_t i = 0; i < size; i++) {
            digits = digits && data[i] >= '0' && data[i] <= '9';
        }
        check(!digits || t >= 0);
    } else {
        check(tst.code == PG_ERR_MALFORMED && tst.msg[0] != '\0');
    }
    return 0;
}
