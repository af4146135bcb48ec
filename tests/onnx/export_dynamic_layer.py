#!/usr/bin/python3
"""Exports a small PyTorch encoder layer with a dynamic sequence axis to ONNX, with inputs and
PyTorch's outputs at several sequence lengths.

torch.onnx.export(..., dynamic_axes={"x": {1: "seq"}, "y": {1: "seq"}}) writes the input's axis 1
as dim_param "seq" and computes every shape from it at run time (Shape, Gather, Concat, Reshape),
which is what fusetune's --dim binding has to fold. Writes OUT/model.onnx and, per length S,
OUT/x_S.npy and OUT/y_S.npy (PyTorch's output, computed under no_grad as a user runs it).
Run with /usr/bin/python3 (Debian's torch, numpy and onnx); tests/onnx/dynamic_pytorch_test.cc
runs it.
"""
import argparse
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="directory to write into")
    p.add_argument("--seqs", default="5,11,16", help="sequence lengths to write inputs for")
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ff", type=int, default=64)
    p.add_argument("--opset", type=int, default=14)
    args = p.parse_args()

    import numpy as np
    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=args.d_model, nhead=args.heads, dim_feedforward=args.ff, activation="gelu",
        batch_first=True).eval()
    os.makedirs(args.out, exist_ok=True)
    model_path = os.path.join(args.out, "model.onnx")
    # Exported with grad enabled: the layer's no-grad fast path has no ONNX export.
    torch.onnx.export(layer, (torch.randn(1, 8, args.d_model),), model_path,
                      opset_version=args.opset, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {1: "seq"}, "y": {1: "seq"}}, do_constant_folding=True)
    for seq in (int(s) for s in args.seqs.split(",")):
        x = torch.randn(1, seq, args.d_model)
        with torch.no_grad():
            y = layer(x)
        np.save(os.path.join(args.out, f"x_{seq}.npy"), x.numpy().astype(np.float32))
        np.save(os.path.join(args.out, f"y_{seq}.npy"), y.numpy().astype(np.float32))
    print(f"wrote {model_path} with a dynamic 'seq' axis and lengths {args.seqs}", file=sys.stderr)


if __name__ == "__main__":
    main()
