"""Looking inside a model, as plain functions the routes and the notebook run in a worker thread.

  POST /api/rollout   {"model", "sentence", "method", "focus", "mask"} → attention through all layers
                      (app.model.rollout): every layer's n × n, and the focused token's paths
  POST /api/ablate    {"model", "sentence" | "prompt", "heads", "layer", "head"} → a head's view with
                      and without the heads switched off, the final vectors' cosines, a decoder's
                      next-token candidates before and after (app.model.ablate)
  POST /api/lens      {"model", "prompt", "position"} → every layer's guess for the next token

Rejections name the field and its limit (422); a model that cannot be loaded is a 503.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from app import limits
from app.attention import Backend, Mask
from app.errors import InputError
from app.model import ablate, registry, rollout, service
from app.model.generate import probabilities
from app.model.loader import ModelHandle
from app.model.rollout import Method
from app.model.select import HeadChoice, LayerChoice, all_weights, select
from app.model.spec import ModelSpec
from app.model.tokenizer import Encoded
from app.model.trace import Trace

DECIMALS = 6  # the answers' shares, rounded (1e-6 is the precision the tests hold them to)
PATH_MIN = 0.005  # focus paths: edges carrying less than this share of the focus are left out
PATHS_PER_LAYER = 64  # … and at most this many per layer, the largest


def flow_tokens(spec: ModelSpec, causal: bool) -> int:
    """The most tokens a flow answer reads on this model, its focus's paths only (rollout.focus_work)
    within limits.FLOW_FOCUS_MAX_WORK, and never more than limits.MAX_ROLLOUT_TOKENS."""
    return _most_tokens(lambda n: rollout.focus_work(spec.layers, n, causal) <= limits.FLOW_FOCUS_MAX_WORK)


def flow_table_tokens(spec: ModelSpec, causal: bool) -> int:
    """The most tokens a flow answer reads with every layer's n × n table (rollout.flow_work within
    limits.FLOW_MAX_WORK); past it and up to flow_tokens, it has the focus's paths only."""
    return _most_tokens(lambda n: rollout.flow_work(spec.layers, n, causal) <= limits.FLOW_MAX_WORK)


def _most_tokens(affordable: Callable[[int], bool]) -> int:
    n = 1
    while n < limits.MAX_ROLLOUT_TOKENS and affordable(n + 1):
        n += 1
    return n


def no_tables(spec: ModelSpec, n: int, table_tokens: int) -> str:
    """Why a flow answer has no table per layer (its `layers_omitted`)."""
    return (f"every layer's n × n flow table is n² maximum flows a layer, affordable up to {table_tokens} tokens "
            f"on {spec.name} and this sentence has {n}: only the focus's paths are given")  # fmt: skip


_flows: OrderedDict[tuple[Any, ...], np.ndarray] = OrderedDict()  # recent flow answers: seconds each
_flows_lock = threading.Lock()
_FLOWS_KEPT = 16


def _kept(key: tuple[Any, ...], compute: Callable[[], np.ndarray]) -> np.ndarray:
    """compute(), or its answer for the same key if it is one of the recent ones (a class asks the same)."""
    with _flows_lock:
        if key in _flows:
            _flows.move_to_end(key)
            return _flows[key]
    out = compute()
    with _flows_lock:
        _flows[key] = out
        while len(_flows) > _FLOWS_KEPT:
            _flows.popitem(last=False)
    return out


def _layers(key: tuple[Any, ...], a_hat: np.ndarray, method: Method) -> np.ndarray:
    if method == "rollout":
        return rollout.rollout(a_hat)  # a millisecond: not kept
    return _kept(key, lambda: rollout.flow(a_hat))


def _through(key: tuple[Any, ...], a_hat: np.ndarray, method: Method, focus: int) -> np.ndarray:
    if method == "rollout":
        return rollout.rollout_through(a_hat, focus)
    return _kept((*key, focus), lambda: rollout.flow_through(a_hat, focus))


def paths(a_hat: np.ndarray, through: np.ndarray) -> list[list[float]]:
    """The focus's paths as [layer, a, b, share]: the share of the focus on the edge from token a after
    `layer` to token b below it, through[layer][a] · Â_layer[a, b] — how the share at a splits over what
    the layer mixed into it (for rollout these add up to through[layer − 1]). The largest per layer."""
    out: list[list[float]] = []
    for layer in range(a_hat.shape[0], 0, -1):
        share = through[layer][:, None] * a_hat[layer - 1]  # (n, n) [a, b]
        a, b = np.nonzero(share >= PATH_MIN)
        order = np.argsort(-share[a, b], kind="stable")[:PATHS_PER_LAYER]
        out += [[layer, int(a[k]), int(b[k]), round(float(share[a[k], b[k]]), DECIMALS)] for k in order]
    return out


