"""Routes of the lesson's chapters: rnn, projections, scaling, positions.

POST /api/rnn          {"words"?}                 a seeded RNN over the words beside attention on the same
                                                  words: hidden states, ‖∂h_t/∂x_1‖₂, sequential steps
GET  /api/projections                             seed 000's X, W_Q, W_K, W_V and q = X·W_Q, k = X·W_K, v = X·W_V
POST /api/scaling      {"d_k"}                    spread of q·k against √d_k; one query's softmax with and
                                                  without ÷√d_k; the same measures for d_k = 2 … 1024
POST /api/positions    {"words"?, "order"?,       attention in two word orders, without and with sinusoidal
                        "layer"?, "head"?,        positions (a toy), and a real model's head in both orders
                        "model"?}

The math lives in app/lesson/{rnn,projections,scaling,positions}.py; these handlers only parse,
check limits and write JSON. Every limit is in the fields' descriptions (and /docs); breaking one
is a 422 whose detail names the field, in the app's one error shape (app.errors).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, TypeVar

import anyio
import numpy as np
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, Strict, StringConstraints

from app.errors import InputError
from app.http import json_body, json_response, model_handle
from app.lesson import positions, projections, rnn, scaling
from app.model import service
from app.schemas import ErrorResponse
from app.transport import SLOTS

router = APIRouter(prefix="/api", tags=["lesson"])

MAX_WORD_CHARS = 24
RNN_MAX_WORDS = 64  # the chain is drawn in 3D; past 64 links the influence is ~0 anyway
POSITIONS_MAX_WORDS = 12  # two n × n tables side by side must fit a phone
Word = Annotated[str, StringConstraints(min_length=1, max_length=MAX_WORD_CHARS, pattern=r"^\S+$")]
Int = Annotated[int, Strict()]
M = TypeVar("M", bound=BaseModel)

_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {"model": ErrorResponse, "description": "Body over the app's limit (README, Limits)."},
    415: {"model": ErrorResponse, "description": "Body not JSON."},
    422: {"model": ErrorResponse, "description": "The detail names the field and the rule it broke."},
}


async def _parse(request: Request, model: type[M]) -> M:
    """The JSON body as `model` (empty: every field its default); each 422 message names its field."""
    return await json_body(request, model, empty_is_default=True, named=True)


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": False, "content": {"application/json": {"schema": model.model_json_schema()}}}}


# --- rnn ---------------------------------------------------------------------------------------


class RnnRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"words": list(rnn.DEFAULT_WORDS)}]})

    words: list[Word] = Field(
        default=list(rnn.DEFAULT_WORDS),
        min_length=2,
        max_length=RNN_MAX_WORDS,
        description=f"The words, in order: 2 … {RNN_MAX_WORDS} of them, each 1 … {MAX_WORD_CHARS} characters "
        "without spaces. Default: the cat ate its fish. Each word's x is seeded by the word itself.",
    )


class RnnResponse(BaseModel):
    words: list[str]
    d_x: int = Field(description="Length of a word's input vector x.")
    d_h: int = Field(description="Length of a hidden state h (3: the 3D view draws h exactly).")
    x: list[list[float]] = Field(description="n × d_x: each word's fixed, seeded input vector.")
    w_h: list[list[float]] = Field(description="d_h × d_h: the recurrent weights (fixed seed).")
    w_x: list[list[float]] = Field(description="d_h × d_x: the input weights (fixed seed).")
    h: list[list[float]] = Field(description="n × d_h: h_t = tanh(W_h·h_{t−1} + W_x·x_t), h_0 = 0.")
    jacobians: list[list[list[float]]] = Field(description="n × d_h × d_x: ∂h_t/∂x_1 by the chain rule.")
    influence: list[float] = Field(description="‖∂h_t/∂x_1‖₂ for t = 1 … n: spectral norm (largest singular value).")
    norm: str = Field(description="Which norm influence is: 'spectral' (the matrix 2-norm).")
    w_q: list[list[float]] = Field(description="d_x × d_x: attention's query projection on the same x.")
    w_k: list[list[float]] = Field(description="d_x × d_x: attention's key projection.")
    w_v: list[list[float]] = Field(description="d_x × d_x: attention's value projection.")
    weights: list[list[float]] = Field(description="n × n: attention weights on the same words (full mask).")
    last_to_first: float = Field(description="weights[n−1][0]: how much the last word attends to the first.")
    rnn_steps: int = Field(description="Sequential steps for the RNN: n (h_t needs h_{t−1}).")
    attention_steps: int = Field(description="Sequential steps for attention: 1 (every pair at once).")


@router.post("/rnn", summary="A small RNN beside attention", response_model=RnnResponse, responses=_ERRORS,
             openapi_extra=_body(RnnRequest))  # fmt: skip
async def post_rnn(request: Request) -> Response:
    """The chain of hidden states, how much the first word still counts in each, and attention's one step."""
    req = await _parse(request, RnnRequest)
    r = rnn.run(req.words)
    w = r.params
    return json_response({
        "words": r.words, "d_x": rnn.D_X, "d_h": rnn.D_H, "x": r.x, "w_h": w.w_h, "w_x": w.w_x, "h": r.h,
        "jacobians": r.jacobians, "influence": r.influence, "norm": "spectral",
        "w_q": w.w_q, "w_k": w.w_k, "w_v": w.w_v, "weights": r.weights, "last_to_first": float(r.weights[-1, 0]),
        "rnn_steps": r.rnn_steps, "attention_steps": r.attention_steps,
    })  # fmt: skip


