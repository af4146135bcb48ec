"""fusetune against its peers, PyTorch and ONNX Runtime, on exported ONNX models: the shared part.

Used by bench/bert/bert_vs_pytorch.py (one BERT layer) and bench/models/models_vs_peers.py (whole
models). A case is one exported model (bench/models/export_model.py: model.onnx, inputs/x.npy,
y.npy = PyTorch's output, spec.json); for each thread count, `compare` times, round-robin within
one run, PyTorch, ONNX Runtime and `fusetune run --plan P` for each plan, in an order that changes
each round (a Williams design), and reports every time against the best of the two peers, by
whole-run medians and by the ratio within each round (the figure least moved by other processes
on a shared machine). With --peak, each round also times the core's FMA peak and each
contender's matmuls as a share of it.

The peers are set up as a user who cares about speed would (TOOLCHAIN.md, "Peers"):
- PyTorch in a fresh process per round with OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = N for the whole
  process (torch.set_num_threads alone leaves OpenBLAS's pool at every core),
  ATEN_CPU_CAPABILITY=avx512, OMP_WAIT_POLICY=PASSIVE (its OpenMP pool otherwise spins against
  OpenBLAS's threads), and OPENBLAS_CORETYPE naming OpenBLAS 0.3.21's best kernel for this CPU,
  which it does not recognise (the core OpenBLAS reports with OPENBLAS_VERBOSE=2 is printed).
- ONNX Runtime (onnxruntime-node from npm, installed outside the repository) through
  bench/peers/ort_time.js: graphOptimizationLevel 'all', intraOpNumThreads N, interOpNumThreads 1.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PLANS = ["tuned", "greedy", "unfused"]
PEERS = ["pytorch", "ort"]
EXPORTER = os.path.join(ROOT, "bench", "models", "export_model.py")


def add_common_args(p):
    """The flags every peer comparison takes."""
    p.add_argument("--fusetune", default=os.path.join(ROOT, "build", "fusetune"))
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=3, help="round-robin rounds of timing")
    p.add_argument("--repeat", type=int, default=5, help="fusetune run --repeat")
    p.add_argument("--seconds", type=float, default=2.0,
                   help="each peer times calls for at least this long per round")
    p.add_argument("--plans", nargs="+", default=PLANS, choices=PLANS)
    p.add_argument("--peers", nargs="+", default=PEERS, choices=PEERS)
    p.add_argument("--openblas-coretype", default="SkylakeX",
                   help="OPENBLAS_CORETYPE for PyTorch ('' leaves OpenBLAS to detect the CPU)")
    p.add_argument("--ort-dir", default=os.environ.get("ORT_NODE_DIR", "/work/ort"),
                   help="npm prefix holding node_modules/onnxruntime-node")
    p.add_argument("--tune-flags", default="", help="extra `fusetune tune` flags")
    p.add_argument("--skip-tune", action="store_true", help="use the plans already in --db")
    p.add_argument("--boost", action="store_true",
                   help="time at autogroup nice -20 (root; every contender alike)")
    p.add_argument("--json", help="also write the figures here")
    p.add_argument("--peak", metavar="MATMUL_BENCH",
                   help="build/bench/matmul/matmul_bench: time the core's FMA peak in every round "
                        "too, and print each contender's matmul GFLOP/s as a share of it")


class Failed(Exception):
    """A command exited non-zero: its exit code, wall seconds and the end of its stderr."""

    def __init__(self, cmd, code, seconds, stderr):
        super().__init__(f"failed ({code}) after {seconds:.0f} s: {' '.join(cmd)}\n{stderr[-4000:]}")
        self.code, self.seconds, self.stderr = code, seconds, stderr


def run(cmd, env=None, boost=False, check=True):
    """Runs cmd; returns (stdout, wall seconds). A failure exits with its stderr, or with
    check=False raises Failed for the caller to record."""
    if boost:
        # A session of its own at autogroup nice -20 (needs root): on a shared machine Linux's
        # autogroup scheduler otherwise splits the CPU between sessions whatever `nice` says.
        cmd = ["sh", "-c", 'echo -20 > /proc/self/autogroup; exec nice -n -20 "$@"', "sh"] + cmd
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, start_new_session=boost)
    if p.returncode != 0:
        failed = Failed(cmd, p.returncode, time.time() - t0, p.stderr)
        if check:
            sys.exit(str(failed))
        raise failed
    return p.stdout, time.time() - t0


# fusetune's `run` starts its codegen process with glibc's malloc on transparent huge pages
# (worker/codegen_binary.h: first touches of 4 KiB pages are slow page faults on these VMs); the
# peers get the same tunable, so every contender allocates alike.
HUGE_PAGE_MALLOC = "glibc.malloc.hugetlb=1"


def huge_page_env(env):
    tunables = env.get("GLIBC_TUNABLES", "")
    env["GLIBC_TUNABLES"] = HUGE_PAGE_MALLOC + (":" + tunables if tunables else "")
    return env


def peer_env(threads, coretype):
    """The environment of a PyTorch process at `threads` threads."""
    env = huge_page_env(dict(os.environ))
    env.update(ATEN_CPU_CAPABILITY="avx512", OMP_WAIT_POLICY="PASSIVE",
               OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    env.pop("OPENBLAS_L2_SIZE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    else:
        env.pop("OPENBLAS_CORETYPE", None)
    return env


def openblas_core(coretype):
    """The kernel set OpenBLAS runs in a PyTorch process of peer_env (OPENBLAS_VERBOSE=2)."""
    env = peer_env(1, coretype)
    env["OPENBLAS_VERBOSE"] = "2"
    p = subprocess.run([sys.executable, "-c", "import torch; torch.ones(64, 64) @ torch.ones(64, 64)"],
                       capture_output=True, text=True, env=env)
    m = re.search(r"Core:\s*(\S+)", p.stdout + p.stderr)
    return m.group(1) if m else "not OpenBLAS (no 'Core:' line: is libopenblas0-pthread installed?)"


def export(out_dir, model, layers, seq, extra=()):
    """Exports once into out_dir (kept across runs); returns the case dict."""
    case = {"dir": out_dir, "model": os.path.join(out_dir, "model.onnx"),
            "inputs": os.path.join(out_dir, "inputs"), "x": os.path.join(out_dir, "inputs", "x.npy"),
            "y": os.path.join(out_dir, "y.npy"), "spec": os.path.join(out_dir, "spec.json")}
    if not all(os.path.exists(case[k]) for k in ("model", "x", "y", "spec")):
        run([sys.executable, EXPORTER, "--model", model, "--layers", str(layers), "--seq", str(seq),
             "--out", out_dir] + list(extra))
    return case


def checked_graph(fusetune, model):
    """`fusetune check --json MODEL`: the imported, typed graph and the seconds it took."""
    out, secs = run([os.path.abspath(fusetune), "check", "--json", model])
    return json.loads(out), secs


def describe_check(fusetune, model):
    """`fusetune check --json`: the imported graph's size and ops, in one line."""
    import collections
    graph, secs = checked_graph(fusetune, model)
    ops = collections.Counter(n["op"] for n in graph["nodes"])
    return (f"imported in {secs:.1f} s: {len(graph['nodes'])} nodes, {len(graph['params'])} "
            f"parameters; "
            + ", ".join(f"{op} {n}" for op, n in ops.most_common()))


