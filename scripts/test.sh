#!/usr/bin/env bash
# Set up, then run every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The status page test renders in headless Chromium (systemd-analyze, when present, checks units).
EXTRA_PACKAGES="chromium" scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
