#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pull mode: CPU per scraped profile vs the same profile pushed, RSS over the
# run, skipped ticks (bench/scrape.py; env TARGETS, INTERVAL, DURATION).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/scrape.py
