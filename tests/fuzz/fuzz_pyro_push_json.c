/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for pyroscope/pyro_push.c's proto3 JSON decoder (a Connect JSON Push
 * body) and the strict JSON parse under it (core/json_strict.c). Oracle (fuzz_pyro_push.h,
 * shared with the protobuf target): no crash or leak (json-c's tree is freed on every
 * path); what decodes stays within the caps with UTF-8 labels; here also every raw profile
 * is at most 3/4 of the input's size (base64). */
#include "fuzz_pyro_push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static enum pg_err decode(struct pg_arena *a, const uint8_t *in, size_t size,
                          struct pg_pyro_push *p, struct pg_status *st)
{
    return pg_pyro_push_decode_json(a, (const char *)in, size, p, st);
}

static void sample(const struct pg_pyro_raw_sample *r, const uint8_t *in, size_t size)
{
    (void)in;
    fuzz_check(r->len <= size * 3 / 4 + 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_pyro_push_run(data, size, decode, sample);
}
