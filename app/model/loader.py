"""Loading a model once, lazily and thread-safely, and remembering recent sentences.

One ModelHandle per model directory (handle_for): the first request that needs the weights
loads them in its worker thread while others wait on the lock; the event loop never blocks.
A small LRU cache keeps the last few sentences' traces (per-head Q, K, V of the layers run so
far), so a view that walks through layers and heads runs each layer once per sentence, and a
view of layer L runs only layers 0 … L.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from app import limits
from app.attention import Backend
from app.model import forward
from app.model.families import FAMILIES
from app.model.spec import ModelSpec, read_spec
from app.model.tokenizer import Encoded, TextTokenizer, load_tokenizer
from app.model.trace import Trace
from app.model.weights import Weights, load_weights


@dataclass(frozen=True)
class Model:
    spec: ModelSpec
    weights: Weights
    tokenizer: TextTokenizer
    load_seconds: float

    def forward(
        self,
        ids: list[int],
        backend: Backend = "numpy",
        layers: int | None = None,
        start: Trace | None = None,
        open_last: bool = False,
        drop: int = 0,
    ) -> Trace:
        """The trace of every layer, or of layers 0 … layers − 1, continuing `start` (a trace of the
        same ids through fewer layers) when given; open_last stops the last layer at its q, k, v;
        layers 0 … drop − 1 keep nothing once run (Trace.dropped)."""
        if not 1 <= len(ids) <= self.spec.max_positions:
            raise ValueError(f"{len(ids)} tokens; {self.spec.name} reads 1 … {self.spec.max_positions}")
        if layers is not None and not 0 <= layers <= self.spec.layers:
            raise ValueError(f"layers must be 0 … {self.spec.layers}, got {layers}")
        return forward.trace(ids, self.weights, self.spec, backend, layers, start, open_last, drop=drop)


def load(spec: ModelSpec) -> Model:
    """Read the weights and the tokenizer of `spec` (no caching: see ModelHandle)."""
    start = time.perf_counter()
    family = FAMILIES[spec.kind]
    if family.read_joined is not None and not (spec.path / "model.safetensors").is_file():  # a converted GGUF file
        weights = family.read_joined(spec.path, spec)
    else:
        weights = load_weights(spec.path / "model.safetensors", tuple(family.tensors(spec)))
    tokenizer = load_tokenizer(spec.path / "tokenizer.json")
    return Model(spec, weights, tokenizer, time.perf_counter() - start)


class ModelHandle:
    """A model directory whose config is read on first use and whose weights load on first need."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._spec: ModelSpec | None = None
        self._model: Model | None = None
        self._cache: OrderedDict[str, tuple[Encoded, Trace]] = OrderedDict()
        self._cache_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def loading(self) -> bool:
        return self._model is None and self._lock.locked()

    def spec(self) -> ModelSpec:
        """config.json's facts, read once (cheap: no weights). Raises ModelError."""
        if self._spec is None:
            self._spec = read_spec(self.path)
        return self._spec

    def model(self) -> Model:
        """The loaded model, loading it on the first call (other callers wait). Raises ModelError."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = load(self.spec())
        return self._model

    def encode(self, sentence: str) -> Encoded:
        """The sentence's tokens: a sentence whose trace is cached (any backend) is not tokenized
        again (0.45 ms for 345 tokens; a view's layer or head, and the overview, ask for it again)."""
        with self._cache_lock:
            for backend in get_args(Backend):
                cached = self._cache.get(f"{backend}\0{sentence}")
                if cached is not None:
                    return cached[0]
        return self.model().tokenizer.encode(sentence)

    def cached(self, sentence: str, backend: Backend) -> Trace | None:
        """The sentence's trace in the cache, if any (what the server holds for it)."""
        with self._cache_lock:
            got = self._cache.get(f"{backend}\0{sentence}")
        return None if got is None else got[1]

    def trace(self, sentence: str, encoded: Encoded, backend: Backend, layers: int | None = None) -> Trace:
        """The forward pass of an encoded sentence through `layers` layers (all by default).

        A sentence seen lately answers from the cache; when its cached trace stops short of the
        layers asked for, it is extended from where it stopped. A view (layers given) needs the
        last layer's q, k, v only, so that layer is left open: a view of layer 2 runs layers 0 and
        1 and layer 2's projections, and a later look at layer 5 finishes layer 2 and goes on.
        layers=None runs every layer to its end.

        A long sentence (past limits.MAX_TOKENS: its view is a summary of one layer) keeps only the
        layer asked for: its q, k, v and its input (~25 MB at 4,096 tokens for SmolLM2, where
        every layer would be ~760 MB at layer 29); the earlier layers are let go as the rows flow
        on (Trace.dropped). A later layer continues it; an earlier one runs again from the start.
        """
        model = self.model()
        want = model.spec.layers if layers is None else layers
        drop = max(want - 1, 0) if layers is not None and len(encoded.ids) > limits.MAX_TOKENS else 0

        def serves(t: Trace) -> bool:
            return t.layers >= want and (layers is not None or t.complete) and t.dropped <= drop

        key = f"{backend}\0{sentence}"
        with self._cache_lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                if serves(cached[1]):
                    return cached[1]
        # continued only up the layers, and only from what it still holds
        start = cached[1] if cached is not None and cached[1].layers <= want and cached[1].dropped <= drop else None
        trace = model.forward(encoded.ids, backend, want, start, open_last=layers is not None, drop=drop)
        with self._cache_lock:
            now = self._cache.get(key)
            # a concurrent request may have gone further; a long sentence keeps the layer its view shows now
            if now is None or (now[1].layers, now[1].complete) < (trace.layers, trace.complete) or drop:
                self._cache[key] = (encoded, trace)
            while len(self._cache) > 1 and (
                len(self._cache) > limits.MODEL_CACHE_SENTENCES
                or sum(t.nbytes for _, t in self._cache.values()) > limits.MODEL_CACHE_BYTES
            ):
                self._cache.popitem(last=False)  # the least recently used
        return trace


_handles: dict[str, ModelHandle] = {}
_handles_lock = threading.Lock()


def handle_for(path: str | Path | None) -> ModelHandle:
    """The one handle of a model directory (None or "" is the default model)."""
    key = str(Path(path).resolve()) if path else ""
    with _handles_lock:
        if key not in _handles:
            _handles[key] = ModelHandle(Path(key) if key else None)
        return _handles[key]
