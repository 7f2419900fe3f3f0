"""The decoder reading a long prompt: past LONG keys the Llama layer's attention reads the keys in
blocks with an online softmax (layer.blocked_attend over app.lesson.tiles.online), the same numbers as
the whole softmax; continuing running numbers (online(running=)) is one call over both stretches of keys;
greedy ids after a 4,096-token prompt are transformers' generate() (make test-all). A prompt over the
limit: tests/model/test_long_view.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app import limits
from app.lesson import tiles
from app.model import generate
from app.model.families.llama import layer as llama_layer
from app.model.loader import Model, handle_for
from app.model.nn import ops
from tests.model.llama_fixtures import TINY_CORPUS
from tests.model.test_llama_tiny import _hf
from tests.model.test_long_view import long_text

DECODER = "smollm2-135m"


def _qkv(rng: np.random.Generator, r: int, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SmolLM2's shapes: 9 query heads on 3 KV heads of 64 numbers, scores of a trained model's size."""
    q = rng.standard_normal((9, r, 64), dtype=np.float32) * 3
    return q, rng.standard_normal((3, t, 64), dtype=np.float32) * 3, rng.standard_normal((3, t, 64), dtype=np.float32)


@pytest.mark.parametrize(
    ("r", "t", "first", "far"),
    [
        (600, 600, 0, 0),
        (300, 1000, 700, 0),
        (257, 800, 543, 0),
        (1, 700, 699, 0),
        (9, 520, 511, 0),
        (300, 900, 600, 90),
    ],
    ids=["a prompt", "a worker's later rows", "a tile and one row", "a written token", "a few rows", "a key far above"],
)
def test_blocked_attention_is_the_whole_softmax(r: int, t: int, first: int, far: int) -> None:
    """blocked_attend() against grouped_attend() (every key's score at once, the softmax of the whole
    row) within float32's rounding, and against a float64 softmax; the layer's attend() picks it past LONG
    keys for more than a written token's rows. `far`: key 1's score that much above each query's
    others (e^90 overflows float32: _tile reads that block again from its largest score)."""
    q, k, v = _qkv(np.random.default_rng(r + t), r, t)
    if far:  # key 1's score `far` above every other score of each query
        q, k = q.copy(), k.copy()
        k[:, :, 0] = 0  # q's number 0 reaches key 1 only
        k[:, 1] = 0
        k[:, 1, 0] = 8  # key 1's score: q's number 0 (· 8 / √64)
        q[..., 0] = np.einsum("hrd,htd->hrt", q, np.repeat(k, 3, axis=0)).max(-1) / 8 + far
    o = ops("numpy")
    got = llama_layer.blocked_attend(q, k, v, first, o)  # (9, r, 64)
    np.testing.assert_allclose(got, llama_layer.grouped_attend(q, k, v, first, o), rtol=0, atol=2e-5)
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    s = np.einsum("hrd,htd->hrt", q64, np.repeat(k64, 3, axis=0)) / 8  # (9, r, t)
    s[:, np.arange(t)[None, :] > first + np.arange(r)[:, None]] = -np.inf
    w = np.exp(s - s.max(-1, keepdims=True))
    want = (w / w.sum(-1, keepdims=True)) @ np.repeat(v64, 3, axis=0)  # (9, r, 64)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)
    picked = (
        llama_layer.blocked_attend if t > llama_layer.LONG and r > llama_layer.WIDE_ROWS else llama_layer.causal_attend
    )
    assert (llama_layer.attend(q, k, v, first, o) == picked(q, k, v, first, o)).all()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_running_numbers_continue_across_calls(backend: str) -> None:
    """online(running=) reads on from another call's m, l and o: keys 0 … 29 then 30 … 69 give what one
    call over all 70 keys gives, to float64's last digits, under either mask; the numbers given stay."""
    rng = np.random.default_rng(7)
    q, k, v = rng.standard_normal((2, 3, 12, 5)), rng.standard_normal((2, 1, 70, 5)), rng.standard_normal((2, 1, 70, 4))
    if backend == "torch":
        import torch

        q, k, v = (torch.from_numpy(a) for a in (q, k, v))
    for mask, offset in (("full", 0), ("causal", 58)):
        whole = tiles.online(q, k, v, 8, mask, offset)  # type: ignore[arg-type]
        head = tiles.online(q, k[..., :30, :], v[..., :30, :], 8, "full")  # keys every query sees
        kept = [np.asarray(x).copy() for x in (head.m, head.l, head.o)]
        tail = tiles.online(q, k[..., 30:, :], v[..., 30:, :], 8, mask, offset - 30 if offset else 0, running=head)  # type: ignore[arg-type]
        got, want = ([np.asarray(x) for x in (r.output, r.m, r.l)] for r in (tail, whole))
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(got[2] * np.exp(got[1] - want[1]), want[2], rtol=1e-13, atol=1e-13)
        for before, x in zip(kept, (head.m, head.l, head.o), strict=True):
            assert (np.asarray(x) == before).all()
    with pytest.raises(ValueError, match="running must hold"):
        tiles.online(q, k, v, 8, running=tiles.Running(head.m[..., :3], head.l, head.o))


