#!/usr/bin/python3
"""How much faster than greedy any plan could be, case by case: issue 13's first target's ceiling.

For each case of tuned_vs_greedy.py, greedy's time (`fusetune run --plan greedy`) against the time
its matmuls (nn.dense, nn.batch_matmul) would take at the core's FMA peak, measured in
the same run by `matmul_bench peak` (its 16-chain kernel, as bench/peers/peers.py reads it). No plan runs a matmul faster than the peak, so greedy / that
time bounds what any plan, tuned or hand-written, can gain over greedy on the case, even if every
other op cost nothing. Cases without a matmul are memory-bound; this bound says nothing of them
("-"). The summary is the geometric mean of the bounds over the cases that have one.

  bench/search/greedy_headroom.py --fusetune build/fusetune --peak build/bench/matmul/matmul_bench
"""
import argparse
import json
import math
import os
import sys

from tuned_vs_greedy import DEFAULT_CASES, run_json, split_case

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from peers import matmul_flops, time_peak  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--fusetune", default="build/fusetune")
    ap.add_argument("--peak", default="build/bench/matmul/matmul_bench",
                    help="matmul_bench binary: its `peak` section gives the core's FMA peak")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=20, help="`run --repeat` for greedy's time")
    ap.add_argument("--cases", nargs="+", default=DEFAULT_CASES)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()

    peak = time_peak(args.peak, args.threads, argparse.Namespace(boost=False))
    rows = []
    if not args.json:
        print(f"FMA peak {peak:.1f} GFLOP/s, {args.threads} thread(s)\n{'case':44s} "
              f"{'greedy µs':>10s} {'GFLOP':>8s} {'at peak µs':>10s} {'ceiling':>8s}")
    for case in args.cases:
        graph, dim = split_case(case)
        info = run_json([args.fusetune, "check", "--json", graph] + dim)
        flops = sum(matmul_flops(info).values())
        greedy = run_json([args.fusetune, "run", "--plan", "greedy", "--json", "--threads",
                           str(args.threads), "--repeat", str(args.repeat), graph] + dim)
        greedy_us = greedy["total_us"]
        at_peak_us = flops / (peak * 1e3)
        rows.append({
            "case": case,
            "greedy_us": round(greedy_us, 1),
            "matmul_gflop": round(flops / 1e9, 4),
            "matmuls_at_peak_us": round(at_peak_us, 1),
            "greedy_fraction_of_peak": round(at_peak_us / greedy_us, 3) if flops else None,
            "ceiling": round(greedy_us / at_peak_us, 3) if flops else None,
        })
        if not args.json:
            r = rows[-1]
            ceiling = f"{r['ceiling']:.2f}" if flops else "-"
            print(f"{case:44s} {greedy_us:10.1f} {r['matmul_gflop']:8.3f} {at_peak_us:10.1f} "
                  f"{ceiling:>8s}", flush=True)
    bounded = [r["ceiling"] for r in rows if r["ceiling"]]
    geomean = math.exp(sum(math.log(c) for c in bounded) / len(bounded)) if bounded else None
    if args.json:
        print(json.dumps({"fma_peak_gflops": peak, "threads": args.threads, "cases": rows,
                          "ceiling_geomean": geomean}, indent=1))
    elif geomean:
        print(f"ceiling geomean over the {len(bounded)} cases with matmuls: {geomean:.3f}")


if __name__ == "__main__":
    main()
