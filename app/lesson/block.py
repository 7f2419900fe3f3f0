"""One transformer block of a real model, every intermediate vector by name.

References:
  Vaswani et al., "Attention Is All You Need" (2017), section 3.1: post-LN, LayerNorm(x + Sublayer(x)).
  Xiong et al., "On Layer Normalization in the Transformer Architecture" (2020): pre-LN, x + Sublayer(LN(x)).
  transformers/models/bert/modeling_bert.py (BertLayer) and gpt2/modeling_gpt2.py (GPT2Block): the
  weight names below are theirs; app/model/families/bert/ and gpt2/ run the same blocks for speed.

The stages, in the order each model computes them (n tokens, C = hidden size):

  BERT (post-LN)                               GPT-2 (pre-LN)
  input      the layer's input       (n, C)    input      the layer's input       (n, C)
  attention  MultiHead(x) · W_O      (n, C)    ln_1       LN₁(input)              (n, C)
  residual   input + attention       (n, C)    attention  MultiHead(ln_1) · W_O   (n, C)
  norm1      LN₁(residual)           (n, C)    residual   input + attention       (n, C)
  ffn        W₂·GELU(W₁·norm1)       (n, C)    ln_2       LN₂(residual)           (n, C)
  residual2  norm1 + ffn             (n, C)    mlp        W₂·GELU(W₁·ln_2)        (n, C)
  output     LN₂(residual2)          (n, C)    output     residual + mlp          (n, C)

"output" is the next layer's "input" (GPT-2's last layer: transformers then applies ln_f once more).
Attention is app.lesson.multihead (every head through app.attention); the rest uses app.model.nn.
Linear layers run in float32 as the weights are stored, attention in float64.
This module imports nothing from the web side of the app.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.attention import Backend, Mask
from app.lesson.multihead import MultiHead, multihead
from app.model.nn import ACTIVATIONS, layer_norm
from app.model.spec import ModelSpec
from app.model.weights import Weights

BERT_ORDER = ("input", "attention", "residual", "norm1", "ffn", "residual2", "output")
GPT2_ORDER = ("input", "ln_1", "attention", "residual", "ln_2", "mlp", "output")
PRE_LN_ORDER = ("input", "ln_1", "attention", "residual", "ln_2", "ffn", "output")


@dataclass(frozen=True)
class Block:
    order: tuple[str, ...]
    vectors: dict[str, np.ndarray]  # name → (n, C)
    heads: MultiHead  # the attention of this block, head by head


@dataclass(frozen=True)
class AttentionWeights:
    """One layer's attention as multihead() takes it: (in, out) matrices per head, and biases."""

    w_q: np.ndarray  # (h, C, d)
    w_k: np.ndarray  # (h, C, d)
    w_v: np.ndarray  # (h, C, d)
    w_o: np.ndarray  # (h·d, C)
    biases: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (h, d) × 3, (C,)
    o_name: str  # the output projection's name in the model's weights (its .weight and .bias)


def _per_head(w_in_out: np.ndarray, heads: int) -> np.ndarray:
    """(C, h·d) → (h, C, d): head i owns the columns i·d … (i+1)·d − 1."""
    c, width = w_in_out.shape
    return w_in_out.reshape(c, heads, width // heads).transpose(1, 0, 2)  # (h, C, d)


def attention_weights(w: Weights, spec: ModelSpec, layer: int) -> AttentionWeights:
    """The Q, K, V and output projections of `layer`, split into heads."""
    h = spec.heads
    if spec.kind == "bert":
        p = f"encoder.layer.{layer}.attention."
        names = ("self.query", "self.key", "self.value")
        ws = [_per_head(w[p + n + ".weight"].T, h) for n in names]  # torch Linear stores (out, in)
        bs = [w[p + n + ".bias"].reshape(h, -1) for n in names]  # (h, d)
        o_name = p + "output.dense"
        w_o, b_o = w[o_name + ".weight"].T, w[o_name + ".bias"]  # (h·d, C), (C,)
    else:
        p = f"h.{layer}.attn."
        ws = [_per_head(part, h) for part in np.split(w[p + "c_attn.weight"], 3, axis=1)]  # Conv1D: (in, out)
        bs = [b.reshape(h, -1) for b in np.split(w[p + "c_attn.bias"], 3)]  # (h, d)
        o_name = p + "c_proj"
        w_o, b_o = w[o_name + ".weight"], w[o_name + ".bias"]  # (h·d, C), (C,)
    return AttentionWeights(ws[0], ws[1], ws[2], w_o, (bs[0], bs[1], bs[2], b_o), o_name)


def layer_attention(x: np.ndarray, w: Weights, spec: ModelSpec, layer: int, backend: Backend) -> MultiHead:
    """Multi-head attention of `layer` on x (n, C), with the model's own weights, biases and mask."""
    a = attention_weights(w, spec, layer)
    mask: Mask = "causal" if spec.causal else "full"
    return multihead(x, a.w_q, a.w_k, a.w_v, a.w_o, mask, backend, a.biases)


def _linear(x: np.ndarray, w: Weights, name: str, stored_out_in: bool) -> np.ndarray:
    weight = w[name + ".weight"]
    return x @ (weight.T if stored_out_in else weight) + w[name + ".bias"]  # (n, out)


def _norm(x: np.ndarray, w: Weights, name: str, spec: ModelSpec) -> np.ndarray:
    return layer_norm(x, w[name + ".weight"], w[name + ".bias"], spec.eps)  # (n, C)


def _ffn(x: np.ndarray, w: Weights, spec: ModelSpec, layer: int) -> np.ndarray:
    act = ACTIVATIONS[spec.activation]
    if spec.kind == "bert":
        p = f"encoder.layer.{layer}."
        return _linear(act(_linear(x, w, p + "intermediate.dense", True)), w, p + "output.dense", True)  # (n, C)
    p = f"h.{layer}.mlp."
    return _linear(act(_linear(x, w, p + "c_fc", False)), w, p + "c_proj", False)  # (n, C)


def embed(ids: list[int], w: Weights, spec: ModelSpec) -> np.ndarray:
    """The input of layer 0: token + position (+ token type 0, then LayerNorm, for BERT)."""
    n = len(ids)
    if spec.kind == "bert":
        e = "embeddings."
        x = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][:n]  # (n, C)
        x = x + w[e + "token_type_embeddings.weight"][0]  # (n, C): one sentence, type 0
        return _norm(x, w, e + "LayerNorm", spec)
    return w["wte.weight"][ids] + w["wpe.weight"][:n]  # (n, C)


