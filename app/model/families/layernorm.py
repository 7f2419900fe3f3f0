"""What the two LayerNorm families' layers share (BERT's post-LN layer, GPT-2's pre-LN block).

Both normalise with a LayerNorm that has a weight and a bias (transformers' nn.LayerNorm), take
their rows in the same blocks (nn.row_blocks) and read a layer's keys as kᵀ, made once a layer for
every block (nn.keys_across). Llama (RMSNorm, no bias; its own blocks and kernel) does not share it.
"""

from __future__ import annotations

from typing import Any

from app.model.families.base import NO_HOOKS, Hooks, ModelSpec, W
from app.model.nn import NumpyOps


class LayerNormLayer:
    """The shared half of BertLayer and Gpt2Layer; each adds embed, project, finish and shown."""

    def __init__(self, w: W, spec: ModelSpec, o: NumpyOps, hooks: Hooks = NO_HOOKS) -> None:
        self.w, self.spec, self.o, self.hooks = w, spec, o, hooks
        self.act = o.activation(spec.activation)

    def _norm(self, x: Any, name: str) -> Any:
        """LayerNorm of rows x (n, C) with the weight and bias named `name`: (n, C)."""
        return self.o.layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.spec.eps)

    def blocks(self, n: int, first: int) -> list[slice]:
        return self.o.row_blocks(n)

    def gather(self, i: int, k: Any, v: Any) -> Any:
        return k, self.o.keys_across(k), v  # kᵀ made once a layer for every block (nn.keys_across)
