#!/usr/bin/env bash
# Runs every benchmark in bench/ against the build in $1 (default build/).
# Each prints its own figures and ratios; nothing here asserts a time.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
export PG_BUILD_DIR=$BUILD PPROFGATE_BIN=$BUILD/pprofgate
for b in bench/translate.sh bench/mem_probe.py bench/large.sh bench/http_load.sh bench/callgrind_push.sh bench/ottl_bench.sh bench/otlp_export.sh bench/selfprof_cost.sh bench/spool_bench.sh bench/flood.sh bench/scrape.sh bench/vs_collector.sh bench/spool_replay.py bench/otlp_in.sh bench/pyroscope.sh; do
    if [ -f "$b" ]; then
        echo "=== $b"
        case "$b" in
        bench/mem_probe.py) python3 "$b" --bin "$BUILD/pprofgate" || echo "$b exited $?" ;;
        bench/large.sh) GUARD=0 bash "$b" || echo "$b exited $?" ;; # http_load.sh runs next anyway
        *.py) python3 "$b" "$BUILD" || echo "$b exited $?" ;;
        *) bash "$b" || echo "$b exited $?" ;;
        esac
    fi
done
