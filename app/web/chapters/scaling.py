"""POST /api/scaling {"d_k"}: the spread of q·k against √d_k, one query's softmax with and without
÷√d_k, and the same measures for d_k = 2 … 1024. The math: app.lesson.scaling."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from app.lesson import scaling
from app.web.chapters.shared import ERRORS, Int
from app.web.http import JSON, body_doc, json_body, json_bytes
from app.web.transport import in_slot

router = APIRouter(prefix="/api", tags=["lesson"])


class ScalingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"d_k": 64}]})

    d_k: Int = Field(
        ge=scaling.MIN_D_K,
        le=scaling.MAX_D_K,
        description=f"Length of q and k: an integer, {scaling.MIN_D_K} … {scaling.MAX_D_K}.",
    )


class SweepPoint(BaseModel):
    d_k: int
    sqrt_d_k: float
    std: float = Field(description="Measured standard deviation of q·k.")
    mean_max_unscaled: float
    mean_max_scaled: float
    mean_entropy_unscaled: float
    mean_entropy_scaled: float


class ScalingResponse(BaseModel):
    d_k: int
    sqrt_d_k: float
    seed: int = Field(description="numpy.random.default_rng([seed, d_k]) draws every number, in this order: "
                      "q (samples × d_k), k (samples × d_k), queries (queries × d_k), keys (keys × d_k).")  # fmt: skip
    samples: int = Field(description="How many (q, k) pairs the spread is measured on.")
    std: float = Field(description="Measured standard deviation of q·k over the samples (ddof 0): ≈ √d_k.")
    mean: float = Field(description="Measured mean of q·k: ≈ 0.")
    queries: int = Field(description="Queries against the same keys for the mean_* measures; row 0 is the one shown.")
    keys: int = Field(description="Keys in one query's row of softmax.")
    ln_keys: float = Field(description="ln(keys): the entropy of an even row, the most a row can have.")
    scores: list[float] = Field(description="The shown query's scores q·k against each key (unscaled).")
    unscaled: list[float] = Field(description="softmax(scores): without the division.")
    scaled: list[float] = Field(description="softmax(scores / √d_k): as attention computes it.")
    max_unscaled: float
    max_scaled: float
    entropy_unscaled: float = Field(description="−Σ w·ln w in nats (0 = one-hot).")
    entropy_scaled: float
    mean_max_unscaled: float = Field(description="Largest weight, averaged over the queries.")
    mean_max_scaled: float
    mean_entropy_unscaled: float
    mean_entropy_scaled: float
    sweep: list[SweepPoint] = Field(description="The same measures for d_k = 2, 4, 8, … 1024.")


def _point(s: scaling.Scaling) -> dict[str, Any]:
    return {
        "d_k": s.d_k, "sqrt_d_k": s.sqrt_d_k, "std": s.std,
        "mean_max_unscaled": s.mean_max_unscaled, "mean_max_scaled": s.mean_max_scaled,
        "mean_entropy_unscaled": s.mean_entropy_unscaled, "mean_entropy_scaled": s.mean_entropy_scaled,
    }  # fmt: skip


@functools.cache
def _sweep() -> list[dict[str, Any]]:
    return [_point(s) for s in scaling.sweep()]  # the same numbers every time: computed once


def _answer(d_k: int) -> bytes:
    return json_bytes(_scaling(d_k))


def _scaling(d_k: int) -> dict[str, Any]:
    s = scaling.measure(d_k)
    return {
        **_point(s), "seed": scaling.SEED, "samples": scaling.SAMPLES, "mean": float(s.dots.mean()),
        "queries": scaling.QUERIES, "keys": scaling.KEYS, "ln_keys": float(np.log(scaling.KEYS)),
        "scores": s.scores, "unscaled": s.unscaled, "scaled": s.scaled,
        "max_unscaled": s.max_unscaled, "max_scaled": s.max_scaled,
        "entropy_unscaled": s.entropy_unscaled, "entropy_scaled": s.entropy_scaled, "sweep": _sweep(),
    }  # fmt: skip


@router.post("/scaling", summary="Why divide by √d_k", response_model=ScalingResponse, responses=ERRORS,
             openapi_extra=body_doc(ScalingRequest, required=False))  # fmt: skip
async def post_scaling(request: Request) -> Response:
    """The measured spread of q·k beside √d_k, and one query's softmax with and without ÷√d_k."""
    req = await json_body(request, ScalingRequest, empty_is_default=True, named=True)
    return await in_slot(JSON, _answer, req.d_k, keep=True)  # a fixed seed: the same d_k, the same answer
