#!/usr/bin/env bash
# Cold tunes of one graph by two fusetune binaries, alternated in one run, each into a fresh store:
# wall seconds, measurements and the whole-graph figures each stored (BENCHMARKS.md "Tuning time").
#
#   bench/tuning/before_after.sh BEFORE_BINARY AFTER_BINARY GRAPH [THREADS] [RUNS]
#
# Run it at raised priority on a shared machine (echo -20 > /proc/self/autogroup) and compare the
# two binaries' figures from the same run only.
set -euo pipefail
if (($# < 3)); then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
before=$1 after=$2 graph=$3 threads=${4:-1} runs=${5:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

one() {  # label binary
  local db=$work/fresh.db
  rm -f "$db" "$db-wal" "$db-shm"
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  "$2" tune --local --db "$db" --threads "$threads" --json "$graph" >"$work/out.json" \
    2>"$work/err.txt" || rc=$?
  t1=$(date +%s.%N)
  python3 - "$1" "$rc" "$t0" "$t1" "$work" <<'PY'
import json, sys
label, rc, t0, t1, work = sys.argv[1:]
wall = float(t1) - float(t0)
try:
    r = json.load(open(f"{work}/out.json"))
    r = r[0] if isinstance(r, list) else r
    t = r.get("total", {})
    print(f"{label:7s} {wall:7.1f} s  {r['candidates_measured']:4d} measured  "
          f"tuned {t.get('tuned_us', 0):9.0f} us  greedy {t.get('greedy_us', 0):9.0f} us  "
          f"kept {t.get('chosen', '?')}", flush=True)
except (OSError, ValueError, KeyError) as e:
    print(f"{label:7s} {wall:7.1f} s  failed (exit {rc}): {open(f'{work}/err.txt').read()[-300:]}")
PY
}

echo "$(basename "$graph"), $threads thread(s); load: $(uptime | sed 's/.*load average: //')"
for _ in $(seq "$runs"); do
  one before "$before"
  one after "$after"
done
echo "load: $(uptime | sed 's/.*load average: //')"
