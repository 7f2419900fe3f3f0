"""Word order: attention alone cannot see it; positional encodings make it see it.

References:
  Vaswani et al., "Attention Is All You Need" (2017), section 3.5: the sinusoidal encoding
      PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)),
      added to the embeddings at the bottom of the stack.
  Devlin et al., "BERT" (2019), section 3: learned position embeddings instead (all-MiniLM-L6-v2,
      app/model/families/bert/layer.py, BertLayer.embed: token + position + token type).
  The lesson: a positional encoding is added to each embedding, because attention by itself does
      not know word order.

Why: reorder the words with a permutation matrix P (row i of P·X is row order[i] of X). Without
positions every q, k and v row moves with its word, so the scores are P·S·Pᵀ and softmax, taken
row by row over the same numbers, gives weights P·W·Pᵀ: the same numbers, moved. With x + PE(pos)
a word's vector depends on where it stands, so the numbers themselves change.

Stages, by name (toy: d_model = d_k = 8, each word's x seeded by the word, seeded W_Q, W_K; the
weights need no W_V). The toy adds every sum in an order that does not depend on where a word
stands (see weights_of), so "the same numbers" holds to the last bit, not just up to rounding:

  x, x_perm                      the embeddings in both orders             (n, d)
  pe                            PE(pos) for pos = 0 … n−1                 (n, d)
  plain, plain_perm             weights without positions, both orders    (n, n)
  plain_moved                   P·plain·Pᵀ: the first table, reordered    (n, n)
  plain_gap                     max |plain_perm − plain_moved|: 0         ()
  encoded, encoded_perm,        the same with x + PE: encoded_gap > 0     (n, n), ()
    encoded_moved, encoded_gap

model() does the same with a real model's own attention (its learned positions are inside).
This module imports nothing from the web side of the app.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.attention import attention
from app.lesson.rnn import word_vectors
from app.model.loader import Model
from app.model.select import layer_heads
from app.model.tokenizer import Encoded
from app.model.trace import Trace

D_MODEL = 8
WEIGHT_SEED = 35  # section 3.5
DEFAULT_WORDS = ("the", "cat", "ate", "its", "fish")
DEFAULT_ORDER = (0, 4, 2, 3, 1)  # "the fish ate its cat": the same words, another meaning


def sinusoid(n: int, d: int) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(…), for pos = 0 … n−1 (d even)."""
    if d % 2:
        raise ValueError(f"d must be even, got {d}")
    pos = np.arange(n, dtype=np.float64)[:, None]  # (n, 1)
    rate = 10000.0 ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,) 1 / 10000^(2i/d)
    pe = np.zeros((n, d))  # (n, d)
    pe[:, 0::2] = np.sin(pos * rate)  # (n, d/2) even coordinates
    pe[:, 1::2] = np.cos(pos * rate)  # (n, d/2) odd coordinates
    return pe


def permutation_matrix(order: list[int] | tuple[int, ...]) -> np.ndarray:
    """P with P[i, order[i]] = 1: row i of P·X is row order[i] of X."""
    p = np.zeros((len(order), len(order)))  # (n, n)
    p[np.arange(len(order)), list(order)] = 1.0
    return p


def check_order(order: list[int] | tuple[int, ...], n: int) -> None:
    if sorted(order) != list(range(n)):
        raise ValueError(f"order must hold each of 0 … {n - 1} exactly once, got {list(order)}")


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a·b, each cell summed over the inner index 0, 1, 2, … in that order, wherever it stands.

    BLAS may add a cell's products in an order that depends on the cell's place in the matrix, so
    a reordered input can round differently in the last bit; this sum cannot.
    """
    out = np.zeros((a.shape[0], b.shape[1]))  # (n, m)
    for i in range(a.shape[1]):
        out += a[:, i : i + 1] * b[i : i + 1, :]  # (n, 1) × (1, m)
    return out


def weights_of(x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray) -> np.ndarray:
    """softmax(q·kᵀ / √d) by row, with no step whose rounding depends on the order of the words.

    Each row's sum is math.fsum's (the correctly rounded sum: the same in any order); max and
    exp do not depend on the order either. app.attention gives the same weights within 1e-15.
    """
    q, k = product(x, w_q), product(x, w_k)  # (n, d) each
    scaled = product(q, k.T) / math.sqrt(q.shape[1])  # (n, n)
    e = np.exp(scaled - scaled.max(axis=1, keepdims=True))  # (n, n)
    w: np.ndarray = e / np.array([[math.fsum(row)] for row in e])  # (n, n) / (n, 1)
    return w


def projections() -> tuple[np.ndarray, np.ndarray]:
    """The toy's W_Q and W_K (the weights need no values)."""
    rng = np.random.default_rng(WEIGHT_SEED)
    w_q, w_k = (rng.standard_normal((D_MODEL, D_MODEL)) / np.sqrt(D_MODEL) for _ in range(2))  # (d, d) each
    return w_q, w_k


@dataclass(frozen=True)
class Positions:
    words: list[str]
    order: list[int]
    words_perm: list[str]
    x: np.ndarray  # (n, d)
    x_perm: np.ndarray  # (n, d)
    pe: np.ndarray  # (n, d)
    plain: np.ndarray  # (n, n)
    plain_perm: np.ndarray  # (n, n)
    plain_moved: np.ndarray  # (n, n)
    plain_gap: float
    encoded: np.ndarray  # (n, n)
    encoded_perm: np.ndarray  # (n, n)
    encoded_moved: np.ndarray  # (n, n)
    encoded_gap: float


