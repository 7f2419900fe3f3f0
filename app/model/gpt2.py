"""The GPT-2 decoder's forward pass in NumPy, one function per block.

References:
  Radford et al., "Language Models are Unsupervised Multitask Learners" (2019).
  transformers/models/gpt2/modeling_gpt2.py (GPT2Attention, GPT2MLP, GPT2Block, GPT2Model):
  the weight names below are its names; its Conv1D stores weights (in, out).
  nanoGPT's model.py (Karpathy) for the same model in a page of code.

Pre-LayerNorm blocks:  x = x + Attn(LN₁(x));  x = x + MLP(LN₂(x));  final LN_f.
Once a block's q, k, v are known, the rest is row by row, so blocks of rows run on the CPU's
cores (nn.rows).
Self-attention is app.attention on the (h, n, d) per-head q, k, v with the "causal" mask:
the model's own, so a token never sees a later one.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from app.model.forward import Parts, forward_of
from app.model.nn import NumpyOps
from app.model.spec import ModelSpec

W = Mapping[str, Any]  # the weights as the backend holds them (NumPy arrays or torch tensors)


def required(spec: ModelSpec) -> tuple[str, ...]:
    names = ["wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"]
    for i in range(spec.layers):
        for part in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"):
            names += [f"h.{i}.{part}.weight", f"h.{i}.{part}.bias"]
    return tuple(names)


def conv1d(x: Any, w: W, name: str) -> Any:
    """x·W + b with W stored (in, out), as transformers' Conv1D."""
    return x @ w[name + ".weight"] + w[name + ".bias"]  # (n, out)


def norm(x: Any, w: W, name: str, spec: ModelSpec, o: NumpyOps) -> Any:
    return o.layer_norm(x, w[name + ".weight"], w[name + ".bias"], spec.eps)


def embed(ids: list[int], w: W) -> Any:
    return w["wte.weight"][ids] + w["wpe.weight"][: len(ids)]  # (n, C)


def qkv(x: Any, w: W, p: str, spec: ModelSpec, o: NumpyOps) -> list[Any]:
    """Per-head q, k, v of block prefix p: 3 × (h, n, d), from LN₁(x)."""
    qkv = o.rows(lambda r: conv1d(norm(x[r], w, p + "ln_1", spec, o), w, p + "attn.c_attn"), x.shape[0])  # (n, 3C)
    c = qkv.shape[-1] // 3
    return [o.split_heads(qkv[:, i * c : (i + 1) * c], spec.heads) for i in range(3)]  # 3 × (h, n, d)


def rest_of_block(x: Any, q: Any, k: Any, v: Any, kt: Any, w: W, p: str, spec: ModelSpec, o: NumpyOps, r: slice) -> Any:
    """Rows r of the block's output: causal attention of those queries, the output projection and
    the residual, then the MLP on LN₂ and its residual (all row by row)."""
    a = o.attend(q[:, r], k, v, "causal", r.start, kt)  # (h, rows, d): each head's output, float32
    y = x[r] + conv1d(o.merge_heads(a), w, p + "attn.c_proj")  # (rows, C)
    act = o.activation(spec.activation)
    return y + conv1d(act(conv1d(norm(y, w, p + "ln_2", spec, o), w, p + "mlp.c_fc")), w, p + "mlp.c_proj")


def parts(w: W, spec: ModelSpec, o: NumpyOps) -> Parts:
    """GPT-2's parts of the forward pass (app.model.forward): pre-LN blocks; the hidden states are
    the residual stream's, the last one after the final LayerNorm once the last block has run."""

    def rest(i: int, x: Any, q: Any, k: Any, v: Any) -> Any:
        kt = o.keys_across(k)  # once for all the blocks of rows
        return o.rows(partial(rest_of_block, x, q, k, v, kt, w, f"h.{i}.", spec, o), x.shape[0])  # (n, C), by rows

    def shown(i: int, x: Any) -> Any:  # transformers reports the last hidden state after the final LayerNorm
        return norm(x, w, "ln_f", spec, o) if i == spec.layers - 1 else x  # (n, C)

    return Parts(lambda ids: embed(ids, w), lambda i, x: qkv(x, w, f"h.{i}.", spec, o), rest, shown)


forward = forward_of(parts)
