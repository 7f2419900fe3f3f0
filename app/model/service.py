"""The model side of the API, as plain functions the routes run in a worker thread.

  sentence mode of POST /api/attention   {"sentence", "layer", "head", "mask"} → every stage; a long
                                         sentence (detail "summary"): the focused rows' stages and the
                                         n × n table as a summary in blocks (app.lod)
  POST /api/heads                        {"sentence", "mask"} → all layers × heads of weights (≤ 64 tokens)
  POST /api/overview                     {"sentence", "mask"} → every layer × head summarised (app.model.summary)
  GET /api/model                         what the model is, and whether it is loaded yet

Rejections name the field (422); a model that cannot be loaded is the server's problem (503).

One forward per sentence however many requests ask: requests for the same sentence (and model
and backend) take turns at its forward (trace_sentence), so the second finds the first's trace in
the model's cache instead of running its own; the overview's summaries are gathered while that
forward runs (an nn.Observer) and kept for the next request that asks.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from app import limits, lod
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
SUMMARY_FIELDS = ("rows", "block", "top_k")  # what only a summary answer reads
ROW_ARRAYS = ("q", "k", "v", "scores", "scaled", "masked", "weights", "output")  # a summary's rows (full: n × n)
SUMMARY_ARRAYS = ("block_mean", "block_peak", "top_keys", "top_weights")  # the summary's own arrays
ROWS = 32  # the rows a summary answer sends whole when none are named: the first ones (the page's 3D window)


def sentence_tokens(spec: ModelSpec) -> int:
    """The longest sentence a model's views read, in tokens: its context, within MAX_LONG_TOKENS. Up to
    spec.max_tokens every cell of its n × n stages can be sent (detail "full"); past that, a view
    sends the rows it focuses on and a summary of the table (detail "summary")."""
    return max(spec.max_tokens, min(spec.max_positions, limits.MAX_LONG_TOKENS))


def is_sentence_request(req: Any) -> bool:
    """True for the sentence mode; a 422 naming the field when a request mixes or lacks both modes."""
    given = [name for name in QKV if getattr(req, name) is not None]
    if req.sentence is not None:
        if given:
            raise InputError(given[0], f"{given[0]} cannot be sent with sentence: send a sentence, or q, k and v")
        if req.tokens is not None:
            raise InputError("tokens", "tokens cannot be sent with sentence: the model's tokenizer makes them")
        return True
    for name in ("layer", "head", "model", "detail", *SUMMARY_FIELDS):
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


def encode_sentence(
    handle: ModelHandle, spec: ModelSpec, sentence: str, limit: int | None = None, limit_name: str = "the limit"
) -> Encoded:
    """The sentence's tokens: an InputError for a sentence that is empty, has no token the model
    reads or, given a `limit`, more tokens than that (a ModelError where the model cannot be loaded)."""
    if not sentence.strip():
        raise InputError("sentence", "sentence is empty: type at least one word", "empty_text")
    encoded = handle.encode(sentence)
    if encoded.content == 0:
        raise InputError(
            "sentence", f"sentence has no tokens that {spec.name} reads (only spaces or controls)", "no_tokens"
        )
    if limit is not None and len(encoded) > limit:
        raise InputError(
            "sentence",
            f"sentence is {len(encoded)} tokens for {spec.name}; {limit_name} is {limit} tokens: shorten it",
            "too_many_tokens",
            ctx={"tokens": len(encoded), "limit": limit},
        )
    return encoded


_flights: dict[tuple[int, str, str], tuple[threading.Lock, int]] = {}  # key → (its lock, requests holding it)
_flights_lock = threading.Lock()


def trace_sentence(
    handle: ModelHandle,
    sentence: str,
    encoded: Encoded,
    backend: Backend,
    layers: int | None = None,
    observer: nn.Observer | None = None,
) -> Trace:
    """The sentence's trace through layers 0 … layers − 1 (None: all), `observer` seeing its weights.

    One forward however many requests ask: requests for one sentence of one model take turns here,
    so the next finds the first's trace in the model's cache (or continues it). Other sentences are
    not held up."""
    key = (id(handle), backend, sentence)
    with _flights_lock:
        lock, users = _flights.get(key, (threading.Lock(), 0))
        _flights[key] = (lock, users + 1)
    token = nn.observing(observer)
    try:
        with lock, np.errstate(over="ignore", invalid="ignore"):
            return handle.trace(sentence, encoded, backend, layers)
    finally:
        nn.stop_observing(token)
        with _flights_lock:
            users = _flights[key][1]
            if users == 1:
                del _flights[key]
            else:
                _flights[key] = (lock, users - 1)


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
    """Every stage of a selection, n × n: sentence_view in detail "full" (the quiz, the tiles, the
    inside rerun and the notebook read every cell; see app.model.select for the means)."""
    return sentence_view(handle, sentence, layer, head, mask, mask_given, backend, "full")


def _full(
    spec: ModelSpec, encoded: Encoded, trace: Trace, layer: LayerChoice, head: HeadChoice, mask: Mask, backend: Backend
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Every stage of a selection, n × n (detail "full")."""
    with np.errstate(over="ignore", invalid="ignore"):
        arrays = select(trace, layer, head, mask, backend)
    if not all(np.isfinite(arrays[name]).all() for name in ("weights", "output")):
        # never seen; never a NaN
        raise InputError("sentence", "the model's numbers overflowed for this sentence", "overflow")
    fields = {
        **_token_fields(spec, encoded),
        "layer": layer,
        "head": head,
        "mean_over": mean_over(layer, head),
        "mask": mask,
        "d_k": spec.head_size,
        "detail": "full",
    }
    return fields, arrays


