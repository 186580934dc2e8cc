/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_grpc's include path only: the gRPC room is a
 * transport below the components and cannot reach a receiver, so this
 * include must fail (the layering test expects the error). */
#include "receiver/pprof_internal.h"

int pg_layer_probe_grpc_receiver(void);

int pg_layer_probe_grpc_receiver(void)
{
    return 0;
}
