"""Writing text one token at a time with a Llama-family decoder: the KV cache, the next-token
candidates, sampling, and the loop POST /api/generate streams.

References:
  Pope et al., "Efficiently Scaling Transformer Inference" (2022), §2: the KV cache — each step
  runs one new token through the model, its query reading the keys and values kept from every
  earlier token, so step t costs t (attention) plus the weights (everything else), not t².
  Holtzman et al., "The Curious Case of Neural Text Degeneration" (2020): top-p (nucleus) sampling.
  Fan et al., "Hierarchical Neural Story Generation" (2018): top-k sampling.
  transformers' generate(): greedy decoding is the argmax of the last position's logits; the
  logits processors apply temperature, then top-k, then top-p (TopKLogitsWarper, TopPLogitsWarper).

A step (advance) takes new token ids, runs them through every layer at positions cache.length …
(app.model.forward.step: the family's one layer, as the views' trace runs it), appends their keys
and values (after RoPE) to the cache and returns the logits of the last one; the prompt is one step
(prefill), each written token one more. Nothing here knows about HTTP or the weights' names.
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from app.model import forward
from app.model.families.base import NO_HOOKS, Hooks
from app.model.loader import Model
from app.model.nn import ops

CANDIDATES = 10  # next-token candidates reported per step
Reason = Literal["length", "eos", "stopped"]


@dataclass
class Cache:
    """Every layer's keys (after RoPE) and values so far: k[i], v[i] are (h_kv, capacity, d), filled
    up to `length`; kept as NumPy arrays (or tensors on the torch backend)."""

    k: list[Any]
    v: list[Any]
    length: int = 0

    def put(self, i: int, first: int, q: Any, k: Any, v: Any) -> None:
        """Layer i's keys and values (h_kv, r, d) of positions first … first + r − 1 (a forward.Store)."""
        self.k[i][:, first : first + k.shape[1]] = k
        self.v[i][:, first : first + k.shape[1]] = v

    def get(self, i: int, end: int) -> tuple[Any, Any]:
        return self.k[i][:, :end], self.v[i][:, :end]  # (h_kv, end, d) each

    @property
    def capacity(self) -> int:
        return int(self.k[0].shape[1]) if self.k else 0

    def nbytes(self) -> int:
        """Bytes the filled part holds (keys and values of every layer)."""
        return sum(int(a[:, : self.length].numel() * 4 if hasattr(a, "numel") else a[:, : self.length].nbytes)
                   for a in (*self.k, *self.v))  # fmt: skip


def new_cache(model: Model, capacity: int, backend: str = "numpy") -> Cache:
    s = model.spec
    shape = (s.kv_heads, capacity, s.head_size)
    if backend == "torch":
        o = ops("torch")
        zeros = [o.torch.zeros(shape, device=o.device) for _ in range(2 * s.layers)]  # type: ignore[attr-defined]
        return Cache(zeros[: s.layers], zeros[s.layers :])
    return Cache([np.zeros(shape, np.float32) for _ in range(s.layers)],
                 [np.zeros(shape, np.float32) for _ in range(s.layers)])  # fmt: skip


@dataclass(frozen=True)
class Watched:
    """What one head of one layer did in a step, for the last new token: its query (after RoPE), the
    key and value its KV head cached for it, and its weights over the cache (length kv_len)."""

    q: np.ndarray  # (d,)
    k: np.ndarray  # (d,)
    v: np.ndarray  # (d,)
    weights: np.ndarray  # (kv_len,) float64, sums to 1


def advance(
    model: Model, ids: list[int], cache: Cache, layer: int, head: int, backend: str = "numpy",
    hooks: Hooks = NO_HOOKS,
) -> tuple[np.ndarray, Watched]:  # fmt: skip
    """Run `ids` at positions cache.length … through every layer, adding their keys and values to
    the cache: the last token's next-token logits (V,) float32, and what head `head` of layer
    `layer` did for it. hooks: the layer's (app.model.ablate: some heads switched off)."""
    s = model.spec
    n, first = len(ids), cache.length
    if first + n > cache.capacity:
        raise ValueError(f"the cache holds {cache.capacity} tokens; {first + n} asked for")
    watched: list[Watched] = []

    def seen(i: int, q: Any, keys: Any) -> None:
        if i == layer:
            k, v = keys
            watched.append(_watch(q, k, v, head, s.groups))

    logits = forward.step(ids, model.weights, s, backend, cache, first, seen, hooks)  # type: ignore[arg-type]
    cache.length = first + n
    return logits, watched[0]


