"""Routes of the model API besides the sentence mode of POST /api/attention (see app.web.attention).

GET  /api/models  every model the server offers, by id (the "model" field of the sentence routes)
POST /api/heads   {"sentence", "mask"?} → every layer × head of attention weights, for an overview
GET  /api/model   the model's name, kind and sizes, and whether its weights are loaded yet
"""

from __future__ import annotations

import contextlib
import threading
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app import limits
from app.errors import ModelError
from app.model import registry, service
from app.model.loader import ModelHandle
from app.web.http import body_doc, error_docs, json_body, json_response
from app.web.transport import SLOTS

router = APIRouter(prefix="/api", tags=["model"])
Sentence = Annotated[str, StringConstraints(max_length=limits.MAX_SENTENCE_CHARS)]


class HeadsRequest(BaseModel):
    """A sentence, and the mask to show (a GPT-2 model's own mask is causal, and only that)."""

    model_config = ConfigDict(extra="forbid")

    sentence: Sentence = Field(
        description=f"Any text; ≤ {limits.MAX_SENTENCE_CHARS:,} characters and "
        f"≤ {limits.MAX_OVERVIEW_TOKENS} tokens after tokenizing ([CLS] and [SEP] count)."
    )
    model: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="A model id of GET /api/models (default: the server's own model)."
    )
    mask: Literal["full", "causal"] | None = Field(
        None, description="Default: the model's own (BERT full, GPT-2 causal)"
    )


class HeadsResponse(BaseModel):
    """All layers × heads of weights for small heatmaps; weights[L][H] is n × n, rows sum to ≈ 1."""

    model: str
    kind: Literal["bert", "gpt2", "llama"]
    tokens: list[str] = Field(description="As the model sees them: [CLS], ##pieces, [SEP] (BERT).")
    words: list[int | None] = Field(description="Word index of each token (null for special tokens).")
    spans: list[list[int] | None] = Field(description="[start, end) characters of each token in the sentence.")
    layers: int
    heads: int
    mask: Literal["full", "causal"]
    decimals: int = Field(description="weights are rounded to this many decimals.")
    weights: list[Any] = Field(description="[layer][head][query][key], layers × heads × n × n.")


class ModelEntry(BaseModel):
    id: str = Field(description="What the sentence routes' and POST /api/generate's 'model' field takes.")
    name: str
    architecture: Literal["bert", "gpt2", "llama"] | None = None
    layers: int | None = None
    heads: int | None = Field(None, description="Query heads per layer.")
    kv_heads: int | None = Field(None, description="Key/value heads per layer (fewer than heads: grouped-query).")
    d_k: int | None = Field(None, description="Each head's size.")
    causal: bool | None = Field(None, description="A decoder: no token sees a later one.")
    context: int | None = Field(None, description="The model's own context length, in tokens.")
    max_tokens: int | None = Field(None, description="Longest sentence, in tokens, for POST /api/attention.")
    full_tokens: int | None = Field(
        None, description="Longest sentence whose every n × n cell POST /api/attention sends (detail full), and "
        "POST /api/overview's limit; longer ones up to max_tokens come as a summary."
    )  # fmt: skip
    generates: bool = Field(False, description="Whether POST /api/generate can write with it.")
    default: bool
    available: bool = Field(description="false when its files cannot be used (then 'error' says why).")
    loaded: bool = False
    loading: bool = False
    error: str | None = None


class ModelsResponse(BaseModel):
    models: list[ModelEntry]


class ModelInfo(BaseModel):
    name: str
    kind: Literal["bert", "gpt2", "llama"]
    layers: int
    heads: int
    head_size: int = Field(description="d_k of every head: hidden_size / heads.")
    hidden_size: int
    max_tokens: int = Field(description="Longest sentence, in tokens, for POST /api/attention.")
    full_tokens: int = Field(
        description="Longest sentence whose every n × n cell POST /api/attention sends (detail full), and "
        "POST /api/overview's limit; longer ones up to max_tokens come as a summary."
    )
    max_positions: int = Field(description="The model's own context length.")
    overview_max_tokens: int = Field(description="Longest sentence, in tokens, for POST /api/heads.")
    mask: Literal["full", "causal"] = Field(description="The model's own mask.")
    loaded: bool = Field(description="Weights in memory; false until the first sentence (or ?load=true).")
    loading: bool
    load_seconds: float | None = Field(description="How long the weights and tokenizer took to load.")


@router.post(
    "/heads",
    summary="Weights of every layer and head",
    response_model=HeadsResponse,
    responses=error_docs(413, 415, 422, 503),
    openapi_extra=body_doc(HeadsRequest),
)
async def post_heads(request: Request) -> Response:
    """All layers × heads of attention weights for a sentence of ≤ MAX_OVERVIEW_TOKENS tokens."""
    body = await json_body(request, HeadsRequest)
    given = "mask" in body.model_fields_set and body.mask is not None
    mask = body.mask or "full"
    backend = request.app.state.backend
    out = await anyio.to_thread.run_sync(
        service.heads_overview,
        registry.handle(body.model, request.app.state.model_dir),
        body.sentence,
        mask,
        given,
        backend,
        limiter=SLOTS,
    )
    return json_response(out)


@router.get("/model", summary="The model behind sentence mode", response_model=ModelInfo,
            responses=error_docs(422, 503))  # fmt: skip
async def get_model(
    request: Request, load: Annotated[bool, Query(description="Start loading the weights in the background.")] = False
) -> Response:
    h = registry.handle(None, request.app.state.model_dir)
    info = await anyio.to_thread.run_sync(service.model_info, h)
    if load and not h.loaded and not h.loading:
        threading.Thread(target=_load_quietly, args=(h,), daemon=True, name="model-load").start()
        info["loading"] = True
    return json_response(info)


def _load_quietly(h: ModelHandle) -> None:
    with contextlib.suppress(ModelError):  # the next request that needs the model reports it (503)
        h.model()


@router.get("/models", summary="The models this server offers", response_model=ModelsResponse)
async def get_models(
    request: Request,
    load: Annotated[
        str | None, Query(max_length=64, description="A model id whose weights to start loading in the background.")
    ] = None,
) -> Response:
    default_dir = request.app.state.model_dir
    if load is not None:
        h = registry.handle(load, default_dir, "load", "query")  # an unknown id: a 422 naming it
        if not h.loaded and not h.loading:
            threading.Thread(target=_load_quietly, args=(h,), daemon=True, name="model-load").start()
    listed = await anyio.to_thread.run_sync(registry.models, default_dir)
    if load is not None:
        for m in listed:
            if m["id"] == load and not m.get("loaded"):
                m["loading"] = True
    return json_response({"models": listed})
