"""Tiny random Llama models (made by transformers) through --model: a safetensors folder and the same
weights written as a GGUF file, with and without grouped-query attention, against transformers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.attention import attention
from app.cli import main
from app.model import generate
from app.model.loader import handle_for
from app.model.select import layer_heads
from app.model.spec import ModelError, read_spec

TOL = 1e-5  # the bound docs/decoder.md gives for attention weights (hidden states, values up to ~7: 1e-4)
SENTENCES = ["The animal didn't cross the street because it was too tired.", "def add(a, b):", "a"]
KINDS = ["gqa", "mha", "gqa.gguf", "mha.gguf"]


def _hf(folder: Path) -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def hf_tiny(tiny_llamas: dict[str, Path]) -> dict[str, Any]:
    return {name: _hf(tiny_llamas[name]) for name in ("gqa", "mha")}


@pytest.mark.parametrize("kind", KINDS)
def test_every_layer_and_head_and_hidden_state(
    tiny_llamas: dict[str, Path], hf_tiny: dict[str, Any], kind: str
) -> None:
    import torch

    handle = handle_for(tiny_llamas[kind])
    spec = handle.spec()
    assert spec.kind == "llama" and spec.causal and spec.heads == 4
    assert spec.kv_heads == (2 if kind.startswith("gqa") else 4)
    hf = hf_tiny[kind.split(".")[0]]
    for sentence in SENTENCES:
        enc = handle.encode(sentence)
        trace = handle.model().forward(enc.ids)
        with torch.no_grad():
            out = hf(torch.tensor([enc.ids]), output_attentions=True, output_hidden_states=True)
        for layer, theirs in enumerate(out.attentions):
            ours = attention(*layer_heads(trace, layer), "causal").weights  # (4, n, n)
            np.testing.assert_allclose(ours, theirs[0].numpy(), atol=TOL, rtol=0, err_msg=f"{kind} layer {layer}")
        for i, h in enumerate(out.hidden_states):
            np.testing.assert_allclose(trace.hidden[i], h[0].numpy(), atol=1e-4, rtol=1e-4, err_msg=f"hidden {i}")


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_ids_are_transformers_generate(tiny_llamas: dict[str, Path], hf_tiny: dict[str, Any], kind: str) -> None:
    import torch

    model = handle_for(tiny_llamas[kind]).model()
    ids = model.tokenizer.encode("The quick brown").ids
    done = list(generate.write(model, ids, 12, generate.Sampling(), None, 1, 3))[-1]
    hf = hf_tiny[kind.split(".")[0]]
    with torch.no_grad():
        theirs = hf.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long), max_new_tokens=12,
            do_sample=False, pad_token_id=0,
        )[0, len(ids) :].tolist()  # fmt: skip
    assert isinstance(done, generate.Done)
    assert done.ids == theirs[: len(done.ids)] and (done.reason == "eos") == (len(done.ids) < 12)


def test_the_random_models_attend_unevenly(tiny_llamas: dict[str, Path]) -> None:
    """The comparisons above mean something only if the random weights give peaked attention."""
    handle = handle_for(tiny_llamas["gqa"])
    trace = handle.model().forward(handle.encode(SENTENCES[0]).ids)
    assert attention(*layer_heads(trace, 1), "causal").weights[:, 5:, :].max() > 0.3


def test_gguf_file_is_converted_once(tiny_llamas: dict[str, Path]) -> None:
    from app.model.families.llama import gguf

    path = tiny_llamas["gqa.gguf"]
    folder = gguf.folder(path)
    made = (folder / "config.json").stat().st_mtime_ns
    assert gguf.folder(path) == folder and (folder / "config.json").stat().st_mtime_ns == made
    assert f"-v{gguf.FORMAT}-" in folder.name  # an older format's folder is never read as this one
    assert read_spec(path).name == "tiny-gqa"


def test_a_converted_gguf_file_is_read_already_joined(tiny_llamas: dict[str, Path]) -> None:
    """A start reads joined/ (no joining): every weight the forward uses is a read-only view of an
    array NumPy allocated (so that Linux may give it 2 MiB pages), not of a memory-mapped file, and
    holds what the model transformers saved holds (the GGUF file was written from it in float32, q
    and k rows permuted as llama.cpp's converter does)."""
    from safetensors.numpy import load_file

    from app.model.families.llama import gguf
    from app.model.families.llama.weights import JOINED_DIR

    path = tiny_llamas["gqa.gguf"]
    model = handle_for(path).model()
    folder = gguf.folder(path)
    kinds = {f.name for f in (folder / JOINED_DIR).glob("*.npy")}
    assert "layers.self_attn.qkv_proj.weight.npy" in kinds and len(kinds) == 9  # 6 stacked, embeddings, norm, lm_head
    assert not (folder / "model.safetensors").exists()  # the weights are kept once
    source = load_file(str(tiny_llamas["gqa"] / "model.safetensors"))
    assert len(source) == 2 * 9 + 3
    for name, a in source.items():
        mine = model.weights[name.removeprefix("model.")]
        base = mine
        while base.base is not None:
            assert not isinstance(base, np.memmap), name
            base = base.base
        assert type(base) is np.ndarray and base.flags.owndata and not mine.flags.writeable, name
        np.testing.assert_array_equal(mine, a, err_msg=name)
    qkv = model.weights["layers.1.self_attn.qkv_proj.weight"]
    assert np.shares_memory(qkv, model.weights["layers.1.self_attn.v_proj.weight"])  # joined, not copied


def test_cli_accepts_a_gguf_file_and_refuses_other_architectures(
    tiny_llamas: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gguf

    served: list[str] = []
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: served.append("run"))
    monkeypatch.setattr("app.classroom.cli.configure", lambda args: "http://127.0.0.1:8000/")  # no room set-up
    # main() sets $ATTENTION_MODEL; setenv first, so that monkeypatch removes it again afterwards
    # (delenv of a variable that is not set records nothing to undo)
    monkeypatch.setenv("ATTENTION_MODEL", "")
    monkeypatch.delenv("ATTENTION_MODEL")
    main(["--model", str(tiny_llamas["mha.gguf"])])
    assert served == ["run"]
    monkeypatch.delenv("ATTENTION_MODEL", raising=False)
    bad = tmp_path / "mamba.gguf"
    w = gguf.GGUFWriter(str(bad), "mamba")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(SystemExit):
        main(["--model", str(bad)])
    assert "architecture 'mamba' is not supported (only 'llama')" in capsys.readouterr().err
    with pytest.raises(ModelError, match="cannot be read as GGUF"):
        (tmp_path / "junk.gguf").write_bytes(b"not a gguf file")
        read_spec(tmp_path / "junk.gguf")


def test_listing_a_gguf_model_does_not_wait_for_its_conversion(
    tiny_llamas: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses
    import shutil
    import time

    from app.model import registry
    from app.model.families.llama import gguf

    monkeypatch.setenv(gguf.CACHE_ENV, str(tmp_path / "cache"))
    path = Path(shutil.copy(tiny_llamas["gqa.gguf"], tmp_path / "listed.gguf"))
    assert not gguf.converted(path)
    listed = registry.describe(registry.Entry("listed", "listed", path, False))
    assert (listed["architecture"], listed["layers"], listed["heads"], listed["kv_heads"], listed["d_k"]) == (
        "llama", 2, 4, 2, 16,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not gguf.converted(path) and time.monotonic() < deadline:  # converted in the background
        time.sleep(0.05)
    assert gguf.converted(path)
    header = registry._quick_spec(registry.Entry("listed", "listed", path, False), handle_for(path))
    full = handle_for(path).spec()
    assert dataclasses.replace(header, path=full.path, name=full.name) == full  # the header says what the folder says


def test_a_gguf_header_is_parsed_once_per_file(
    tiny_llamas: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GET /api/models asks for a not yet converted file's header on every call; parsing it (every
    tokenizer string) costs seconds for the real model, so it happens once: later calls in this
    process, and other processes (a worker, a restart: here, the process's copy forgotten), read it back."""
    import shutil

    from app.model.families.llama import gguf

    monkeypatch.setenv(gguf.CACHE_ENV, str(tmp_path / "cache"))
    path = Path(shutil.copy(tiny_llamas["mha.gguf"], tmp_path / "header.gguf"))
    first = gguf.header_config(path)
    assert first["num_attention_heads"] == 4 and first["num_key_value_heads"] == 4

    def no_parse(p: Path) -> None:
        raise AssertionError(f"{p} parsed again")

    monkeypatch.setattr(gguf, "_reader", no_parse)
    assert gguf.header_config(path) == first
    monkeypatch.setattr(gguf, "_headers", {})  # another process: only the file beside the cache
    assert gguf.header_config(path) == first
    first["num_attention_heads"] = 99  # a caller's copy: changing it changes nothing kept
    assert gguf.header_config(path)["num_attention_heads"] == 4
    path.touch()  # a newer file is read again
    with pytest.raises(AssertionError, match="parsed again"):
        gguf.header_config(path)


def test_threads_asking_at_once_share_one_reading_of_a_header(
    tiny_llamas: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server just started is asked for its GGUF file's header by every page that opens: the first
    thread reads it (seconds of CPU for the real model's), the others wait for that answer."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from app.model.families.llama import gguf

    monkeypatch.setenv(gguf.CACHE_ENV, str(tmp_path / "cache"))
    path = Path(shutil.copy(tiny_llamas["mha.gguf"], tmp_path / "herd.gguf"))
    real, reads = gguf._reader, []

    def slow_reader(p: Path) -> Any:
        reads.append(p)
        time.sleep(0.3)  # every other thread asks while this one reads
        return real(p)

    monkeypatch.setattr(gguf, "_reader", slow_reader)
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: gguf.header_config(path), range(6)))
    assert reads == [path]
    assert all(a == answers[0] for a in answers) and answers[0]["num_attention_heads"] == 4


@pytest.mark.parametrize("kind", ["gqa", "mha.gguf"])
def test_the_torch_backend_runs_the_same_layer(tiny_llamas: dict[str, Path], kind: str) -> None:
    """ATTENTION_BACKEND=torch (here on the CPU): the same layer on torch tensors, for the views'
    trace and for writing with its cache on torch, gives NumPy's numbers."""
    pytest.importorskip("torch")
    handle = handle_for(tiny_llamas[kind])
    model = handle.model()
    ids = handle.encode(SENTENCES[0]).ids
    ours, theirs = model.forward(ids), model.forward(ids, "torch")
    for name in ("q", "k", "v", "hidden"):
        for a, b in zip(getattr(ours, name), getattr(theirs, name), strict=True):
            np.testing.assert_allclose(b, a, atol=1e-4, rtol=1e-5, err_msg=name)
    prompt = handle.encode("The quick brown").ids
    numpy_done, torch_done = (list(generate.write(model, prompt, 8, generate.Sampling(), None, 1, 3, backend))[-1]
                              for backend in ("numpy", "torch"))  # fmt: skip
    assert isinstance(numpy_done, generate.Done) and isinstance(torch_done, generate.Done)
    assert torch_done.ids == numpy_done.ids


def test_a_head_is_ablated_through_the_layers_hook(tiny_llamas: dict[str, Path], hf_tiny: dict[str, Any]) -> None:
    """Hooks(heads=…) sees each layer's per-head outputs before the output projection: zeroing head 2
    of layer 1 there is transformers' forward with that head's 16 input columns of o_proj zeroed
    (a forward pre-hook), to the last hidden state."""
    import torch

    from app.model import forward
    from app.model.families.base import Hooks

    layer, head, d = 1, 2, 16
    handle = handle_for(tiny_llamas["gqa"])
    model = handle.model()
    ids = handle.encode(SENTENCES[0]).ids

    def zero(i: int, a: Any) -> Any:
        if i == layer:
            a = a.copy()
            a[head] = 0.0
        return a

    ours = forward.trace(ids, model.weights, model.spec, hooks=Hooks(heads=zero))
    hf = hf_tiny["gqa"]

    def pre(module: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        x = args[0].clone()
        x[..., head * d : (head + 1) * d] = 0
        return (x,)

    hook = hf.model.layers[layer].self_attn.o_proj.register_forward_pre_hook(pre)
    try:
        with torch.no_grad():
            theirs = hf(torch.tensor([ids]), output_hidden_states=True).hidden_states
    finally:
        hook.remove()
    plain = model.forward(ids)
    np.testing.assert_allclose(ours.hidden[-1], theirs[-1][0].numpy(), atol=1e-4, rtol=1e-4)
    assert np.abs(ours.hidden[-1] - plain.hidden[-1]).max() > 1e-2  # the head mattered
    np.testing.assert_array_equal(ours.hidden[layer], plain.hidden[layer])  # layers before it are untouched


def test_a_long_prompt_is_prefilled_by_blocks_as_transformers_reads_it(
    tiny_llamas: dict[str, Path], hf_tiny: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 150-token prompt on two workers: two blocks of rows, each through every layer, the last
    layer's query for the last row only. The cache holds the full trace's keys and values, and the
    next-token scores are transformers' for the same ids."""
    import torch

    from app.model import nn
    from app.model.forward import layer_of

    monkeypatch.setattr(nn, "WORKERS", 2)
    model = handle_for(tiny_llamas["gqa"]).model()
    ids = model.tokenizer.encode(" ".join(["the cat ate its fish, and then the dog ate the cat's fish"] * 12)).ids[:150]
    assert len(ids) == 150 and len(layer_of(model.weights, model.spec, "numpy")[0].blocks(150, 0)) == 2
    cache = generate.new_cache(model, 160)
    logits, watched = generate.advance(model, ids, cache, 1, 3)
    trace = model.forward(ids)
    for i in range(model.spec.layers):
        np.testing.assert_allclose(cache.k[i][:, :150], trace.k[i], atol=1e-5, rtol=0, err_msg=f"k {i}")
        np.testing.assert_allclose(cache.v[i][:, :150], trace.v[i], atol=1e-5, rtol=0, err_msg=f"v {i}")
    full = attention(*layer_heads(trace, 1), "causal").weights[3, -1]
    np.testing.assert_allclose(watched.weights, full, atol=1e-6, rtol=0)
    with torch.no_grad():
        theirs = hf_tiny["gqa"](torch.tensor([ids])).logits[0, -1].numpy()
    np.testing.assert_allclose(logits, theirs, atol=1e-4, rtol=1e-5)
