"""One forward pass for every model kind (BERT, GPT-2, Llama): what a kind supplies, and the run.

A kind's module supplies its Parts for the weights as its backend holds them: how ids become the
first hidden state, how layer i's input becomes its per-head q, k, v, how those become the
layer's output, and what the trace keeps of a layer's output (GPT-2 and Llama: the last one after
the final norm, as transformers reports it). forward_of() makes the kind's forward() of them;
app.model.trace.extend runs the layers, so a view of layer L runs layers 0 … L only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.attention import Backend
from app.model.nn import NumpyOps, ops
from app.model.spec import ModelSpec
from app.model.trace import Trace, extend
from app.model.weights import Weights


@dataclass(frozen=True)
class Parts:
    embed: Callable[[list[int]], Any]  # ids → the first hidden state (n, C)
    qkv: Callable[[int, Any], list[Any]]  # (i, layer i's input x (n, C)) → per-head q, k, v
    rest: Callable[[int, Any, Any, Any, Any], Any]  # (i, x, q, k, v) → layer i's output (n, C)
    shown: Callable[[int, Any], Any] = field(default=lambda i, x: x)  # (i, output) → what the trace keeps


Forward = Callable[[list[int], Weights, ModelSpec, Backend, int | None, Trace | None, bool], Trace]


def forward_of(
    parts: Callable[[Any, ModelSpec, NumpyOps], Parts], prepare: Callable[[Weights, ModelSpec], None] | None = None
) -> Forward:
    """The forward() of a kind whose Parts `parts(w, spec, o)` gives (w: the weights on backend o);
    `prepare(weights, spec)` runs first, once per call (Llama joins its matrices once per model)."""

    def forward(
        ids: list[int],
        weights: Weights,
        spec: ModelSpec,
        backend: Backend = "numpy",
        layers: int | None = None,
        start: Trace | None = None,
        open_last: bool = False,
    ) -> Trace:
        """The trace of layers 0 … layers − 1 (all by default), continuing `start`, a shorter trace of
        the same ids, when given: a view of layer L needs only the layers up to L. open_last: the
        last layer stops at its q, k, v (all a view of it shows); a later call finishes it."""
        if prepare is not None:
            prepare(weights, spec)
        o = ops(backend)
        p = parts(o.weights(weights), spec, o)
        with o.placed():  # the threads on CPUs of their own while the machine is quiet (nn.placed)
            trace = start or Trace([], [], [], [o.numpy(p.embed(ids))])
            stop = spec.layers if layers is None else layers
            return extend(trace, stop, open_last, o, p.qkv, p.rest, p.shown)

    return forward
