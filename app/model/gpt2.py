"""The GPT-2 decoder's forward pass in NumPy, one function per block.

References:
  Radford et al., "Language Models are Unsupervised Multitask Learners" (2019).
  transformers/models/gpt2/modeling_gpt2.py (GPT2Attention, GPT2MLP, GPT2Block, GPT2Model):
  the weight names below are its names; its Conv1D stores weights (in, out).
  nanoGPT's model.py (Karpathy) for the same model in a page of code.

Pre-LayerNorm blocks:  x = x + Attn(LN₁(x));  x = x + MLP(LN₂(x));  final LN_f.
Self-attention is app.attention on the (h, n, d) per-head q, k, v with the "causal" mask:
the model's own, so a token never sees a later one.
"""

from __future__ import annotations

import numpy as np

from app.attention import Backend
from app.model.nn import ACTIVATIONS, attend, by_rows, layer_norm, merge_heads, split_heads
from app.model.spec import ModelSpec
from app.model.trace import Trace
from app.model.weights import Weights


def required(spec: ModelSpec) -> tuple[str, ...]:
    names = ["wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"]
    for i in range(spec.layers):
        for part in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"):
            names += [f"h.{i}.{part}.weight", f"h.{i}.{part}.bias"]
    return tuple(names)


def conv1d(x: np.ndarray, w: Weights, name: str) -> np.ndarray:
    """x·W + b with W stored (in, out), as transformers' Conv1D."""
    return x @ w[name + ".weight"] + w[name + ".bias"]  # (n, out)


def norm(x: np.ndarray, w: Weights, name: str, spec: ModelSpec) -> np.ndarray:
    return layer_norm(x, w[name + ".weight"], w[name + ".bias"], spec.eps)


def embed(ids: list[int], w: Weights) -> np.ndarray:
    return w["wte.weight"][ids] + w["wpe.weight"][: len(ids)]  # (n, C)


def self_attention(
    x: np.ndarray, w: Weights, p: str, spec: ModelSpec, backend: Backend
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-head q, k, v of block prefix p and the attention's output projection."""
    qkv = conv1d(x, w, p + "attn.c_attn")  # (n, 3C)
    q, k, v = (split_heads(part, spec.heads) for part in np.split(qkv, 3, axis=-1))  # 3 × (h, n, d)
    out = attend(q, k, v, "causal", backend)  # (h, n, d): app.attention, a few heads at a time
    return q, k, v, conv1d(merge_heads(out), w, p + "attn.c_proj")  # (n, C)


def mlp(x: np.ndarray, w: Weights, p: str, spec: ModelSpec) -> np.ndarray:
    act = ACTIVATIONS[spec.activation]
    return by_rows(lambda rows: conv1d(act(conv1d(rows, w, p + "mlp.c_fc")), w, p + "mlp.c_proj"), x)  # (n, C)


def forward(ids: list[int], w: Weights, spec: ModelSpec, backend: Backend = "numpy") -> Trace:
    x = embed(ids, w)  # (n, C)
    qs, ks, vs, hidden = [], [], [], [x]
    for i in range(spec.layers):
        p = f"h.{i}."
        q, k, v, a = self_attention(norm(x, w, p + "ln_1", spec), w, p, spec, backend)
        x = x + a  # (n, C)
        x = x + mlp(norm(x, w, p + "ln_2", spec), w, p, spec)  # (n, C)
        qs.append(q)
        ks.append(k)
        vs.append(v)
        hidden.append(x)
    hidden[-1] = norm(x, w, "ln_f", spec)  # (n, C), as transformers reports the last hidden state
    return Trace(qs, ks, vs, hidden)
