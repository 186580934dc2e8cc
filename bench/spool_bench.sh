#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Spool (sending_queue.storage) cost on the disk that would hold it: appends/s
# with fsync always and interval next to plain write(+fdatasync) baselines in
# the same run, then replay and ack speed. Figures only.
#   bench/spool_bench.sh [DIR on the target disk] [RECORD_BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${PG_BUILD_DIR:-build}
dir=${1:-/var/tmp/pg_spool_bench.$$}
for size in ${2:-4096 16384 262144}; do
    "$BUILD/bench/spool_bench" "$dir" "$size" 2
done