def block(x: np.ndarray, w: Weights, spec: ModelSpec, layer: int, backend: Backend = "numpy") -> Block:
    """Every named vector of `layer` on its input x (n, C), in the model's own order."""
    x = np.asarray(x, dtype=np.float32)
    v: dict[str, np.ndarray] = {"input": x}
    if spec.kind == "bert":
        p = f"encoder.layer.{layer}."
        mh = layer_attention(x, w, spec, layer, backend)
        v["attention"] = mh.output.astype(np.float32)  # (n, C)
        v["residual"] = x + v["attention"]  # (n, C)
        v["norm1"] = _norm(v["residual"], w, p + "attention.output.LayerNorm", spec)  # (n, C)
        v["ffn"] = _ffn(v["norm1"], w, spec, layer)  # (n, C)
        v["residual2"] = v["norm1"] + v["ffn"]  # (n, C)
        v["output"] = _norm(v["residual2"], w, p + "output.LayerNorm", spec)  # (n, C)
        return Block(BERT_ORDER, v, mh)
    p = f"h.{layer}."
    v["ln_1"] = _norm(x, w, p + "ln_1", spec)  # (n, C)
    mh = layer_attention(v["ln_1"], w, spec, layer, backend)
    v["attention"] = mh.output.astype(np.float32)  # (n, C)
    v["residual"] = x + v["attention"]  # (n, C)
    v["ln_2"] = _norm(v["residual"], w, p + "ln_2", spec)  # (n, C)
    v["mlp"] = _ffn(v["ln_2"], w, spec, layer)  # (n, C)
    v["output"] = v["residual"] + v["mlp"]  # (n, C)
    return Block(GPT2_ORDER, v, mh)


def pre_ln_what_if(x: np.ndarray, w: Weights, spec: ModelSpec, layer: int, backend: Backend = "numpy") -> Block:
    """A BERT layer's own weights rearranged pre-LN (as GPT-2, LLaMA): x + Attn(LN₁(x)), then + FFN(LN₂(·)).

    Not what the model computes (it was trained post-LN): a what-if that shows where the two
    orders differ. The LayerNorms are the layer's own (attention.output.LayerNorm first, output.LayerNorm second).
    """
    if spec.kind != "bert":
        raise ValueError("the pre-LN what-if rearranges a post-LN (BERT) layer; GPT-2 is pre-LN already")
    p = f"encoder.layer.{layer}."
    x = np.asarray(x, dtype=np.float32)
    v: dict[str, np.ndarray] = {"input": x}
    v["ln_1"] = _norm(x, w, p + "attention.output.LayerNorm", spec)  # (n, C)
    mh = layer_attention(v["ln_1"], w, spec, layer, backend)
    v["attention"] = mh.output.astype(np.float32)  # (n, C)
    v["residual"] = x + v["attention"]  # (n, C)
    v["ln_2"] = _norm(v["residual"], w, p + "output.LayerNorm", spec)  # (n, C)
    v["ffn"] = _ffn(v["ln_2"], w, spec, layer)  # (n, C)
    v["output"] = v["residual"] + v["ffn"]  # (n, C)
    return Block(PRE_LN_ORDER, v, mh)


def layer_input(ids: list[int], w: Weights, spec: ModelSpec, layer: int, backend: Backend = "numpy") -> np.ndarray:
    """The input of `layer`: the embeddings run through the blocks before it."""
    x = embed(ids, w, spec)  # (n, C)
    for i in range(layer):
        x = block(x, w, spec, i, backend).vectors["output"]  # (n, C)
    return x
