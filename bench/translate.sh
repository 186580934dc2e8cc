#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs bench/translate on the large generated profile (bench/translate_gen_large.py,
# written to a temp dir, not committed) and on every pprof fixture. Prints figures only.
# usage: bench/translate.sh [BUILD_DIR]   (default: build)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$src/build}"
bin="$build/bench/translate"
if [ ! -x "$bin" ]; then
    cmake --build "$build" --target translate >/dev/null
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 "$src/bench/translate_gen_large.py" "$tmp/large.pprof" --gzip "$tmp/large.pprof.gz"
mapfile -t fixtures < <(find "$src/tests/fixtures/pprof" "$src/tests/fixtures/sdk" -type f \
    \( -name '*.pprof' -o -name '*.pb.gz' -o -name '*.pprof.gz' \) | sort)
PG_BENCH_VERBOSE=1 "$bin" -n 15 "$tmp/large.pprof.gz"
"$bin" -n 31 "${fixtures[@]}"