def toy(
    words: list[str] | tuple[str, ...] = DEFAULT_WORDS, order: list[int] | tuple[int, ...] = DEFAULT_ORDER
) -> Positions:
    """Attention on seeded word vectors in two orders, without and with sinusoidal positions."""
    words, order = list(words), list(order)
    check_order(order, len(words))
    p = permutation_matrix(order)  # (n, n)
    w_q, w_k = projections()  # (d, d) each
    x = word_vectors(words, D_MODEL)  # (n, d)
    x_perm = p @ x  # (n, d): the same rows, reordered (word_vectors depends on the word only)
    pe = sinusoid(len(words), D_MODEL)  # (n, d)
    plain, plain_perm = weights_of(x, w_q, w_k), weights_of(x_perm, w_q, w_k)  # (n, n) each
    encoded = weights_of(x + pe, w_q, w_k)  # (n, n)
    encoded_perm = weights_of(x_perm + pe, w_q, w_k)  # (n, n): position pos still gets PE(pos)
    plain_moved, encoded_moved = p @ plain @ p.T, p @ encoded @ p.T  # (n, n) each
    return Positions(
        words, order, [words[i] for i in order], x, x_perm, pe,
        plain, plain_perm, plain_moved, float(np.abs(plain_perm - plain_moved).max()),
        encoded, encoded_perm, encoded_moved, float(np.abs(encoded_perm - encoded_moved).max()),
    )  # fmt: skip


@dataclass(frozen=True)
class ModelPositions:
    """A real model's attention, one layer and head, for the sentence in both orders."""

    name: str
    layer: int
    head: int
    tokens: list[str]
    tokens_perm: list[str]
    ids: list[int]
    ids_perm: list[int]
    token_order: list[int] | None  # token i of the reordered sentence is token token_order[i] of the first
    weights: np.ndarray  # (n, n)
    weights_perm: np.ndarray  # (n, n)
    moved: np.ndarray | None  # (n, n) P·weights·Pᵀ over tokens; None when the words tokenize differently
    gap: float | None  # max |weights_perm − moved|
    gaps: np.ndarray | None  # (layers, heads): the same gap for every head


def token_order(words: list[str], order: list[int], first: Encoded, second: Encoded) -> list[int] | None:
    """For each token of the reordered sentence, the index of the same token in the first sentence.

    Tokens are matched by (word, piece within the word); special tokens ([CLS], [SEP]) stay where they
    are. None when a word is split into other pieces in the other order (a byte-level tokenizer marks
    a word's leading space, so GPT-2's first word differs).
    """

    def keys(enc: Encoded, ws: list[str]) -> list[tuple[int, int] | tuple[str, int]]:
        starts = np.cumsum([0] + [len(w) + 1 for w in ws])  # (n + 1,) where each word starts in " ".join(ws)
        out: list[tuple[int, int] | tuple[str, int]] = []
        seen: dict[int, int] = {}
        for i, span in enumerate(enc.spans):
            if span is None:
                out.append(("special", i))
                continue
            word = int(np.searchsorted(starts, span[0], side="right")) - 1
            seen[word] = seen.get(word, -1) + 1
            out.append((word, seen[word]))
        return out

    first_keys = keys(first, words)
    index = {key: i for i, key in enumerate(first_keys)}
    mapped: list[int] = []
    for key in keys(second, [words[i] for i in order]):
        want = key if isinstance(key[0], str) else (order[key[0]], key[1])
        if want not in index or first.tokens[index[want]] != second.tokens[len(mapped)]:
            return None
        mapped.append(index[want])
    return mapped if len(mapped) == len(first.tokens) else None


def model(m: Model, words: list[str], order: list[int], layer: int, head: int) -> ModelPositions:
    """The model's weights for " ".join(words) and for the words in `order`, with P·W·Pᵀ over tokens."""
    check_order(order, len(words))
    perm_words = [words[i] for i in order]
    first, second = m.tokenizer.encode(" ".join(words)), m.tokenizer.encode(" ".join(perm_words))
    a, b = m.forward(first.ids), m.forward(second.ids)  # Trace: per layer (h, n, d) q, k, v

    def heads(trace: Trace) -> np.ndarray:
        rows = [attention(*layer_heads(trace, i), "causal" if m.spec.causal else "full").weights
                for i in range(m.spec.layers)]  # fmt: skip
        return np.stack(rows)  # (layers, heads, n, n)

    w, w_perm = heads(a), heads(b)  # (layers, heads, n, n) each
    tok = token_order(words, order, first, second)
    moved = gaps = None
    if tok is not None:
        p = permutation_matrix(tok)  # (n, n) over tokens
        moved_all = p @ w @ p.T  # (layers, heads, n, n)
        gaps = np.abs(w_perm - moved_all).max(axis=(2, 3))  # (layers, heads)
        moved = moved_all[layer, head]
    return ModelPositions(
        m.spec.name, layer, head, first.tokens, second.tokens, first.ids, second.ids, tok,
        w[layer, head], w_perm[layer, head],
        moved, None if gaps is None else float(gaps[layer, head]), gaps,
    )  # fmt: skip
