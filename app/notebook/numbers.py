"""The numbers of the notebook view, computed in the kernel exactly as the API computes them.

References:
  app/handset.py      POST /api/attention, hand-set mode: app.attention on the checked request
  app/model/service   sentence mode: sentence_attention() on the model's own q, k, v

A view's `result` is the JSON answer of POST /api/attention for the same input, as Python
lists and dicts: the arrays go through the same orjson encoding as the API's answer (−∞ as
None, float64 written in shortest round-trip form), so the notebook and the server agree to
the last digit. Nothing here imports a widget library: the view (app.notebook.view) draws
these numbers, this module only computes them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import orjson
from pydantic import ValidationError

from app import handset
from app.attention import Backend, Mask, default_backend
from app.errors import InputError
from app.examples import DEFAULT_EXAMPLE, EXAMPLES
from app.model import registry
from app.model.loader import ModelHandle
from app.model.select import HeadChoice, LayerChoice
from app.model.service import sentence_attention
from app.schemas import AttentionInput, AttentionRequest, checked

StepId = Literal["score", "scale", "mask", "softmax", "mix"]
MAX_SCENE_TOKENS = 64  # the notebook's 3-D scene holds one widget per object: a sentence's tokens at most


@dataclass(frozen=True)
class Step:
    """One of the five steps, as static/js/steps.js has them (the same fields the page reads)."""

    id: StepId
    title: str
    stage: str  # which array of the answer the table and the links show
    links: Literal["relative", "weight"]  # thickness by the row's range, or by the weight itself
    masked: bool = False  # hidden keys look hidden (no link, hatched cell)
    row_sum: bool = False
    output: bool = False  # z: a table column and a vermillion arrow


STEPS: dict[str, Step] = {
    s.id: s
    for s in (
        Step("score", "Score: how well does each key answer the query?", "scores", "relative"),
        Step("scale", "Scale: divide by √d_k", "scaled", "relative"),
        Step("mask", "Mask: which keys may the query see?", "masked", "relative", masked=True),
        Step("softmax", "Softmax: scores become shares that add up to 1", "weights", "weight", True, row_sum=True),
        Step("mix", "Mix: blend the values by those weights", "weights", "weight", True, output=True),
    )
}


def backend() -> Backend:
    """The server's choice (app.main): $ATTENTION_BACKEND, else NumPy unless torch sees a GPU."""
    name = os.environ.get("ATTENTION_BACKEND") or default_backend()
    if name not in ("numpy", "torch"):
        raise ValueError(f"ATTENTION_BACKEND must be 'numpy' or 'torch', not {name!r}")
    return "torch" if name == "torch" else "numpy"


def as_json(fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The answer exactly as the API sends it, parsed back: the same encoder, the same digits."""
    parsed: dict[str, Any] = orjson.loads(orjson.dumps({**fields, **arrays}, option=orjson.OPT_SERIALIZE_NUMPY))
    return parsed


@dataclass(frozen=True)
class HandSet:
    """Q, K, V of one head, checked as the API checks a request."""

    tokens: list[str]
    q: np.ndarray  # (n, d_k)
    k: np.ndarray  # (n, d_k)
    v: np.ndarray  # (n, d_v)

    def result(self, mask: Mask) -> dict[str, Any]:
        """POST /api/attention {"tokens", "q", "k", "v", "mask"}, as its JSON answer."""
        return as_json(*handset.compute(AttentionInput(self.tokens, self.q, self.k, self.v, mask), backend()))


def hand_set(example: str | None, tokens: list[str] | None, q: Any, k: Any, v: Any) -> HandSet:
    """An example by id (default: the worked example "the cat ate its fish"), or q, k, v set by hand."""
    given = [name for name, a in (("q", q), ("k", k), ("v", v)) if a is not None]
    if example is not None and (given or tokens is not None):
        raise InputError(given[0] if given else "tokens", "send an example, or tokens with q, k and v: not both")
    if not given and tokens is not None:
        raise InputError("q", "q is missing: send q, k and v with tokens")
    if not given:
        name = DEFAULT_EXAMPLE if example is None else example
        if name not in EXAMPLES:
            raise InputError("example", f"no example {name!r}; there are {sorted(EXAMPLES)}")
        e = EXAMPLES[name]
        tokens, q, k, v = list(e.tokens), e.q, e.k, e.v
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a is None:
            raise InputError(name, f"{name} is missing: send q, k and v together")
    body = {"tokens": tokens, **{name: _rows(a) for name, a in (("q", q), ("k", k), ("v", v))}}
    try:
        req = AttentionRequest.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(str(err["loc"][0]) if err["loc"] else "q", err["msg"]) from None
    inp = checked(req)
    if inp.q.ndim != 2:
        raise InputError("q", "the notebook view draws one head: send q, k, v as n × d (2-D), not h × n × d")
    if len(inp.tokens) > MAX_SCENE_TOKENS:
        raise InputError("q", f"q has {len(inp.tokens)} rows; the notebook view draws at most {MAX_SCENE_TOKENS}")
    return HandSet(inp.tokens, inp.q, inp.k, inp.v)


def _rows(a: Any) -> Any:
    """Arrays as nested lists, so they pass the API's own checks (the same messages)."""
    return a.tolist() if isinstance(a, np.ndarray) else a


@dataclass(frozen=True)
class Sentence:
    """A sentence read by a model: `model`, an id of GET /api/models, else the server's own
    ($ATTENTION_MODEL, else all-MiniLM-L6-v2)."""

    text: str
    model: str | None = None
    ablate: tuple[tuple[int, int], ...] = ()  # heads switched off, (layer, head): app.model.inside

    def handle(self) -> ModelHandle:
        try:
            return registry.handle(self.model, os.environ.get("ATTENTION_MODEL") or None)
        except InputError as e:
            raise InputError("model", e.message) from None

    def result(self, layer: LayerChoice, head: HeadChoice, mask: Mask, mask_given: bool = True) -> dict[str, Any]:
        """POST /api/attention {"sentence", "layer", "head", "mask"}, as its JSON answer."""
        if self.ablate:
            from app.model.inside import ablated_attention

            heads = list(self.ablate)
            fields, arrays = ablated_attention(
                self.handle(), self.text, heads, layer, head, mask, mask_given, backend()
            )
        else:
            fields, arrays = sentence_attention(self.handle(), self.text, layer, head, mask, mask_given, backend())
        if len(fields["tokens"]) > MAX_SCENE_TOKENS:
            n = len(fields["tokens"])
            raise InputError("sentence", f"sentence is {n} tokens; the notebook view draws at most {MAX_SCENE_TOKENS}")
        return as_json(fields, arrays)

    def shape(self) -> tuple[int, int]:
        """(layers, heads) of the model."""
        spec = self.handle().spec()
        return spec.layers, spec.heads
