/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_grpc's include path only: the gRPC room is a
 * transport below the components and cannot reach an exporter, so this
 * include must fail (the layering test expects the error). */
#include "exporter/debug_format.h"

int pg_layer_probe_grpc_exporter(void);

int pg_layer_probe_grpc_exporter(void)
{
    return 0;
}