def attention_through_layers(
    handle: ModelHandle,
    sentence: str,
    method: Method,
    focus: int | None,
    mask: Mask | None,
    mask_given: bool,
    backend: Backend,
) -> dict[str, Any]:
    """Rollout or flow of a sentence (see app.model.rollout), every layer's n × n, and the focus's paths."""
    spec = service.spec_of(handle)
    mask = service._mask(spec, mask, mask_given)
    limit = min(spec.max_tokens, limits.MAX_ROLLOUT_TOKENS)
    encoded = service.encode_sentence(handle, spec, sentence, limit, f"{method}'s limit")
    n = len(encoded)
    causal = mask == "causal"
    most, tables = flow_tokens(spec, causal), flow_table_tokens(spec, causal)
    if method == "flow" and n > most:
        msg = (f"sentence is {n} tokens for {spec.name}; flow's limit there is {most} (the focus's paths: n "
               f"maximum flows a layer, through {spec.layers} layers): shorten it, or ask for rollout "
               f"(up to {limit})")  # fmt: skip
        raise InputError("sentence", msg)
    if focus is not None and not 0 <= focus < n:
        raise InputError("focus", f"focus must be 0 … {n - 1}: the sentence has {n} tokens")
    paths_only = method == "flow" and n > tables
    if paths_only and focus is None:
        focus = n - 1  # the answer is the focus's paths: the last token's, unless one is asked for
    trace = service.trace_sentence(handle, sentence, encoded, backend)
    with np.errstate(over="ignore", invalid="ignore"):
        weights = all_weights(trace, mask, backend)  # (L, H, n, n)
    if not np.isfinite(weights).all():
        raise InputError("sentence", "the model's numbers overflowed for this sentence")
    a_hat = rollout.mixed(weights)  # (L, n, n)
    key = (id(handle), backend, mask, sentence)
    out: dict[str, Any] = {
        **service._token_fields(spec, encoded),
        "method": method,
        "mask": mask,
        "attention": np.round(weights.mean(axis=1), DECIMALS),  # (L, n, n) the heads' mean A per layer
        "layers": None if paths_only else np.round(_layers(key, a_hat, method), DECIMALS),
        "layers_omitted": no_tables(spec, n, tables) if paths_only else None,
        "decimals": DECIMALS,
        "flow_max_tokens": most,
        "flow_table_tokens": tables,
    }
    if focus is not None:
        through = _through(key, a_hat, method, focus)  # (L + 1, n)
        out["focus"] = focus
        out["focus_paths"] = {"through": np.round(through, DECIMALS), "edges": paths(a_hat, through)}
    return out


# ---- switching heads off, every layer's guess ---------------------------------------------------

CANDIDATES = 10  # next-token candidates before and after
LENS_TOP = 5  # guesses per layer


def heads_off(spec: ModelSpec, heads: list[tuple[int, int]], field: str = "heads") -> list[tuple[int, int]]:
    """The [layer, head] pairs of field `field` checked against the model (an InputError naming the pair
    and the limit), sorted, each once."""
    for k, (layer, head) in enumerate(heads):
        if not 0 <= layer < spec.layers:
            msg = f"{field}[{k}]: layer must be 0 … {spec.layers - 1} ({spec.name} has {spec.layers} layers)"
            raise InputError(field, msg)
        if not 0 <= head < spec.heads:
            msg = f"{field}[{k}]: head must be 0 … {spec.heads - 1} ({spec.name} has {spec.heads} heads a layer)"
            raise InputError(field, msg)
    return sorted(set(heads))


def _decoder(spec: ModelSpec, what: str) -> None:
    if spec.kind != "llama":
        raise InputError("model", f"{what} reads a decoder's next-token scores: {spec.name} is a {spec.kind.upper()} "
                                  f"model; use {registry.DECODER_ID!r}")  # fmt: skip


def _text(handle: ModelHandle, spec: ModelSpec, text: str, field: str) -> Encoded:
    """The text's tokens, checked against the model's limit."""
    if not text.strip():
        raise InputError(field, f"{field} is empty: type at least one word")
    encoded = handle.encode(text)
    if encoded.content == 0:
        raise InputError(field, f"{field} has no tokens that {spec.name} reads (only spaces or controls)")
    if len(encoded) > spec.max_tokens:
        raise InputError(field, f"{field} is {len(encoded)} tokens for {spec.name}; the limit is {spec.max_tokens}")
    return encoded


def _text_trace(handle: ModelHandle, spec: ModelSpec, text: str, field: str, backend: Backend) -> tuple[Encoded, Trace]:
    """The text's tokens and its whole trace (the model's cache answers a text seen lately)."""
    encoded = _text(handle, spec, text, field)
    trace = service.trace_sentence(handle, text, encoded, backend)
    return encoded, trace


