#!/usr/bin/python3
"""Peer timings for bench/codegen: numpy subtract+exp and PyTorch softmax, printed as JSON.

Run by codegen_bench in the same run as our kernels, with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE
unset, ATEN_CPU_CAPABILITY=avx512 and OMP_WAIT_POLICY=PASSIVE (see TOOLCHAIN.md). Timing mirrors
worker/timing.cc: warm-up, `number` grown until a repeat lasts >= 20 ms, median per-call time.
All calls write into preallocated outputs (out=) so no page faults are timed.
"""
import json
import sys
import time


def time_calls(fn, repeat=7, min_repeat_s=0.02):
    for _ in range(2):
        fn()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_repeat_s:
            break
        number *= 2
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number * 1e6)
    samples.sort()
    return samples[len(samples) // 2]


def main():
    results = {}
    import numpy as np
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (100, 120, 120)).astype(np.float32)
    m = rng.uniform(-1, 1, (100, 120, 1)).astype(np.float32)
    out = np.empty_like(x)

    def numpy_sub_exp():
        np.subtract(x, m, out=out)
        np.exp(out, out=out)

    results["numpy_sub_exp_us"] = time_calls(numpy_sub_exp)
    try:
        import torch
        for threads in (1, 2):
            torch.set_num_threads(threads)
            t = torch.from_numpy(rng.uniform(-1, 1, (12, 256, 256)).astype(np.float32))
            o = torch.empty_like(t)
            results[f"torch_softmax_t{threads}_us"] = time_calls(lambda: torch.softmax(t, -1, out=o))
            tx, tm, to = torch.from_numpy(x), torch.from_numpy(m), torch.from_numpy(out)
            results[f"torch_sub_exp_t{threads}_us"] = time_calls(
                lambda: (torch.sub(tx, tm, out=to), torch.exp(to, out=to)))
        results["torch_capability"] = torch.backends.cpu.get_cpu_capability() \
            if hasattr(torch.backends, "cpu") else "unknown"
    except ImportError:
        pass
    json.dump(results, sys.stdout)
    print()


if __name__ == "__main__":
    main()
