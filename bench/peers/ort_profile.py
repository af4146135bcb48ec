#!/usr/bin/python3
"""A transformer layer piece by piece: ONNX Runtime's per-node profile beside fusetune's kernels.

ONNX Runtime runs the model through bench/peers/ort_time.js --profile (its own profiler,
enableProfiling: every node of every call), fusetune through `fusetune run --plan P --json` (every
kernel of the plan timed). Both sides' nodes and kernels are sorted into the same pieces of the
layer (the QKV projection, Q·Kᵀ, softmax, P·V, ..., see `piece_of_*`), then printed side by side
with what each matmul piece could take at the FMA peak (--peak-gflops per thread count, from
`matmul_bench peak`):

  /usr/bin/python3 bench/peers/ort_profile.py --fusetune build/fusetune --case W/s256 \\
      --db W/b.db --threads 1 2 --rounds 3 --boost --peak-gflops 201 402

--case is a directory bench/peers/peers.py's export wrote (model.onnx, inputs/); --plan takes
what `fusetune run --plan` takes (tuned with --db, greedy, unfused, a plan JSON file). Each round
profiles ORT and runs fusetune once per thread count, alternated; printed are the per-piece
medians over rounds (ORT's per round: the median of its calls after the warmup). A fused kernel
that spans pieces (FFN 1 with its GELU, attention as one kernel) is counted in its heaviest piece,
and its other ops are named in the table. ORT's figures are with its profiler on (its whole call
too); fusetune's are `run --json`'s kernels timed in sequence, medians per kernel, so their sum
and the whole call's median differ by the noise.
"""
import argparse
import collections
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402

# Pieces in the layer's order; the last takes the slices, reshapes and transposes.
PIECES = ["QKV dense", "Q·Kᵀ", "softmax", "P·V", "out proj dense", "layer norm 1 (+residual)",
          "FFN 1 dense", "GELU", "FFN 2 dense", "layer norm 2 (+residual)", "attention (1 kernel)",
          "head split/merge, reshapes"]
DENSES = ["QKV dense", "out proj dense", "FFN 1 dense", "FFN 2 dense"]
BATCH_MATMULS = ["Q·Kᵀ", "P·V"]
LAYER_NORMS = ["layer norm 1 (+residual)", "layer norm 2 (+residual)"]
NORM_OPS = {"mean", "variance", "sqrt", "rsqrt", "nn.layer_norm"}


def piece_of_ort(op, out_shape, order):
    """ORT's fused op names (graphOptimizationLevel 'all') to pieces; `order` counts per kind.
    A MatMul whose output has a leading batch of heads ([12, S, S]) is a batch_matmul."""
    batched = len(out_shape) >= 3 and out_shape[0] > 1 and op in ("MatMul", "FusedMatMul")
    if op in ("Gemm", "MatMul", "FusedMatMul", "FusedGemm") and not batched and order["dense"] < 4:
        order["dense"] += 1
        return DENSES[order["dense"] - 1]
    if batched and order["bmm"] < 2:
        order["bmm"] += 1
        return BATCH_MATMULS[order["bmm"] - 1]
    if op in ("Attention", "MultiHeadAttention"):
        return "attention (1 kernel)"
    if op == "Softmax":
        return "softmax"
    if op in ("Gelu", "BiasGelu", "FastGelu", "Erf"):
        return "GELU"
    if op in ("SkipLayerNormalization", "LayerNormalization", "SimplifiedLayerNormalization"):
        order["norm"] += 1
        return LAYER_NORMS[min(order["norm"], 2) - 1]
    return "head split/merge, reshapes"


def piece_of_kernel(ops, order):
    """fusetune's kernel (its ops, in graph order) to a piece: its heaviest op decides."""
    dense, bmm = ops.count("nn.dense"), ops.count("nn.batch_matmul")
    if bmm >= 2:
        return "attention (1 kernel)"
    if dense:
        order["dense"] += dense
        return DENSES[min(order["dense"], 4) - dense]  # horizontal QKV counts as the first
    if bmm:
        order["bmm"] += 1
        return BATCH_MATMULS[min(order["bmm"], 2) - 1]
    if "nn.softmax" in ops:
        return "softmax"
    if "erf" in ops or "tanh" in ops:
        return "GELU"
    if NORM_OPS & set(ops) or "add" in ops or "subtract" in ops:
        # The residual add is the norm's piece, as in ORT's SkipLayerNormalization.
        return LAYER_NORMS[0 if order["dense"] <= 2 else 1]
    return "head split/merge, reshapes"


def ort_round(case, threads, args, prefix):
    env = peers.huge_page_env(dict(os.environ))
    stdout, _ = peers.run(["node", os.path.join(HERE, "ort_time.js"), "--model", case + "/model.onnx",
                           "--inputs", case + "/inputs", "--threads", str(threads), "--seconds",
                           str(args.seconds), "--warmup", str(args.warmup), "--ort-dir",
                           args.ort_dir, "--profile", prefix], env=env, boost=args.boost)
    result = json.loads(stdout)
    with open(result["profile"]) as f:
        trace = json.load(f)
    os.remove(result["profile"])
    # One list of durations per node, in call order; the warmup calls are dropped.
    durs, op_of, shape_of, first = collections.defaultdict(list), {}, {}, {}
    for e in trace:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            durs[e["name"]].append(e["dur"])
            op_of[e["name"]] = e["args"].get("op_name", "?")
            outs = e["args"].get("output_type_shape") or [{}]
            shape_of[e["name"]] = next(iter(outs[0].values()), [])
            first.setdefault(e["name"], len(first))
    pieces, ops, order = collections.defaultdict(float), collections.defaultdict(set), \
        collections.Counter()
    for name in sorted(durs, key=first.get):
        piece = piece_of_ort(op_of[name], shape_of[name], order)
        pieces[piece] += statistics.median(durs[name][args.warmup:] or durs[name])
        ops[piece].add(op_of[name])
    return result["us"], pieces, ops