# --- projections -------------------------------------------------------------------------------


class ProjectionsResponse(BaseModel):
    example: str = Field(description="The example these numbers are (GET /api/examples/{example}).")
    tokens: list[str]
    x: list[list[float]] = Field(description="n × d_model: the tokens' embeddings (seed 42, drawn first).")
    w_q: list[list[float]] = Field(description="d_model × d_k, drawn second.")
    w_k: list[list[float]] = Field(description="d_model × d_k, drawn third.")
    w_v: list[list[float]] = Field(description="d_model × d_v, drawn fourth.")
    q: list[list[float]] = Field(description="x·W_Q, n × d_k.")
    k: list[list[float]] = Field(description="x·W_K, n × d_k.")
    v: list[list[float]] = Field(description="x·W_V, n × d_v.")


@router.get("/projections", summary="Where q, k and v come from", response_model=ProjectionsResponse)
async def get_projections() -> Response:
    """Seed 000's demo: X, W_Q, W_K, W_V (seed 42, in that order) and their products."""
    p = projections.project()
    return json_response({
        "example": projections.EXAMPLE_ID, "tokens": p.tokens, "x": p.x,
        "w_q": p.w_q, "w_k": p.w_k, "w_v": p.w_v, "q": p.q, "k": p.k, "v": p.v,
    })  # fmt: skip


# --- scaling -----------------------------------------------------------------------------------


class ScalingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"d_k": 64}]})

    d_k: Int = Field(
        ge=scaling.MIN_D_K,
        le=scaling.MAX_D_K,
        description=f"Length of q and k: an integer, {scaling.MIN_D_K} … {scaling.MAX_D_K}.",
    )


class SweepPoint(BaseModel):
    d_k: int
    sqrt_d_k: float
    std: float = Field(description="Measured standard deviation of q·k.")
    mean_max_unscaled: float
    mean_max_scaled: float
    mean_entropy_unscaled: float
    mean_entropy_scaled: float


class ScalingResponse(BaseModel):
    d_k: int
    sqrt_d_k: float
    seed: int = Field(description="numpy.random.default_rng([seed, d_k]) draws every number, in this order: "
                      "q (samples × d_k), k (samples × d_k), queries (queries × d_k), keys (keys × d_k).")  # fmt: skip
    samples: int = Field(description="How many (q, k) pairs the spread is measured on.")
    std: float = Field(description="Measured standard deviation of q·k over the samples (ddof 0): ≈ √d_k.")
    mean: float = Field(description="Measured mean of q·k: ≈ 0.")
    queries: int = Field(description="Queries against the same keys for the mean_* measures; row 0 is the one shown.")
    keys: int = Field(description="Keys in one query's row of softmax.")
    ln_keys: float = Field(description="ln(keys): the entropy of an even row, the most a row can have.")
    scores: list[float] = Field(description="The shown query's scores q·k against each key (unscaled).")
    unscaled: list[float] = Field(description="softmax(scores): without the division.")
    scaled: list[float] = Field(description="softmax(scores / √d_k): as attention computes it.")
    max_unscaled: float
    max_scaled: float
    entropy_unscaled: float = Field(description="−Σ w·ln w in nats (0 = one-hot).")
    entropy_scaled: float
    mean_max_unscaled: float = Field(description="Largest weight, averaged over the queries.")
    mean_max_scaled: float
    mean_entropy_unscaled: float
    mean_entropy_scaled: float
    sweep: list[SweepPoint] = Field(description="The same measures for d_k = 2, 4, 8, … 1024.")


