#!/usr/bin/python3
"""Size sweep: plans transferred across sequence lengths against plans tuned at each length.

For each model (the seed, a GPT-2 MLP, the BERT layer) the store is tuned at S=128 and S=256. Then,
for every S of --sizes:
  transferred  the plan `fusetune query` answers at S from that store (the nearest tuned size's
               plan, adapted; nothing measured at S)
  warm         `tune --warm-only` at S on a copy of that store: the transferred plan timed
               against greedy and unfused at S, the winner stored (docs/signatures.md)
  cold         `tune --cold` at S on a fresh store: the full search
and the three plans are re-timed paired: ROUNDS rounds, each running `fusetune run --plan tuned`
once per plan in an order rotated per round (a burst of load hits a round, not a plan); the
figure of a plan is its median over the rounds, and each ratio is the median of the per-round
ratios. Tuning seconds are wall times of the tune commands. Prints a Markdown table.

  /usr/bin/python3 bench/transfer/sweep.py [--models seed,gpt2_mlp,bert] [--sizes 64,96,...]
      [--rounds 5] [--binary build/fusetune] [--work DIR]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TUNED = [128, 256]


def read(path):
    with open(path) as f:
        return f.read()


def models(work):
    """name -> (graph path, function of S giving the --dim flags)."""
    # The GPT-2 MLP example is static at S=128: its sequence axis becomes a dynamic dim.
    gpt2 = os.path.join(work, "gpt2_mlp_dyn.relay")
    with open(gpt2, "w") as f:
        f.write(read(os.path.join(ROOT, "examples/gpt2_mlp.relay")).replace("(128, 768)", "(?, 768)"))
    return {
        "seed": (os.path.join(ROOT, "examples/bmm_where_dyn.relay"), lambda s: ["--dim", f"x.1,y.1={s}"]),
        "gpt2_mlp": (gpt2, lambda s: ["--dim", f"x.0={s}"]),
        "bert": (os.path.join(ROOT, "examples/bert_layer_dyn.relay"), lambda s: ["--dim", f"x.0={s}"]),
    }


class Fusetune:
    def __init__(self, binary):
        self.binary = binary

    def __call__(self, *args, check=True):
        r = subprocess.run([self.binary, *args], capture_output=True, text=True)
        if check and r.returncode != 0:
            sys.exit(f"fusetune {' '.join(args)} failed ({r.returncode}):\n{r.stderr}")
        return r

    def tune(self, graph, dims, db, *flags):
        start = time.monotonic()
        out = self("tune", "--json", "--db", db, graph, *dims, *flags).stdout
        return json.loads(out), time.monotonic() - start

    def run_us(self, graph, dims, db):
        out = json.loads(self("run", "--plan", "tuned", "--json", "--db", db, graph, *dims).stdout)
        if not out.get("checked_against_reference", True) and out.get("transferred_from"):
            sys.exit("a transferred plan ran unchecked")
        return out["total_us"], out["groups"]


def paired(ft, graph, dims, dbs, rounds):
    """Per db: the median total over `rounds` rotated rounds; per db after the first: the median of
    the per-round ratios db / last db."""
    us = {db: [] for db in dbs}
    groups = {}
    for r in range(rounds):
        order = dbs[r % len(dbs):] + dbs[:r % len(dbs)]
        for db in order:
            t, g = ft.run_us(graph, dims, db)
            us[db].append(t)
            groups[db] = g
    ref = dbs[-1]
    ratios = {db: statistics.median(a / b for a, b in zip(us[db], us[ref])) for db in dbs}
    return {db: statistics.median(v) for db, v in us.items()}, ratios, groups


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="seed,gpt2_mlp,bert")
    p.add_argument("--sizes", default="64,96,192,320,384")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--binary", default=os.path.join(ROOT, "build/fusetune"))
    p.add_argument("--work", help="directory for the stores (default: a temporary one)")
    a = p.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="fusetune_sweep_")
    os.makedirs(work, exist_ok=True)
    ft = Fusetune(a.binary)
    sizes = [int(s) for s in a.sizes.split(",")]
    table = models(work)
    print("| model | S | transferred from | transferred / cold | warm / cold | cold tune s | "
          "warm tune s | cold / warm time | same plan |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in a.models.split(","):
        graph, dims = table[name]
        store = os.path.join(work, f"{name}_tuned.db")
        for s in TUNED:
            ft.tune(graph, dims(s), store)
        for s in sizes:
            q = json.loads(ft("query", "--json", "--db", store, graph, *dims(s)).stdout)
            froms = sorted({r["transferred_from"] for r in q["regions"] if r["transferred_from"]})
            warm_db = os.path.join(work, f"{name}_warm_{s}.db")
            cold_db = os.path.join(work, f"{name}_cold_{s}.db")
            for path in (warm_db, cold_db):
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(path + suffix):
                        os.remove(path + suffix)
            shutil.copy(store, warm_db)
            _, warm_s = ft.tune(graph, dims(s), warm_db, "--warm-only")
            _, cold_s = ft.tune(graph, dims(s), cold_db, "--cold")
            # `store` answers by transfer (nothing stored at s), warm_db and cold_db exactly.
            med, ratio, groups = paired(ft, graph, dims(s), [store, warm_db, cold_db], a.rounds)
            same = "yes" if groups[store] == groups[cold_db] else "no"
            print(f"| {name} | {s} | {'; '.join(froms) or 'exact'} | {ratio[store]:.3f} | "
                  f"{ratio[warm_db]:.3f} | {cold_s:.1f} | {warm_s:.1f} | {cold_s / warm_s:.1f}x | "
                  f"{same} |", flush=True)
    if not a.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
