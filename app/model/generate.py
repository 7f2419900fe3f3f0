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

A step (advance) takes new token ids, runs them through every layer at positions cache.length …,
appends their keys and values (after RoPE) to the cache and returns the logits of the last one;
the prompt is one step (prefill), each written token one more. Nothing here knows about HTTP.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import numpy as np

from app.model import llama
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
    model: Model, ids: list[int], cache: Cache, layer: int, head: int, backend: str = "numpy"
) -> tuple[np.ndarray, Watched]:
    """Run `ids` at positions cache.length … through every layer, adding their keys and values to
    the cache: the last token's next-token logits (V,) float32, and what head `head` of layer
    `layer` did for it. A prompt (more than 8 tokens) on NumPy: _prefill, by blocks of rows; a few
    tokens (a written one): every row at once, each weight's rows split over the cores."""
    s = model.spec
    o = ops(backend)  # type: ignore[arg-type]
    llama.fuse(model.weights, s)
    w = o.weights(model.weights)
    n, first = len(ids), cache.length
    if first + n > cache.capacity:
        raise ValueError(f"the cache holds {cache.capacity} tokens; {first + n} asked for")
    if n > 8 and o.name == "numpy":
        with o.placed():  # the threads on CPUs of their own while the machine is quiet (nn.placed)
            return _prefill(model, w, ids, cache, layer, head, o)
    one = n <= 8 and o.name == "numpy"

    def lin(a: Any, name: str) -> Any:  # a few rows: the weights' rows split over the cores
        return llama.wide_linear(a, w, name, o) if one else llama.linear(a, w, name)

    x = o.array(np.asarray(llama.embed(ids, model.weights)))  # (n, C)
    end = first + n
    watched: Watched | None = None
    for i in range(s.layers):
        last = i == s.layers - 1 and n > 1  # only the last token's output is read: its query alone
        if last:
            q, k, v = llama.last_query_qkv(x, w, i, s, o, first)  # (h, 1, d), 2 × (h_kv, n, d)
        else:
            q, k, v = llama.qkv(x, w, i, s, o, first, lin)  # (h, n, d), 2 × (h_kv, n, d)
        cache.k[i][:, first:end] = k
        cache.v[i][:, first:end] = v
        ck, cv = cache.k[i][:, :end], cache.v[i][:, :end]  # (h_kv, end, d)
        if i == layer:
            watched = _watch(o, q, ck, cv, head, s.groups)
        if last:
            # the last layer's keys and values are cached; only the last token's output is read (its
            # next-token logits): the other rows' queries, attention and feed-forward would be thrown away
            x = llama.rest_of_layer(x[n - 1 :], q, ck, cv, w, i, s, o, end - 1, slice(0, 1), lin)  # (1, C)
        else:
            x = llama.rest_of_layer(x, q, ck, cv, w, i, s, o, first, slice(0, n), lin)  # (n, C)
    cache.length = end
    last = llama.final_norm(x[-1:], w, s)  # (1, C)
    out = o.numpy(llama.logits(last, w, s, o))[0]  # (V,)
    assert watched is not None
    return np.asarray(out, dtype=np.float32), watched


# one row's projections and feed-forward cost about as much as its query reading this many keys
# (measured on one core: ~0.15 ms a row of a layer's products, ~7e-5 ms a query's key in causal_attend)
ROW_COST = 2000


