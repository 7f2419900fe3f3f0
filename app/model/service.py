"""The model side of the API, as plain functions the routes run in a worker thread.

  sentence mode of POST /api/attention   {"sentence", "layer", "head", "mask"} → every stage
  POST /api/heads                        {"sentence", "mask"} → all layers × heads of weights (≤ 64 tokens)
  POST /api/overview                     {"sentence", "mask"} → every layer × head summarised (app.model.summary)
  GET /api/model                         what the model is, and whether it is loaded yet

Rejections name the field (422); a model that cannot be loaded is the server's problem (503).

One forward per sentence however many requests ask: requests for the same sentence (and model
and backend) take turns at its forward (_one_flight), so the second finds the first's trace in
the model's cache instead of running its own; the overview's summaries are gathered while that
forward runs (an nn.Observer) and kept for the next request that asks.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from app import limits
from app.attention import Backend, Mask
from app.errors import ClientError, InputError, in_range
from app.model import nn
from app.model.loader import ModelHandle
from app.model.select import HeadChoice, LayerChoice, all_weights, layers_needed, mean_over, select
from app.model.spec import ModelSpec
from app.model.summary import Collector, Summary
from app.model.tokenizer import Encoded
from app.model.trace import Trace

QKV = ("q", "k", "v")


def is_sentence_request(req: Any) -> bool:
    """True for the sentence mode; a 422 naming the field when a request mixes or lacks both modes."""
    given = [name for name in QKV if getattr(req, name) is not None]
    if req.sentence is not None:
        if given:
            raise InputError(given[0], f"{given[0]} cannot be sent with sentence: send a sentence, or q, k and v")
        if req.tokens is not None:
            raise InputError("tokens", "tokens cannot be sent with sentence: the model's tokenizer makes them")
        return True
    for name in ("layer", "head", "model"):
        if getattr(req, name) is not None:
            raise InputError(name, f"{name} goes with sentence (a model's layer and head); q, k, v have no layers")
    for name in QKV:
        if getattr(req, name) is None:
            msg = f"Field required: send q, k and v, or a sentence ({name} is missing)"
            raise ClientError(422, ["body", name], msg, "missing")
    return False


def spec_of(handle: ModelHandle) -> ModelSpec:
    """The model's spec (a ModelError, answered 503 by app.web.http, when its folder cannot be used)."""
    return handle.spec()


def _mask(spec: ModelSpec, mask: Mask | None, given: bool) -> Mask:
    """The model's own mask unless asked otherwise (None: the model's own); a decoder is always causal."""
    if spec.causal:
        if given and mask not in (None, "causal"):
            msg = f"{spec.name} is a decoder: its attention is causal by nature, so mask must be 'causal'"
            raise InputError("mask", msg)
        return "causal"
    return mask or "full"


def encode_sentence(handle: ModelHandle, spec: ModelSpec, sentence: str) -> Encoded:
    """The sentence's tokens: an InputError for a sentence that is empty or has no token the model
    reads (a ModelError where the model cannot be loaded). The caller checks the length against its limit."""
    if not sentence.strip():
        raise InputError("sentence", "sentence is empty: type at least one word")
    encoded = handle.encode(sentence)
    if encoded.content == 0:
        raise InputError("sentence", f"sentence has no tokens that {spec.name} reads (only spaces or controls)")
    return encoded


def _encode(handle: ModelHandle, spec: ModelSpec, sentence: str, max_tokens: int, limit_name: str) -> Encoded:
    encoded = encode_sentence(handle, spec, sentence)
    if len(encoded) > max_tokens:
        raise InputError(
            "sentence", f"sentence is {len(encoded)} tokens for {spec.name}; {limit_name} is {max_tokens}: shorten it"
        )
    return encoded


_flights: dict[tuple[int, str, str], tuple[threading.Lock, int]] = {}  # key → (its lock, requests holding it)
_flights_lock = threading.Lock()


@contextmanager
def _one_flight(handle: ModelHandle, backend: Backend, sentence: str) -> Iterator[None]:
    """Requests for one sentence of one model take turns: the first runs the forward, the next finds
    its trace in the model's cache (or continues it). Other sentences are not held up."""
    key = (id(handle), backend, sentence)
    with _flights_lock:
        lock, users = _flights.get(key, (threading.Lock(), 0))
        _flights[key] = (lock, users + 1)
    try:
        with lock:
            yield
    finally:
        with _flights_lock:
            lock, users = _flights[key]
            if users == 1:
                del _flights[key]
            else:
                _flights[key] = (lock, users - 1)


def _trace(
    handle: ModelHandle,
    sentence: str,
    encoded: Encoded,
    backend: Backend,
    layers: int | None = None,
    observer: nn.Observer | None = None,
) -> Trace:
    token = nn.observing(observer)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            return handle.trace(sentence, encoded, backend, layers)
    finally:
        nn.stop_observing(token)


def _token_fields(spec: ModelSpec, encoded: Encoded) -> dict[str, Any]:
    return {
        "model": spec.name,
        "kind": spec.kind,
        "tokens": encoded.tokens,
        "words": encoded.words,
        "spans": [list(s) if s is not None else None for s in encoded.spans],
    }


