#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs bench/ottl_bench: per-request cost of the default transform statement on
# the real SDK header (tests/fixtures/sdk/push0.json) plus the malloc check.
# Prints figures only. usage: bench/ottl_bench.sh [BUILD_DIR]   (default: build)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="${PG_BUILD_DIR:-${1:-$src/build}}"
bin="$build/bench/ottl_bench"
if [ ! -x "$bin" ]; then
    cmake --build "$build" --target ottl_bench >/dev/null
fi
"$bin" "$src/tests/fixtures"
