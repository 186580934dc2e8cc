/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for pyroscope/pyro_push.c's protobuf decoder (push.v1.PushRequest).
 * Oracle (fuzz_pyro_push.h, shared with the JSON target): no crash or leak; what decodes
 * stays within the caps with UTF-8 labels; here also every raw profile lies inside the
 * input (zero copy) and every ID is valid UTF-8. */
#include "fuzz_pyro_push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static enum pg_err decode(struct pg_arena *a, const uint8_t *in, size_t size,
                          struct pg_pyro_push *p, struct pg_status *st)
{
    return pg_pyro_push_decode_proto(a, in, size, p, st);
}

static void sample(const struct pg_pyro_raw_sample *r, const uint8_t *in, size_t size)
{
    fuzz_check(r->len == 0 || (r->raw_profile >= in && r->raw_profile + r->len <= in + size));
    fuzz_check(pg_utf8_valid(r->id, strlen(r->id)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_pyro_push_run(data, size, decode, sample);
}