def sentence_attention(
    handle: ModelHandle,
    sentence: str,
    layer: LayerChoice | None,
    head: HeadChoice,
    mask: Mask | None,
    mask_given: bool,
    backend: Backend,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fields and arrays of a sentence-mode answer (see app.model.select for the means)."""
    spec = spec_of(handle)
    layer = 0 if layer is None else layer
    in_range("layer", layer, spec.layers, spec.name, " or 'mean'")
    in_range("head", head, spec.heads, spec.name, ", 'mean' or omitted")
    mask = _mask(spec, mask, mask_given)
    encoded = _encode(handle, spec, sentence, spec.max_tokens, "the limit")
    with _one_flight(handle, backend, sentence):
        trace = _trace(handle, sentence, encoded, backend, layers_needed(layer, spec.layers))  # layers 0 … L only
    with np.errstate(over="ignore", invalid="ignore"):
        arrays = select(trace, layer, head, mask, backend)
    if not all(np.isfinite(arrays[name]).all() for name in ("weights", "output")):
        raise InputError("sentence", "the model's numbers overflowed for this sentence")  # never seen; never a NaN
    fields = {
        **_token_fields(spec, encoded),
        "layer": layer,
        "head": head,
        "mean_over": mean_over(layer, head),
        "mask": mask,
        "d_k": spec.head_size,
    }
    return fields, arrays


def heads_overview(
    handle: ModelHandle, sentence: str, mask: Mask | None, mask_given: bool, backend: Backend
) -> dict[str, Any]:
    """Every layer's and head's weights for the small-multiples overview, rounded (see limits)."""
    spec = spec_of(handle)
    mask = _mask(spec, mask, mask_given)
    limit = min(spec.max_tokens, limits.MAX_OVERVIEW_TOKENS)
    encoded = _encode(handle, spec, sentence, limit, "the overview's limit")
    with _one_flight(handle, backend, sentence):
        trace = _trace(handle, sentence, encoded, backend)
    with np.errstate(over="ignore", invalid="ignore"):
        weights = np.round(all_weights(trace, mask, backend), limits.OVERVIEW_DECIMALS)  # (L, H, n, n)
    if not np.isfinite(weights).all():
        raise InputError("sentence", "the model's numbers overflowed for this sentence")
    return {
        **_token_fields(spec, encoded),
        "layers": spec.layers,
        "heads": spec.heads,
        "mask": mask,
        "decimals": limits.OVERVIEW_DECIMALS,
        "weights": weights,
    }


_SUMMARIES = 16  # recent sentences' overviews kept (≈ 0.3 MB each at 512 tokens)
_summaries: OrderedDict[tuple[int, str, str, str], Summary] = OrderedDict()
_summaries_lock = threading.Lock()


def summary_of(handle: ModelHandle, sentence: str, encoded: Encoded, mask: Mask, backend: Backend) -> Summary:
    """Every layer's and head's summary (app.model.summary) for a sentence under a mask.

    Gathered while the forward runs when the mask is the model's own (so no weight is computed
    twice); a trace that had already run, the last layer's (the forward stops at its q, k, v),
    another backend or the other mask: recomputed from q, k.
    """
    key = (id(handle), backend, mask, sentence)
    with _summaries_lock:
        if key in _summaries:
            _summaries.move_to_end(key)
            return _summaries[key]
    spec = spec_of(handle)
    own = "causal" if spec.causal else "full"
    collector = Collector(len(encoded), spec.heads, mask)
    with _one_flight(handle, backend, sentence):
        # every layer's q and k, the last layer left open: its weights are all the overview needs
        # of it (Collector.summary computes them), not its output projection and feed-forward
        trace = _trace(handle, sentence, encoded, backend, spec.layers, collector if mask == own else None)
    with np.errstate(over="ignore", invalid="ignore"):
        summary = collector.summary(trace)
    with _summaries_lock:
        _summaries[key] = summary
        while len(_summaries) > _SUMMARIES:
            _summaries.popitem(last=False)
    return summary


def overview(
    handle: ModelHandle, sentence: str, mask: Mask | None, mask_given: bool, backend: Backend
) -> dict[str, Any]:
    """The overview of every layer × head for a sentence of up to the model's limit (see OverviewResponse)."""
    spec = spec_of(handle)
    mask = _mask(spec, mask, mask_given)
    encoded = _encode(handle, spec, sentence, spec.max_tokens, "the limit")
    s = summary_of(handle, sentence, encoded, mask, backend)
    if not (np.isfinite(s.pooled).all() and np.isfinite(s.entropy).all() and np.isfinite(s.distance).all()):
        raise InputError("sentence", "the model's numbers overflowed for this sentence")
    top = np.stack([s.top_query, s.top_key, np.round(s.top_weight * 1000)], axis=-1).astype(np.int64)
    return {
        **_token_fields(spec, encoded),
        "layers": spec.layers,
        "heads": spec.heads,
        "mask": mask,
        "edges": s.edges,
        "pooled": np.round(s.pooled * 1000).astype(np.int32),  # thousandths
        "entropy": np.round(s.entropy, 3),
        "distance": np.round(s.distance, 2),
        "top": top,  # [query, key, thousandths]
    }


def model_info(handle: ModelHandle) -> dict[str, Any]:
    spec = spec_of(handle)
    model = handle.model() if handle.loaded else None
    return {
        "name": spec.name,
        "kind": spec.kind,
        "layers": spec.layers,
        "heads": spec.heads,
        "head_size": spec.head_size,
        "hidden_size": spec.hidden,
        "max_tokens": spec.max_tokens,
        "max_positions": spec.max_positions,
        "overview_max_tokens": min(spec.max_tokens, limits.MAX_OVERVIEW_TOKENS),
        "mask": "causal" if spec.causal else "full",
        "loaded": handle.loaded,
        "loading": handle.loading,
        "load_seconds": round(model.load_seconds, 6) if model else None,
    }
