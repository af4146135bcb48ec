#!/usr/bin/env bash
# A remote tune keeps a graph's weights: the ONNX BERT-base layer (S=128, bench/bert/export_bert.py)
# tuned cold through a farm of one worker (`serve` on 127.0.0.1, fresh store each time), "before"
# and "after" alternated, and tuned locally. "before" is what a server tuned until now: the
# model's import as Relay text, its initialisers parameters without data (`fusetune check MODEL`
# printed; the same signatures), so the same binary measures both and only the weights differ.
# Then each store's plan is run on the ONNX model (`run --plan tuned`, 1 thread) in rotated rounds
# at autogroup nice -20. Prints the tune wall times, each store's wpack measurements and plan
# groups, and the plans' times.
#
#   bench/service/remote_weights.sh [--fusetune build/fusetune] [--work DIR] [--tunes 1]
#                                   [--rounds 5]
set -euo pipefail

AFTER=build/fusetune
WORK=/tmp/fusetune_remote_weights
TUNES=2
ROUNDS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --fusetune) AFTER=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --tunes) TUNES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "remote_weights.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
AFTER=$(realpath "$AFTER")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$WORK"
MODEL=$WORK/bert/model.onnx
if [ ! -f "$MODEL" ]; then
  /usr/bin/python3 "$ROOT/bench/bert/export_bert.py" --out "$WORK/bert" --seq 128 > /dev/null
fi
INPUTS=$WORK/bert/weights_as_inputs.relay
"$AFTER" check "$MODEL" | grep -v '^signature: ' > "$INPUTS"

. "$ROOT/bench/service/farm.sh"

seconds_since() {
  /usr/bin/python3 -c 'import sys,time; print(round(time.time() - float(sys.argv[1]), 1))' "$1"
}

# farm NAME GRAPH: a fresh store NAME.db, serve, one worker, the tune; prints its wall seconds.
farm() {
  local name=$1 graph=$2 bin=$AFTER
  start_serve "$bin" "$WORK/$name.db" "$WORK/$name.serve.out" "$WORK/$name.serve.err"
  local address=$SERVE_ADDRESS
  "$bin" worker --server "$address" --id w0 > /dev/null 2> "$WORK/$name.worker.err" &
  PIDS+=($!)
  wait_for_workers "$bin" "$address" 1
  local start
  start=$(date +%s.%N)
  "$bin" tune --server "$address" --threads 1 --json "$graph" > "$WORK/$name.json" \
    2> "$WORK/$name.tune.err" || { echo "the $name tune failed: $(cat "$WORK/$name.tune.err")" >&2; exit 1; }
  seconds_since "$start"
  cleanup
}

local_tune() {
  local db=$WORK/$1.db start
  rm -f "$db" "$db-wal" "$db-shm"
  start=$(date +%s.%N)
  "$AFTER" tune --local --db "$db" --threads 1 --json "$MODEL" > "$WORK/$1.json"
  seconds_since "$start"
}

wpack() {
  local db=$WORK/$1.db
  printf '%s wpack measurements of %s, %s wpack groups in %s stored plans' \
    "$(sqlite3 "$db" "SELECT count(*) FROM measurements WHERE schedule LIKE '%wpack=1%'")" \
    "$(sqlite3 "$db" "SELECT count(*) FROM measurements")" \
    "$(sqlite3 "$db" "SELECT coalesce(sum((length(plan_json) - length(replace(plan_json, 'wpack=1', ''))) / 7), 0) FROM best_plans")" \
    "$(sqlite3 "$db" "SELECT count(*) FROM best_plans")"
}

echo "load before: $(uptime)"
NAMES=()
for t in $(seq "$TUNES"); do
  for side in before after; do
    graph=$INPUTS; [ "$side" = after ] && graph=$MODEL
    s=$(farm "remote_${side}_$t" "$graph")
    echo "tune remote $side #$t: $s s; $(wpack "remote_${side}_$t")"
    NAMES+=("remote_${side}_$t")
  done
  s=$(local_tune "local_$t")
  echo "tune local (after) #$t: $s s; $(wpack "local_$t")"
  NAMES+=("local_$t")
done

# Each store's plan, every round in a rotated order, 1 thread, at autogroup nice -20.
declare -A TIMES
for r in $(seq "$ROUNDS"); do
  n=${#NAMES[@]}
  for i in $(seq 0 $((n - 1))); do
    name=${NAMES[$(( (i + r) % n ))]}
    us=$(sh -c 'echo -20 > /proc/self/autogroup; exec nice -n -20 "$@"' _ \
           "$AFTER" run --plan tuned --db "$WORK/$name.db" --threads 1 --repeat 20 --json "$MODEL" |
         /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["total_us"])')
    TIMES[$name]="${TIMES[$name]:-} $us"
  done
done
echo "run --plan tuned, 1 thread, ms per round (rounds rotated):"
for name in "${NAMES[@]}"; do
  /usr/bin/python3 -c '
import statistics, sys
v = [float(x) / 1000 for x in sys.argv[2].split()]
each = " ".join("%.2f" % x for x in v)
print("  %-18s median %6.2f  [%s]" % (sys.argv[1], statistics.median(v), each))
' "$name" "${TIMES[$name]}"
done
echo "load after: $(uptime)"
