#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time with its seed corpus from
# tests/fuzz/seeds; a crash fails the run and leaves crash-* files in
# build-fuzz. Two targets at a time (FUZZ_JOBS), one per core: each target is
# single-threaded, so the smoke takes half the wall time.
set -uo pipefail
dir=$1 secs=${2:-20}
jobs=${FUZZ_JOBS:-2}
cd "$(dirname "$0")/.."
run_one() { # bin -> exit status; its report lines go to $dir/<name>.report
    local bin=$1 name corpus seeds
    name=$(basename "$bin")
    corpus="$dir/corpus/$name"; mkdir -p "$corpus"
    seeds="tests/fuzz/seeds/$name"; [ -d "$seeds" ] || seeds=""
    if ! "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=262144 \
          -artifact_prefix="$dir/$name-" "$corpus" $seeds >"$dir/$name.log" 2>&1; then
        { echo "fuzz: $name FAILED (see $dir/$name.log)"; tail -30 "$dir/$name.log"; } >"$dir/$name.report"
        return 1
    fi
    { echo "fuzz: $name for ${secs}s"; tail -1 "$dir/$name.log"; } >"$dir/$name.report"
}
rc=0
pids=() names=()
finish_one() { # waits for the oldest running target and prints its report
    wait "${pids[0]}" || rc=1
    cat "$dir/${names[0]}.report"
    pids=("${pids[@]:1}") names=("${names[@]:1}")
}
for bin in "$dir"/tests/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    [ "${#pids[@]}" -ge "$jobs" ] && finish_one
    run_one "$bin" & pids+=($!) names+=("$(basename "$bin")")
done
while [ "${#pids[@]}" -gt 0 ]; do finish_one; done
exit $rc
