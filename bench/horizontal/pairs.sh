#!/bin/sh
# Paired, interleaved re-timing of the Q, K, V projections of x [128, H] with bias (H = 256, 768)
# at 1 and 2 threads: greedy (three dense + bias kernels) against one horizontal kernel.
# Prints "H THREADS PLAN TOTAL_US" per run, 5 rounds. Usage: bench/horizontal/pairs.sh [fusetune]
ft=${1:-build/fusetune}
dir=$(mktemp -d)
for H in 256 768; do
  cat > "$dir/qkv$H.relay" <<GRAPH
fn (%x: Tensor[(128, $H), float32], %wq: Tensor[($H, $H), float32], %bq: Tensor[($H,), float32],
    %wk: Tensor[($H, $H), float32], %bk: Tensor[($H,), float32], %wv: Tensor[($H, $H), float32],
    %bv: Tensor[($H,), float32]) {
  %0 = nn.dense(%x, %wq);
  %1 = nn.bias_add(%0, %bq);
  %2 = nn.dense(%x, %wk);
  %3 = nn.bias_add(%2, %bk);
  %4 = nn.dense(%x, %wv);
  %5 = nn.bias_add(%4, %bv);
  (%1, %3, %5)
}
GRAPH
done
echo '{"groups":[{"nodes":["%0","%1","%2","%3","%4","%5"]}]}' > "$dir/horizontal.json"
for H in 256 768; do for T in 1 2; do for r in 1 2 3 4 5; do
  for p in greedy "$dir/horizontal.json"; do
    us=$("$ft" run --json --threads $T --repeat 30 --plan "$p" "$dir/qkv$H.relay" |
         python3 -c 'import json,sys; print(round(json.load(sys.stdin)["total_us"],1))')
    echo "$H $T $(basename "$p" .json) $us"
  done
done; done; done
rm -r "$dir"
