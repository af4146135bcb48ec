#!/usr/bin/env bash
# Compile ahead (worker/prep_pool.h) on and off: cold tunes of one graph by BEFORE, AFTER and AFTER
# with FUSETUNE_PREP_THREADS=0 (the same binary, everything on the job's thread), alternated, each
# into a fresh store: wall seconds, the plans' whole-graph times and the breakdown's phases (what
# the jobs waited for). BENCHMARKS.md "Tuning time", "Compile ahead".
#
#   bench/tuning/prep_ahead.sh BEFORE_BINARY AFTER_BINARY GRAPH [THREADS] [ROUNDS]
set -euo pipefail
if (($# < 3)); then
  sed -n '2,7p' "$0" >&2
  exit 2
fi
before=$1 after=$2 graph=$3 threads=${4:-1} rounds=${5:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

one() {  # label binary [env assignment]
  local db=$work/fresh.db
  rm -f "$db" "$db-wal" "$db-shm"
  local t0 t1
  t0=$(date +%s.%N)
  env ${3:-} "$2" tune --local --db "$db" --threads "$threads" --json "$graph" >"$work/out.json" \
    2>"$work/err.txt" || true
  t1=$(date +%s.%N)
  python3 - "$1" "$t0" "$t1" "$work/out.json" <<'PY'
import json, sys
label, t0, t1, path = sys.argv[1:]
try:
    r = json.load(open(path))
    r = r[0] if isinstance(r, list) else r
    b, t = r["breakdown"]["jobs_ms"], r["total"]
    print(f"{label:7s} {float(t1) - float(t0):6.1f} s  {r['candidates_measured']} measured  "
          f"tuned {t['tuned_us']:.0f} us  greedy {t['greedy_us']:.0f} us  waited: compile "
          f"{b['compile_ms'] / 1e3:.1f} s, reference {b['reference_ms'] / 1e3:.1f} s, check "
          f"{b['check_ms'] / 1e3:.1f} s, timing {b['timing_ms'] / 1e3:.1f} s", flush=True)
except (OSError, ValueError, KeyError) as e:
    print(f"{label:7s} failed: {e}")
PY
}

echo "$(basename "$graph"), $threads thread(s); load: $(uptime | sed 's/.*load average: //')"
for _ in $(seq "$rounds"); do
  one before "$before"
  one after "$after"
  one noprep "$after" FUSETUNE_PREP_THREADS=0
done
echo "load: $(uptime | sed 's/.*load average: //')"