def tune(fusetune, db, model, threads, flags=""):
    """`fusetune tune --local` into db; returns its JSON report with the wall time added, or
    {"failed": stderr, "wall_seconds": ...} when tune fails (the regions it stored before failing
    stay in the store, so `run --plan tuned` may still work)."""
    try:
        out, secs = run([fusetune, "tune", "--local", "--db", db, "--threads", str(threads),
                         "--json"] + flags.split() + [model], check=False)
    except Failed as e:
        return {"failed": e.stderr.strip()[-1000:], "wall_seconds": e.seconds}
    report = json.loads(out)
    report["wall_seconds"] = secs
    return report


def describe_tune(report):
    """One line: wall time, measurements, regions (distinct signatures), totals as tune timed them."""
    if "failed" in report:
        return f"FAILED after {report['wall_seconds']:.0f} s wall: {report['failed']}"
    regions = report["regions"]
    distinct = len({r["signature"] for r in regions})
    total = report["total"]
    def us(v):
        return "-" if v is None else f"{v / 1000:.2f} ms"
    return (f"{report['wall_seconds']:.0f} s wall, {report['candidates_measured']} candidates "
            f"measured, {report['measurements_reused']} reused; {len(regions)} regions, {distinct} "
            f"distinct signatures, {sum(r['cached'] for r in regions)} from the cache; whole graph "
            f"as tune timed it: tuned {us(total['tuned_us'])}, greedy {us(total['greedy_us'])}, "
            f"unfused {us(total['unfused_us'])}")


