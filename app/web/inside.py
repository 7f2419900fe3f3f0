"""The routes that look inside a model (the chapter "Look inside", the compare view, the notebook).

  POST /api/rollout   attention through all layers: rollout or flow (app.model.rollout), every
                      layer's n × n and the focused token's paths
  POST /api/ablate    heads switched off: a head's weights with and without, the final vectors'
                      cosines, a decoder's next-token candidates before and after (app.model.ablate)
  POST /api/lens      every layer's guess for the next token (the logit lens)

The handlers read a body and run app.model.inside in a compute slot.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app import limits
from app.errors import ClientError, InputError
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
        "(flow: as many on all-MiniLM-L6-v2, fewer on deeper models: the answer's flow_max_tokens; past its "
        "flow_table_tokens the answer has the focus's paths only, and past flow_max_tokens a 422 says so)."
    )
    method: Literal["rollout", "flow"] = Field(
        "rollout",
        description="rollout: Â_L ··· Â_1 with Â = 0.5·A + 0.5·I (A: the heads' mean weights), rows summing to 1; "
        "flow: the maximum flow from each token of each layer to each input token, rows divided by their sums "
        "(Abnar & Zuidema 2020).",
    )
    focus: int | None = Field(
        None,
        ge=0,
        description="A token (0-based): its paths down to the input, per layer (focus_paths). Default: none, "
        "except for a flow answer without tables (past flow_table_tokens): the last token.",
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
    attention: list[Any] = Field(
        description="[layer − 1][i][j]: each layer's attention A, the mean of its heads' weights (under `mask`)."
    )
    layers: list[Any] | None = Field(
        description="[layer − 1][i][j], one n × n per layer: how much of token i after that layer comes from input "
        "token j (each row sums to 1). null for a flow past flow_table_tokens (layers_omitted says why): "
        "focus_paths then carries the answer."
    )
    layers_omitted: str | None = Field(
        None, description="Why `layers` is null (a flow past flow_table_tokens); null when the tables are given."
    )
    decimals: int = Field(description="The shares are rounded to this many decimals.")
    flow_max_tokens: int = Field(
        description="The most tokens a flow of this model and mask reads (its focus's paths: n maximum flows a layer)."
    )
    flow_table_tokens: int = Field(
        description="The most tokens a flow answer reads with every layer's n × n table (n² maximum flows a layer)."
    )
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
    return await in_slot(JSON, _rollout, *args, keep=True)


def _rollout(*args: Any) -> bytes:
    return json_bytes(inside.attention_through_layers(*args))


Head = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]
MAX_HEADS_OFF = 512  # more than any model offered has (SmolLM2: 30 × 9, MiniLM: 6 × 12)


class AblateRequest(BaseModel):
    """A text, the heads to switch off, and the head whose weights to show with and without them."""

    model_config = ConfigDict(extra="forbid")

    model: ModelId | None = Field(None, description="A model id of GET /api/models (default: the server's own).")
    sentence: Sentence | None = Field(None, description="The text (an encoder's word); send this or prompt.")
    prompt: Sentence | None = Field(None, description="The text (a decoder's word); send this or sentence.")
    heads: list[Head] = Field(
        default_factory=list,
        max_length=MAX_HEADS_OFF,
        description=f"[[layer, head], …], 0-based, at most {MAX_HEADS_OFF}: each head's output is set to zero "
        "before the output projection (W_O, o_proj); the rest of the forward runs as usual.",
    )
    layer: int | None = Field(None, ge=0, description="The layer whose head to show (default: the last).")
    head: int = Field(0, ge=0, description="The head to show (0-based; a decoder's query head).")


class Candidate(BaseModel):
    token: str
    id: int
    p: float = Field(description="The model's probability of this next token (softmax of its scores).")


class Candidates(BaseModel):
    before: list[Candidate]
    after: list[Candidate]


class Weights(BaseModel):
    before: list[list[float]]
    after: list[list[float]]


class AblateResponse(BaseModel):
    model: str
    kind: Literal["bert", "gpt2", "llama"]
    tokens: list[str]
    words: list[int | None]
    spans: list[list[int] | None]
    heads: list[list[int]] = Field(description="The heads switched off, [layer, head], sorted, each once.")
    layer: int
    head: int
    layers: int = Field(description="The model's layers.")
    heads_per_layer: int = Field(description="The model's (query) heads in each layer.")
    first_layer: int | None = Field(
        description="The first layer with a head switched off: the layers below it are reused."
    )
    weights: Weights = Field(description="Head `head` of `layer`: its n × n attention weights before and after.")
    cosine: list[float] = Field(
        description="Per token: the cosine of its final vector before and after (1: unchanged)."
    )
    candidates: Candidates | None = Field(
        None, description=f"A decoder's {inside.CANDIDATES} likeliest next tokens, before and after."
    )


@router.post(
    "/ablate",
    summary="Switch heads off: what changes",
    response_model=AblateResponse,
    response_model_exclude_none=True,
    responses=error_docs(413, 415, 422, 503),
    openapi_extra=body_doc(AblateRequest),
)
async def post_ablate(request: Request) -> Response:
    """A head's weights with and without the heads switched off, the final vectors' cosines, and a
    decoder's next-token candidates before and after."""
    req = await json_body(request, AblateRequest)
    text, field = _text_of(req.sentence, req.prompt)
    handle = registry.handle(req.model, request.app.state.model_dir)
    heads = [(pair[0], pair[1]) for pair in req.heads]
    args = (handle, text, field, heads, req.layer, req.head, request.app.state.backend)
    return await in_slot(JSON, _ablate, *args, keep=True)


