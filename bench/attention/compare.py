#!/usr/bin/python3
"""Attention as one kernel against greedy: the BERT layer and its attention region alone, at
several sequence lengths and thread counts, tuned with the attention kernel available, then
re-timed in alternating rounds in one run.

For each S the BERT-base layer (examples/bert_layer_s128.relay with 128 replaced by S) and the
attention region alone (Q, K, Vᵀ, mask -> batch_matmul, scale, mask, softmax, batch_matmul; 12
heads of 64) are written to a temporary directory and tuned cold (one store per thread count).
Then, round after round, each graph runs under `--plan tuned`, `--plan greedy` and a plan file
that is greedy with its attention chain merged into one kernel at the template's default
schedule ("fused"), so the kernel is timed whether or not the search kept it. Prints one JSON
object per (graph, S, threads) line: medians, ratios, whether the tuned plan holds an attention
group (and its schedule), the tune time, and the load.

  bench/attention/compare.py --fusetune build/fusetune --seq 128,256,384,512 --threads 1,2
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LAYER = os.path.join(HERE, "..", "..", "examples", "bert_layer_s128.relay")

REGION = """fn (%q: Tensor[(12, {s}, 64), float32], %k: Tensor[(12, {s}, 64), float32],
    %vt: Tensor[(12, 64, {s}), float32], %mask: Tensor[(1, {s}, {s}), float32]) {{
  %0 = nn.batch_matmul(%q, %k);
  %1 = multiply(%0, 0.125f);
  %2 = add(%1, %mask);
  %3 = nn.softmax(%2, axis=-1);
  nn.batch_matmul(%3, %vt)
}}
"""


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def ops_of(ft, graph):
    nodes = run([ft, "check", "--json", graph])["nodes"]
    return {n["name"]: n["op"] for n in nodes}


def attention_groups(groups, ops):
    """Groups holding a softmax and two batch_matmuls: only the attention template makes those."""
    out = []
    for g in groups:
        names = [ops.get(n) for n in g]
        if names.count("nn.batch_matmul") == 2 and "nn.softmax" in names:
            out.append(g)
    return out


def fused_plan(ft, graph, ops, threads, path):
    """Greedy with the groups holding the attention chain (two batch_matmuls, the steps between)
    merged into one group; None when greedy's groups cannot be merged that way."""
    greedy = run([ft, "run", "--json", "--threads", str(threads), "--repeat", "1", "--plan",
                  "greedy", graph])["groups"]
    bmm = sorted((n for g in greedy for n in g if ops.get(n) == "nn.batch_matmul"),
                 key=lambda n: int(n[1:]))
    if len(bmm) != 2:
        return None
    lo, hi = int(bmm[0][1:]), int(bmm[1][1:])
    chain = {f"%{i}" for i in range(lo, hi + 1)}
    merged, rest = [], []
    for g in greedy:
        if set(g) & chain:
            merged += [n for n in g if n in chain]
            outside = [n for n in g if n not in chain]
            if outside:
                rest.append(outside)
        else:
            rest.append(g)
    groups = rest + [sorted(merged, key=lambda n: int(n[1:]))]
    # Order: groups after the groups they read; node numbers are topological, so sorting groups
    # by their last node is enough for chains like these.
    groups.sort(key=lambda g: max(int(n[1:]) for n in g))
    with open(path, "w") as f:
        json.dump({"groups": [{"nodes": g} for g in groups]}, f)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fusetune", default="build/fusetune")
    p.add_argument("--seq", default="128,256,384,512")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--graphs", default="region,layer")
    p.add_argument("--tune-args", default="", help="extra arguments for every tune")
    p.add_argument("--no-tune", action="store_true",
                   help="time greedy and fused only (no tune, no tuned plan)")
    args = p.parse_args()
    ft = args.fusetune
    tmp = tempfile.mkdtemp(prefix="fusetune_attention_")
    layer_text = open(LAYER).read()
    for threads in [int(t) for t in args.threads.split(",")]:
        db = os.path.join(tmp, f"t{threads}.db")
        for s in [int(x) for x in args.seq.split(",")]:
            for kind in args.graphs.split(","):
                graph = os.path.join(tmp, f"{kind}_s{s}.relay")
                with open(graph, "w") as f:
                    f.write(REGION.format(s=s) if kind == "region"
                            else layer_text.replace("128", str(s)))
                ops = ops_of(ft, graph)
                plans = {"greedy": "greedy"}
                tuned_groups, tune_s = [], 0.0
                if not args.no_tune:
                    start = time.time()
                    tune = run([ft, "tune", "--local", "--json", "--threads", str(threads), "--db",
                                db, *args.tune_args.split(), graph])
                    tune_s = time.time() - start
                    tuned_groups = [g for r in tune["regions"] for g in r["plan"]]
                    plans["tuned"] = "tuned"
                fused = fused_plan(ft, graph, ops, threads,
                                   os.path.join(tmp, f"{kind}_s{s}_t{threads}_fused.json"))
                if fused:
                    plans["fused"] = fused
                times = {name: [] for name in plans}
                for _ in range(args.rounds):
                    for name, plan in plans.items():
                        r = run([ft, "run", "--json", "--threads", str(threads), "--db", db,
                                 "--repeat", str(args.repeat), "--plan", plan, graph])
                        times[name].append(r["total_us"])
                med = {k: statistics.median(v) for k, v in times.items()}
                out = {"graph": kind, "seq": s, "threads": threads,
                       "median_us": {k: round(v, 1) for k, v in med.items()},
                       "rounds_us": {k: [round(x, 1) for x in v] for k, v in times.items()},
                       "uptime": ""}
                if "tuned" in med:
                    out["tuned_over_greedy"] = round(med["tuned"] / med["greedy"], 3)
                    out["attention_in_tuned"] = attention_groups(tuned_groups, ops)
                    out["tune_s"] = round(tune_s, 1)
                out.update({
                       "uptime": subprocess.run(["uptime"], capture_output=True,
                                                text=True).stdout.strip().split("load")[-1]})
                if "fused" in med:
                    out["fused_over_greedy"] = round(med["fused"] / med["greedy"], 3)
                print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