def max_abs_error(a_path, b_path):
    import numpy as np
    a, b = np.load(a_path), np.load(b_path)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))


def time_pytorch(case, threads, args, out=None):
    cmd = [sys.executable, os.path.join(HERE, "torch_time.py"), "--spec", case["spec"], "--input",
           case["x"], "--threads", str(threads), "--seconds", str(args.seconds)]
    if out:
        cmd += ["--output", out]
    stdout, _ = run(cmd, env=peer_env(threads, args.openblas_coretype), boost=args.boost)
    return json.loads(stdout)["us"]


def time_ort(case, threads, args, out_dir):
    stdout, _ = run(["node", os.path.join(HERE, "ort_time.js"), "--model", case["model"], "--inputs",
                     case["inputs"], "--threads", str(threads), "--outputs", out_dir, "--seconds",
                     str(args.seconds), "--ort-dir", args.ort_dir],
                    env=huge_page_env(dict(os.environ)), boost=args.boost)
    return json.loads(stdout)["us"]


def matmul_flops(graph):
    """FLOPs of each dense and batch_matmul node by name (2·M·N·K), from `check --json` types."""
    types = {n["name"]: n["type"] for n in graph["nodes"]}
    types.update({p["name"]: p["type"] for p in graph["params"]})

    def shape(t):
        inner = t[t.index("(") + 1:t.index(")")]
        return [int(d) for d in inner.split(",") if d.strip()]

    flops = {}
    for n in graph["nodes"]:
        if n["op"] in ("nn.dense", "nn.batch_matmul"):
            out = shape(n["type"])
            a = n["inputs"][0]
            k = shape(types[a])[-1] if a in types else None
            if k:
                count = 1
                for d in out:
                    count *= d
                flops[n["name"]] = 2 * count * k
    return flops


def time_peak(matmul_bench, threads, args):
    """The core's FMA peak at `threads`, GFLOP/s: matmul_bench's 16-chain JIT kernel."""
    stdout, _ = run([matmul_bench, "peak"], boost=args.boost)
    m = re.search(rf"FMA peak {threads}t \(16 chains\)\s+([0-9.]+) GFLOP/s", stdout)
    if not m:
        raise RuntimeError(f"no {threads}-thread FMA peak in `{matmul_bench} peak`:\n{stdout}")
    return float(m.group(1))


def time_fusetune(case, plan, threads, args, db, out_dir):
    cmd = [os.path.abspath(args.fusetune), "run", case["model"], "--plan", plan, "--threads",
           str(threads), "--inputs", case["inputs"], "--outputs", out_dir, "--repeat",
           str(args.repeat), "--json"]
    if plan == "tuned":
        cmd += ["--db", db]
    stdout, _ = run(cmd, boost=args.boost)
    result = json.loads(stdout)
    return result["total_us"], result["max_abs_error"]


