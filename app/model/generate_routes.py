"""Routes of the models side by side and of writing with the decoder.

GET  /api/models     every model the server offers, by id (the "model" field of the sentence routes)
POST /api/generate   {"model", "prompt", "max_new_tokens", "temperature", "top_k", "top_p", "seed",
                     "layer", "head", "chat"} → one NDJSON line per new token, then {"done": true, …};
                     with Accept: application/json, the same as one object

Each step of the writing holds one compute slot (app.transport.SLOTS) only while it computes, so
other requests interleave with a long writing; a client that closes the stream stops the work
at the next step.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Generator
from typing import Annotated, Any, Literal

import anyio
import orjson
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.errors import InputError
from app.http import body_doc, error_docs, json_body, json_response
from app.model import generate, registry
from app.model.generate import Done, Sampling, Written
from app.model.loader import Model, ModelHandle
from app.model.spec import ModelError
from app.model.tokenizer import Encoded
from app.transport import SLOTS, in_slot, preferred

router = APIRouter(prefix="/api", tags=["decoder"])

MAX_PROMPT_CHARS = 20_000
MAX_PROMPT_TOKENS = 512  # the prompt after the chat template, in tokens
MAX_NEW_TOKENS = 256
NDJSON = "application/x-ndjson"
ModelId = Annotated[str, StringConstraints(max_length=64)]


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
    generates: bool = Field(False, description="Whether POST /api/generate can write with it.")
    default: bool
    available: bool = Field(description="false when its files cannot be used (then 'error' says why).")
    loaded: bool = False
    loading: bool = False
    error: str | None = None


class ModelsResponse(BaseModel):
    models: list[ModelEntry]


class GenerateRequest(BaseModel):
    """What to write after, and how to choose each next token."""

    model_config = ConfigDict(extra="forbid")

    model: ModelId | None = Field(None, description=f"A model id of GET /api/models (default {registry.DECODER_ID}).")
    prompt: Annotated[str, StringConstraints(max_length=MAX_PROMPT_CHARS)] = Field(
        description=f"The text to go on from; ≤ {MAX_PROMPT_CHARS:,} characters and ≤ {MAX_PROMPT_TOKENS} tokens."
    )
    max_new_tokens: int = Field(32, ge=1, le=MAX_NEW_TOKENS, description=f"Tokens to write, 1 … {MAX_NEW_TOKENS}.")
    temperature: float = Field(
        0.0, ge=0.0, le=5.0, allow_inf_nan=False, description="0: always the most likely token (greedy); 0 … 5."
    )
    top_k: int = Field(0, ge=0, le=1000, description="Draw only from the k most likely tokens (0: no limit).")
    top_p: float = Field(
        1.0, gt=0.0, le=1.0, allow_inf_nan=False, description="Draw only from the likeliest tokens whose "
        "probabilities add up to p (1: no limit).",
    )  # fmt: skip
    seed: int | None = Field(None, ge=0, le=2**32 - 1, description="Makes sampling repeatable.")
    layer: int | None = Field(None, ge=0, description="The layer whose attention each line shows (default: the last).")
    head: int = Field(0, ge=0, description="The query head whose attention each line shows.")
    chat: bool = Field(False, description="Wrap the prompt in the model's chat template (a user's message).")


@router.get("/models", summary="The models this server offers", response_model=ModelsResponse)
async def get_models(
    request: Request,
    load: Annotated[
        str | None, Query(max_length=64, description="A model id whose weights to start loading in the background.")
    ] = None,
) -> Response:
    default_dir = getattr(request.app.state, "model_dir", None)
    if load is not None:
        h = registry.handle(load, default_dir)  # an unknown id is a 422 naming "model"
        if not h.loaded and not h.loading:
            threading.Thread(target=_load_quietly, args=(h,), daemon=True, name="model-load").start()
    listed = await anyio.to_thread.run_sync(registry.models, default_dir)
    if load is not None:
        for m in listed:
            if m["id"] == load and not m.get("loaded"):
                m["loading"] = True
    return json_response({"models": listed})


def _load_quietly(h: ModelHandle) -> None:
    with contextlib.suppress(ModelError):  # the next request that needs the model reports it (503)
        h.model()


def prepare(handle: ModelHandle, req: GenerateRequest) -> tuple[Model, Encoded, int]:
    """The loaded model, the prompt's tokens and the watched layer, or a 4xx naming the field."""
    model = handle.model()  # ModelError: a 503 (app.http)
    s = model.spec
    if s.kind != "llama":
        raise InputError(
            "model", f"{s.name} is a {s.kind.upper()} model and cannot write here: use {registry.DECODER_ID!r}"
        )
    layer = s.layers - 1 if req.layer is None else req.layer
    if layer >= s.layers:
        raise InputError("layer", f"layer must be 0 … {s.layers - 1} ({s.name} has {s.layers} layers)")
    if req.head >= s.heads:
        raise InputError("head", f"head must be 0 … {s.heads - 1} ({s.name} has {s.heads} query heads)")
    if not req.prompt.strip():
        raise InputError("prompt", "prompt is empty: type at least one word")
    text = req.prompt
    if req.chat:
        try:
            text = generate.chat_prompt(model, req.prompt)
        except ValueError as e:
            raise InputError("chat", str(e)) from None
    encoded = model.tokenizer.encode(text)
    limit = min(MAX_PROMPT_TOKENS, s.max_positions - 1)
    if len(encoded) > limit:
        raise InputError("prompt", f"prompt is {len(encoded)} tokens for {s.name}; the limit is {limit}: shorten it")
    if len(encoded) == 0:
        raise InputError("prompt", f"prompt has no tokens that {s.name} reads")
    return model, encoded, layer


