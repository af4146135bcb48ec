#!/usr/bin/python3
"""Exports a PyTorch BERT-style encoder layer to ONNX with an input and PyTorch's output as .npy.

torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, activation="gelu",
batch_first=True) in eval mode is exported with grad enabled (its no-grad fast path has no ONNX
export); the reference output is computed under no_grad, i.e. by that fast path, which is what a
PyTorch user runs. Weights are PyTorch's initialisation with the biases and layer-norm affines
perturbed, so every parameter matters to the output.

Writes OUT/model.onnx, OUT/inputs/x.npy (the one graph input) and OUT/y.npy.
Run with /usr/bin/python3 (Debian's torch, numpy and onnx).
"""
import argparse
import os
import sys


def build_layer(d_model, heads, ff, seed):
    """The layer in eval mode, seeded; also used by bert_vs_pytorch.py to time the same model."""
    import torch

    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=d_model, nhead=heads, dim_feedforward=ff, activation="gelu",
        batch_first=True).eval()
    with torch.no_grad():
        for name, param in layer.named_parameters():
            if name.endswith("bias"):
                param.copy_(0.05 * torch.randn_like(param))
            elif name.startswith("norm"):
                param.copy_(1.0 + 0.1 * torch.randn_like(param))
    return layer


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="directory to write into")
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ff", type=int, default=3072)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--opset", type=int, default=14, choices=[13, 14])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    import numpy as np
    import torch

    layer = build_layer(args.d_model, args.heads, args.ff, args.seed)
    x = torch.randn(args.batch, args.seq, args.d_model)

    os.makedirs(os.path.join(args.out, "inputs"), exist_ok=True)
    model_path = os.path.join(args.out, "model.onnx")
    torch.onnx.export(layer, (x,), model_path, opset_version=args.opset, input_names=["x"],
                      output_names=["y"], do_constant_folding=True)
    with torch.no_grad():
        y = layer(x)
    np.save(os.path.join(args.out, "inputs", "x.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(args.out, "y.npy"), y.numpy().astype(np.float32))
    print(f"wrote {model_path}: d_model={args.d_model} heads={args.heads} ff={args.ff} "
          f"batch={args.batch} seq={args.seq} opset={args.opset}", file=sys.stderr)


if __name__ == "__main__":
    main()
