#!/usr/bin/env bash
# Cold tune of the BERT-base encoder layer (S=128, bench/bert/export_bert.py) through a farm of one
# worker, then of two: `fusetune serve` on 127.0.0.1 with a fresh store each time, each worker
# pinned to its own core (`taskset -c N`, `--threads 1`), the task at 1 thread. Prints both
# wall times, the ratio, and the load average (the machine may be shared: compare the ratio).
#
#   bench/service/two_workers.sh [--fusetune build/fusetune] [--work DIR] [--cpus "0 1"]
#
# Issue 12 §3's target: two pinned workers tune the layer >= 1.6x faster than one.
set -euo pipefail

FUSETUNE=build/fusetune
WORK=/tmp/fusetune_two_workers
CPUS="0 1"
while [ $# -gt 0 ]; do
  case "$1" in
    --fusetune) FUSETUNE=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --cpus) CPUS=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "two_workers.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
read -r -a CPU_LIST <<< "$CPUS"
[ "${#CPU_LIST[@]}" -ge 2 ] || { echo "two_workers.sh: --cpus needs two cores" >&2; exit 2; }
FUSETUNE=$(realpath "$FUSETUNE")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$WORK"
MODEL=$WORK/bert/model.onnx
if [ ! -f "$MODEL" ]; then
  /usr/bin/python3 "$ROOT/bench/bert/export_bert.py" --out "$WORK/bert" --seq 128
fi

. "$ROOT/bench/service/farm.sh"

# farm N: a fresh store, serve, N pinned workers; prints the tune's wall seconds.
farm() {
  local n=$1
  start_serve "$FUSETUNE" "$WORK/farm$n.db" "$WORK/serve$n.out" "$WORK/serve$n.err"
  local address=$SERVE_ADDRESS
  for i in $(seq 0 $((n - 1))); do
    taskset -c "${CPU_LIST[$i]}" "$FUSETUNE" worker --server "$address" --threads 1 \
      --id "w$i" > /dev/null 2> "$WORK/worker$n.$i.err" &
    PIDS+=($!)
  done
  wait_for_workers "$FUSETUNE" "$address" "$n"
  local start end
  start=$(date +%s.%N)
  if ! "$FUSETUNE" tune --server "$address" --threads 1 --json "$MODEL" > "$WORK/tune$n.json"; then
    echo "two_workers.sh: the tune with $n worker(s) failed" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  cleanup
  /usr/bin/python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$start" "$end"
}

one=$(farm 1) || exit 1
two=$(farm 2) || exit 1
measured() {
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["candidates_measured"])' "$1"
}
echo "BERT layer S=128 cold, task at 1 thread, workers pinned to cores ${CPU_LIST[0]} / ${CPU_LIST[0]},${CPU_LIST[1]}"
printf '1 worker:  %6.1f s (%s measurements)\n' "$one" "$(measured "$WORK/tune1.json")"
printf '2 workers: %6.1f s (%s measurements)\n' "$two" "$(measured "$WORK/tune2.json")"
printf 'ratio 1/2: %6.2fx\n' "$(/usr/bin/python3 -c 'import sys; print(float(sys.argv[1]) / float(sys.argv[2]))' "$one" "$two")"
echo "load: $(uptime)"
