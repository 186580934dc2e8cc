#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# memory_limiter goodput (issue 25 item 3): limit_mib 150, 4 MB gzip bodies
# (15.5 MB raw), 4 clients then 40 clients for DURATION s each through
# bench/flood.py in the same run; prints accepted bytes/s of each and the
# ratio 40 / 4 (goal >= 0.5), and peak RSS / limit_mib of each (goal <= 1).
set -euo pipefail
cd "$(dirname "$0")/.."
export PG_BUILD_DIR=$(realpath "${PG_BUILD_DIR:-build}")
[ -x "$PG_BUILD_DIR/bench/flood_client" ] || cmake --build "$PG_BUILD_DIR" --target flood_client
D=${DURATION:-20}
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
awk -v a="${ok[40]:-0}" -v b="${ok[4]:-0}" 'BEGIN { printf "accepted bytes/s, 40 clients / 4 clients = %.2f (goal >= 0.5)\n", b ? a / b : 0 }'
