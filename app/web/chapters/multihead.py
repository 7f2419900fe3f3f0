"""The heads chapter's routes: many heads side by side, concatenated, × W_O. The math: app.lesson.multihead.

POST /api/multihead          hand-set x and per-head W_Q, W_K, W_V, W_O → every head's stages, concat, output
GET  /api/multihead/example  the chapter's small worked example (2 to 4 seeded heads)
POST /api/multihead/model    {"sentence", "layer"} → the real model's heads, concatenated, × its own W_O
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from app import limits
from app.attention import Backend
from app.errors import InputError
from app.lesson import block as blocks
from app.lesson.multihead import HEAD_STAGES, ShapeError, check_shapes, example, multihead
from app.model.loader import ModelHandle
from app.schemas import MaskField, Matrix, Token
from app.web.chapters.shared import ERRORS, finite, layer_answer, post_layer, run_layer
from app.web.http import body_doc, json_body, json_bytes, json_response
from app.web.transport import in_slot

router = APIRouter(prefix="/api", tags=["lesson"])
EXAMPLE_HEADS = (1, 4)  # heads of the worked example


class MultiheadRequest(BaseModel):
    """x and one W_Q, W_K, W_V per head, and W_O; weights are (in, out): q = x · W_Q."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{k: v for k, v in example(2).items() if k != "seed"}]}
    )

    tokens: list[Token] | None = Field(
        None, max_length=limits.MAX_TOKENS, description="A label per row of x (default t0, t1, …)."
    )
    x: Matrix = Field(
        description=f"n × d_model: one row per token; n ≤ {limits.MAX_TOKENS}, d_model ≤ {limits.MAX_DIM}."
    )
    w_q: Matrix = Field(description=f"h × d_model × d_k: one matrix per head, 1 ≤ h ≤ {limits.MAX_HEADS}.")
    w_k: Matrix = Field(description="h × d_model × d_k, the shape of w_q.")
    w_v: Matrix = Field(description=f"h × d_model × d_v; d_k, d_v ≤ {limits.MAX_DIM}.")
    w_o: Matrix = Field(
        description=f"(h·d_v) × d_model. x and the weights together ≤ {limits.MAX_INPUT_VALUES:,} numbers; "
        f"h·n·n ≤ {limits.MAX_CELLS:,}."
    )
    mask: MaskField = "full"


class HeadStages(BaseModel):
    q: list[Any] = Field(description="h × n × d_k")
    k: list[Any] = Field(description="h × n × d_k")
    v: list[Any] = Field(description="h × n × d_v")
    scores: list[Any] = Field(description="h × n × n")
    scaled: list[Any] = Field(description="h × n × n")
    masked: list[Any] = Field(description="h × n × n, −∞ (null) where the mask hides a key")
    weights: list[Any] = Field(description="h × n × n, each row sums to 1")
    output: list[Any] = Field(description="h × n × d_v: each head's z")


class MultiheadResponse(BaseModel):
    tokens: list[str]
    mask: Literal["full", "causal"]
    heads: HeadStages = Field(description="Every stage of POST /api/attention, with a leading head axis.")
    concat: list[Any] = Field(description="n × (h·d_v): head 1's z, then head 2's, …")
    output: list[Any] = Field(description="n × d_model: concat · W_O")


class ExampleResponse(BaseModel):
    tokens: list[str]
    x: list[Any]
    w_q: list[Any]
    w_k: list[Any]
    w_v: list[Any]
    w_o: list[Any]
    mask: Literal["full", "causal"]
    seed: int


class ModelHeadsResponse(BaseModel):
    model: str
    kind: Literal["bert", "gpt2", "llama"]
    tokens: list[str]
    ids: list[int]
    layer: int
    layers: int
    heads: int
    head_size: int
    mask: Literal["full", "causal"]
    weights: list[Any] = Field(description="h × n × n: each head's attention weights")
    z: list[Any] = Field(description="h × n × d: each head's output")
    concat: list[Any] = Field(description="n × (h·d): the heads' z side by side")
    output: list[Any] = Field(description="n × C: concat · W_O + b_O, the model's own output projection")
    w_o_name: str = Field(description="The output projection's name in the model's weights.")


