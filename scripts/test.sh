#!/usr/bin/env bash
# Set up, then run every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
