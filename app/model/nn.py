"""The small building blocks of both forward passes (float32 in, float32 out), in NumPy, and the
same operations in torch (TorchOps) for ATTENTION_BACKEND=torch, on a GPU when there is one.

References:
  Ba et al., "Layer Normalization" (2016).
  Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)" (2016): GELU(x) = x·Φ(x).
  Abramowitz & Stegun, Handbook of Mathematical Functions (1964), 7.1.26: erf to 1.5e-7.
"""

from __future__ import annotations

import contextvars
import math
import os
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from app.attention import Backend, Mask, visible
from app.model.weights import Weights

T = TypeVar("T")
R = TypeVar("R")

# Abramowitz & Stegun 7.1.26: erf(x) = 1 − (a1 t + … + a5 t⁵) e^(−x²), t = 1/(1 + p x), x ≥ 0.
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _tail(a: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """scale · (a1 t + … + a5 t⁵) e^(−a²) for a = |x| ≥ 0: scale · (1 − erf(a)), to 1.5e-7 · scale.

    In a's dtype, on two new arrays of its size and in place after that: the FFN applies it to
    n × 1536 numbers a layer, and each new array of that size costs more than a pass over it.
    """
    one = a.dtype.type
    t: np.ndarray = a * one(_P)
    t += 1
    np.divide(1, t, out=t)  # t = 1 / (1 + p·a) (the same quotient as np.reciprocal's, in half its time)
    poly: np.ndarray = t * one(scale * _A[4])
    for coef in (_A[3], _A[2], _A[1], _A[0]):  # Horner: (((a5 t + a4) t + a3) t + a2) t + a1, then · t
        poly += one(scale * coef)
        poly *= t
    np.square(a, out=t)
    np.negative(t, out=t)
    np.exp(t, out=t)  # e^(−a²)
    poly *= t
    return poly


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, |error| ≤ 1.5e-7 (NumPy has none; scipy is not a dependency)."""
    y = _tail(np.abs(x))
    np.subtract(1, y, out=y)  # erf(|x|)
    out: np.ndarray = np.copysign(y, x, out=y)  # erf is odd
    return out


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)): BERT's hidden_act "gelu".

    With z = |x|/√2 and erf(z) = 1 − tail(z): x·Φ(x) = max(x, 0) − |x|·tail(z)/2 for either sign
    of x, which needs no sign fixing (copysign alone took a quarter of the time erf takes).
    max(x, 0) is made as (x + |x|)/2, the same number (x + x and the halving are exact, and
    x + |x| is 0 for x < 0; x + x overflows past 1.7e38, far beyond any activation of a normed
    input), in passes that together take 0.6× np.maximum's one.
    """
    z: np.ndarray = np.abs(x)
    z *= x.dtype.type(1 / math.sqrt(2))  # |x|/√2
    y = _tail(z, 1 / math.sqrt(2))  # tail(z)/√2
    y *= z  # |x|·tail(z)/2
    np.abs(x, out=z)
    z += x
    z *= x.dtype.type(0.5)  # max(x, 0)
    z -= y
    return z


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GPT-2's "gelu_new": x/2·(1 + tanh(√(2/π)·(x + 0.044715 x³)))."""
    y: np.ndarray = x * x
    y *= 0.044715
    y += 1.0
    y *= x  # x + 0.044715 x³
    y *= math.sqrt(2 / math.pi)
    np.tanh(y, out=y)
    y += 1.0
    y *= x
    y *= 0.5
    return y


def silu(x: np.ndarray) -> np.ndarray:
    """x·σ(x) = x / (1 + e^(−x)) (Llama's SwiGLU gate), on one new array."""
    y: np.ndarray = np.negative(x)
    np.exp(y, out=y)
    y += 1.0
    np.divide(x, y, out=y)
    return y


ACTIVATIONS = {
    "gelu": gelu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu_fast": gelu_tanh, "silu": silu,
}  # fmt: skip


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """Normalise each row to mean 0, variance 1 (biased), then scale and shift.

    The row means are products with a vector of 1/C (BLAS: quicker than .mean() along rows), and
    each step after the centring works in place: 0.67× the time of the plain five-array form."""
    avg = np.full(x.shape[-1], 1 / x.shape[-1], dtype=x.dtype)  # (C,)
    centred: np.ndarray = x - (x @ avg)[..., None]  # (n, C)
    var = np.square(centred) @ avg  # (n,)
    centred *= (1 / np.sqrt(var + x.dtype.type(eps)))[..., None]
    centred *= weight
    centred += bias
    return centred  # (n, C)


def split_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(n, h·d) → (h, n, d): the columns of head i are i·d … (i+1)·d − 1."""
    n, width = x.shape
    return np.ascontiguousarray(x.reshape(n, heads, width // heads).transpose(1, 0, 2))  # (h, n, d)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(h, n, d) → (n, h·d), the inverse of split_heads."""
    h, n, d = x.shape
    return np.ascontiguousarray(x.transpose(1, 0, 2).reshape(n, h * d))  # (n, h·d)


_ROWS = 256  # at most this many tokens per block of rows: a block's n × 4C activations (1.5 MB for
# MiniLM) stay in a core's L2 cache; fewer, larger blocks than 128 made a 345-token forward 0.85× as long
PARALLEL_ROWS = 64  # sentences shorter than this run on one thread: splitting them costs more than it saves
WORKERS = max(1, os.cpu_count() or 1)
_helpers: list[threading.Thread] = []  # the pool: WORKERS − 1 threads, started on first need
_calls: queue.SimpleQueue[_Call[Any, Any]] = queue.SimpleQueue()  # work the helpers may join
_helpers_lock = threading.Lock()


def single_threaded_blas() -> None:
    """One BLAS thread per call, process-wide; the forward spreads its work over WORKERS threads itself.

    OpenBLAS's own threads spin while they wait for each other: on a machine whose cores are
    busy with other work, a 20-token forward measured 20× slower with 2 BLAS threads than with 1.
    Threads of our own wait without spinning, and several requests at once share the cores.
    """
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    threadpool_limits(1, user_api="blas")


class _Call(Generic[T, R]):
    """One parallel() call: its items, taken one at a time by whoever is free, and their results."""

    def __init__(self, f: Callable[[T], R], items: Sequence[T]) -> None:
        self.f, self.items = f, items
        self.out: list[R | None] = [None] * len(items)
        self.context = contextvars.copy_context()  # the caller's (an attention observer, see observing())
        self.next = 0
        self.lock = threading.Lock()
        self.done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()  # one per item a helper did
        self.errors: list[BaseException] = []

    def take(self) -> int | None:
        with self.lock:
            i = self.next
            if i >= len(self.items):
                return None
            self.next += 1
            return i

    def work(self) -> int:
        """Items until none is left (the caller's share): how many it did."""
        did = 0
        while (i := self.take()) is not None:
            try:
                self.out[i] = self.f(self.items[i])
            except BaseException as e:  # re-raised by the caller once every taken item is done
                self.errors.append(e)
            did += 1
        return did

    def help(self) -> None:
        """A helper's share: each item it did is reported, so that the caller waits for those only."""
        while (i := self.take()) is not None:
            error = None
            try:
                self.out[i] = self.context.run(self.f, self.items[i])
            except BaseException as e:
                error = e
            self.done.put(error)


def _helper() -> None:
    while True:
        _calls.get().help()


def parallel(f: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """[f(item) for item in items], spread over this thread and up to WORKERS − 1 pool threads.

    The caller works too, taking items until none is left, so a pool busy with another request
    never makes it wait for work it could do itself: it waits only for the items a helper took.
    NumPy releases the GIL in its loops. The hand-over is a C queue each way (queue.SimpleQueue):
    a few microseconds, where a ThreadPoolExecutor's futures cost tens (a written token makes ~90).
    """
    if len(items) <= 1 or WORKERS == 1:
        return [f(item) for item in items]
    if len(_helpers) < WORKERS - 1:
        with _helpers_lock:
            while len(_helpers) < WORKERS - 1:
                t = threading.Thread(target=_helper, name=f"forward-{len(_helpers)}", daemon=True)
                t.start()
                _helpers.append(t)
    call = _Call(f, items)
    for _ in range(min(WORKERS, len(items)) - 1):
        _calls.put(call)
    mine = call.work()
    for _ in range(len(items) - mine):
        error = call.done.get()
        if error is not None:
            call.errors.append(error)
    if call.errors:
        raise call.errors[0]
    return call.out  # type: ignore[return-value]  # every item was done


def row_blocks(n: int) -> list[slice]:
    """Blocks of rows 0 … n − 1 of about equal size, ≤ _ROWS each, a multiple of WORKERS in number
    (for n ≥ PARALLEL_ROWS), so that the workers finish together."""
    per = WORKERS if n >= PARALLEL_ROWS else 1
    blocks = per * math.ceil(n / (per * _ROWS))
    size = math.ceil(n / blocks)
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def rows(f: Callable[[slice], np.ndarray], n: int) -> np.ndarray:
    """f(block of rows) for the row_blocks of n rows, in parallel, joined along the first axis."""
    blocks = row_blocks(n)
    parts = parallel(f, blocks)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)  # (n, ·)


def rows_each(f: Callable[[slice], Sequence[np.ndarray]], n: int) -> list[np.ndarray]:
    """f(block of rows) → several arrays, for the row_blocks of n rows, in parallel: each of them
    joined along the first axis. One hand-over to the pool for all of them, where rows() per
    array would make one each."""
    parts = parallel(f, row_blocks(n))
    return list(parts[0]) if len(parts) == 1 else [np.concatenate(each) for each in zip(*parts, strict=True)]


def by_rows(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """A row-wise function f applied to blocks of rows of x (n, C) and joined: the same numbers, less
    memory traffic (a 300-token sentence's feed-forward is about 15% quicker), on WORKERS threads."""
    return rows(lambda r: f(x[r]), x.shape[0])  # (n, ·)


CHUNK_CELLS = 256 * 1024  # h·r·n scores per step of attend(): 1 MB of float32, which with its e^s stays in a core's L2


_scratches = threading.local()


def _scratch(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 array of this shape that this thread reuses (a new one of ~0.5 MB costs as much
    as a pass over it); its contents are whatever the last use left."""
    buf: np.ndarray | None = getattr(_scratches, "buf", None)
    size = math.prod(shape)
    if buf is None or buf.size < size:
        buf = _scratches.buf = np.empty(size, dtype=np.float32)
    return buf[:size].reshape(shape)


class Observer(Protocol):
    """Sees the weights attend() computes, block by block, while the forward runs (app.model.summary)."""

    def __call__(
        self, k: np.ndarray, heads: slice, first: int, shifted: np.ndarray, exps: np.ndarray, sums: np.ndarray,
        best: np.ndarray,
    ) -> None:  # fmt: skip
        """k: the layer's keys (one object per layer); heads, first: where the block lies (heads, and
        its first query row); shifted: its scores scaled and masked, minus each row's largest (−∞
        where hidden), and exps = e^shifted, both (heads, rows, n) float32; sums: each row's Σ exps,
        and best: each row's strongest key, both (heads, rows). The weights are exps / sums (the
        strongest 1 / sums): attend() never divides the n × n of them. Read-only by contract and
        reused once the call returns (keep copies, not the arrays)."""


_observer: contextvars.ContextVar[Observer | None] = contextvars.ContextVar("attention_observer", default=None)


def observing(observer: Observer | None) -> contextvars.Token[Observer | None]:
    """Let `observer` see every block of weights attend() computes in this context (and in the
    pool threads nn.parallel runs its work on) until reset with the token returned."""
    return _observer.set(observer)


def stop_observing(token: contextvars.Token[Observer | None]) -> None:
    _observer.reset(token)


def keys_across(k: np.ndarray) -> np.ndarray:
    """A layer's keys (h, n, d) as attend() multiplies by them: kᵀ (h, d, n), contiguous. Made once a
    layer for all its blocks of rows: BLAS multiplies by it ~1.5× quicker than by a transposed view."""
    return np.ascontiguousarray(np.swapaxes(k, -1, -2))  # (h, d, n)


def softmax_pieces(
    q: np.ndarray, kt: np.ndarray, hidden: np.ndarray | None, out: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Softmax of q kᵀ/√d by rows, without its division, for queries q (g, r, d) and keys
    kt (g, d, n) as keys_across gives them; hidden (r, n): True where the mask hides a key.

    Returns the scores scaled, masked (−∞) and shifted so that each row's largest is 0; e^them
    (into `out`, or into the scores' own array when None); each row's Σ e^s; each row's argmax
    key. The weights are e^s / Σ, a row's largest 1 / Σ. q is scaled before the product (r × d
    numbers, not r × n); Σ is a BLAS product, 6× quicker than e.sum(-1)."""
    s = (q * np.float32(1 / math.sqrt(q.shape[-1]))) @ kt  # (g, r, n) scores, scaled
    if hidden is not None:
        s[:, hidden] = -np.inf
    best = s.argmax(axis=-1)  # (g, r): as quick as max(), and the summaries need it
    s -= np.take_along_axis(s, best[..., None], axis=-1)
    e = np.exp(s, out=s if out is None else out)
    sums = e @ np.ones(s.shape[-1], dtype=s.dtype)  # (g, r)
    return s, e, sums, best


