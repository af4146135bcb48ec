#!/usr/bin/env bash
# Cold tunes of one graph by BEFORE, and by AFTER under each SETTING (an environment assignment,
# e.g. FUSETUNE_JOBS_AHEAD=3 for the jobs sent ahead, client/local_backend.h, or
# FUSETUNE_PREP_THREADS=0 for compiling on the job's thread, worker/job_runner.h; "-" for none),
# alternated, each into a fresh store: wall seconds, the plans' whole-graph times and the
# breakdown's phases (what the jobs waited for, and the core time no compile used while they
# waited for kernels). BENCHMARKS.md "Tuning time".
#
#   bench/tuning/tune_variants.sh BEFORE_BINARY AFTER_BINARY GRAPH THREADS ROUNDS SETTING...
set -euo pipefail
if (($# < 6)); then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
before=$1 after=$2 graph=$3 threads=$4 rounds=$5
shift 5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

one() {  # label binary [env assignment]
  local db=$work/fresh.db
  rm -f "$db" "$db-wal" "$db-shm"
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  env ${3:+"$3"} "$2" tune --local --db "$db" --threads "$threads" --json "$graph" >"$work/out.json" \
    2>"$work/err.txt" || rc=$?
  t1=$(date +%s.%N)
  /usr/bin/python3 - "$1" "$rc" "$t0" "$t1" "$work" <<'PY'
import json, sys
label, rc, t0, t1, work = sys.argv[1:]
try:
    r = json.load(open(f"{work}/out.json"))
    r = r[0] if isinstance(r, list) else r
    t = r.get("total", {})
    line = (f"{label:24s} {float(t1) - float(t0):5.1f} s  {r['candidates_measured']:4d} measured  "
            f"tuned {t.get('tuned_us', 0):9.0f} us  greedy {t.get('greedy_us', 0):9.0f} us  "
            f"kept {t.get('chosen', '?')}")
    b = r.get("breakdown", {}).get("jobs_ms")  # binaries before issue 12's breakdown have none
    if b:
        line += (f"  waited: compile {b['compile_ms'] / 1e3:.1f} s (cores idle "
                 f"{b.get('cores_idle_ms', 0) / 1e3:.1f} s), reference {b['reference_ms'] / 1e3:.1f}"
                 f" s, check {b['check_ms'] / 1e3:.1f} s, timing {b['timing_ms'] / 1e3:.1f} s")
    print(line, flush=True)
except (OSError, ValueError, KeyError) as e:
    print(f"{label:24s} failed (exit {rc}): {open(f'{work}/err.txt').read()[-300:]}")
PY
}

echo "$(basename "$graph"), $threads thread(s); load: $(uptime | sed 's/.*load average: //')"
for _ in $(seq "$rounds"); do
  one before "$before"
  for setting in "$@"; do
    if [ "$setting" = - ]; then one after "$after"; else one "$setting" "$after" "$setting"; fi
  done
done
echo "load: $(uptime | sed 's/.*load average: //')"