def fusetune_round(case, threads, args, graph):
    cmd = [os.path.abspath(args.fusetune), "run", case + "/model.onnx", "--plan", args.plan,
           "--threads", str(threads), "--inputs", case + "/inputs", "--repeat", str(args.repeat),
           "--json"]
    if args.db:
        cmd += ["--db", args.db]
    stdout, _ = peers.run(cmd, boost=args.boost)
    result = json.loads(stdout)
    op = {n["name"]: n["op"] for n in graph["nodes"]}
    flops = peers.matmul_flops(graph)
    pieces, ops, fl = collections.defaultdict(float), collections.defaultdict(set), \
        collections.defaultdict(float)
    order = collections.Counter()
    for k in result["kernels"]:
        kops = [op[n] for n in k["nodes"] if n in op]
        piece = piece_of_kernel(kops, order)
        pieces[piece] += k["us"]
        ops[piece].update(kops)
        fl[piece] += sum(flops.get(n, 0) for n in k["nodes"])
    return result["total_us"], result["max_abs_error"], pieces, ops, fl


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fusetune", default=os.path.join(peers.ROOT, "build", "fusetune"))
    p.add_argument("--case", required=True, help="exported model directory (model.onnx, inputs/)")
    p.add_argument("--db", help="fusetune store holding the tuned plans")
    p.add_argument("--plan", default="tuned", help="fusetune run --plan")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5, help="fusetune run --repeat")
    p.add_argument("--seconds", type=float, default=1.0, help="ORT's calls per round, seconds")
    p.add_argument("--warmup", type=int, default=10, help="ORT's calls left out of its profile")
    p.add_argument("--peak-gflops", type=float, nargs="+",
                   help="the FMA peak per thread count (GFLOP/s), for the bound column")
    p.add_argument("--ort-dir", default=os.environ.get("ORT_NODE_DIR", "/work/ort"))
    p.add_argument("--boost", action="store_true", help="autogroup nice -20 (root)")
    p.add_argument("--work", default="/tmp/ort_profile", help="ORT's trace files (removed after)")
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args()

    case = os.path.abspath(args.case)
    graph, _ = peers.checked_graph(args.fusetune, case + "/model.onnx")
    rows = []
    for ti, threads in enumerate(args.threads):
        ort_pieces, our_pieces = collections.defaultdict(list), collections.defaultdict(list)
        ort_ops, our_ops, flops, totals, loads = {}, {}, {}, {"ort": [], "ours": []}, []
        for r in range(args.rounds):
            loads.append(os.getloadavg()[0])
            us, pieces, ops = ort_round(case, threads, args, os.path.join(args.work, "trace"))
            totals["ort"].append(us)
            for k in PIECES:
                ort_pieces[k].append(pieces.get(k, 0.0))
            ort_ops = {k: ort_ops.get(k, set()) | v for k, v in ops.items()}
            us, err, pieces, ops, flops = fusetune_round(case, threads, args, graph)
            totals["ours"].append(us)
            for k in PIECES:
                our_pieces[k].append(pieces.get(k, 0.0))
            our_ops = {k: our_ops.get(k, set()) | v for k, v in ops.items()}
        peak = args.peak_gflops[min(ti, len(args.peak_gflops) - 1)] if args.peak_gflops else None
        print(f"\n{os.path.basename(case)}, {threads} thread(s), plan {args.plan}, {args.rounds} "
              f"rounds, load {min(loads):.1f}-{max(loads):.1f}; max |error| {err:.1e}")
        print(f"{'piece':28s} {'ORT µs':>9s} {'ours µs':>9s} {'ours/ORT':>8s} {'peak µs':>8s}"
              "  ORT ops | our kernels' ops")
        row = {"case": case, "threads": threads, "plan": args.plan, "load_1min": loads,
               "pieces": {}}
        sums = [0.0, 0.0]
        for k in PIECES:
            o, u = statistics.median(ort_pieces[k]), statistics.median(our_pieces[k])
            if not o and not u:
                continue
            sums[0] += o
            sums[1] += u
            bound = flops.get(k, 0) / (peak * 1e3) if peak and flops.get(k) else None
            row["pieces"][k] = {"ort_us": o, "ours_us": u, "peak_us": bound,
                                "ort_ops": sorted(ort_ops.get(k, [])),
                                "our_ops": sorted(our_ops.get(k, []))}
            ratio = f"{u / o:8.2f}" if o else f"{'-':>8s}"
            b = f"{bound:8.0f}" if bound else f"{'':8s}"
            print(f"{k:28s} {o:9.0f} {u:9.0f} {ratio} {b}  {','.join(sorted(ort_ops.get(k, [])))}"
                  f" | {','.join(sorted(our_ops.get(k, [])))}")
        t_ort, t_ours = statistics.median(totals["ort"]), statistics.median(totals["ours"])
        print(f"{'sum of pieces':28s} {sums[0]:9.0f} {sums[1]:9.0f} {sums[1] / sums[0]:8.2f}")
        print(f"{'whole call (own timer)':28s} {t_ort:9.0f} {t_ours:9.0f} {t_ours / t_ort:8.2f}"
              "  (ORT's with its profiler on)")
        row.update({"ort_total_us": t_ort, "ours_total_us": t_ours})
        rows.append(row)
    peers.write_json(args.json, rows)


if __name__ == "__main__":
    main()
