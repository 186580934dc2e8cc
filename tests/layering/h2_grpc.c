/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_h2's include path only: the HTTP/2 pump sits on core
 * and knows nothing of gRPC, so this include must fail (the layering test
 * expects the error). */
#include "grpc/grpc_wire.h"

int pg_layer_probe_h2_grpc(void);

int pg_layer_probe_h2_grpc(void)
{
    return 0;
}