def _prompt_fields(model_id: str, encoded: Encoded) -> dict[str, Any]:
    return {"model": model_id, "prompt_tokens": encoded.tokens, "prompt_ids": encoded.ids}


@router.post(
    "/generate",
    summary="Write with the decoder, one token at a time",
    responses={
        200: {
            "content": {NDJSON: {}, "application/json": {}},
            "description": "NDJSON: one line per new token {index, token, id, text, candidates (top 10: token, id, "
            "p, logit, p_sample), attention (the chosen layer/head's weights of the query that chose it over the "
            "kv_len cached tokens), kv_len, layer, head, q, k, v}; the first line also has model, prompt_tokens, "
            "prompt_ids; the last is {done: true, reason: length|eos|stopped, seconds, written, cache_bytes}.",
        },
        **error_docs(413, 415, 422, 503),
    },
    openapi_extra=body_doc(GenerateRequest),
)
async def post_generate(request: Request) -> Response:
    req = await json_body(request, GenerateRequest)
    default_dir = getattr(request.app.state, "model_dir", None)
    entry = registry.entry(req.model or registry.DECODER_ID, default_dir)
    if req.model is None and registry.decoder_file() is None:
        entry = registry.entry(None, default_dir)
    handle = registry.handle(entry.id, default_dir)
    backend = request.app.state.backend
    model, encoded, layer = await anyio.to_thread.run_sync(prepare, handle, req, limiter=SLOTS)
    sampling = Sampling(req.temperature, req.top_k, req.top_p)
    steps = generate.write(model, encoded.ids, req.max_new_tokens, sampling, req.seed, layer, req.head, backend)
    header = _prompt_fields(entry.id, encoded)
    if preferred(request.headers.get("accept"), (NDJSON, "application/json")) == "application/json":
        return json_response(await anyio.to_thread.run_sync(_whole, steps, header, layer, req.head, limiter=SLOTS))
    return StreamingResponse(_lines(steps, header, layer, req.head), media_type=NDJSON)


def _whole(
    steps: Generator[Written | Done, None, None], header: dict[str, Any], layer: int, head: int
) -> dict[str, Any]:
    tokens: list[dict[str, Any]] = []
    for item in steps:
        if isinstance(item, Done):
            return {**header, "tokens": tokens, **generate.done_line(item)}
        tokens.append(generate.line(item, layer, head))
    raise RuntimeError("the writing ended without its last line")  # pragma: no cover


async def _lines(
    steps: Generator[Written | Done, None, None], header: dict[str, Any], layer: int, head: int
) -> AsyncIterator[bytes]:
    """Each step computed in a worker thread holding a compute slot, sent as soon as it is made."""
    try:
        first = True
        while True:
            item = await anyio.to_thread.run_sync(next, steps, None, limiter=SLOTS)
            if item is None:
                return
            if isinstance(item, Done):
                yield orjson.dumps(generate.done_line(item)) + b"\n"
                return
            out = generate.line(item, layer, head)
            if first:
                out = {**out, **header}
                first = False
            yield orjson.dumps(out) + b"\n"
    finally:
        steps.close()


# ---- the chapter "Attention in today's models" -------------------------------------------------

MAX_TODAY_TOKENS = 64


class TodayRequest(BaseModel):
    """A sentence for the decoder, and the layer and head whose rotary pairs and weights to show."""

    model_config = ConfigDict(extra="forbid")

    model: ModelId | None = Field(None, description=f"A decoder's id (default {registry.DECODER_ID}).")
    sentence: Annotated[str, StringConstraints(max_length=2000)] = Field(
        description=f"Any text; ≤ 2,000 characters and ≤ {MAX_TODAY_TOKENS} tokens."
    )
    layer: int = Field(3, ge=0, description="0-based layer.")
    head: int = Field(0, ge=0, description="0-based query head.")


def _today(handle: ModelHandle, req: TodayRequest) -> bytes:
    from app.http import json_bytes
    from app.model.today import as_json, today

    model = handle.model()
    s = model.spec
    if s.kind != "llama":
        raise InputError("model", f"{s.name} is not a Llama-family decoder: use {registry.DECODER_ID!r}")
    if req.layer >= s.layers:
        raise InputError("layer", f"layer must be 0 … {s.layers - 1} ({s.name} has {s.layers} layers)")
    if req.head >= s.heads:
        raise InputError("head", f"head must be 0 … {s.heads - 1} ({s.name} has {s.heads} query heads)")
    if not req.sentence.strip():
        raise InputError("sentence", "sentence is empty: type at least one word")
    enc = model.tokenizer.encode(req.sentence)
    if not 2 <= len(enc) <= MAX_TODAY_TOKENS:
        raise InputError("sentence", f"sentence is {len(enc)} tokens; this chapter takes 2 … {MAX_TODAY_TOKENS}")
    return json_bytes({"model": s.name, **as_json(today(model, enc.ids, enc.tokens, req.layer, req.head))})


@router.post(
    "/decoder/today",
    summary="RoPE, grouped-query heads and the attention sink of one sentence",
    responses=error_docs(413, 415, 422, 503),
    openapi_extra=body_doc(TodayRequest),
)
async def post_today(request: Request) -> Response:
    req = await json_body(request, TodayRequest)
    handle = registry.handle(req.model or registry.DECODER_ID, getattr(request.app.state, "model_dir", None))
    return await in_slot("application/json", _today, handle, req)
