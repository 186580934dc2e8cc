#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# memory_limiter goodput (issue 25 item 3): limit_mib 150, 4 MB gzip bodies
# (15.5 MB raw), 4 clients then 40 clients for DURATION s each through
# bench/flood.py in the same run; prints accepted bytes/s of each and the
# ratio 40 / 4 (goal >= 0.5), and peak RSS / limit_mib of each (goal <= 1).
# First bench/mem_estimate.py: each body's admission estimate against the peak it was
# charged and the process's VmHWM growth (ESTIMATES=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PG_BUILD_DIR=$(realpath "${PG_BUILD_DIR:-build}")
[ -x "$PG_BUILD_DIR/bench/flood_client" ] || cmake --build "$PG_BUILD_DIR" --target flood_client
D=${DURATION:-20}
[ "${ESTIMATES:-1}" = 0 ] || python3 bench/mem_estimate.py
declare -A ok rss
for c in 4 40; do
    out=$(CLIENTS=$c LIMIT_MIB=150 SPIKE_MIB=30 DURATION=$D PIN=0 AUTH=0 python3 bench/flood.py)
    ok[$c]=$(sed -n "s/.*'204': '\([0-9]*\)'.*/\1/p" <<<"$out")
    rss[$c]=$(sed -n 's/.*peak RSS \/ limit_mib = \([0-9.]*\).*/\1/p' <<<"$out")
done
size=$(stat -c %s "$PG_BUILD_DIR"/flood-140000.pprof.gz)
for c in 4 40; do
    echo "$c clients: ${ok[$c]:-0} accepted in $D s = $(( ${ok[$c]:-0} * size / D / 1024 )) KiB/s; peak RSS / limit_mib ${rss[$c]}"
done
awk -v a="${ok[40]:-0}" -v b="${ok[4]:-0}" -v r4="${rss[4]:-0}" -v r40="${rss[40]:-0}" 'BEGIN {
    printf "accepted bytes/s, 40 clients / 4 clients = %.2f (goal >= 0.5): %s\n", (b ? a / b : 0), ((b > 0 && a / b >= 0.5) ? "met" : "NOT met")
    printf "peak RSS / limit_mib, 4 clients %.2f, 40 clients %.2f (goal <= 1.0): %s\n", r4, r40, ((r4 <= 1 && r40 <= 1) ? "met" : "NOT met") }'
