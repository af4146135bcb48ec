#!/usr/bin/env bash
# Cold tunes of one graph by two fusetune binaries, alternated in one run, each into a fresh store:
# wall seconds, measurements and the whole-graph figures each stored, and where the jobs waited
# (BENCHMARKS.md "Tuning time"). tune_variants.sh with no setting.
#
#   bench/tuning/before_after.sh BEFORE_BINARY AFTER_BINARY GRAPH [THREADS] [RUNS]
#
# Run it at raised priority on a shared machine (echo -20 > /proc/self/autogroup) and compare the
# two binaries' figures from the same run only.
set -euo pipefail
if (($# < 3)); then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
exec "$(dirname "$0")/tune_variants.sh" "$1" "$2" "$3" "${4:-1}" "${5:-2}" -
