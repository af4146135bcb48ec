#!/usr/bin/python3
"""Two fusetune builds on the same plans: alternated rounds, paired after/before per plan.

A code generator change is measured apart from the search's noise: both builds run each plan
(`tuned` from a store, or a plan JSON file) once per round, the order rotated, at autogroup nice
-20; printed are the medians, the paired median of after/before and the kernels that moved.

  /usr/bin/python3 bench/bert/same_plans.py --before /tmp/b/fusetune --after build/fusetune \\
      --case /tmp/w/s256 --threads 1 --rounds 7 --plan tuned:/tmp/w/b.db --plan plan.json

--case is a directory written by bench/peers/peers.py's export (model.onnx, inputs/).
"""
import argparse
import json
import os
import statistics
import subprocess


def run(binary, case, plan_args, threads, repeat):
    cmd = (f"echo -20 > /proc/self/autogroup; exec nice -n -20 {binary} run "
           f"{os.path.join(case, 'model.onnx')} {' '.join(plan_args)} --threads {threads} "
           f"--inputs {os.path.join(case, 'inputs')} --repeat {repeat} --json")
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    return result["total_us"], {"+".join(k["nodes"]): k["us"] for k in result["kernels"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="fusetune binary (its -codegen beside it)")
    p.add_argument("--after", required=True)
    p.add_argument("--case", required=True, help="exported model directory")
    p.add_argument("--plan", action="append", required=True,
                   help="tuned:STORE.db or a plan JSON file (repeatable)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--kernel", action="append", default=[],
                   help="always print the kernel whose first node is this, e.g. %%39 (repeatable)")
    args = p.parse_args()

    plans = [(spec, ["--plan", "tuned", "--db", spec[len("tuned:"):]] if spec.startswith("tuned:")
              else ["--plan", spec]) for spec in args.plan]
    builds = [("before", args.before), ("after", args.after)]
    totals = {(b, s): [] for b, _ in builds for s, _ in plans}
    kernels = {(b, s): [] for b, _ in builds for s, _ in plans}
    loads = []
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for spec, plan_args in plans:
            for name, binary in (builds if r % 2 == 0 else builds[::-1]):
                total, per_kernel = run(binary, args.case, plan_args, args.threads, args.repeat)
                totals[(name, spec)].append(total)
                kernels[(name, spec)].append(per_kernel)
    print(f"{args.case} threads={args.threads} rounds={args.rounds} "
          f"load {min(loads):.1f}-{max(loads):.1f}")
    for spec, _ in plans:
        before, after = totals[("before", spec)], totals[("after", spec)]
        ratios = [a / b for a, b in zip(after, before)]
        print(f"  {spec}: before {statistics.median(before) / 1000:.2f} ms, after "
              f"{statistics.median(after) / 1000:.2f} ms, after/before paired median "
              f"{statistics.median(ratios):.3f}, faster in {sum(x < 1 for x in ratios)}/{args.rounds}")
        kb, ka = kernels[("before", spec)], kernels[("after", spec)]
        for k in (k for k in kb[0] if k in ka[0]):
            mb = statistics.median(d[k] for d in kb)
            ma = statistics.median(d[k] for d in ka)
            if k.split("+")[0] in args.kernel:
                paired = statistics.median(a[k] / b[k] for a, b in zip(ka, kb))
                faster = sum(a[k] < b[k] for a, b in zip(ka, kb))
                print(f"      {k[:48]:48s} {mb:8.0f} -> {ma:8.0f} us, min {min(d[k] for d in kb):.0f}"
                      f" -> {min(d[k] for d in ka):.0f}, paired {paired:.3f}, faster in "
                      f"{faster}/{args.rounds}")
            elif max(mb, ma) > 100 and abs(ma / mb - 1) > 0.04:
                print(f"      {k[:48]:48s} {mb:8.0f} -> {ma:8.0f} us ({ma / mb:.2f})")


if __name__ == "__main__":
    main()
