"""The route of the chapter "Attention in today's models": RoPE, grouped-query heads and the attention
sink of one sentence through the decoder (the numbers: app.lesson.today)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.lesson import today
from app.model import registry
from app.model.loader import ModelHandle
from app.schemas import ModelId
from app.web.http import body_doc, error_docs, json_body, json_bytes
from app.web.transport import in_slot

router = APIRouter(prefix="/api", tags=["lesson"])


class TodayRequest(BaseModel):
    """A sentence for the decoder, and the layer and head whose rotary pairs and weights to show."""

    model_config = ConfigDict(extra="forbid")

    model: ModelId | None = Field(None, description=f"A decoder's id (default {registry.DECODER_ID}).")
    sentence: Annotated[str, StringConstraints(max_length=2000)] = Field(
        description=f"Any text; ≤ 2,000 characters and ≤ {today.MAX_TOKENS} tokens."
    )
    layer: int = Field(3, ge=0, description="0-based layer.")
    head: int = Field(0, ge=0, description="0-based query head.")


def _answer(handle: ModelHandle, sentence: str, layer: int, head: int) -> bytes:
    numbers = today.for_sentence(handle, sentence, layer, head)
    return json_bytes({"model": handle.spec().name, **today.as_json(numbers)})


@router.post(
    "/decoder/today",
    summary="RoPE, grouped-query heads and the attention sink of one sentence",
    responses=error_docs(413, 415, 422, 503),
    openapi_extra=body_doc(TodayRequest),
)
async def post_today(request: Request) -> Response:
    req = await json_body(request, TodayRequest)
    handle = registry.handle(req.model or registry.DECODER_ID, request.app.state.model_dir)
    return await in_slot("application/json", _answer, handle, req.sentence, req.layer, req.head, keep=True)
