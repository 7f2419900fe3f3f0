"""POST /api/rnn {"words"?}: a seeded RNN over the words beside attention on the same words:
hidden states, ‖∂h_t/∂x_1‖₂, and the sequential steps each needs. The math: app.lesson.rnn."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from app.lesson import rnn
from app.web.chapters.shared import ERRORS, MAX_WORD_CHARS, Word
from app.web.http import body_doc, json_body, json_response

router = APIRouter(prefix="/api", tags=["lesson"])
RNN_MAX_WORDS = 64  # the chain is drawn in 3D; past 64 links the influence is ~0 anyway


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


@router.post("/rnn", summary="A small RNN beside attention", response_model=RnnResponse, responses=ERRORS,
             openapi_extra=body_doc(RnnRequest, required=False))  # fmt: skip
async def post_rnn(request: Request) -> Response:
    """The chain of hidden states, how much the first word still counts in each, and attention's one step."""
    req = await json_body(request, RnnRequest, empty_is_default=True, named=True)
    r = rnn.run(req.words)
    w = r.params
    return json_response({
        "words": r.words, "d_x": rnn.D_X, "d_h": rnn.D_H, "x": r.x, "w_h": w.w_h, "w_x": w.w_x, "h": r.h,
        "jacobians": r.jacobians, "influence": r.influence, "norm": "spectral",
        "w_q": w.w_q, "w_k": w.w_k, "w_v": w.w_v, "weights": r.weights, "last_to_first": float(r.weights[-1, 0]),
        "rnn_steps": r.rnn_steps, "attention_steps": r.attention_steps,
    })  # fmt: skip
