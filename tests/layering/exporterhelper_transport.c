/* SPDX-License-Identifier: Apache-2.0
 * Compiled against pg_exporterhelper's include path only: the shared
 * exporter layer sits below every exporter and cannot reach a transport, so
 * this include must fail (the layering test expects the error). */
#include "grpc/grpc_client.h"

int pg_layer_probe_exph(void);

int pg_layer_probe_exph(void)
{
    return 0;
}
