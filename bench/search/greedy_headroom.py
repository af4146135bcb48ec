#!/usr/bin/python3
"""How much faster than greedy any plan could be, case by case: issue 13's first target's ceiling.

For each case of tuned_vs_greedy.py, `fusetune run --plan greedy --json` sets the case's matmuls
(every dense and batch_matmul, 2·M·N·K) against the FMA peak of the same threads, measured in the
same process around greedy's repeats (`matmul_fraction_of_peak`). No plan runs a matmul faster
than the peak, so greedy's fastest repeat over the time those FLOPs take at the peak bounds what
any plan, searched or written by hand, can gain over greedy, even one whose other ops cost
nothing. Cases without a matmul are memory-bound; this bound says nothing of them ("-"). The
summary is the geometric mean of the bounds over the cases that have one.

  bench/search/greedy_headroom.py --fusetune build/fusetune [--threads 2] [--json]
"""
import argparse
import json
import math

from tuned_vs_greedy import DEFAULT_CASES, run_json, split_case


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--fusetune", default="build/fusetune")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=20, help="`run --repeat` for greedy's time")
    ap.add_argument("--cases", nargs="+", default=DEFAULT_CASES)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()

    rows = []
    if not args.json:
        print(f"{args.threads} thread(s)\n{'case':44s} {'greedy µs':>10s} {'GFLOP':>8s} "
              f"{'peak GFLOP/s':>12s} {'ceiling':>8s}")
    for case in args.cases:
        graph, dim = split_case(case)
        r = run_json([args.fusetune, "run", "--plan", "greedy", "--json", "--threads",
                      str(args.threads), "--repeat", str(args.repeat), graph] + dim)
        share = r.get("matmul_fraction_of_peak")
        rows.append({
            "case": case,
            "greedy_fastest_us": min(r["total_repeats_us"]),
            "matmul_gflop": r["matmul_gflop"],
            "fma_peak_gflops": r.get("fma_peak_gflops"),
            "greedy_fraction_of_peak": share,
            "ceiling": 1 / share if share else None,
        })
        if not args.json:
            row = rows[-1]
            peak = f"{row['fma_peak_gflops']:.1f}" if share else "-"
            ceiling = f"{row['ceiling']:.2f}" if share else "-"
            print(f"{case:44s} {row['greedy_fastest_us']:10.1f} {row['matmul_gflop']:8.3f} "
                  f"{peak:>12s} {ceiling:>8s}", flush=True)
    bounded = [r["ceiling"] for r in rows if r["ceiling"]]
    geomean = math.exp(sum(math.log(c) for c in bounded) / len(bounded)) if bounded else None
    if args.json:
        print(json.dumps({"threads": args.threads, "cases": rows, "ceiling_geomean": geomean},
                         indent=1))
    elif geomean:
        print(f"ceiling geomean over the {len(bounded)} cases with matmuls: {geomean:.3f}")


if __name__ == "__main__":
    main()
