"""What a BERT-family config.json says (transformers' BertConfig), and the tensors it implies.

References:
  transformers/models/bert/configuration_bert.py and modeling_bert.py (BertEmbeddings,
  BertSelfAttention, BertLayer): the names below are its weight names (after "bert.").

Only encoders with absolute position embeddings are read; anything else is a ModelError saying what.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.errors import ModelError
from app.model.families.base import ModelSpec

EMB = "embeddings."
WORDS = EMB + "word_embeddings.weight"  # (V, C)
POSITIONS = EMB + "position_embeddings.weight"  # (max_positions, C)
TYPES = EMB + "token_type_embeddings.weight"  # (type_vocab, C)
EMB_NORM = EMB + "LayerNorm"
LAYER = "encoder.layer.{}."
QUERY, KEY, VALUE = "attention.self.query", "attention.self.key", "attention.self.value"
OUT = "attention.output.dense"  # the attention's output projection (C, C)
NORM1 = "attention.output.LayerNorm"
UP, DOWN = "intermediate.dense", "output.dense"  # the feed-forward (F, C) and (C, F)
NORM2 = "output.LayerNorm"
LINEARS = (QUERY, KEY, VALUE, OUT, UP, DOWN)  # weight (out, in) and bias (out,) each
NORMS = (NORM1, NORM2)  # weight and bias (C,) each


def fields(name: str, c: Mapping[str, Any]) -> dict[str, Any]:
    """The ModelSpec fields after (name, path) of a BERT config."""
    if c.get("position_embedding_type", "absolute") != "absolute":
        raise ModelError(f"{name}: only absolute position embeddings are supported")
    if c.get("is_decoder", False):
        raise ModelError(f"{name}: BERT as a decoder (is_decoder) is not supported")
    return {
        "kind": "bert",
        "layers": int(c["num_hidden_layers"]),
        "heads": int(c["num_attention_heads"]),
        "hidden": int(c["hidden_size"]),
        "max_positions": int(c["max_position_embeddings"]),
        "eps": float(c.get("layer_norm_eps", 1e-12)),
        "activation": str(c.get("hidden_act", "gelu")),
        "intermediate": int(c["intermediate_size"]),
        "vocab": int(c["vocab_size"]),
        "type_vocab": int(c.get("type_vocab_size", 2)),
    }


def tensors(s: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Every tensor the forward pass reads, with the shape the config implies."""
    C, F = s.hidden, s.intermediate
    out: dict[str, tuple[int, ...]] = {
        WORDS: (s.vocab, C),
        POSITIONS: (s.max_positions, C),
        TYPES: (s.type_vocab, C),
        EMB_NORM + ".weight": (C,),
        EMB_NORM + ".bias": (C,),
    }
    shapes = {QUERY: (C, C), KEY: (C, C), VALUE: (C, C), OUT: (C, C), UP: (F, C), DOWN: (C, F)}
    for i in range(s.layers):
        p = LAYER.format(i)
        for lin, shape in shapes.items():
            out[p + lin + ".weight"], out[p + lin + ".bias"] = shape, shape[:1]
        for norm in NORMS:
            out[p + norm + ".weight"], out[p + norm + ".bias"] = (C,), (C,)
    return out