def row_parts(first: int, n: int) -> list[slice]:
    """Rows 0 … n − 1 (at positions first …) in one contiguous block per worker (one for a short
    prompt), cut so that each block costs the same: a row's work is ROW_COST plus its position
    (the keys it reads), so the first block is a little longer than the last."""
    from app.model.nn import PARALLEL_ROWS, WORKERS

    per = WORKERS if n >= PARALLEL_ROWS else 1
    cost = np.cumsum(ROW_COST + first + np.arange(n, dtype=np.float64))  # (n,) the work of rows 0 … j
    cuts = [0, *(int(c) for c in np.searchsorted(cost, cost[-1] * np.arange(1, per) / per)), n]
    return [slice(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def _prefill(
    model: Model, w: Any, ids: list[int], cache: Cache, layer: int, head: int, o: Any
) -> tuple[np.ndarray, Watched]:
    """advance() for a prompt on NumPy: each worker takes one block of rows through every layer
    (row_parts), meeting the others once a layer, when every row's keys and values are cached.

    A block's work at layer i: its rows' attention over the cache (llama.causal_attend: no hidden
    key is read), output projection and feed-forward of layer i − 1, then its rows' q, k, v of layer i,
    k and v written into the cache. The query of a row is read by its own block only, so q and the
    hidden rows never leave it. At the last layer only the last row's query and output are needed
    (its next-token logits): every row's k and v are still cached."""
    s = model.spec
    n, first = len(ids), cache.length
    end, top = first + n, s.layers - 1
    parts = row_parts(first, n)
    x0 = np.asarray(llama.embed(ids, w))  # (n, C)
    xs: list[Any] = [x0[r] for r in parts]  # each block's rows (rows, C)
    qs: list[Any] = [None] * len(parts)  # each block's queries of the current layer (h, rows, d)
    hq, hkv = s.heads * s.head_size, s.kv_heads * s.head_size

    def project(i: int, b: int) -> None:
        """Block b's q, k, v of layer i from its rows' input xs[b]; k and v into the cache."""
        p, r = llama.LAYER.format(i), parts[b]
        fused = w[p + "self_attn.qkv_proj.weight"]  # (h·d + 2·h_kv·d, C): q's rows, then k's, then v's
        h = llama.rms_norm(xs[b], w[p + "input_layernorm.weight"], s.eps)  # (rows, C)
        pos = slice(first + r.start, first + r.stop)
        if i < top:
            both = h @ fused.T  # (rows, h·d + 2·h_kv·d)
            qs[b] = llama.rope(both[:, :hq], s.heads, pos, s.rope_theta, o)  # (h, rows, d)
            kv = both[:, hq:]  # (rows, 2·h_kv·d)
        else:  # the last layer: every row's k and v, the query of the prompt's last row only
            kv = h @ fused[hq:].T  # (rows, 2·h_kv·d)
            if b == len(parts) - 1:
                last = slice(end - 1, end)
                qs[b] = llama.rope(h[-1:] @ fused[:hq].T, s.heads, last, s.rope_theta, o)  # (h, 1, d)
        cache.k[i][:, first + r.start : first + r.stop] = llama.rope(kv[:, :hkv], s.kv_heads, pos, s.rope_theta, o)
        cache.v[i][:, first + r.start : first + r.stop] = o.split_heads(kv[:, hkv:], s.kv_heads)

    def rest(i: int, b: int) -> None:
        """Block b's rows through the rest of layer i (its q, k, v known), then its q, k, v of layer i + 1."""
        r = parts[b]
        ck, cv = cache.k[i][:, :end], cache.v[i][:, :end]  # (h_kv, end, d)
        rows = slice(0, r.stop - r.start)
        xs[b] = llama.rest_of_layer(xs[b], qs[b], ck, cv, w, i, s, o, first + r.start, rows,
                                    attend=llama.causal_attend)  # fmt: skip
        project(i + 1, b)

    blocks = range(len(parts))
    o.parallel(partial(project, 0), blocks)
    watched: Watched | None = None
    for i in range(top):
        if i == layer:
            watched = _watch(o, qs[-1], cache.k[i][:, :end], cache.v[i][:, :end], head, s.groups)
        o.parallel(partial(rest, i), blocks)  # (one meeting a layer: layer i + 1's keys and values cached)
    ck, cv = cache.k[top][:, :end], cache.v[top][:, :end]  # (h_kv, end, d)
    if layer == top:
        watched = _watch(o, qs[-1], ck, cv, head, s.groups)
    x = llama.rest_of_layer(xs[-1][-1:], qs[-1], ck, cv, w, top, s, o, end - 1, slice(0, 1))  # (1, C)
    cache.length = end
    out = o.numpy(llama.logits(llama.final_norm(x, w, s), w, s, o))[0]  # (V,)
    assert watched is not None
    return np.asarray(out, dtype=np.float32), watched


def _watch(o: Any, q: Any, k: Any, v: Any, head: int, groups: int) -> Watched:
    """The last new token's query of head `head` against every cached key of its KV head, in float64."""
    qh = o.numpy(q[head, -1]).astype(np.float64)  # (d,)
    kh = o.numpy(k[head // groups]).astype(np.float64)  # (T, d)
    vh = o.numpy(v[head // groups, -1]).astype(np.float64)  # (d,)
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
) -> Generator[Written | Done, None, None]:
    """Write up to max_new_tokens after the prompt: one Written per token, then Done.

    Stops early at the model's end-of-text token ("eos"), or when the cache reaches `limit` tokens
    (default the model's context: "stopped"). The generator does one step's work per item asked
    for, so a consumer that stops asking stops the work.
    """
    start = time.perf_counter()
    s = model.spec
    limit = min(limit or s.max_positions, s.max_positions)
    capacity = min(len(prompt_ids) + max_new_tokens, limit)
    cache = new_cache(model, capacity, backend)
    rng = np.random.default_rng(seed)
    logits, watched = advance(model, prompt_ids, cache, layer, head, backend)
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
        logits, watched = advance(model, [token_id], cache, layer, head, backend)
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
