"""What several chapters' routes share: request fields, the real model's layer, its checks.

Breaking a limit is a 422 naming the field (app.web.http answers it); a model that cannot be loaded
is a 503 (ModelError, answered by app.web.http too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Request, Response
from fastapi.types import DecoratedCallable
from pydantic import BaseModel, ConfigDict, Field, Strict, StringConstraints

from app import limits
from app.attention import Backend
from app.errors import InputError, in_range
from app.lesson import block as blocks
from app.model import registry
from app.model.loader import Model, ModelHandle
from app.model.service import encode_sentence, spec_of
from app.model.spec import ModelSpec
from app.model.tokenizer import Encoded
from app.web.http import body_doc, error_docs, json_body
from app.web.transport import in_slot

MAX_WORD_CHARS = 24
MAX_LESSON_TOKENS = limits.MAX_OVERVIEW_TOKENS  # tokens of a sentence for /api/block and /api/multihead/model
Word = Annotated[str, StringConstraints(min_length=1, max_length=MAX_WORD_CHARS, pattern=r"^\S+$")]
Int = Annotated[int, Strict()]
Sentence = Annotated[str, StringConstraints(max_length=limits.MAX_SENTENCE_CHARS)]
LayerIndex = Annotated[int, Field(ge=0, strict=True)]

ERRORS = error_docs(413, 415, 422)
MODEL_ERRORS = error_docs(413, 415, 422, 503)


class SentenceLayerRequest(BaseModel):
    """A sentence for the real model, and the layer to look inside."""

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
    model: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="A model id of GET /api/models (default: the server's own model)."
    )


def prepare(handle: ModelHandle, sentence: str, layer: int) -> tuple[ModelSpec, Encoded]:
    """The model's spec and the sentence's tokens, once the layer and the length fit the model."""
    spec = spec_of(handle)
    if spec.kind == "llama":
        raise InputError("model", f"this view shows BERT and GPT-2 blocks; {spec.name} is a Llama decoder")
    in_range("layer", layer, spec.layers, spec.name)
    encoded = encode_sentence(handle, spec, sentence)
    limit = min(spec.max_tokens, MAX_LESSON_TOKENS)
    if len(encoded) > limit:
        raise InputError(
            "sentence",
            f"sentence is {len(encoded)} tokens for {spec.name}; this view takes {limit}",
            "too_many_tokens",
            ctx={"tokens": len(encoded), "limit": limit},
        )
    return spec, encoded


def layer_fields(spec: ModelSpec, encoded: Encoded, layer: int) -> dict[str, Any]:
    """The fields an answer about one layer of the real model starts with."""
    return {
        "model": spec.name,
        "kind": spec.kind,
        "tokens": encoded.tokens,
        "ids": encoded.ids,
        "layer": layer,
        "layers": spec.layers,
    }


@dataclass(frozen=True)
class LayerRun:
    """One layer of the real model run on a sentence: what the block and heads views start from."""

    spec: ModelSpec
    encoded: Encoded
    model: Model
    x: np.ndarray  # (n, C): the layer's input
    block: blocks.Block  # the layer's every vector, its heads included

    def fields(self, layer: int) -> dict[str, Any]:
        return layer_fields(self.spec, self.encoded, layer)


def run_layer(handle: ModelHandle, sentence: str, layer: int, backend: Backend) -> LayerRun:
    """The sentence through the model up to `layer`, then that layer's block (overflow left to `finite`)."""
    spec, encoded = prepare(handle, sentence, layer)
    model = handle.model()
    with np.errstate(over="ignore", invalid="ignore"):
        x = blocks.layer_input(encoded.ids, model.weights, spec, layer, backend)
        b = blocks.block(x, model.weights, spec, layer, backend)
    return LayerRun(spec, encoded, model, x, b)


def finite(*arrays: np.ndarray) -> None:
    if not all(np.isfinite(a).all() for a in arrays):
        raise InputError("sentence", "the model's numbers overflowed for this sentence", "overflow")


async def layer_answer(request: Request, compute: Callable[[ModelHandle, str, int, Backend], bytes]) -> Response:
    """`compute`'s JSON for a SentenceLayerRequest (sentence, layer), made in a compute slot."""
    req = await json_body(request, SentenceLayerRequest)
    backend: Backend = request.app.state.backend
    return await in_slot(
        "application/json",
        compute,
        registry.handle(req.model, request.app.state.model_dir),
        req.sentence,
        req.layer,
        backend,
        keep=True,
    )


def post_layer(
    router: APIRouter, path: str, summary: str, response_model: type[BaseModel]
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """`router.post` for a route that reads a SentenceLayerRequest and may need the model (503)."""
    return router.post(
        path,
        summary=summary,
        response_model=response_model,
        responses=MODEL_ERRORS,
        openapi_extra=body_doc(SentenceLayerRequest),
    )
