#!/usr/bin/python3
"""Tuned against greedy (TVM's rules, default schedules) on the example graphs and on transformer
blocks at S = 64 ... 512: issue 13's first target.

Each case is tuned cold into a store of its own, then `fusetune run --plan tuned --against greedy`
re-times both in paired rounds in one process, alternating which goes first (--separate-processes:
a `run` process per plan and round, as before `--against` existed). A case's figure is the median of the
per-round ratios greedy / tuned (above 1: the tuned plan is faster), with the spread of those ratios;
the summary is their geometric mean. "what differs" names what the tuned plan changed: groups
unlike greedy's, and schedules unlike the defaults (from `tune --json`); "ceiling" is the most any
plan could gain over greedy on the case: greedy's time against the case's matmuls at the FMA peak
(from the tuned plan's share of the peak that `run` reports; "-" without a matmul, also what
greedy_headroom.py gives without tuning); "kept" is the plan the tune
kept for the whole graph (greedy: TVM's GreedyPlan on default schedules, the plan `run --plan
greedy` runs; tuned: a searched plan won beyond noise).

  bench/search/tuned_vs_greedy.py --fusetune build/fusetune --threads 1 --rounds 5
  bench/search/tuned_vs_greedy.py --cases examples/gpt2_mlp.relay examples/bert_layer_dyn.relay@x.0=256

--store PATH tunes every case into that one store, in order, as a farm's store fills: after the
first few cases the schedules are ranked by the model learned from the store's measurements
("ranking" says which order each tune used), where a fresh store per case ranks by the roofline.
Warm starts from other sizes stay off (`--cold`) either way.

--bind-weights binds the weights (every dense's B operand and every 1-D parameter) to random values
with `--params`, as a TVM user binds trained weights before `relay.build`: the greedy baseline still
packs them in every call (default schedules), a tuned plan may pack them once (`wpack`).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT_CASES = [
    "examples/bmm_where_s128.relay",
    "examples/bmm_where_s256.relay",
    "examples/bmm_where_s512.relay",
    "examples/sub_exp_100x120x120.relay",
    "examples/softmax_decomposed.relay",
    "examples/layer_norm_ops.relay",
    "examples/rms_norm_ops.relay",
    "examples/attention_softmax_ops.relay",
    "examples/gpt2_mlp.relay",
    "examples/qkv_attention.relay",
    "examples/bert_layer_dyn.relay@x.0=64",
    "examples/bert_layer_s128.relay",
    "examples/bert_layer_dyn.relay@x.0=256",
    "examples/bert_layer_dyn.relay@x.0=384",
    "examples/bert_layer_dyn.relay@x.0=512",
    "examples/bert_layer_ops_dyn.relay@x.0=128",
    "examples/gpt2_block_dyn.relay@x.0=128",
    "examples/gpt2_block_dyn.relay@x.0=512",
    "examples/llama_block_dyn.relay@x.0=128",
    "examples/llama_block_dyn.relay@x.0=512",
]


def run_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr}")
    return json.loads(out.stdout)


def split_case(case):
    graph, _, dim = case.partition("@")
    return graph, (["--dim", dim] if dim else [])


def write_weights(args, graph, dim, out_dir):
    """Random .npy files for the graph's weights (dense B operands, 1-D parameters) in out_dir."""
    import numpy as np  # only this option needs numpy (/usr/bin/python3 has it)
    info = run_json([args.fusetune, "check", "--json", graph] + dim)
    types = {p["name"]: p["type"] for p in info["params"]}
    weights = {n["inputs"][1] for n in info["nodes"] if n["op"] == "nn.dense"}
    weights |= {name for name, t in types.items() if t.count(",") == 1 and "(" in t}
    rng = np.random.default_rng(0)
    for name in sorted(weights & types.keys()):
        shape = [int(d) for d in types[name].split("(")[1].split(")")[0].split(",") if d.strip()]
        np.save(os.path.join(out_dir, name.lstrip("%") + ".npy"),
                rng.uniform(-0.05, 0.05, shape).astype(np.float32))
    return sorted(weights & types.keys())


