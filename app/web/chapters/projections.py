"""GET /api/projections: the SELECT * FROM customers example's X, W_Q, W_K, W_V and q = X·W_Q, k = X·W_K, v = X·W_V.
The math: app.lesson.projections."""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from app.lesson import projections
from app.web.http import json_response

router = APIRouter(prefix="/api", tags=["lesson"])


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
    """The SELECT * FROM customers example: X, W_Q, W_K, W_V (numpy seed 42, in that order) and their products."""
    p = projections.project()
    return json_response({
        "example": projections.EXAMPLE_ID, "tokens": p.tokens, "x": p.x,
        "w_q": p.w_q, "w_k": p.w_k, "w_v": p.w_v, "q": p.q, "k": p.k, "v": p.v,
    })  # fmt: skip
