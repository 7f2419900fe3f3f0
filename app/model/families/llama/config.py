"""What a Llama-family config.json says (transformers' LlamaConfig, 4.x or 5.x), checked, and
every tensor it implies: the one place the family's tensor names are spelled.

References:
  transformers/models/llama/configuration_llama.py: num_key_value_heads (grouped-query attention,
  default: as many as the query heads), rope_theta (4.x) or rope_parameters.rope_theta (5.x),
  tie_word_embeddings, and the weight names of modeling_llama.py (after "model.").

Only plain Llama blocks are read: rotary embeddings over the whole head without scaling, SiLU
(SwiGLU) feed-forward layers, no biases. Anything else is a ModelError saying what.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.errors import ModelError
from app.model.families.base import ModelSpec

EMBED, FINAL_NORM, LM_HEAD = "embed_tokens.weight", "norm.weight", "lm_head.weight"
LAYER = "layers.{}."
ATTN_NORM, MLP_NORM = "input_layernorm.weight", "post_attention_layernorm.weight"  # (C,) each
Q, K, V = "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"
OUT = "self_attn.o_proj.weight"  # (C, h·d)
GATE, UP, DOWN = "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"
# what the forward multiplies by: a layer's q, k, v rows joined into one matrix, gate and up into
# another (app.model.families.llama.weights), each the separate ones top to bottom
QKV, GATE_UP = "self_attn.qkv_proj.weight", "mlp.gate_up_proj.weight"
JOINED = {QKV: (Q, K, V), GATE_UP: (GATE, UP)}
LAYER_KINDS = (ATTN_NORM, QKV, OUT, MLP_NORM, GATE_UP, DOWN)  # one layer's weights, once joined


def fields(name: str, c: Mapping[str, Any]) -> dict[str, Any]:
    """The ModelSpec fields after (name, path) of a Llama config: kind, sizes, RoPE's θ, KV heads."""
    heads, hidden = int(c["num_attention_heads"]), int(c["hidden_size"])
    kv_heads = int(c.get("num_key_value_heads") or heads)
    head_dim = int(c.get("head_dim") or hidden // max(heads, 1))
    rope = c.get("rope_parameters") or c.get("rope_scaling") or {}
    if not isinstance(rope, Mapping):
        raise ModelError(f"{name}: rope_parameters must be an object")
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind != "default":
        raise ModelError(f"{name}: only plain rotary embeddings are supported, not {kind!r} scaling")
    theta = float(rope.get("rope_theta") or c.get("rope_theta") or 10000.0)
    if c.get("hidden_act", "silu") != "silu":
        raise ModelError(f"{name}: only SiLU (SwiGLU) feed-forward layers are supported, not {c.get('hidden_act')!r}")
    if c.get("attention_bias") or c.get("mlp_bias"):
        raise ModelError(f"{name}: biases in attention or MLP layers are not supported")
    layers = int(c["num_hidden_layers"])
    if layers < 1 or heads < 1 or kv_heads < 1 or heads % kv_heads or hidden % heads or head_dim != hidden // heads:
        raise ModelError(
            f"{name}: layers and heads must be ≥ 1, heads ({heads}) a multiple of KV heads ({kv_heads}) and the "
            f"hidden size ({hidden}) heads × head size"
        )
    if head_dim % 2:
        raise ModelError(f"{name}: rotary embeddings need an even head size, not {head_dim}")
    return {
        "kind": "llama",
        "layers": layers,
        "heads": heads,
        "hidden": hidden,
        "max_positions": int(c.get("max_position_embeddings", 2048)),
        "eps": float(c.get("rms_norm_eps", 1e-6)),
        "activation": "silu",
        "kv_heads": kv_heads,
        "rope_theta": theta,
        "intermediate": int(c["intermediate_size"]),
        "vocab": int(c["vocab_size"]),
        "tied": bool(c.get("tie_word_embeddings", False)),
        "eos": _ids(c.get("eos_token_id")),
        "bos": _ids(c.get("bos_token_id")),
    }


def _ids(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    return tuple(int(v) for v in value) if isinstance(value, list) else (int(value),)


def parts(s: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Every separate matrix of one layer (after LAYER) → its shape, as transformers stores it (out, in)."""
    C, F, d = s.hidden, s.intermediate, s.head_size
    return {
        ATTN_NORM: (C,),
        MLP_NORM: (C,),
        Q: (s.heads * d, C),
        K: (s.kv_heads * d, C),
        V: (s.kv_heads * d, C),
        OUT: (C, s.heads * d),
        GATE: (F, C),
        UP: (F, C),
        DOWN: (C, F),
    }


def joined(s: ModelSpec) -> dict[str, tuple[int, ...]]:
    """One layer's weights once joined (LAYER_KINDS) → its shape."""
    one = parts(s)
    out = {kind: one[kind] for kind in LAYER_KINDS if kind in one}
    for name, pieces in JOINED.items():
        out[name] = (sum(one[p][0] for p in pieces), s.hidden)
    return {kind: out[kind] for kind in LAYER_KINDS}


def top(s: ModelSpec) -> dict[str, tuple[int, ...]]:
    """The tensors outside the layers: embeddings, final norm, and lm_head unless tied."""
    out: dict[str, tuple[int, ...]] = {EMBED: (s.vocab, s.hidden), FINAL_NORM: (s.hidden,)}
    if not s.tied:
        out[LM_HEAD] = (s.vocab, s.hidden)
    return out


def tensors(s: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Every tensor the forward pass reads, with its shape (weights stored (out, in) as torch's Linear)."""
    out = top(s)
    one = parts(s)
    for i in range(s.layers):
        out |= {LAYER.format(i) + name: shape for name, shape in one.items()}
    return out