def williams_order(n, r):
    """Round r's order of n contenders: row r of a Williams design (the crossover trials' balanced
    Latin square). Over n rounds (2n when n is odd) each contender runs as often in every position
    and right after every other, where a plain rotation keeps one predecessor in every round."""
    base, lo, hi = [0], 1, n - 1
    while len(base) < n:
        base.append(lo)
        lo += 1
        if len(base) < n:
            base.append(hi)
            hi -= 1
    row = [(b + r) % n for b in base]
    return row[::-1] if n % 2 and (r // n) % 2 else row


def compare(name, case, threads, args, db):
    """Round-robin timing of the peers and the plans at one thread count; prints and returns a row."""
    contenders = list(args.peers) + list(args.plans)
    times = {c: [] for c in contenders}
    errors, self_errors, loads, peaks = {}, {}, [], []
    if args.peak:
        gflop = sum(matmul_flops(checked_graph(args.fusetune, case["model"])[0]).values()) / 1e9
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        if args.peak:
            peaks.append(time_peak(args.peak, threads, args))
        # What runs right after ONNX Runtime or PyTorch may time a few percent slower
        # (BENCHMARKS.md, "the round-robin's order"): each round takes a Williams design's next row.
        for c in (contenders[i] for i in williams_order(len(contenders), r)):
            out_dir = os.path.join(case["dir"], f"out_{c}_{threads}")
            os.makedirs(out_dir, exist_ok=True)
            if c == "pytorch":
                times[c].append(time_pytorch(case, threads, args,
                                             out=os.path.join(out_dir, "output_0.npy")))
            elif c == "ort":
                times[c].append(time_ort(case, threads, args, out_dir))
            else:
                us, self_errors[c] = time_fusetune(case, c, threads, args, db, out_dir)
                times[c].append(us)
            errors[c] = max_abs_error(os.path.join(out_dir, "output_0.npy"), case["y"])
    # Per round, the best peer of that round; ratios within a round are taken seconds apart.
    best_peer = [min(times[p][r] for p in args.peers) for r in range(args.rounds)]
    med = {c: statistics.median(v) for c, v in times.items()}
    best_med = min(med[p] for p in args.peers)
    row = {"case": name, "threads": threads, "rounds": args.rounds, "load_1min": loads,
           "best_peer_us": best_med}
    line = f"{name:18s} threads {threads}  load {min(loads):.1f}-{max(loads):.1f}"
    for c in contenders:
        paired = [t / b for t, b in zip(times[c], best_peer)]
        row[c] = {"us": med[c], "rounds_us": times[c], "ratio_to_best_peer": med[c] / best_med,
                  "paired_ratio_to_best_peer": statistics.median(paired),
                  "rounds_faster_than_best_peer": sum(r < 1 for r in paired),
                  "max_abs_error_vs_pytorch": errors[c]}
        if c in self_errors:
            row[c]["max_abs_error_vs_reference"] = self_errors[c]
        line += f"\n    {c:8s} {med[c] / 1000:9.2f} ms"
        line += f"  / best peer {med[c] / best_med:.2f} (paired {statistics.median(paired):.2f}"
        if c in args.plans:
            line += f", faster in {sum(r < 1 for r in paired)}/{len(paired)} rounds"
        line += f")  err vs PyTorch {errors[c]:.1e}"
        if peaks:
            # Per round against that round's peak, then the median: the peak drifts with the host.
            share = statistics.median(gflop * 1e6 / us / peak for us, peak in zip(times[c], peaks))
            row[c]["matmul_share_of_peak"] = share
            line += f"  matmuls at {100 * share:.0f}% of the FMA peak"
    if peaks:
        row["fma_peak_gflops"] = peaks
        line += (f"\n    FMA peak {statistics.median(peaks):.1f} GFLOP/s at {threads} thread(s); the "
                 f"matmuls are {gflop:.3f} GFLOP a call")
    print(line, flush=True)
    return row


def write_json(path, payload):
    if path:
        with open(path, "w") as f:
            json.dump(payload, f, indent=2)
