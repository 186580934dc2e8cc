#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Large-body flood under memory_limiter (bench/flood.py driving bench/flood_client): peak RSS /
# limit_mib, the status mix, the probe's p99 and the idle control's. Runs unpinned and pinned
# (PIN=1: gateway on one core, load generator on the other), each with auth off and on; set
# PIN and/or AUTH to run one of them. Other env: see bench/flood.py.
set -euo pipefail
cd "$(dirname "$0")/.."
# Absolute: the harness starts the gateway from its own temporary directory.
export PG_BUILD_DIR=$(realpath "${PG_BUILD_DIR:-build}")
export PPROFGATE_BIN=$(realpath "${PPROFGATE_BIN:-$PG_BUILD_DIR/pprofgate}")
[ -x "$PG_BUILD_DIR/bench/flood_client" ] || cmake --build "$PG_BUILD_DIR" --target flood_client
for pin in ${PIN:-0 1}; do
    for auth in ${AUTH:-0 1}; do
        PIN=$pin AUTH=$auth python3 bench/flood.py
    done
done