def _numpy(a: Any) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else np.asarray(a.detach().cpu().numpy())


def _watch(q: Any, k: Any, v: Any, head: int, groups: int) -> Watched:
    """The last new token's query of head `head` against every cached key of its KV head, in float64."""
    qh = _numpy(q[head, -1]).astype(np.float64)  # (d,)
    kh = _numpy(k[head // groups]).astype(np.float64)  # (T, d)
    vh = _numpy(v[head // groups, -1]).astype(np.float64)  # (d,)
    scaled = kh @ qh / math.sqrt(qh.shape[0])  # (T,)
    weights = np.exp(scaled - scaled.max())
    weights /= weights.sum()
    return Watched(qh, kh[-1], vh, weights)


# ---- choosing the next token -----------------------------------------------------------------


@dataclass(frozen=True)
class Sampling:
    """temperature 0: always the most likely token (greedy); else sample from softmax(logits / T)
    kept to the top_k most likely (0: all) and to the smallest set whose probability reaches top_p."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0


def probabilities(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(logits / T) in float64 (V,)."""
    z = logits.astype(np.float64) / max(temperature, 1e-6)
    z -= z.max()
    p = np.exp(z)
    out: np.ndarray = p / p.sum()
    return out


def sampling_distribution(logits: np.ndarray, s: Sampling) -> np.ndarray:
    """The distribution the next token is drawn from (V,), float64: one-hot for greedy."""
    if s.temperature == 0:
        out: np.ndarray = np.zeros(logits.shape[0])
        out[int(np.argmax(logits))] = 1.0
        return out
    p = probabilities(logits, s.temperature)
    order = np.argsort(-p, kind="stable")  # most likely first
    keep = np.ones(p.shape[0], dtype=bool)
    if s.top_k:
        keep[order[s.top_k :]] = False
    if s.top_p < 1.0:
        sorted_p = p[order]
        before = np.cumsum(sorted_p) - sorted_p  # mass of the more likely tokens
        keep[order[before >= s.top_p]] = False  # the most likely token is always kept
    p = np.where(keep, p, 0.0)
    out = p / p.sum()
    return out


def choose(logits: np.ndarray, s: Sampling, rng: np.random.Generator) -> int:
    if s.temperature == 0:
        return int(np.argmax(logits))
    p = sampling_distribution(logits, s)
    return int(rng.choice(p.shape[0], p=p))


@dataclass(frozen=True)
class Candidate:
    id: int
    token: str
    p: float  # the model's own probability (temperature 1)
    logit: float
    p_sample: float  # the probability it had of being drawn under the request's settings


def top_ids(logits: np.ndarray, top: int) -> np.ndarray:
    """The ids of the `top` largest logits, largest first, ties by id: np.argsort(-logits, kind="stable")[:top]
    without sorting the whole vocabulary (49,152 for SmolLM2: ~6 ms a step), only the few at or above
    the top-th largest value (every tie of it included, so the order is the full sort's)."""
    if top >= logits.shape[0] or np.isnan(logits).any():  # NaN: the full sort's own order
        return np.argsort(-logits, kind="stable")[:top]
    kth = np.partition(logits, -top)[-top]  # the top-th largest value
    ids = np.flatnonzero(logits >= kth)  # (≥ top,) ascending ids
    return ids[np.argsort(-logits[ids], kind="stable")][:top]


def candidates(model: Model, logits: np.ndarray, s: Sampling, top: int = CANDIDATES) -> list[Candidate]:
    p = probabilities(logits)
    ps = sampling_distribution(logits, s)
    best = top_ids(logits, top)
    tok = model.tokenizer
    return [Candidate(int(i), tok.piece(int(i)), float(p[i]), float(logits[i]), float(ps[i])) for i in best]


# ---- the loop --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """One new token: its place among the written ones, what chose it and what the watched head saw."""

    index: int
    id: int
    token: str
    text: str  # everything written so far, decoded as a whole (characters split over tokens joined)
    candidates: list[Candidate]
    watched: Watched  # the head of the query that chose this token (the last token in the cache)
    kv_len: int  # tokens in the cache when it was chosen
    logits: np.ndarray  # (V,) the scores it was chosen from (a view may redraw the candidates from them)


@dataclass(frozen=True)
class Done:
    reason: Reason
    seconds: float
    written: int
    cache_bytes: int = 0
    ids: list[int] = field(default_factory=list)


def write(
    model: Model,
    prompt_ids: list[int],
    max_new_tokens: int,
    sampling: Sampling,
    seed: int | None,
    layer: int,
    head: int,
    backend: str = "numpy",
    limit: int | None = None,
    hooks: Hooks = NO_HOOKS,
) -> Generator[Written | Done, None, None]:
    """Write up to max_new_tokens after the prompt: one Written per token, then Done.

    Stops early at the model's end-of-text token ("eos"), or when the cache reaches `limit` tokens
    (default the model's context: "stopped"). The generator does one step's work per item asked
    for, so a consumer that stops asking stops the work. hooks: the model writes with its layers
    changed so (app.model.ablate: some heads switched off).
    """
    start = time.perf_counter()
    s = model.spec
    limit = min(limit or s.max_positions, s.max_positions)
    capacity = min(len(prompt_ids) + max_new_tokens, limit)
    cache = new_cache(model, capacity, backend)
    rng = np.random.default_rng(seed)
    logits, watched = advance(model, prompt_ids, cache, layer, head, backend, hooks)
    written: list[int] = []
    reason: Reason = "length"
    for index in range(max_new_tokens):
        token_id = choose(logits, sampling, rng)
        written.append(token_id)
        yield Written(
            index, token_id, model.tokenizer.piece(token_id), model.tokenizer.decode(written),
            candidates(model, logits, sampling), watched, cache.length, logits,
        )  # fmt: skip
        if token_id in s.eos:
            reason = "eos"
            break
        if index == max_new_tokens - 1:
            break
        if cache.length >= capacity:
            reason = "stopped"
            break
        logits, watched = advance(model, [token_id], cache, layer, head, backend, hooks)
    yield Done(reason, time.perf_counter() - start, len(written), cache.nbytes(), written)


def chat_prompt(model: Model, prompt: str) -> str:
    """The prompt as the model's chat template wraps a user's message (tokenizer_config.json's
    chat_template, rendered with Jinja2's sandbox as transformers renders it)."""
    import json

    from jinja2.sandbox import ImmutableSandboxedEnvironment

    path = model.spec.path / "tokenizer_config.json"
    template = None
    if path.is_file():
        template = json.loads(path.read_text(encoding="utf-8")).get("chat_template")
    if not template:
        raise ValueError(f"{model.spec.name} has no chat template")
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return str(env.from_string(template).render(messages=[{"role": "user", "content": prompt}],
                                                add_generation_prompt=True))  # fmt: skip


def cache_bytes(model: Model, tokens: int) -> int:
    """The KV cache's size for `tokens` tokens in float32: layers × 2 (k and v) × h_kv × d × 4 bytes each."""
    s = model.spec
    return s.layers * 2 * s.kv_heads * s.head_size * 4 * tokens


# ---- as the API sends them -------------------------------------------------------------------


def _rounded(a: np.ndarray, decimals: int) -> list[float]:
    return [float(x) for x in np.round(a, decimals)]


def line(item: Written, layer: int, head: int) -> dict[str, Any]:
    """One new token as POST /api/generate's NDJSON line (and the notebook's write().result)."""
    return {
        "index": item.index,
        "token": item.token,
        "id": item.id,
        "text": item.text,
        "candidates": [
            {
                "token": c.token,
                "id": c.id,
                "p": round(c.p, 6),
                "logit": round(c.logit, 4),
                "p_sample": round(c.p_sample, 6),
            }
            for c in item.candidates
        ],
        "attention": _rounded(item.watched.weights, 6),
        "kv_len": item.kv_len,
        "layer": layer,
        "head": head,
        "q": _rounded(item.watched.q, 5),
        "k": _rounded(item.watched.k, 5),
        "v": _rounded(item.watched.v, 5),
    }


def done_line(d: Done) -> dict[str, Any]:
    """The last line: why the writing ended, and how long it took."""
    return {"done": True, "reason": d.reason, "seconds": round(d.seconds, 4), "written": d.written,
            "cache_bytes": d.cache_bytes}  # fmt: skip
