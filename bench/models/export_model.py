#!/usr/bin/python3
"""Exports a whole PyTorch model (a BERT-base encoder or a GPT-2-small-sized decoder stack) to ONNX.

Models (batch 1 unless --batch, hidden states in and out; no embeddings, so the input is float):
  bert_layer  torch.nn.TransformerEncoderLayer(768, 12, 3072, gelu, batch_first), exactly the layer
              of bench/bert/export_bert.py (same seed, same weights).
  bert        torch.nn.TransformerEncoder of LAYERS such layers, each with its own weights.
  gpt2        LAYERS GPT-2 decoder blocks (pre-LN, causal self-attention with one fused QKV
              projection, MLP 768 -> 3072 -> 768 with GELU's tanh form, residuals) and GPT-2's
              final layer norm, written with torch.nn modules.
  llama       LAYERS LLaMA-style decoder blocks as Hugging Face's LlamaDecoderLayer writes them:
              RMS norms (x * rsqrt(mean(x^2) + eps) * w), separate Q, K and V projections without
              bias, rotary position embeddings (rotate_half with a concatenation), causal softmax
              attention, and the SwiGLU MLP down(silu(gate(x)) * up(x)); a final RMS norm. FF
              defaults to 2048 for this model (LLaMA's 8/3 of the hidden size).

Exported at opset 14 with grad enabled (the encoder's no-grad fast path has no ONNX export) and the
weights inside the file; the reference output is computed under no_grad, i.e. what a PyTorch user
runs. Writes OUT/model.onnx, OUT/inputs/x.npy (the one graph input) and OUT/y.npy.

  /usr/bin/python3 bench/models/export_model.py --model bert --layers 12 --seq 128 --out DIR

Also imported by bench/peers/torch_time.py, which rebuilds the same model from the same seed.
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["bert_layer", "bert", "gpt2", "llama"]


def _perturb(module):
    """Biases and layer-norm affines random, so every parameter matters to the output."""
    import torch

    with torch.no_grad():
        for name, param in module.named_parameters():
            if name.endswith("bias"):
                param.copy_(0.05 * torch.randn_like(param))
            elif "norm" in name or "ln_" in name:
                param.copy_(1.0 + 0.1 * torch.randn_like(param))


def _causal_mask(max_seq):
    """[1, 1, max_seq, max_seq], true on and below the diagonal: what a query may attend to."""
    import torch

    return torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool)).view(1, 1, max_seq, max_seq)


def _causal_attention(q, k, v, causal, scale):
    """softmax(q kᵀ scale, masked) v for [b, heads, s, head] q, k, v, back to [b, s, heads · head]."""
    import torch

    b, _, s, _ = q.shape
    att = (q @ k.transpose(-2, -1)) * scale
    # A large negative score above the diagonal (finite, as Hugging Face's models write it).
    att = att.masked_fill(~causal[:, :, :s, :s], torch.finfo(att.dtype).min)
    att = torch.softmax(att, dim=-1)
    return (att @ v).transpose(1, 2).reshape(b, s, -1)


def _decoder_stack(blocks, final_norm):
    """Decoder blocks in sequence, then a final norm (GPT-2's ln_f, LLaMA's norm)."""
    from torch import nn

    class DecoderStack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(blocks)
            self.norm = final_norm

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.norm(x)

    return DecoderStack()


def _gpt2_block_class():
    from torch import nn

    class CausalSelfAttention(nn.Module):
        def __init__(self, d_model, heads, max_seq):
            super().__init__()
            self.heads = heads
            self.scale = 1.0 / math.sqrt(d_model // heads)  # a Python float: a constant in the export
            self.c_attn = nn.Linear(d_model, 3 * d_model)
            self.c_proj = nn.Linear(d_model, d_model)
            self.register_buffer("causal", _causal_mask(max_seq), persistent=False)

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.c_attn(x).split(d, dim=2)
            q = q.view(b, s, self.heads, d // self.heads).transpose(1, 2)
            k = k.view(b, s, self.heads, d // self.heads).transpose(1, 2)
            v = v.view(b, s, self.heads, d // self.heads).transpose(1, 2)
            return self.c_proj(_causal_attention(q, k, v, self.causal, self.scale))

    class Block(nn.Module):
        def __init__(self, d_model, heads, ff, max_seq):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d_model)
            self.attn = CausalSelfAttention(d_model, heads, max_seq)
            self.ln_2 = nn.LayerNorm(d_model)
            self.c_fc = nn.Linear(d_model, ff)
            self.c_proj = nn.Linear(ff, d_model)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    return Block


def _llama_classes():
    """LLaMA's decoder block and its RMS norm."""
    import torch
    from torch import nn

    class RmsNorm(nn.Module):
        def __init__(self, d_model, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d_model))
            self.eps = eps

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    class Attention(nn.Module):
        def __init__(self, d_model, heads, max_seq):
            super().__init__()
            self.heads = heads
            head_dim = d_model // heads
            self.scale = 1.0 / math.sqrt(head_dim)
            self.q_proj = nn.Linear(d_model, d_model, bias=False)
            self.k_proj = nn.Linear(d_model, d_model, bias=False)
            self.v_proj = nn.Linear(d_model, d_model, bias=False)
            self.o_proj = nn.Linear(d_model, d_model, bias=False)
            inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
            angles = torch.outer(torch.arange(max_seq).float(), inv_freq)
            angles = torch.cat((angles, angles), dim=-1)
            self.register_buffer("cos", angles.cos(), persistent=False)
            self.register_buffer("sin", angles.sin(), persistent=False)
            self.register_buffer("causal", _causal_mask(max_seq), persistent=False)

        def forward(self, x):
            b, s, d = x.shape
            q = self.q_proj(x).view(b, s, self.heads, d // self.heads).transpose(1, 2)
            k = self.k_proj(x).view(b, s, self.heads, d // self.heads).transpose(1, 2)
            v = self.v_proj(x).view(b, s, self.heads, d // self.heads).transpose(1, 2)
            cos, sin = self.cos[:s], self.sin[:s]
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            return self.o_proj(_causal_attention(q, k, v, self.causal, self.scale))

    class Block(nn.Module):
        def __init__(self, d_model, heads, ff, max_seq):
            super().__init__()
            self.input_layernorm = RmsNorm(d_model)
            self.self_attn = Attention(d_model, heads, max_seq)
            self.post_attention_layernorm = RmsNorm(d_model)
            self.gate_proj = nn.Linear(d_model, ff, bias=False)
            self.up_proj = nn.Linear(d_model, ff, bias=False)
            self.down_proj = nn.Linear(ff, d_model, bias=False)

        def forward(self, x):
            x = x + self.self_attn(self.input_layernorm(x))
            h = self.post_attention_layernorm(x)
            return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))

    return Block, RmsNorm


def build_model(kind, layers=1, d_model=768, heads=12, ff=3072, seed=0, max_seq=1024):
    """The model in eval mode, its weights a function of the arguments only."""
    import torch

    if kind == "bert_layer":
        sys.path.insert(0, os.path.join(HERE, "..", "bert"))
        from export_bert import build_layer
        return build_layer(d_model, heads, ff, seed)
    torch.manual_seed(seed)
    if kind == "bert":
        layer = torch.nn.TransformerEncoderLayer(d_model=d_model, nhead=heads, dim_feedforward=ff,
                                                 activation="gelu", batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        # TransformerEncoder deep-copies one layer: give each its own weights, as a trained model has.
        for each in model.layers:
            for name, param in each.named_parameters():
                if param.dim() > 1:
                    with torch.no_grad():
                        torch.nn.init.xavier_uniform_(param)
    elif kind in ("gpt2", "llama"):
        block, norm = ((_gpt2_block_class(), torch.nn.LayerNorm) if kind == "gpt2"
                       else _llama_classes())
        model = _decoder_stack([block(d_model, heads, ff, max_seq) for _ in range(layers)],
                               norm(d_model))
        with torch.no_grad():  # GPT-2's and LLaMA's initialisation: N(0, 0.02) weights
            for name, param in model.named_parameters():
                if param.dim() > 1:
                    param.normal_(0.0, 0.02)
    else:
        raise ValueError(f"unknown model {kind!r} (one of {', '.join(MODELS)})")
    _perturb(model)
    return model.eval()


def spec_of(args):
    """What torch_time.py needs to rebuild the model: the builder's arguments."""
    return {"kind": args.model, "layers": args.layers, "d_model": args.d_model, "heads": args.heads,
            "ff": args.ff, "seed": args.seed}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--layers", type=int, default=1, help="encoder layers / decoder blocks")
    p.add_argument("--out", required=True, help="directory to write into")
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ff", type=int, default=None,
                   help="MLP width (default: 2048 for llama, 3072 for the others)")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--opset", type=int, default=14)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.ff is None:
        args.ff = 2048 if args.model == "llama" else 3072
    if args.model == "bert_layer" and args.layers != 1:
        p.error("--model bert_layer has one layer; use --model bert for a stack")

    import json
    import numpy as np
    import torch

    model = build_model(**{k: v for k, v in spec_of(args).items() if k != "kind"},
                        kind=args.model)
    torch.manual_seed(args.seed + 1)
    x = torch.randn(args.batch, args.seq, args.d_model)

    os.makedirs(os.path.join(args.out, "inputs"), exist_ok=True)
    model_path = os.path.join(args.out, "model.onnx")
    torch.onnx.export(model, (x,), model_path, opset_version=args.opset, input_names=["x"],
                      output_names=["y"], do_constant_folding=True)
    with torch.no_grad():
        y = model(x)
    np.save(os.path.join(args.out, "inputs", "x.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(args.out, "y.npy"), y.numpy().astype(np.float32))
    with open(os.path.join(args.out, "spec.json"), "w") as f:
        json.dump(spec_of(args), f)
    print(f"wrote {model_path}: {args.model} layers={args.layers} d_model={args.d_model} "
          f"heads={args.heads} ff={args.ff} seq={args.seq} opset={args.opset}", file=sys.stderr)


if __name__ == "__main__":
    main()
