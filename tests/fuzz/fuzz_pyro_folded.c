/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for pyroscope/pyro_folded.c. The first byte picks folded or lines and
 * small or default caps; the rest is the text. Oracle: what converts is a pprof the
 * project's own decoder accepts, with every sample's value positive, its stack at most the
 * depth cap and its frames named; failures carry a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pprof/pprof_decode.h"
#include "pprof/translate.h"
#include "pyroscope/pyro_folded.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
    if (!cond) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    struct pg_pyro_folded_opts o = {.sample_type = "cpu", .sample_unit = "nanoseconds",
                                    .period_type = "cpu", .period_unit = "nanoseconds",
                                    .period = 10000000, .time_nanos = 1, .duration_nanos = 2};
    enum pg_pyro_text_format fmt = data[0] & 1 ? PG_PYRO_LINES : PG_PYRO_FOLDED;
    if (data[0] & 2) {
        o.max_lines = 50;
        o.max_depth = 8;
        o.max_frame_bytes = 16;
    }
    if (data[0] & 4) {
        o.scale = 10000000;
    }
    size_t len = size - 1;
    uint8_t *text = malloc(len ? len : 1);
    memcpy(text, data + 1, len);
    struct pg_arena *a = pg_arena_create(64 << 20);
    struct pg_status st = {0};
    uint8_t *out;
    size_t out_len;
    if (pg_pyro_folded_to_pprof(a, text, len, fmt, &o, &out, &out_len, &st) == PG_ERR_OK) {
        struct pg_translate_opts to;
        struct pg_pprof p;
        struct pg_pprof_sample_iter it;
        pg_translate_opts_default(&to);
        check(pg_pprof_decode(a, out, out_len, &to.limits, &p, &st) == PG_ERR_OK);
        check(p.n_sample_types == 1 && p.period == 10000000);
        check(p.n_functions == p.n_locations);
        check(pg_pprof_sample_iter_init(a, &p, &it, &st) == PG_ERR_OK);
        for (;;) {
            int64_t v[1];
            bool done = false;
            check(pg_pprof_next_sample(&p, &it, v, &done, &st) == PG_ERR_OK);
            if (done) {
                break;
            }
            check(v[0] > 0);
            check(it.s.n_locations >= 1);
            check(o.max_depth == 0 || it.s.n_locations <= o.max_depth);
            for (size_t j = 0; j < it.s.n_locations; j++) {
                uint32_t pos = pg_pprof_location_pos(&p, it.s.location_ids[j]);
                check(pos != PG_PPROF_NONE);
                const struct pg_pprof_function *f =
                    &p.functions[p.locations[pos].lines[0].function_pos];
                check(p.strings[f->name].len > 0);
            }
        }
    } else {
        check(st.code != PG_ERR_OK && st.msg[0] != '\0');
    }
    pg_arena_destroy(a);
    free(text);
    return 0;
}
