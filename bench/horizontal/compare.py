#!/usr/bin/python3
"""Tunes a graph with horizontal fusion allowed and with --no-horizontal, then re-times both plans
and greedy in paired, interleaved rounds.

Each tune starts from an empty store of its own (cold). `tune --json` gives each plan's node lists;
both are re-timed from those lists with the template's default schedules (the --no-horizontal plan
is never stored, so its schedules are not kept), so the two stand on the same footing. Prints one
JSON object: tune times, each tune's own tuned/greedy totals, the re-timed medians, their ratios,
and the horizontal groups the search chose.

  bench/horizontal/compare.py --fusetune build/fusetune examples/qkv_attention.relay --threads 1
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def node_inputs(graph_path):
    """%N -> the %M it reads, from Relay text with one binding per line (as the examples are);
    the unbound final expression is the next number."""
    deps, last = {}, -1
    body = open(graph_path).read().split("{", 1)[1]
    for line in body.splitlines():
        line = re.sub(r"/\*.*?\*/|//.*", "", line).strip()
        if not line or line == "}":
            continue
        m = re.match(r"%(\d+)\s*=\s*(.*)", line)
        name, expr = (int(m.group(1)), m.group(2)) if m else (last + 1, line)
        deps["%" + str(name)] = {"%" + r for r in re.findall(r"%(\d+)\b", expr)}
        last = name
    return deps


def ordered(groups, deps):
    """Groups in an order where each runs after the groups producing its inputs."""
    owner = {n: i for i, g in enumerate(groups) for n in g}
    out, done = [], set()
    while len(out) < len(groups):
        for i, g in enumerate(groups):
            if i in done:
                continue
            needs = {owner[d] for n in g for d in deps.get(n, ()) if d in owner} - {i}
            if needs <= done:
                done.add(i)
                out.append(g)
                break
        else:
            raise SystemExit("plan groups form a cycle")
    return out


def plan_file(groups, deps, path):
    with open(path, "w") as f:
        json.dump({"groups": [{"nodes": g} for g in ordered(groups, deps)]}, f)
    return path


def horizontal_groups(tune_json, ops_by_node):
    """Groups with more than one matmul-like op: only horizontal fusion forms those."""
    out = []
    for region in tune_json["regions"]:
        for g in region["plan"]:
            anchors = [n for n in g if ops_by_node.get(n) in ("nn.dense", "nn.matmul",
                                                              "nn.batch_matmul")]
            if len(anchors) > 1:
                out.append(g)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("graph")
    p.add_argument("--fusetune", default="build/fusetune")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--merge", default="",
                   help="sibling nodes, e.g. %%0,%%4,%%8: also time greedy with the greedy groups "
                        "holding them merged into one horizontal kernel (default schedules)")
    args = p.parse_args()
    ft = args.fusetune
    tmp = tempfile.mkdtemp(prefix="fusetune_horizontal_")
    result = {"graph": args.graph, "threads": args.threads}
    tunes = {}
    for name, extra in (("horizontal", []), ("no_horizontal", ["--no-horizontal"])):
        start = time.time()
        tunes[name] = run([ft, "tune", "--local", "--json", "--threads", str(args.threads),
                           "--db", os.path.join(tmp, name + ".db"), *extra, args.graph])
        result[name + "_tune_s"] = round(time.time() - start, 1)
        t = tunes[name]["total"]
        result[name + "_tune_tuned_over_greedy"] = round(t["tuned_us"] / t["greedy_us"], 3)
    ops_by_node = {}
    for region in tunes["horizontal"]["regions"]:
        ops_by_node.update(zip(region["nodes"], region["ops"]))
    result["horizontal_groups_chosen"] = horizontal_groups(tunes["horizontal"], ops_by_node)

    deps = node_inputs(args.graph)
    plans = {name: plan_file([g for region in tunes[name]["regions"] for g in region["plan"]],
                             deps, os.path.join(tmp, name + ".json"))
             for name in tunes}
    plans["greedy"] = "greedy"
    if args.merge:
        siblings = set(args.merge.split(","))
        greedy = run([ft, "run", "--json", "--threads", str(args.threads), "--repeat", "1",
                      "--plan", "greedy", args.graph])["groups"]
        merged = sorted((n for g in greedy if siblings & set(g) for n in g),
                        key=lambda n: int(n[1:]))
        groups = [g for g in greedy if not siblings & set(g)] + [merged]
        plans["greedy_merged"] = plan_file(groups, deps, os.path.join(tmp, "greedy_merged.json"))
    times = {name: [] for name in plans}
    for _ in range(args.rounds):
        for name, plan in plans.items():
            r = run([ft, "run", "--json", "--threads", str(args.threads), "--repeat",
                     str(args.repeat), "--plan", plan, args.graph])
            times[name].append(r["total_us"])
    med = {name: statistics.median(v) for name, v in times.items()}
    result["retimed_median_us"] = {k: round(v, 1) for k, v in med.items()}
    result["retimed_rounds_us"] = {k: [round(x, 1) for x in v] for k, v in times.items()}
    result["horizontal_over_no_horizontal"] = round(med["horizontal"] / med["no_horizontal"], 3)
    result["horizontal_over_greedy"] = round(med["horizontal"] / med["greedy"], 3)
    result["no_horizontal_over_greedy"] = round(med["no_horizontal"] / med["greedy"], 3)
    if "greedy_merged" in med:
        result["greedy_merged_over_greedy"] = round(med["greedy_merged"] / med["greedy"], 3)
    result["uptime"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
