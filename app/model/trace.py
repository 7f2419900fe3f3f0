"""What one forward pass keeps: every layer's per-head Q, K, V and the residual stream."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Trace:
    """One sentence through the model, or through its first layers. Arrays are float32 and read-only.

    q, k, v   one (h, n, d) array per layer run: the real per-head queries, keys and values
    hidden    the embeddings, then the output of each layer that has run to its end (as
              transformers' hidden_states; GPT-2's last one is after the final LayerNorm once
              every layer has run): layers + 1 arrays (n, C), or layers when the last layer is open

    A view of layer L needs layers 0 … L − 1 and layer L's q, k, v only: a partial trace leaves
    its last layer open (its q, k, v known, its attention and feed-forward not run) and is
    extended when a later layer is asked for (Model.forward(ids, layers=…, start=trace,
    open_last=…)); Model.forward(ids) runs them all to the end.
    """

    q: list[np.ndarray]
    k: list[np.ndarray]
    v: list[np.ndarray]
    hidden: list[np.ndarray]

    def __post_init__(self) -> None:
        for arrays in (self.q, self.k, self.v, self.hidden):
            for a in arrays:
                a.flags.writeable = False

    @property
    def layers(self) -> int:
        """How many layers have run."""
        return len(self.q)

    @property
    def complete(self) -> bool:
        """Whether every layer that has q, k, v has also run to its end (its output is in hidden)."""
        return len(self.hidden) == len(self.q) + 1

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for arrays in (self.q, self.k, self.v, self.hidden) for a in arrays)


def extend(
    trace: Trace,
    stop: int,
    open_last: bool,
    o: Any,
    qkv: Callable[[int, Any], list[Any]],
    rest: Callable[[int, Any, Any, Any, Any], Any],
    shown: Callable[[int, Any], Any] = lambda i, x: x,
) -> Trace:
    """`trace` run on to layer stop − 1, the same loop for every model kind.

    o         the backend's ops (app.model.nn.NumpyOps or TorchOps): arrays in and out
    qkv       (i, x) → layer i's per-head q, k, v from its input x
    rest      (i, x, q, k, v) → layer i's output
    shown     (i, output) → what hidden keeps for layer i (GPT-2: the final LayerNorm after the last)
    open_last the last layer stops at its q, k, v; a later call finishes it with those same q, k, v
    """
    qs, ks, vs, hidden = [*trace.q], [*trace.k], [*trace.v], [*trace.hidden]
    x = o.array(hidden[-1])  # (n, C)
    for i in range(len(hidden) - 1, stop):
        if i < len(qs):  # the trace's open layer: its q, k, v are known
            q, k, v = (o.array(a) for a in (qs[i], ks[i], vs[i]))
        else:
            q, k, v = qkv(i, x)  # 3 × (h, n, d)
            qs.append(o.numpy(q))
            ks.append(o.numpy(k))
            vs.append(o.numpy(v))
            if open_last and i == stop - 1:
                break
        x = rest(i, x, q, k, v)  # (n, C)
        hidden.append(o.numpy(shown(i, x)))
    return Trace(qs, ks, vs, hidden)
