/* SPDX-License-Identifier: Apache-2.0
 * The body both Push API fuzz targets share (fuzz_pyro_push_proto.c, fuzz_pyro_push_json.c):
 * decode a copy of the input with the target's decoder, then walk what decoded: the caps,
 * UTF-8 label names and values, an ID on every raw sample, and the target's own check of
 * each raw profile (where its bytes may be); a refusal must carry a code and a message. */
#ifndef PG_FUZZ_PYRO_PUSH_H
#define PG_FUZZ_PYRO_PUSH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "pyroscope/pyro_push.h"

static void fuzz_check(int cond)
{
    if (!cond) {
        abort();
    }
}

/* A decoder over @in[0..size) (the fuzzer's bytes, copied so they end where the input does). */
typedef enum pg_err (*fuzz_push_decode_fn)(struct pg_arena *a, const uint8_t *in, size_t size,
                                           struct pg_pyro_push *p, struct pg_status *st);
/* The target's check of one decoded raw sample of an input of @size bytes at @in. */
typedef void (*fuzz_push_sample_fn)(const struct pg_pyro_raw_sample *r, const uint8_t *in,
                                    size_t size);

static int fuzz_pyro_push_run(const uint8_t *data, size_t size, fuzz_push_decode_fn decode,
                              fuzz_push_sample_fn sample)
{
    uint8_t *copy = malloc(size ? size : 1);
    struct pg_arena *a = pg_arena_create(64 << 20);
    struct pg_pyro_push p;
    struct pg_status st = {0};

    fuzz_check(copy != NULL && a != NULL);
    memcpy(copy, data, size);
    if (decode(a, copy, size, &p, &st) == PG_ERR_OK) {
        size_t samples = 0;
        fuzz_check(p.n_series <= PG_PYRO_MAX_SERIES);
        for (size_t i = 0; i < p.n_series; i++) {
            const struct pg_pyro_series *s = &p.series[i];
            fuzz_check(s->n_labels <= PG_PYRO_MAX_LABELS);
            for (size_t j = 0; j < s->n_labels; j++) {
                fuzz_check(pg_utf8_valid(s->labels[j].name, strlen(s->labels[j].name)));
                fuzz_check(pg_utf8_valid(s->labels[j].value, strlen(s->labels[j].value)));
            }
            for (size_t k = 0; k < s->n_samples; k++) {
                fuzz_check(s->samples[k].id != NULL);
                sample(&s->samples[k], copy, size);
            }
            samples += s->n_samples;
        }
        fuzz_check(samples <= PG_PYRO_MAX_SAMPLES);
    } else {
        fuzz_check(st.code != PG_ERR_OK && st.msg[0] != '\0');
    }
    pg_arena_destroy(a);
    free(copy);
    return 0;
}

#endif
