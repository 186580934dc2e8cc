#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Large-body flood under memory_limiter (bench/flood.py): peak RSS / limit_mib,
# the status mix and small-push p99 while it lasts. Env: see bench/flood.py.
set -euo pipefail
cd "$(dirname "$0")/.."
export PG_BUILD_DIR=${PG_BUILD_DIR:-build}
export PPROFGATE_BIN=${PPROFGATE_BIN:-$PG_BUILD_DIR/pprofgate}
exec python3 bench/flood.py
