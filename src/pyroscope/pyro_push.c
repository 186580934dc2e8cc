/* SPDX-License-Identifier: Apache-2.0
 * Decodes push.v1.PushRequest from protobuf and from proto3 JSON. */
#include "pyroscope/pyro_push.h"

enum pg_err pg_pyro_push_decode_proto(struct pg_arena *a, const uint8_t *buf, size_t len,
                                      struct pg_pyro_push *out, struct pg_status *st)
{
    (void)a, (void)buf, (void)len, (void)out;
    return pg_status_set(st, PG_ERR_INTERNAL, "push decoder not built yet");
}

enum pg_err pg_pyro_push_decode_json(struct pg_arena *a, const char *buf, size_t len,
                                     struct pg_pyro_push *out, struct pg_status *st)
{
    (void)a, (void)buf, (void)len, (void)out;
    return pg_status_set(st, PG_ERR_INTERNAL, "push decoder not built yet");
}
