"""What every model family supplies, and the facts of one model (ModelSpec).

A family (app.model.families.bert, .gpt2, .llama) is a package that owns, for its kind of model:

  config.py   the ModelSpec fields of a config.json, and every tensor the forward pass reads with
              its shape (the one place its tensor names are spelled)
  layer.py    ONE layer, as the two halves app.model.forward.run drives: project (a block of rows'
              q, k, v) and finish (their attention, output projection and feed-forward); the views'
              trace, a prompt's prefill and each written token all go through it

Family gathers them for app.model.spec (reading a folder), app.model.loader (loading) and
app.model.forward (running). A Layer is made per call, for the weights as a backend holds them
(NumPy arrays, or torch tensors on the GPU).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from app import limits
from app.model.nn import NumpyOps
from app.model.weights import Weights

Kind = Literal["bert", "gpt2", "llama"]
W = Mapping[str, Any]  # the weights as the backend holds them (NumPy arrays or torch tensors)


@dataclass(frozen=True)
class ModelSpec:
    """A model's facts, read from its config.json (app.model.spec.read_spec) and checked."""

    name: str
    path: Path
    kind: Kind
    layers: int
    heads: int
    hidden: int  # width of the residual stream, heads × head_size
    max_positions: int  # the model's own context length
    eps: float  # the normalization's epsilon
    activation: str  # key of nn.ACTIVATIONS ("silu" for Llama's SwiGLU)
    intermediate: int = 0  # the feed-forward's width
    vocab: int = 0  # rows of the token embeddings
    type_vocab: int = 0  # BERT's token types (segments); 0 for the others
    kv_heads: int = 0  # key/value heads (0: as many as query heads; fewer: grouped-query attention)
    rope_theta: float = 10000.0  # Llama's rotary base
    tied: bool = True  # whether the next-token scores use the embeddings (Llama)
    eos: tuple[int, ...] = ()
    bos: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.kv_heads:
            object.__setattr__(self, "kv_heads", self.heads)

    @property
    def groups(self) -> int:
        """Query heads per KV head (1 without grouped-query attention)."""
        return self.heads // self.kv_heads

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads

    @property
    def causal(self) -> bool:
        return self.kind in ("gpt2", "llama")

    @property
    def max_tokens(self) -> int:
        """Tokens per sentence: the model's context, within the API's limits (tokens, and heads·n² cells)."""
        by_cells = int((limits.MAX_CELLS // self.heads) ** 0.5)
        return min(self.max_positions, limits.MAX_TOKENS, by_cells)


@dataclass(frozen=True)
class Hooks:
    """Where a caller changes what a layer computes, without a copy of the layer.

    heads   (layer i, its heads' outputs (h, rows, d) before the output projection) → what goes on:
            zeroing head j's slice removes that head from the model (ablation, as transformers'
            head_mask does for BERT and a hook on o_proj's input for Llama)
    attend  Llama's attention kernel, replaced: (q (h, r, d), keys and values (h_kv, T, d) of
            positions 0 … T − 1, the position of q's first row, ops) → each head's output (h, r, d),
            e.g. a blocked one with an online softmax for long prompts (BERT and GPT-2 keep
            nn.attend, which the overview's summaries observe)
    """

    heads: Callable[[int, Any], Any] | None = None
    attend: Callable[..., Any] | None = None


NO_HOOKS = Hooks()


class Layer(Protocol):
    """One family's layer, for weights on a backend: what app.model.forward.run drives.

    Rows come in blocks (blocks()); each block goes through every layer on one worker thread,
    the workers meeting once a layer, when every row's keys and values of it are stored.
    """

    def embed(self, ids: list[int], first: int) -> Any:
        """The first hidden state (n, C) of tokens `ids` at positions first … first + n − 1."""

    def blocks(self, n: int, first: int) -> list[slice]:
        """Rows 0 … n − 1 (at positions first …) cut into the blocks the workers take."""

    def project(self, i: int, x: Any, first: int, queries: slice | None = None) -> tuple[Any, Any, Any]:
        """Layer i's q (h, r, d), k and v (h_kv, r, d) of rows x (r, C) at positions first …;
        `queries`: only those rows' queries (the others are never read), None: every row's."""

    def gather(self, i: int, k: Any, v: Any) -> Any:
        """What finish() reads of layer i's keys and values (h_kv, T, d): once a layer, for every block."""

    def finish(self, i: int, x: Any, q: Any, keys: Any, first: int) -> Any:
        """Layer i's output (r, C) for rows x (r, C) whose queries q (h, r, d) are at positions first …"""

    def shown(self, i: int, x: Any) -> Any:
        """What a trace keeps of layer i's output (n, C) (a decoder's last: after the final norm)."""


class Decoder(Layer, Protocol):
    def logits(self, x: Any) -> Any:
        """The next-token scores (r, V) of the last layer's output rows x (r, C)."""


@dataclass(frozen=True)
class Family:
    """One kind of model: how its config, tensors and layer are read (see the module's docstring)."""

    kind: Kind
    model_type: str  # config.json's "model_type"
    fields: Callable[[str, Mapping[str, Any]], dict[str, Any]]  # (name, config) → ModelSpec fields after path
    tensors: Callable[[ModelSpec], dict[str, tuple[int, ...]]]  # every tensor the forward reads → its shape
    embeddings: str  # the token embeddings' tensor: its rows are the tokenizer's ids
    layer: Callable[[W, ModelSpec, NumpyOps, Hooks], Layer]  # the layer for weights on a backend
    prepare: Callable[[Weights, ModelSpec], None] = field(default=lambda weights, spec: None)  # once per model
    # a folder may keep the weights as the forward multiplies by them, in joined/ (a converted GGUF
    # file): the .npy files it holds → their shapes, and those files read as the forward's weights
    joined: Callable[[ModelSpec], dict[str, tuple[int, ...]]] | None = None
    read_joined: Callable[[Path, ModelSpec], Weights] | None = None
