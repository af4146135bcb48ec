#!/usr/bin/python3
"""Times a model of bench/models/export_model.py in PyTorch (eval, no_grad) in this process.

Started by bench/peers/peers.py in a fresh process whose environment fixes the threads
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS), the ATen kernels and OpenBLAS's core; this script only
rebuilds the model from its spec (the exporter's arguments: same seed, same weights), runs it on
the exported input and prints one JSON line {"us": median, "calls": n, "min_us": ...}.

  /usr/bin/python3 bench/peers/torch_time.py --spec DIR/spec.json --input DIR/inputs/x.npy \
      --threads 1 [--output y.npy] [--seconds 2]
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", required=True, help="spec.json written by export_model.py")
    p.add_argument("--input", required=True, help="the model's input, .npy")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--seconds", type=float, default=2.0, help="time calls for at least this long")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--min-calls", type=int, default=20)
    p.add_argument("--output", help="write the output here (.npy), for accuracy checks")
    args = p.parse_args()

    import numpy as np
    import torch

    sys.path.insert(0, os.path.join(HERE, "..", "models"))
    from export_model import build_model

    with open(args.spec) as f:
        spec = json.load(f)
    torch.set_num_threads(args.threads)
    model = build_model(**spec)
    x = torch.from_numpy(np.load(args.input))
    times = []
    with torch.no_grad():
        for _ in range(args.warmup):
            y = model(x)
        deadline = time.perf_counter() + args.seconds
        while time.perf_counter() < deadline or len(times) < args.min_calls:
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e6)
    if args.output:
        np.save(args.output, y.numpy().astype(np.float32))
    print(json.dumps({"us": statistics.median(times), "min_us": min(times), "calls": len(times),
                      "torch_threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
