"""POST /api/overview: every layer × head of a sentence, summarised, up to the model's limit.

POST /api/heads sends every weight and stops at MAX_OVERVIEW_TOKENS; this sends what the page's
overview draws (app.model.summary), for any sentence the model reads (512 tokens for MiniLM),
gathered during the forward pass that the page's view of the sentence needs anyway.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app import limits
from app.model import registry, service, summary
from app.web.http import JSON, body_doc, error_docs, json_body, json_bytes
from app.web.transport import OVERVIEW_LANE, in_slot

router = APIRouter(prefix="/api", tags=["model"])
Sentence = Annotated[str, StringConstraints(max_length=limits.MAX_SENTENCE_CHARS)]


class OverviewRequest(BaseModel):
    """A sentence, and the mask to summarise (a GPT-2 model's own mask is causal, and only that)."""

    model_config = ConfigDict(extra="forbid")

    sentence: Sentence = Field(
        description=f"Any text; ≤ {limits.MAX_SENTENCE_CHARS:,} characters and at most the model's "
        "max_tokens after tokenizing (GET /api/model)."
    )
    model: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="A model id of GET /api/models (default: the server's own model)."
    )
    mask: Literal["full", "causal"] | None = Field(
        None, description="Default: the model's own (BERT full, GPT-2 causal)"
    )


class OverviewResponse(BaseModel):
    """Every layer × head of a sentence, summarised; arrays are [layer][head][…]."""

    model: str
    kind: Literal["bert", "gpt2", "llama"]
    tokens: list[str]
    words: list[int | None]
    spans: list[list[int] | None]
    layers: int
    heads: int
    mask: Literal["full", "causal"]
    edges: list[int] = Field(
        description=f"Blocks of tokens, min(n, {summary.BINS}) of them: block b is tokens edges[b] … edges[b+1] − 1."
    )
    pooled: list[Any] = Field(
        description="[layer][head][a][b], thousandths: the mean over the queries of block a of the share of "
        "their attention on the keys of block b (each row ≈ 1000). With n ≤ the block count: the weights."
    )
    entropy: list[list[float]] = Field(
        description="[layer][head]: mean over queries of −Σ w·log₂ w, in bits (0: one key; log₂ n: all alike)."
    )
    distance: list[list[float]] = Field(description="[layer][head]: mean over queries of Σⱼ wᵢⱼ·|i − j|, in tokens.")
    top: list[Any] = Field(
        description=f"[layer][head]: the {summary.TOP} strongest links, [query, key, weight in thousandths], "
        "each query's strongest key, strongest first."
    )


@router.post(
    "/overview",
    summary="Every layer and head, summarised",
    response_model=OverviewResponse,
    responses=error_docs(413, 415, 422, s503="The model cannot be loaded, or the server is busy (Retry-After)."),
    openapi_extra=body_doc(OverviewRequest),
)
async def post_overview(request: Request) -> Response:
    """Block-pooled weights, entropy, distance and strongest links of every head of every layer."""
    body = await json_body(request, OverviewRequest)
    given = "mask" in body.model_fields_set and body.mask is not None
    args = (
        registry.handle(body.model, request.app.state.model_dir),
        body.sentence,
        body.mask or "full",
        given,
        request.app.state.backend,
    )
    return await in_slot(JSON, _answer, *args, lane=OVERVIEW_LANE)  # one overview at a time: views go first


def _answer(*args: Any) -> bytes:
    return json_bytes(service.overview(*args))
