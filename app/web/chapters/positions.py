"""POST /api/positions {"words"?, "order"?, "layer"?, "head"?, "model"?}: attention in two word
orders, without and with sinusoidal positions (a toy), and a real model's head in both orders.
The math: app.lesson.positions."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, Strict

from app.errors import InputError, in_range
from app.lesson import positions
from app.model import registry, service
from app.model.loader import ModelHandle
from app.web.chapters.shared import MAX_WORD_CHARS, MODEL_ERRORS, Int, Word
from app.web.http import JSON, body_doc, json_body, json_bytes
from app.web.transport import in_slot

router = APIRouter(prefix="/api", tags=["lesson"])
POSITIONS_MAX_WORDS = 12  # two n × n tables side by side must fit a phone


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


def _positions(handle: ModelHandle | None, words: list[str], order: list[int], layer: int, head: int) -> bytes:
    """Both orders through the toy, and through `handle`'s model at (layer, head) when there is one."""
    t = positions.toy(words, order)
    real = None
    if handle is not None:
        spec = service.spec_of(handle)
        in_range("layer", layer, spec.layers, spec.name)
        in_range("head", head, spec.heads, spec.name)
        real = positions.model(handle.model(), words, order, layer, head)
    return json_bytes({
        "words": t.words, "order": t.order, "words_perm": t.words_perm, "d_model": positions.D_MODEL,
        "w_q": positions.projections()[0], "w_k": positions.projections()[1],
        "x": t.x, "x_perm": t.x_perm, "pe": t.pe,
        "plain": t.plain, "plain_perm": t.plain_perm, "plain_moved": t.plain_moved, "plain_gap": t.plain_gap,
        "encoded": t.encoded, "encoded_perm": t.encoded_perm, "encoded_moved": t.encoded_moved,
        "encoded_gap": t.encoded_gap, "model": _table(real),
    })  # fmt: skip


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
             response_model=PositionsResponse, responses=MODEL_ERRORS,
             openapi_extra=body_doc(PositionsRequest, required=False))  # fmt: skip
async def post_positions(request: Request) -> Response:
    """Both orders' attention: a toy without positions (the same numbers, moved), with sinusoids, and a real model."""
    req = await json_body(request, PositionsRequest, empty_is_default=True, named=True)
    n = len(req.words)
    if req.order is None:
        default = list(positions.DEFAULT_ORDER) if req.words == list(positions.DEFAULT_WORDS) else None
        order = default or list(range(n))[::-1]
    else:
        order = req.order
        if sorted(order) != list(range(n)):
            raise InputError("order", f"order must hold each of 0 … {n - 1} exactly once (a permutation of the "
                             f"{n} words), got {order}", "not_a_permutation", ctx={"last": n - 1})  # fmt: skip
    handle = registry.handle(None, request.app.state.model_dir) if req.model else None
    return await in_slot(JSON, _positions, handle, req.words, order, req.layer, req.head, keep=True)