def _point(s: scaling.Scaling) -> dict[str, Any]:
    return {
        "d_k": s.d_k, "sqrt_d_k": s.sqrt_d_k, "std": s.std,
        "mean_max_unscaled": s.mean_max_unscaled, "mean_max_scaled": s.mean_max_scaled,
        "mean_entropy_unscaled": s.mean_entropy_unscaled, "mean_entropy_scaled": s.mean_entropy_scaled,
    }  # fmt: skip


@functools.cache
def _sweep() -> list[dict[str, Any]]:
    return [_point(s) for s in scaling.sweep()]  # the same numbers every time: computed once


def _scaling(d_k: int) -> dict[str, Any]:
    s = scaling.measure(d_k)
    return {
        **_point(s), "seed": scaling.SEED, "samples": scaling.SAMPLES, "mean": float(s.dots.mean()),
        "queries": scaling.QUERIES, "keys": scaling.KEYS, "ln_keys": float(np.log(scaling.KEYS)),
        "scores": s.scores, "unscaled": s.unscaled, "scaled": s.scaled,
        "max_unscaled": s.max_unscaled, "max_scaled": s.max_scaled,
        "entropy_unscaled": s.entropy_unscaled, "entropy_scaled": s.entropy_scaled, "sweep": _sweep(),
    }  # fmt: skip


@router.post("/scaling", summary="Why divide by √d_k", response_model=ScalingResponse, responses=_ERRORS,
             openapi_extra=_body(ScalingRequest))  # fmt: skip
async def post_scaling(request: Request) -> Response:
    """The measured spread of q·k beside √d_k, and one query's softmax with and without ÷√d_k."""
    req = await _parse(request, ScalingRequest)
    return json_response(await anyio.to_thread.run_sync(_scaling, req.d_k, limiter=SLOTS))


# --- positions ---------------------------------------------------------------------------------


class PositionsRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"words": list(positions.DEFAULT_WORDS), "order": list(positions.DEFAULT_ORDER)}]
        },
    )

    words: list[Word] = Field(
        default=list(positions.DEFAULT_WORDS),
        min_length=2,
        max_length=POSITIONS_MAX_WORDS,
        description=f"The sentence's words in their first order: 2 … {POSITIONS_MAX_WORDS} of them, each "
        f"1 … {MAX_WORD_CHARS} characters without spaces. Default: the cat ate its fish.",
    )
    order: list[Int] | None = Field(
        None,
        max_length=POSITIONS_MAX_WORDS,
        description="The other order: word i of the reordered sentence is words[order[i]]; each of 0 … n−1 "
        "exactly once. Default for the default words: [0, 4, 2, 3, 1] (the fish ate its cat); "
        "for other words: reversed.",
    )
    layer: Int = Field(0, ge=0, description="The real model's layer, 0-based (all-MiniLM-L6-v2: 0 … 5).")
    head: Int = Field(2, ge=0, description="The real model's head, 0-based (all-MiniLM-L6-v2: 0 … 11).")
    model: Annotated[bool, Strict()] = Field(
        True, description="Also run the real model (false: the toy only, no model load)."
    )


def _table(m: positions.ModelPositions | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "name": m.name, "layer": m.layer, "head": m.head, "tokens": m.tokens, "tokens_perm": m.tokens_perm,
        "ids": m.ids, "ids_perm": m.ids_perm,
        "token_order": m.token_order, "weights": m.weights, "weights_perm": m.weights_perm,
        "moved": m.moved, "gap": m.gap, "gaps": m.gaps,
    }  # fmt: skip


