"""POST /api/block {"sentence", "layer"}: every vector of one transformer block of the real model,
in the model's own order. The math: app.lesson.block."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from app.attention import Backend
from app.lesson import block as blocks
from app.model.loader import ModelHandle
from app.web.chapters.shared import finite, layer_answer, post_layer, run_layer
from app.web.http import json_bytes

router = APIRouter(prefix="/api", tags=["lesson"])


class WhatIf(BaseModel):
    name: str
    order: list[str]
    vectors: dict[str, list[Any]]
    norms: dict[str, list[float]]
    output_distance: list[float] = Field(description="Per token: ‖what-if output − the model's output‖.")
    output_cosine: list[float] = Field(description="Per token: cosine between the what-if output and the model's.")


class BlockResponse(BaseModel):
    model: str
    kind: Literal["bert", "gpt2", "llama"]
    tokens: list[str]
    ids: list[int]
    layer: int
    layers: int
    hidden: int
    order: list[str] = Field(description="The names in the order the model computes them, input … output.")
    vectors: dict[str, list[Any]] = Field(description="name → n × hidden")
    norms: dict[str, list[float]] = Field(description="name → each token's vector length")
    what_if: WhatIf | None = Field(description="BERT only: the same layer rearranged pre-LN (not the model's own).")


def _norms(vectors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.linalg.norm(v.astype(np.float64), axis=-1) for name, v in vectors.items()}


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    out: np.ndarray = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return out


def _block(handle: ModelHandle, sentence: str, layer: int, backend: Backend) -> bytes:
    run = run_layer(handle, sentence, layer, backend)
    spec, b = run.spec, run.block
    with np.errstate(over="ignore", invalid="ignore"):
        what_if = blocks.pre_ln_what_if(run.x, run.model.weights, spec, layer, backend) if spec.kind == "bert" else None
    finite(*b.vectors.values(), *(what_if.vectors.values() if what_if else ()))
    return json_bytes(
        {
            **run.fields(layer),
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


@post_layer(router, "/block", "One transformer block of the real model, every vector by name", BlockResponse)
async def post_block(request: Request) -> Response:
    """input → … → output of one layer, in the order the model computes them (BERT post-LN, GPT-2 pre-LN)."""
    return await layer_answer(request, _block)
