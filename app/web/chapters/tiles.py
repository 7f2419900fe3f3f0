"""POST /api/lesson/tiles {"q", "k", "v" | "example" | "sentence", "block", "mask"}: one head's attention
read in blocks of keys with an online softmax, every block's m, l and o for every query, and the
numbers held at once. The math: app.lesson.tiles; the sentence's q, k, v: app.model.service, as
POST /api/attention's sentence mode gives them (the same output, to the last digits)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema

from app.attention import Backend, Mask
from app.errors import InputError
from app.examples import DEFAULT_EXAMPLE, EXAMPLES
from app.lesson import tiles
from app.model import registry, service
from app.schemas import MaskOrDefault, Matrix, Sentence, Token
from app.web.chapters.shared import MAX_LESSON_TOKENS, MODEL_ERRORS, Int, LayerIndex
from app.web.http import body_doc, json_body, json_bytes
from app.web.transport import in_slot

router = APIRouter(prefix="/api/lesson", tags=["lesson"])

MAX_TILES_TOKENS = MAX_LESSON_TOKENS  # rows of q, k, v (and tokens of a sentence): every step of every query is sent
MAX_TILES_DIM = 64  # d_k and d_v of hand-set vectors (a real model's head: 32 or 64)
DEFAULT_BLOCK = 2
# The figures for a long prompt: 4,096 tokens read in blocks of 128 by one head of 64 numbers
# (SmolLM2-135M's head size), in float32 (4 bytes a number)
LONG_TOKENS, LONG_BLOCK, LONG_D, LONG_BYTES = 4096, 128, 64, 4

_ROWS = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_TILES_TOKENS,
    "items": {"type": "array", "minItems": 1, "maxItems": MAX_TILES_DIM, "items": {"type": "number"}},
}
Rows = Annotated[Matrix, WithJsonSchema(_ROWS)]  # one head: n × d, finite numbers


class TilesRequest(BaseModel):
    """One head's q, k, v: set by hand, a built-in example, or a sentence through a real model."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"example": DEFAULT_EXAMPLE, "block": 2}]},
    )

    tokens: list[Token] | None = Field(
        None, max_length=MAX_TILES_TOKENS, description="With q, k, v: a label per row (default t0, t1, …)."
    )
    q: Rows = Field(
        None,
        description=f"Queries, n × d_k: n ≤ {MAX_TILES_TOKENS}, d_k ≤ {MAX_TILES_DIM}, finite numbers. "
        "Send q, k and v, or example, or sentence; none of them: the default example.",
    )
    k: Rows = Field(None, description="Keys: the shape of q.")
    v: Rows = Field(None, description=f"Values: n × d_v, d_v ≤ {MAX_TILES_DIM}.")
    example: Annotated[str, StringConstraints(max_length=64), WithJsonSchema({"enum": list(EXAMPLES)})] | None = Field(
        None, description="A built-in example's id (GET /api/examples)."
    )
    sentence: Sentence | None = Field(
        None,
        description=f"Text for the model to read (default all-MiniLM-L6-v2), ≤ {MAX_TILES_TOKENS} tokens: "
        "the head's own q, k, v.",
    )
    model: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="With sentence: a model id of GET /api/models (default: the server's own model)."
    )
    layer: LayerIndex | None = Field(None, description="With sentence: 0-based layer (default 0).")
    head: Annotated[int, Field(ge=0, strict=True)] | None = Field(
        None, description="With sentence: 0-based head (default 0)."
    )
    block: Int = Field(
        DEFAULT_BLOCK,
        ge=1,
        description="Keys (and values) per block, 1 … n; one that does not divide n leaves a short last block.",
    )
    mask: MaskOrDefault = None


class StepOut(BaseModel):
    block: int = Field(description="0-based: the block of keys start … stop − 1.")
    start: int
    stop: int
    scores: list[list[float | None]] = Field(
        description="n × b: q·k/√d_k for the block's keys; null where the mask hides the key."
    )
    top: list[float | None] = Field(description="Each query's largest score in the block; null: the mask hides all.")
    alpha: list[float] = Field(description="e^(m_old − m): what everything kept so far is multiplied by (0 at first).")
    p: list[list[float]] = Field(description="n × b: e^(s − m) for the block's keys, with the new m; 0 where hidden.")
    m: list[float] = Field(description="The largest score read so far, after this block.")
    l: list[float] = Field(description="α·l_old + Σ p: Σ e^(s − m) over every key read so far.")  # noqa: E741
    o: list[list[float]] = Field(description="n × d_v: α·o_old + Σ p·v: Σ e^(s − m)·v over every key read so far.")


