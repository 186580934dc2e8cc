#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time with its seed corpus from
# tests/fixtures; a crash fails the run and leaves crash-* files in build-fuzz.
set -uo pipefail
dir=$1 secs=${2:-20}
cd "$(dirname "$0")/.."
rc=0
for bin in "$dir"/tests/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    corpus="$dir/corpus/$name"; mkdir -p "$corpus"
    seeds="tests/fuzz/seeds/$name"; [ -d "$seeds" ] || seeds=""
    echo "fuzz: $name for ${secs}s"
    if ! "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=262144 \
          -artifact_prefix="$dir/$name-" "$corpus" $seeds >"$dir/$name.log" 2>&1; then
        echo "fuzz: $name FAILED (see $dir/$name.log)"; tail -30 "$dir/$name.log"; rc=1
    else
        tail -1 "$dir/$name.log"
    fi
done
exit $rc
