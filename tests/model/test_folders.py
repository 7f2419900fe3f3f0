"""Broken model folders, built offline with transformers: refused at start with one line and exit
status 2 (--model and ATTENTION_MODEL alike); whatever fails later answers 503, never 500."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app import cli
from app.main import create_app
from app.model.spec import ModelError, read_spec
from tests.classroom.conftest import ROOT
from tests.servers import free_port

WORDS = ["the", "animal", "cross", "street", "because", "it", "was", "too", "tired", ".", "didn", "'", "t", "##s"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def save_bert(d: Path, vocab_rows: int | None = None) -> Path:
    """A 2-layer, 2-head BERT with random weights and its own WordPiece tokenizer.json."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(SPECIALS + WORDS)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    tok.decoder = decoders.WordPiece()
    d.mkdir(parents=True, exist_ok=True)
    tok.save(str(d / "tokenizer.json"))
    config = transformers.BertConfig(
        vocab_size=vocab_rows or len(vocab),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_bert(tmp_path_factory.mktemp("tiny-bert") / "tiny-bert")


def copy(src: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(src, tmp_path / src.name))


def edit_config(d: Path, **changes: object) -> None:
    config = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**config, **changes}))


def refused(d: Path | str, words: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """read_spec refuses it naming the problem; so do --model and ATTENTION_MODEL: one line, exit 2."""
    with pytest.raises(ModelError, match=words):
        read_spec(Path(d))
    monkeypatch.setattr("uvicorn.run", lambda *a, **kw: pytest.fail("the server must not start"))
    for argv, env in ((["--model", str(d)], None), ([], str(d))):
        if env is None:
            monkeypatch.delenv("ATTENTION_MODEL", raising=False)
        else:
            monkeypatch.setenv("ATTENTION_MODEL", env)
        capsys.readouterr()  # (transformers' progress bars)
        with pytest.raises(SystemExit) as stopped:
            cli.main(argv)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert re.search(words, err), err
        assert err.startswith(f"attention3d: {'--model' if env is None else 'ATTENTION_MODEL'} ")


def test_good_folders_pass_and_answer(tiny_bert_dir: Path, tiny_gpt2_dir: Path) -> None:
    assert read_spec(tiny_bert_dir).kind == "bert" and read_spec(tiny_gpt2_dir).kind == "gpt2"
    client = TestClient(create_app(backend="numpy", model=str(tiny_bert_dir)))
    r = client.post("/api/attention", json={"sentence": "The animal was tired.", "layer": 1, "head": 1})
    assert r.status_code == 200, r.text
    assert r.json()["tokens"] == ["[CLS]", "the", "animal", "was", "tired", ".", "[SEP]"] and r.json()["d_k"] == 8


def test_an_unreadable_tokenizer(
    tiny_bert_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    d = copy(tiny_bert_dir, tmp_path)
    (d / "tokenizer.json").write_text('{"version": "1.0", "model": 42}')
    refused(d, "cannot be read as a tokenizer", capsys, monkeypatch)
    client = TestClient(create_app(backend="numpy", model=str(d)))
    for r in (client.get("/api/model"), client.post("/api/attention", json={"sentence": "hi"})):
        assert r.status_code == 503 and "tokenizer" in r.json()["detail"][0]["msg"], r.text


def test_a_vocabulary_larger_than_the_embeddings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    d = save_bert(tmp_path / "small-embeddings", vocab_rows=len(SPECIALS + WORDS) - 3)
    refused(d, f"the tokenizer has {len(SPECIALS + WORDS)} tokens but the model's embeddings have 16 rows", capsys,
            monkeypatch)  # fmt: skip
    client = TestClient(create_app(backend="numpy", model=str(d)))
    r = client.post("/api/attention", json={"sentence": "tired"})
    assert r.status_code == 503 and r.json()["detail"][0]["type"] == "model_unavailable"


def test_a_hidden_size_that_disagrees_with_the_weights(
    tiny_bert_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    d = copy(tiny_bert_dir, tmp_path)
    edit_config(d, hidden_size=32)
    refused(d, r"has shape \[19, 16\], but config.json implies \[19, 32\]", capsys, monkeypatch)


def test_truncated_weights(
    tiny_gpt2_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    d = copy(tiny_gpt2_dir, tmp_path)
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])
    refused(d, "cannot be read as safetensors", capsys, monkeypatch)


def test_a_bert_config_with_gpt2_weights(
    tiny_bert_dir: Path, tiny_gpt2_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    d = copy(tiny_bert_dir, tmp_path)
    shutil.copy(tiny_gpt2_dir / "model.safetensors", d / "model.safetensors")
    refused(d, "lacks 37 of the 37 tensors the config implies, e.g. embeddings.word_embeddings.weight", capsys,
            monkeypatch)  # fmt: skip


def test_a_missing_folder_and_a_file_instead_of_a_folder(
    tiny_gpt2_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    refused(tmp_path / "nonexistent", "does not exist", capsys, monkeypatch)
    refused(tiny_gpt2_dir / "config.json", rf"is a file: give the model's directory \({tiny_gpt2_dir}\)", capsys,
            monkeypatch)  # fmt: skip


def test_what_fails_at_load_time_is_a_503(tiny_gpt2_dir: Path, tmp_path: Path) -> None:
    d = copy(tiny_gpt2_dir, tmp_path)
    client = TestClient(create_app(backend="numpy", model=str(d)))
    assert client.get("/api/model").status_code == 200  # the folder was whole when the server started
    (d / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")  # then it was damaged
    r = client.post("/api/attention", json={"sentence": "The animal"})
    assert r.status_code == 503 and "safetensors" in r.json()["detail"][0]["msg"], r.text
    assert str(tmp_path) not in r.text  # the model's name, not the server's folders


# hostile or damaged configs and weights (issue 19): bounded before anything is allocated


def start(d: Path) -> subprocess.CompletedProcess[str]:
    """`attention3d --model d` as a real process (it must refuse before serving)."""
    cmd = [sys.executable, "-m", "app", "--port", str(free_port()), "--model", str(d)]
    env = {**os.environ, "ATTENTION_BACKEND": "numpy"}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"num_hidden_layers": 1_000_000}, "layers is 1,000,000; this server reads models up to 512"),
        ({"num_hidden_layers": 10_000_000}, "layers is 10,000,000"),
        ({"hidden_size": 2**40, "num_attention_heads": 2}, "hidden is 1,099,511,627,776"),
        ({"vocab_size": 10**12}, "vocab is 1,000,000,000,000"),
        ({"intermediate_size": 10**9}, "intermediate is 1,000,000,000"),
        ({"max_position_embeddings": 10**9}, "max_positions is 1,000,000,000"),
        ({"num_attention_heads": 4096, "hidden_size": 4096}, "heads is 4,096"),
    ],
)
def test_config_sizes_are_bounded_before_anything_is_allocated(
    tiny_bert_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    changes: dict[str, int], words: str,
) -> None:  # fmt: skip
    d = copy(tiny_bert_dir, tmp_path)
    edit_config(d, **changes)
    tracemalloc.start()
    with pytest.raises(ModelError, match=words):
        read_spec(d)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 * 2**20, f"{peak / 2**20:.0f} MiB to refuse it"  # was 3 GB for 10⁶ layers
    refused(d, words, capsys, monkeypatch)


def test_a_deeply_nested_config_and_a_huge_one(
    tiny_bert_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    d = copy(tiny_bert_dir, tmp_path)
    config = json.loads((d / "config.json").read_text())
    text = json.dumps(config)[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    (d / "config.json").write_text(text)
    refused(d, "nests objects and arrays more than 64 deep", capsys, monkeypatch)  # was a RecursionError
    (d / "config.json").write_text(json.dumps({**config, "names": ["[" * 50] * 10}))  # brackets in strings: fine
    assert read_spec(d).layers == 2
    (d / "config.json").write_text(json.dumps({**config, "padding": "x" * 2 * 2**20}))
    refused(d, "a config.json is at most 1,048,576", capsys, monkeypatch)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_or_infinity_in_the_config(
    tiny_bert_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    value: str,
) -> None:  # fmt: skip
    d = copy(tiny_bert_dir, tmp_path)
    text = json.dumps(json.loads((d / "config.json").read_text())).replace("1e-12", value)
    assert value in text
    (d / "config.json").write_text(text)
    refused(d, "is not readable JSON: .*(not a number a config may hold|too large for a number)", capsys, monkeypatch)


def test_nan_weights_are_refused_at_start_and_answered_503(tiny_gpt2_dir: Path, tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    d = copy(tiny_gpt2_dir, tmp_path)
    tensors = load_file(str(d / "model.safetensors"))
    name = next(k for k in tensors if k.endswith("h.1.attn.c_attn.weight"))
    tensors[name][0, 0] = np.nan
    tensors[name][1, 1] = np.inf
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    assert read_spec(d).layers == 2  # the shapes are right: only the numbers are wrong
    done = start(d)  # a real `attention3d --model`: one line, exit 2, no traceback
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{name} holds 2 values that are NaN or infinite" in done.stderr
    client = TestClient(create_app(backend="numpy", model=str(d)))  # (a server started without the check)
    r = client.post("/api/attention", json={"sentence": "The animal"})
    msg = r.json()["detail"][0]["msg"]
    assert r.status_code == 503 and "NaN or infinite" in msg, r.text  # not a 422 blaming the sentence
    assert str(tmp_path) not in msg and f"{d.name}/model.safetensors" in msg  # the model, not the server's paths


def test_huge_configs_exit_2_in_one_line_from_a_real_process(tiny_bert_dir: Path, tmp_path: Path) -> None:
    d = copy(tiny_bert_dir, tmp_path)
    edit_config(d, num_hidden_layers=10_000_000)
    done = start(d)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr  # was a MemoryError traceback
    assert "layers is 10,000,000" in done.stderr and "Traceback" not in done.stderr