def _positions(request: Request, req: PositionsRequest, order: list[int]) -> dict[str, Any]:
    t = positions.toy(req.words, order)
    real = None
    if req.model:
        handle = model_handle(request)
        spec = service.spec_of(handle)
        if req.layer >= spec.layers:
            raise InputError("layer", f"layer must be 0 … {spec.layers - 1} ({spec.name} has {spec.layers})")
        if req.head >= spec.heads:
            raise InputError("head", f"head must be 0 … {spec.heads - 1} ({spec.name} has {spec.heads})")
        real = positions.model(handle.model(), req.words, order, req.layer, req.head)
    return {
        "words": t.words, "order": t.order, "words_perm": t.words_perm, "d_model": positions.D_MODEL,
        "w_q": positions.projections()[0], "w_k": positions.projections()[1],
        "x": t.x, "x_perm": t.x_perm, "pe": t.pe,
        "plain": t.plain, "plain_perm": t.plain_perm, "plain_moved": t.plain_moved, "plain_gap": t.plain_gap,
        "encoded": t.encoded, "encoded_perm": t.encoded_perm, "encoded_moved": t.encoded_moved,
        "encoded_gap": t.encoded_gap, "model": _table(real),
    }  # fmt: skip


class ModelTable(BaseModel):
    name: str
    layer: int
    head: int
    tokens: list[str] = Field(description="The first order, as the model's tokenizer splits it.")
    tokens_perm: list[str] = Field(description="The other order's tokens.")
    ids: list[int] = Field(description="The first order's token ids (the model's vocabulary).")
    ids_perm: list[int] = Field(description="The other order's token ids.")
    token_order: list[int] | None = Field(
        description="Token i of the other order is token token_order[i] of the first; "
        "null when a word splits into other pieces in the other order."
    )
    weights: list[list[float]] = Field(description="The head's weights for the first order (n × n).")
    weights_perm: list[list[float]] = Field(description="The head's weights for the other order.")
    moved: list[list[float]] | None = Field(description="P·weights·Pᵀ over tokens: what no positions would give.")
    gap: float | None = Field(description="max |weights_perm − moved|: > 0, the model sees the order.")
    gaps: list[list[float]] | None = Field(description="The same gap for every layer (rows) and head (columns).")


class PositionsResponse(BaseModel):
    words: list[str]
    order: list[int]
    words_perm: list[str] = Field(description="words[order[i]] for each i.")
    d_model: int = Field(description="Length of the toy's word vectors (and of q and k).")
    w_q: list[list[float]] = Field(description="The toy's W_Q, d_model × d_model (seeded).")
    w_k: list[list[float]] = Field(description="The toy's W_K, d_model × d_model (seeded).")
    x: list[list[float]] = Field(description="Each word's seeded vector, first order (n × d_model).")
    x_perm: list[list[float]] = Field(description="P·x: the same rows in the other order.")
    pe: list[list[float]] = Field(description="Sinusoidal PE(pos) for pos = 0 … n−1 (Vaswani et al., 3.5).")
    plain: list[list[float]] = Field(description="Weights without positions, first order.")
    plain_perm: list[list[float]] = Field(description="Weights without positions, other order.")
    plain_moved: list[list[float]] = Field(description="P·plain·Pᵀ.")
    plain_gap: float = Field(description="max |plain_perm − plain_moved|: exactly 0.")
    encoded: list[list[float]] = Field(description="Weights of x + PE, first order.")
    encoded_perm: list[list[float]] = Field(description="Weights of P·x + PE, other order.")
    encoded_moved: list[list[float]] = Field(description="P·encoded·Pᵀ.")
    encoded_gap: float = Field(description="max |encoded_perm − encoded_moved|: > 0.")
    model: ModelTable | None = Field(description="The real model's head in both orders (null with model: false).")


@router.post("/positions", summary="Word order: permutation without and with positions",
             response_model=PositionsResponse, responses={**_ERRORS, 503: {"model": ErrorResponse,
             "description": "The model's files are missing or unreadable (server set-up)."}},
             openapi_extra=_body(PositionsRequest))  # fmt: skip
async def post_positions(request: Request) -> Response:
    """Both orders' attention: a toy without positions (the same numbers, moved), with sinusoids, and a real model."""
    req = await _parse(request, PositionsRequest)
    n = len(req.words)
    if req.order is None:
        default = list(positions.DEFAULT_ORDER) if req.words == list(positions.DEFAULT_WORDS) else None
        order = default or list(range(n))[::-1]
    else:
        order = req.order
        if sorted(order) != list(range(n)):
            raise InputError("order", f"order must hold each of 0 … {n - 1} exactly once (a permutation of the "
                             f"{n} words), got {order}")  # fmt: skip
    return json_response(await anyio.to_thread.run_sync(_positions, request, req, order, limiter=SLOTS))
