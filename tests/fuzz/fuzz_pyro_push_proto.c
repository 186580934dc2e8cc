/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for pyroscope/pyro_push.c's protobuf decoder (push.v1.PushRequest).
 * Oracle: no crash or leak; what decodes stays within the caps, every raw profile lies
 * inside the input (zero copy), every label name, value and ID is valid UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "pyroscope/pyro_push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    struct pg_arena *a = pg_arena_create(64 << 20);
    struct pg_pyro_push p;
    struct pg_status st = {0};
    if (pg_pyro_push_decode_proto(a, copy, size, &p, &st) == PG_ERR_OK) {
        size_t samples = 0;
        check(p.n_series <= PG_PYRO_MAX_SERIES);
        for (size_t i = 0; i < p.n_series; i++) {
            const struct pg_pyro_series *s = &p.series[i];
            check(s->n_labels <= PG_PYRO_MAX_LABELS);
            for (size_t j = 0; j < s->n_labels; j++) {
                check(pg_utf8_valid(s->labels[j].name, strlen(s->labels[j].name)));
                check(pg_utf8_valid(s->labels[j].value, strlen(s->labels[j].value)));
            }
            for (size_t k = 0; k < s->n_samples; k++) {
                const struct pg_pyro_raw_sample *r = &s->samples[k];
                check(r->len == 0 || (r->raw_profile >= copy && r->raw_profile + r->len <= copy + size));
                check(r->id != NULL && pg_utf8_valid(r->id, strlen(r->id)));
            }
            samples += s->n_samples;
        }
        check(samples <= PG_PYRO_MAX_SAMPLES);
    } else {
        check(st.code != PG_ERR_OK && st.msg[0] != '\0');
    }
    pg_arena_destroy(a);
    free(copy);
    return 0;
}