def sentence_view(
    handle: ModelHandle,
    sentence: str,
    layer: LayerChoice | None,
    head: HeadChoice,
    mask: Mask | None,
    mask_given: bool,
    backend: Backend,
    detail: str | None = None,
    rows: list[int] | None = None,
    block: int | None = None,
    top_k: int | None = None,
    names: tuple[str, ...] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A sentence's view (the sentence mode of POST /api/attention), in the detail asked for or the
    one its length allows: every stage, n × n (detail "full", _full), up to the model's max_tokens;
    past that, up to sentence_tokens(spec), the focused rows and the table in blocks (detail
    "summary", summary_view). `names`: the arrays the answer will send (None: all), so a summary
    computes only those. One limit on the sentence (sentence_tokens) and one on the full view."""
    spec = handle.spec()
    asked = {"rows": rows, "block": block, "top_k": top_k}
    if detail == "full" and (name := next((f for f, x in asked.items() if x is not None), None)):
        raise InputError(name, f"{name} goes with detail 'summary' (the rows and blocks of a long sentence)")
    layer = 0 if layer is None else layer
    in_range("layer", layer, spec.layers, spec.name, " or 'mean'")
    in_range("head", head, spec.heads, spec.name, ", 'mean' or omitted")
    mask = _mask(spec, mask, mask_given)
    encoded = encode_sentence(handle, spec, sentence, sentence_tokens(spec), "the limit")
    n, full = len(encoded), spec.max_tokens
    if detail is None and n <= full and all(x is None for x in asked.values()):
        detail = "full"
    if detail == "full":
        if n > full:
            raise InputError(
                "detail", f"sentence is {n} tokens for {spec.name}; detail 'full' (every cell of the n × n stages) "
                f"goes up to {full} tokens: shorten it, or ask for detail 'summary' (the rows you name and the "
                "table in blocks)",
            )  # fmt: skip
        layers = layers_needed(layer, spec.layers)  # layers 0 … L only
        trace = trace_sentence(handle, sentence, encoded, backend, layers)
        return _full(spec, encoded, trace, layer, head, mask, backend)
    if not isinstance(layer, int) or not isinstance(head, int):
        field, value = ("layer", layer) if not isinstance(layer, int) else ("head", head)
        what = f"{value!r}" if value is not None else "all heads"
        raise InputError(
            field, f"a summary (a sentence of {n} tokens, or detail 'summary') shows one layer's one head, "
            f"not {what}: name the {field} (0 … {(spec.layers if field == 'layer' else spec.heads) - 1})",
        )  # fmt: skip
    return summary_view(handle, spec, sentence, encoded, layer, head, mask, backend, rows, block, top_k, names)


def summary_view(
    handle: ModelHandle,
    spec: ModelSpec,
    sentence: str,
    encoded: Encoded,
    layer: int,
    head: int,
    mask: Mask,
    backend: Backend,
    rows: list[int] | None,
    block: int | None,
    top_k: int | None,
    names: tuple[str, ...] | None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """One head of a sentence without its n × n table (detail "summary", app.lod):

      q, k, v, output                       (r, d) the `rows`' own vectors (default: the first ROWS)
      scores, scaled, masked, weights       (r, n) the rows' stages over every key, float64
      block_mean, block_peak                (B, B) the whole table in blocks of `block` tokens
      top_keys, top_weights                 (n, K) each query's K strongest keys

    Only the arrays in `names` are computed (the summary's when one of its own is asked for)."""
    n = len(encoded)
    if block is not None and not 1 <= block <= n:
        raise InputError("block", f"block must be 1 … {n} (the sentence's tokens), got {block}")
    rows = list(range(min(n, ROWS))) if rows is None else rows
    if bad := [r for r in rows if not 0 <= r < n]:
        raise InputError("rows", f"rows must be 0 … {n - 1} (the sentence's tokens), got {bad[0]}")
    trace = trace_sentence(handle, sentence, encoded, backend, layer + 1)  # layers 0 … L only
    q = trace.q[layer][head]  # (n, d) float32, the model's own
    k, v = trace.k[layer][head // spec.groups], trace.v[layer][head // spec.groups]  # its KV head's
    block = lod.default_block(n) if block is None else block
    top_k = lod.TOP if top_k is None else top_k
    wanted = set(names or (*ROW_ARRAYS, *SUMMARY_ARRAYS))
    arrays: dict[str, np.ndarray] = {}
    with np.errstate(over="ignore", invalid="ignore"):
        if wanted & set(ROW_ARRAYS):
            r = lod.rows(q, k, v, mask, rows)
            arrays |= {"q": q[rows].astype(np.float64), "k": k[rows].astype(np.float64),
                       "v": v[rows].astype(np.float64), "scores": r.scores, "scaled": r.scaled,
                       "masked": r.masked, "weights": r.weights, "output": r.output}  # fmt: skip
            if not (np.isfinite(r.weights).all() and np.isfinite(r.output).all()):
                raise InputError("sentence", "the model's numbers overflowed for this sentence")
        if wanted & set(SUMMARY_ARRAYS):
            s = lod.summarize(q, k, v, mask, block, top_k)
            arrays |= {"block_mean": s.mean, "block_peak": s.peak, "top_keys": s.top_keys,
                       "top_weights": s.top_weights}  # fmt: skip
    fields = {
        **_token_fields(spec, encoded),
        "layer": layer,
        "head": head,
        "mean_over": [],
        "mask": mask,
        "d_k": spec.head_size,
        "detail": "summary",
        "rows": rows,
        "block": block,
        "edges": lod.block_edges(n, block).tolist(),
        "top_k": min(top_k, n),
    }
    return fields, arrays


def heads_overview(
    handle: ModelHandle, sentence: str, mask: Mask | None, mask_given: bool, backend: Backend
) -> dict[str, Any]:
    """Every layer's and head's weights for the small-multiples overview, rounded (see limits)."""
    spec = spec_of(handle)
    mask = _mask(spec, mask, mask_given)
    limit = min(spec.max_tokens, limits.MAX_OVERVIEW_TOKENS)
    encoded = encode_sentence(handle, spec, sentence, limit, "the overview's limit")
    trace = trace_sentence(handle, sentence, encoded, backend)
    with np.errstate(over="ignore", invalid="ignore"):
        weights = np.round(all_weights(trace, mask, backend), limits.OVERVIEW_DECIMALS)  # (L, H, n, n)
    if not np.isfinite(weights).all():
        raise InputError("sentence", "the model's numbers overflowed for this sentence", "overflow")
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
    # every layer's q and k, the last layer left open: its weights are all the overview needs
    # of it (Collector.summary computes them), not its output projection and feed-forward
    trace = trace_sentence(handle, sentence, encoded, backend, spec.layers, collector if mask == own else None)
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
    encoded = encode_sentence(handle, spec, sentence, spec.max_tokens, "the limit")
    s = summary_of(handle, sentence, encoded, mask, backend)
    if not (np.isfinite(s.pooled).all() and np.isfinite(s.entropy).all() and np.isfinite(s.distance).all()):
        raise InputError("sentence", "the model's numbers overflowed for this sentence", "overflow")
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
        "max_tokens": sentence_tokens(spec),
        "full_tokens": spec.max_tokens,
        "max_positions": spec.max_positions,
        "overview_max_tokens": min(spec.max_tokens, limits.MAX_OVERVIEW_TOKENS),
        "mask": "causal" if spec.causal else "full",
        "loaded": handle.loaded,
        "loading": handle.loading,
        "load_seconds": round(model.load_seconds, 6) if model else None,
    }
