#!/usr/bin/python3
"""BERT encoder layer: fusetune (tuned, greedy, unfused plans) against PyTorch and ONNX Runtime.

For each sequence length: exports torch.nn.TransformerEncoderLayer(768, 12, 3072, gelu,
batch_first) (bench/models/export_model.py --model bert_layer), tunes it with `fusetune tune
--local` at each thread count, then, in the same run and round-robin, times PyTorch (eval, no_grad:
its fused fast path), ONNX Runtime and `fusetune run --plan tuned|greedy|unfused`, each against the
best of the two peers (bench/peers/peers.py says how the peers are set up). Prints the max abs error
of every contender against PyTorch's output.

  /usr/bin/python3 bench/bert/bert_vs_pytorch.py --fusetune build/fusetune

Run with /usr/bin/python3 (Debian's torch and numpy); ONNX Runtime from npm (see --ort-dir).
Whole models (12-layer BERT, GPT-2 blocks): bench/models/models_vs_peers.py.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
import peers  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    peers.add_common_args(p)
    p.add_argument("--work", default="/tmp/fusetune_bert", help="models, inputs, outputs, store")
    p.add_argument("--db", help="fusetune store (default WORK/bert.db)")
    p.add_argument("--seqs", type=int, nargs="+", default=[128, 256])
    args = p.parse_args()

    fusetune = os.path.abspath(args.fusetune)
    db = args.db or os.path.join(args.work, "bert.db")
    os.makedirs(args.work, exist_ok=True)
    print(f"OpenBLAS core in the PyTorch processes: {peers.openblas_core(args.openblas_coretype)}",
          flush=True)
    cases = {seq: peers.export(os.path.join(args.work, f"s{seq}"), "bert_layer", 1, seq)
             for seq in args.seqs}

    # Tuning first, for every length and thread count; the store keeps the plans.
    tunes = []
    if "tuned" in args.plans and not args.skip_tune:
        for seq in args.seqs:
            for t in args.threads:
                report = peers.tune(fusetune, db, cases[seq]["model"], t, args.tune_flags)
                chosen = ", ".join(r.get("chosen", "?") for r in report.get("regions", []))
                print(f"tune seq {seq}, {t} thread(s): {peers.describe_tune(report)}; regions "
                      f"chosen {chosen}", flush=True)
                tunes.append({"seq": seq, "threads": t, "wall_seconds": report["wall_seconds"],
                              "candidates_measured": report.get("candidates_measured"),
                              "failed": report.get("failed")})

    # Then timing, round-robin between the peers and each plan, so drift hits all alike.
    rows = [peers.compare(f"bert layer S={seq}", cases[seq], t, args, db)
            for seq in args.seqs for t in args.threads]
    peers.write_json(args.json, {"tunes": tunes, "rows": rows})


if __name__ == "__main__":
    main()
