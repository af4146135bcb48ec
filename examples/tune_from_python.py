#!/usr/bin/env python3
"""Tune a graph on a fusetune farm from Python, then look the plans up again.

    build/fusetune serve --listen 127.0.0.1:7600 --db /tmp/farm.db &
    build/fusetune worker --server 127.0.0.1:7600 &
    PYTHONPATH=client/python python3 examples/tune_from_python.py 127.0.0.1:7600 \
        examples/bmm_where_s128.relay

With no GRAPH it tunes a small PyTorch module when PyTorch is installed, else the seed example.
"""
import argparse
import os
import sys

import fusetune

HERE = os.path.dirname(os.path.abspath(__file__))


def small_module():
    import torch

    class Block(torch.nn.Module):
        """A feed-forward block: dense, GELU, dense, residual."""

        def __init__(self, width=64):
            super().__init__()
            self.up = torch.nn.Linear(width, 4 * width)
            self.down = torch.nn.Linear(4 * width, width)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(x)))

    return Block(), torch.randn(32, 64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("server", nargs="?", default=os.environ.get("FUSETUNE_SERVER"),
                        help="host:port of `fusetune serve` (default $FUSETUNE_SERVER)")
    parser.add_argument("graph", nargs="?", help=".relay or .onnx file")
    parser.add_argument("--token-file", help="the server's client token")
    parser.add_argument("--tls-ca", help="PEM of the CA that signed the server's certificate")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if not args.server:
        parser.error("give the server's host:port (or set FUSETUNE_SERVER)")

    with fusetune.Client(args.server, token_file=args.token_file, tls_ca=args.tls_ca) as client:
        workers = client.workers()
        print(f"{len(workers)} worker(s) at {args.server}")
        try:
            if args.graph:
                report = client.tune(args.graph, threads=args.threads)
            else:
                try:
                    module, example = small_module()
                except ImportError:
                    report = client.tune(os.path.join(HERE, "bmm_where_s128.relay"),
                                         threads=args.threads)
                else:
                    report = client.tune_module(module, example, threads=args.threads)
        except fusetune.InvalidArgumentError as e:  # a bad graph: e.line, e.column
            sys.exit(f"refused: {e}")
        print(report)  # the same table `fusetune tune` prints

        for region in report.regions:
            kernels = " ".join("[" + " ".join(g.nodes) + "]" for g in region.plan)
            speedup = region.speedup_vs_greedy  # None when a plan could not run
            print(f"{region.signature[:8]}  {region.chosen:<8} {kernels}  "
                  f"{f'{speedup:.2f}x' if speedup else '-'} vs greedy")

        # The store answers from now on without measuring: what a compiler would call.
        if args.graph:
            again = client.query(args.graph, threads=args.threads)
            print(f"query: {len(again.regions)} region(s) stored, "
                  f"{again.total.tuned_us:.1f} µs in all")


if __name__ == "__main__":
    main()
