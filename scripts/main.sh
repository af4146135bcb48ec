#!/usr/bin/env bash
# The main job: set up, then tune the seed example with the embedded default (local SQLite file,
# in-process worker). Extra arguments go to `fusetune`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/fusetune tune --local examples/bmm_where_s256.relay "$@"