def _check_limits(req: MultiheadRequest) -> list[str]:
    x, w_q, w_k, w_v, w_o = req.x, req.w_q, req.w_k, req.w_v, req.w_o
    if x.ndim != 2:
        raise InputError("x", f"x must be n × d_model (2-D), got {x.ndim}-D")
    n, d_model = x.shape
    if n > limits.MAX_TOKENS:
        raise InputError("x", f"x has {n} tokens (rows); the limit is {limits.MAX_TOKENS}")
    if d_model > limits.MAX_DIM:
        raise InputError("x", f"x rows have {d_model} numbers (d_model); the limit is {limits.MAX_DIM}")
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        if w.ndim == 3 and not 1 <= w.shape[0] <= limits.MAX_HEADS:
            raise InputError(name, f"{name} has {w.shape[0]} heads; between 1 and {limits.MAX_HEADS} are allowed")
        if w.ndim == 3 and w.shape[2] > limits.MAX_DIM:
            raise InputError(name, f"{name} makes vectors of {w.shape[2]} numbers; the limit is {limits.MAX_DIM}")
    try:
        check_shapes(x, w_q, w_k, w_v, w_o)
    except ShapeError as e:
        raise InputError(e.field, str(e)) from None
    h = w_q.shape[0]
    if h * n * n > limits.MAX_CELLS:
        raise InputError(
            "x", f"{h} heads × {n}² tokens = {h * n * n:,} cells per stage; the limit is {limits.MAX_CELLS:,}"
        )
    total = x.size + w_q.size + w_k.size + w_v.size + w_o.size
    if total > limits.MAX_INPUT_VALUES:
        raise InputError(
            "w_q", f"x and the weights hold {total:,} numbers together; the limit is {limits.MAX_INPUT_VALUES:,}"
        )
    tokens = req.tokens if req.tokens is not None else [f"t{i}" for i in range(n)]
    if len(tokens) != n:
        raise InputError("tokens", f"tokens has {len(tokens)} labels but x has {n} rows")
    return tokens


def _multihead_answer(req: MultiheadRequest, tokens: list[str], backend: Backend) -> bytes:
    with np.errstate(over="ignore", invalid="ignore"):
        mh = multihead(req.x, req.w_q, req.w_k, req.w_v, req.w_o, req.mask, backend)
    finite = [mh.heads[s] for s in HEAD_STAGES if s != "masked"] + [mh.concat, mh.output]
    if not all(np.isfinite(a).all() for a in finite):
        raise InputError(
            "x", "the numbers overflow float64 (scores or outputs beyond ±1.8e308): use smaller values", "overflow"
        )
    return json_bytes({"tokens": tokens, "mask": req.mask, "heads": mh.heads, "concat": mh.concat, "output": mh.output})


@router.post(
    "/multihead",
    summary="Multi-head attention: every head, concatenated, × W_O",
    response_model=MultiheadResponse,
    responses=ERRORS,
    openapi_extra=body_doc(MultiheadRequest),
)
async def post_multihead(request: Request) -> Response:
    """MultiHead(X) = Concat(head_1, …, head_h) · W_O with head_i = Attention(X·W_Q[i], X·W_K[i], X·W_V[i])."""
    req: MultiheadRequest = await json_body(request, MultiheadRequest)
    tokens = _check_limits(req)
    return await in_slot("application/json", _multihead_answer, req, tokens, request.app.state.backend)


@router.get("/multihead/example", summary="The heads chapter's worked example", response_model=ExampleResponse)
async def get_multihead_example(
    heads: Annotated[int, Query(ge=EXAMPLE_HEADS[0], le=EXAMPLE_HEADS[1], description="How many heads (1 … 4).")] = 2,
    seed: Annotated[int, Query(ge=0, le=2**32 - 1, description="Seed of numpy.random.default_rng.")] = 7,
) -> Response:
    """4 tokens, d_model = 4, heads of size 2: x, each head's W_Q, W_K, W_V, then W_O, from one seeded generator."""
    return json_response(example(heads, seed))


# ---- the real model: POST /api/multihead/model -----------------------------------------------


def _model_heads(handle: ModelHandle, sentence: str, layer: int, backend: Backend) -> bytes:
    run = run_layer(handle, sentence, layer, backend)  # the heads on the input the model gives its attention
    spec, mh = run.spec, run.block.heads
    finite(mh.heads["weights"], mh.concat, mh.output)
    return json_bytes(
        {
            **run.fields(layer),
            "heads": spec.heads,
            "head_size": spec.head_size,
            "mask": "causal" if spec.causal else "full",
            "weights": mh.heads["weights"],
            "z": mh.heads["output"],
            "concat": mh.concat,
            "output": mh.output,
            "w_o_name": blocks.attention_weights(run.model.weights, spec, layer).o_name,
        }
    )


@post_layer(
    router, "/multihead/model", "The real model's heads of one layer, concatenated, × its own W_O", ModelHeadsResponse
)
async def post_multihead_model(request: Request) -> Response:
    return await layer_answer(request, _model_heads)