def switched_off(
    handle: ModelHandle,
    text: str,
    field: str,
    heads: list[tuple[int, int]],
    layer: int | None,
    head: int,
    backend: Backend,
) -> dict[str, Any]:
    """A text with `heads` switched off (app.model.ablate): head `head` of `layer` (default: the last)
    with and without, each token's final vector's cosine before · after, and a decoder's next-token
    candidates before and after."""
    spec = service.spec_of(handle)
    heads = heads_off(spec, heads)
    layer = spec.layers - 1 if layer is None else layer
    if not 0 <= layer < spec.layers:
        raise InputError("layer", f"layer must be 0 … {spec.layers - 1} ({spec.name} has {spec.layers} layers)")
    if not 0 <= head < spec.heads:
        raise InputError("head", f"head must be 0 … {spec.heads - 1} ({spec.name} has {spec.heads} heads)")
    encoded, before = _text_trace(handle, spec, text, field, backend)
    model = handle.model()
    with np.errstate(over="ignore", invalid="ignore"):
        after = ablate.rerun(model, encoded.ids, before, heads, backend)
        mask: Mask = "causal" if spec.causal else "full"
        views = [all_weights(Trace(t.q[layer : layer + 1], t.k[layer : layer + 1], t.v[layer : layer + 1], []),
                             mask, backend)[0, head] for t in (before, after)]  # fmt: skip
        cos = ablate.cosine(before.hidden[-1], after.hidden[-1])  # (n,)
    out: dict[str, Any] = {
        **service._token_fields(spec, encoded),
        "heads": [list(h) for h in heads],
        "layer": layer,
        "head": head,
        "layers": spec.layers,
        "heads_per_layer": spec.heads,
        "first_layer": heads[0][0] if heads else None,
        "weights": {"before": np.round(views[0], DECIMALS), "after": np.round(views[1], DECIMALS)},
        "cosine": np.round(cos, DECIMALS + 2),
    }
    if spec.kind == "llama":
        out["candidates"] = {
            name: ablate.top(model, ablate.unembed(model, t.hidden[-1][-1]), CANDIDATES)
            for name, t in (("before", before), ("after", after))
        }
    return out


def every_layers_guess(handle: ModelHandle, prompt: str, position: int | None, backend: Backend) -> dict[str, Any]:
    """The logit lens of a decoder at `position` (default: the last token): every layer's top guesses
    for the next token, the final answer, and the first layer whose top guess it is."""
    spec = service.spec_of(handle)
    _decoder(spec, "the lens")
    encoded = _text(handle, spec, prompt, "prompt")
    n = len(encoded)
    position = n - 1 if position is None else position
    if not 0 <= position < n:
        raise InputError("position", f"position must be 0 … {n - 1}: the prompt has {n} tokens")
    model = handle.model()
    with np.errstate(over="ignore", invalid="ignore"):
        guesses = ablate.lens(model, encoded.ids, position, LENS_TOP, backend)  # the embedding, layers 0 … L − 1
    answer = guesses[-1][0]
    first = next(i for i, g in enumerate(guesses) if g[0]["id"] == answer["id"]) - 1
    return {
        **service._token_fields(spec, encoded),
        "position": position,
        "vocab": spec.vocab,
        "layers": [{"layer": i - 1, "top": g} for i, g in enumerate(guesses)],
        "answer": {"token": answer["token"], "id": answer["id"]},
        "first_top": first,
    }


def ablated_attention(
    handle: ModelHandle,
    sentence: str,
    heads: list[tuple[int, int]],
    layer: LayerChoice | None,
    head: HeadChoice,
    mask: Mask | None,
    mask_given: bool,
    backend: Backend,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The sentence mode of POST /api/attention (app.model.service.sentence_attention) with `heads`
    switched off: every stage of the chosen layer and head recomputed from the rerun's q, k, v (the
    notebook's show(…, ablate=…)); the fields gain "ablate", the heads as checked."""
    spec = service.spec_of(handle)
    heads = heads_off(spec, heads, "ablate")
    fields, arrays = service.sentence_attention(handle, sentence, layer, head, mask, mask_given, backend)
    if not heads:
        return {**fields, "ablate": []}, arrays
    encoded = handle.encode(sentence)
    before = service.trace_sentence(handle, sentence, encoded, backend)
    with np.errstate(over="ignore", invalid="ignore"):
        after = ablate.rerun(handle.model(), encoded.ids, before, heads, backend)
        arrays = select(after, fields["layer"], fields["head"], fields["mask"], backend)
    return {**fields, "ablate": [list(h) for h in heads]}, arrays


def next_word_without(
    handle: ModelHandle, prompt: str, heads: list[tuple[int, int]], backend: Backend
) -> tuple[str, float, float]:
    """The decoder's likeliest next token after `prompt`, its probability, and its probability with
    `heads` switched off (a class question's answer: what a head takes away from the next word)."""
    spec = service.spec_of(handle)
    _decoder(spec, "the next word")
    heads = heads_off(spec, heads)
    encoded, before = _text_trace(handle, spec, prompt, "prompt", backend)
    model = handle.model()
    with np.errstate(over="ignore", invalid="ignore"):
        after = ablate.rerun(model, encoded.ids, before, heads, backend)
        p_before, p_after = (probabilities(ablate.unembed(model, t.hidden[-1][-1])) for t in (before, after))  # (V,)
    best = int(np.argmax(p_before))
    return model.tokenizer.piece(best), float(p_before[best]), float(p_after[best])
