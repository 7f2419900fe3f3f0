"""Looking inside a model, as plain functions the routes and the notebook run in a worker thread.

  POST /api/rollout   {"model", "sentence", "method", "focus", "mask"} → attention through all layers
                      (app.model.rollout): every layer's n × n, and the focused token's paths

Rejections name the field and its limit (422); a model that cannot be loaded is a 503.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from app import limits
from app.attention import Backend, Mask
from app.errors import InputError
from app.model import rollout, service
from app.model.loader import ModelHandle
from app.model.rollout import Method
from app.model.select import all_weights
from app.model.spec import ModelSpec

DECIMALS = 6  # the answers' shares, rounded (1e-6 is the precision the tests hold them to)
PATH_MIN = 0.005  # focus paths: edges carrying less than this share of the focus are left out
PATHS_PER_LAYER = 64  # … and at most this many per layer, the largest


def flow_tokens(spec: ModelSpec, causal: bool) -> int:
    """The most tokens a flow answer reads on this model: its work (rollout.flow_work) within
    limits.FLOW_MAX_WORK, and never more than limits.MAX_ROLLOUT_TOKENS."""
    n = 1
    while n < limits.MAX_ROLLOUT_TOKENS and rollout.flow_work(spec.layers, n + 1, causal) <= limits.FLOW_MAX_WORK:
        n += 1
    return n


_flows: OrderedDict[tuple[Any, ...], np.ndarray] = OrderedDict()  # recent flow answers' layers: seconds each
_flows_lock = threading.Lock()
_FLOWS_KEPT = 8


def _layers(key: tuple[Any, ...], a_hat: np.ndarray, method: Method) -> np.ndarray:
    if method == "rollout":
        return rollout.rollout(a_hat)  # a millisecond: not kept
    with _flows_lock:
        if key in _flows:
            _flows.move_to_end(key)
            return _flows[key]
    out = rollout.flow(a_hat)
    with _flows_lock:
        _flows[key] = out
        while len(_flows) > _FLOWS_KEPT:
            _flows.popitem(last=False)
    return out


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
    encoded = service._encode(handle, spec, sentence, limit, f"{method}'s limit")
    n = len(encoded)
    if method == "flow" and n > (most := flow_tokens(spec, mask == "causal")):
        msg = (f"sentence is {n} tokens for {spec.name}; flow's limit there is {most} (n² maximum flows through "
               f"{spec.layers} layers): shorten it, or ask for rollout (up to {limit})")  # fmt: skip
        raise InputError("sentence", msg)
    if focus is not None and not 0 <= focus < n:
        raise InputError("focus", f"focus must be 0 … {n - 1}: the sentence has {n} tokens")
    with service._one_flight(handle, backend, sentence):
        trace = service._trace(handle, sentence, encoded, backend)
    with np.errstate(over="ignore", invalid="ignore"):
        weights = all_weights(trace, mask, backend)  # (L, H, n, n)
    if not np.isfinite(weights).all():
        raise InputError("sentence", "the model's numbers overflowed for this sentence")
    a_hat = rollout.mixed(weights)  # (L, n, n)
    layers = _layers((id(handle), backend, mask, sentence), a_hat, method)
    out: dict[str, Any] = {
        **service._token_fields(spec, encoded),
        "method": method,
        "mask": mask,
        "layers": np.round(layers, DECIMALS),
        "decimals": DECIMALS,
        "flow_max_tokens": flow_tokens(spec, mask == "causal"),
    }
    if focus is not None:
        through = rollout.through_layers(a_hat, method, focus)  # (L + 1, n)
        out["focus"] = focus
        out["focus_paths"] = {"through": np.round(through, DECIMALS), "edges": paths(a_hat, through)}
    return out
