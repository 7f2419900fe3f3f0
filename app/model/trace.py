"""What one forward pass keeps: every layer's per-head Q, K, V and the residual stream."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GONE = np.empty(0, dtype=np.float32)  # a dropped layer's place in a trace's lists
GONE.flags.writeable = False


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

    dropped   a long sentence's view keeps what it shows and no more (~25 MB a layer at 4,096
              tokens): layers 0 … dropped − 1 ran, but their q, k, v and their inputs hidden[0 …
              dropped − 1] are GONE (empty arrays keep the indices); hidden[-1] always stays, for
              the rows to flow on when a later layer is asked for.
    """

    q: list[np.ndarray]
    k: list[np.ndarray]
    v: list[np.ndarray]
    hidden: list[np.ndarray]
    dropped: int = 0

    def __post_init__(self) -> None:
        for arrays in (self.q, self.k, self.v, self.hidden):
            for a in arrays:
                a.flags.writeable = False

    def holds(self, layer: int) -> bool:
        """Whether layer `layer`'s q, k, v are here (it has run and was not dropped)."""
        return self.dropped <= layer < len(self.q)

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
