#!/usr/bin/python3
"""BERT encoder layer: fusetune (tuned, greedy, unfused plans) against PyTorch on this CPU.

For each sequence length: exports torch.nn.TransformerEncoderLayer(768, 12, 3072, gelu,
batch_first) with export_bert.py, tunes it with `fusetune tune --local` at each thread count,
then, in the same run and round-robin, times `fusetune run --plan tuned|greedy|unfused` and
PyTorch (eval, no_grad: its fused fast path; ATEN_CPU_CAPABILITY=avx512, OMP_WAIT_POLICY=PASSIVE,
OpenBLAS left on its AVX-512 kernels). Prints the max abs error of every fusetune plan against
PyTorch's output and the times as ratios to PyTorch's.

  /usr/bin/python3 bench/bert/bert_vs_pytorch.py --fusetune build/fusetune

Run with /usr/bin/python3 (Debian's torch and numpy).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PLANS = ["tuned", "greedy", "unfused"]


def peer_env(threads):
    env = dict(os.environ)
    env.update(ATEN_CPU_CAPABILITY="avx512", OMP_WAIT_POLICY="PASSIVE",
               OMP_NUM_THREADS=str(threads))
    # With these set OpenBLAS runs its AVX2 kernel (see TOOLCHAIN.md); peers get their best.
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    return env


def run(cmd, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-4000:]}")
    return p.stdout, time.time() - t0


def torch_timing(args):
    """Child process: time the layer in PyTorch; prints one JSON line {"us": median}."""
    import torch
    import numpy as np
    sys.path.insert(0, HERE)
    from export_bert import build_layer
    torch.set_num_threads(args.threads)
    layer = build_layer(768, 12, 3072, args.seed)
    x = torch.from_numpy(np.load(args.input))
    times = []
    with torch.no_grad():
        for _ in range(10):
            layer(x)
        deadline = time.perf_counter() + args.seconds
        while time.perf_counter() < deadline or len(times) < 20:
            t0 = time.perf_counter()
            layer(x)
            times.append((time.perf_counter() - t0) * 1e6)
    print(json.dumps({"us": statistics.median(times), "calls": len(times)}))


def max_abs_error(a_path, b_path):
    import numpy as np
    a, b = np.load(a_path), np.load(b_path)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fusetune", default=os.path.join(HERE, "..", "..", "build", "fusetune"))
    p.add_argument("--work", default="/tmp/fusetune_bert", help="models, inputs, outputs, store")
    p.add_argument("--db", help="fusetune store (default WORK/bert.db)")
    p.add_argument("--seqs", type=int, nargs="+", default=[128, 256])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=3, help="round-robin rounds of timing")
    p.add_argument("--repeat", type=int, default=5, help="fusetune run --repeat")
    p.add_argument("--plans", nargs="+", default=PLANS, choices=PLANS)
    p.add_argument("--json", help="also write the figures here")
    # Internal: the PyTorch timing child.
    p.add_argument("--torch-timing", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--input", help=argparse.SUPPRESS)
    p.add_argument("--seconds", type=float, default=2.0, help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.torch_timing:
        return torch_timing(args)

    fusetune = os.path.abspath(args.fusetune)
    db = args.db or os.path.join(args.work, "bert.db")
    os.makedirs(args.work, exist_ok=True)
    results = []
    for seq in args.seqs:
        d = os.path.join(args.work, f"s{seq}")
        model, x, y = (os.path.join(d, "model.onnx"), os.path.join(d, "inputs", "x.npy"),
                       os.path.join(d, "y.npy"))
        if not os.path.exists(y):
            run([sys.executable, os.path.join(HERE, "export_bert.py"), "--out", d,
                 "--seq", str(seq), "--seed", "0"])
        for t in args.threads:
            if "tuned" in args.plans:
                out, secs = run([fusetune, "tune", "--local", "--db", db, "--threads", str(t),
                                 "--json", model])
                tune = json.loads(out)
                print(f"seq {seq}, {t} thread(s): tuned in {secs:.0f} s, "
                      f"{tune['candidates_measured']} candidates measured; tune's own totals: "
                      f"tuned {tune['total']['tuned_us']:.0f} us, greedy "
                      f"{tune['total']['greedy_us']:.0f} us, unfused "
                      f"{tune['total']['unfused_us']:.0f} us", flush=True)
            times = {name: [] for name in args.plans + ["pytorch"]}
            errors = {}
            for _ in range(args.rounds):
                out, _ = run([sys.executable, os.path.abspath(__file__), "--torch-timing",
                              "--threads", str(t), "--input", x], env=peer_env(t))
                times["pytorch"].append(json.loads(out)["us"])
                for plan in args.plans:
                    out_dir = os.path.join(d, f"out_{plan}_{t}")
                    cmd = [fusetune, "run", model, "--plan", plan, "--threads", str(t),
                           "--inputs", os.path.dirname(x), "--outputs", out_dir,
                           "--repeat", str(args.repeat), "--json"]
                    if plan == "tuned":
                        cmd += ["--db", db]
                    out, _ = run(cmd)
                    times[plan].append(json.loads(out)["total_us"])
                    errors[plan] = max_abs_error(os.path.join(out_dir, "output_0.npy"), y)
            med = {k: statistics.median(v) for k, v in times.items()}
            row = {"seq": seq, "threads": t, "pytorch_us": med["pytorch"]}
            line = f"seq {seq:4d}  threads {t}  pytorch {med['pytorch']:9.0f} us"
            for plan in args.plans:
                row[f"{plan}_us"] = med[plan]
                row[f"{plan}_max_abs_error"] = errors[plan]
                line += (f" | {plan} {med[plan]:9.0f} us = {med[plan] / med['pytorch']:.2f}x "
                         f"(err {errors[plan]:.1e})")
            print(line, flush=True)
            results.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
