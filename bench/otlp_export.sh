#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Export throughput of the otlp exporter to the real gRPC server (tests/node/grpc_server.mjs,
# not storing requests). Prints figures only.
# usage: bench/otlp_export.sh [BUILD_DIR] [N_SMALL] [N_LARGE]   (default: build 2000 20)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$src/build}"
bin="$build/bench/otlp_export"
if [ ! -x "$bin" ]; then
    cmake --build "$build" --target otlp_export >/dev/null
fi
out="$(mktemp)"
PG_GRPC_STORE=0 node "$src/tests/node/grpc_server.mjs" >"$out" &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
port=$(sed -n 's/.*"grpc_port":\([0-9]*\).*/\1/p' "$out")
"$bin" "$port" "${2:-2000}" "${3:-20}"