def measure(args, case):
    graph, dim = split_case(case)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.store or os.path.join(tmp, "store.db")
        common = ["--db", db, "--threads", str(args.threads)] + dim
        if args.bind_weights:
            params = os.path.join(tmp, "params")
            os.mkdir(params)
            if write_weights(args, graph, dim, params):
                common += ["--params", params]
        start = time.monotonic()
        tuned = run_json([args.fusetune, "tune", "--cold", "--json", graph] + common)
        tune_s = time.monotonic() - start
        ratios, times = [], {"tuned": [], "greedy": []}
        share = None
        groups = {}
        if not args.separate_processes:
            # Both plans in one process, paired round by round (`run --against`).
            res = run_json([args.fusetune, "run", "--json", "--plan", "tuned", "--against",
                            "greedy", "--rounds", str(args.rounds), "--repeat", str(args.repeat),
                            graph] + common)
            groups["tuned"] = res["groups"]
            groups["greedy"] = res["against"]["groups"]
            share = res.get("matmul_fraction_of_peak")
            for r in res["against"]["rounds"]:
                ratios.append(r["against_us"] / r["plan_us"])
                times["tuned"].append(r["plan_us"])
                times["greedy"].append(r["against_us"])
        else:
            for r in range(args.rounds):
                order = ["tuned", "greedy"] if r % 2 == 0 else ["greedy", "tuned"]
                got = {}
                for plan in order:
                    res = run_json([args.fusetune, "run", "--json", "--plan", plan, "--repeat",
                                    str(args.repeat), graph] + common)
                    got[plan] = res["total_us"]
                    groups[plan] = res["groups"]
                    if plan == "tuned":
                        share = res.get("matmul_fraction_of_peak")
                    times[plan].append(res["total_us"])
                ratios.append(got["greedy"] / got["tuned"])
    ratio = statistics.median(ratios)
    greedy_groups = {tuple(g) for g in groups["greedy"]}
    new_groups = [g for g in groups["tuned"] if tuple(g) not in greedy_groups]
    differs = f"{len(new_groups)} group(s) unlike greedy's" if new_groups else "same groups"
    return {
        "case": case,
        "tune_s": round(tune_s, 1),
        "measured": tuned.get("candidates_measured"),
        "greedy_over_tuned": ratio,
        # The tuned plan's matmul FLOPs as a share of the FMA peak (`run`), and from it the most
        # any plan could gain over greedy: greedy's time against its matmuls at the peak.
        "tuned_fraction_of_peak": share,
        "ceiling": ratio / share if share else None,
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "tuned_us": statistics.median(times["tuned"]),
        "greedy_us": statistics.median(times["greedy"]),
        "tuned_groups": len(groups["tuned"]),
        "greedy_groups": len(groups["greedy"]),
        "what_differs": differs,
        "kept": tuned.get("total", {}).get("chosen", ""),
        "ranking": (tuned.get("breakdown") or {}).get("schedule_ranking") or "",
        "decision": tuned.get("total", {}).get("decision", ""),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--fusetune", default="build/fusetune")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5, help="paired re-timing rounds per case")
    ap.add_argument("--repeat", type=int, default=20, help="`run --repeat` per timing")
    ap.add_argument("--cases", nargs="+", default=DEFAULT_CASES,
                    help="GRAPH or GRAPH@NAME=SIZE (a dynamic graph bound to one size)")
    ap.add_argument("--bind-weights", action="store_true",
                    help="bind each case's weights (`--params`) to random values")
    ap.add_argument("--separate-processes", action="store_true",
                    help="time each plan in a `run` process of its own per round (the method "
                         "before `run --against`; two processes of one plan read up to 3%% apart)")
    ap.add_argument("--store", help="one SQLite store for every case, filled in order (default: a "
                                    "fresh store per case)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()

    rows = []
    print(f"{'case':44} {'tune s':>7} {'meas':>5} {'greedy/tuned':>12} {'range':>13} "
          f"{'ceiling':>7} {'kept':>7} {'ranking':>8}  what differs")
    for case in args.cases:
        row = measure(args, case)
        rows.append(row)
        print(f"{case:44} {row['tune_s']:7.1f} {row['measured']:5} {row['greedy_over_tuned']:12.3f} "
              f"{row['ratio_min']:6.3f}-{row['ratio_max']:.3f} "
              f"{format(row['ceiling'], '7.2f') if row['ceiling'] else '-':>7} {row['kept']:>7} "
              f"{row['ranking']:>8}  "
              f"{row['what_differs']}", flush=True)
    geo = math.exp(statistics.fmean(math.log(r["greedy_over_tuned"]) for r in rows))
    print(f"geomean greedy/tuned over {len(rows)} cases: {geo:.3f}  (threads {args.threads}, "
          f"weights {'bound' if args.bind_weights else 'inputs'}, load {os.getloadavg()[0]:.1f})")
    ceilings = [r["ceiling"] for r in rows if r["ceiling"]]
    if ceilings:
        print(f"ceiling (greedy against its matmuls at the FMA peak) over the {len(ceilings)} cases "
              f"with matmuls: {math.exp(statistics.fmean(math.log(c) for c in ceilings)):.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "geomean": geo, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
