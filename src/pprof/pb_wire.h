/* SPDX-License-Identifier: Apache-2.0
 * The pprof decoder reads protobuf through core's wire primitives. */
#ifndef PG_PPROF_PB_WIRE_H
#define PG_PPROF_PB_WIRE_H

#include "core/pb_wire.h"

#endif
