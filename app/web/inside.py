"""The routes that look inside a model (the chapter "Look inside", the compare view, the notebook).

  POST /api/rollout   attention through all layers: rollout or flow (app.model.rollout), every
                      layer's n × n and the focused token's paths

The handlers read a body and run app.model.inside in a compute slot.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app import limits
from app.model import inside, registry
from app.schemas import ModelId
from app.web.http import JSON, body_doc, error_docs, json_body, json_bytes
from app.web.transport import in_slot

router = APIRouter(prefix="/api", tags=["inside"])
Sentence = Annotated[str, StringConstraints(max_length=limits.MAX_SENTENCE_CHARS)]


class RolloutRequest(BaseModel):
    """A sentence, how to follow its attention through the layers, and the token to follow."""

    model_config = ConfigDict(extra="forbid")

    model: ModelId | None = Field(None, description="A model id of GET /api/models (default: the server's own).")
    sentence: Sentence = Field(
        description=f"Any text; ≤ {limits.MAX_SENTENCE_CHARS:,} characters and ≤ {limits.MAX_ROLLOUT_TOKENS} tokens "
        "(flow: fewer, by the model's layers: the answer's flow_max_tokens, and a 422 says it)."
    )
    method: Literal["rollout", "flow"] = Field(
        "rollout",
        description="rollout: Â_L ··· Â_1 with Â = 0.5·A + 0.5·I (A: the heads' mean weights), rows summing to 1; "
        "flow: the maximum flow from each token of each layer to each input token, rows divided by their sums "
        "(Abnar & Zuidema 2020).",
    )
    focus: int | None = Field(
        None, ge=0, description="A token (0-based): its paths down to the input, per layer (focus_paths)."
    )
    mask: Literal["full", "causal"] | None = Field(
        None, description="The mask the weights are computed with. Default: the model's own (a decoder's is causal)."
    )


class FocusPaths(BaseModel):
    through: list[list[float]] = Field(
        description="[l][k], l = 0 … L: the share of the focus (after the last layer) passing through token k "
        "after layer l (l = 0: the input tokens; through[L] is the focus itself)."
    )
    edges: list[list[float]] = Field(
        description=f"[layer, a, b, share]: the share on the edge from token a after `layer` to token b below it, "
        f"through[layer][a] · Â_layer[a, b]; those of at least {inside.PATH_MIN}, at most "
        f"{inside.PATHS_PER_LAYER} per layer, largest first."
    )


class RolloutResponse(BaseModel):
    model: str
    kind: Literal["bert", "gpt2", "llama"]
    tokens: list[str]
    words: list[int | None]
    spans: list[list[int] | None]
    method: Literal["rollout", "flow"]
    mask: Literal["full", "causal"]
    layers: list[Any] = Field(
        description="[layer − 1][i][j], one n × n per layer: how much of token i after that layer comes from input "
        "token j (each row sums to 1)."
    )
    decimals: int = Field(description="The shares are rounded to this many decimals.")
    flow_max_tokens: int = Field(description="The most tokens a flow of this model and mask reads.")
    focus: int | None = None
    focus_paths: FocusPaths | None = None


@router.post(
    "/rollout",
    summary="Attention through all layers: rollout or flow",
    response_model=RolloutResponse,
    responses=error_docs(413, 415, 422, 503),
    openapi_extra=body_doc(RolloutRequest),
)
async def post_rollout(request: Request) -> Response:
    """Every layer's rollout (or flow) of a sentence, and the paths of a focused token through the layers."""
    req = await json_body(request, RolloutRequest)
    args = (
        registry.handle(req.model, request.app.state.model_dir),
        req.sentence,
        req.method,
        req.focus,
        req.mask,
        req.mask is not None,
        request.app.state.backend,
    )
    return await in_slot(JSON, _rollout, *args)


def _rollout(*args: Any) -> bytes:
    return json_bytes(inside.attention_through_layers(*args))
