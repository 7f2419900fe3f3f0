"""The GPT-2 decoder's layer, in NumPy (or torch through nn.ops).

References:
  Radford et al., "Language Models are Unsupervised Multitask Learners" (2019).
  transformers/models/gpt2/modeling_gpt2.py (GPT2Attention, GPT2MLP, GPT2Block, GPT2Model); its
  Conv1D stores weights (in, out). nanoGPT's model.py (Karpathy) for the same model in a page of code.

Pre-LayerNorm blocks:  x = x + Attn(LN₁(x));  x = x + MLP(LN₂(x));  final LN_f.
Self-attention is nn.attend on the (h, n, d) per-head q, k, v with the "causal" mask: the model's
own, so a token never sees a later one.
"""

from __future__ import annotations

from typing import Any

from app.model import blas
from app.model.families.base import W
from app.model.families.gpt2.config import DOWN, FINAL_NORM, LAYER, NORM1, NORM2, OUT, POSITIONS, QKV, UP, WORDS
from app.model.families.layernorm import LayerNormLayer


def conv1d(x: Any, w: W, name: str) -> Any:
    """x·W + b with W stored (in, out), as transformers' Conv1D (MKL's product where installed)."""
    return blas.matmul(x, w[name + ".weight"]) + w[name + ".bias"]  # (n, out)


class Gpt2Layer(LayerNormLayer):
    """GPT-2's block for weights w on backend o (app.model.families.base.Layer);
    its LayerNorm, blocks of rows and kᵀ come from LayerNormLayer."""

    def embed(self, ids: list[int], first: int) -> Any:
        return self.w[WORDS][ids] + self.w[POSITIONS][first : first + len(ids)]  # (n, C)

    def project(self, i: int, x: Any, first: int, queries: slice | None = None) -> tuple[Any, Any, Any]:
        """Per-head q, k, v of rows x: 3 × (h, r, d), from LN₁(x)."""
        p = LAYER.format(i)
        qkv = conv1d(self._norm(x, p + NORM1), self.w, p + QKV)  # (r, 3C)
        c = qkv.shape[-1] // 3
        q, k, v = (self.o.split_heads(qkv[:, j * c : (j + 1) * c], self.spec.heads) for j in range(3))
        return q, k, v

    def finish(self, i: int, x: Any, q: Any, keys: Any, first: int) -> Any:
        """Rows x's causal attention, the output projection and the residual, then the MLP on LN₂ and its residual."""
        k, kt, v = keys
        p, w = LAYER.format(i), self.w
        a = self.o.attend(q, k, v, "causal", first, kt)  # (h, rows, d): each head's output, float32
        if self.hooks.heads is not None:
            a = self.hooks.heads(i, a)
        y = x + conv1d(self.o.merge_heads(a), w, p + OUT)  # (rows, C)
        return y + conv1d(self.act(conv1d(self._norm(y, p + NORM2), w, p + UP)), w, p + DOWN)

    def shown(self, i: int, x: Any) -> Any:
        """transformers reports the last hidden state after the final LayerNorm."""
        return self._norm(x, FINAL_NORM) if i == self.spec.layers - 1 else x  # (n, C)