def attend(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask, first: int = 0, kt: np.ndarray | None = None
) -> np.ndarray:
    """softmax(q kᵀ / √d_k) v for float32 heads: each head's output, in float32, as torch's does.

    q (h, r, d) holds the queries of tokens first … first + r − 1, k and v (h, n, d) every token's
    key and value, kt the same keys as keys_across(k) gives them (made here when not given): a
    block of query rows needs every key but nothing of the other queries, so blocks of rows can
    run on different threads. The forward pass needs nothing more of attention, so it keeps no
    stage: the stages a view shows are app.attention's, in float64, recomputed from the trace's
    q, k, v for the shown head. A few heads at a time (softmax_pieces), so that each group's
    scores stay in the CPU cache, and each row of e^s·v divided by its Σ e^s after the product
    (d numbers a row, not n).
    """
    h, r, _ = q.shape
    n = k.shape[1]
    kt = keys_across(k) if kt is None else kt  # (h, d, n)
    out = np.empty((h, r, v.shape[-1]), dtype=np.float32)  # (h, r, d_v)
    hidden = ~visible(n)[first : first + r] if mask == "causal" else None  # (r, n)
    step = max(1, CHUNK_CELLS // (r * n))
    observer = _observer.get()
    for i in range(0, h, step):
        g = slice(i, min(i + step, h))
        if observer is None:
            _, e, sums, _ = softmax_pieces(q[g], kt[g], hidden)
        else:  # the same numbers, the shifted scores kept for the observer
            s, e, sums, best = softmax_pieces(q[g], kt[g], hidden, _scratch((g.stop - i, r, n)))
            observer(k, g, first, s, e, sums, best)
        np.matmul(e, v[g], out=out[g])  # (step, r, d_v)
        out[g] /= sums[..., None]
    return out


class NumpyOps:
    """The forward pass's array operations in NumPy: the functions above."""

    name: Backend = "numpy"

    def weights(self, w: Weights) -> Mapping[str, Any]:
        return w

    def array(self, a: np.ndarray) -> Any:
        return a

    def numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def layer_norm(self, x: Any, weight: Any, bias: Any, eps: float) -> Any:
        return layer_norm(x, weight, bias, eps)

    def activation(self, name: str) -> Callable[[Any], Any]:
        return ACTIVATIONS[name]

    def split_heads(self, x: Any, heads: int) -> Any:
        return split_heads(x, heads)

    def merge_heads(self, x: Any) -> Any:
        return merge_heads(x)

    def parallel(self, f: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return parallel(f, items)

    def rows(self, f: Callable[[slice], Any], n: int) -> Any:
        return rows(f, n)

    def row_blocks(self, n: int) -> list[slice]:
        return row_blocks(n)

    def empty(self, shape: tuple[int, ...]) -> Any:
        return np.empty(shape, dtype=np.float32)

    def cat(self, parts: Sequence[Any], axis: int) -> Any:
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)

    def rows_each(self, f: Callable[[slice], Sequence[Any]], n: int) -> list[Any]:
        return rows_each(f, n)

    def keys_across(self, k: Any) -> Any:
        return keys_across(k)

    def causal_mask(self, r: int, t: int, first: int) -> Any:
        """True where query row j (at position first + j) may see key position p ≤ first + j: (r, t)."""
        return np.tril(np.ones((r, t), dtype=bool), first)

    def attend(self, q: Any, k: Any, v: Any, mask: Mask, first: int = 0, kt: Any = None) -> Any:
        return attend(q, k, v, mask, first, kt)


class TorchOps(NumpyOps):
    """The same operations in torch, on the GPU when torch sees one (CUDA), else on the CPU.

    torch is imported when this is first made: only for ATTENTION_BACKEND=torch.
    """

    name: Backend = "torch"

    def __init__(self) -> None:
        import torch
        import torch.nn.functional as F

        self.torch, self.F = torch, F
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self._weights: dict[int, tuple[Weights, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def weights(self, w: Weights) -> Mapping[str, Any]:
        """The model's weights as tensors on the device, copied there once per model."""
        with self._lock:
            if id(w) not in self._weights:  # the pair keeps w alive, so its id is not reused
                self._weights[id(w)] = (w, {name: self.array(a) for name, a in w.items()})
            return self._weights[id(w)][1]

    def array(self, a: np.ndarray) -> Any:
        return self.torch.from_numpy(np.array(a, dtype=np.float32)).to(self.device)

    def numpy(self, a: Any) -> np.ndarray:
        out: np.ndarray = a.cpu().numpy()
        return out

    def layer_norm(self, x: Any, weight: Any, bias: Any, eps: float) -> Any:
        return self.F.layer_norm(x, (x.shape[-1],), weight, bias, eps)

    def activation(self, name: str) -> Callable[[Any], Any]:
        if name not in ACTIVATIONS:
            raise ValueError(f"unknown activation {name!r}")
        if name == "silu":
            return self.F.silu
        return lambda x: self.F.gelu(x, approximate="none" if name == "gelu" else "tanh")

    def split_heads(self, x: Any, heads: int) -> Any:
        n, width = x.shape
        return x.reshape(n, heads, width // heads).transpose(0, 1).contiguous()  # (h, n, d)

    def merge_heads(self, x: Any) -> Any:
        h, n, d = x.shape
        return x.transpose(0, 1).reshape(n, h * d)  # (n, h·d)

    def parallel(self, f: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [f(item) for item in items]  # torch threads its own kernels

    def rows(self, f: Callable[[slice], Any], n: int) -> Any:
        return f(slice(0, n))

    def row_blocks(self, n: int) -> list[slice]:
        return [slice(0, n)]  # every row at once: torch threads its own kernels

    def empty(self, shape: tuple[int, ...]) -> Any:
        return self.torch.empty(shape, dtype=self.torch.float32, device=self.device)

    def cat(self, parts: Sequence[Any], axis: int) -> Any:
        return parts[0] if len(parts) == 1 else self.torch.cat(list(parts), dim=axis)

    def causal_mask(self, r: int, t: int, first: int) -> Any:
        """True where query row j (at position first + j) may see key position p ≤ first + j: (r, t)."""
        return self.torch.ones(r, t, dtype=self.torch.bool, device=self.device).tril(first)

    def rows_each(self, f: Callable[[slice], Sequence[Any]], n: int) -> list[Any]:
        return list(f(slice(0, n)))

    def keys_across(self, k: Any) -> Any:
        return None  # scaled_dot_product_attention takes k as it is

    def attend(self, q: Any, k: Any, v: Any, mask: Mask, first: int = 0, kt: Any = None) -> Any:
        if first != 0 or q.shape[1] != k.shape[1]:
            raise ValueError("TorchOps.attend takes every query at once (rows() gives it all of them)")
        return self.F.scaled_dot_product_attention(q, k, v, is_causal=mask == "causal")  # (h, n, d_v)


_ops: dict[Backend, NumpyOps] = {}
_ops_lock = threading.Lock()


def ops(backend: Backend) -> NumpyOps:
    """The operations of a backend (one TorchOps per process: it holds the weights on the device)."""
    if backend not in ("numpy", "torch"):
        raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    with _ops_lock:
        if backend not in _ops:
            _ops[backend] = TorchOps() if backend == "torch" else NumpyOps()
        return _ops[backend]


single_threaded_blas()  # on import: every forward pass and app.attention call in this process
