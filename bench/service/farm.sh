# Sourced by the farm benchmarks (two_workers.sh, remote_weights.sh): a `fusetune serve` on
# 127.0.0.1 with workers, started and stopped by this script's process ids only.

PIDS=()
cleanup() {  # only the processes this script started, by their ids
  for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
trap cleanup EXIT

# start_serve BIN DB OUT ERR: a fresh store DB, `serve` on a free port (its stdout to OUT, stderr
# to ERR); sets SERVE_ADDRESS, or exits when the server does not start.
start_serve() {
  local bin=$1 db=$2 out=$3 err=$4
  rm -f "$db" "$db-wal" "$db-shm"
  "$bin" serve --listen 127.0.0.1:0 --db "$db" > "$out" 2> "$err" &
  PIDS+=($!)
  SERVE_ADDRESS=""
  for _ in $(seq 100); do
    SERVE_ADDRESS=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$out" 2>/dev/null |
                    sed 's/listening on //') || true
    [ -n "$SERVE_ADDRESS" ] && break
    sleep 0.1
  done
  [ -n "$SERVE_ADDRESS" ] || { echo "serve did not start: $(cat "$err")" >&2; exit 1; }
}

# wait_for_workers BIN ADDRESS N: until N workers are registered (at most 10 s).
wait_for_workers() {
  for _ in $(seq 100); do
    [ "$("$1" workers --server "$2" --json | grep -c '"id"')" -ge "$3" ] && break
    sleep 0.1
  done
}
