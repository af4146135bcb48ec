#!/usr/bin/python3
"""Whole models: fusetune (tuned, greedy, unfused plans) against PyTorch and ONNX Runtime.

Cases are MODEL:LAYERS:SEQ[:BATCH] (batch 1 unless given), MODEL one of
bench/models/export_model.py's (bert = a torch.nn.TransformerEncoder of BERT-base layers, gpt2 =
GPT-2-small-sized decoder blocks, llama = LLaMA-style decoder blocks of the same width: RMS norms,
rotary embeddings, SwiGLU). For each
case: export to ONNX with the weights, `fusetune check`, `fusetune tune --local` into a store of the
case's own (fresh, so the tuning times of a 1-layer and a 12-layer model compare: identical layers
share a region signature and are tuned once), and for a stack whose 1-layer case is also listed, a
second tune starting from a copy of that 1-layer store (what a stack costs once one layer is known).
Then, round-robin within one run, PyTorch, ONNX Runtime and `fusetune run --plan P --inputs DIR`
(real weights), each against the best of the two peers (bench/peers/peers.py), with every output's
max abs error against PyTorch's.

  /usr/bin/python3 bench/models/models_vs_peers.py --fusetune build/fusetune \
      --cases bert:1:128 bert:12:128 gpt2:1:128 gpt2:12:128 --json models.json

Tuning a 12-layer model takes minutes: run it in the background with output to a file.
"""
import argparse
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
import peers  # noqa: E402


def parse_case(text):
    try:
        model, layers, seq, *batch = text.split(":")
        if len(batch) > 1:
            raise ValueError
        return model, int(layers), int(seq), int(batch[0]) if batch else 1
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"case '{text}' is not MODEL:LAYERS:SEQ[:BATCH] (e.g. bert:12:128 or bert:1:128:8)")


def case_name(model, layers, seq, batch):
    return f"{model}_{layers}L_s{seq}" + (f"_b{batch}" if batch > 1 else "")


def tune_row(name, threads, start, report):
    row = {"case": name, "threads": threads, "start": start,
           "wall_seconds": report["wall_seconds"]}
    if "failed" in report:
        row["failed"] = report["failed"]
        return row
    row.update(candidates_measured=report["candidates_measured"], regions=len(report["regions"]),
               distinct_signatures=len({r["signature"] for r in report["regions"]}),
               seconds_reported=report["seconds"], total=report["total"])
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    peers.add_common_args(p)
    p.add_argument("--work", default="/tmp/fusetune_models",
                   help="models, inputs, outputs and one store per case")
    p.add_argument("--cases", type=parse_case, nargs="+",
                   default=[parse_case(c) for c in
                            ("bert:1:128", "bert:12:128", "gpt2:1:128", "gpt2:12:128")])
    p.add_argument("--no-warm", action="store_true",
                   help="skip the tune of each stack from its 1-layer case's store")
    p.add_argument("--skip-timing", action="store_true", help="export, check and tune only")
    args = p.parse_args()

    fusetune = os.path.abspath(args.fusetune)
    os.makedirs(args.work, exist_ok=True)
    print(f"OpenBLAS core in the PyTorch processes: {peers.openblas_core(args.openblas_coretype)}",
          flush=True)
    cases = {}
    for model, layers, seq, batch in args.cases:
        name = case_name(model, layers, seq, batch)
        cases[name] = peers.export(os.path.join(args.work, name), model, layers, seq,
                                   ["--batch", str(batch)])
        cases[name]["db"] = os.path.join(args.work, f"{name}.db")
        print(f"{name}: fusetune check: {peers.describe_check(fusetune, cases[name]['model'])}",
              flush=True)

    tunes = []
    if "tuned" in args.plans and not args.skip_tune:
        for model, layers, seq, batch in args.cases:
            name = case_name(model, layers, seq, batch)
            db = cases[name]["db"]
            for suffix in ("", "-wal", "-shm"):  # a fresh store: cold tuning times
                if os.path.exists(db + suffix):
                    os.remove(db + suffix)
            for t in args.threads:
                report = peers.tune(fusetune, db, cases[name]["model"], t, args.tune_flags)
                print(f"tune {name}, {t} thread(s), fresh store: {peers.describe_tune(report)}",
                      flush=True)
                tunes.append(tune_row(name, t, "fresh", report))
        one = {(m, s, b): case_name(m, l, s, b) for m, l, s, b in args.cases if l == 1}
        for model, layers, seq, batch in args.cases:
            if layers == 1 or (model, seq, batch) not in one or args.no_warm:
                continue
            name = case_name(model, layers, seq, batch)
            warm_db = os.path.join(args.work, f"{name}_from_1.db")
            shutil.copyfile(cases[one[(model, seq, batch)]]["db"], warm_db)
            for t in args.threads:
                report = peers.tune(fusetune, warm_db, cases[name]["model"], t, args.tune_flags)
                print(f"tune {name}, {t} thread(s), from the 1-layer store: "
                      f"{peers.describe_tune(report)}", flush=True)
                tunes.append(tune_row(name, t, "1-layer store", report))

    rows = [] if args.skip_timing else [peers.compare(name, case, t, args, case["db"])
                                        for name, case in cases.items() for t in args.threads]
    peers.write_json(args.json, {"tunes": tunes, "rows": rows})


if __name__ == "__main__":
    main()