def _text_of(sentence: str | None, prompt: str | None) -> tuple[str, str]:
    if sentence is not None and prompt is not None:
        raise InputError("prompt", "send sentence or prompt, not both")
    if sentence is None and prompt is None:
        raise ClientError(422, ["body", "sentence"], "Field required: send sentence (or prompt)", "missing")
    return (sentence, "sentence") if sentence is not None else (prompt or "", "prompt")


def _ablate(*args: Any) -> bytes:
    return json_bytes(inside.switched_off(*args))


class LensRequest(BaseModel):
    """A prompt for a decoder, and the position whose next token each layer guesses."""

    model_config = ConfigDict(extra="forbid")

    model: ModelId | None = Field(None, description=f"A decoder's id (default {registry.DECODER_ID}).")
    prompt: Sentence = Field(description="The text; at most the model's max_tokens.")
    position: int | None = Field(
        None, ge=0, description="The token (0-based) whose next token to guess; default the last."
    )


class Guesses(BaseModel):
    layer: int = Field(description="-1: the embedding; 0 … L − 1: after that layer.")
    top: list[Candidate]


class LensResponse(BaseModel):
    model: str
    kind: Literal["bert", "gpt2", "llama"]
    tokens: list[str]
    words: list[int | None]
    spans: list[list[int] | None]
    position: int
    vocab: int
    layers: list[Guesses] = Field(
        description=f"The embedding and each layer's output at `position`, through the final RMSNorm and the LM head: "
        f"the top {inside.LENS_TOP}. The last layer's is the model's own answer."
    )
    answer: dict[str, Any] = Field(description="The model's own top next token: {token, id}.")
    first_top: int = Field(description="The first layer whose top guess is the answer (-1: the embedding's).")


@router.post(
    "/lens",
    summary="Every layer's guess for the next token (the logit lens)",
    response_model=LensResponse,
    responses=error_docs(413, 415, 422, 503),
    openapi_extra=body_doc(LensRequest),
)
async def post_lens(request: Request) -> Response:
    """Each layer's residual stream at one position, through the final RMSNorm and the LM head."""
    req = await json_body(request, LensRequest)
    handle = registry.handle(req.model or registry.DECODER_ID, request.app.state.model_dir)
    return await in_slot(JSON, _lens, handle, req.prompt, req.position, request.app.state.backend, keep=True)


def _lens(*args: Any) -> bytes:
    return json_bytes(inside.every_layers_guess(*args))