def test_the_layer_in_blocks_is_transformers(tiny_llamas: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny random Llama (grouped heads) with LONG, the tiles and the key blocks made small, so that a
    150-token prompt is "long": every layer's attention in blocks, on every worker's rows (a later
    block's queries see keys before them whole and their own under the mask), the blocks not dividing
    the keys. Hidden states and greedy ids are transformers' (eager attention, the whole softmax)."""
    import torch

    monkeypatch.setattr(llama_layer, "LONG", 20)
    monkeypatch.setattr(llama_layer, "QUERY_TILE", 16)
    monkeypatch.setattr(llama_layer, "KEY_BLOCK", 7)
    called = []
    real = llama_layer.blocked_attend

    def blocked(*args: Any) -> Any:
        called.append(args[0].shape)
        return real(*args)

    monkeypatch.setattr(llama_layer, "blocked_attend", blocked)
    model = handle_for(tiny_llamas["gqa"]).model()
    ids = model.tokenizer.encode(" ".join(TINY_CORPUS[:9])).ids[:150]
    assert len(ids) == 150
    hf = _hf(tiny_llamas["gqa"])
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_hidden_states=True)
        theirs = hf.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long), max_new_tokens=6,
            do_sample=False, pad_token_id=0,
        )[0, len(ids) :].tolist()  # fmt: skip
    for backend in ("numpy", "torch"):  # torch: every query at once in key blocks of TORCH_KEY_BLOCK (made 7 too)
        monkeypatch.setattr(llama_layer, "TORCH_KEY_BLOCK", 7)
        trace = model.forward(ids, backend)
        for i, h in enumerate(out.hidden_states):
            np.testing.assert_allclose(trace.hidden[i], h[0].numpy(), atol=1e-4, rtol=1e-4, err_msg=f"{backend} {i}")
    assert len(called) >= 2 + 2  # 2 layers on torch, and on NumPy's ≥ 1 block of rows
    done = list(generate.write(model, ids, 6, generate.Sampling(), None, 1, 3))[-1]
    assert isinstance(done, generate.Done)
    assert done.ids == theirs[: len(done.ids)] and (done.reason == "eos") == (len(done.ids) < 6)


@pytest.mark.full
def test_greedy_ids_after_4096_tokens_are_transformers_generate(smollm: Model, hf_smollm: Any) -> None:
    """A 4,096-token prompt (the limit): our prefill in blocks and 8 written tokens give the ids of
    transformers' generate(do_sample=False) on the same ids (eager attention, float32). ~2 minutes."""
    import torch

    ids = smollm.tokenizer.encode(long_text(smollm, limits.MAX_LONG_TOKENS)).ids[: limits.MAX_LONG_TOKENS]
    assert len(ids) == limits.MAX_LONG_TOKENS
    done = list(generate.write(smollm, ids, 8, generate.Sampling(), None, 0, 0))[-1]
    assert isinstance(done, generate.Done)
    with torch.no_grad():
        theirs = hf_smollm.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            max_new_tokens=8, do_sample=False, pad_token_id=2,
        )[0, len(ids) :].tolist()  # fmt: skip
    assert done.ids == theirs