class HeldOut(BaseModel):
    tokens: int = Field(description="n: queries and keys.")
    block: int = Field(description="b: keys per block.")
    d_v: int = Field(description="Numbers in a value (and in o).")
    tile: int = Field(description="n × b: the scores held at once, read in blocks.")
    table: int = Field(description="n × n: the scores the plain way holds at once.")
    running: int = Field(description="n × (2 + d_v): every query's m, l and o.")
    bytes_per_number: int = Field(description="4 (float32) for the long prompt's figures; 8 (float64) here.")


class TilesResponse(BaseModel):
    source: Literal["qkv", "example", "sentence"]
    example: str | None = Field(None, description="The example's id (source 'example').")
    model: str | None = Field(None, description="Sentence: the model's name.")
    kind: Literal["bert", "gpt2", "llama"] | None = Field(None, description="Sentence: encoder or decoder.")
    layer: int | None = Field(None, description="Sentence: the layer.")
    head: int | None = Field(None, description="Sentence: the head.")
    tokens: list[str]
    mask: Literal["full", "causal"]
    block: int
    d_k: int
    d_v: int
    q: list[list[float]] = Field(description="n × d_k: the queries used (a sentence's: the head's own).")
    k: list[list[float]] = Field(description="n × d_k")
    v: list[list[float]] = Field(description="n × d_v")
    blocks: list[list[int]] = Field(description="[start, stop) of each block of keys.")
    steps: list[StepOut] = Field(description="Every block, in order: each query's numbers after it.")
    output: list[list[float]] = Field(description="n × d_v: o / l after the last block: the attention output.")
    weights: list[list[float]] = Field(
        description="n × n: e^(s − m)/l with the final m and l, built afterwards cell by cell to show that "
        "each finished row is the plain softmax row (the blocks never hold it)."
    )
    held: HeldOut = Field(description="Numbers held at once for this input (float64).")
    long: HeldOut = Field(description="The same for a 4,096-token prompt, blocks of 128, one head of 64 (float32).")


def _held(n: int, block: int, d_v: int, bytes_per_number: int) -> dict[str, int]:
    h = tiles.held(n, n, block, d_v)
    return {
        "tokens": n, "block": block, "d_v": d_v, "tile": h.tile, "table": h.table, "running": h.running,
        "bytes_per_number": bytes_per_number,
    }  # fmt: skip


def _step(s: tiles.Step) -> dict[str, Any]:
    return {
        "block": s.block, "start": s.start, "stop": s.stop, "scores": s.scores, "top": s.top, "alpha": s.alpha,
        "p": s.p, "m": s.m, "l": s.l, "o": s.o,
    }  # fmt: skip


def _answer(fields: dict[str, Any], q: np.ndarray, k: np.ndarray, v: np.ndarray, block: int, mask: Mask) -> bytes:
    n = q.shape[0]
    if block > n:
        keys = "1 key" if n == 1 else f"{n} keys"
        raise InputError("block", f"block must be 1 … {n}: keys per block, and there are {keys}; got {block}")
    with np.errstate(over="ignore", invalid="ignore"):
        t = tiles.steps(q, k, v, block, mask)
        weights = tiles.finished_weights(t)
    if not (np.isfinite(t.output).all() and np.isfinite(t.running.m).all() and np.isfinite(weights).all()):
        raise InputError(
            "q", "the numbers overflow float64 (scores or outputs beyond ±1.8e308): use smaller values", "overflow"
        )
    return json_bytes({
        **fields, "mask": mask, "block": block, "d_k": q.shape[1], "d_v": v.shape[1], "q": q, "k": k, "v": v,
        "blocks": tiles.blocks(n, block), "steps": [_step(s) for s in t.steps], "output": t.output,
        "weights": weights, "held": _held(n, block, v.shape[1], 8),
        "long": _held(LONG_TOKENS, LONG_BLOCK, LONG_D, LONG_BYTES),
    })  # fmt: skip


