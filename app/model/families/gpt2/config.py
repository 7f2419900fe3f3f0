"""What a GPT-2-family config.json says (transformers' GPT2Config), and the tensors it implies.

References:
  transformers/models/gpt2/configuration_gpt2.py and modeling_gpt2.py (GPT2Attention, GPT2MLP,
  GPT2Block): the names below are its weight names (after "transformer."); its Conv1D layers
  store their weights (in, out).

Only GPT-2's standard 1/√d_k attention scaling is read; anything else is a ModelError saying what.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.errors import ModelError
from app.model.families.base import ModelSpec

WORDS, POSITIONS = "wte.weight", "wpe.weight"  # (V, C), (max_positions, C)
FINAL_NORM = "ln_f"
LAYER = "h.{}."
NORM1, QKV, OUT, NORM2, UP, DOWN = "ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"


def fields(name: str, c: Mapping[str, Any]) -> dict[str, Any]:
    """The ModelSpec fields after (name, path) of a GPT-2 config."""
    if not c.get("scale_attn_weights", True) or c.get("scale_attn_by_inverse_layer_idx", False):
        raise ModelError(f"{name}: only GPT-2's standard 1/√d_k attention scaling is supported")
    hidden = int(c["n_embd"])
    return {
        "kind": "gpt2",
        "layers": int(c["n_layer"]),
        "heads": int(c["n_head"]),
        "hidden": hidden,
        "max_positions": int(c["n_positions"]),
        "eps": float(c.get("layer_norm_epsilon", 1e-5)),
        "activation": str(c.get("activation_function", "gelu_new")),
        "intermediate": int(c.get("n_inner") or 4 * hidden),
        "vocab": int(c["vocab_size"]),
    }


def tensors(s: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Every tensor the forward pass reads, with the shape the config implies (Conv1D: (in, out))."""
    C, F = s.hidden, s.intermediate
    out: dict[str, tuple[int, ...]] = {
        WORDS: (s.vocab, C),
        POSITIONS: (s.max_positions, C),
        FINAL_NORM + ".weight": (C,),
        FINAL_NORM + ".bias": (C,),
    }
    for i in range(s.layers):
        p = LAYER.format(i)
        for conv, shape in ((QKV, (C, 3 * C)), (OUT, (C, C)), (UP, (C, F)), (DOWN, (F, C))):
            out[p + conv + ".weight"], out[p + conv + ".bias"] = shape, shape[1:]
        for norm in (NORM1, NORM2):
            out[p + norm + ".weight"], out[p + norm + ".bias"] = (C,), (C,)
    return out
