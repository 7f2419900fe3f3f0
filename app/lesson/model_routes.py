"""Routes of the lesson's chapters on many heads and the transformer block.

POST /api/multihead          hand-set x and per-head W_Q, W_K, W_V, W_O → every head's stages, concat, output
GET  /api/multihead/example  the chapter's small worked example (2 to 4 seeded heads)
POST /api/multihead/model    {"sentence", "layer"} → the real model's heads, concatenated, × its own W_O
POST /api/block              {"sentence", "layer"} → every vector of one transformer block, in the model's order

The math lives in app.lesson.multihead and app.lesson.block; these handlers only check, run
the work in a worker thread (one of the compute slots) and write JSON. Rejections are 422s
naming the field; a model that cannot be loaded is a 503.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

import numpy as np
from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app import limits
from app.attention import Backend
from app.errors import InputError
from app.http import json_body, json_bytes, json_response, model_handle
from app.lesson import block as blocks
from app.lesson.multihead import HEAD_STAGES, ShapeError, check_shapes, example, multihead
from app.model.loader import ModelHandle
from app.model.service import encode_sentence, spec_of
from app.model.spec import ModelSpec
from app.model.tokenizer import Encoded
from app.schemas import ErrorResponse, MaskField, Matrix, Token
from app.transport import in_slot

router = APIRouter(prefix="/api", tags=["lesson"])

MAX_LESSON_TOKENS = limits.MAX_OVERVIEW_TOKENS  # tokens of a sentence for /api/block and /api/multihead/model
EXAMPLE_HEADS = (1, 4)  # heads of the worked example


# ---- requests and answers -------------------------------------------------------------------


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


Sentence = Annotated[str, StringConstraints(max_length=limits.MAX_SENTENCE_CHARS)]
LayerIndex = Annotated[int, Field(ge=0, strict=True)]


class SentenceLayerRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"sentence": "The animal didn't cross the street because it was too tired.", "layer": 3}]
        },
    )

    sentence: Sentence = Field(
        description=f"Any text; ≤ {limits.MAX_SENTENCE_CHARS:,} characters and ≤ {MAX_LESSON_TOKENS} tokens."
    )
    layer: LayerIndex = Field(0, description="0-based layer (all-MiniLM-L6-v2: 0 … 5).")


class ModelHeadsResponse(BaseModel):
    model: str
    kind: Literal["bert", "gpt2"]
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


class WhatIf(BaseModel):
    name: str
    order: list[str]
    vectors: dict[str, list[Any]]
    norms: dict[str, list[float]]
    output_distance: list[float] = Field(description="Per token: ‖what-if output − the model's output‖.")
    output_cosine: list[float] = Field(description="Per token: cosine between the what-if output and the model's.")


class BlockResponse(BaseModel):
    model: str
    kind: Literal["bert", "gpt2"]
    tokens: list[str]
    ids: list[int]
    layer: int
    layers: int
    hidden: int
    order: list[str] = Field(description="The names in the order the model computes them, input … output.")
    vectors: dict[str, list[Any]] = Field(description="name → n × hidden")
    norms: dict[str, list[float]] = Field(description="name → each token's vector length")
    what_if: WhatIf | None = Field(description="BERT only: the same layer rearranged pre-LN (not the model's own).")


_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {"model": ErrorResponse, "description": f"Body over {limits.MAX_BODY_BYTES:,} bytes."},
    415: {"model": ErrorResponse, "description": "Body not JSON."},
    422: {"model": ErrorResponse, "description": "The detail names the field and the rule it broke."},
}
_MODEL_ERRORS = {**_ERRORS, 503: {"model": ErrorResponse, "description": "The model cannot be loaded."}}


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


# ---- POST /api/multihead ----------------------------------------------------------------------


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
        raise InputError("x", "the numbers overflow float64 (scores or outputs beyond ±1.8e308): use smaller values")
    return json_bytes({"tokens": tokens, "mask": req.mask, "heads": mh.heads, "concat": mh.concat, "output": mh.output})


@router.post(
    "/multihead",
    summary="Multi-head attention: every head, concatenated, × W_O",
    response_model=MultiheadResponse,
    responses=_ERRORS,
    openapi_extra=_body(MultiheadRequest),
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


# ---- the real model: POST /api/multihead/model and POST /api/block ---------------------------


def _prepare(handle: ModelHandle, sentence: str, layer: int) -> tuple[ModelSpec, Encoded]:
    spec = spec_of(handle)
    if not 0 <= layer < spec.layers:
        raise InputError("layer", f"layer must be 0 … {spec.layers - 1} ({spec.name} has {spec.layers} layers)")
    encoded = encode_sentence(handle, spec, sentence)
    limit = min(spec.max_tokens, MAX_LESSON_TOKENS)
    if len(encoded) > limit:
        raise InputError("sentence", f"sentence is {len(encoded)} tokens for {spec.name}; this view takes {limit}")
    return spec, encoded


def _layer_fields(spec: ModelSpec, encoded: Encoded, layer: int) -> dict[str, Any]:
    """The fields an answer about one layer of the real model starts with."""
    return {
        "model": spec.name,
        "kind": spec.kind,
        "tokens": encoded.tokens,
        "ids": encoded.ids,
        "layer": layer,
        "layers": spec.layers,
    }


def _finite(*arrays: np.ndarray) -> None:
    if not all(np.isfinite(a).all() for a in arrays):
        raise InputError("sentence", "the model's numbers overflowed for this sentence")


def _model_heads(handle: ModelHandle, sentence: str, layer: int, backend: Backend) -> bytes:
    spec, encoded = _prepare(handle, sentence, layer)
    model = handle.model()
    with np.errstate(over="ignore", invalid="ignore"):
        x = blocks.layer_input(encoded.ids, model.weights, spec, layer, backend)  # (n, C)
        if spec.kind == "gpt2":  # GPT-2's attention reads the LayerNorm of its input
            x = blocks.block(x, model.weights, spec, layer, backend).vectors["ln_1"]
        mh = blocks.layer_attention(x, model.weights, spec, layer, backend)
    _finite(mh.heads["weights"], mh.concat, mh.output)
    w_o = f"encoder.layer.{layer}.attention.output.dense" if spec.kind == "bert" else f"h.{layer}.attn.c_proj"
    return json_bytes(
        {
            **_layer_fields(spec, encoded, layer),
            "heads": spec.heads,
            "head_size": spec.head_size,
            "mask": "causal" if spec.causal else "full",
            "weights": mh.heads["weights"],
            "z": mh.heads["output"],
            "concat": mh.concat,
            "output": mh.output,
            "w_o_name": w_o,
        }
    )


def _norms(vectors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.linalg.norm(v.astype(np.float64), axis=-1) for name, v in vectors.items()}


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    out: np.ndarray = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return out


def _block(handle: ModelHandle, sentence: str, layer: int, backend: Backend) -> bytes:
    spec, encoded = _prepare(handle, sentence, layer)
    model = handle.model()
    with np.errstate(over="ignore", invalid="ignore"):
        x = blocks.layer_input(encoded.ids, model.weights, spec, layer, backend)  # (n, C)
        b = blocks.block(x, model.weights, spec, layer, backend)
        what_if = blocks.pre_ln_what_if(x, model.weights, spec, layer, backend) if spec.kind == "bert" else None
    _finite(*b.vectors.values(), *(what_if.vectors.values() if what_if else ()))
    return json_bytes(
        {
            **_layer_fields(spec, encoded, layer),
            "hidden": spec.hidden,
            "order": b.order,
            "vectors": b.vectors,
            "norms": _norms(b.vectors),
            "what_if": None
            if what_if is None
            else {
                "name": "pre-LN",
                "order": what_if.order,
                "vectors": what_if.vectors,
                "norms": _norms(what_if.vectors),
                "output_distance": np.linalg.norm(
                    what_if.vectors["output"].astype(np.float64) - b.vectors["output"], axis=-1
                ),
                "output_cosine": _cosine(what_if.vectors["output"], b.vectors["output"]),
            },
        }
    )


async def _layer_answer(request: Request, compute: Callable[[ModelHandle, str, int, Backend], bytes]) -> Response:
    """`compute`'s JSON for a SentenceLayerRequest (sentence, layer), made in a compute slot."""
    req: SentenceLayerRequest = await json_body(request, SentenceLayerRequest)
    backend: Backend = request.app.state.backend
    return await in_slot("application/json", compute, model_handle(request), req.sentence, req.layer, backend)


@router.post(
    "/multihead/model",
    summary="The real model's heads of one layer, concatenated, × its own W_O",
    response_model=ModelHeadsResponse,
    responses=_MODEL_ERRORS,
    openapi_extra=_body(SentenceLayerRequest),
)
async def post_multihead_model(request: Request) -> Response:
    return await _layer_answer(request, _model_heads)


@router.post(
    "/block",
    summary="One transformer block of the real model, every vector by name",
    response_model=BlockResponse,
    responses=_MODEL_ERRORS,
    openapi_extra=_body(SentenceLayerRequest),
)
async def post_block(request: Request) -> Response:
    """input → … → output of one layer, in the order the model computes them (BERT post-LN, GPT-2 pre-LN)."""
    return await _layer_answer(request, _block)