def _hand_set(req: TilesRequest) -> bytes:
    q, k, v = req.q, req.k, req.v
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim != 2:
            raise InputError(name, f"{name} must be one head, n × d (2-D), got {a.ndim}-D")
        if a.shape[0] > MAX_TILES_TOKENS or a.shape[1] > MAX_TILES_DIM:
            msg = (
                f"{name} is {a.shape[0]} × {a.shape[1]}; this view takes ≤ {MAX_TILES_TOKENS} rows of ≤ {MAX_TILES_DIM}"
            )
            raise InputError(name, msg)
    if k.shape != q.shape:
        raise InputError("k", f"k must have the shape of q {list(q.shape)}, got {list(k.shape)}")
    if v.shape[0] != q.shape[0]:
        raise InputError("v", f"v must have {q.shape[0]} rows like q, got {v.shape[0]}")
    n = q.shape[0]
    labels = req.tokens if req.tokens is not None else [f"t{i}" for i in range(n)]
    if len(labels) != n:
        raise InputError("tokens", f"tokens has {len(labels)} labels but q has {n} rows")
    return _answer({"source": "qkv", "tokens": labels}, q, k, v, req.block, req.mask or "full")


def _example(req: TilesRequest) -> bytes:
    name = req.example or DEFAULT_EXAMPLE
    if name not in EXAMPLES:
        raise InputError("example", f"no example {name!r}; there are {', '.join(EXAMPLES)}")
    e = EXAMPLES[name]
    fields = {"source": "example", "example": e.id, "tokens": list(e.tokens)}
    return _answer(fields, e.q, e.k, e.v, req.block, req.mask or e.mask)


def _sentence(request: Request, req: TilesRequest, backend: Backend) -> bytes:
    handle = registry.handle(req.model, request.app.state.model_dir)
    spec = service.spec_of(handle)
    sentence = req.sentence or ""
    encoded = service.encode_sentence(handle, spec, sentence)
    if len(encoded) > (limit := min(spec.max_tokens, MAX_TILES_TOKENS)):
        raise InputError(
            "sentence",
            f"sentence is {len(encoded)} tokens for {spec.name}; this view takes {limit}",
            "too_many_tokens",
            ctx={"tokens": len(encoded), "limit": limit},
        )
    layer, head = req.layer or 0, req.head or 0
    given, arrays = service.sentence_attention(handle, sentence, layer, head, req.mask, req.mask is not None, backend)
    fields = {
        "source": "sentence", "model": spec.name, "kind": spec.kind, "layer": layer, "head": head,
        "tokens": given["tokens"],
    }  # fmt: skip
    return _answer(fields, arrays["q"], arrays["k"], arrays["v"], req.block, given["mask"])


@router.post("/tiles", summary="Attention in blocks of keys, with an online softmax",
             response_model=TilesResponse, responses=MODEL_ERRORS,
             openapi_extra=body_doc(TilesRequest, required=False))  # fmt: skip
async def post_tiles(request: Request) -> Response:
    """Every block's running maximum m, sum l and output o for every query; o / l after the last block
    is POST /api/attention's output for the same q, k, v."""
    req = await json_body(request, TilesRequest, empty_is_default=True, named=True)
    given = [name for name in ("q", "k", "v") if getattr(req, name) is not None]
    sources = (["q, k, v"] if given else []) + [s for s in ("example", "sentence") if getattr(req, s) is not None]
    if len(sources) > 1:
        field = "example" if given and req.example is not None else "sentence"
        raise InputError(field, f"send one of q, k, v or example or sentence, not {' and '.join(sources)}")
    if req.sentence is None:
        for name in ("model", "layer", "head"):
            if getattr(req, name) is not None:
                raise InputError(name, f"{name} goes with sentence (a model's layer and head)")
    if req.tokens is not None and not given:
        raise InputError("tokens", "tokens label hand-set q, k and v; an example or a sentence has its own")
    if given:
        for name in ("q", "k", "v"):
            if getattr(req, name) is None:
                raise InputError(name, f"{name} is required with {', '.join(given)} (send q, k and v)")
        return await in_slot("application/json", _hand_set, req)
    if req.sentence is not None:
        return await in_slot("application/json", _sentence, request, req, request.app.state.backend)
    return await in_slot("application/json", _example, req)
