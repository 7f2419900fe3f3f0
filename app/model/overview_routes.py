"""POST /api/overview: every layer × head of a sentence, summarised, up to the model's limit.

POST /api/heads sends every weight and stops at MAX_OVERVIEW_TOKENS; this sends what the page's
overview draws (app.model.summary), for any sentence the model reads (512 tokens for MiniLM),
gathered during the forward pass that the page's view of the sentence needs anyway.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from app import limits
from app.errors import ClientError
from app.model import service, summary
from app.model.loader import handle_for
from app.schemas import ErrorResponse
from app.transport import body_error, in_slot, is_json, media_type, read_body

router = APIRouter(prefix="/api", tags=["model"])
Sentence = Annotated[str, StringConstraints(max_length=limits.MAX_SENTENCE_CHARS)]


class OverviewRequest(BaseModel):
    """A sentence, and the mask to summarise (a GPT-2 model's own mask is causal, and only that)."""

    model_config = ConfigDict(extra="forbid")

    sentence: Sentence = Field(
        description=f"Any text; ≤ {limits.MAX_SENTENCE_CHARS:,} characters and at most the model's "
        "max_tokens after tokenizing (GET /api/model)."
    )
    mask: Literal["full", "causal"] | None = Field(
        None, description="Default: the model's own (BERT full, GPT-2 causal)"
    )


class OverviewResponse(BaseModel):
    """Every layer × head of a sentence, summarised; arrays are [layer][head][…]."""

    model: str
    kind: Literal["bert", "gpt2"]
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


_ERRORS: dict[int | str, dict[str, Any]] = {
    413: {"model": ErrorResponse, "description": f"Body over {limits.MAX_BODY_BYTES:,} bytes."},
    415: {"model": ErrorResponse, "description": "Body not JSON."},
    422: {"model": ErrorResponse, "description": "The detail names the field and the rule it broke."},
    503: {"model": ErrorResponse, "description": "The model cannot be loaded, or the server is busy (Retry-After)."},
}
_BODY = {"required": True, "content": {"application/json": {"schema": OverviewRequest.model_json_schema()}}}


@router.post(
    "/overview",
    summary="Every layer and head, summarised",
    response_model=OverviewResponse,
    responses=_ERRORS,
    openapi_extra={"requestBody": _BODY},
)
async def post_overview(request: Request) -> Response:
    """Block-pooled weights, entropy, distance and strongest links of every head of every layer."""
    body = _parse(await read_body(request), request.headers.get("content-type", "application/json"))
    given = "mask" in body.model_fields_set and body.mask is not None
    handle = handle_for(getattr(request.app.state, "model_dir", None))
    args = (handle, body.sentence, body.mask or "full", given, request.app.state.backend)
    return await in_slot("application/json", _answer, *args)


def _answer(*args: Any) -> bytes:
    return orjson.dumps(service.overview(*args), option=orjson.OPT_SERIALIZE_NUMPY)


def _parse(body: bytes, content_type: str) -> OverviewRequest:
    media = media_type(content_type)
    if not is_json(media):
        raise ClientError(415, ["header", "content-type"], f"send application/json, not {media!r}", "media_type")
    try:
        return OverviewRequest.model_validate_json(body)
    except ValidationError as e:
        raise body_error(e) from None
