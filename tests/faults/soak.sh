#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Long form of the fault suite, on demand (not in `make test`): 30 minutes of
# mixed load against the real gRPC collector with a fault every 30 s
# (collector down, slow, UNAVAILABLE, connections cut, and kill -9 + restart
# when the spool is built in); prints accepted, delivered, refused by reason
# and peak RSS, and fails unless accepted == delivered.
#   tests/faults/soak.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
secs="${1:-1800}"
build="${2:-$root/build}"
export PPROFGATE_BIN="${PPROFGATE_BIN:-$build/pprofgate}"
export PG_SOURCE_DIR="$root" PG_FIXTURES="$root/tests/fixtures" PG_SHARED="$root/../shared"
ulimit -n 8192 2>/dev/null || true
python3 "$here/test_faults.py" --soak "$secs"
# Then the long fault pass: every byte of every fixture flipped, bigger loads.
python3 "$here/test_faults.py" --long
